"""The JAX adapter's FCN-S step against a plain ``jax.jit`` loop of the same network written for this benchmark.

    python benchmarks/jax_fcn_parity.py [--batch-sizes 32,64,128] [--device cuda] [--seconds 15] [--min-rounds 15]
                                        [--warmup 10] [--block-warmup 3] [--iterations 20]
                                        [--variants] [--kernels] [--hlo DIR] [--json OUT.json]

Issue 55: on a GPU the suite's FCN-S step (specs/fcn.yaml, variant fcn-s: 26752 inputs, three sigmoid dense
layers of 2048, a 26752-way softmax cross-entropy, plain SGD at lr 0.01, fp32 with matmul precision "highest") must
be within 5% of what a competent JAX user writes for that network. In one process, per batch size, on the GPU:

  suite        the runner's job path on the JAX adapter's model (benchmarks/overhead_rounds.suite: the job's
               warm-up steps, then one repeat of ``--iterations`` steps timed by the job's timer, CUDA events on a
               GPU, inside the job's measured window); a block's figure is the repeat's mean step.
  plain loops  ``plain_loop`` below (BASELINES): the network as a plain JAX script writes it, none of the runner's
               code: weights (in, out) multiplied as ``x @ w``, the loss on one-hot labels, the parameters donated,
               each step one jitted call; the SGD update written the two usual ways, ``optax.sgd`` with
               ``optax.apply_updates``, and ``p - lr * g`` over the tree. ``--block-warmup`` untimed steps, then
               ``--iterations`` steps pipelined under the host clock, synchronised once at the end.

The sides alternate in paired ABBA rounds (benchmarks/overhead_rounds.measure_case: as many rounds as fit in
``--seconds``, at least ``--min-rounds``); each ratio suite / plain loop is the median of the rounds' own ratios,
with its distribution-free 95% interval (runner.stats.median_ci). Target: every batch size within 0.95-1.05.

The two updates are the same arithmetic, but XLA (jax 0.11.2, H100) compiles them differently: at batch 64,
``optax``'s ``p + (-lr * g)`` makes the last layer's weight gradient one cuBLAS product with the weights as its
addend (beta 1), about 0.25 ms, while ``p - lr * g`` fuses the sigmoid before it, the product and the update into
one Triton kernel of 6.9 ms (results/study-parity-20261206/jax-fcn-s.md).

``--variants`` also times, in the same rounds, the first plain loop with one choice of the adapter before issue 55
changed at a time (VARIANTS), each as its own ratio to that loop: which choice costs the time. ``--kernels``
prints each side's GPU kernels with their time per step (torch.profiler's CUPTI records XLA's kernels too; needs
torch). ``--hlo DIR`` writes each side's compiled XLA program (HLO text after optimisation) per batch size.
"""

import argparse
import collections
import json
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks import bare_loops  # noqa: E402 (the checkout first on the path)
from benchmarks.overhead import _interval, make_job  # noqa: E402
from benchmarks.overhead_rounds import measure_case, paired, rounds_for, suite  # noqa: E402

SIZES = (26752, 2048, 2048, 2048, 26752)  # FCN-S: inputs, three sigmoid hidden layers, the softmax's classes
LR = 0.01  # specs/fcn.yaml, fcn-s: DLBench's plain SGD
PLAIN = {"layout": "in_out", "labels": "one_hot", "update": "optax", "key": False}
BASELINES = {  # two plain loops, the SGD update written the two usual ways
    "plain, optax.sgd": PLAIN,
    "plain, p - lr * g": dict(PLAIN, update="tree_map"),
}
VARIANTS = {  # the first plain loop with one choice of the JAX adapter before issue 55 at a time, then all three
    "w (out, in), x @ w.T": {"layout": "out_in"},
    "integer labels (optax)": {"labels": "integer"},
    "PRNG key split per step": {"key": True},
    "all three (adapter before)": {"layout": "out_in", "labels": "integer", "key": True},
}


