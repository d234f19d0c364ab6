#!/usr/bin/env python3
"""C mutations that prove the C tests: each one-line change to csrc/core must fail a test.

For every mutation: copy the repository (tracked and untracked, not ignored files: no build/, no
*.so) to a temporary directory, replace the original text (which must occur exactly once) with the
mutated text, rebuild the extension in place there, and run the mutation's own small test
selection with that copy first on the path.  Failing tests = KILLED; passing tests = SURVIVED.
Before any mutation the same selections run once on an unmutated copy (the baseline): a selection
that fails or collects nothing unmutated would make "killed" meaningless, so it stops the script.

    python3 scripts/c-mutations.py            # baseline, then every mutation
    python3 scripts/c-mutations.py --list     # the mutations and their tests
    python3 scripts/c-mutations.py --only 3   # baseline of mutation 3's tests, then mutation 3

Exit status 0 when every mutation was killed, 1 when one survived or could not be run.
Standard library only.  docs/testing.md ("C mutations") lists the last full result.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

KAFKA_ONE_RUN = ("tests/test_kafka.py", "-k", "test_one_broker_fixed_rate_every_codec and none")
PACING = ("tests/test_c_asan.py", "-k", "pacing")


@dataclass(frozen=True)
class Mutation:
    """One line of csrc/core changed: original -> mutated (exact text), killed by tests."""

    file: str  # relative to the repository root
    original: str
    mutated: str
    what: str
    tests: tuple[str, ...]  # pytest arguments: files and a -k selection


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "csrc/core/procstat.c",
        "    return 1.0 / (double)(t > 0 ? t : 100);",
        "    return 2.0 / (double)(t > 0 ? t : 100);",
        "CPU tick conversion x2 (every /proc counter doubled)",
        ("tests/test_procstat.py",),
    ),
    Mutation(
        "csrc/core/procstat.c",
        "    r->utime_s = (double)ut * t;",
        "    r->utime_s = (double)st * t;",
        "process user time read from the stime field",
        ("tests/test_procstat.py",),
    ),
    Mutation(
        "csrc/core/procstat.c",
        "    s->total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) * t;",
        "    s->total = (double)(v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6]) * t;",
        "system total CPU without steal (steal % too high)",
        ("tests/test_procstat.py", "-k", "system"),
    ),
    Mutation(
        "csrc/core/procstat.c",
        "    if (state == 'Z' || state == 'X') /* a zombie's counters are frozen: treat as gone */",
        "    if (state == 'X') /* a zombie's counters are frozen: treat as gone */",
        "a zombie's frozen counters read as a live process",
        ("tests/test_native_sanitized.py", "-k", "histogram_and_procstat and address"),
    ),
    Mutation(
        "csrc/core/threadcpu.c",
        "    out->proc_usr = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;",
        "    out->proc_usr = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e5;",
        "per-thread CPU: the process's user microseconds read as tens",
        ("tests/test_c_asan.py", "-k", "thread_cpu"),
    ),
    Mutation(
        "csrc/core/histogram.c",
        "        dst->counts[i] += src->counts[i];",
        "        dst->counts[i] += src->counts[i] - (src->counts[i] > 0);",
        "merge drops one count per bucket",
        ("tests/test_histogram.py", "-k", "merge"),
    ),
    Mutation(
        "csrc/core/histogram.c",
        "        if (src->max > dst->max)",
        "        if (src->max < dst->max)",
        "merge keeps the smaller max",
        ("tests/test_histogram.py", "-k", "merge"),
    ),
    Mutation(
        "csrc/core/histogram.c",
        "        if (acc >= rank) {",
        "        if (acc > rank) {",
        "percentile off by one sample (the bucket after the rank)",
        ("tests/test_histogram.py",),
    ),
    Mutation(
        "csrc/core/histogram.c",
        "    int64_t rank = (int64_t)ceil(p / 100.0 * (double)h->total);",
        "    int64_t rank = (int64_t)ceil(p / 100.0 * (double)h->total) + 1;",
        "percentile rank off by one",
        ("tests/test_native_sanitized.py", "-k", "histogram_and_procstat and address"),
    ),
    Mutation(
        "csrc/core/pacing.c",
        "    while (kb_pace_due(p, n) <= now)",
        "    while (kb_pace_due(p, n) < now)",
        "pacing: a message due exactly now waits for the next wake (<= -> <)",
        PACING,
    ),
    Mutation(
        "csrc/core/pacing.c",
        "    if (p->count > 0 && seq >= p->count)",
        "    if (p->count > 0 && seq > p->count)",
        "pacing: one message more than count (>= -> >)",
        PACING,
    ),
    Mutation(
        "csrc/core/pacing.c",
        "    return kb_pace_due(p, seq) >= p->end_ns;",
        "    return kb_pace_due(p, seq) > p->end_ns;",
        "pacing: a message due at the end of the duration is sent (>= -> >)",
        PACING,
    ),
    Mutation(
        "csrc/core/pacing.c",
        "    int64_t grid = prev_wake > INT64_MAX - p->tick_ns ? INT64_MAX : prev_wake + p->tick_ns;",
        "    int64_t grid = prev_wake;",
        "pacing: wakes not held a tick apart (one wake per message at any rate)",
        PACING,
    ),
    Mutation(
        "csrc/core/producer.c",
        "    p->bytes += (int64_t)vlen;",
        "    p->bytes += (int64_t)vlen * 13 / 10;",
        "producer payload accounting x1.3",
        KAFKA_ONE_RUN,
    ),
    Mutation(
        "csrc/core/producer.c",
        "        kb_hist_record(p->delay, sent - due);",
        "        kb_hist_record(p->delay, due - sent);",
        "send delay recorded as due - sent (negative: lost as underflow)",
        KAFKA_ONE_RUN,
    ),
    Mutation(
        "csrc/core/producer.c",
        "    int with_header = p->header_sample > 0 && (p->seq_base + seq) % p->header_sample == 0;",
        "    int with_header = p->header_sample > 0;",
        "every message carries the kb header, not one in header_sample",
        KAFKA_ONE_RUN,
    ),
    Mutation(
        "csrc/core/consumer.c",
        "    if (inside)\n        kb_hist_record(c->e2e, now - t);",
        "    if (inside && c->sampled > 1)\n        kb_hist_record(c->e2e, now - t);",
        "end-to-end histogram drops the first sample",
        KAFKA_ONE_RUN,
    ),
    Mutation(
        "csrc/core/consumer.c",
        "    c->bytes += len;",
        "    c->bytes += len + KB_HDR_LEN;",
        "consumer counts a kb header's length into every record's payload bytes",
        KAFKA_ONE_RUN,
    ),
    Mutation(
        "csrc/core/sim.c",
        "    s->res->raw_batch_bytes += KB_BATCH_OVERHEAD + info->raw_bytes;",
        "    s->res->raw_batch_bytes = s->res->payload_bytes;",
        "batch_ratio from payload bytes instead of the batches' uncompressed bytes",
        ("tests/test_sim.py", "-k", "every_record_verified"),
    ),
    Mutation(
        "csrc/core/sim.c",
        "        res->payload_bytes += recs->offs[i + 1] - recs->offs[i];",
        "        res->payload_bytes += (recs->offs[i + 1] - recs->offs[i]) * 13 / 10;",
        "simulator payload accounting x1.3 (ratio +30 %, CPU-s/GB -23 %)",
        ("tests/test_sim_row.py", "-k", "prediction"),
    ),
)


def copy_repo(dst: Path) -> None:
    """The working tree's tracked and untracked, not ignored files (no build/, no *.so) into dst."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    ).stdout
    for rel in sorted({p for p in out.decode().split("\0") if p}):
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the working tree
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def apply(tree: Path, m: Mutation) -> None:
    path = tree / m.file
    text = path.read_text()
    found = text.count(m.original)
    if found != 1:
        raise SystemExit(
            f"c-mutations: the original text of '{m.what}' occurs {found} times in {m.file} (must be once); "
            "update the mutation in scripts/c-mutations.py"
        )
    path.write_text(text.replace(m.original, m.mutated))


