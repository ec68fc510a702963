"""The suite's own overhead: its measured seconds per mini-batch against a bare PyTorch loop, in one process.

    python benchmarks/overhead.py [--device cuda] [--seconds 20] [--min-rounds 7] [--iterations 20]
                                  [--block-warmup 3] [--host-sync] [--parts] [--profile] [--cases LSTM,...]
                                  [--json OUT.json]

For each case (AlexNet-S, ResNet-50, FCN-S, the LSTM, and ResNet-50 at batch 256 in bf16
autocast with channels_last) one model is built (runner.adapters, torch, from the spec) and
primed (``--warmup`` untimed steps: cuDNN autotuning, the allocator's pools), then measured two
ways in blocks, on that same model, batch, optimizer, precision and layout:

  suite  the runner's throughput path as a job runs it: runner.measure.throughput (``--block-warmup``
         warm-up steps, then one repeat of ``--iterations`` measured iterations, CUDA-event timing on
         GPUs: one event recorded at every iteration boundary, after the repeat's untimed lead-in)
         inside its measured window (runner.window: GPU telemetry, CPU time); a block's figure is the
         repeat's mean iteration, the statistic the bare loop gives (like for like: the bare loop has
         no per-iteration clock).
  bare   a plain loop over the same nn.Module, loss and optimizer (zero_grad, forward under
         autocast where asked, backward, gradient clipping where the job clips, step) on one
         device-resident batch: the same warm-up, then CUDA events around ``--iterations`` steps (the
         host clock on the CPU), no synchronisation inside; a block's figure is the mean step.

Why blocks, paired: a launch-bound step (the LSTM b128: the GPU waits on the host) runs at the host
CPU's speed, and on a shared host that speed moves by tens of percent within seconds (the H200
machine's pure-Python probe, below, spread 14-26 ms for the same loop). Seven rounds of whole
measurements per side could not tell 2% there. So the sides alternate block by block in ABBA order
(bare first in even rounds, suite first in odd ones), each block short (a fraction of a second for
the LSTM), as many rounds as fit in ``--seconds`` per case (at least ``--min-rounds``), and the ratio
is the median of the rounds' own suite / bare ratios, with its distribution-free 95% interval
(runner.stats.median_ci: order statistics of the paired ratios). A drift of the host between rounds
cancels in each pair; a pair that straddles a change of speed is an outlier the median ignores.
Each round also times a fixed pure-Python loop (``host probe``), so the report says how much the
host's own speed moved. Target (issue 25): every case's ratio within 0.98-1.02; the last line also names
the cases whose interval reaches outside it.

``--parts`` also measures, in the same rounds (the first two on a GPU only),
  bare+events     the bare loop with one CUDA event recorded after every step (the suite's timer),
  bare+telemetry  the bare loop while a runner.telemetry.Sampler samples the GPU (the suite's window),
  suite-nowindow  the suite's path without its measured window (no telemetry, no counters),
each with its paired ratio to the bare loop, so that what the suite adds is measured one part at a time.
With --host-sync the suite is also measured with a host clock read and a device synchronisation
around every iteration (the timer before CUDA events), to show what that costs. ResNet-50 is also
timed bare as torchvision builds it, when torchvision is installed, to compare the spec's model
definition with the usual one. --profile counts, per step, the aten ops, CUDA runtime calls (kernel
launches, event records, synchronisations) and kernels of each path (torch.profiler) and prints where
they differ.
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = [  # (label, spec, variant, batch size, precision, layout)
    ("AlexNet-S", "alexnet", "alexnet-s", 128, "fp32", "default"),
    ("ResNet-50", "resnet50", "resnet50", 64, "fp32", "default"),
    ("FCN-S", "fcn", "fcn-s", 1024, "fp32", "default"),
    ("LSTM", "lstm", "lstm-synthetic", 128, "fp32", "default"),
    ("ResNet-50 bf16 NHWC", "resnet50", "resnet50", 256, "bf16", "channels_last"),
]
CPU_BATCH = {"alexnet": 8, "resnet50": 4, "fcn": 32, "lstm": 16}
PARTS = ("bare+events", "bare+telemetry", "suite-nowindow")
TARGET = (0.98, 1.02)


def make_job(spec_name, variant, batch, precision, layout, device, warmup, iterations, repeats):
    from dlrepro import spec as specmod
    from dlrepro.run import jobs
    from dlrepro.run.options import RunOptions

    options = RunOptions(frameworks=["torch"], variants=[variant], device=device, batch_sizes=[batch],
                         warmup=warmup, iterations=iterations, repeats=repeats, precision=precision,
                         layout=layout, executor="local")
    (job,) = jobs.expand(specmod.load(spec_name), options)
    return job


def suite(adapter, job, window=True):
    """Seconds per mini-batch through the runner's measurement path on a built ``adapter``, as the bare loop gives
    them: the median over repeats of each repeat's mean iteration, with the timer used and the telemetry record
    (``window`` False: no measured window, hence no telemetry; the record is None)."""
    from runner import measure, window as windowmod

    measured = windowmod.Window.for_job(job) if window else None
    try:
        timing, _ = measure.throughput(adapter, job, None, measured)
    finally:
        if measured is not None:
            measured.close()
    per_repeat = [statistics.fmean(rep) for rep in timing["repeats"]]
    return statistics.median(per_repeat), timing["timer"], measured.sampler.result() if measured else None


def bare(adapter, job, model=None, events=False, telemetry=False):
    """Median over repeats of the mean step time of a plain loop (CUDA events around the repeat; perf_counter on
    the CPU) on ``adapter``'s model and optimizer, or on ``model`` with SGD. ``events``: one CUDA event recorded
    after every step, as the suite's timer does; ``telemetry``: a runner.telemetry.Sampler running over the repeats."""
    import torch

    from runner import data as datamod, telemetry as telemetrymod

    if model is not None:
        model = model.to(adapter.device, memory_format=adapter.memory_format).train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        model, optimizer = adapter.model, adapter.optimizer
    loss_fn = adapter.loss_fn
    clip = (job.get("optimizer") or {}).get("clip_norm")  # the same step as the job's: the LSTM clips at 5
    x, y = datamod.synthetic_batch(job["model"], job["batch_size"], job["data"]["seed"])
    x, y = adapter.to_device(x, y)
    cuda = adapter.device.type == "cuda"
    dtype = adapter.amp_dtype

    def step():
        optimizer.zero_grad(set_to_none=True)
        if dtype is None:
            loss = loss_fn(model(x), y)
        else:
            with torch.autocast(adapter.device.type, dtype=dtype):
                loss = loss_fn(model(x), y)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()

    adapter.reset_state()
    for _ in range(job["warmup"]):
        step()
    sampler = telemetrymod.Sampler.for_job(job) if telemetry else None
    if sampler is not None:
        sampler.start()
    means = []
    for _ in range(job["repeats"]):
        if cuda:
            torch.cuda.synchronize()
            marks = [torch.cuda.Event(enable_timing=True) for _ in range(job["iterations"])] if events else None
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            for mark in (marks or []) + [start, end]:  # created before the loop, as the suite's timer does
                mark.record()
            torch.cuda.synchronize()
            start.record()
            for i in range(job["iterations"]):
                step()
                if marks:
                    marks[i].record()
            end.record()
            end.synchronize()
            means.append(start.elapsed_time(end) / 1000.0 / job["iterations"])
        else:
            t0 = time.perf_counter()
            for _ in range(job["iterations"]):
                step()
            means.append((time.perf_counter() - t0) / job["iterations"])
    if sampler is not None:
        sampler.close()
    return statistics.median(means) if means else None


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


