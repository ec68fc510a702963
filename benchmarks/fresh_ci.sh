#!/bin/bash
# `.ci/run` as CI meets it: a fresh clone of this checkout and a fresh Docker engine with no image, no base and no build
# cache (benchmarks/fresh_engine.sh), so that every image the tests run is built. Prints the slowest tests and the
# phases (benchmarks/ci_phases.py); writes the stamped log to LOG, the tests' image build log beside it (LOG's name
# with -build.log), the host's CPU counters (-cpu.log), each test's start and end (-tests.tsv) and, where accton is
# installed, each process's CPU-seconds (-acct, summed in -processes.txt). Root only.
# Usage: bash benchmarks/fresh_ci.sh [LOG]
set -u
LOG=$(realpath -m "${1:-/tmp/fresh-ci.log}")
. "$(dirname "$0")/fresh_engine.sh"
fresh_engine_up ci0 10.213.80
fresh_clone /tmp/fresh-ci-clone
T0=$(date +%s.%N)
# where `accton` is installed (Debian's acct), the kernel's process accounting of the whole run into LOG's name with
# -acct, turned off after the engine has stopped (so that its own record is in it), then summed by kind of process
# (benchmarks/cpu_by_process.py) into LOG's name with -processes.txt
ACCT=${LOG%.log}-acct
if command -v accton >/dev/null; then : > "$ACCT" && accton "$ACCT" >/dev/null; else ACCT=; fi
# the host's CPU counters every 10 s on the log's clock (/proc/stat's "cpu" line, in USER_HZ ticks), and the CPU
# nanoseconds of the Docker engines' cgroups (cgroup v1 cpuacct, where there is one: "docker", every container and
# build step, and "docker/buildkit", the build steps alone): how busy the CPUs were in each phase and with what
# (benchmarks/ci_phases.py), written beside LOG as LOG's name with -cpu.log
python3 -c 'import os, sys, time; t0 = float(sys.argv[1]); cg = "/sys/fs/cgroup/cpuacct/docker"
while True:
    t = time.time() - t0
    print("%7.1f %s" % (t, open("/proc/stat").readline().strip()))
    for name, path in (("docker", cg), ("buildkit", cg + "/buildkit")):
        if os.path.isfile(path + "/cpuacct.usage"):
            print("%7.1f cgroup %s %s" % (t, name, open(path + "/cpuacct.usage").read().strip()))
    sys.stdout.flush(); time.sleep(10)' \
  "$T0" > "${LOG%.log}-cpu.log" &
SAMPLER=$!
# the host's speed on a fixed piece of work, so that runs on different machines can be set side by side
python3 "$FRESH_REPO/benchmarks/host_speed.py" | stamped "$T0" > "$LOG"
# every test's duration, not only the slowest 25 (benchmarks/ci_phases.py sums them by folder)
REPORTS=$(mktemp)
PYTEST_ADDOPTS="--durations=0 --report-log=$REPORTS" bash .ci/run 2>&1 | stamped "$T0" >> "$LOG"
rc=${PIPESTATUS[0]}
# each test phase's worker, start and end (seconds on the log's clock) and outcome: ci_phases.py's timeline (the
# report log's captured output stays out of the committed file)
python3 -c 'import json, sys; t0 = float(sys.argv[1])
for line in open(sys.argv[2]):
    r = json.loads(line)
    if r.get("$report_type") == "TestReport":
        print("%s\t%s\t%.1f\t%.1f\t%s\t%s" % (r.get("worker_id", "-"), r["when"], r["start"] - t0, r["stop"] - t0,
                                           r["outcome"], r["nodeid"]))' "$T0" "$REPORTS" > "${LOG%.log}-tests.tsv"
rm -f "$REPORTS"
kill "$SAMPLER"
# the background image build of the tests (tests/image_build.py): its start and end on the log's clock, and its log
# (the link pytest makes to a build that .ci/run started is left out: its target is listed too)
for build_dir in "$TMPDIR"/dlrepro-test-images-*; do
  [ -f "$build_dir/status" ] && [ ! -L "$build_dir" ] || continue
  python3 -c 'import os, sys; t0 = float(sys.argv[1]); d = sys.argv[2]
print("%7.1f image build started" % (os.stat(d + "/started").st_mtime - t0))
print("%7.1f image build ended (exit %s)" % (os.stat(d + "/status").st_mtime - t0, open(d + "/status").read().strip()))' \
    "$T0" "$build_dir" >> "$LOG"
  cp "$build_dir/log" "${LOG%.log}-build.log"
done
echo "rc $rc" >> "$LOG"
grep -E "slowest|^ *[0-9.]+ [0-9.]+s (call|setup|teardown) " "$LOG" | head -30
python3 "$FRESH_REPO/benchmarks/ci_phases.py" "$LOG"
fresh_engine_down
if [ -n "$ACCT" ]; then
  accton off >/dev/null
  python3 "$FRESH_REPO/benchmarks/cpu_by_process.py" "$ACCT" | tee "${LOG%.log}-processes.txt"
fi
