"""The three measurement modes of a job, independent of the framework.

throughput   DLBench's quantity: seconds per mini-batch of one training iteration
             (forward, backward, update). Warm-up iterations run first and are kept
             apart; then ``repeats`` runs of ``iterations`` measured iterations, timed one of
             three ways (recorded as ``timing.timer``; ``job["timer"]`` "auto" picks the first
             that applies, or names one):
             "device_events" (adapters with ``device_clock()``: PyTorch and JAX on CUDA): an
             event is recorded in stream order at every iteration boundary and read after one
             synchronisation at the end of the repeat; sample i is the device timeline from the
             end of iteration i-1 to the end of iteration i (idle gaps included), so the launch
             queue is never drained inside a repeat, as in a plain training loop. Each repeat
             starts with one untimed iteration (``timing.lead_in``): its time would hold the
             refill of the launch queue that the repeat's synchronisation drained, which
             inflates the mean (DLBench published means).
             "pipelined_wall" (every other framework on a GPU): the repeat's iterations run
             back to back with one synchronisation at the end, as a plain loop timed by the
             host clock; the repeat's one sample is that wall time divided by its iterations.
             No per-iteration samples exist then (``timing.sample`` "repeat mean", against
             "iteration"): the figure is the median of the repeat means (``summary.point_estimate``
             and ``ci95_method`` say so), where the other timers give the median of the repeat
             medians of iterations (a step that is slow every 10th time moves the mean, not the median).
             "host_sync" (the CPU): the device is synchronised before every host clock read
             (perf_counter), so each sample is the wall time of one iteration (on a CPU the
             frameworks' steps end with their work, or nearly so: nothing is pipelined).
             The repeat's host wall time is kept beside the samples (``repeat_wall_seconds``)
             as a cross-check.
             A data-parallel job's ranks (runner.ranks) each take their shard of every mini-batch
             (``adapter.shard``) and meet at a barrier at each repeat's edges, so rank 0's repeat
             window spans every rank's steps; samples/s is the total mini-batch over that step time.
             The measured window (runner.window: wall and CPU time, GPU telemetry, energy) spans
             the measured repeats. After every repeat ``progress(timing)`` is called with what was
             measured so far, so that a job killed midway keeps its finished repeats; the window
             leaves those result rewrites out.
convergence  epochs over a real training set (shuffled per epoch from the job's seed,
             complete mini-batches only; a language model's stream in order, its state
             carried), evaluation after each epoch (test accuracy; perplexity for a
             language model; mean loss for multi-label targets); the timed quantity is
             the wall time of each epoch's training loop, evaluation excluded, and the
             wall time of the whole loop up to each epoch is kept (DeepLearningFrameworks'
             quantity is that total for all epochs). ``progress(timing, convergence)`` after
             every epoch. The measured window spans the epochs' training loops: the evaluation
             passes and result rewrites between them are left out of its CPU time, effective
             parallelism and energy, as out of the timed quantity.
inference    DeepLearningFrameworks' feature extraction: one untimed pass over the
             batches, then a timed pass; each batch is copied to the device, run
             forward without gradients and copied back; seconds per 1000 images.
"""

import contextlib
import math
import time

import numpy as np

from runner import data as datamod
from runner import stats

LOSS_CURVE_EVERY = 50  # iterations per point of a convergence run's loss curve
REWRITES, EVALUATION = "result rewrites", "evaluation passes"  # what the window leaves out


def _timed(adapter, step, count):
    """Run ``step()`` ``count`` times; returns (seconds per call, results), synchronising around each call."""
    seconds, results = [], []
    for _ in range(count):
        adapter.synchronize()
        start = time.perf_counter()
        results.append(step())
        adapter.synchronize()
        seconds.append(time.perf_counter() - start)
    return seconds, results


def _timing(quantity, region, per_measurement, warmup, repeats, timer="host_sync", units="repeat"):
    summary = stats.summarize_repeats(repeats, units)
    return {
        "quantity": quantity,
        "timed_region": region,
        "unit": "s",
        "samples_per_measurement": per_measurement,
        "warmup_seconds": warmup,
        "repeats": repeats,
        "summary": summary,
        "timer": timer,
        "throughput": per_measurement / summary["median"],
        "throughput_unit": "samples/s",
    }


TIMERS = ("device_events", "pipelined_wall", "host_sync")  # job["timer"]: "auto" or one of these


def _events(clock, step, count):
    """``count`` calls of ``step()`` timed on the device's clock (an adapter's ``device_clock()``), after one untimed
    call (the lead-in: the repeat starts from a drained launch queue, and the lead-in's time holds its refill);
    returns (seconds per call, results), with one synchronisation, at the end."""
    marks = clock.marks(count + 1)  # made now: making an event is a driver call, kept out of every timed iteration
    results = []
    clock.record(marks[0], step())
    for i in range(count):
        results.append(step())
        clock.record(marks[i + 1], results[-1])
    clock.wait(marks[-1])
    seconds = [clock.seconds(marks[i], marks[i + 1]) for i in range(count)]
    clock.forget(marks)
    return seconds, results


