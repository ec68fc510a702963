"""The LSTM b128's residual suite/bare gap at the final runner (issue 25), taken apart once more, on the H200 on
2026-12-02, from the repository root: benchmarks/overhead.py's paired ABBA blocks with its sides, plus the bare
loop under the suite's sampling process at 10x its rate (every 2.5 ms instead of 25 ms) to see whether the
sampling's cost grows with its rate. Prints one line per side; writes lstm-telemetry-rate.json under $OUT."""
import json, os, statistics, sys, time
sys.path.insert(0, os.getcwd())
from benchmarks import overhead as ov
from runner import adapters, telemetry as tm

ROUNDS = int(os.environ.get("ROUNDS", "70"))
job = ov.make_job("lstm", "lstm-synthetic", 128, "fp32", "default", "cuda", 3, 20, 1)
a = adapters.load(job); a.build(); ov.bare(a, dict(job, warmup=10, repeats=0))
for_job = tm.Sampler.for_job.__func__


def bare_rate(interval_s):
    def side():
        tm.Sampler.for_job = classmethod(lambda cls, j, interval_s=interval_s, device=None: for_job(cls, j, interval_s, device))
        try:
            return ov.bare(a, job, telemetry=True)
        finally:
            tm.Sampler.for_job = classmethod(for_job)
    return side


sides = {"bare": lambda: ov.bare(a, job), "suite": lambda: ov.suite(a, job)[0],
         "suite-nowindow": lambda: ov.suite(a, job, False)[0], "bare+events": lambda: ov.bare(a, job, events=True),
         "bare+telemetry-40Hz": bare_rate(0.025), "bare+telemetry-400Hz": bare_rate(0.0025)}
found = dict((k, []) for k in sides); order = list(sides); probes = []
start = time.perf_counter()
for r in range(ROUNDS):
    probes.append(ov.host_probe())
    for name in (order if r % 2 == 0 else order[::-1]):
        found[name].append(sides[name]())
out = {"rounds": ROUNDS, "host_probe_s": probes, "sides": {}}
for name in order:
    p = ov.paired(found[name], found["bare"])
    out["sides"][name] = dict(p, median_s=statistics.median(found[name]), rounds=found[name])
    print("%-22s %7.3f ms  ratio to bare %.4f [%s]" % (name, statistics.median(found[name]) * 1e3, p["ratio"],
                                                      "%.4f, %.4f" % tuple(p["ci95"])))
pr = sorted(probes)
print("host probe %.1f-%.1f ms (10th-90th); %d rounds, %.0f s" % (pr[len(pr) // 10] * 1e3, pr[len(pr) * 9 // 10] * 1e3,
                                                                 ROUNDS, time.perf_counter() - start))
json.dump(out, open(os.path.join(os.environ.get("OUT", "/tmp"), "lstm-telemetry-rate.json"), "w"), indent=1)