def build(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace", "-q", "-j", "2"],
        cwd=tree,
        capture_output=True,
        text=True,
    )


#: A selection that runs longer than this did not give a verdict (a hung loop is not a kill).
TEST_TIMEOUT_S = 900


def run_tests(tree: Path, tests: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "250"}  # untruncated -rf lines
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-rf", "-p", "no:cacheprovider", *tests]
    try:
        return subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(cmd, -1, "", f"timed out after {TEST_TIMEOUT_S} s")


def _failed(out: str) -> str:
    """The first failing test and its message, from pytest's -rf summary."""
    lines = [ln for ln in out.splitlines() if ln.startswith("FAILED ")]
    return lines[0][len("FAILED ") :][:160] if lines else "?"


def _tail(text: str, lines: int = 15) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def baseline(selections: list[tuple[str, ...]]) -> bool:
    """Every selection passes (and collects tests) on an unmutated copy."""
    with tempfile.TemporaryDirectory(prefix="kbench-mut-base-") as d:
        tree = Path(d)
        copy_repo(tree)
        b = build(tree)
        if b.returncode != 0:
            print("baseline: the unmutated copy does not build:\n" + _tail(b.stderr), flush=True)
            return False
        ok = True
        for sel in selections:
            t0 = time.monotonic()
            r = run_tests(tree, sel)
            state = "passes" if r.returncode == 0 else f"FAILS (pytest exit {r.returncode})"
            print(f"baseline {state:<22} {' '.join(sel)}  ({time.monotonic() - t0:.0f} s)", flush=True)
            if r.returncode != 0:
                print(_tail(r.stdout + r.stderr), flush=True)
                ok = False
        return ok


