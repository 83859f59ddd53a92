"""The Dashboard tab: latency per stage and its distribution, p50/p95 per kind of request, request counts, each
question's read (tier-2 hit rate, bytes read from disk, the device that answered), the read cache of each collection
as answers use it, and the indexer benchmark at a chosen length."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import gradio as gr
import numpy as np
import pandas as pd
from gradio import processing_utils
from gradio.components.plot import PlotData
from matplotlib import colormaps
from matplotlib import dates as mdates
from matplotlib.figure import Figure
from matplotlib.ticker import NullFormatter

from app.services import Services, UserError
from app.ui.common import PRIVATE, bind, fail, user_of

PLOTS = {  # each plot's label, which also names its image for a screen reader, by its elem_id
    "plot-stages": "Latency per stage over time",
    "plot-histogram": "Total latency distribution",
    "plot-counts": "Requests by kind",
    "plot-read": "Each question's read",
    "plot-memory": "Read cache per collection",
    "plot-bench": "Benchmark: latency and cache per method",
}
BENCH_COLUMNS = ["method", "latency ms", "cache MiB", "recall@512", "recall@2048", "needle F1"]
PLOT_FORMAT = "webp"  # of the plots' images (Gradio's default)
MARKERS = ("o", "s", "^", "D", "v")  # one per kind of request in the stage plot


def _figure(title: str) -> tuple[Figure, Any]:
    figure = Figure(figsize=(6.4, 3.4), layout="constrained")
    axes = figure.add_subplot()
    axes.set_title(title, fontsize=11)
    return figure, axes


def _no_data(axes: Any, message: str) -> None:
    axes.text(0.5, 0.5, message, ha="center", va="center", transform=axes.transAxes, color="grey")
    axes.set_xticks([])
    axes.set_yticks([])


def _time_axis(figure: Figure, axes: Any, times: list[Any]) -> None:
    """Concise date ticks; a few requests close in time get a window of minutes, not of years."""
    locator = mdates.AutoDateLocator()
    axes.xaxis.set_major_locator(locator)
    # ticks within a minute read "16:33:30", not a bare "30" beside "16:33"
    formats = ["%Y", "%b", "%d", "%H:%M", "%H:%M", "%H:%M:%S"]
    axes.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator, formats=formats))
    first, last = min(times), max(times)
    if last - first < timedelta(minutes=2):
        axes.set_xlim(first - timedelta(minutes=1), last + timedelta(minutes=1))
    figure.autofmt_xdate()


def stage_plot(records: list[dict[str, Any]]) -> Figure:
    """Each request's per-stage latency over time: points (requests are unrelated: no lines join them), one colour
    per kind and stage (20 before one repeats) and one marker per kind, on a log axis (sub-second stages and
    minute-long builds side by side)."""
    figure, axes = _figure("Latency per stage")
    series: dict[str, tuple[list[Any], list[float]]] = {}
    for record in records:
        for stage, ms in record["data"].get("timings_ms", {}).items():
            times, values = series.setdefault(f"{record['kind']}: {stage}", ([], []))
            times.append(record["created_at"])
            values.append(max(float(ms), 0.01))  # a log axis has no 0
    if not series:
        _no_data(axes, "no requests yet")
        return figure
    kinds = sorted({name.split(":")[0] for name in series})
    colours = colormaps["tab20"]
    for i, (name, (times, values)) in enumerate(sorted(series.items())):
        marker = MARKERS[kinds.index(name.split(":")[0]) % len(MARKERS)]
        axes.scatter(times, values, s=14, label=name, color=colours(i % 20), marker=marker)
    axes.set_yscale("log")
    axes.set_ylabel("ms (log scale)")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the points, not over them
    _time_axis(figure, axes, [t for times, _ in series.values() for t in times])
    return figure


def latency_histogram(records: list[dict[str, Any]]) -> Figure:
    """The distribution of total latency, per kind of request, in log-spaced bins."""
    figure, axes = _figure("Total latency distribution")
    kinds = sorted({r["kind"] for r in records})
    if not kinds:
        _no_data(axes, "no requests yet")
        return figure
    totals = [max(float(r["total_ms"]), 0.01) for r in records]
    bins = np.geomspace(min(totals) / 3, max(totals) * 3, 21)  # at least a decade: a labelled tick
    for kind in kinds:
        axes.hist(
            [max(float(r["total_ms"]), 0.01) for r in records if r["kind"] == kind], bins=bins, alpha=0.6, label=kind
        )
    axes.set_xscale("log")
    axes.xaxis.set_minor_formatter(NullFormatter())  # decades only: minor labels overlap on a short range
    axes.set_xlabel("ms (log scale)")
    axes.set_ylabel("requests")
    axes.legend(fontsize=8)
    return figure


def request_counts(records: list[dict[str, Any]]) -> Figure:
    figure, axes = _figure("Requests by kind")
    counts = pd.Series([r["kind"] for r in records], dtype=object).value_counts().sort_index()
    if counts.empty:
        _no_data(axes, "no requests yet")
        return figure
    axes.bar(counts.index, counts.values, color="tab:blue")
    axes.set_ylabel("requests")
    return figure


def latency_table(records: list[dict[str, Any]]) -> str:
    """Total latency p50 and p95 per kind of request, as a Markdown table."""
    if not records:
        return "No requests recorded yet."
    lines = ["| requests | count | p50 ms | p95 ms |", "|---|---:|---:|---:|"]
    for kind in sorted({r["kind"] for r in records}):
        totals = np.array([r["total_ms"] for r in records if r["kind"] == kind])
        p50, p95 = np.percentile(totals, [50, 95])
        lines.append(f"| {kind} | {len(totals)} | {p50:.1f} | {p95:.1f} |")
    return "\n".join(lines)


def read_plot(records: list[dict[str, Any]]) -> Figure:
    """Each question's read, in the order they were asked: its tier-2 hit rate and the bytes it read from tier 3
    (points)."""
    figure = Figure(figsize=(6.4, 3.4), layout="constrained")
    rate, read = figure.subplots(1, 2)
    rate.set_title("Tier-2 hit rate", fontsize=11)
    read.set_title("Read from disk", fontsize=11)
    asks = [r for r in records if r["kind"] == "ask" and r["data"].get("read")]
    if not asks:
        _no_data(rate, "no IndexPool questions yet")
        _no_data(read, "")
        return figure
    number = np.arange(1, len(asks) + 1)
    rate.scatter(number, [100 * r["data"]["read"]["tier2_hit_rate"] for r in asks], s=12, color="tab:purple")
    rate.set_ylim(-5, 105)
    rate.set_ylabel("% of the pages it read")
    read.scatter(number, [max(r["data"]["read"]["bytes_read"], 1) / 2**10 for r in asks], s=12, color="tab:red")
    read.set_yscale("log")
    read.set_ylabel("KiB (log scale)")
    for axes in (rate, read):
        axes.set_xlabel("question (in the order asked)")
        axes.set_xlim(0.5, len(asks) + 0.5)
        axes.set_xticks(np.unique(np.linspace(1, len(asks), min(len(asks), 6)).round()))  # one question: 1 alone
    return figure


def read_status(records: list[dict[str, Any]]) -> str:
    """One line on the last question's read."""
    asks = [r for r in records if r["kind"] == "ask" and r["data"].get("read")]
    if not asks:
        return "No IndexPool question yet."
    last = asks[-1]["data"]["read"]
    scored = "IndexPool tier 1" if last["compressed"] else "uncompressed keys: under 10,000 tokens"
    return (
        f"Last question: answered on **{last['device']}**, read {last['tokens_read']:,} tokens' keys and values "
        f"(summed over the sparse layers) of a selection of {last['tokens']:,} tokens ({scored}), "
        f"tier-2 hit rate {100 * last['tier2_hit_rate']:.0f} %, {last['bytes_read'] / 2**10:,.0f} KiB from disk."
    )


