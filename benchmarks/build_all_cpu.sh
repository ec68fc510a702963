#!/bin/bash
# Every CPU image of the matrix built from nothing: a fresh Docker engine (no base, no image, no build cache), an
# empty dlrepro cache and a fresh clone of this checkout (benchmarks/fresh_engine.sh), with `dlrepro build` of every
# CPU entry (NAME@VERSION of each) in one call. Prints each base's and each image's build seconds, as the build
# reported them, and the wall-clock total. The venv's install is before the clock starts. Root only.
#   Usage: bash benchmarks/build_all_cpu.sh [LOG [OPTION...]]   (OPTIONs go to `dlrepro build`, e.g. --jobs 3)
set -u
LOG=$(realpath -m "${1:-/tmp/build-all-cpu.log}")
. "$(dirname "$0")/fresh_engine.sh"
fresh_engine_up bench0 10.213.79
fresh_clone /tmp/build-all-clone
python3 -m venv .venv && .venv/bin/pip install -q -e . > /dev/null 2>&1
tokens=$(.venv/bin/python -c '
from dlrepro.images import matrix
print(",".join("%s@%s" % (i.framework, i.version) for i in matrix.load().images if i.device == "cpu"))')
echo "+ dlrepro build --device=cpu --framework=$tokens ${*:2}"
T0=$(date +%s.%N)
.venv/bin/dlrepro build --device=cpu --framework="$tokens" "${@:2}" 2>&1 | stamped "$T0" > "$LOG"
echo "rc ${PIPESTATUS[0]}" >> "$LOG"
python3 - "$LOG" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rows = re.findall(r"^ *[0-9.]+ base (\S+): bootstrapped in (?:(\d+)m)?(\d+)s", text, re.M)
for name, minutes, seconds in rows:
    print("%-28s %6d s  (base)" % (name, int(minutes or 0) * 60 + int(seconds)))
for name, seconds in re.findall(r"^ *[0-9.]+ (\S+): \S+ \(sha256:\w+, built in (\d+) s\)", text, re.M):
    print("%-28s %6s s" % (name, seconds))
print("%-28s %6.0f s  (wall clock, %s)" % ("total", float(re.findall(r"^ *([0-9.]+) ", text, re.M)[-1]),
                                          text.strip().splitlines()[-1]))
PY
fresh_engine_down
