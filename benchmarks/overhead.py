"""The suite's own overhead: its measured seconds per mini-batch against a bare PyTorch loop, in one process.

    python benchmarks/overhead.py [--device cuda] [--rounds 7] [--iterations 20] [--host-sync] [--profile]
                                  [--cases LSTM,...] [--json OUT.json]

For each case (AlexNet-S, ResNet-50, FCN-S, the LSTM, and ResNet-50 at batch 256 in bf16
autocast with channels_last) one model is built (runner.adapters, torch, from the spec) and
primed (``--warmup`` untimed steps: cuDNN autotuning, the allocator's pools), then measured two
ways, round after round, on that same model, batch, optimizer, precision and layout:

  suite  the runner's throughput path as a job runs it: runner.measure.throughput (warm-up, then
         repeats of measured iterations, CUDA-event timing on GPUs: one event recorded at every
         iteration boundary) inside its measured window (runner.window: GPU telemetry sampled
         by a thread, CPU time); the figure is the median over repeats of each repeat's mean
         iteration, the same statistic as the bare loop's (like for like: the bare loop has no
         per-iteration clock, and a repeat's first iteration weighs in both).
  bare   a plain loop over the same nn.Module, loss and optimizer (zero_grad, forward under
         autocast where asked, backward, gradient clipping where the job clips, step) on one
         device-resident batch: the same warm-up, then CUDA events around ``iterations`` steps, no
         synchronisation inside; the median over repeats of the mean step time.

Rounds are interleaved in ABBA order (bare first in even rounds, suite first in odd ones) so that a
drift of the host or the GPU weighs on both sides alike. The figure of each side is the median of
its rounds, the ratio suite / bare their quotient (target <= 1.02), and the spread of the ratio is
the min / median / max of each round's own suite / bare. A case marked ``decompose`` (the
launch-bound LSTM, where the GPU waits on the host) is also measured, in the same rounds, as
  bare+events     the bare loop with one CUDA event recorded after every step (the suite's timer),
  bare+telemetry  the bare loop while a runner.telemetry.Sampler samples the GPU (the suite's window),
  suite-nowindow  the suite's path without its measured window (no telemetry thread, no counters),
each with its ratio to the bare loop, so that what the suite adds is measured one part at a time.
With --host-sync the suite is also measured with a host clock read and a device synchronisation
around every iteration (the timer before CUDA events), to show what that costs. ResNet-50 is also
timed bare as torchvision builds it, when torchvision is installed, to compare the spec's model
definition with the usual one. --profile counts, per step, the aten ops, CUDA runtime calls (kernel
launches, event records, synchronisations) and kernels of each path (torch.profiler) and prints where
they differ.
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = [  # (label, spec, variant, batch size, precision, layout, decompose)
    ("AlexNet-S", "alexnet", "alexnet-s", 128, "fp32", "default", False),
    ("ResNet-50", "resnet50", "resnet50", 64, "fp32", "default", False),
    ("FCN-S", "fcn", "fcn-s", 1024, "fp32", "default", False),
    ("LSTM", "lstm", "lstm-synthetic", 128, "fp32", "default", True),
    ("ResNet-50 bf16 NHWC", "resnet50", "resnet50", 256, "bf16", "channels_last", False),
]
CPU_BATCH = {"alexnet": 8, "resnet50": 4, "fcn": 32, "lstm": 16}
PARTS = ("bare+events", "bare+telemetry", "suite-nowindow")


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
    (``window`` False: no measured window, hence no telemetry thread; the record is None)."""
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


def measure_case(adapter, job, rounds, host_sync, decompose):
    """Interleaved rounds of one case on one built adapter: {side: [seconds per mini-batch, one per round]}, the
    last suite telemetry record and timer."""
    sides = {"bare": lambda: bare(adapter, job), "suite": lambda: suite(adapter, job)}
    if host_sync:
        sides["suite-host-sync"] = lambda: suite(adapter, dict(job, timer="host_sync"))
    if decompose:
        sides.update([("bare+events", lambda: bare(adapter, job, events=True)),
                      ("bare+telemetry", lambda: bare(adapter, job, telemetry=True)),
                      ("suite-nowindow", lambda: suite(adapter, job, window=False))])
    found, last = dict((k, []) for k in sides), {}
    order = list(sides)
    for r in range(rounds):
        for name in (order if r % 2 == 0 else order[::-1]):  # ABBA: the drift of a round weighs on every side
            value = sides[name]()
            if isinstance(value, tuple):
                value, last["timer"], telemetry = value
                last["telemetry"] = telemetry or last.get("telemetry")
            found[name].append(value)
    return found, last.get("timer"), last.get("telemetry") or {}


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


