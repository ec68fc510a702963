"""The suite's own overhead: its measured seconds per mini-batch against a bare loop of the same framework.

    python benchmarks/overhead.py [--framework torch|jax] [--device cuda] [--seconds 20] [--min-rounds 7]
                                  [--iterations 20] [--block-warmup 3] [--timers host_sync,...] [--parts]
                                  [--profile] [--cases LSTM,...] [--json OUT.json]
    python benchmarks/overhead.py --executor docker --device cpu [--frameworks torch,tensorflow,...] ...

In one process (the default; ``--framework`` torch or jax, on the GPU or the CPU): for each case one model is built
(runner.adapters, from the spec) and primed (``--warmup`` untimed steps: compilation, cuDNN autotuning, the
allocator's pools), then measured two ways in blocks, on that same model, batch, optimizer, precision and layout:

  suite  the runner's throughput path as a job runs it: runner.measure.throughput (``--block-warmup`` warm-up steps,
         then one repeat of ``--iterations`` measured iterations, timed by the job's timer: CUDA events in stream
         order for PyTorch and JAX on a GPU, after the repeat's untimed lead-in) inside its measured window
         (runner.window: GPU telemetry, CPU time); a block's figure is the repeat's mean iteration, the statistic
         the bare loop gives (like for like: the bare loop has no per-iteration clock).
  bare   the framework's plain loop over the same model (benchmarks/bare_loops.py): the same warm-up, then
         ``--iterations`` steps pipelined, one synchronisation at the end (CUDA events around them for PyTorch on a
         GPU); a block's figure is the mean step.

With ``--executor docker`` each framework runs in its own CPU image (built, or found by its content-hashed tag),
through the docker executor's container settings (runner.supervise's isolation: read-only root, no network, the
memory limit), one case per container (benchmarks/overhead_rounds.py's main), on AlexNet-S and FCN-S at CPU batch
sizes; the host prints the ratios.

The sides alternate in paired ABBA rounds (benchmarks/overhead_rounds.py says why); the ratio is the median of the
rounds' own suite / bare ratios, with its distribution-free 95% interval and the host probe's spread. Targets
(issues 25 and 36): on a GPU every case within 0.98-1.02, on the CPU within 0.95-1.05; the last line also names the
cases whose interval reaches outside.

``--timers`` also measures the suite with another timer of runner.measure.TIMERS (host_sync: a device
synchronisation around every iteration; pipelined_wall: the repeat's wall time), each with its paired ratio.
``--parts`` also measures, in the same rounds (the first two on a GPU only),
  bare+events     the bare loop with one CUDA event recorded after every step (PyTorch: the suite's timer),
  bare+telemetry  the bare loop while a runner.telemetry.Sampler samples the GPU (the suite's window),
  suite-nowindow  the suite's path without its measured window (no telemetry, no counters),
so that what the suite adds is measured one part at a time. ResNet-50 is also timed bare as torchvision builds it,
when torchvision is installed (PyTorch on a GPU). ``--profile`` counts, per step, what each path runs
(benchmarks/overhead_profile.py: the host's Python calls, and torch.profiler's CUDA runtime and driver calls and
kernels, which it records for any framework in the process) and prints where they differ.
"""

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bare_loops  # noqa: E402 (the checkout first on the path)
from benchmarks.overhead_rounds import measure_case, paired, rounds_for, step_seconds, suite  # noqa: E402

