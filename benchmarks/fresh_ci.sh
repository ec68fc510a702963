#!/bin/bash
# `.ci/run` as CI meets it: a fresh clone of this checkout and a fresh Docker engine with no image, no base and no build
# cache (benchmarks/fresh_engine.sh), so that every image the tests run is built. Prints the wall-clock seconds, the
# test summary and the slowest tests (pytest's --durations). Root only.  Usage: bash benchmarks/fresh_ci.sh [LOG]
set -u
LOG=$(realpath -m "${1:-/tmp/fresh-ci.log}")
. "$(dirname "$0")/fresh_engine.sh"
fresh_engine_up ci0 10.213.80
fresh_clone /tmp/fresh-ci-clone
T0=$(date +%s.%N)
bash .ci/run 2>&1 | stamped "$T0" > "$LOG"
echo "rc ${PIPESTATUS[0]}" >> "$LOG"
grep -E "slowest|^ *[0-9.]+ [0-9.]+s (call|setup|teardown) " "$LOG" | head -30
grep -E "passed|failed" "$LOG" | tail -1
echo "wall clock $(tail -2 "$LOG" | head -1 | awk '{print $1}') s, $(tail -1 "$LOG")"
fresh_engine_down
