"""Which clock times a throughput job's iterations (runner.measure): the device's own events where the adapter has a
clock (PyTorch and JAX on a GPU), else the repeat's pipelined wall time on a GPU, the host clock around each
iteration on the CPU; the timer is recorded with what one sample then is, and the tables carry it per job."""

import ast
import json
import shutil

import pytest

from dlrepro import REPO_ROOT
from dlrepro.inputs import spec
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from dlrepro.store import tables, validate
from runner import adapters, frameworks, measure, stats
from tests.runner.fakes import JOB, Adapter, Data, EventClock
from tests.store.real_bundles import REAL, rewrite


class Counted(Adapter):
    """The stand-in adapter without an energy meter, counting its device synchronisations."""

    syncs = 0

    def train_step(self, x, y):
        self.steps += 1
        return 0.5

    def synchronize(self):
        self.syncs += 1


def test_a_gpu_job_without_a_device_clock_is_timed_by_each_repeats_pipelined_wall_time(tmp_path):
    adapter = Counted(None, None)
    timing, _ = measure.throughput(adapter, dict(JOB, device="cuda"), Data())
    assert timing["timer"] == "pipelined_wall" and timing["sample"] == "repeat mean"
    assert timing["lead_in"]["iterations"] == 0 and timing["iterations_per_repeat"] == 4
    assert [len(r) for r in timing["repeats"]] == [1, 1, 1] and adapter.steps == 1 + 3 * 4
    # the one warm-up step synchronised around it (2), then per repeat one before it and one at its end: none between
    # its four iterations
    assert adapter.syncs == 2 + 3 * 2
    assert timing["repeats"][0][0] <= timing["repeat_wall_seconds"][0] / 4
    assert timing["summary"]["n"] == 3 and timing["summary"]["median"] == sorted(r[0] for r in timing["repeats"])[1]


@pytest.mark.parametrize(
    "device,clock,asked,timer",
    [
        ("cpu", False, "auto", "host_sync"),
        ("cpu", True, "auto", "device_events"),
        ("cuda", False, "auto", "pipelined_wall"),
        ("cuda", True, "auto", "device_events"),
        ("cuda", True, "host_sync", "host_sync"),
        ("cuda", True, "pipelined_wall", "pipelined_wall"),
        ("cpu", False, "pipelined_wall", "pipelined_wall"),
        ("cuda", False, "device_events", "pipelined_wall"),
    ],
)
def test_the_timer_is_the_device_clock_where_there_is_one_else_the_pipelined_wall_on_a_gpu(device, clock, asked, timer):
    adapter = Counted(None, None, EventClock() if clock else None)
    timing, _ = measure.throughput(adapter, dict(JOB, device=device, timer=asked, repeats=1), Data())
    assert timing["timer"] == timer
    assert timing["sample"] == ("repeat mean" if timer == "pipelined_wall" else "iteration")
    assert len(timing["repeats"][0]) == (1 if timer == "pipelined_wall" else 4)
    with pytest.raises(ValueError, match="job timer 'events' is none of auto, device_events"):
        measure.throughput(adapter, dict(JOB, device=device, timer="events"), Data())


def test_of_the_adapters_only_torch_and_jax_have_a_device_clock():
    """So PyTorch and JAX on a GPU are timed by events, TensorFlow, MXNet, CNTK, Caffe2, Caffe, Chainer and Keras by
    the pipelined wall time (runner.measure), and every framework by the host clock on the CPU (their clocks return
    None there)."""
    found = {}
    for name in adapters.available():
        module = REPO_ROOT / "runner" / "adapters" / ("%s.py" % frameworks.FRAMEWORKS[name].module)
        (cls,) = [n for n in ast.parse(module.read_text()).body if isinstance(n, ast.ClassDef) and n.name == "Adapter"]
        found[name] = any(isinstance(n, ast.FunctionDef) and n.name == "device_clock" for n in cls.body)
    assert found == {
        "torch": True,
        "jax": True,
        "tensorflow": False,
        "mxnet": False,
        "cntk": False,
        "caffe2": False,
        "caffe": False,
        "chainer": False,
        "keras-tensorflow": False,
        "keras-jax": False,
        "keras-torch": False,
        "keras-cntk": False,
        "keras-theano": False,
        "torch7": False,
    }


def test_a_torch_cpu_job_records_the_host_clock_and_its_iterations():
    pytest.importorskip("torch")
    options = RunOptions(
        frameworks=["torch"],
        variants=["lstm-synthetic"],
        batch_sizes=[2],
        warmup=1,
        iterations=2,
        repeats=2,
        executor="local",
    )
    (job,) = jobs.expand(spec.load("lstm"), options)
    adapter = adapters.load(job)
    adapter.build()
    timing, _ = measure.throughput(adapter, job)
    adapter.release()
    assert timing["timer"] == "host_sync" and timing["sample"] == "iteration"
    assert [len(r) for r in timing["repeats"]] == [2, 2]