CASES = {  # framework -> [(label, spec, variant, batch size, precision, layout)]
    "torch": [
        ("AlexNet-S", "alexnet", "alexnet-s", 128, "fp32", "default"),
        ("ResNet-50", "resnet50", "resnet50", 64, "fp32", "default"),
        ("FCN-S", "fcn", "fcn-s", 1024, "fp32", "default"),
        ("LSTM", "lstm", "lstm-synthetic", 128, "fp32", "default"),
        ("ResNet-50 bf16 NHWC", "resnet50", "resnet50", 256, "bf16", "channels_last"),
    ],
    "jax": [
        ("FCN-S b32", "fcn", "fcn-s", 32, "fp32", "default"),
        ("FCN-S b128", "fcn", "fcn-s", 128, "fp32", "default"),
        ("FCN-S", "fcn", "fcn-s", 1024, "fp32", "default"),
        ("AlexNet-S b16", "alexnet", "alexnet-s", 16, "fp32", "default"),
        ("AlexNet-S", "alexnet", "alexnet-s", 128, "fp32", "default"),
        ("ResNet-50", "resnet50", "resnet50", 64, "fp32", "default"),
        ("LSTM", "lstm", "lstm-synthetic", 128, "fp32", "default"),
    ],
}
CPU_CASES = [
    ("AlexNet-S", "alexnet", "alexnet-s", 8, "fp32", "default"),
    ("FCN-S", "fcn", "fcn-s", 32, "fp32", "default"),
]
CPU_BATCH = {"alexnet": 8, "resnet50": 4, "fcn": 32, "lstm": 16}
FRAMEWORKS = "torch,tensorflow,mxnet,jax,cntk,caffe2,caffe"
PARTS = ("bare+events", "bare+telemetry", "suite-nowindow")
TARGET = {"cuda": (0.98, 1.02), "cpu": (0.95, 1.05)}


def make_job(framework, spec_name, variant, batch, precision, layout, device, warmup, iterations, repeats):
    from dlrepro.inputs import spec as specmod
    from dlrepro.run import jobs
    from dlrepro.run.options import RunOptions

    options = RunOptions(
        frameworks=[framework],
        variants=[variant],
        device=device,
        batch_sizes=[batch],
        warmup=warmup,
        iterations=iterations,
        repeats=repeats,
        precision=precision,
        layout=layout,
        executor="local",
    )
    (job,) = jobs.expand(specmod.load(spec_name), options)
    return job


def sides_for(adapter, job, run, timers, parts):
    """{side: a zero-argument call giving one block's seconds per mini-batch} on one built adapter, in the order
    they run: the bare loop ``run``, the suite, the suite under each of ``timers``, and what ``parts`` adds."""
    cuda = job["device"] == "cuda"
    sides = {"bare": lambda: run(job), "suite": lambda: suite(adapter, job)}
    for timer in timers:
        sides["suite-" + timer] = lambda timer=timer: suite(adapter, dict(job, timer=timer))
    if parts and cuda:  # the events and the GPU telemetry exist on a GPU only
        if job["framework"] == "torch":
            events = bare_loops.loop(adapter, job, events=True)
            sides["bare+events"] = lambda: events(job)
        telemetry = bare_loops.loop(adapter, job, telemetry=True)
        sides["bare+telemetry"] = lambda: telemetry(job)
    if parts:
        sides["suite-nowindow"] = lambda: suite(adapter, job, window=False)
    return sides


def _interval(found):
    return "[%.4f, %.4f]" % tuple(found["ci95"]) if found["ci95"] else "[none: < 6 rounds]"


