"""The Settings tab: per user, top-k, reader and generator (used by Ask), the default summarizer, the IndexPool
preset, α, β, γ, the pooling ratio (used by the memory plot) and INT8, validated when saved."""

from __future__ import annotations

from typing import Any

import gradio as gr

from app.services import Services, UserError
from app.services.settings import POOL_RATIOS, PRESET_NAMES
from app.ui.common import PRIVATE, bind, fail, user_of

GENERATOR_OFF_LABEL = "off (the extractive answer only)"
SETTING_NAMES = ["preset", "alpha", "beta", "gamma", "ratio", "int8", "top_k", "reader", "summarizer", "generator"]


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
    top_k: float,
    reader: str,
    summarizer: str,
    generator: str,
    request: gr.Request,
) -> tuple[Any, ...]:
    """Validate and store the Settings tab's values for the user; a status line says what happened."""
    values = [preset, alpha, beta, gamma, ratio, int8, top_k, reader, summarizer, generator]
    settings = dict(zip(SETTING_NAMES, values, strict=True))
    if isinstance(top_k, float) and top_k.is_integer():  # a number box gives floats
        settings["top_k"] = int(top_k)
    try:
        saved = services.settings.save(settings, user_of(request))
    except UserError as error:
        return *(gr.skip() for _ in SETTING_NAMES), fail(error)
    return *(saved[name] for name in SETTING_NAMES), (
        f"saved: top-k {saved['top_k']}, reader {saved['reader']}, summarizer {saved['summarizer']}, preset "
        f"{saved['preset']} (α {saved['alpha']}, β {saved['beta']}, γ {saved['gamma']}), ratio {saved['ratio']}:1"
        f"{', INT8' if saved['int8'] else ''}, generator {saved['generator']}"
    )


def settings_tab(services: Services) -> None:
    """The tab, its components and their events."""
    summarizers = [(label, name) for name, label in services.summaries.summarizers().items()]
    generators = [(GENERATOR_OFF_LABEL if g == "off" else g, g) for g in services.ask.generator_choices()]
    with gr.Tab("Settings", id="settings") as tab:
        gr.Markdown(
            "Top-k (1–100), the reader and the generator are used by Ask, the summarizer by Summarize and the pooling "
            "ratio by the dashboard's memory plot; the IndexPool weights (α, β, γ between 0 and 1, adding up to 1) "
            "and INT8 are kept for the model. Values are checked when saved; a rejected value is named and the form "
            "keeps what you typed."
        )
        with gr.Row():
            top_k = gr.Number(label="Top-k citations", precision=0, elem_id="top-k")
            reader = gr.Dropdown(services.ask.available_readers(), label="Reader", elem_id="reader")
            summarizer = gr.Dropdown(summarizers, label="Summarizer", elem_id="settings-summarizer")
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
        save = gr.Button("Save settings", variant="primary", elem_id="settings-save")
        status = gr.Markdown(elem_id="settings-status")
    controls = [preset, alpha, beta, gamma, ratio, int8, top_k, reader, summarizer, generator]
    tab.select(bind(show_settings, services), None, [*controls, status], **PRIVATE)
    preset.input(bind(preset_weights, services), preset, [alpha, beta, gamma], **PRIVATE)
    save.click(bind(save_settings, services), controls, [*controls, status], **PRIVATE)