def _pipelined(adapter, step, count):
    """``count`` calls of ``step()`` back to back, one synchronisation at the end; returns ([wall seconds / count],
    results): the repeat's mean iteration, its one sample (the caller synchronised before)."""
    start = time.perf_counter()
    results = [step() for _ in range(count)]
    adapter.synchronize()
    return [(time.perf_counter() - start) / count], results


def _repeat_timer(adapter, job):
    """(name, f(step, count) -> (samples, results), untimed lead-in steps per repeat, what one sample is) for the
    measured repeats: the first of TIMERS that applies to the adapter and the job's device, or job["timer"]."""
    asked = job.get("timer", "auto")
    if asked not in TIMERS + ("auto",):
        raise ValueError("job timer %r is none of auto, %s" % (asked, ", ".join(TIMERS)))
    clock = adapter.device_clock() if asked in ("auto", "device_events") else None
    if clock is not None:
        return "device_events", lambda step, count: _events(clock, step, count), 1, "iteration"
    if asked == "pipelined_wall" or (asked != "host_sync" and job["device"] != "cpu"):
        return "pipelined_wall", lambda step, count: _pipelined(adapter, step, count), 0, "repeat mean"
    return "host_sync", lambda step, count: _timed(adapter, step, count), 0, "iteration"


LEAD_IN = {
    "device_events": "untimed at each repeat's start: the launch queue's refill after the repeat's synchronisation",
    "pipelined_wall": "none: the repeat's wall time runs from a drained queue to one synchronisation at its "
    "end, as a plain loop timed by the host clock",
    "host_sync": "none: host_sync drains the queue at every iteration alike",
}


@contextlib.contextmanager
def _measured(window):
    """Run the block inside the measured window (runner.window.Window, or None for none)."""
    if window is None:
        yield
        return
    window.start()
    try:
        yield
    finally:
        window.stop()


@contextlib.contextmanager
def _outside(window, what):
    """Run the block outside the measured window (``what``: recorded as left out), if there is one."""
    if window is None:
        yield
        return
    with window.excluded(what):
        yield


def _nothing(*args):
    pass


def _step_source(adapter, job, dataset, lead_in=0):
    """A zero-argument training step and the description of what it times (``lead_in``: untimed steps the
    timer takes per repeat, beside the warm-up and the measured ones)."""
    batch_size = job["batch_size"]
    if dataset is None:
        x, y = adapter.to_device(
            *adapter.shard(*datamod.synthetic_batch(job["model"], batch_size, job["data"]["seed"]))
        )
        return (
            lambda: adapter.train_step(x, y)
        ), "forward+backward+update on one synthetic mini-batch resident on the device"
    rng = np.random.RandomState(job.get("seed", 0))
    needed = job["warmup"] + job["repeats"] * (job["iterations"] + lead_in)
    keys = []  # drawn before any timing: shuffled epochs (a language model's stream in order)
    while len(keys) < needed:
        keys.extend(_epoch(dataset, batch_size, rng))
    keys = iter(keys[:needed])

    def step():
        return adapter.train_step(*adapter.to_device(*adapter.shard(*dataset.batch(next(keys)))))

    return step, (
        "gather of a real mini-batch from memory + copy to the device (none on CPU) + forward+backward+update"
    )


def _epoch(dataset, batch_size, rng):
    """One epoch's mini-batch keys; raises DataError when the training set holds no complete mini-batch."""
    keys = dataset.order(batch_size, rng)
    if not keys:
        raise datamod.DataError("batch size %d is larger than the training set: no complete mini-batch" % batch_size)
    return keys


def throughput(adapter, job, dataset=None, window=None, progress=_nothing, warmed=_nothing):
    """Throughput mode; returns the result's ``timing`` and ``loss`` sections.

    ``window`` (runner.window.Window) spans the measured repeats; ``warmed()`` once the warm-up iterations
    are done, ``progress(timing)`` after each repeat.
    """
    name, timed, lead_in, sample = _repeat_timer(adapter, job)
    step, region = _step_source(adapter, job, dataset, lead_in)
    adapter.reset_state()
    warmup, warm_handles = _timed(adapter, step, job["warmup"])
    warmed()
    repeats, walls, last = [], [], None

    def timing():
        found = _timing(
            "seconds per mini-batch", region, job["batch_size"], warmup, repeats, name, stats.units_of(sample)
        )
        found.update(
            repeat_wall_seconds=walls,
            sample=sample,
            iterations_per_repeat=job["iterations"],
            lead_in={"iterations": lead_in, "why": LEAD_IN[name]},
        )
        return found

    with _measured(window):
        for _ in range(job["repeats"]):
            adapter.synchronize()
            adapter.barrier()  # every rank starts the repeat together
            start = time.perf_counter()
            seconds, hs = timed(step, job["iterations"])  # every timer synchronises at its end
            adapter.barrier()  # and rank 0's window ends once every rank is done
            walls.append(time.perf_counter() - start)
            repeats.append(seconds)
            last = hs[-1:]  # only the last loss is kept: no device memory grows with the run
            if len(repeats) < job["repeats"]:
                with _outside(window, REWRITES):
                    progress(timing())
    losses = adapter.losses(warm_handles[:1] + last)
    return timing(), {"first": losses[0] if warm_handles else None, "last": losses[-1]}


