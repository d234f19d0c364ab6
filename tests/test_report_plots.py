"""The report's plots read: no label drawn over another, D's legend off its panels and one scale
across its roles, C as bars with ranges, twice the resolution they are shown at.  Drawn from the
committed seed000-testbed run (A, B, C, D on emulated hosts)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

from kbench.experiments.a_plots import latency_percentiles  # noqa: E402
from kbench.experiments.b_throughput import throughput  # noqa: E402
from kbench.experiments.c_ratio import ratio_vs_entropy  # noqa: E402
from kbench.experiments.d_cpu import cpu_per_role  # noqa: E402
from kbench.experiments.e_batch import batch_effect  # noqa: E402
from kbench.reporting import plots  # noqa: E402
from kbench.reporting.frames import load  # noqa: E402

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "results" / "seed000-testbed-2026-12-01"


@pytest.fixture(scope="module")
def frames() -> dict:
    return load(RUN)


def _boxes(fig, artists):  # type: ignore[no-untyped-def]
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    return [a.get_window_extent(r) for a in artists if a.get_visible() and (not hasattr(a, "get_text") or a.get_text())]


def _overlap(a, b) -> bool:  # type: ignore[no-untyped-def]
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_b_axis_label_clear_of_its_tick_labels(frames: dict) -> None:
    fig = throughput(frames["B"])
    assert fig is not None
    ax = fig.axes[0]
    (label,) = _boxes(fig, [ax.yaxis.label])
    ticks = _boxes(fig, ax.get_yticklabels())
    assert ticks and not any(_overlap(label, t) for t in ticks)
    assert any("," in t.get_text() for t in ax.get_yticklabels())  # 60,000, not 6e4
    assert _overlap(label, label)  # the test of overlap can say yes


def test_d_legend_and_title_clear_of_the_panels_on_one_scale(frames: dict) -> None:
    fig = cpu_per_role(frames["D"])
    assert fig is not None
    axes = fig.axes
    assert [a.get_title() for a in axes] == ["producer", "consumer", "broker-1", "broker-2", "broker-3"]
    assert all(a.get_ylim() == axes[0].get_ylim() for a in axes), "one CPU % scale across the roles"
    (legend,) = _boxes(fig, fig.legends)
    panels = _boxes(fig, axes)
    assert not any(_overlap(legend, p) for p in panels)
    (title,) = _boxes(fig, [fig._suptitle])
    assert not any(_overlap(title, t) for t in _boxes(fig, [a.title for a in axes]))


def test_c_is_bars_with_ranges_per_corpus(frames: dict) -> None:
    fig = ratio_vs_entropy(frames["C"])
    assert fig is not None
    ax = fig.axes[0]
    bars = [p for p in ax.patches if p.get_height() > 0]
    assert len(bars) == 4  # 2 codecs × 2 corpora
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == ["json", "random"]
    c = frames["C"]
    ok = c[(c["status"] == "OK") & (c["codec"] == "zstd:3") & (c["corpus"] == "json")]
    assert max(b.get_height() for b in bars) == pytest.approx(ok["ratio"].median())  # the median, drawn


def test_plots_are_drawn_at_twice_the_size_they_are_shown(frames: dict) -> None:
    fig = latency_percentiles(frames["A"])
    assert fig is not None
    data = plots.png(fig)
    width = int.from_bytes(data[16:20], "big")
    assert width == round(fig.get_figwidth() * plots.DPI) and plots.DPI >= 160
    # A's latencies in ms on a log axis whose ticks read as numbers
    assert "ms" in fig.axes[0].get_ylabel()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels() if t.get_text()]
    assert labels and not any("10^" in t or "times" in t for t in labels), labels


def test_d_plots_the_tables_metric_cpu_s_per_gb(frames: dict) -> None:
    """D's bars are the table's CPU-s per GB: each bar's height (usr + sys shares) is the median
    cpu_s_per_gb of its role and codec, and the axis says so."""
    fig = cpu_per_role(frames["D"])
    assert fig is not None
    assert fig.axes[0].get_ylabel() == "CPU-s per GB of payload (median)"
    d = frames["D"]
    ok = d[(d["status"] == "OK") & (d["role"] == "producer")]
    want = sorted(round(v, 6) for v in ok.groupby(["codec", "corpus"])["cpu_s_per_gb"].median())
    ax = fig.axes[0]
    tops: dict[float, float] = {}
    for p in ax.patches:  # usr bar then sys bar stacked on it, at one x
        x = round(p.get_x(), 6)
        tops[x] = max(tops.get(x, 0.0), p.get_y() + p.get_height())
    assert sorted(round(v, 6) for v in tops.values()) == want  # one bar per codec × corpus, the table's median


def test_nic_bytes_per_gb_read_as_gb_per_gb() -> None:
    from kbench.reporting.formats import fmt

    assert fmt(1_234_567_890.0, "gb/gb") == "1.235"


def test_e_fill_has_one_legend_clear_of_both_panels() -> None:
    """E's two panels share one legend under them, with every series, even when the fill lines of
    the codecs coincide (they do: batching works on uncompressed bytes)."""
    import pandas as pd

    rows = [
        {
            "status": "OK",
            "machine": m,
            "codec": c,
            "corpus": "json",
            "batch_size": bs,
            "ratio": r * bs / 16384**0.1,
            "records_per_batch_p50": bs / 400,
        }
        for m in ("vm", "vm-1cpu")
        for c, r in (("none", 1.0), ("lz4", 2.0), ("zstd:3", 3.0))
        for bs in (16384, 65536, 262144)
    ]
    fig = batch_effect(pd.DataFrame(rows))
    assert fig is not None
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert len(labels) == 6 and {"lz4 / vm", "zstd:3 / vm-1cpu"} <= set(labels)
    (box,) = _boxes(fig, fig.legends)
    assert not any(_overlap(box, p) for p in _boxes(fig, fig.axes))
    styles = {line.get_linestyle() for line in fig.axes[1].lines}
    assert len(styles) > 1  # coinciding fill lines are told apart by their style