def plain_loop(batch, layout="in_out", labels="one_hot", update="tree_map", key=False, seed=0):
    """FCN-S trained by a plain jitted step: (run, step, args), ``run(warmup, iterations)`` -> seconds per step of
    ``iterations`` steps pipelined after ``warmup`` untimed ones (host clock, one synchronisation at the end);
    ``step`` the jitted step and ``args`` its current arguments (for lowering). PyTorch's default initialisation
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)); a fresh N(0, 1) mini-batch and uniform labels.

    layout  "in_out": w (in, out), ``x @ w``; "out_in": w (out, in), ``x @ w.T``
    labels  "one_hot": -mean(sum(log_softmax(z) * one_hot)); "integer": optax.softmax_cross_entropy_with_integer_labels
    update  "tree_map": p - lr * g; "optax": optax.sgd(lr)'s update and optax.apply_updates
    key     True: a PRNG key split every step and carried (as a step with dropout does)
    """
    import jax
    import jax.numpy as jnp
    import optax
    from jax import lax

    keys = jax.random.split(jax.random.PRNGKey(seed), len(SIZES))
    params = []
    for k, fan_in, units in zip(keys, SIZES[:-1], SIZES[1:]):
        kw, kb = jax.random.split(k)
        bound = 1.0 / math.sqrt(fan_in)
        shape = (fan_in, units) if layout == "in_out" else (units, fan_in)
        params.append(
            (
                jax.random.uniform(kw, shape, jnp.float32, -bound, bound),
                jax.random.uniform(kb, (units,), jnp.float32, -bound, bound),
            )
        )
    kx, ky = jax.random.split(keys[-1])
    x = jax.random.normal(kx, (batch, SIZES[0]), jnp.float32)
    y = jax.random.randint(ky, (batch,), 0, SIZES[-1])
    if labels == "one_hot":
        y = jax.nn.one_hot(y, SIZES[-1], dtype=jnp.float32)

    def dense(w, b, h):
        return jnp.dot(h, w if layout == "in_out" else w.T, precision=lax.Precision.HIGHEST) + b

    def loss_fn(params, x, y):
        h = x
        for w, b in params[:-1]:
            h = jax.nn.sigmoid(dense(w, b, h))
        logits = dense(*params[-1], h)
        if labels == "one_hot":
            return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    tx = optax.sgd(LR)

    def step(params, opt_state, rng, x, y):
        if key:
            rng, _ = jax.random.split(rng)
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        if update == "optax":
            updates, opt_state = tx.update(grads, opt_state, params)
            params = optax.apply_updates(params, updates)
        else:
            params = jax.tree_util.tree_map(lambda p, g: p - LR * g, params, grads)
        return params, opt_state, rng, loss

    compiled = jax.jit(step, donate_argnums=(0, 1, 2))
    carried = [params, tx.init(params), jax.random.PRNGKey(seed)]

    def run(warmup, iterations):
        for _ in range(warmup):
            carried[:] = compiled(*carried, x, y)[:3]
        jax.block_until_ready(carried)
        start = time.perf_counter()
        for _ in range(iterations):
            out = compiled(*carried, x, y)
            carried[:] = out[:3]
        jax.block_until_ready(out)
        return (time.perf_counter() - start) / iterations

    return run, compiled, lambda: tuple(carried) + (x, y)


