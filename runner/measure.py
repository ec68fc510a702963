"""The two measurement modes of a job, independent of the framework.

throughput   DLBench's quantity: seconds per mini-batch of one training iteration
             (forward, backward, update). Warm-up iterations run first and are kept
             apart; then ``repeats`` runs of ``iterations`` measured iterations. The
             device is synchronised before every clock read, so each sample is the
             wall time of exactly one iteration.
convergence  epochs over a real training set (shuffled per epoch from the job's seed,
             complete mini-batches only), test accuracy after each epoch; the timed
             quantity is the wall time of one epoch's training loop, evaluation excluded.
"""
import time

import numpy as np

from runner import data as datamod
from runner import stats

LOSS_CURVE_EVERY = 50  # iterations per point of a convergence run's loss curve


def _timed(adapter, step, count):
    """Run ``step()`` ``count`` times; returns (seconds per call, loss handles)."""
    seconds, handles = [], []
    for _ in range(count):
        adapter.synchronize()
        start = time.perf_counter()
        handles.append(step())
        adapter.synchronize()
        seconds.append(time.perf_counter() - start)
    return seconds, handles


def _step_source(adapter, job, dataset):
    """A zero-argument training step and the description of what it times."""
    batch_size = job["batch_size"]
    if dataset is None:
        model = job["model"]
        x, y = adapter.to_device(*datamod.synthetic_batch(model["input_shape"], model["classes"], batch_size,
                                                          job["data"]["seed"]))
        return (lambda: adapter.train_step(x, y)), \
            "forward+backward+update on one synthetic mini-batch resident on the device"
    x_train, y_train = dataset[0], dataset[1]
    rng = np.random.RandomState(job.get("seed", 0))
    needed = job["warmup"] + job["repeats"] * job["iterations"]
    order = []  # drawn before any timing: shuffled epochs, complete mini-batches
    while len(order) < needed:
        order.extend(datamod.epoch_batches(len(x_train), batch_size, rng))
    batches = iter(order[:needed])

    def step():
        idx = next(batches)
        return adapter.train_step(*adapter.to_device(x_train[idx], y_train[idx]))

    return step, ("gather of a shuffled real mini-batch from memory + copy to the device (none on CPU) "
                  "+ forward+backward+update")


def throughput(adapter, job, dataset=None):
    """Throughput mode; returns the result's ``timing`` and ``loss`` sections."""
    step, region = _step_source(adapter, job, dataset)
    warmup, warm_handles = _timed(adapter, step, job["warmup"])
    repeats, handles = [], []
    for _ in range(job["repeats"]):
        seconds, hs = _timed(adapter, step, job["iterations"])
        repeats.append(seconds)
        handles.extend(hs)
    losses = adapter.losses(warm_handles[:1] + handles[-1:])
    summary = stats.summarize_repeats(repeats)
    timing = {
        "quantity": "seconds per mini-batch",
        "timed_region": region,
        "unit": "s",
        "samples_per_measurement": job["batch_size"],
        "warmup_seconds": warmup,
        "repeats": repeats,
        "summary": summary,
        "throughput": job["batch_size"] / summary["median"],
        "throughput_unit": "samples/s",
    }
    return timing, {"first": losses[0] if warm_handles else None, "last": losses[-1]}


def convergence(adapter, job, dataset):
    """Convergence mode; returns the result's ``timing``, ``loss`` and ``convergence`` sections."""
    x_train, y_train, x_test, y_test = dataset
    batch_size = job["batch_size"]
    rng = np.random.RandomState(job.get("seed", 0))
    epochs, seconds, ends = [], [], []
    for epoch in range(1, job["epochs"] + 1):
        batches = datamod.epoch_batches(len(x_train), batch_size, rng)
        if job.get("max_iterations_per_epoch"):
            batches = batches[:job["max_iterations_per_epoch"]]
        handles = []
        adapter.synchronize()
        start = time.perf_counter()
        for idx in batches:
            handles.append(adapter.train_step(*adapter.to_device(x_train[idx], y_train[idx])))
        adapter.synchronize()
        elapsed = time.perf_counter() - start
        losses = adapter.losses(handles)
        ends.extend([losses[0], losses[-1]])
        curve = [float(np.mean(losses[i:i + LOSS_CURVE_EVERY])) for i in range(0, len(losses), LOSS_CURVE_EVERY)]
        epochs.append({
            "epoch": epoch,
            "iterations": len(batches),
            "seconds": elapsed,
            "train_loss": float(np.mean(losses)),
            "loss_curve": curve,
            "test_accuracy": adapter.accuracy(x_test, y_test, batch_size),
        })
        seconds.append(elapsed)
    summary = stats.summarize_repeats([seconds])
    timing = {
        "quantity": "seconds per epoch",
        "timed_region": "training loop of one epoch (host-to-device copies included, evaluation excluded)",
        "unit": "s",
        "samples_per_measurement": epochs[0]["iterations"] * batch_size,
        "warmup_seconds": [],
        "repeats": [seconds],
        "summary": summary,
        "throughput": epochs[0]["iterations"] * batch_size / summary["median"],
        "throughput_unit": "samples/s",
    }
    conv = {"epochs": epochs, "loss_curve_every": LOSS_CURVE_EVERY, "test_samples": int(len(x_test)),
            "final_test_accuracy": epochs[-1]["test_accuracy"]}
    return timing, {"first": ends[0], "last": ends[-1]}, conv