def test_the_tables_carry_each_jobs_timer_and_a_repeat_mean_is_no_iteration_of_its_own(tmp_path):
    """One job timed by events, one by the pipelined wall time (a repeat's mean, 8 iterations each, 3 repeats), the
    others as recorded before timers were (null); energy per sample counts the iterations a repeat mean stands for."""
    real = tmp_path / "real"
    shutil.copytree(REAL, real)
    events = real / "jobs" / "alexnet-s.torch.cpu.b16" / "result.json"
    found = json.loads(events.read_text())
    found["timing"].update(timer="device_events", sample="iteration", lead_in={"iterations": 1, "why": "refill"})
    found["energy"] = {"status": "ok", "joules": 40.0, "method": "RAPL"}
    events.write_text(json.dumps(found))
    wall = real / "jobs" / "alexnet-s.caffe.cpu.b16" / "result.json"
    found = json.loads(wall.read_text())
    means = [[sum(r) / len(r)] for r in found["timing"]["repeats"]]
    summary = stats.summarize_repeats(means)
    found["timing"].update(
        timer="pipelined_wall",
        sample="repeat mean",
        iterations_per_repeat=8,
        repeats=means,
        summary=summary,
        throughput=16 / summary["median"],
    )
    found["energy"] = {"status": "ok", "joules": 38.4, "method": "RAPL"}
    wall.write_text(json.dumps(found))
    bundle = rewrite(real, tmp_path / "results")
    summary = tables.summary(bundle).set_index("framework")
    assert summary["timer"].isna().sum() == 5
    assert summary.loc["torch", "timer"] == "device_events" and summary.loc["caffe", "timer"] == "pipelined_wall"
    assert summary.loc["caffe", "n"] == 3 and summary.loc["caffe", "median"] == sorted(m[0] for m in means)[1]
    # J per sample: 40 J over 3 repeats of (8 + 1 lead-in) x 16 samples; 38.4 J over 3 x 8 x 16
    assert summary.loc["torch", "energy_j_per_sample"] == pytest.approx(40.0 / (3 * 9 * 16))
    assert summary.loc["caffe", "energy_j_per_sample"] == pytest.approx(38.4 / (3 * 8 * 16))
    samples = tables.samples(bundle)
    caffe = samples[samples["framework"] == "caffe"]
    assert len(caffe) == 3 and caffe["index"].isna().all() and set(caffe["timer"]) == {"pipelined_wall"}
    # a repeat mean is labelled one, and the figure a median of repeat means, though this result (as written before
    # issue 52) recorded "median of repeat medians"
    assert set(caffe["sample"]) == {"repeat mean"} and summary.loc["caffe", "ci95_method"] == stats.CI_METHOD_MEANS
    assert samples[samples["framework"] == "torch"]["index"].tolist() == list(range(1, 9)) * 3
    assert validate.check(bundle) == []


class SimulatedClock(object):
    """A host clock (perf_counter) that moves only with the steps, and a device clock (runner.measure's
    ``device_clock()`` interface) that stamps its events with the same time."""

    def __init__(self):
        self.now, self.stamps = 0.0, {}

    def perf_counter(self):
        return self.now

    def marks(self, count):
        return [object() for _ in range(count)]

    def record(self, event, result):
        self.stamps[event] = self.now

    def wait(self, event):
        pass

    def seconds(self, start, end):
        return self.stamps[end] - self.stamps[start]

    def forget(self, events):
        pass


class Simulated(Counted):
    """Every step takes 1 ms of the simulated clock, every 10th 11 ms: a mean step of 2 ms, a median of 1 ms."""

    def __init__(self, clock, events):
        super().__init__(None, None, clock if events else None)
        self.now = clock

    def train_step(self, x, y):
        self.steps += 1
        self.now.now += 0.011 if self.steps % 10 == 0 else 0.001
        return 0.5


def test_a_pipelined_wall_figure_is_labelled_a_median_of_repeat_means(monkeypatch):
    """The same steps timed by device events (the median of the repeat medians of iterations: 1 ms) and by the
    pipelined wall time (the median of the repeat means: 2 ms), 6 repeats of 20 iterations each with two slow steps
    (issue 52, A5: both were labelled medians of repeat medians)."""
    clock = SimulatedClock()
    monkeypatch.setattr(measure, "time", clock)
    job = dict(JOB, device="cuda", repeats=6, iterations=20)
    events, _ = measure.throughput(Simulated(clock, True), job, Data())
    wall, _ = measure.throughput(Simulated(clock, False), job, Data())
    assert (events["timer"], events["sample"], events["summary"]["n"]) == ("device_events", "iteration", 120)
    assert events["summary"]["ci95_method"] == "median of repeat medians, distribution-free (binomial order statistics)"
    assert events["summary"]["point_estimate"] == "median of the ci95 units' medians"
    assert (wall["timer"], wall["sample"], wall["summary"]["n"]) == ("pipelined_wall", "repeat mean", 6)
    assert wall["summary"]["ci95_method"] == "median of repeat means, distribution-free (binomial order statistics)"
    assert wall["summary"]["point_estimate"] == "median of repeat means"
    assert events["summary"]["median"] == pytest.approx(0.001) and wall["summary"]["median"] == pytest.approx(0.002)


def test_device_events_without_a_lead_in_are_another_timer_in_the_tables_and_compare(tmp_path):
    """Two results of one torch job timed by device events, one recorded before the lead-in step (suite commit
    866f90f: no ``timing.lead_in``), one after: the tables name the older discipline apart, and compare's timer
    columns differ (issue 52, A8)."""
    from dlrepro.answers import regression

    bundles = []
    for name, lead_in in (("before", None), ("after", {"iterations": 1, "why": "refill"})):
        real = tmp_path / name
        shutil.copytree(REAL, real)
        path = real / "jobs" / "alexnet-s.torch.cpu.b16" / "result.json"
        found = json.loads(path.read_text())
        found["timing"].update(timer="device_events", sample="iteration")
        if lead_in:
            found["timing"]["lead_in"] = lead_in
        path.write_text(json.dumps(found))
        bundles.append(rewrite(real, tmp_path / ("results-" + name)))
    before, after = (tables.summary(b).set_index("framework").loc["torch", "timer"] for b in bundles)
    assert (before, after) == ("device_events (no lead-in)", "device_events")
    compared = regression.against_bundle(*(tables.samples(b) for b in bundles))
    torch = compared[compared["framework"] == "torch"].iloc[0]
    assert (torch["timer_a"], torch["timer_b"]) == ("device_events (no lead-in)", "device_events")
