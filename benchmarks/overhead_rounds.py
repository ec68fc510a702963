"""Paired rounds of the suite against a bare loop on one built model, in one process (benchmarks/overhead.py).

    python -m benchmarks.overhead_rounds CASE.json OUT.json     (inside a framework's image: PYTHONPATH holds
                                                                 the runner and benchmarks/)

CASE.json: {"job": a runner job (runner.contract), "warmup": steps that prime the model, "seconds": measuring time,
"min_rounds": rounds at least}; the job's warmup and iterations are each block's, repeats 1. The process settings
of the job (runner.settings: threads, CPU affinity) are applied before the framework is imported, as a worker does.
OUT.json: {"rounds": {side: [seconds per mini-batch, one per round]}, "host_probe_s": [...], "timer": the suite's,
"framework_version": ...}. The host computes the paired ratios (``paired``) from it.

Why rounds, paired: a launch-bound step runs at the host CPU's speed, and on a shared host that speed moves by tens
of percent within seconds. So the sides alternate block by block in ABBA order (bare first in even rounds, suite
first in odd ones), as many rounds as fit in the measuring time (at least ``min_rounds``), and the ratio is the
median of the rounds' own side / bare ratios with its distribution-free 95% interval (runner.stats.median_ci). A
drift of the host between rounds cancels in each pair; a pair that straddles a change of speed is an outlier the
median ignores. Each round also times a fixed pure-Python loop (``host_probe``), so the report says how much the
host's own speed moved.

Python 3.6 syntax, standard library, numpy and the framework (the runner's rules: it runs in every image).
"""

import json
import math
import statistics
import sys
import time


def suite(adapter, job, window=True):
    """Seconds per mini-batch through the runner's measurement path on a built ``adapter``, as the bare loop gives
    them: the median over repeats of each repeat's mean iteration, with the timer used and the telemetry record
    (``window`` False: no measured window, hence no telemetry; the record is None)."""
    from runner import measure
    from runner import window as windowmod

    measured = windowmod.Window.for_job(job) if window else None
    try:
        timing, _ = measure.throughput(adapter, job, None, measured)
    finally:
        if measured is not None:
            measured.close()
    per_repeat = [sum(rep) / len(rep) for rep in timing["repeats"]]
    return statistics.median(per_repeat), timing["timer"], measured.sampler.result() if measured else None


def host_probe(count=200000):
    """Seconds of a fixed pure-Python loop: the host CPU's own speed at this moment (no GPU, no framework)."""
    start, total = time.perf_counter(), 0
    for i in range(count):
        total += i * i
    return time.perf_counter() - start


def rounds_for(step_s, sides, block_steps, seconds, least):
    """How many rounds fit in ``seconds`` when each of ``sides`` runs ``block_steps`` steps of ``step_s`` seconds
    per round (at least ``least``)."""
    return max(least, int(math.ceil(seconds / max(sides * block_steps * step_s, 1e-9))))


def step_seconds(run, job, steps=3):
    """Seconds per step of a primed model by the host clock around ``steps`` steps of the bare loop ``run`` (to size
    the rounds)."""
    start = time.perf_counter()
    run(dict(job, warmup=0, iterations=steps, repeats=1))
    return (time.perf_counter() - start) / steps


def measure_case(sides, rounds):
    """Interleaved rounds of one block per side ({side: a zero-argument call giving one block's seconds per
    mini-batch, or (that, the suite's timer, its telemetry record)}): ({side: [seconds per mini-batch, one per
    round]}, the host probe's seconds per round, the suite's last telemetry record, {side: the timer it used})."""
    found, probes, telemetry, timers = dict((k, []) for k in sides), [], {}, {}
    order = list(sides)
    for r in range(rounds):
        probes.append(host_probe())
        for name in order if r % 2 == 0 else order[::-1]:  # ABBA: the drift of a round weighs on every side
            value = sides[name]()
            if isinstance(value, tuple):
                value, timers[name], record = value
                if name == "suite" and record:
                    telemetry = record
            found[name].append(value)
    return found, probes, telemetry, timers


def paired(sides, bares):
    """The rounds' own ratios side / bare: {"ratio": their median, "ci95": its distribution-free 95% interval
    (None under 6 rounds), "coverage", "min", "max": the rounds' least and most}."""
    from runner import stats

    ratios = sorted(s / b for s, b in zip(sides, bares))
    return {
        "ratio": statistics.median(ratios),
        "ci95": stats.median_ci(ratios),
        "coverage": stats.median_ci_coverage(len(ratios)),
        "min": ratios[0],
        "max": ratios[-1],
    }


def main(case_path, out_path):
    """One case in this process (the framework's image): the suite and the bare loop in paired rounds; writes
    OUT.json (module docstring)."""
    with open(case_path) as f:
        case = json.load(f)
    job = case["job"]
    from runner import adapters, settings

    settings.apply(job)  # threads and CPU affinity, before the framework is imported
    from benchmarks import bare_loops

    adapter = adapters.load(job)
    adapter.build()
    run = bare_loops.loop(adapter, job)
    run(dict(job, warmup=case["warmup"], repeats=0))  # primes: compilation, allocator pools, lazy inits
    sides = {"bare": lambda: run(job), "suite": lambda: suite(adapter, job)}
    rounds = rounds_for(
        step_seconds(run, job), len(sides), job["warmup"] + job["iterations"], case["seconds"], case["min_rounds"]
    )
    found, probes, _, timers = measure_case(sides, rounds)
    environment = adapter.environment()
    adapter.release()
    with open(out_path, "w") as f:
        json.dump(
            {
                "rounds": found,
                "host_probe_s": probes,
                "timer": timers["suite"],
                "framework_version": environment.get("framework_version"),
                "threads": environment.get("threads"),
            },
            f,
            indent=1,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