def sides_for(adapter, job, host_sync, parts):
    """{side: a zero-argument call giving one block's seconds per mini-batch} on one built adapter, in the order
    they run: the bare loop, the suite, and what ``host_sync`` and ``parts`` add."""
    sides = {"bare": lambda: bare(adapter, job), "suite": lambda: suite(adapter, job)}
    if host_sync:
        sides["suite-host-sync"] = lambda: suite(adapter, dict(job, timer="host_sync"))
    if parts and adapter.device.type == "cuda":  # the timer's events and the GPU telemetry exist on a GPU only
        sides.update([("bare+events", lambda: bare(adapter, job, events=True)),
                      ("bare+telemetry", lambda: bare(adapter, job, telemetry=True))])
    if parts:
        sides["suite-nowindow"] = lambda: suite(adapter, job, window=False)
    return sides


def measure_case(sides, rounds):
    """Interleaved rounds of one block per side (``sides_for``): ({side: [seconds per mini-batch, one per
    round]}, the host probe's seconds per round, the last suite telemetry record, the suite's timer)."""
    found, probes, last = dict((k, []) for k in sides), [], {}
    order = list(sides)
    for r in range(rounds):
        probes.append(host_probe())
        for name in (order if r % 2 == 0 else order[::-1]):  # ABBA: the drift of a round weighs on every side
            value = sides[name]()
            if isinstance(value, tuple):
                value, last["timer"], telemetry = value
                last["telemetry"] = telemetry or last.get("telemetry")
            found[name].append(value)
    return found, probes, last.get("telemetry") or {}, last.get("timer")


