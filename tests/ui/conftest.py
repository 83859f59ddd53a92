"""Browser-test fixtures: a running ``indexpool serve`` on a fresh library, and headless Debian Chromium.

Without /usr/bin/chromium the browser tests are skipped, except under CI (``$CI`` set), where they fail:
CI installs Debian's ``chromium`` and must run them. Playwright's own browsers are never installed.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from ui_support import USERS, new_context

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
START_TIMEOUT_S = 90


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _answers_http(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextmanager
def _serve(folder: Path, *options: str) -> Iterator[str]:
    """``indexpool serve --no-sample OPTIONS`` on a free port with an empty ``--home`` in ``folder``; its URL."""
    port = _free_port()
    env = os.environ | {
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(folder / "uploads"),
        "NO_PROXY": "127.0.0.1,localhost",
        "no_proxy": "127.0.0.1,localhost",
    }
    command = [
        sys.executable,
        "-m",
        "app.cli",
        "--home",
        str(folder / "library"),
        "serve",
        "--no-sample",
        "--port",
        str(port),
        *options,
    ]
    log_path = folder / "server.log"
    url = f"http://127.0.0.1:{port}/"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers_http(url):
            if server.poll() is not None:
                pytest.fail(f"indexpool serve exited with {server.returncode}:\n{log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                pytest.fail(
                    f"indexpool serve did not answer within {START_TIMEOUT_S} s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app without authentication: its URL and its folder (``library/`` and the web server's ``uploads/``)."""
    folder = tmp_path_factory.mktemp("serve")
    with _serve(folder) as url:
        yield url, folder


@pytest.fixture(scope="session")
def server_url(server: tuple[str, Path]) -> str:
    return server[0]


@pytest.fixture(scope="module")
def fresh_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app without authentication on a library of its own, for tests that depend on document ids."""
    with _serve(tmp_path_factory.mktemp("serve-fresh")) as url:
        yield url


@pytest.fixture(scope="module")
def shard_server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app over two shards (``serve --shards 2``: rank 0 serves, rank 1 is a process it starts)."""
    with _serve(tmp_path_factory.mktemp("serve-shards"), "--shards", "2") as url:
        yield url


@pytest.fixture(scope="session")
def auth_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The app with a login for the users and passwords of ``USERS``: its URL and its folder (``library/`` and the
    web server's temporary ``uploads/``)."""
    logins = ",".join(f"{user}:{password}" for user, password in USERS.items())
    folder = tmp_path_factory.mktemp("serve-auth")
    with _serve(folder, "--auth", logins) as url:
        yield url, folder


@pytest.fixture(scope="session")
def auth_server_url(auth_server: tuple[str, Path]) -> str:
    return auth_server[0]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} is absent (apt-get install -y chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI must run the browser tests")
        pytest.skip(reason)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser, server_url: str) -> Iterator[Page]:
    """A fresh browser page with the app loaded."""
    context = new_context(browser)
    page = context.new_page()
    page.goto(server_url)
    page.wait_for_selector("#ingest-btn")
    yield page
    context.close()