def kernel_times(call, steps):
    """{GPU kernel name: microseconds per step} of ``call()``, which runs ``steps`` steps, from torch.profiler's
    CUPTI records (every CUDA kernel in the process, XLA's too); {} without torch or CUDA."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return {}
    if not torch.cuda.is_available():
        return {}
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    found = collections.Counter()
    for event in prof.events():
        if event.device_type == torch.autograd.DeviceType.CUDA:
            found[event.name] += event.time_range.elapsed_us() / float(steps)
    return dict(found)


def print_kernels(side, found, top=12):
    total = sum(found.values())
    print("    kernels, %s: %.1f us per step on the GPU in all; the busiest:" % (side, total))
    for name, us in sorted(found.items(), key=lambda item: -item[1])[:top]:
        print("      %9.1f us  %s" % (us, name[:110]))


def measure_batch(batch, args):
    """One batch size: the suite, the plain loops (BASELINES) and ``--variants`` in paired rounds; the JSON row."""
    import jax

    from runner import adapters

    job = make_job("jax", "fcn", "fcn-s", batch, "fp32", "default", args.device, args.block_warmup, args.iterations, 1)
    adapter = adapters.load(job)
    adapter.build()
    suite(adapter, dict(job, warmup=args.warmup, iterations=2), window=False)  # compiles and primes the job's step
    loops = dict((name, plain_loop(batch, **choice)) for name, choice in BASELINES.items())
    if args.variants:
        loops.update((name, plain_loop(batch, **dict(PLAIN, **choice))) for name, choice in VARIANTS.items())
    sides = {"suite": lambda: suite(adapter, job)}
    for name, (run, _, _) in loops.items():
        run(args.warmup, 1)  # compiles and primes
        sides[name] = lambda run=run: run(args.block_warmup, args.iterations)
    first = loops[next(iter(BASELINES))][0]
    start = time.perf_counter()
    first(0, 5)
    step_s = (time.perf_counter() - start) / 5
    rounds = rounds_for(step_s, len(sides), args.block_warmup + args.iterations + 1, args.seconds, args.min_rounds)
    found, probes, _, timers = measure_case(sides, rounds)
    plain = next(iter(BASELINES))
    row = {
        "batch_size": batch,
        "rounds": rounds,
        "iterations_per_block": args.iterations,
        "suite_timer": timers["suite"],
        "median_s": dict((k, statistics.median(v)) for k, v in found.items()),
        "rounds_s": found,
        "host_probe_s": probes,
        "suite_over": dict((k, paired(found["suite"], found[k])) for k in BASELINES),
        "variants_over_plain": dict((k, paired(found[k], found[plain])) for k in found if k in VARIANTS),
    }
    if args.kernels:
        small = dict(job, warmup=1, iterations=5)
        row["kernels_us_per_step"] = {"suite": kernel_times(lambda: suite(adapter, small, window=False), 7)}
        row["kernels_us_per_step"].update((k, kernel_times(lambda run=loops[k][0]: run(1, 5), 6)) for k in BASELINES)
    if args.hlo:
        x, y = bare_loops._batch(adapter, job)
        programs = {"suite": adapter._step.lower(adapter.params, adapter.state, adapter.opt_state, adapter.key, x, y)}
        programs.update((name, step.lower(*current())) for name, (_, step, current) in loops.items())
        for name, lowered in programs.items():
            Path(args.hlo, "b%d-%s.hlo.txt" % (batch, "".join(c if c.isalnum() else "_" for c in name))).write_text(
                lowered.compile().as_text()
            )
    adapter.release()
    del loops
    jax.clear_caches()
    return row


def print_row(row):
    median = row["median_s"]
    print(
        "b%-4d suite %8.3f ms  (%d rounds, %s)"
        % (row["batch_size"], median["suite"] * 1e3, row["rounds"], row["suite_timer"])
    )
    for name, pair in row["suite_over"].items():
        print("      %-28s %8.3f ms  suite/it %.4f %s" % (name, median[name] * 1e3, pair["ratio"], _interval(pair)))
    for name, pair in row["variants_over_plain"].items():
        print("      %-28s %8.3f ms  it/plain %.4f %s" % (name, median[name] * 1e3, pair["ratio"], _interval(pair)))
    for side, found in sorted((row.get("kernels_us_per_step") or {}).items()):
        print_kernels(side, found)
    sys.stdout.flush()


def versions():
    import jax
    import jaxlib
    import optax

    device = jax.devices()[0]
    return {
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "optax": optax.__version__,
        "device": getattr(device, "device_kind", str(device)),
        "platform": device.platform,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", default="32,64,128")
    parser.add_argument("--device", default="cuda", help="the job's device: cuda (the target's) or cpu")
    parser.add_argument("--seconds", type=float, default=15.0, help="measuring time per batch size (sets the rounds)")
    parser.add_argument("--min-rounds", type=int, default=15, help="rounds per batch size at least")
    parser.add_argument("--warmup", type=int, default=10, help="steps that prime each side, untimed")
    parser.add_argument("--block-warmup", type=int, default=3, help="warm-up steps at the start of every block")
    parser.add_argument("--iterations", type=int, default=20, help="measured steps per block")
    parser.add_argument("--variants", action="store_true", help="also time the independent loop's VARIANTS")
    parser.add_argument("--kernels", action="store_true", help="print each side's GPU kernels per step")
    parser.add_argument("--hlo", default="", help="write each side's compiled XLA program to this folder")
    parser.add_argument("--json", default="", help="write every figure to this file")
    args = parser.parse_args()
    if args.hlo:
        Path(args.hlo).mkdir(parents=True, exist_ok=True)
    found = {"versions": versions(), "args": vars(args), "rows": []}
    print("jax %(jax)s, jaxlib %(jaxlib)s, optax %(optax)s on %(device)s" % found["versions"])
    for batch in [int(b) for b in args.batch_sizes.split(",")]:
        found["rows"].append(measure_batch(batch, args))
        print_row(found["rows"][-1])
        if args.json:
            Path(args.json).write_text(json.dumps(found, indent=1))
    for name in BASELINES:
        ratios = [(r["batch_size"], r["suite_over"][name]) for r in found["rows"]]
        print(
            "suite / %s: %s; every batch size within 0.95-1.05: %s"
            % (
                name,
                ", ".join("b%d %.4f %s" % (b, p["ratio"], _interval(p)) for b, p in ratios),
                "yes" if all(0.95 <= p["ratio"] <= 1.05 for _, p in ratios) else "no",
            )
        )


if __name__ == "__main__":
    main()
