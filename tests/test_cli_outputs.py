"""One output grammar over the command table (kbench/cli.py, docs/cli.md): --json on every
command, and the commands that print results print one valid JSON document on stdout with it;
-o names a directory everywhere; list options take lists one way; help is plain text with each
default said once.  Fast: no Kafka."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from kbench.cli import COMMAND_MODULES, build_parser
from kbench.cli import main as cli_main
from kbench.commands import sim as sim_cmd
from kbench.commands.args import listed


def _leaves() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    out = []
    stack: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = [((), build_parser())]
    while stack:
        path, p = stack.pop()
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs and path:
            out.append((path, p))
        for a in subs:
            stack.extend(((*path, name), sp) for name, sp in a.choices.items())
    return sorted(out)


LEAVES = _leaves()

#: Every command that prints results, with arguments that make it run here in a few seconds (no
#: Kafka, no network): each must print exactly one JSON document on stdout with --json.
RUNNABLE = {
    ("sim",): ["--corpus-size", "64KiB", "--codec", "none,lz4", "--linger-ms", "5,20"],
    ("inspect",): ["{seg}"],
    ("codecs", "list"): [],
    ("codecs", "bench"): ["--corpus", "json", "--corpus-size", "64KiB", "--codecs", "lz4", "--block-sizes", "16KiB"]
    + ["--min-time", "0.01", "--repeats", "1"],
    ("gate",): ["--sample-s", "0.05"],
    ("plans",): [],
}


def test_the_table_is_every_command() -> None:
    tops = {p[0] for p, _ in LEAVES}
    assert tops == {m.rsplit(".", 1)[1] for m in COMMAND_MODULES}


@pytest.mark.parametrize("path", [p for p, _ in LEAVES], ids=" ".join)
def test_every_command_takes_json(path: tuple[str, ...]) -> None:
    p = dict(LEAVES)[path]
    a = next((a for a in p._actions if "--json" in a.option_strings), None)
    assert a is not None, f"kbench {' '.join(path)}: no --json"
    assert isinstance(a, argparse._StoreTrueAction) and a.dest == "json"


@pytest.mark.parametrize("path", list(RUNNABLE), ids=" ".join)
def test_json_is_one_document_on_stdout(
    path: tuple[str, ...], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seg = tmp_path / "seg"
    assert cli_main(["sim", "--corpus-size", "64KiB", "--segments", str(seg)]) == 0
    capsys.readouterr()
    args = [a.replace("{seg}", str(seg)) for a in RUNNABLE[path]]
    code = cli_main([*path, *args, "--json"])
    out = capsys.readouterr().out
    doc = json.loads(out)  # the whole of stdout: one document, no table or status line
    assert isinstance(doc, dict) and doc
    if path == ("gate",):  # a blocking check on this busy host (exit 3) is a result too, said in the document
        assert code in (0, 3) and doc["exit_status"] == code and doc["blocked"] == (code == 3)
    else:
        assert code == 0


def test_sim_json_has_every_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sim", *RUNNABLE[("sim",)], "--json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert sorted((r["codec"], r["linger_ms"]) for r in runs) == [
        ("lz4", 5.0),
        ("lz4", 20.0),
        ("none", 5.0),
        ("none", 20.0),
    ]


@pytest.mark.parametrize("path", [p for p, _ in LEAVES], ids=" ".join)
def test_o_is_always_a_directory(path: tuple[str, ...]) -> None:
    p = dict(LEAVES)[path]
    a = next((a for a in p._actions if "-o" in a.option_strings), None)
    if a is None:
        return
    assert a.option_strings == ["-o", "--output"] and a.dest == "output"
    assert a.help is not None and re.match(r"(run )?directory", a.help), f"kbench {' '.join(path)} -o: {a.help}"


def test_o_names_a_directory_and_refuses_a_file_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["sim", "--corpus-size", "64KiB", "-o", str(tmp_path / "x.csv")]) == 2
    err = capsys.readouterr().err
    assert "-o names a directory" in err and "--csv FILE" in err
    assert not (tmp_path / "x.csv").exists()
    assert cli_main(["sim", "--corpus-size", "64KiB", "-o", str(tmp_path / "new" / "dir")]) == 0
    assert (tmp_path / "new" / "dir" / "sim.csv").is_file()


def test_list_options_are_one_rule() -> None:
    """Every option whose help says it takes a list parses with the one list parser."""
    seen = 0
    for path, p in LEAVES:
        for a in p._actions:
            if a.help and "separate with commas" in a.help:
                assert a.type is listed and isinstance(a, argparse._ExtendAction), (path, a.option_strings)
                seen += 1
    assert seen >= 10
    cfgs = sim_cmd._configs(build_parser().parse_args(["sim", "--linger-ms", "5,20", "--linger-ms", "50"]))
    assert [c.linger_ms for c in cfgs] == [5.0, 20.0, 50.0]


@pytest.mark.parametrize("path", [p for p, _ in LEAVES], ids=" ".join)
def test_help_is_plain_and_says_each_default_once(path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli_main([*path, "--help"])
    text = capsys.readouterr().out
    assert "`" not in text, f"kbench {' '.join(path)} --help shows reStructuredText marks"
    assert "(default: None)" not in text and "(default: False)" not in text
    for block in re.split(r"\n  (?=-)", text):  # one option's help
        assert len(re.findall(r"\(default\b", block)) <= 1, block
