"""A seed is an independent training: job["seed"] sets the order of the mini-batches (runner.measure) and the
framework's initialisation (each adapter), the same seed gives the same training again, even in a warm worker
after another seed."""
import json

import numpy as np
import pytest

from dlrepro import datasets, spec
from dlrepro.images import build
from dlrepro.run import executors, jobs
from dlrepro.run.options import RunOptions
from runner import data as datamod, measure

GRU_FRAMEWORKS = ("torch", "tensorflow", "mxnet", "jax", "chainer", "keras-tensorflow", "keras-jax", "keras-torch",
                  "keras-cntk", "keras-theano")


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
    assert zero[:10] == [int(b[0]) for b in datamod.ArrayData(np.arange(40), None, None, None).order(
        4, np.random.RandomState(0))]  # the seed is the RandomState's


def test_the_frameworks_with_a_gru_are_those_that_train_seeds():
    gru = spec.load("imdb-gru")
    assert tuple(f for f in gru.frameworks if jobs.unsupported(gru, "imdb-gru", f) is None) == GRU_FRAMEWORKS


# Keras 2.1.5 on Theano is left out: NumPy's seed is all it is given (runner.adapters.keras2_adapter._session), as Keras
# 2 on CNTK and on TensorFlow 1.4 are given it beside their backend's; and each new container compiles the GRU's C code
# for its 105 s (on 2 CPUs). Its GRU trains in tests/containers/test_frameworks.py's DLF rows test.
SEEDED = tuple(f for f in GRU_FRAMEWORKS if f != "keras-theano") + ("keras-tensorflow@2.1.5",)


@pytest.mark.docker
@pytest.mark.parametrize("framework", SEEDED)
def test_the_seed_sets_the_initialisation_in_a_warm_worker(framework, docker_engine, matrix, tmp_path):
    """The GRU on one synthetic mini-batch (fixed by the data's own seed), seeds 0, 1, 0 in one worker: the
    losses of the first and last training steps repeat with the seed and differ between seeds (Keras 2 on
    TensorFlow 1.4: a new session and graph for each job)."""
    image = build.ensure(matrix, matrix.find(framework.split("@")[0], "cpu", *framework.split("@")[1:]),
                         build.BuildOptions(), log=print)
    (base,) = jobs.expand(spec.load("imdb-gru"), RunOptions(frameworks=[framework], variants=["imdb-gru-synthetic"],
                                                           quick=True))
    batch = [dict(base, id="%s.%d" % (base["id"], i), seed=seed) for i, seed in enumerate((0, 1, 0))]
    executors.DockerExecutor().run(image, batch, tmp_path, datasets.root(), lambda *e: None)
    results = [json.loads((tmp_path / j["id"] / "result.json").read_text()) for j in batch]
    assert [(r["status"], r["worker"]["jobs_before"]) for r in results] == [("ok", 0), ("ok", 1), ("ok", 2)]
    first, other, again = [(r["loss"]["first"], r["loss"]["last"]) for r in results]
    if framework == "keras-tensorflow@2.1.5":  # TensorFlow 1.4's CPU kernels sum in an order its threads decide (no
        # deterministic mode before 2.8's enable_op_determinism): the seeded first step repeats bit for bit, later
        # steps to float32 rounding
        assert again[0] == first[0] and again[1] == pytest.approx(first[1], rel=1e-4)
    else:
        assert again == first  # bit for bit
    assert abs(first[0] - other[0]) > 1e-5 and abs(first[1] - other[1]) > 1e-5


def test_a_rows_seeds_collapse_into_their_spread_and_its_figure_has_whiskers_around_the_median():
    """Six GRU seeds whose first seed is fast and tight (q3 below the median over the seeds, as the committed DLF
    run's TensorFlow seeds were): the collapsed row's q1 / q3 are over the seeds' medians, no column keeps seed 0's
    figure, and the throughput bars draw (matplotlib refuses a whisker below zero)."""
    import pandas as pd

    from dlrepro.results import tables
    from dlrepro.results.answers import measured
    from dlrepro.results.views import plots

    medians = [25.7, 30.1, 28.1, 25.2, 27.3, 28.3]
    rows = [{"bundle_id": "b", "job_id": "imdb-gru.tensorflow.cpu.b64.s%d" % seed, "spec": "imdb-gru",
             "spec_sha256": "x", "variant": "imdb-gru", "framework": "tensorflow", "device": "cpu", "mode": "convergence",
             "batch_size": 64, "seed": seed, "status": "ok", "quantity": "seconds per epoch", "unit": "s",
             "median": m, "mean": m + 0.5, "q1": m - 0.2, "q3": m + 0.4 if seed else m + 1.2, "n": 3, "epochs": 3,
             "throughput": 25000 / m, "throughput_unit": "samples/s", "total_seconds": 3 * m,
             "final_test_accuracy": 0.86, "ci95_low": m - 0.3, "ci95_high": m + 0.3, "ci95_units": 3}
            for seed, m in enumerate(medians)]
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