def convergence(adapter, job, dataset, window=None, progress=_nothing):
    """Convergence mode; returns the result's ``timing``, ``loss`` and ``convergence`` sections.

    ``window`` spans the first epoch's training loop to the last one's end, each evaluation and
    ``progress(timing, convergence)`` (after each epoch but the last) left out.
    """
    with _measured(window):
        return _convergence(adapter, job, dataset, progress, window)


def _convergence(adapter, job, dataset, progress, window=None):
    batch_size = job["batch_size"]
    rng = np.random.RandomState(job.get("seed", 0))
    epochs, seconds, ends, elapsed_total = [], [], [], 0.0
    test_batch_size = job.get("test_batch_size") or batch_size
    test = dataset.test(batch_size, job.get("test_complete_batches", False), test_batch_size)
    if not test:
        raise datamod.DataError("batch size %d is larger than the test set: nothing to evaluate" % batch_size)

    def sections():
        timing = _timing(
            "seconds per epoch",
            "training loop of one epoch (mini-batch gathers and copies to the device included, evaluation excluded)",
            epochs[0]["iterations"] * batch_size,
            [],
            [seconds],
            units="sample",
        )
        last = epochs[-1]
        return timing, {
            "epochs": epochs,
            "loss_curve_every": LOSS_CURVE_EVERY,
            "test_batches": len(test),
            "test_batch_size": test_batch_size,
            "test_samples": sum(len(y) for _, y in test),
            "total_seconds": elapsed_total,
            "final_test_accuracy": last.get("test_accuracy"),
            "final_perplexity": last.get("perplexity"),
        }

    for epoch in range(1, job["epochs"] + 1):
        keys = _epoch(dataset, batch_size, rng)
        if job.get("max_iterations_per_epoch"):
            keys = keys[: job["max_iterations_per_epoch"]]
        handles = []
        adapter.reset_state()
        adapter.synchronize()
        start = time.perf_counter()
        for key in keys:
            handles.append(adapter.train_step(*adapter.to_device(*dataset.batch(key))))
        adapter.synchronize()
        elapsed = time.perf_counter() - start
        elapsed_total += elapsed
        losses = adapter.losses(handles)
        ends.extend([losses[0], losses[-1]])
        record = {
            "epoch": epoch,
            "iterations": len(keys),
            "seconds": elapsed,
            "cumulative_seconds": elapsed_total,
            "train_loss": float(np.mean(losses)),
            "loss_curve": [
                float(np.mean(losses[i : i + LOSS_CURVE_EVERY])) for i in range(0, len(losses), LOSS_CURVE_EVERY)
            ],
        }
        with _outside(window, EVALUATION):
            adapter.reset_state()
            record.update(adapter.evaluate(test, job["model"].get("target", "class")))
        if "mean_token_loss" in record:
            record["perplexity"] = math.exp(record["mean_token_loss"])
        epochs.append(record)
        seconds.append(elapsed)
        if epoch < job["epochs"]:
            with _outside(window, REWRITES):
                progress(*sections())
    timing, conv = sections()
    return timing, {"first": ends[0], "last": ends[-1]}, conv


def inference(adapter, job, window=None):
    """Inference mode; returns the result's ``timing`` and ``inference`` sections (``window``: the timed pass)."""
    batch_size, count = job["batch_size"], job["inference_batches"]
    x, _ = datamod.synthetic_batch(job["model"], batch_size * count, job["data"]["seed"])
    batches = [x[i : i + batch_size] for i in range(0, len(x), batch_size)]
    features = [None] * count

    def run_pass():
        per_batch = []
        for i, batch in enumerate(batches):
            start = time.perf_counter()
            features[i] = adapter.infer(batch)  # copies in and back: the result is on the host
            per_batch.append(time.perf_counter() - start)
        return per_batch

    adapter.synchronize()
    for _ in range(job.get("untimed_passes", 1)):
        run_pass()
    adapter.synchronize()
    with _measured(window):
        start = time.perf_counter()
        per_batch = run_pass()
        adapter.synchronize()
        wall = time.perf_counter() - start
    timing = _timing(
        "seconds per mini-batch",
        "copy of a mini-batch to the device + forward without gradients + copy of the outputs back to the host",
        batch_size,
        [],
        [per_batch],
    )
    images = batch_size * count
    return timing, {
        "images": images,
        "pass_seconds": wall,
        "seconds_per_1000_images": wall / images * 1000.0,
        "output_shape": list(features[0].shape[1:]),
    }