def memory_plot(rows: list[dict[str, Any]]) -> Figure:
    """Tier 1 of each collection's read cache beside the same keys uncompressed."""
    figure, axes = _figure("Read cache tier 1 per collection")
    if not rows:
        _no_data(axes, "no collections yet")
        return figure
    names = [row["collection"] for row in rows]
    x = np.arange(len(rows))
    axes.bar(x - 0.2, [row["uncompressed"] / 2**20 for row in rows], 0.4, label="uncompressed (r = 1, float32)")
    axes.bar(x + 0.2, [row["tier1"] / 2**20 for row in rows], 0.4, label=f"this cache ({rows[0]['cache']})")
    axes.set_xticks(x, names)
    axes.set_ylabel("MiB")
    axes.legend(fontsize=8)
    return figure


def memory_table(rows: list[dict[str, Any]]) -> str:
    """The read cache of each collection in bytes, as a Markdown table."""
    if not rows:
        return "No collections yet."
    lines = [
        f"Read cache ({rows[0]['cache']}), in bytes; tier 1 is resident, tier 3 is on disk, memory-mapped.",
        "",
        "| collection | tokens | tier 1 | uncompressed | tier 3 |",
        "|---|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['collection']} | {row['tokens']:,} | {row['tier1']:,} | {row['uncompressed']:,} | "
            f"{row['tier3']:,} |"
        )
    return "\n".join(lines)


class _NamedPlotData(PlotData):
    chart: str  # the browser names the plot's image "{chart} plot visualising provided data"


def named(figure: Figure, plot: str) -> PlotData:
    """``figure`` as Gradio's plot sends it to the browser, with its image named by the label of the plot ``plot`` (an
    elem_id): Gradio's own name for it is "undefined plot visualising provided data"."""
    image = processing_utils.encode_plot_to_base64(figure, PLOT_FORMAT)
    return _NamedPlotData(type="matplotlib", plot=image, chart=PLOTS[plot])


def _plot(elem_id: str) -> gr.Plot:
    return gr.Plot(label=PLOTS[elem_id], show_label=False, elem_id=elem_id)  # the figure has its own title