def row_of(label, job, found, probes, tel, timers, rounds, iterations):
    """The JSON row of one case from its rounds (``found``: {side: [seconds, one per round]}; ``timers``: {side: the
    runner.measure timer it used})."""
    bares, suites, batch = found["bare"], found["suite"], job["batch_size"]
    b, s = statistics.median(bares), statistics.median(suites)
    pair, probe = paired(suites, bares), sorted(probes)
    row = {
        "case": label,
        "framework": job["framework"],
        "spec": job["spec"]["name"],
        "variant": job["variant"],
        "batch_size": batch,
        "precision": job["precision"],
        "layout": job.get("layout"),
        "rounds": rounds,
        "iterations_per_block": iterations,
        "bare_s": b,
        "suite_s": s,
        "ratio": pair["ratio"],
        "ratio_ci95": pair["ci95"],
        "ratio_ci95_coverage": pair["coverage"],
        "ratio_rounds_min_max": [pair["min"], pair["max"]],
        "bare_rounds": bares,
        "suite_rounds": suites,
        "suite_timer": timers["suite"],
        "bare_samples_per_s": batch / b,
        "suite_samples_per_s": batch / s,
        "order": "ABBA over %s" % ", ".join(found),
        "host_probe_s": probes,
        "host_probe_p10_p90": [probe[len(probe) // 10], probe[len(probe) * 9 // 10]],
        "telemetry": {
            k: tel.get(k)
            for k in (
                "status",
                "reason",
                "sampling",
                "device",
                "summary",
                "reasons_seen",
                "violation_s",
                "throttled",
                "throttle_reasons",
            )
        },
    }
    others = [k for k in found if k not in ("bare", "suite")]
    if others:
        row["parts"] = dict(
            (
                p,
                dict(
                    paired(found[p], bares), rounds=found[p], median_s=statistics.median(found[p]), timer=timers.get(p)
                ),
            )
            for p in others
        )
    return row


HEADER = "%-20s %-10s %5s %-5s %10s %10s %7s %19s %6s %-14s" % (
    "case",
    "framework",
    "batch",
    "prec",
    "bare (ms)",
    "suite (ms)",
    "ratio",
    "95% interval",
    "rounds",
    "suite timer",
)


def print_row(row):
    print(
        "%-20s %-10s %5d %-5s %10.3f %10.3f %7.4f %19s %6d %-14s"
        % (
            row["case"],
            row["framework"],
            row["batch_size"],
            row["precision"],
            row["bare_s"] * 1e3,
            row["suite_s"] * 1e3,
            row["ratio"],
            _interval({"ci95": row["ratio_ci95"]}),
            row["rounds"],
            row["suite_timer"],
        )
    )
    print(
        "    rounds' own ratios %.4f-%.4f; host probe %.1f-%.1f ms (%s over the rounds)"
        % (
            row["ratio_rounds_min_max"][0],
            row["ratio_rounds_min_max"][1],
            row["host_probe_p10_p90"][0] * 1e3,
            row["host_probe_p10_p90"][1] * 1e3,
            "10th-90th percentile" if row["rounds"] >= 10 else "least-most",
        )
    )
    for name, part in sorted((row.get("parts") or {}).items()):
        print(
            "    %-22s %9.3f ms  ratio to bare %.4f %s" % (name, part["median_s"] * 1e3, part["ratio"], _interval(part))
        )
    tel = row["telemetry"]
    if tel.get("status") == "ok":
        summ = tel["summary"]
        print(
            "    telemetry: SM %s MHz, mem %s MHz, power %s W, temp %s C, util %s%%, throttled %s %s"
            % (
                _mmm(summ["sm_clock_mhz"]),
                _mmm(summ["memory_clock_mhz"]),
                _mmm(summ["power_w"]),
                _mmm(summ["temperature_c"]),
                _mmm(summ["gpu_util_pct"]),
                tel["throttled"],
                tel["throttle_reasons"] or tel["reasons_seen"],
            )
        )
    sys.stdout.flush()


def in_process(args, framework):
    """Every chosen case of ``framework`` built and measured in this process; returns the rows."""
    from runner import adapters

    rows = []
    for label, spec_name, variant, batch, precision, layout in _chosen(CASES[framework], args):
        if args.device != "cuda":
            batch, precision = CPU_BATCH[spec_name], "fp32" if precision == "fp32" else "bf16"
        job = make_job(
            framework, spec_name, variant, batch, precision, layout, args.device, args.block_warmup, args.iterations, 1
        )
        adapter = adapters.load(job)
        adapter.build()
        run = bare_loops.loop(adapter, job)
        run(dict(job, warmup=args.warmup, repeats=0))  # primes: compilation, autotuning, allocator pools
        suite(adapter, dict(job, warmup=2, iterations=1), window=False)  # and the suite's step (JAX: its own program)
        profiled = None
        if args.profile:
            from benchmarks import overhead_profile

            profiled = overhead_profile.profile(adapter, job, run)
        sides = sides_for(adapter, job, run, args.timers, args.parts)
        rounds = rounds_for(
            step_seconds(run, job), len(sides), args.block_warmup + args.iterations + 1, args.seconds, args.min_rounds
        )
        found, probes, tel, timers = measure_case(sides, rounds)
        adapter.release()
        row = row_of(label, job, found, probes, tel, timers, rounds, args.iterations)
        if profiled:
            row["profile_per_step"] = profiled
        rows.append(row)
        save(args, rows)
        print_row(row)
        if profiled:
            overhead_profile.print_profile(profiled)
    return rows


def in_images(args):
    """Every chosen CPU case of every framework of ``--frameworks``, each in a container of the framework's CPU
    image (benchmarks/overhead_rounds.py's main); returns the rows."""
    import os

    from dlrepro import REPO_ROOT, engine
    from dlrepro.images import build
    from dlrepro.images import matrix as matrixmod
    from dlrepro.inputs import datasets
    from dlrepro.run.executors import docker as dockerexec

    matrix, client, rows = matrixmod.load(), engine.client(), []
    for framework in args.frameworks.split(","):
        image = build.ensure(matrix, matrix.find(framework, "cpu"), build.BuildOptions(), log=lambda message: None)
        for label, spec_name, variant, batch, precision, layout in _chosen(CPU_CASES, args):
            job = make_job(
                framework, spec_name, variant, batch, precision, layout, "cpu", args.block_warmup, args.iterations, 1
            )
            with tempfile.TemporaryDirectory(prefix="dlrepro-overhead-") as tmp:
                stage, out = Path(tmp, "jobs"), Path(tmp, "out")
                stage.mkdir()
                out.mkdir()
                out.chmod(0o777)
                (stage / "case.json").write_text(
                    json.dumps(
                        {"job": job, "warmup": args.warmup, "seconds": args.seconds, "min_rounds": args.min_rounds}
                    )
                )
                container = dockerexec.create_args(
                    image.tag,
                    "%d:%d" % (os.getuid(), os.getgid()),
                    stage,
                    out,
                    datasets.root(),
                    memory=dockerexec.default_memory(),
                    command=["python", "-m", "benchmarks.overhead_rounds", "/jobs/case.json", "/out/found.json"],
                )
                container["volumes"][str(REPO_ROOT / "benchmarks")] = {
                    "bind": dockerexec.CONTAINER_ROOT + "/benchmarks",
                    "mode": "ro",
                }
                for key in ("stdin_open", "detach", "auto_remove"):  # run to its end here, then removed
                    container.pop(key)
                started = time.perf_counter()
                _run_to_end(client.containers.create(**container), framework)
                found = json.loads((out / "found.json").read_text())
            rounds = len(found["rounds"]["bare"])
            row = row_of(
                label,
                job,
                found["rounds"],
                found["host_probe_s"],
                {},
                {"suite": found["timer"]},
                rounds,
                args.iterations,
            )
            row.update(
                image=image.tag,
                framework_version=found["framework_version"],
                framework_threads=found["threads"],
                container_s=time.perf_counter() - started,
            )
            rows.append(row)
            save(args, rows)
            print_row(row)
    return rows


def _run_to_end(container, framework):
    """Start ``container`` and wait for its end; it is removed whatever happens (this process ended by SIGTERM
    too: main turns that into SystemExit). Raises RuntimeError with its last output when it fails."""
    try:
        container.start()
        code = container.wait()["StatusCode"]
        if code:
            raise RuntimeError(
                "%s: the container exited with %d: %s"
                % (framework, code, container.logs(tail=20).decode(errors="replace"))
            )
    finally:
        container.remove(force=True)


def _chosen(cases, args):
    return [c for c in cases if not args.cases or c[0] in args.cases.split(",")]


def torchvision_reference(args):
    """ResNet-50 at batch 256, bf16, NHWC, bare, as torchvision builds it (PyTorch on a GPU); None without
    torchvision."""
    try:
        import torchvision
    except ImportError:
        return None
    from runner import adapters

    job = make_job(
        "torch", "resnet50", "resnet50", 256, "bf16", "channels_last", "cuda", args.warmup, args.iterations, 3
    )
    adapter = adapters.load(job)
    adapter.build()
    run = bare_loops.loop(adapter, job, model=torchvision.models.resnet50())
    tv = statistics.median(run(job) for _ in range(3))
    adapter.release()
    print("%-20s %-10s %5d %-5s %10.3f" % ("torchvision RN50", "torch", 256, "bf16", tv * 1e3))
    return {
        "case": "torchvision resnet50 bare (reference)",
        "batch_size": 256,
        "precision": "bf16",
        "layout": "channels_last",
        "bare_s": tv,
        "bare_samples_per_s": 256 / tv,
    }


def _mmm(s):
    if not s:
        return "-"
    return "%g/%g/%g" % (s["min"], s["median"], s["max"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="torch", choices=sorted(CASES), help="in one process: torch or jax")
    parser.add_argument(
        "--executor",
        default="local",
        choices=("local", "docker"),
        help="docker: each framework of --frameworks in its CPU image",
    )
    parser.add_argument("--frameworks", default=FRAMEWORKS, help="with --executor docker, comma-separated")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seconds", type=float, default=20.0, help="measuring time per case (sets the rounds)")
    parser.add_argument("--min-rounds", type=int, default=7, help="rounds per case at least")
    parser.add_argument("--warmup", type=int, default=10, help="steps that prime each case's model, untimed")
    parser.add_argument("--block-warmup", type=int, default=3, help="warm-up steps at the start of every block")
    parser.add_argument("--iterations", type=int, default=20, help="measured steps per block")
    parser.add_argument("--cases", default="", help="labels to run, comma-separated (default: all)")
    parser.add_argument("--timers", default="", help="also time the suite with these runner.measure timers")
    parser.add_argument(
        "--parts",
        action="store_true",
        help="also measure the bare loop with the suite's timer, with its telemetry, and the suite without its window",
    )
    parser.add_argument("--json", default="", help="write every figure to this file")
    parser.add_argument(
        "--profile", action="store_true", help="also count what a step runs on both paths and print the differences"
    )
    args = parser.parse_args()
    args.timers = [t for t in args.timers.split(",") if t]
    started = time.perf_counter()
    print(HEADER)
    if args.executor == "docker":
        if args.device != "cpu":
            parser.error("--executor docker measures the CPU images: give --device cpu")
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # the container is removed
        rows = in_images(args)
    else:
        rows = in_process(args, args.framework)
        if args.framework == "torch" and args.device == "cuda" and (not args.cases or "torchvision" in args.cases):
            reference = torchvision_reference(args)
            rows += [reference] if reference else []
    measured = [r for r in rows if "ratio" in r]
    low, high = TARGET["cuda" if args.device == "cuda" else "cpu"]
    worst = max(measured, key=lambda r: abs(r["ratio"] - 1.0))
    inside = all(low <= r["ratio"] <= high for r in measured)
    reaching = [
        "%s %s %s" % (r["framework"], r["case"], _interval({"ci95": r["ratio_ci95"]}))
        for r in measured
        if not r["ratio_ci95"] or r["ratio_ci95"][0] < low or r["ratio_ci95"][1] > high
    ]
    print(
        "farthest from 1: %s %s %.4f %s; every case's median ratio within %.2f-%.2f: %s; intervals reaching "
        "outside: %s; %.0f s"
        % (
            worst["framework"],
            worst["case"],
            worst["ratio"],
            _interval({"ci95": worst["ratio_ci95"]}),
            low,
            high,
            "yes" if inside else "no",
            ", ".join(reaching) or "none",
            time.perf_counter() - started,
        )
    )
    save(args, rows)


def save(args, rows):
    """Every figure so far to ``--json`` (after each case: a run cut short keeps what it measured)."""
    from dlrepro import checkout

    if args.json:
        Path(args.json).write_text(
            json.dumps(
                {
                    "device": args.device,
                    "executor": args.executor,
                    "versions": _versions(args),
                    "suite": checkout.state(),
                    "args": vars(args),
                    "rows": rows,
                },
                indent=1,
            )
        )


def _versions(args):
    """The in-process framework's version and GPU (the images' versions are in their rows)."""
    if args.executor == "docker":
        return None
    found = {}
    if args.framework == "jax":
        import jax

        found.update(jax=jax.__version__, gpu=str(jax.devices()[0].device_kind) if args.device == "cuda" else None)
    else:
        import torch

        found.update(torch=torch.__version__, gpu=torch.cuda.get_device_name(0) if args.device == "cuda" else None)
    return found


if __name__ == "__main__":
    main()
