"""The report's arithmetic, piece by piece and without a run: the ledger's formats and derived
figures, the median/range per group (kbench.reporting.summary), and a hand-written run directory
read by kbench.reporting.frames, summarised, and verified against its CSV by
kbench.reporting.provenance, every figure against a value worked out here.  Pure Python, well
under a second: these are the tests the mutation run uses for those modules."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from kbench.reporting import frames, provenance, summary  # noqa: E402
from kbench.reporting.provenance import Ledger, fmt  # noqa: E402


def test_formats_print_each_kind() -> None:
    assert [fmt(v) for v in (0.0, 1234.5, -250.0, 12.345, 1.0, 0.012345, -0.5)] == [
        "0",
        "1,234",  # banker's rounding of .5 by the format: 1,234
        "-250",
        "12.35",
        "1.00",
        "0.0123",
        "-0.5",
    ]
    assert fmt(99.999) == "100.00" and fmt(100.0) == "100"
    assert fmt(None) == "NA" and fmt(float("nan"), "x") == "NA"
    assert fmt(1234567.0, "int") == "1,234,567" and fmt(12.4, "pct") == "+12%" and fmt(-3.0, "pct") == "-3%"
    assert fmt(4.5, "x") == "4.50×" and fmt(12.25, "pct1") == "12.2%" and fmt(2.0, "f3") == "2.000"
    assert fmt(2.345, "f2") == "2.35" or fmt(2.345, "f2") == "2.34"  # binary 2.345 is below .345
    assert fmt(7, "int") == "7"  # an int value is formatted as a float


def test_derived_figures() -> None:
    led = Ledger()
    a = led.manifest(8, 0, "machine/logical_cores")
    b = led.manifest(2.0, 0, "x")
    assert a.ok and a.value == 8.0 and a.text == "8.00" and str(a) == "8.00" and a.id == 0
    assert led.manifest(True, 0, "flag").value is None and led.manifest(None, 0, "y").text == "NA"
    got = {op: led.derive(op, [a, b]).value for op in ("ratio", "pct_change", "share_pct", "sum", "spread_pct", "diff")}
    assert got == {
        "ratio": 4.0,
        "pct_change": -75.0,
        "share_pct": 400.0,
        "sum": 10.0,
        "spread_pct": 300.0,
        "diff": -6.0,
    }
    assert led.derive("scale", [a], unit="frac->pct").value == 800.0
    assert led.derive("scale", [led.manifest(3 << 30, 0, "m")], unit="B->GiB").value == 3.0
    assert led.derive("scale", [led.manifest(5 << 20, 0, "m")], unit="B->MiB").value == 5.0
    assert led.derive("scale", [led.manifest(2500, 0, "m")], unit="us->ms").value == 2.5
    zero = led.manifest(0, 0, "z")
    assert zero.text == "0" and zero.ok
    assert led.derive("ratio", [a, zero]).text == "NA" and led.derive("pct_change", [zero, a]).value is None
    na = led.manifest(None, 0, "w")
    assert not na.ok and led.derive("sum", [a, na]).value is None and led.derive("sum", []).value is None
    nan_fig = provenance.Fig(99, float("nan"), "NA")
    assert not nan_fig.ok
    with pytest.raises(ValueError, match="unknown operation nope"):
        provenance._derive("nope", [1.0])
    f = led.derive("ratio", [a, b], kind="x")
    assert f.text == "4.00×" and led.figs[f.id] == ("ratio", "x", "4.00×", [a.id, b.id], None)
    assert "4.00×" in led.texts() and "NA" in led.texts()


def test_aggregates_and_row_sets() -> None:
    led = Ledger()
    s1 = led.row_set("C", [3, 1], {"codec": "zstd", "status": "OK"})
    assert led.row_set("C", [3, 1], {"status": "OK", "codec": "zstd"}) == s1 == 0
    assert led.row_set("C", [1, 3], {"codec": "zstd", "status": "OK"}) == 1
    assert led.row_set("D", [3, 1], {"codec": "zstd", "status": "OK"}) == 2
    assert led.row_set("C", [3, 1], {"codec": 5}) == 3 and led.sets[3] == ("C", [3, 1], {"codec": "5"})
    assert led.agg("median", [1.0, 2.0, 9.0, 10.0], s1, "ratio").value == 5.5
    assert led.agg("min", [4.0, 2.0], s1, "ratio").value == 2.0 and led.agg("max", [4.0, 2.0], s1, "ratio").value == 4.0
    assert led.agg("count", [4.0, 2.0, 1.0], s1, "ratio", "int").text == "3"
    assert led.agg("count", [], s1, "ratio").value == 0.0 and led.agg("median", [], s1, "ratio").text == "NA"
    assert led.agg("median", [1.0], s1, "ratio", value=7.0).value == 7.0
    d = led.as_dict(["r0"])
    assert d["runs"] == ["r0"] and d["sets"][0] == ["C", [3, 1], {"codec": "zstd", "status": "OK"}]
    assert d["figures"][0] == ["median", "auto", "5.50", 0, "ratio"]


def test_manifest_paths_and_label_keys() -> None:
    man = {"a": {"b": [10, {"c": 3}]}, "s": "x"}
    assert provenance.manifest_value(man, "a/b/0") == 10 and provenance.manifest_value(man, "a/b/1/c") == 3
    assert provenance.manifest_value(man, "s/t") is None and provenance.manifest_value(man, "q") is None
    canon = provenance.canon
    assert canon(None) == canon("") == canon(" NA ") == canon("-") == canon("nan") == "NA"
    assert canon("5000") == canon("5000.0") == "5000.0" and canon(" zstd:3 ") == "zstd:3"
    assert provenance.NUMBER.findall("a 1,234.5× b +12% c −3 d x2 e 4.") == ["1,234.5×", "+12%", "−3", "4"]


def test_stat_cells_and_verdicts() -> None:
    led = Ledger()
    s = summary.Stat(led, 0, "ratio", "x", 4.5, 4.0, 5.0, 3)
    assert s.ok and s.value("median") == 4.5 and s.value("min") == 4.0 and s.value("max") == 5.0
    assert s.value("count") == 3.0
    with pytest.raises(KeyError, match="mean"):
        s.value("mean")
    with pytest.raises(KeyError, match="mean"):
        s._fig("mean")
    assert s.cell() == "4.50× [4.00×–5.00×]" and s.range() == "4.00×–5.00×"
    assert [f[1:3] for f in led.figs] == [("x", "4.00×"), ("x", "5.00×"), ("x", "4.50×")]  # min, max, median
    assert [f[0] for f in led.figs] == ["min", "max", "median"] and all(f[3:] == (0, "ratio") for f in led.figs)
    assert s.median is s.median and len(led.figs) == 3  # entered once
    assert s._fig("median") is s.median and s._fig("min") is s.lo and s._fig("max") is s.hi
    assert s._fig("count") is s.n and s.n.text == "3" and led.figs[s.n.id][:2] == ("count", "int")
    one = summary.Stat(led, 1, "ratio", "auto", 2.0, 2.0, 2.0, 1)
    assert one.cell() == "2.00 [2.00]"
    e = summary.empty_stat(led, "ratio")
    assert not e.ok and e.cell() == "NA" and e.range() == "NA" and e.value("count") == 0.0
    assert led.sets[e._set] == ("", [], {})
    assert led.figs[e.median.id] == ("median", "auto", "NA", e._set, "ratio") and e.n.text == "0"


def test_labels_and_varying_columns() -> None:
    assert summary.label_text(None) == "NA" and summary.label_text(float("nan")) == "NA"
    assert summary.label_text(5000.0) == "5000" and summary.label_text(2.5) == "2.5"
    assert summary.label_text(7) == "7" and summary.label_text("zstd") == "zstd"
    df = pd.DataFrame({"a": [1, 1], "b": [1, 2], "c": ["x", "y"]})
    assert summary.varying(df, ["a", "b", "c", "zz"]) == ["b", "c"]


def _run_dir(tmp: Path, name: str, rows: list[dict[str, str]], **manifest: object) -> Path:
    d = tmp / name
    d.mkdir()
    man = {"run_id": name, "plan_name": "p", "transport": {"kind": "dry"}, "machine": {"label": "m1", "arch": "x86"}}
    man.update(manifest)
    (d / "manifest.json").write_text(json.dumps(man))
    cols = list(rows[0])
    lines = [",".join(cols)] + [",".join(r[c] for c in cols) for r in rows]
    (d / "C.csv").write_text("\r\n".join(lines) + "\r\n")
    return d


def _c(cell: str, rep: int, codec: str, ratio: str, status: str = "OK") -> dict[str, str]:
    return {
        "cell_id": cell,
        "rep": str(rep),
        "attempt": "1",
        "codec": codec,
        "rate": "5000",
        "ratio": ratio,
        "status": status,
    }


ROWS = [
    _c("c1", 1, "zstd", "4.0"),
    _c("c1", 2, "zstd", "5.0"),
    _c("c1", 3, "zstd", "4.5"),
    _c("c2", 1, "none", "1.0"),
    _c("c2", 2, "none", "NA"),
    _c("c2", 3, "none", "9.0", status="INVALID"),
]


def test_a_run_dir_summarised_and_verified(tmp_path: Path) -> None:
    d = _run_dir(tmp_path, "run1", ROWS)
    df = frames.load(d, experiment="C")
    assert list(df["_gid"]) == list(range(6)) and list(df["_row"]) == list(range(6))
    assert set(df["machine"]) == {"m1"} and set(df["arch"]) == {"x86"} and set(df["transport"]) == {"dry"}
    assert set(df["run_id"]) == {"run1"} and set(df["plan_name"]) == {"p"} and set(df["run_dir"]) == {str(d)}
    assert math.isnan(df["physical_cores"][0]) and df["cpu_model"][0] == "NA"
    assert df["ratio"].dtype == float and math.isnan(df["ratio"][4]) and df["codec"][4] == "none"
    led = Ledger()
    st = summary.stats(led, df, "C", "ratio", ["codec"], kind="x")
    assert set(st) == {("zstd",), ("none",)}
    z, n = st[("zstd",)], st[("none",)]
    assert (z.value("median"), z.value("min"), z.value("max"), z.value("count")) == (4.5, 4.0, 5.0, 3.0)
    assert (n.value("median"), n.value("count")) == (1.0, 1.0)  # NA and INVALID rows never count
    assert z.cell() == "4.50× [4.00×–5.00×]" and n.cell() == "1.00× [1.00×]"
    assert led.sets[z._set] == ("C", [0, 1, 2], {"codec": "zstd", "status": "OK"})
    assert led.sets[n._set] == ("C", [3], {"codec": "none", "status": "OK"})
    every = summary.stats(led, df, "C", "ratio", [], only_ok=False)[()]
    assert every.value("count") == 5.0 and every.value("max") == 9.0
    assert led.sets[every._set] == ("C", [0, 1, 2, 3, 5], {})
    assert summary.stats(led, df, "C", "no_such_column", ["codec"]) == {}
    assert summary.stats_many(led, df.iloc[0:0], "C", {"ratio": "x"}, ["codec"]) == {"ratio": {}}
    ratio = led.derive("ratio", [z.median, n.median], kind="x")
    prov = json.loads(json.dumps(led.as_dict([str(d)])))
    md = f"zstd {z.cell()} none {n.cell()} gain {ratio.text} at rate 5000 in run1"
    assert provenance.verify(prov, markdown=md) == []
    assert provenance.untraceable_numbers(md + " and 7.77", prov, [d]) == ["7.77"]

    # a median moved in the CSV: the figure no longer recomputes to what the report prints
    (d / "C.csv").write_text((d / "C.csv").read_text().replace("c1,3,1,zstd,5000,4.5", "c1,3,1,zstd,5000,4.7"))
    assert provenance.verify(prov) == [  # the median, and the ratio derived from it
        "figure 2: recomputed '4.70×' but the report prints '4.50×'",
        "figure 6: recomputed '4.70×' but the report prints '4.50×'",
    ]
    # an excluded row made OK: the figure misses an eligible row
    (d / "C.csv").write_text((d / "C.csv").read_text().replace("4.7", "4.5").replace("9.0,INVALID", "9.0,OK"))
    problems = provenance.verify(prov)
    assert problems and all(
        "misses run1/C.csv row 6 (c2 rep 3, OK), a row of codec=none, status=OK" in p for p in problems
    )
    # an OK row of the figure turned INVALID: the figure uses a row its selection no longer picks
    (d / "C.csv").write_text(
        (d / "C.csv").read_text().replace("9.0,OK", "9.0,INVALID").replace("4.0,OK", "4.0,INVALID")
    )
    assert any(
        "uses run1/C.csv row 1 (c1 rep 1, INVALID), not a row of codec=zstd, status=OK" in p
        for p in provenance.verify(prov)
    )


def test_frames_refuse_what_no_run_writes(tmp_path: Path) -> None:
    with pytest.raises(frames.LoadError, match="not a directory"):
        frames.read_run(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(frames.LoadError, match="no manifest.json"):
        frames.read_run(tmp_path / "empty")
    (tmp_path / "empty" / "manifest.json").write_text("[1]")
    with pytest.raises(frames.LoadError, match="not an object"):
        frames.read_run(tmp_path / "empty")
    (tmp_path / "empty" / "manifest.json").write_text("{")
    with pytest.raises(frames.LoadError, match="not valid JSON"):
        frames.read_run(tmp_path / "empty")
    (tmp_path / "empty" / "manifest.json").write_text("{}")
    with pytest.raises(frames.LoadError, match="holds no experiment CSV"):
        frames.read_run(tmp_path / "empty")
    with pytest.raises(frames.LoadError, match="no run directory given"):
        frames.load_runs([])
    a = _run_dir(tmp_path, "a", ROWS)
    assert frames.unique_dirs([a, a / ".." / "a", a]) == [a]
    with pytest.raises(frames.LoadError, match="hold the same run"):
        frames.load_runs([a, _run_dir(tmp_path, "b", ROWS, run_id="a")])
    with pytest.raises(frames.LoadError, match="ran on the dry transport and .* on the sim transport"):
        frames.load_runs([a, _run_dir(tmp_path, "c", ROWS, transport={"kind": "sim"})])
    x = _run_dir(tmp_path, "x", ROWS, cells={"c1": {"rate": 1}})
    with pytest.raises(frames.LoadError, match=r"ran different plans \(cell c2 differs\)"):
        frames.load_runs([x, _run_dir(tmp_path, "y", ROWS, cells={"c1": {"rate": 1}, "c2": {"rate": 2}})])
    with pytest.raises(frames.LoadError, match=r"ran different plans \(cell c1 differs\)"):
        frames.load_runs([x, _run_dir(tmp_path, "z", ROWS, cells={"c1": {"rate": 2}})])
    assert [r.index for r in frames.load_runs([x, _run_dir(tmp_path, "w", ROWS, cells={"c1": {"rate": 1}})])] == [0, 1]
    dup = _run_dir(tmp_path, "dup", [*ROWS, ROWS[1]])
    with pytest.raises(frames.LoadError, match=r"row 7 repeats row 2 \(same cell_id, rep, attempt\)"):
        frames.load(dup)
    odd = _run_dir(tmp_path, "odd", [*ROWS[:2], _c("c9", 1, "zstd", "1.0", status="MAYBE")])
    with pytest.raises(frames.LoadError, match="row 3 has status 'MAYBE', which kbench never writes"):
        frames.load(odd)
    with pytest.raises(frames.LoadError, match="unknown experiment 'q'"):
        frames.load(a, experiment="q")
    assert frames.load(a, experiment="a").empty and list(frames.load([a])) == ["C"]


def test_frames_two_runs_in_order_and_the_plan_rate(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "rate"} for r in ROWS[:3]]
    a = _run_dir(tmp_path, "a", rows, cells={"c1": {"rate": 5000.0}})
    b = _run_dir(tmp_path, "b", rows, cells={"c1": {"rate": 5000.0}}, machine={"label": "m2"})
    df = frames.load(b, a, experiment="C")
    assert list(df["_run"]) == [0, 0, 0, 1, 1, 1] and list(df["_gid"]) == list(range(6))
    assert list(df["machine"]) == ["m2"] * 3 + ["m1"] * 3 and set(df["rate"]) == {"5000"}
    text = (a / "C.csv").read_text()
    (a / "C.csv").write_text(text + "c1,4,1,zstd,oops,OK\r\nc1,5,1,zstd,4")  # stray text; a truncated last row
    df = frames.load(a, experiment="C")
    assert len(df) == 4 and df["status"][3] == "INVALID" and "oops" in df["reason"][3]
    assert df["ratio"].dtype == float and df["ratio"][0] == 4.0


MACHINE = {
    "arch": "x86_64",
    "cpu_model": "Xeon 8375C",
    "kernel": "6.1.0-9",
    "hostname_hash": "abc123def",
    "physical_cores": 2,
    "logical_cores": 4,
    "memory_bytes": 8_000_000_000,
}
KEYS = [
    "machine",
    "arch",
    "cpu_model",
    "kernel",
    "hostname_hash",
    "physical_cores",
    "logical_cores",
    "memory_bytes",
    "run_id",
    "run_dir",
    "plan_name",
    "transport",
    "rate",
    "codec",
]


def _no_rate(cell: str, rep: int, codec: str, ratio: str, status: str = "OK") -> dict[str, str]:
    r = _c(cell, rep, codec, ratio, status)
    del r["rate"]
    r["stored_codecs"] = "lz4|zstd"
    return r


def test_verify_reselects_on_every_machine_column_and_recomputes_every_kind(tmp_path: Path) -> None:
    rows = [_no_rate("k-1", i, "zstd", str(4.0 + i)) for i in (1, 2, 3)] + [
        _no_rate("k-12", i, "none", str(1.0 + i / 10)) for i in (1, 2, 3)
    ]
    cells = {"k-1": {"rate": 5000.0}, "k-12": {"rate": 7000.0}}
    d = _run_dir(tmp_path, "runA", rows, run_id="rA", plan_name="pp", machine=MACHINE, cells=cells)
    df = frames.load(d, experiment="C")
    assert set(df["rate"]) == {"5000", "7000"}
    led = Ledger()
    st = summary.stats(led, df, "C", "ratio", KEYS, kind="x")
    label = ("x86_64 Xeon 8375C 4 vCPU/2 cores #abc123", "x86_64", "Xeon 8375C", "6.1.0-9", "abc123def", "2", "4")
    z = st[(*label, "8000000000", "rA", str(d), "pp", "dry", "5000", "zstd")]
    n = st[(*label, "8000000000", "rA", str(d), "pp", "dry", "7000", "none")]
    assert z.cell() == "6.00× [5.00×–7.00×]" and n.cell() == "1.20× [1.10×–1.30×]" and n.n.text == "3"
    cores = led.manifest(4, 0, "machine/logical_cores")
    pct = led.derive("scale", [n.median], kind="pct1", unit="frac->pct")
    gain = led.derive("ratio", [z.median, n.median], kind="x")
    prov = json.loads(json.dumps(led.as_dict([str(d)])))
    assert pct.text == "120.0%" and gain.text == "5.00×"
    assert provenance.verify(prov) == [] and provenance.verify(prov, [d]) == []
    md = "k-1 k-12 on Xeon 8375C (6.1.0-9) rep 3: " + " ".join(
        [z.cell(), n.cell(), n.n.text, cores.text, pct.text, gain.text, "lz4\\|zstd", "runA", "+5.00×"]
    )
    assert provenance.verify(prov, markdown=md) == []
    assert provenance.untraceable_numbers(md + " 12 -13%", prov, [d]) == ["-13%", "12"]

    man = json.loads((d / "manifest.json").read_text())
    (d / "manifest.json").write_text(json.dumps({**man, "machine": {**MACHINE, "logical_cores": 8}}))
    problems = provenance.verify(prov)
    assert f"figure {cores.id}: recomputed '8.00' but the report prints '4.00'" in problems
    assert any(
        p.startswith(f"figure {z.median.id} (6.00×, median of C.ratio): uses runA/C.csv row 1") for p in problems
    )
    (d / "manifest.json").write_text(json.dumps(man))

    text = (d / "C.csv").read_text()
    (d / "C.csv").write_text(text.replace("5.0,OK", "5.0,INVALID").replace("6.0,OK", "6.0,INVALID"))
    p = provenance.verify(prov)[0]
    assert p.startswith(
        f"figure {z.lo.id} (5.00×, min of C.ratio): uses runA/C.csv row 1 (k-1 rep 1, INVALID), not a row of machine="
    )
    assert p.endswith(", codec=zstd, status=OK with a ratio (and 1 more)")
    (d / "C.csv").write_text(text.replace("5.0,OK", "5.0,INVALID"))
    assert provenance.verify(prov)[0].endswith(", codec=zstd, status=OK with a ratio")
    extra = "\n".join(
        ",".join(r.values()) for r in [_no_rate("k-1", 4, "zstd", "9.0"), _no_rate("k-1", 5, "zstd", "9.5")]
    )
    (d / "C.csv").write_text(text + extra + "\n")
    p = provenance.verify(prov)[0]
    assert p.startswith(f"figure {z.lo.id} (5.00×, min of C.ratio): misses runA/C.csv row 7 (k-1 rep 4, OK), a row of")
    assert p.endswith("codec=zstd, status=OK with a ratio (and 1 more)")
    (d / "C.csv").write_text(text + extra.splitlines()[0] + "\n")
    assert provenance.verify(prov)[0].endswith("codec=zstd, status=OK with a ratio")
    (d / "C.csv").write_text(text.splitlines()[0] + "\n")
    assert provenance.verify(prov)[0] == (
        f"figure {z.lo.id} (5.00×, min of C.ratio): uses C.csv rows that no longer exist (the selection "
        + ", ".join(f"{k}={v}" for k, v in prov["sets"][z._set][2].items())
        + ")"
    )
    (d / "C.csv").write_text(text)

    bad = json.loads(json.dumps(prov))
    bad["sets"][z._set] = bad["sets"][z._set][:2]
    assert f"figure {z.lo.id} (5.00×): its rows' selection is not recorded; re-run kbench report" in provenance.verify(
        bad
    )
    bad["figures"][n.n.id][3] = 999
    assert f"figure {n.n.id} (3): cannot recompute (list index out of range)" in provenance.verify(bad)
    words = text.replace(",5.0,OK", ",five,OK").replace(",6.0,OK", ",six,OK").replace(",7.0,OK", ",seven,OK")
    words = words.replace(",1.1,OK", ",a,OK").replace(",1.2,OK", ",b,OK").replace(",1.3,OK", ",c,OK")
    (d / "C.csv").write_text(words)  # every ratio text: no row of the column is a number
    problems = provenance.verify(prov)
    assert f"figure {z.median.id} (6.00×): a source cell of C.ratio is not a number" in problems
    assert f"figure {gain.id}: recomputed 'NA' but the report prints '5.00×'" in problems
    (d / "C.csv").write_text(text)
    (d / "manifest.json").unlink()
    gone = provenance.verify(prov)
    assert any(x.startswith(f"figure {cores.id} (4.00): cannot recompute ([Errno 2] No such file") for x in gone)


def _raises(fn: object, *args: object, **kw: object) -> str:
    with pytest.raises(frames.LoadError) as e:
        fn(*args, **kw)  # type: ignore[operator]
    return str(e.value)


def test_frames_machine_columns_warmups_and_exact_messages(tmp_path: Path) -> None:
    d = _run_dir(tmp_path, "m1", ROWS, machine=MACHINE, plan_name="pp")
    df = frames.load(d, experiment="C")
    assert list(df["arch"].unique()) == ["x86_64"] and list(df["kernel"].unique()) == ["6.1.0-9"]
    assert list(df["cpu_model"].unique()) == ["Xeon 8375C"] and list(df["hostname_hash"].unique()) == ["abc123def"]
    assert (df["physical_cores"][0], df["logical_cores"][0], df["memory_bytes"][0]) == (2.0, 4.0, 8e9)
    assert df["machine"][0] == "x86_64 Xeon 8375C 4 vCPU/2 cores #abc123" and df["plan_name"][0] == "pp"
    assert df["run_id"][0] == "m1"
    man = json.loads((d / "manifest.json").read_text())
    del man["run_id"], man["transport"]
    man["machine"] = {**MACHINE, "physical_cores": True}
    (d / "manifest.json").write_text(json.dumps(man))
    df = frames.load(d, experiment="C")
    assert df["run_id"][0] == "m1" and df["transport"][0] == "" and math.isnan(df["physical_cores"][0])
    # M: warm-up rows are read (their _gid counts) but are not data
    m = tmp_path / "mm"
    m.mkdir()
    (m / "manifest.json").write_text(json.dumps({"run_id": "mm"}))
    (m / "M.csv").write_text(
        "codec,ratio,status,warmup,note\r\nlz4,2.0,OK,True,\r\nlz4,2.5,OK,false,x\r\nzstd,3.0,OK,,\r\n"
    )
    mdf = frames.load(m, experiment="M")
    assert list(mdf["ratio"]) == [2.5, 3.0] and list(mdf["_gid"]) == [1, 2] and list(mdf.index) == [0, 1]
    assert list(mdf["warmup"]) == ["false", "NA"]
    # two runs: the second's extra column joins, in the CSVs' column order, NA where absent
    e = _run_dir(tmp_path, "m2", [{**r, "extra": "7"} for r in ROWS[:2]], transport=None)
    both = frames.load(d, e, experiment="C")
    # (control_of: read as empty from CSVs written before A/A controls)
    assert list(both.index) == list(range(8)) and list(both.columns[:9]) == [*ROWS[0], "control_of", "_run"]
    assert both["extra"].isna().sum() == 6 and list(both["extra"][6:]) == [7.0, 7.0]  # m1 has no extra column

    assert _raises(frames.load_runs, []) == "no run directory given; give one or more RUN_DIRs made by kbench run"
    assert _raises(frames.load, d, experiment="q") == "unknown experiment 'q'; use one of A, B, C, D, E, F, G, M"
    a = _run_dir(tmp_path, "a", ROWS)
    b = _run_dir(tmp_path, "b", ROWS, transport={"kind": "sim"})
    assert _raises(frames.load_runs, [b, a]) == (
        f"{a} ran on the dry transport and {b} on the sim transport; a figure pooled over them would mix "
        "measurements of different kinds: report each transport's runs separately"
    )
    u = _run_dir(tmp_path, "u", ROWS, transport="?")
    assert _raises(frames.load_runs, [u, a]).startswith(f"{u} ran on the unknown transport and {a} on the dry")
    three = _run_dir(tmp_path, "t3", ROWS, transport={"kind": "zz"})
    assert _raises(frames.load_runs, [a, b, three]).startswith(f"{a} ran on the dry transport and {b} on the sim")
    x = _run_dir(tmp_path, "x", ROWS, cells={"c1": {"rate": 1}}, plan_name="p1")
    y = _run_dir(tmp_path, "y", ROWS, cells={"c1": {"rate": 2}})
    del_plan = json.loads((y / "manifest.json").read_text())
    del del_plan["plan_name"]
    (y / "manifest.json").write_text(json.dumps(del_plan))
    assert _raises(frames.load_runs, [x, y]) == (
        f"{x} (plan p1) and {y} (plan ?) ran different plans (cell c1 differs); pooling them would compare "
        "cells not measured alike: report each plan's runs separately"
    )
    dup = _run_dir(tmp_path, "dup", [*ROWS, ROWS[1]])
    assert _raises(frames.load, dup) == (
        f"{dup / 'C.csv'}: row 7 repeats row 2 (same cell_id, rep, attempt): one repetition counted twice; "
        "remove the copy or restore the file from the run"
    )
    two_keys = _run_dir(tmp_path, "k2", [{k: v for k, v in r.items() if k != "attempt"} for r in [*ROWS, ROWS[0]]])
    assert "row 7 repeats row 1 (same cell_id, rep)" in _raises(frames.load, two_keys)
    roles = _run_dir(tmp_path, "roles", [{**ROWS[0], "role": "producer"}, {**ROWS[0], "role": "consumer"}])
    assert len(frames.load(roles, experiment="C")) == 2  # one repetition, two roles: not a copy
    odd = _run_dir(tmp_path, "odd", [ROWS[0], _c("c9", 1, "zstd", "1.0", status="MAYBE")])
    assert _raises(frames.load, odd) == (
        f"{odd / 'C.csv'}: row 2 has status 'MAYBE', which kbench never writes (it writes "
        "ABOVE_KNEE, FAILED_CPU_REGRESSED, FAILED_LOSS, FAILED_RUN, FAILED_TOPIC_CONFIG, INVALID, NA, OK, REJECTED, "
        "SATURATED, SHORT_WINDOW, WARMING); restore the file from the run"
    )
    na_status = _run_dir(tmp_path, "nas", [ROWS[0], _c("c9", 1, "zstd", "1.0", status="NA")])
    assert list(frames.load(na_status, experiment="C")["status"]) == ["OK", "NA"]
    nocol = _run_dir(tmp_path, "nocol", [{"cell_id": "c1", "ratio": "1"}])
    assert _raises(frames.load, nocol) == (
        f"{nocol / 'C.csv'}: no column status, rep, which every kbench C.csv has; it was written by another "
        "command: restore the run's own C.csv, or move this file out of the run directory"
    )
    (nocol / "C.csv").write_text("")
    assert _raises(frames.load, nocol) == f"{nocol / 'C.csv'}: empty; remove it or re-run the experiment"
    (nocol / "C.csv").write_bytes(b'a,b\r\n"1,2\r\n')
    assert _raises(frames.load, nocol).startswith(f"{nocol / 'C.csv'}: not a CSV kbench can read (")


def test_stats_many_shares_complete_sets_and_splits_incomplete_ones(tmp_path: Path) -> None:
    def r(cell: str, rep: int, codec: str, ratio: str, br: str, status: str = "OK") -> dict[str, str]:
        return {**_c(cell, rep, codec, ratio, status), "batch_ratio": br, "stored_bytes": str(100 * rep)}

    rows = [
        r("c1", 1, "zstd", "4.0", "4.4"),
        r("c1", 2, "zstd", "5.0", "NA"),
        r("c1", 3, "zstd", "4.5", "4.6"),
        r("c2", 1, "none", "1.0", "NA"),
        r("c2", 2, "none", "1.1", "NA"),
        r("c2", 3, "none", "9.0", "9.9", status="INVALID"),
        r("c3", 1, "lz4", "2.0", "2.2"),
    ]
    df = frames.load(_run_dir(tmp_path, "s", rows), experiment="C")
    led = Ledger()
    res = summary.stats_many(led, df, "C", {"ratio": "x", "stored_bytes": "int", "batch_ratio": "x"}, ["codec"])
    assert list(res["ratio"]) == [("zstd",), ("none",), ("lz4",)]  # in the order the CSV gives them
    assert list(res["batch_ratio"]) == [("zstd",), ("lz4",)]  # none has no batch_ratio: no figure, the rest follow
    z = res["ratio"][("zstd",)]
    assert z._set == res["stored_bytes"][("zstd",)]._set  # two complete columns: one row set
    assert led.sets[z._set] == ("C", [0, 1, 2], {"codec": "zstd", "status": "OK"})
    zb = res["batch_ratio"][("zstd",)]
    assert led.sets[zb._set] == ("C", [0, 2], {"codec": "zstd", "status": "OK"})
    assert (zb.value("median"), zb.value("count")) == (4.5, 2.0)
    assert res["stored_bytes"][("none",)].value("max") == 200.0  # the INVALID row never counts
    every = summary.stats_many(led, df, "C", {"ratio": "x"}, ["codec"])
    assert every["ratio"][("none",)].value("count") == 2.0  # OK rows only by default
    plain = summary.stats(led, df, "C", "ratio", ["codec"])
    assert led.figs[plain[("lz4",)].median.id][1] == "auto"
    by_rep = summary.stats(led, df, "C", "ratio", ["rep"], only_ok=False)
    assert list(by_rep) == [("1",), ("2",), ("3",)] and by_rep[("3",)].value("max") == 9.0
    assert led.sets[by_rep[("3",)]._set] == ("C", [2, 5], {"rep": "3"})


def test_labels_a_report_may_copy_and_rows_without_their_usual_columns(tmp_path: Path) -> None:
    rows = [
        {"codec": "zstd:3", "rep": "17", "status": "OK", "ratio": "4.0"},
        {"codec": "zstd:3", "rep": "18", "status": "OK", "ratio": "5.0"},
        {"codec": "x-1", "rep": "1", "status": "OK", "ratio": "2.0"},
        {"codec": "x-12", "rep": "2", "status": "OK", "ratio": "3.0"},
    ]
    d = _run_dir(tmp_path, "r9", rows, plan_name=None, transport={"name": "no kind"})
    man = json.loads((d / "manifest.json").read_text())
    man.update(nested={"k8": [{"v77": "lvl 66"}, 55]}, flag=True, none=None)
    del man["plan_name"], man["run_id"]
    (d / "manifest.json").write_text(json.dumps(man))
    df = frames.load(d, experiment="C")
    assert df["plan_name"][0] == "" and df["transport"][0] == "" and df["run_id"][0] == "r9"
    led = Ledger()
    keys = ["codec", "run_id", "plan_name", "transport"]
    st = summary.stats(led, df, "C", "ratio", keys)
    z = st[("zstd:3", "r9", "", "")]
    assert z.median.text == "4.50"
    prov = json.loads(json.dumps(led.as_dict([str(d)])))
    assert provenance.verify(prov) == []
    # labels: text columns, rep, manifest keys and values at any depth, booleans as written, the run's name
    md = f"{z.median.text} zstd:3 reps 17 18 x-12 x-1 k8 v77 lvl 66 55 true True r9"
    assert provenance.verify(prov, markdown=md) == []
    assert provenance.untraceable_numbers("4.50 x-13 +4.50% −4.50×", prov, [d]) == ["3"]  # x-1, then a 3
    assert provenance.untraceable_numbers("9|1", prov, [d]) == ["9"]  # 1 is a repetition: a label
    # a row without cell_id, rep or status is described by what it has
    (d / "C.csv").write_text("codec,ratio\r\nzstd:3,4.0\r\n")
    t = provenance.RunTables([d])
    t.table("C")
    assert t.describe("C", 0) == "r9/C.csv row 1 (zstd:3 rep ?, ?)"
    (d / "C.csv").write_text("ratio,status\r\n4.0,OK\r\n")
    t = provenance.RunTables([d])
    t.table("C")
    assert t.describe("C", 0) == "r9/C.csv row 1 (? rep ?, OK)"


def test_frames_pooling_checks_name_what_differs(tmp_path: Path) -> None:
    a = _run_dir(tmp_path, "a", ROWS, transport={"name": "no kind"})
    b = _run_dir(tmp_path, "b", ROWS, transport=None)
    assert [r.index for r in frames.load_runs([a, b])] == [0, 1]  # neither names a kind: one (unknown) kind
    assert frames.read_run(a).index == 0
    two = {"c1": {"rate": 1}, "c2": {"rate": 2}}
    x = _run_dir(tmp_path, "x", ROWS, cells=two, plan_name=None)
    y = _run_dir(tmp_path, "y", ROWS, cells={**two, "c2": {"rate": 3}}, plan_name="p2")
    man = json.loads((x / "manifest.json").read_text())
    del man["plan_name"]
    (x / "manifest.json").write_text(json.dumps(man))
    assert _raises(frames.load_runs, [x, y]) == (
        f"{x} (plan ?) and {y} (plan p2) ran different plans (cell c2 differs); pooling them would compare "
        "cells not measured alike: report each plan's runs separately"
    )
