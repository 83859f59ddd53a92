"""Shared test fixtures: the shared data folder (skip when absent) and a fresh library home."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data folder {SHARED_DATA} is absent (it sits beside the checkout in CI)")
    return SHARED_DATA


@pytest.fixture
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh library folder, outside ``tmp_path`` so tests can ingest all of ``tmp_path``."""
    return tmp_path_factory.mktemp("library")