def paired(sides, bares):
    """The rounds' own ratios side / bare: {"ratio": their median, "ci95": its distribution-free 95% interval
    (None under 6 rounds), "coverage", "rounds": sorted ratios' min, median and max}."""
    from runner import stats

    ratios = sorted(s / b for s, b in zip(sides, bares))
    return {"ratio": statistics.median(ratios), "ci95": stats.median_ci(ratios),
            "coverage": stats.median_ci_coverage(len(ratios)), "min": ratios[0], "max": ratios[-1]}


def profile(adapter, job, steps=5):
    """Per training step, what the bare loop and the suite's path run (torch.profiler, CPU side and, on CUDA, the
    kernels): {"bare" | "suite": {event name: count per step}}. The suite's steps: its warm-up, lead-in and
    measured iterations; the bare loop's: its warm-up and measured iterations."""
    import collections

    import torch
    from torch.profiler import ProfilerActivity, profile as torch_profile

    cuda = adapter.device.type == "cuda"
    small = dict(job, warmup=1, iterations=steps, repeats=1)
    lead_in = 1 if cuda and adapter.device_timer() is not None else 0
    found = {}
    for name, run, count in (("bare", lambda: bare(adapter, small), 1 + steps),
                             ("suite", lambda: suite(adapter, small), 1 + lead_in + steps)):
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
        with torch_profile(activities=activities) as prof:
            run()
            if cuda:
                torch.cuda.synchronize()
        gpu = torch.autograd.DeviceType.CUDA
        counter = collections.Counter(("GPU kernel " if e.device_type == gpu else "") + e.name for e in prof.events())
        found[name] = dict((k, v / float(count)) for k, v in counter.items())
    return found


def print_profile(found):
    """The events whose count per step differs between the two paths, and the totals of aten ops, CUDA runtime
    calls and kernels per step."""
    bare_, suite_ = found["bare"], found["suite"]
    for label, test in (("aten ops", lambda k: k.startswith("aten::")), ("CUDA runtime calls", lambda k: k.startswith("cuda")),
                        ("kernel launches", lambda k: k.startswith("cudaLaunchKernel") or k.startswith("cuLaunchKernel")),
                        ("GPU kernels", lambda k: k.startswith("GPU kernel "))):
        print("    profile, per step: %s bare %.1f, suite %.1f" % (
            label, sum(v for k, v in bare_.items() if test(k)), sum(v for k, v in suite_.items() if test(k))))
    differ = sorted(k for k in set(bare_) | set(suite_) if abs(bare_.get(k, 0) - suite_.get(k, 0)) > 1e-9)
    for k in differ:
        print("    profile: %-50s bare %6.2f  suite %6.2f per step" % (k[:50], bare_.get(k, 0), suite_.get(k, 0)))


def _interval(found):
    return "[%.4f, %.4f]" % tuple(found["ci95"]) if found["ci95"] else "[none: < 6 rounds]"


