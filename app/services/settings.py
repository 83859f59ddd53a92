"""Per-user settings: what Ask, Summarize and the dashboard use, validated when saved (``storage.settings``)."""

from __future__ import annotations

from typing import Any

from app.services.ask import READERS, AskService
from app.services.errors import UserError
from app.services.indexes import DEFAULT_CACHE, DEFAULT_TIER2_MB, cache_key
from model.inference.summarizers import SUMMARIZERS
from storage.db import StorageError
from storage.library import Library
from storage.settings import SettingsStore

DEFAULT_SETTINGS: dict[str, Any] = DEFAULT_CACHE | {  # the IndexPool preset, α, β, γ, ratio, INT8 of the read cache
    "tier2_mb": DEFAULT_TIER2_MB,  # the read's tier-2 LRU of key/value pages, in MiB (0: every page from disk)
    "top_k": 5,  # used by Ask
    "reader": "",  # used by Ask; "" = AskService.default_reader() (the model when its checkpoint is installed)
    "summarizer": "indexpool",  # the Summarize tab's default
    "generator": "",  # used by Ask: "off", or the generator the app offers; "" = the app's (serve --generator)
}
PRESET_NAMES = ["default", "technical", "news"]  # model.network.indexpool.config.PRESETS (a test keeps them equal)
POOL_RATIOS = (1, 2, 4, 8)
MAX_TIER2_MB = 16384


class SettingsService:
    def __init__(self, library: Library, ask: AskService) -> None:
        self.store = SettingsStore(library.home)
        self.ask = ask
        self.indexes = ask.indexes

    def settings(self, user: str = "") -> dict[str, Any]:
        """The settings of ``user``: the defaults, overridden by what the user saved."""
        try:
            stored = self.store.load(user)
        except StorageError as error:
            raise UserError(str(error)) from error
        settings = DEFAULT_SETTINGS | {k: v for k, v in stored.items() if k in DEFAULT_SETTINGS}
        choices = self.ask.generator_choices()
        generator = settings["generator"] if settings["generator"] in choices else choices[-1]
        return settings | {"reader": settings["reader"] or self.ask.default_reader(), "generator": generator}

    @staticmethod
    def preset_weights(preset: str) -> tuple[float, float, float]:
        """α, β, γ of the IndexPool preset ``preset``."""
        from model.network.indexpool.config import IndexPoolConfig  # torch (the package): only when asked

        try:
            config = IndexPoolConfig.preset(preset)
        except ValueError as error:
            raise UserError(str(error)) from error
        return config.alpha, config.beta, config.gamma

    def save(self, values: dict[str, Any], user: str = "") -> dict[str, Any]:
        """Validate and store ``values`` (any subset of the settings) for ``user``; returns all their settings."""
        unknown = sorted(set(values) - set(DEFAULT_SETTINGS))
        if unknown:
            raise UserError(f"unknown settings: {', '.join(unknown)}")
        from model.network.indexpool.config import IndexPoolConfig  # torch (the package): only when saving

        merged = self.settings(user) | values
        if merged["preset"] not in PRESET_NAMES:
            raise UserError(f"unknown preset '{merged['preset']}' (presets: {', '.join(PRESET_NAMES)})")
        weights = {"α": merged["alpha"], "β": merged["beta"], "γ": merged["gamma"]}
        for name, weight in weights.items():
            if not isinstance(weight, int | float) or not 0 <= weight <= 1:
                raise UserError(f"{name} must be a number between 0 and 1, got {weight}")
        if abs(sum(weights.values()) - 1) > 0.01:
            raise UserError(f"α + β + γ must add up to 1, got {sum(weights.values()):.2f}")
        if merged["ratio"] not in POOL_RATIOS:
            raise UserError(f"the pooling ratio must be 1, 2, 4 or 8, got {merged['ratio']}")
        top_k = merged["top_k"]
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= 100:
            raise UserError(f"top-k must be a whole number between 1 and 100, got {merged['top_k']}")
        if not isinstance(merged["int8"], bool):
            raise UserError(f"INT8 must be on or off, got {merged['int8']}")
        tier2 = merged["tier2_mb"]
        if not isinstance(tier2, int | float) or isinstance(tier2, bool) or not 0 <= tier2 <= MAX_TIER2_MB:
            raise UserError(f"the tier-2 budget must be between 0 and {MAX_TIER2_MB} MiB, got {tier2}")
        if merged["reader"] not in READERS:
            raise UserError(f"unknown reader '{merged['reader']}' (readers: {', '.join(READERS)})")
        if merged["summarizer"] not in SUMMARIZERS:
            raise UserError(f"unknown summarizer '{merged['summarizer']}' (summarizers: {', '.join(SUMMARIZERS)})")
        choices = self.ask.generator_choices()
        if merged["generator"] not in choices:  # users choose among what the app was started with
            raise UserError(
                f"unknown generator '{merged['generator']}' (this app offers: {', '.join(choices)}; "
                "start it with `indexpool serve --generator SPEC` to offer another)"
            )
        try:
            IndexPoolConfig.preset(
                merged["preset"],
                alpha=float(merged["alpha"]),
                beta=float(merged["beta"]),
                gamma=float(merged["gamma"]),
                ratio=merged["ratio"],
                int8=merged["int8"],
            )
        except ValueError as error:
            raise UserError(str(error)) from error
        stored = merged | {"generator": "" if merged["generator"] == choices[-1] else merged["generator"]}
        before = cache_key(self.settings(user))
        try:
            self.store.save(stored, user)
        except (OSError, StorageError) as error:
            raise UserError(f"cannot save the settings: {error}") from error
        if cache_key(merged) != before:  # the read cache changes: re-pool the user's documents in the background
            self.indexes.reconfigure(user)
        return merged
