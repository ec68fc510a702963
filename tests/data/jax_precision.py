"""What the JAX adapter computes in, per job: ``python tests/data/jax_precision.py JOBS.json OUT.json`` (in the
JAX image, the runner on PYTHONPATH).

For each job of JOBS.json (a list): the adapter built, ITERATIONS training steps on one synthetic mini-batch, and
written to OUT.json under the job's id: the environment's matmul_precision, compute_dtype and parameter_dtypes; the
dtypes of the forward output (``adapter.compute``) and of the gradients (traced by ``jax.eval_shape``, not run), of
the parameters, optimizer state and batch-norm statistics after the steps; the losses; and the matrix products and
convolutions of the lowered step (StableHLO): how many, and how many take bfloat16 operands.
Used by tests/containers/test_jax_adapter.py."""

import json
import re
import sys

ITERATIONS = 4
PRODUCT = re.compile(r"stablehlo\.(?:dot_general|convolution)\b.*: \((tensor<[^>]*>), (tensor<[^>]*>)\)")


def dtypes(tree):
    """The floating dtypes of a tree's leaves (Adam's step count is an integer)."""
    import jax
    import jax.numpy as jnp

    return sorted({v.dtype.name for v in jax.tree_util.tree_leaves(tree) if jnp.issubdtype(v.dtype, jnp.floating)})


def measure(job):
    import jax

    from runner import adapters, data
    from runner.adapters import jax_adapter

    adapter = adapters.load(job)
    adapter.build()
    x, y = adapter.to_device(*data.synthetic_batch(job["model"], job["batch_size"], job.get("seed", 0)))
    key = jax.random.PRNGKey(1)
    # dtypes are fixed when the functions are traced: eval_shape traces them without compiling or computing
    out, _ = jax.eval_shape(lambda p, s, x: adapter.compute(p, s, x, False, key), adapter.params, adapter.state, x)
    loss_fn = jax_adapter._loss(job["loss"])
    objective = jax_adapter._objective(adapter.compute, loss_fn, adapter.state, x, y, key)
    grads = jax.eval_shape(jax.grad(lambda p: objective(p)[0]), adapter.params)
    lowered = adapter._step.lower(adapter.params, adapter.state, adapter.opt_state, key, x, y).as_text()
    products = PRODUCT.findall(lowered)
    losses = adapter.losses([adapter.train_step(x, y) for _ in range(ITERATIONS)])
    env = adapter.environment()
    found = {
        "matmul_precision": env["matmul_precision"],
        "compute_dtype": env["compute_dtype"],
        "parameter_dtypes": env["parameter_dtypes"],
        "forward_dtype": out.dtype.name,
        "grad_dtypes": dtypes(grads),
        "params_after": dtypes(adapter.params),
        "opt_state_after": dtypes(adapter.opt_state),
        "state_after": dtypes(adapter.state),
        "losses": losses,
        "products": len(products),
        "bf16_products": sum(1 for a, b in products if a.endswith("bf16>") and b.endswith("bf16>")),
    }
    adapter.release()
    return found


def main(jobs_path, out):
    with open(jobs_path) as f:
        jobs = json.load(f)
    with open(out, "w") as f:
        json.dump(dict((job["id"], measure(job)) for job in jobs), f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
