"""What one training step of the bare loop and of the suite runs, per step (benchmarks/overhead.py --profile).

Two profiles of a short block of each path (1 warm-up step, ``steps`` measured ones, the suite's lead-in counted):

  host   Python's cProfile: each function's own time and calls per step on the launching thread (time spent in a
         C++ dispatch, such as a jitted call's, counts as its Python caller's own time), the host's waits for the
         device (functions named in WAITS) apart
  calls  torch.profiler's events per step: aten ops (PyTorch), the CUDA runtime and driver calls and the GPU
         kernels, which CUPTI records for every framework in the process (XLA's launches too); empty where torch
         is not importable
"""

import collections
import cProfile
import pstats

from benchmarks.overhead_rounds import suite

TOP = 12  # host functions kept per path, by own time
WAITS = ("block_until_ready", "synchronize", "wait")  # a function whose name holds one of these waits for the device


def _host(call, count):
    """({function: {own_ms, calls} per step} of the TOP busiest, host work ms per step, wait ms per step, call's
    value) of one ``call`` that runs ``count`` steps."""
    profiler = cProfile.Profile()
    profiler.enable()
    value = call()
    profiler.disable()
    found = pstats.Stats(profiler).stats  # {(file, line, function): (primitive calls, calls, own, cumulative, ...)}
    waits = dict((k, v) for k, v in found.items() if any(w in k[2] for w in WAITS))
    rows = sorted(((k, v) for k, v in found.items() if k not in waits), key=lambda item: -item[1][2])
    top = dict(
        (
            "%s:%d(%s)" % (key[0].rsplit("/", 1)[-1], key[1], key[2]),
            {"own_ms": stat[2] * 1e3 / count, "calls": stat[1] / float(count)},
        )
        for key, stat in rows[:TOP]
    )
    return top, sum(stat[2] for _, stat in rows) * 1e3 / count, sum(v[2] for v in waits.values()) * 1e3 / count, value


def _calls(call, count):
    try:
        import torch
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile
    except ImportError:
        return {}
    cuda = torch.cuda.is_available()
    with torch_profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])) as prof:
        call()
        if cuda:
            torch.cuda.synchronize()
    gpu = torch.autograd.DeviceType.CUDA
    counter = collections.Counter(("GPU kernel " if e.device_type == gpu else "") + e.name for e in prof.events())
    return dict((k, v / float(count)) for k, v in counter.items())


def profile(adapter, job, run, steps=5):
    """{"bare" | "suite": {"host": {function: {own_ms, calls} per step}, "host_ms": the profiled host work per
    step, "wait_ms": the host's waits for the device per step, "calls": {event: count per step}}} of ``steps``
    measured steps of the bare loop ``run`` and of the suite (runner.measure.throughput, without its window)."""
    small = dict(job, warmup=1, iterations=steps, repeats=1)
    found = {}
    for name, call in (("bare", lambda: run(small)), ("suite", lambda: suite(adapter, small, window=False))):
        host, total, waits, value = _host(call, 1 + steps)
        lead_in = 1 if name == "suite" and value[1] == "device_events" else 0
        scale = (1.0 + steps) / (1 + lead_in + steps)  # the suite's lead-in is one step more
        found[name] = {
            "host": dict((k, {"own_ms": v["own_ms"] * scale, "calls": v["calls"] * scale}) for k, v in host.items()),
            "host_ms": total * scale,
            "wait_ms": waits * scale,
            "calls": _calls(call, 1 + lead_in + steps),
        }
    return found


def print_profile(found):
    """The host's busiest functions per path, and the events whose count per step differs between the paths."""
    for name in ("bare", "suite"):
        side = found[name]
        print(
            "    profile, %s: host work %.3f ms per step (waits for the device %.3f ms); busiest: %s"
            % (
                name,
                side["host_ms"],
                side["wait_ms"],
                "; ".join("%s %.3f ms x%.1f" % (k, v["own_ms"], v["calls"]) for k, v in list(side["host"].items())[:6]),
            )
        )
    bare_, suite_ = found["bare"]["calls"], found["suite"]["calls"]
    for label, test in (
        ("aten ops", lambda k: k.startswith("aten::")),
        ("CUDA runtime and driver calls", lambda k: k.startswith("cu")),
        ("kernel launches", lambda k: k.startswith(("cudaLaunchKernel", "cuLaunchKernel"))),
        ("GPU kernels", lambda k: k.startswith("GPU kernel ")),
    ):
        print(
            "    profile, per step: %s bare %.1f, suite %.1f"
            % (label, sum(v for k, v in bare_.items() if test(k)), sum(v for k, v in suite_.items() if test(k)))
        )
    differ = sorted(k for k in set(bare_) | set(suite_) if abs(bare_.get(k, 0) - suite_.get(k, 0)) > 1e-9)
    for k in differ:
        print("    profile: %-50s bare %6.2f  suite %6.2f per step" % (k[:50], bare_.get(k, 0), suite_.get(k, 0)))