def spread(suites, bares):
    """(min, median, max) of each round's suite / bare."""
    ratios = [s / b for s, b in zip(suites, bares)]
    return min(ratios), statistics.median(ratios), max(ratios)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved bare/suite rounds per case")
    parser.add_argument("--warmup", type=int, default=10, help="warm-up steps before each measurement (and to prime)")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default="", help="labels to run, comma-separated (default: all)")
    parser.add_argument("--host-sync", action="store_true", help="also time the suite with per-iteration syncs")
    parser.add_argument("--json", default="", help="write every figure to this file")
    parser.add_argument("--profile", action="store_true",
                        help="also count the events of a step (torch.profiler) on both paths and print the differences")
    args = parser.parse_args()
    import torch

    from runner import adapters

    chosen = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    rows = []
    started = time.perf_counter()
    print("%-20s %5s %-5s %11s %11s %7s %22s %12s %12s" % ("case", "batch", "prec", "bare (ms)", "suite (ms)", "ratio",
                                                            "round ratios min/med/max", "bare img/s", "suite img/s"))
    for label, spec_name, variant, batch, precision, layout, decompose in chosen:
        if args.device != "cuda":
            batch = CPU_BATCH[spec_name]
            if precision != "fp32":
                precision = "bf16"
        job = make_job(spec_name, variant, batch, precision, layout, args.device, args.warmup, args.iterations,
                       args.repeats)
        adapter = adapters.load(job)
        adapter.build()
        bare(adapter, dict(job, repeats=0))  # primes: cuDNN autotuning, the allocator's pools, lazy inits
        profiled = profile(adapter, job) if args.profile else None
        found, timer, tel = measure_case(adapter, job, args.rounds, args.host_sync, decompose and args.device == "cuda")
        adapter.release()
        if args.device == "cuda":
            torch.cuda.empty_cache()
        bares, suites = found["bare"], found["suite"]
        b, s = statistics.median(bares), statistics.median(suites)
        low, mid, high = spread(suites, bares)
        row = {"case": label, "spec": spec_name, "variant": variant, "batch_size": batch, "precision": precision,
               "layout": layout, "bare_s": b, "suite_s": s, "ratio": s / b, "ratio_rounds": [low, mid, high],
               "bare_rounds": bares, "suite_rounds": suites, "suite_timer": timer, "bare_samples_per_s": batch / b,
               "suite_samples_per_s": batch / s, "order": "ABBA over %s" % ", ".join(found),
               "telemetry": {k: tel.get(k) for k in ("status", "reason", "device", "summary", "reasons_seen",
                                                      "violation_s", "throttled", "throttle_reasons")}}
        if "suite-host-sync" in found:
            row["suite_host_sync_s"] = statistics.median(found["suite-host-sync"])
            row["host_sync_ratio"] = row["suite_host_sync_s"] / b
        parts = [p for p in PARTS if p in found]
        if parts:
            row["parts"] = dict((p, {"rounds": found[p], "median_s": statistics.median(found[p]),
                                     "ratio": statistics.median(found[p]) / b,
                                     "ratio_rounds": list(spread(found[p], bares))}) for p in parts)
        if profiled:
            row["profile_per_step"] = profiled
        rows.append(row)
        print("%-20s %5d %-5s %11.3f %11.3f %7.4f %8.4f/%.4f/%.4f %12.1f %12.1f%s" % (
            label, batch, precision, b * 1e3, s * 1e3, s / b, low, mid, high, batch / b, batch / s,
            "   host-sync ratio %.4f" % row["host_sync_ratio"] if "host_sync_ratio" in row else ""))
        for p in parts:
            part = row["parts"][p]
            print("    %-16s %9.3f ms  ratio to bare %.4f (rounds %.4f/%.4f/%.4f)" % (
                p, part["median_s"] * 1e3, part["ratio"], *part["ratio_rounds"]))
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
                           args.iterations, args.repeats)
            adapter = adapters.load(job)
            adapter.build()
            model = torchvision.models.resnet50()
            tv = statistics.median(bare(adapter, job, model) for _ in range(3))
            adapter.release()
            rows.append({"case": "torchvision resnet50 bare (reference)", "batch_size": 256, "precision": "bf16",
                         "layout": "channels_last", "bare_s": tv, "bare_samples_per_s": 256 / tv})
            print("%-20s %5d %-5s %11.3f %11s %7s %22s %12.1f" % ("torchvision RN50", 256, "bf16", tv * 1e3, "-", "-",
                                                                  "-", 256 / tv))
    worst = max(r["ratio"] for r in rows if "ratio" in r)
    print("worst ratio suite/bare: %.4f (target <= 1.02); %.0f s" % (worst, time.perf_counter() - started))
    if args.json:
        Path(args.json).write_text(json.dumps({"device": args.device, "torch": torch.__version__,
                                               "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None,
                                               "args": vars(args), "rows": rows}, indent=1))


def _mmm(s):
    if not s:
        return "-"
    return "%g/%g/%g" % (s["min"], s["median"], s["max"])


if __name__ == "__main__":
    main()
