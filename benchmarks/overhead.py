"""The suite's own overhead: its measured seconds per mini-batch against a bare PyTorch loop, in one process.

    python benchmarks/overhead.py [--device cuda] [--rounds 3] [--iterations 30] [--json OUT.json]

For each case (AlexNet-S, ResNet-50, FCN-S, the LSTM, and ResNet-50 at batch 256 in bf16
autocast with channels_last) the same job is measured two ways on the same model definition,
batch, precision and layout:

  suite  the runner's throughput path as a job runs it: runner.adapters (torch) builds the
         model from the spec, runner.measure.throughput times it (warm-up, then repeats of
         measured iterations, CUDA-event timing on GPUs) inside its measured window (GPU
         telemetry at 40 Hz, CPU time); the figure is the median over repeats of each repeat's
         mean iteration, the same statistic as the bare loop's (like for like: the bare loop has
         no per-iteration clock, and a repeat's first iteration, which refills the GPU's launch
         queue, weighs in both as it does in a plain training loop).
  bare   a plain loop over the same nn.Module, loss and optimizer (zero_grad, forward under
         autocast where asked, backward, gradient clipping where the job clips, step) on one device-resident batch: the same warm-up,
         then CUDA events around ``iterations`` steps, no synchronisation inside; the figure is
         the median over repeats of the mean step time.

Rounds alternate bare and suite (bare, suite, bare, suite, ...) to spread clock and thermal
drift over both; each one's figure is the median of its rounds. The ratio suite / bare is the
harness's overhead (target <= 1.02). With --host-sync the suite is also measured with a host
clock read and a device synchronisation around every iteration (the timer before CUDA events),
to show what that costs. ResNet-50 is also timed bare as torchvision builds it, when torchvision
is installed, to compare the spec's model definition with the usual one.
"""
import argparse
import json
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


def make_job(spec_name, variant, batch, precision, layout, device, warmup, iterations, repeats):
    from dlrepro import spec as specmod
    from dlrepro.run import jobs
    from dlrepro.run.options import RunOptions

    options = RunOptions(frameworks=["torch"], variants=[variant], device=device, batch_sizes=[batch],
                         warmup=warmup, iterations=iterations, repeats=repeats, precision=precision,
                         layout=layout, executor="local")
    (job,) = jobs.expand(specmod.load(spec_name), options)
    return job


def suite(job):
    """Seconds per mini-batch through the runner's measurement path, as the bare loop gives them: the median over
    repeats of each repeat's mean iteration (like for like: the bare loop has no per-iteration clock), with the
    timer used and the telemetry record."""
    from runner import adapters, measure, window

    adapter = adapters.load(job)
    adapter.build()
    measured = window.Window.for_job(job)
    try:
        timing, _ = measure.throughput(adapter, job, None, measured)
    finally:
        measured.close()
    per_repeat = [statistics.fmean(rep) for rep in timing["repeats"]]
    return statistics.median(per_repeat), timing["timer"], measured.sampler.result()


def bare(job, model=None):
    """Median over repeats of the mean step time of a plain loop (CUDA events), on the adapter's model or ``model``."""
    import torch

    from runner import adapters, data as datamod

    adapter = adapters.load(job)
    adapter.build()
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

    for _ in range(job["warmup"]):
        step()
    means = []
    for _ in range(job["repeats"]):
        if cuda:
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(job["iterations"]):
                step()
            end.record()
            end.synchronize()
            means.append(start.elapsed_time(end) / 1000.0 / job["iterations"])
        else:
            t0 = time.perf_counter()
            for _ in range(job["iterations"]):
                step()
            means.append((time.perf_counter() - t0) / job["iterations"])
    return statistics.median(means)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--rounds", type=int, default=3, help="alternating bare/suite rounds per case")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", default="", help="labels to run, comma-separated (default: all)")
    parser.add_argument("--host-sync", action="store_true", help="also time the suite with per-iteration syncs")
    parser.add_argument("--json", default="", help="write every figure to this file")
    args = parser.parse_args()
    import torch

    chosen = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    rows = []
    print("%-20s %5s %-5s %11s %11s %7s %12s %12s" % ("case", "batch", "prec", "bare (ms)", "suite (ms)", "ratio",
                                                       "bare img/s", "suite img/s"))
    for label, spec_name, variant, batch, precision, layout in chosen:
        if args.device != "cuda":
            batch = CPU_BATCH[spec_name]
            if precision != "fp32":
                precision = "bf16"
        job = make_job(spec_name, variant, batch, precision, layout, args.device, args.warmup, args.iterations,
                       args.repeats)
        bares, suites, syncs, tel, timer = [], [], [], None, None
        for _ in range(args.rounds):
            bares.append(bare(job))
            s, timer, tel = suite(job)
            suites.append(s)
            if args.host_sync:
                syncs.append(suite(dict(job, timer="host_sync"))[0])
            if args.device == "cuda":
                torch.cuda.empty_cache()
        b, s = statistics.median(bares), statistics.median(suites)
        row = {"case": label, "spec": spec_name, "variant": variant, "batch_size": batch, "precision": precision,
               "layout": layout, "bare_s": b, "suite_s": s, "ratio": s / b, "bare_rounds": bares,
               "suite_rounds": suites, "suite_timer": timer, "bare_samples_per_s": batch / b,
               "suite_samples_per_s": batch / s,
               "telemetry": {k: tel.get(k) for k in ("status", "reason", "device", "summary", "reasons_seen",
                                                      "violation_s", "throttled", "throttle_reasons")}}
        if syncs:
            row["suite_host_sync_s"] = statistics.median(syncs)
            row["host_sync_ratio"] = row["suite_host_sync_s"] / b
        rows.append(row)
        print("%-20s %5d %-5s %11.3f %11.3f %7.4f %12.1f %12.1f%s" % (
            label, batch, precision, b * 1e3, s * 1e3, s / b, batch / b, batch / s,
            "   host-sync ratio %.4f" % row["host_sync_ratio"] if syncs else ""))
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
            tv = statistics.median(bare(job, torchvision.models.resnet50()) for _ in range(args.rounds))
            rows.append({"case": "torchvision resnet50 bare (reference)", "batch_size": 256, "precision": "bf16",
                         "layout": "channels_last", "bare_s": tv, "bare_samples_per_s": 256 / tv})
            print("%-20s %5d %-5s %11.3f %11s %7s %12.1f" % ("torchvision RN50", 256, "bf16", tv * 1e3, "-", "-",
                                                             256 / tv))
    worst = max(r["ratio"] for r in rows if "ratio" in r)
    print("worst ratio suite/bare: %.4f (target <= 1.02)" % worst)
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
