"""The Settings tab: per user, top-k, reader and generator (used by Ask), the default summarizer, and the read
cache their questions read: the IndexPool preset, α, β, γ, the pooling ratio and INT8 (saving new ones re-pools the
user's documents in the background) and the tier-2 budget; validated when saved."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.services import Services, UserError
from app.services.settings import POOL_RATIOS, PRESET_NAMES
from app.ui.common import PRIVATE, bind, fail, user_of

GENERATOR_OFF_LABEL = "off (the extractive answer only)"
SETTING_NAMES = [
    "preset",
    "alpha",
    "beta",
    "gamma",
    "ratio",
    "int8",
    "tier2_mb",
    "top_k",
    "reader",
    "summarizer",
    "generator",
]


def show_settings(services: Services, request: gr.Request) -> tuple[Any, ...]:
    """The user's settings, one value per control of the Settings tab (in ``SETTING_NAMES`` order)."""
    try:
        settings = services.settings.settings(user_of(request))
    except UserError as error:
        return *(gr.skip() for _ in SETTING_NAMES), fail(error)
    return *(settings[name] for name in SETTING_NAMES), ""


def preset_weights(services: Services, preset: str) -> tuple[Any, Any, Any]:
    """α, β, γ of an IndexPool preset, to start from."""
    try:
        return services.settings.preset_weights(preset)
    except UserError as error:
        fail(error)
        return gr.skip(), gr.skip(), gr.skip()


def save_settings(
    services: Services,
    preset: str,
    alpha: float,
    beta: float,
    gamma: float,
    ratio: int,
    int8: bool,
    tier2_mb: float,
    top_k: float,
    reader: str,
    summarizer: str,
    generator: str,
    request: gr.Request,
) -> tuple[Any, ...]:
    """Validate and store the Settings tab's values for the user; a status line says what happened."""
    values = [preset, alpha, beta, gamma, ratio, int8, tier2_mb, top_k, reader, summarizer, generator]
    settings = dict(zip(SETTING_NAMES, values, strict=True))
    for name in ("top_k", "tier2_mb"):  # a number box gives floats
        if isinstance(settings[name], float) and settings[name].is_integer():
            settings[name] = int(settings[name])
    try:
        saved = services.settings.save(settings, user_of(request))
    except UserError as error:
        return *(gr.skip() for _ in SETTING_NAMES), fail(error)
    weights = (saved["alpha"], saved["beta"], saved["gamma"])
    own = "" if weights == services.settings.preset_weights(saved["preset"]) else " with its own weights"
    return *(saved[name] for name in SETTING_NAMES), (
        f"saved: top-k {saved['top_k']}, reader {saved['reader']}, summarizer {saved['summarizer']}, preset "
        f"{saved['preset']}{own} (α {saved['alpha']}, β {saved['beta']}, γ {saved['gamma']}), ratio {saved['ratio']}:1"
        f"{', INT8' if saved['int8'] else ''}, tier 2 {saved['tier2_mb']} MiB, generator {saved['generator']}"
    )


def settings_tab(services: Services) -> None:
    """The tab, its components and their events."""
    summarizers = [(label, name) for name, label in services.summaries.summarizers().items()]
    generators = [(GENERATOR_OFF_LABEL if g == "off" else g, g) for g in services.ask.generator_choices()]
    with gr.Tab("Settings", id="settings") as tab:
        gr.Markdown(
            "Top-k (1–100), the reader and the generator are used by Ask, the summarizer by Summarize. The IndexPool "
            "preset, its weights (α, β, γ between 0 and 1, adding up to 1), the pooling ratio and INT8 decide the "
            "cache your questions read (tier 1: each document's pooled indexer entries); saving new ones re-pools "
            "your documents in the background (the Library tab shows the progress). Under 10,000 tokens a question "
            "reads uncompressed keys whatever the ratio. The shipped checkpoint weighs the read 0 in the answer score "
            "(the model card says why), so these settings change what a question reads, its cost and the Dashboard's "
            "figures, not the cited sentences. Tier 2 keeps recently read key/value pages in memory (0: "
            "every page from disk); answers do not depend on it. Values are checked when saved; a rejected value is "
            "named and the form keeps what you typed."
        )
        with gr.Row():
            top_k = gr.Number(label="Top-k citations", precision=0, elem_id="top-k")
            reader = gr.Dropdown(services.ask.available_readers(), label="Reader", elem_id="reader")
            summarizer = gr.Dropdown(
                summarizers,
                label="Summarizer",
                info="the IndexPool model falls back to LEAD, labelled so, without its checkpoint",
                elem_id="settings-summarizer",
            )
            generator = gr.Dropdown(
                generators,
                label="Generator",
                info="prose written from the citations; `indexpool serve --generator SPEC` offers one",
                elem_id="generator",
            )
        with gr.Row():
            preset = gr.Dropdown(PRESET_NAMES, label="IndexPool preset", elem_id="preset")
            alpha = gr.Number(label="α (positional)", step=0.05, elem_id="alpha")
            beta = gr.Number(label="β (content)", step=0.05, elem_id="beta")
            gamma = gr.Number(label="γ (temporal)", step=0.05, elem_id="gamma")
        with gr.Row():
            ratio = gr.Dropdown(list(POOL_RATIOS), label="Pooling ratio r (keys per entry)", elem_id="ratio")
            int8 = gr.Checkbox(label="INT8 pooled keys", elem_id="int8")
            tier2_mb = gr.Number(label="Tier-2 budget (MiB)", precision=0, elem_id="tier2-mb")
        save = gr.Button("Save settings", variant="primary", elem_id="settings-save")
        status = gr.Markdown(elem_id="settings-status")
    controls = [preset, alpha, beta, gamma, ratio, int8, tier2_mb, top_k, reader, summarizer, generator]
    tab.select(bind(show_settings, services), None, [*controls, status], **PRIVATE)
    preset.input(bind(preset_weights, services), preset, [alpha, beta, gamma], **PRIVATE)
    save.click(bind(save_settings, services), controls, [*controls, status], **PRIVATE)