def dashboard(services: Services, request: gr.Request) -> tuple[Any, ...]:
    """The dashboard's plots from the recorded metrics and the read caches of the user's collections."""
    user = user_of(request)
    records = services.metrics.records(user)
    try:
        memory = services.metrics.cache_memory(user)
    except UserError as error:
        fail(error)
        memory = []
    return (
        named(stage_plot(records), "plot-stages"),
        named(latency_histogram(records), "plot-histogram"),
        named(request_counts(records), "plot-counts"),
        latency_table(records),
        named(read_plot(records), "plot-read"),
        read_status(records),
        named(memory_plot(memory), "plot-memory"),
        memory_table(memory),
    )


def bench_plot(methods: dict[str, dict[str, float]], tokens: int) -> Figure:
    """Latency and cache bytes per method of one benchmark run."""
    figure = Figure(figsize=(9, 3.4), layout="constrained")
    latency, memory = figure.subplots(1, 2)
    names = list(methods)
    latency.barh(names, [m["latency_ms"] for m in methods.values()], color="tab:orange")
    latency.set_xlabel("ms per indexer step")
    latency.invert_yaxis()
    memory.barh(names, [m["cache_bytes"] / 2**20 for m in methods.values()], color="tab:green")
    memory.set_xlabel("cache MiB")
    memory.invert_yaxis()
    memory.set_yticklabels([])
    figure.suptitle(f"Indexer benchmark at {tokens:,} tokens", fontsize=11)
    return figure


def run_bench(services: Services, tokens: float | None, request: gr.Request) -> tuple[pd.DataFrame, Any, str]:
    """Run the indexer benchmark at ``tokens`` tokens: its table, its plot and a status line."""
    try:
        result = services.metrics.run_indexer_bench(int(tokens or 0), user=user_of(request))
    except UserError as error:
        return pd.DataFrame(columns=BENCH_COLUMNS), gr.skip(), fail(error)
    methods = result["methods"]
    table = pd.DataFrame(
        [
            [
                name,
                m["latency_ms"],
                round(m["cache_bytes"] / 2**20, 3),
                m["recall@512"],
                m["recall@2048"],
                m["needle_f1"],
            ]
            for name, m in methods.items()
        ],
        columns=BENCH_COLUMNS,
    )
    setting = result["setting"]
    status = (
        f"{result['tokens']:,} tokens of {setting['corpus']} on {setting['device']} ({setting['cpu']}), "
        f"{setting['queries']} queries, "
        f"median of {setting['steps']} timed steps"
    )
    return table, named(bench_plot(methods, result["tokens"]), "plot-bench"), status


def dashboard_tab(services: Services) -> None:
    """The tab, its components and their events."""
    with gr.Tab("Dashboard", id="dashboard") as tab:
        refresh = gr.Button("Refresh", elem_id="dashboard-refresh")
        with gr.Row():
            stages = _plot("plot-stages")
            histogram = _plot("plot-histogram")
        with gr.Row():
            counts = _plot("plot-counts")
            percentiles = gr.Markdown(elem_id="latency-percentiles")
        with gr.Row():
            with gr.Column():
                reads = _plot("plot-read")
                read_line = gr.Markdown(elem_id="read-status")
            with gr.Column():
                memory = _plot("plot-memory")
                memory_bytes = gr.Markdown(elem_id="cache-table")
        gr.Markdown(
            "**Indexer benchmark** (`indexpool bench`): latency, cache bytes and recall of each indexer "
            "method at one context length, over the Python standard library's documentation. The first run "
            "writes and encodes that text (about a minute on a CPU); later runs take seconds. *recall@k*: the share "
            "of the exact top-k tokens each method selects; *needle F1*: token F1 between 8 planted facts and each "
            "method's selection at the fact's length. The indexer's keys are 256-token window means, which find "
            "regions rather than one sentence, so needle F1 is 0 or near it for every method, the uncompressed "
            "one included; whole-answer retrieval (NIAH) is measured by `indexpool eval niah` (BENCHMARKS.md)."
        )
        with gr.Row(equal_height=True):
            bench_tokens = gr.Number(
                value=32768,
                precision=0,
                label="Context length (tokens)",
                elem_id="bench-tokens",
            )
            bench_button = gr.Button("Run the indexer benchmark", elem_id="bench-btn")
        bench_status = gr.Markdown(elem_id="bench-status")
        bench_table = gr.Dataframe(headers=BENCH_COLUMNS, label="Benchmark", interactive=False, elem_id="bench-table")
        bench_chart = _plot("plot-bench")
    views = [stages, histogram, counts, percentiles, reads, read_line, memory, memory_bytes]
    gr.on([tab.select, refresh.click], bind(dashboard, services), None, views, **PRIVATE)
    bench_button.click(
        bind(run_bench, services),
        bench_tokens,
        [bench_table, bench_chart, bench_status],
        concurrency_limit=1,
        **PRIVATE,
    ).then(bind(dashboard, services), None, views, **PRIVATE)
