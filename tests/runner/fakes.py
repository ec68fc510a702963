"""A fake adapter, data and event clock for the runner's measured window: what a job measures without a framework."""

import numpy as np

from runner import measure


def _add_joules(meter, joules):
    meter.write_text("%d\n" % (int(meter.read_text()) + int(joules * 1e6)))


class Adapter(object):
    """A framework stand-in: each training step uses 1 J of the fake RAPL package; ``evaluate`` 100 J."""

    def __init__(self, meter, win, clock=None):
        self.meter, self.window, self.clock, self.steps = meter, win, clock, 0

    def shard(self, x, y):
        return x, y

    def to_device(self, x, y):
        return x, y

    def train_step(self, x, y):
        self.steps += 1
        _add_joules(self.meter, 1)
        return 0.5

    def device_clock(self):
        return self.clock

    def losses(self, handles):
        return [float(h) for h in handles]

    def evaluate(self, batches, target):
        assert measure.EVALUATION in self.window.left_out and self.window._paused
        _add_joules(self.meter, 100)
        return {"test_accuracy": 0.5}

    def reset_state(self):
        pass

    def synchronize(self):
        pass

    def barrier(self):
        pass


class Data(object):
    def order(self, batch_size, rng):
        return [np.arange(i, i + batch_size) for i in range(0, 8, batch_size)]

    def batch(self, key):
        return key, key

    def test(self, batch_size, complete_batches, evaluation_size=None):
        return [(np.zeros(batch_size), np.zeros(batch_size))]


JOB = {
    "batch_size": 2,
    "warmup": 1,
    "repeats": 3,
    "iterations": 4,
    "seed": 0,
    "epochs": 3,
    "device": "cpu",
    "model": {"target": "class"},
}


class EventClock(object):
    """A device clock stand-in: every step takes ``step_s`` on the device; ``seconds`` gives ``samples`` in turn
    when it has them."""

    def __init__(self, step_s=0.01, samples=None):
        self.step_s, self.samples, self.made, self.recorded, self.waits, self.forgotten = step_s, samples, 0, [], 0, 0

    def marks(self, count):
        self.made += count
        return list(range(count))

    def record(self, event, result):
        self.recorded.append((event, result))

    def wait(self, event):
        self.waits += 1

    def seconds(self, start, end):
        return self.samples.pop(0) if self.samples else self.step_s * (end - start)

    def forget(self, events):
        self.forgotten += len(events)
