#!/usr/bin/env bash
# Coverage-guided fuzzing with libFuzzer (clang): builds fuzz/<target>_fuzz.cc into build/fuzz and
# runs it on a copy of its corpus for the given seconds, its output in build/fuzz/<target>.log.
# Ends with a line "<target>_fuzz: N passed, 0 failed" (or the crash and 1 failed). A crash
# leaves its input in build/fuzz; make it a unit test and a corpus file.
# Usage: scripts/fuzz.sh TARGET [SECONDS]     e.g. scripts/fuzz.sh range 60
set -euo pipefail
target=${1:?usage: scripts/fuzz.sh TARGET [SECONDS]}
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build/fuzz
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DCAIRN_FUZZ=ON -DCAIRN_SANITIZE=ON \
  -DCAIRN_BUILD_TESTS=OFF -DCAIRN_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target "${target}_fuzz" >/dev/null
work=$build/corpus-$target
mkdir -p "$work"
cp -n "$root/fuzz/corpus/$target"/* "$work/" 2>/dev/null || true
cd "$build"
log=$build/$target.log
if "./fuzz/${target}_fuzz" -max_total_time="$seconds" -max_len=4096 "$work" >"$log" 2>&1; then
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
  echo "${target}_fuzz: ${runs:-0} passed, 0 failed (libFuzzer, ${seconds} s)"
else
  tail -40 "$log"
  echo "${target}_fuzz: 0 passed, 1 failed (libFuzzer found a crash; see $log)"
  exit 1
fi
