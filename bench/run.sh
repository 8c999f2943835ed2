#!/usr/bin/env bash
# Runs every benchmark of bench/ against the given cairn binary and prints the table.
set -euo pipefail
cairn=${1:-build/release/cairn}
exec python3 "$(dirname "$0")/bench.py" --cairn "$cairn" "${@:2}"
