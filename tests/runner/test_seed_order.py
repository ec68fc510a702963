"""What a seed sets without an engine: the order of the mini-batches, the frameworks that train seeds, and a row's seeds
in the report."""

import numpy as np
import pytest

from dlrepro.inputs import spec
from dlrepro.plan import expressible
from runner import data as datamod
from runner import measure
from tests.runner.seeded import GRU_FRAMEWORKS


class Recorder(object):
    """A framework stand-in that records the first sample of every training mini-batch it is given."""

    def __init__(self):
        self.firsts = []

    def to_device(self, x, y):
        return x, y

    def train_step(self, x, y):
        self.firsts.append(int(x[0]))
        return 0.5

    def losses(self, handles):
        return [float(h) for h in handles]

    def evaluate(self, batches, target):
        return {"test_accuracy": 0.5}

    def reset_state(self):
        pass

    def synchronize(self):
        pass


def _order(seed):
    """The first sample of each mini-batch of a 2-epoch convergence run at ``seed`` over 40 samples."""
    samples = np.arange(40)
    adapter = Recorder()
    job = {"batch_size": 4, "epochs": 2, "seed": seed, "model": {"target": "class"}}
    measure.convergence(adapter, job, datamod.ArrayData(samples, samples, samples[:8], samples[:8]))
    return adapter.firsts


def test_the_seed_sets_the_order_of_the_mini_batches():
    zero = _order(0)
    assert len(zero) == 2 * 10 and zero[:10] != zero[10:]  # each epoch its own shuffle
    assert zero == _order(0) and zero != _order(1)
    assert zero[:10] == [
        int(b[0]) for b in datamod.ArrayData(np.arange(40), None, None, None).order(4, np.random.RandomState(0))
    ]  # the seed is the RandomState's


def test_the_frameworks_with_a_gru_are_those_that_train_seeds():
    gru = spec.load("imdb-gru")
    assert tuple(f for f in gru.frameworks if expressible.unsupported(gru, "imdb-gru", f) is None) == GRU_FRAMEWORKS


def test_a_rows_seeds_collapse_into_their_spread_and_its_figure_has_whiskers_around_the_median():
    """Six GRU seeds whose first seed is fast and tight (q3 below the median over the seeds, as the committed DLF
    run's TensorFlow seeds were): the collapsed row's q1 / q3 are over the seeds' medians, no column keeps seed 0's
    figure, and the throughput bars draw (matplotlib refuses a whisker below zero)."""
    import pandas as pd

    from dlrepro.answers import measured
    from dlrepro.store import tables
    from dlrepro.views import plots

    medians = [25.7, 30.1, 28.1, 25.2, 27.3, 28.3]
    rows = [
        {
            "bundle_id": "b",
            "job_id": "imdb-gru.tensorflow.cpu.b64.s%d" % seed,
            "spec": "imdb-gru",
            "spec_sha256": "x",
            "variant": "imdb-gru",
            "framework": "tensorflow",
            "device": "cpu",
            "mode": "convergence",
            "batch_size": 64,
            "seed": seed,
            "status": "ok",
            "quantity": "seconds per epoch",
            "unit": "s",
            "median": m,
            "mean": m + 0.5,
            "q1": m - 0.2,
            "q3": m + 0.4 if seed else m + 1.2,
            "n": 3,
            "epochs": 3,
            "throughput": 25000 / m,
            "throughput_unit": "samples/s",
            "total_seconds": 3 * m,
            "final_test_accuracy": 0.86,
            "ci95_low": m - 0.3,
            "ci95_high": m + 0.3,
            "ci95_units": 3,
        }
        for seed, m in enumerate(medians)
    ]
    body = {"id": "b", "options": {}, "spec": {"sha256": "x", "resolved": {}}}
    (row,) = [r for _, r in measured.prepare(tables.frame(rows, tables.SUMMARY_COLUMNS), [body]).iterrows()]
    assert row["job_id"] == "imdb-gru.tensorflow.cpu.b64" and row["seeds"] == 6 and row["n"] == 18
    assert row["median"] == pytest.approx(27.7)
    assert (row["q1"], row["q3"]) == (np.quantile(medians, 0.25), np.quantile(medians, 0.75))
    assert row["q1"] <= row["median"] <= row["q3"] and row["mean"] == np.median([m + 0.5 for m in medians])
    assert (row["ci95_low"], row["ci95_high"], row["ci95_units"]) == (25.2, 30.1, 6)
    assert row["ci95_method"] == measured.SEED_CI_METHOD
    (figure,) = plots.throughput_bars(pd.DataFrame([row]))
    assert figure.points == (("TensorFlow", 64, pytest.approx(np.median([25000 / m for m in medians]))),)
