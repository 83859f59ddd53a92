#!/usr/bin/env bash
# Install IndexPool with its test dependencies into .venv, install Debian's chromium for the browser tests
# when it is missing, check formatting and lint (ruff), and run the whole test suite. Used as-is by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
.venv/bin/pip install --quiet -e '.[dev]'

if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq chromium >/dev/null
    elif command -v sudo >/dev/null; then
        sudo apt-get update -qq && sudo apt-get install -y -qq chromium >/dev/null
    else
        echo "warning: /usr/bin/chromium is missing and cannot be installed: browser tests will skip" >&2
    fi
fi

.venv/bin/ruff format --check .
.venv/bin/ruff check .

export GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1
exec .venv/bin/python -m pytest "$@"
