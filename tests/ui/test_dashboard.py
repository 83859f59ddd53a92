"""The dashboard's plots: requests as points on log axes (sub-second asks stay visible beside minute-long builds)."""

from __future__ import annotations

from datetime import datetime, timedelta

from app.ui.dashboard import latency_histogram, read_plot, stage_plot


def _records() -> list[dict]:
    start = datetime(2026, 12, 3, 12)
    times = [0.4, 90_000.0, 12.0, 0.0]  # a fast BM25 ask, an index build, a model ask, a stage of 0 ms
    return [
        {
            "kind": "ask",
            "created_at": start + timedelta(minutes=i),
            "total_ms": ms,
            "data": {"timings_ms": {"total": ms}},
        }
        for i, ms in enumerate(times)
    ]


def test_latency_plots_use_log_axes_and_points() -> None:
    (axes,) = stage_plot(_records()).axes
    assert axes.get_yscale() == "log" and not axes.get_lines()  # no line joins unrelated requests
    (points,) = axes.collections
    assert len(points.get_offsets()) == 4
    (histogram,) = latency_histogram(_records()).axes
    assert histogram.get_xscale() == "log"


def test_each_stage_series_has_its_own_colour_and_each_kind_its_own_marker() -> None:
    """Eleven stages of asks and two of summaries: no two series look alike (the default cycle of 10 colours drew
    "summarize: summarize" in the colour of "ask: encode_question")."""
    stages = ["load", "index", "encode_question", "read_select", "read_fetch", "read_attend", "read_other"]
    stages += ["score", "shards", "retrieve", "total"]
    records = [
        {"kind": "ask", "created_at": datetime(2026, 12, 6, 16, 33), "data": {"timings_ms": dict.fromkeys(stages, 5)}},
        {
            "kind": "summarize",
            "created_at": datetime(2026, 12, 6, 16, 34),
            "data": {"timings_ms": {"summarize": 900, "total": 1000}},
        },
    ]
    (axes,) = stage_plot(records).axes
    colours = [tuple(points.get_facecolor()[0]) for points in axes.collections]
    assert len(axes.collections) == 13 and len(set(colours)) == 13
    paths = {points.get_label().split(":")[0]: points.get_paths()[0].vertices.tobytes() for points in axes.collections}
    assert paths["ask"] != paths["summarize"]


def test_the_read_plots_number_the_questions_in_order() -> None:
    """Questions hours apart: the per-question plots place them 1, 2, 3 (a time axis crowded its hourly labels)."""
    read = {"tier2_hit_rate": 0.5, "bytes_read": 4096}
    records = [
        {"kind": "ask", "created_at": datetime(2026, 12, 5, hour), "data": {"read": read}} for hour in (9, 13, 23)
    ]
    for axes in read_plot(records).axes:
        (points,) = axes.collections
        assert points.get_offsets()[:, 0].tolist() == [1, 2, 3]
        assert all(float(t).is_integer() for t in axes.get_xticks())
    (axes, _) = read_plot(records[:1]).axes
    ticks = [t for t in axes.get_xticks() if axes.get_xlim()[0] <= t <= axes.get_xlim()[1]]
    assert ticks == [1.0], ticks  # one question: the tick 1, not 0.950 … 1.050
