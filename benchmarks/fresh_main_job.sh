#!/bin/bash
# The README's main-job line as a new user meets it, output into a log: a fresh Docker engine, an empty dlrepro cache,
# a fresh clone of this checkout and a fresh venv (benchmarks/fresh_engine.sh). Every output line is stamped with the
# seconds since the start; the seconds to the first result and the five longest silences are printed at the end.
# Root only.  Usage: bash benchmarks/fresh_main_job.sh [LOG]
set -u
LOG=$(realpath -m "${1:-/tmp/fresh-main-job.log}")
. "$(dirname "$0")/fresh_engine.sh"
fresh_engine_up fresh0 10.213.78
fresh_clone /tmp/fresh-clone
main=$(grep -A1 '^# main job$' README.md | tail -n 1)
echo "+ $main"
T0=$(date +%s.%N)
( eval "$main" ) 2>&1 | stamped "$T0" > "$LOG"
echo "rc ${PIPESTATUS[0]}" >> "$LOG"
python3 - "$LOG" <<'PY'
import re, sys
lines = [l for l in open(sys.argv[1]) if l[:7].strip().replace(".", "").isdigit()]
t = [float(l[:7]) for l in lines]
first = next((float(l[:7]) for l in lines if re.match(r" *[0-9.]+ ok ", l)), None)
print("lines %d, total %.0f s, first result at %s" % (len(t), t[-1], "%.0f s" % first if first else "none"))
gaps = sorted(((b - a, i) for i, (a, b) in enumerate(zip(t, t[1:]))), reverse=True)[:5]
for g, i in gaps:
    print("silence %.1f s between:\n  %s  %s" % (g, lines[i].rstrip(), lines[i + 1].rstrip()))
PY
fresh_engine_down
