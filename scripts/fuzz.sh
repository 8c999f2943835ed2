#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (clang): builds fuzz/<target>_fuzz.cc into build/fuzz and
# runs it on a copy of its corpus for the given seconds. A crash leaves its input in build/fuzz;
# make it a unit test and a corpus file.
# Usage: scripts/fuzz.sh TARGET [SECONDS]     e.g. scripts/fuzz.sh range 60
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh TARGET [SECONDS]}
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/fuzz
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DCAIRN_FUZZ=ON -DCAIRN_SANITIZE=ON \
  -DCAIRN_BUILD_TESTS=OFF -DCAIRN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target "${target}_fuzz"
work=$build/corpus-$target
mkdir -p "$work"
cp -n "$root/fuzz/corpus/$target"/* "$work/" 2>/dev/null || true
cd "$build"
"./fuzz/${target}_fuzz" -max_total_time="$seconds" -max_len=4096 "$work"
