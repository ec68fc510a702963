"""Whether the JAX device clock (runner.adapters.cuda_clock: CUDA events on a stream made to wait for a step's output
through DLPack) times XLA's steps on the device, without a wait on the host. On one GPU:

1. a jitted float32 8192x8192 matrix-product step (about 20 ms on an H200 at "highest" precision), 10 steps:
   the events' per-step seconds against the pipelined wall time of the same 10 steps (host clock, one
   synchronisation at the end); each ``record`` call's host time while the GPU is busy (a host wait would
   take a step's time);
2. a tiny jitted step (a vector add), 2000 steps pipelined with and without a record after each: the marker's
   host cost per step;
3. the runner's path: FCN-S b32 through runner.measure.throughput, the timer it picks, and the events' sum
   against the repeats' wall time.

    python results/h200-timers-20261203/jax_clock_check.py OUT.json      (from the checkout's root)
"""
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def heavy(clock, jax, jnp):
    a = jax.random.normal(jax.random.PRNGKey(0), (8192, 8192), jnp.float32)
    step = jax.jit(lambda a: (a @ a) * (1.0 / 90.50966799187809))  # keeps the entries' variance at 1
    for _ in range(3):
        a = step(a)
    a.block_until_ready()
    walls = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(10):
            a = step(a)
        a.block_until_ready()
        walls.append((time.perf_counter() - start) / 10)
    marks = clock.marks(11)
    a = step(a)
    clock.record(marks[0], a)
    record_s = []
    for i in range(10):
        a = step(a)
        t = time.perf_counter()
        clock.record(marks[i + 1], a)
        record_s.append(time.perf_counter() - t)
    clock.wait(marks[-1])
    seconds = [clock.seconds(marks[i], marks[i + 1]) for i in range(10)]
    clock.forget(marks)
    return {"pipelined_wall_per_step_s": walls, "event_seconds": seconds, "event_mean_s": sum(seconds) / 10,
            "record_host_s": record_s, "finite": bool(jnp.isfinite(a).all())}


def tiny(clock, jax, jnp, count=2000):
    v = jnp.ones((256,), jnp.float32)
    step = jax.jit(lambda v: v * 0.999 + 0.001)
    v = step(v)
    v.block_until_ready()
    found = {}
    for marked in (False, True, False, True):
        marks = clock.marks(count) if marked else None
        start = time.perf_counter()
        for i in range(count):
            v = step(v)
            if marked:
                clock.record(marks[i], v)
        v.block_until_ready()
        found.setdefault("marked" if marked else "plain", []).append((time.perf_counter() - start) / count)
        if marked:
            clock.wait(marks[-1])
            clock.forget(marks)
    return found


def runner_path():
    from benchmarks.overhead import make_job
    from runner import adapters, measure

    job = make_job("jax", "fcn", "fcn-s", 32, "fp32", "default", "cuda", 5, 20, 3)
    adapter = adapters.load(job)
    adapter.build()
    timing, loss = measure.throughput(adapter, job)
    adapter.release()
    return {"timer": timing["timer"], "lead_in": timing["lead_in"], "sample": timing["sample"],
            "event_sums_s": [sum(r) for r in timing["repeats"]], "repeat_wall_s": timing["repeat_wall_seconds"],
            "median_s": timing["summary"]["median"], "loss": loss}


def main(out):
    import jax
    import jax.numpy as jnp

    from runner.adapters import cuda_clock

    jax.config.update("jax_default_matmul_precision", "highest")
    device = jax.devices("gpu")[0]
    clock = cuda_clock.StreamClock(device.local_hardware_id, lambda result, stream: result.__dlpack__(stream=stream))
    found = {"jax": jax.__version__, "device": str(device.device_kind),
             "xla_external_ready_stream": str(device.get_stream_for_external_ready_events()),
             "heavy": heavy(clock, jax, jnp), "tiny": tiny(clock, jax, jnp)}
    clock.close()
    found["runner"] = runner_path()
    h, t, r = found["heavy"], found["tiny"], found["runner"]
    print("heavy step: pipelined wall %s ms/step; events %.3f ms/step (each %.3f-%.3f ms); record() on the host "
          "%.1f-%.1f us while the GPU is busy; finite %s" % (
              ", ".join("%.3f" % (w * 1e3) for w in h["pipelined_wall_per_step_s"]), h["event_mean_s"] * 1e3,
              min(h["event_seconds"]) * 1e3, max(h["event_seconds"]) * 1e3, min(h["record_host_s"]) * 1e6,
              max(h["record_host_s"]) * 1e6, h["finite"]))
    print("tiny step: plain %s us/step, with a record after each %s us/step" % (
        ", ".join("%.1f" % (s * 1e6) for s in t["plain"]), ", ".join("%.1f" % (s * 1e6) for s in t["marked"])))
    print("runner FCN-S b32: timer %s, sample %s, events' sum per repeat %s s against the repeats' wall %s s" % (
        r["timer"], r["sample"], ", ".join("%.5f" % s for s in r["event_sums_s"]),
        ", ".join("%.5f" % s for s in r["repeat_wall_s"])))
    Path(out).write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
