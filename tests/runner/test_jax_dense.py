"""The JAX adapter's dense layers (runner.adapters.jax_layers), with the host's JAX on the CPU (skipped without it):
weights kept (in, out) and multiplied as ``x @ w`` (issue 55: the (out, in) layout cost FCN-S 8% of its step on an
H100), holding the values PyTorch's (out, in) draw gives, and FCN-S's step computing the softmax cross-entropy and
the SGD update that numpy computes from the same parameters and mini-batch."""

import numpy as np
import pytest

from dlrepro.inputs import spec
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from runner import data as datamod

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def test_a_dense_layer_keeps_the_values_of_the_out_in_draw_as_in_out():
    from runner.adapters.jax_layers import Builder

    init, apply, _ = Builder({"scheme": "default"}, 2, False).layer({"type": "dense", "units": 3}, (5,), "net/0")
    key = jax.random.PRNGKey(7)
    params, _ = init(key)
    kw, kb = jax.random.split(key)
    drawn = jax.random.uniform(kw, (3, 5), jnp.float32, -1 / 5**0.5, 1 / 5**0.5)  # PyTorch's (out, in)
    assert params["weight"].shape == (5, 3)
    np.testing.assert_array_equal(np.asarray(params["weight"]), np.asarray(drawn).T)
    x = np.arange(10, dtype=np.float32).reshape(2, 5) / 10
    y, _ = apply(params, {}, jnp.asarray(x), True, key)
    np.testing.assert_allclose(np.asarray(y), x @ np.asarray(drawn).T + np.asarray(params["bias"]), rtol=1e-6)


@pytest.fixture(scope="module")
def fcn_s():
    """(adapter, job, parameter count) of FCN-S built on the CPU at batch 2."""
    from runner import adapters

    (job,) = jobs.expand(
        spec.load("fcn"), RunOptions(frameworks=["jax"], variants=["fcn-s"], device="cpu", batch_sizes=[2], quick=True)
    )
    adapter = adapters.load(job)
    count = adapter.build()
    yield adapter, job, count
    adapter.release()


def test_fcn_s_has_the_spec_s_parameters_with_dense_weights_in_out(fcn_s):
    adapter, _, count = fcn_s
    assert count == 117997696  # specs/fcn.yaml, fcn-s: parameters
    shapes = [(adapter.params[i]["weight"].shape, adapter.params[i]["bias"].shape) for i in ("0", "2", "4", "6")]
    assert shapes == [
        ((26752, 2048), (2048,)),
        ((2048, 2048), (2048,)),
        ((2048, 2048), (2048,)),
        ((2048, 26752), (26752,)),
    ]


def test_an_fcn_s_step_gives_numpy_s_loss_and_sgd_update(fcn_s):
    adapter, job, _ = fcn_s
    x, y = datamod.synthetic_batch(job["model"], 2, job["data"]["seed"])
    before = [
        (np.asarray(adapter.params[i]["weight"], np.float64), np.asarray(adapter.params[i]["bias"], np.float64))
        for i in ("0", "2", "4", "6")
    ]
    loss = float(adapter.train_step(*adapter.to_device(x, y)))
    h = x.astype(np.float64)
    for w, b in before[:-1]:
        h = 1 / (1 + np.exp(-(h @ w + b)))
    w, b = before[-1]
    logits = h @ w + b
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    assert loss == pytest.approx(-np.log(p[np.arange(2), y]).mean(), rel=1e-5)
    one_hot = np.zeros_like(p)
    one_hot[np.arange(2), y] = 1
    dz = (p - one_hot) / 2  # d mean cross-entropy / d logits
    lr = job["optimizer"]["lr"]
    after = np.asarray(adapter.params["6"]["weight"], np.float64)
    np.testing.assert_allclose(after - w, -lr * h.T @ dz, rtol=0, atol=1e-8)  # (in, out): x @ w's gradient
    np.testing.assert_allclose(
        np.asarray(adapter.params["6"]["bias"], np.float64) - b, -lr * dz.sum(axis=0), rtol=0, atol=1e-8
    )
