"""The built-in corpora, generated once per machine and read back after: generating the JSON events
in Python costs about 0.3 s of CPU, more than the rest of ``kbench produce``'s start-up.

A cached corpus is the very bytes :func:`kbench.model.corpus.generate` returns: the file is named
by the corpus's name, size and seed and by a hash of the generators' source (``corpus.py``), so a
change to a generator makes a new file, and it holds the records length-prefixed with the
fingerprint (:attr:`Corpus.sha256`) of what was generated in its name; a file whose records do not
hash to it is not used (regenerated and rewritten).  The cache is ``$KBENCH_CACHE/corpus``
(:func:`kbench.model.paths.cache_dir`); a cache that cannot be written only costs the time."""

from __future__ import annotations

import hashlib
from pathlib import Path

from kbench.model import corpus
from kbench.model.paths import cache_dir

__all__ = ["load_cached"]


def _generator_hash() -> str:
    return hashlib.sha256(Path(corpus.__file__).read_bytes()).hexdigest()[:16]


def _read(path: Path, sha: str) -> tuple[bytes, ...] | None:
    """The file's records when its bytes hash to ``sha`` (a well-formed file's bytes are the very
    stream :attr:`Corpus.sha256` hashes: each record's 4-byte length, then the record)."""
    try:
        if hashlib.sha256(path.read_bytes()).hexdigest() != sha:
            return None
        return tuple(corpus.read_records(path, "lenprefixed"))
    except (OSError, corpus.CorpusError):
        return None


def load_cached(spec: str | Path, size: int = corpus.DEFAULT_SIZE, seed: int = 1, fmt: str = "lines") -> corpus.Corpus:
    """:func:`kbench.model.corpus.load`, a built-in corpus read from the cache when it is there."""
    if not (isinstance(spec, str) and spec in corpus.BUILTIN):
        return corpus.load(spec, size, seed, fmt)
    d = cache_dir() / "corpus"
    stem = f"{spec}-{size}-{seed}-{_generator_hash()}-"
    for path in sorted(d.glob(stem + "*.bin")) if d.is_dir() else []:
        sha = path.stem[len(stem) :]
        records = _read(path, sha)
        if records is not None:
            return corpus.Corpus(name=spec, records=records, source=f"builtin:{spec}:seed={seed}", checked_sha256=sha)
    c = corpus.generate(spec, size, seed)
    try:
        d.mkdir(parents=True, exist_ok=True)
        corpus.write_lenprefixed(c.records, d / f"{stem}{c.sha256}.bin")
    except OSError:
        pass  # the next start generates it again
    return c
