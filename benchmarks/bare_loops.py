"""A bare training loop per framework, on a built adapter's model: what a plain script of that framework runs per
iteration, with nothing of the suite around it. benchmarks/overhead.py sets it against runner.measure.

    run = loop(adapter, job)   # run(job) -> seconds per mini-batch: the median over job["repeats"] of the mean step

``run`` takes ``job["warmup"]`` untimed steps, then per repeat ``job["iterations"]`` steps back to back, timed by
the host clock from a synchronised device to one synchronisation at the end (CUDA events around the repeat for
PyTorch on a GPU), on one mini-batch resident on the device. The step, per framework, from the adapter's objects:

  torch       zero_grad(set_to_none), forward (under autocast where the job asks), loss, backward, clipping where
              the job clips, optimizer.step (the adapter's nn.Module, loss and optimizer)
  jax         one jax.jit step: the dropout key split inside, forward, value_and_grad, optax update, with the
              parameters, state, optimizer state and key donated, as a plain JAX loop writes it (the adapter's
              layers, loss and optax chain; the loop's results go back into the adapter, which trains on)
  tensorflow  the adapter's ``tf.function`` training step, called directly (a plain TF2 loop's compiled step)
  mxnet       forward and loss under autograd.record, backward, clipping where the job clips, trainer.step(1)
  cntk        trainer.train_minibatch on the values already on the device
  caffe2      workspace.RunNet of the training net, the mini-batch fed once
  caffe       solver.step(1), the mini-batch fed once

Python 3.6 syntax, standard library, numpy and the framework: it runs inside each framework's image too
(benchmarks/overhead_rounds.py).
"""

import statistics
import time

from runner import data as datamod


def _torch(adapter, job, model=None, clip=None):
    import torch

    if model is not None:  # another definition of the network, with SGD (overhead.py's torchvision reference)
        model = model.to(adapter.device, memory_format=adapter.memory_format).train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    else:
        model, optimizer = adapter.model, adapter.optimizer
    loss_fn, dtype = adapter.loss_fn, adapter.amp_dtype
    x, y = _batch(adapter, job)

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

    return step


def _jax(adapter, job, clip=None):
    import jax
    import jax.numpy as jnp
    import optax

    from runner.adapters import jax_adapter

    loss_fn, compute, tx = (
        jax_adapter._loss(job.get("loss", {"name": "softmax_cross_entropy"})),
        adapter.compute,
        adapter.tx,
    )

    def train_step(params, state, opt_state, key, x, y):
        key, rng = jax.random.split(key)

        def objective(p):
            out, new_state = compute(p, state, x, True, rng)
            return loss_fn(out.astype(jnp.float32), y), new_state

        (loss, state), grads = jax.value_and_grad(objective, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), state, opt_state, key, loss

    compiled = jax.jit(train_step, donate_argnums=(0, 1, 2, 3))
    x, y = _batch(adapter, job)

    def step():
        carried = compiled(adapter.params, adapter.state, adapter.opt_state, adapter.key, x, y)
        adapter.params, adapter.state, adapter.opt_state, adapter.key = carried[:4]  # the donated ones' successors

    return step


def _tensorflow(adapter, job, clip=None):
    x, y = _batch(adapter, job)
    return lambda: adapter._step(x, y)


def _mxnet(adapter, job, clip=None):
    from mxnet import autograd, gluon

    net, loss_fn, trainer = adapter.net, adapter.loss_fn, adapter.trainer
    params = [p for p in net.collect_params().values() if p.grad_req != "null"]
    x, y = _batch(adapter, job)

    def step():
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        if clip:
            gluon.utils.clip_global_norm([p.grad(adapter.ctx) for p in params], clip)
        trainer.step(1)

    return step


def _cntk(adapter, job, clip=None):
    x, y = _batch(adapter, job)
    feed, trainer = {adapter.features: x, adapter.labels: y}, adapter.trainer
    return lambda: trainer.train_minibatch(feed)


def _caffe2(adapter, job, clip=None):
    from caffe2.python import workspace

    _batch(adapter, job)  # fed into the workspace's input blobs
    name = adapter.train_model.net.Proto().name
    return lambda: workspace.RunNet(name)


def _caffe(adapter, job, clip=None):
    x, y = _batch(adapter, job)
    adapter._feed(adapter.net, x, y)
    return lambda: adapter.solver.step(1)


STEPS = {
    "torch": _torch,
    "jax": _jax,
    "tensorflow": _tensorflow,
    "mxnet": _mxnet,
    "cntk": _cntk,
    "caffe2": _caffe2,
    "caffe": _caffe,
}


def _batch(adapter, job):
    """The job's synthetic mini-batch on the device (the adapter's own copy in; runner.data's draw)."""
    return adapter.to_device(*datamod.synthetic_batch(job["model"], job["batch_size"], job["data"]["seed"]))


def loop(adapter, job, model=None, events=False, telemetry=False):
    """The bare loop of ``adapter``'s framework: f(block_job) -> seconds per mini-batch (the median over
    block_job["repeats"] of the mean of block_job["iterations"] steps, after block_job["warmup"] untimed ones; None
    for no repeats). PyTorch only: ``model``, another nn.Module trained with SGD; ``events``, one CUDA event
    recorded after every step (as the suite's timer does); ``telemetry``, a runner.telemetry.Sampler running over
    the repeats."""
    clip = (job.get("optimizer") or {}).get("clip_norm")  # the job's own step: the LSTM clips at 5
    extra = {"model": model} if model is not None else {}
    step = STEPS[job["framework"]](adapter, job, clip=clip, **extra)
    cuda_torch = job["framework"] == "torch" and adapter.device.type == "cuda"

    def run(block):
        adapter.reset_state()
        for _ in range(block["warmup"]):
            step()
        sampler = None
        if telemetry:
            from runner import telemetry as telemetrymod

            sampler = telemetrymod.Sampler.for_job(block)
            sampler.start()
        means = [
            (_torch_events if cuda_torch else _host_clock)(adapter, step, block["iterations"], events)
            for _ in range(block["repeats"])
        ]
        if sampler is not None:
            sampler.close()
        return statistics.median(means) if means else None

    return run


def _host_clock(adapter, step, count, events):
    adapter.synchronize()
    start = time.perf_counter()
    for _ in range(count):
        step()
    adapter.synchronize()
    return (time.perf_counter() - start) / count


def _torch_events(adapter, step, count, events):
    """Mean step of ``count`` steps by CUDA events around them (``events``: one more recorded after every step, all
    made before the loop, as the suite's timer makes them)."""
    import torch

    torch.cuda.synchronize()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(count)] if events else []
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for mark in marks + [start, end]:
        mark.record()
    torch.cuda.synchronize()
    start.record()
    for i in range(count):
        step()
        if marks:
            marks[i].record()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / 1000.0 / count