def step_seconds(adapter, job, steps=3):
    """Seconds per step of the primed model, by the host clock around ``steps`` synchronised steps (to size the
    rounds)."""
    block = dict(job, warmup=0, iterations=steps, repeats=1)
    adapter.synchronize()
    start = time.perf_counter()
    bare(adapter, block)
    return (time.perf_counter() - start) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seconds", type=float, default=20.0, help="measuring time per case (sets the rounds)")
    parser.add_argument("--min-rounds", type=int, default=7, help="rounds per case at least")
    parser.add_argument("--warmup", type=int, default=10, help="steps that prime each case's model, untimed")
    parser.add_argument("--block-warmup", type=int, default=3, help="warm-up steps at the start of every block")
    parser.add_argument("--iterations", type=int, default=20, help="measured steps per block")
    parser.add_argument("--cases", default="", help="labels to run, comma-separated (default: all)")
    parser.add_argument("--host-sync", action="store_true", help="also time the suite with per-iteration syncs")
    parser.add_argument("--parts", action="store_true",
                        help="also measure the bare loop with the suite's timer, with its telemetry, and the suite "
                             "without its window")
    parser.add_argument("--json", default="", help="write every figure to this file")
    parser.add_argument("--profile", action="store_true",
                        help="also count the events of a step (torch.profiler) on both paths and print the differences")
    args = parser.parse_args()
    import torch

    from dlrepro import checkout
    from runner import adapters

    chosen = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    rows = []
    started = time.perf_counter()
    print("%-20s %5s %-5s %10s %10s %7s %19s %6s %11s %11s" % (
        "case", "batch", "prec", "bare (ms)", "suite (ms)", "ratio", "95% interval", "rounds", "bare img/s",
        "suite img/s"))
    for label, spec_name, variant, batch, precision, layout in chosen:
        if args.device != "cuda":
            batch = CPU_BATCH[spec_name]
            if precision != "fp32":
                precision = "bf16"
        job = make_job(spec_name, variant, batch, precision, layout, args.device, args.block_warmup, args.iterations,
                       1)
        adapter = adapters.load(job)
        adapter.build()
        bare(adapter, dict(job, warmup=args.warmup, repeats=0))  # primes: cuDNN autotuning, allocator pools, lazy inits
        profiled = profile(adapter, job) if args.profile else None
        sides = sides_for(adapter, job, args.host_sync, args.parts)
        rounds = rounds_for(step_seconds(adapter, job), len(sides), args.block_warmup + args.iterations + 1,
                            args.seconds, args.min_rounds)
        found, probes, tel, timer = measure_case(sides, rounds)
        adapter.release()
        if args.device == "cuda":
            torch.cuda.empty_cache()
        bares, suites = found["bare"], found["suite"]
        b, s = statistics.median(bares), statistics.median(suites)
        pair = paired(suites, bares)
        probe = sorted(probes)
        row = {"case": label, "spec": spec_name, "variant": variant, "batch_size": batch, "precision": precision,
               "layout": layout, "rounds": rounds, "iterations_per_block": args.iterations,
               "bare_s": b, "suite_s": s, "ratio": pair["ratio"], "ratio_ci95": pair["ci95"],
               "ratio_ci95_coverage": pair["coverage"], "ratio_rounds_min_max": [pair["min"], pair["max"]],
               "bare_rounds": bares, "suite_rounds": suites, "suite_timer": timer, "bare_samples_per_s": batch / b,
               "suite_samples_per_s": batch / s, "order": "ABBA over %s" % ", ".join(found),
               "host_probe_s": probes, "host_probe_p10_p90": [probe[len(probe) // 10], probe[len(probe) * 9 // 10]],
               "telemetry": {k: tel.get(k) for k in ("status", "reason", "sampling", "device", "summary", "reasons_seen",
                                                      "violation_s", "throttled", "throttle_reasons")}}
        if "suite-host-sync" in found:
            row["suite_host_sync_s"] = statistics.median(found["suite-host-sync"])
            row["host_sync"] = paired(found["suite-host-sync"], bares)
        parts = [p for p in PARTS if p in found]
        if parts:
            row["parts"] = dict((p, dict(paired(found[p], bares), rounds=found[p], median_s=statistics.median(found[p])))
                                for p in parts)
        if profiled:
            row["profile_per_step"] = profiled
        rows.append(row)
        print("%-20s %5d %-5s %10.3f %10.3f %7.4f %19s %6d %11.1f %11.1f%s" % (
            label, batch, precision, b * 1e3, s * 1e3, pair["ratio"], _interval(pair), rounds, batch / b, batch / s,
            "   host-sync ratio %.4f" % row["host_sync"]["ratio"] if "host_sync" in row else ""))
        print("    rounds' own ratios %.4f-%.4f; host probe %.1f-%.1f ms (%s over the rounds)" % (
            pair["min"], pair["max"], row["host_probe_p10_p90"][0] * 1e3, row["host_probe_p10_p90"][1] * 1e3,
            "10th-90th percentile" if rounds >= 10 else "least-most"))
        for p in parts:
            part = row["parts"][p]
            print("    %-16s %9.3f ms  ratio to bare %.4f %s" % (p, part["median_s"] * 1e3, part["ratio"], _interval(part)))
        if profiled:
            print_profile(profiled)
        sys.stdout.flush()
        if tel.get("status") == "ok":
            summ = tel["summary"]
            print("    telemetry: SM %s MHz, mem %s MHz, power %s W, temp %s C, util %s%%, throttled %s %s" % (
                _mmm(summ["sm_clock_mhz"]), _mmm(summ["memory_clock_mhz"]), _mmm(summ["power_w"]),
                _mmm(summ["temperature_c"]), _mmm(summ["gpu_util_pct"]), tel["throttled"],
                tel["throttle_reasons"] or tel["reasons_seen"]))
        else:
            print("    telemetry: %s" % tel.get("reason"))
    if args.device == "cuda" and (not args.cases or "torchvision" in args.cases):
        try:
            import torchvision
        except ImportError:
            torchvision = None
        if torchvision is not None:
            job = make_job("resnet50", "resnet50", 256, "bf16", "channels_last", args.device, args.warmup,
                           args.iterations, 3)
            adapter = adapters.load(job)
            adapter.build()
            model = torchvision.models.resnet50()
            tv = statistics.median(bare(adapter, job, model) for _ in range(3))
            adapter.release()
            rows.append({"case": "torchvision resnet50 bare (reference)", "batch_size": 256, "precision": "bf16",
                         "layout": "channels_last", "bare_s": tv, "bare_samples_per_s": 256 / tv})
            print("%-20s %5d %-5s %10.3f %10s %7s %19s %6s %11.1f" % ("torchvision RN50", 256, "bf16", tv * 1e3, "-",
                                                                     "-", "-", "-", 256 / tv))
    measured = [r for r in rows if "ratio" in r]
    worst = max(measured, key=lambda r: abs(r["ratio"] - 1.0))
    inside = all(TARGET[0] <= r["ratio"] <= TARGET[1] for r in measured)
    reaching = ["%s %s" % (r["case"], _interval({"ci95": r["ratio_ci95"]})) for r in measured
                if not r["ratio_ci95"] or r["ratio_ci95"][0] < TARGET[0] or r["ratio_ci95"][1] > TARGET[1]]
    print("farthest from 1: %s %.4f %s; every case's median ratio within %.2f-%.2f: %s; intervals reaching "
          "outside: %s; %.0f s" % (worst["case"], worst["ratio"], _interval({"ci95": worst["ratio_ci95"]}), TARGET[0],
                                   TARGET[1], "yes" if inside else "no", ", ".join(reaching) or "none",
                                   time.perf_counter() - started))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "torch": torch.__version__,
                                               "suite": checkout.state(),
                                               "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
                                               "args": vars(args), "rows": rows}, indent=1))


def _mmm(s):
    if not s:
        return "-"
    return "%g/%g/%g" % (s["min"], s["median"], s["max"])


if __name__ == "__main__":
    main()
