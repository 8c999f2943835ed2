#!/usr/bin/env bash
# Runs every benchmark of bench/ against the given cairn binary and prints the table: the
# server, client, environment and pipeline figures (bench.py), then the web UI's, measured in
# headless chromium (ui_bench.mjs; needs the built UI in web/dist).
set -euo pipefail
cairn=${1:-build/release/cairn}
here=$(dirname "$0")
python3 "$here/bench.py" --cairn "$cairn" "${@:2}"
node "$here/ui_bench.mjs" --cairn "$cairn"
