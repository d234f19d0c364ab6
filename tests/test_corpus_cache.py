"""The built-in corpora's cache (kbench.model.corpus_cache): the very bytes generate() makes, a file
that does not hash to its name is not used."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbench.model import corpus
from kbench.model.corpus_cache import load_cached


def test_a_cached_corpus_is_the_generated_one_and_a_tampered_file_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KBENCH_CACHE", str(tmp_path))
    want = corpus.generate("json", 64 << 10, seed=3)
    first = load_cached("json", 64 << 10, seed=3)
    files = list((tmp_path / "corpus").glob("json-65536-3-*.bin"))
    assert len(files) == 1 and files[0].stem.endswith(want.sha256)
    second = load_cached("json", 64 << 10, seed=3)  # read back from the file
    assert first.records == second.records == want.records
    assert (second.source, second.name, second.sha256) == (want.source, "json", want.sha256)
    files[0].write_bytes(corpus.lenprefixed_bytes([b"tampered"]))
    assert load_cached("json", 64 << 10, seed=3).records == want.records  # regenerated, not the file's
    assert load_cached("json", 32 << 10, seed=3).records == corpus.generate("json", 32 << 10, seed=3).records
