#!/bin/sh
# The Python client's checks, as CI runs them (`npm run test:python`): install the package into a fresh
# virtual environment (what `pip install ./clients/python` does for a user), then mypy --strict over the
# package, its tests and the example, then pytest against a real server the tests start.
#
# pip is told --retries 0: where the public index is unreachable and a local mirror serves the packages
# (as on the project's machines), every retry would wait minutes on the index first.
set -eu
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
venv="$(mktemp -d "${TMPDIR:-/tmp}/shelfapi-python-venv.XXXXXX")"
trap 'rm -rf "$venv"' EXIT INT TERM
"$PYTHON" -m venv "$venv"
PIP_RETRIES=0 "$venv/bin/pip" install --retries 0 --disable-pip-version-check --quiet ".[test]"
"$venv/bin/mypy" --strict src tests ../../examples/mirror_prices.py
# Run from the checkout but import the installed package, not ./src; exit 5 (no tests collected) fails too.
"$venv/bin/pytest" -q -p no:cacheprovider "$@"