def run_one(n: int, m: Mutation) -> str:
    """KILLED, SURVIVED or ERROR (the mutant did not build, or pytest did not run the tests)."""
    with tempfile.TemporaryDirectory(prefix=f"kbench-mut-{n}-") as d:
        tree = Path(d)
        copy_repo(tree)
        apply(tree, m)
        t0 = time.monotonic()
        b = build(tree)
        if b.returncode != 0:
            print(f"[{n}] the mutant does not compile:\n" + _tail(b.stderr), flush=True)
            return "ERROR"
        r = run_tests(tree, m.tests)
        # pytest: 0 all passed, 1 some failed; anything else (usage error, nothing collected) is no verdict
        result = {0: "SURVIVED", 1: "KILLED"}.get(r.returncode, "ERROR")
        print(f"[{n:2}] {result:<8} {m.file}: {m.what}  ({time.monotonic() - t0:.0f} s)", flush=True)
        if result == "KILLED":
            print(f"     by {_failed(r.stdout)}", flush=True)
        else:
            print(_tail(r.stdout + r.stderr), flush=True)
        return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="print the mutations and their tests, run nothing")
    ap.add_argument("--only", type=int, metavar="N", help="run mutation N only (1-based, as --list numbers them)")
    args = ap.parse_args(argv)
    numbered = list(enumerate(MUTATIONS, 1))
    if args.list:
        for n, m in numbered:
            print(f"{n:2}. {m.file}: {m.what}\n    - {m.original.strip()}\n    + {m.mutated.strip()}")
            print(f"    tests: {' '.join(m.tests)}")
        return 0
    if args.only is not None:
        if not 1 <= args.only <= len(MUTATIONS):
            print(f"c-mutations: --only {args.only}: no such mutation; use 1..{len(MUTATIONS)}", file=sys.stderr)
            return 2
        numbered = [numbered[args.only - 1]]
    for _, m in numbered:  # every original text must be there before anything runs
        text = (ROOT / m.file).read_text()
        if text.count(m.original) != 1:
            print(
                f"c-mutations: the original text of '{m.what}' occurs {text.count(m.original)} times in {m.file} "
                "(must be once); update the mutation in scripts/c-mutations.py",
                file=sys.stderr,
            )
            return 2
    t0 = time.monotonic()
    selections = list(dict.fromkeys(m.tests for _, m in numbered))
    if not baseline(selections):
        print("c-mutations: a test selection fails without any mutation; fix that first", file=sys.stderr)
        return 1
    results = {n: run_one(n, m) for n, m in numbered}
    killed = sum(r == "KILLED" for r in results.values())
    print(f"{killed} of {len(results)} mutations killed in {time.monotonic() - t0:.0f} s", flush=True)
    bad = [n for n, r in results.items() if r != "KILLED"]
    if bad:
        print(f"not killed: {', '.join(str(n) for n in bad)}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
