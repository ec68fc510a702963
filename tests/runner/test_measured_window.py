"""What the measured window covers (result rewrites and evaluation passes left out of its CPU time, effective
parallelism and energy), a data-parallel job's numbers joined from every rank, and the RAPL domains summed."""

import time

import pytest

from runner import energy, measure, rankjoin, stats, telemetry, window
from tests import fakenvml
from tests.fakenvml import FakeNvml
from tests.runner.fakes import JOB, Adapter, Data, EventClock, _add_joules


def _rapl(root, name="package-0", folder="intel-rapl:0", uj=0):
    path = root / folder
    path.mkdir(parents=True)
    (path / "name").write_text(name + "\n")
    (path / "energy_uj").write_text("%d\n" % uj)
    (path / "max_energy_range_uj").write_text("262143328850\n")
    return path / "energy_uj"


class Clock(object):
    """perf_counter and process_time that move only when told, in a process without child processes (an xdist
    worker may hold live children of earlier tests: a Podman service, a browser; runner.window counts theirs)."""

    def __init__(self):
        self.wall = self.cpu = 0.0

    def run(self, wall, cpu):
        self.wall += wall
        self.cpu += cpu

    def perf_counter(self):
        return self.wall

    def process_time(self):
        return self.cpu


@pytest.fixture
def clock(monkeypatch):
    found = Clock()
    monkeypatch.setattr(window, "time", found)
    monkeypatch.setattr(window, "child_pids", lambda: [])
    monkeypatch.setattr(window, "child_cpu_seconds", lambda: 0.0)
    return found


def _window(tmp_path):
    meter = _rapl(tmp_path)
    return window.Window(telemetry.Sampler.for_job({"device": "cpu"}), energy.Counter(str(tmp_path))), meter


def test_an_excluded_stretch_is_left_out_of_cpu_time_parallelism_and_energy(tmp_path, clock):
    win, meter = _window(tmp_path)
    win.start()
    clock.run(2.0, 2.0)
    _add_joules(meter, 30)
    with win.excluded("result rewrites"):
        clock.run(1.0, 4.0)  # 4 CPU seconds in 1 s of rewriting: none of it counted
        _add_joules(meter, 500)
    clock.run(2.0, 6.0)
    _add_joules(meter, 10)
    win.stop()
    usage, found = win.cpu_usage(), win.energy()
    assert (usage["wall_seconds"], usage["cpu_seconds"], usage["effective_parallelism"]) == (4.0, 8.0, 2.0)
    assert usage["excluded"] == ["result rewrites"] and usage["method"] == (
        "process CPU time (every thread) over the measured window; result rewrites left out (counters paused)"
    )
    assert found["joules"] == pytest.approx(40.0) and found["mean_w"] == pytest.approx(10.0)
    assert found["method"] == "RAPL package counters (powercap); result rewrites left out (counters paused)"
    with win.excluded("after the window"):  # outside the window: nothing to pause
        pass
    assert win.left_out == ["result rewrites"]


class EnergyNvml(FakeNvml):
    """FakeNvml whose total-energy counter (mJ) moves only when the test moves it."""

    def __init__(self):
        super().__init__([0x0])
        self.mj = 1000000

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return self.mj


def test_a_paused_gpu_sampler_subtracts_the_pause_from_the_boards_energy():
    nvml = EnergyNvml()
    sampler = fakenvml.sampler(nvml, interval_s=0.01)
    sampler.start()
    nvml.mj += 3000
    time.sleep(0.05)
    sampler.pause()
    nvml.mj += 900000  # an evaluation pass: 900 J not counted
    time.sleep(0.05)  # the sampling process reads on through it: those readings are dropped
    sampler.resume()
    nvml.mj += 2000
    time.sleep(0.05)
    sampler.close()  # stop, and end its sampling process
    record = sampler.result()
    assert record["energy"]["joules"] == pytest.approx(5.0) and len(sampler._gaps) == 1
    (paused, resumed), times = sampler._gaps[0], record["samples"]["t_s"]
    assert paused in times and resumed in times and resumed - paused >= 0.05
    assert not [t for t in times if paused < t < resumed]
    assert len([t for t in times if t < paused]) >= 3 and len([t for t in times if t > resumed]) >= 3


def test_throughput_leaves_the_rewrites_between_repeats_out_of_the_window(tmp_path):
    win, meter = _window(tmp_path)
    adapter = Adapter(meter, win)
    rewrites = []

    def progress(timing):
        assert win._paused
        rewrites.append(len(timing["repeats"]))
        _add_joules(meter, 100)

    timing, _ = measure.throughput(adapter, JOB, Data(), win, progress)
    assert rewrites == [1, 2] and adapter.steps == 1 + 3 * 4
    assert win.energy()["joules"] == pytest.approx(12.0)  # the 12 measured steps, not the warm-up or rewrites
    assert win.cpu_usage()["excluded"] == [measure.REWRITES]
    assert timing["lead_in"]["iterations"] == 0 and timing["timer"] == "host_sync"


def test_a_convergence_window_holds_the_training_loops_only(tmp_path):
    win, meter = _window(tmp_path)
    adapter = Adapter(meter, win)
    timing, _, conv = measure.convergence(adapter, JOB, Data(), win, lambda *sections: _add_joules(meter, 100))
    assert adapter.steps == 3 * 4 and len(conv["epochs"]) == 3
    assert win.energy()["joules"] == pytest.approx(12.0)  # 3 epochs of 4 steps; 3 evaluations, 2 rewrites left out
    assert win.energy()["excluded"] == [measure.EVALUATION, measure.REWRITES]


def test_the_device_clock_gets_a_lead_in_step_per_repeat_and_a_nan_sample_fails_the_job(tmp_path):
    win, meter = _window(tmp_path)
    clock = EventClock()
    adapter = Adapter(meter, win, clock)
    timing, _ = measure.throughput(adapter, JOB, Data(), win)  # a real data set: keys drawn for the lead-ins too
    assert timing["timer"] == "device_events" and timing["lead_in"]["iterations"] == 1
    assert timing["sample"] == "iteration" and timing["repeats"] == [[0.01] * 4] * 3
    assert adapter.steps == 1 + 3 * (1 + 4) and timing["summary"]["median"] == 0.01
    # per repeat: 5 events made before it, one recorded after the lead-in and after each step, one wait, let go
    assert clock.made == clock.forgotten == 3 * 5 and clock.waits == 3 and len(clock.recorded) == 3 * 5
    assert [event for event, _ in clock.recorded[:5]] == [0, 1, 2, 3, 4] and clock.recorded[0][1] == 0.5
    broken = Adapter(meter, None, EventClock(samples=[0.01, float("nan"), 0.01, 0.01]))
    with pytest.raises(stats.NonFiniteSample, match="sample 2 of 4"):
        measure.throughput(broken, dict(JOB, repeats=1), Data())


class SlowNvml(EnergyNvml):
    """EnergyNvml whose every device call but the energy counter's takes 1 ms (a reading's six calls, the violation
    counters), its energy counter rising at a steady 300 W (read at once: its own read is what the window's edge is
    then, and a test machine's load, which stretches every sleep, cannot move it)."""

    def __getattribute__(self, name):
        found = super().__getattribute__(name)
        if not name.startswith("nvmlDevice") or name == "nvmlDeviceGetTotalEnergyConsumption":
            return found

        def slow(*args):
            time.sleep(0.001)
            return found(*args)

        return slow

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        return int(time.monotonic() * 300 * 1000)


class SleepingAdapter(Adapter):
    """Each training step sleeps ``step_s`` (a GPU job's step, as the host sees it)."""

    def __init__(self, step_s):
        super().__init__(None, None)
        self.step_s = step_s

    def train_step(self, x, y):
        time.sleep(self.step_s)
        return 0.5


def test_a_gpu_jobs_energy_window_is_its_measured_window_within_one_sampling_period():
    """The sampler's own NVML reads at every edge (start, each of the 5 pauses between the 6 repeats and its
    resume, stop: 6 calls of 1 ms a reading) stay outside the counters' window (issue 52: 0.2251 s of energy
    window for 0.0571 s measured before)."""
    sampler = fakenvml.sampler(SlowNvml())
    win = window.Window(sampler)
    try:
        measure.throughput(SleepingAdapter(0.001), dict(JOB, device="cuda", repeats=6, iterations=8), Data(), win)
    finally:
        win.close()
    energy, measured = win.energy(), win.cpu_usage()["wall_seconds"]
    assert energy["measured_seconds"] == measured and len(sampler._gaps) == 5
    assert abs(energy["seconds"] - measured) <= win.telemetry()["interval_s"]


def _rank(rank, repeats, cpu_seconds, joules):
    board = (
        {
            "status": "ok",
            "joules": joules,
            "seconds": 2.0,
            "mean_w": joules / 2.0,
            "method": "NVML total energy counter at the window's edges",
        }
        if joules is not None
        else {"status": "unavailable", "reason": "NVML is unavailable: NVMLError: not found"}
    )
    return {
        "rank": rank,
        "status": "ok",
        "repeats": repeats,
        "cpu_usage": {"cpu_seconds": cpu_seconds},
        "telemetry": {"energy": board},
    }


def _result(repeats, energy_record):
    return {
        "timing": {
            "quantity": "seconds per mini-batch",
            "samples_per_measurement": 64,
            "repeats": repeats,
            "summary": stats.summarize_repeats(repeats),
        },
        "cpu_usage": {
            "wall_seconds": 2.0,
            "cpu_seconds": 1.5,
            "effective_parallelism": 0.75,
            "method": "process CPU time (every thread) over the measured window",
        },
        "energy": energy_record,
    }


def test_a_data_parallel_job_takes_the_slowest_rank_per_iteration_and_sums_cpu_and_boards():
    zero, one = [[0.10, 0.30], [0.20, 0.20]], [[0.15, 0.25], [0.10, 0.40]]
    records = [_rank(0, zero, 1.5, 600.0), _rank(1, one, 2.5, 700.0)]
    result = rankjoin.join(_result(zero, records[0]["telemetry"]["energy"]), {"device": "cuda"}, records)
    timing = result["timing"]
    assert timing["repeats"] == [[0.15, 0.30], [0.20, 0.40]] and timing["ranks_joined"] == rankjoin.JOINED % 2
    assert timing["summary"]["median"] == pytest.approx(0.2625)  # median of the repeat medians 0.225 and 0.3
    assert timing["throughput"] == pytest.approx(64 / 0.2625)
    assert result["cpu_usage"]["cpu_seconds"] == 4.0 and result["cpu_usage"]["effective_parallelism"] == 2.0
    assert result["cpu_usage"]["rank_cpu_seconds"] == [1.5, 2.5]
    assert result["energy"]["joules"] == 1300.0 and result["energy"]["boards"] == [600.0, 700.0]
    assert result["energy"]["mean_w"] == 650.0 and result["energy"]["method"].startswith("sum of 2 ranks' GPU boards")
    assert records[0]["repeats"] == zero  # each rank's own times stay in its record


def test_a_rank_without_board_energy_leaves_the_job_without_energy_and_a_cpu_job_keeps_its_package():
    repeats = [[0.1, 0.1]]
    records = [_rank(0, repeats, 1.0, 600.0), _rank(1, repeats, 1.0, None)]
    found = rankjoin.join(_result(repeats, records[0]["telemetry"]["energy"]), {"device": "cuda"}, records)
    assert found["energy"] == {
        "status": "unavailable",
        "reason": "rank 1's GPU board energy is missing (NVML is "
        "unavailable: NVMLError: not found): the job's energy is the sum of every rank's",
    }
    package = {"status": "ok", "joules": 90.0, "method": "RAPL package counters (powercap)"}
    cpu = rankjoin.join(_result(repeats, dict(package)), {"device": "cpu"}, records)
    assert cpu["energy"] == package  # the whole packages: every rank's CPUs are already in them
    assert rankjoin.join(_result(repeats, None), {"device": "cuda"}, records[:1])["energy"] is None  # one rank


def test_a_jax_mesh_samples_every_device_and_sums_their_boards():
    samplers = []
    for mj in (4000, 6000):
        nvml = EnergyNvml()
        sampler = fakenvml.sampler(nvml, interval_s=0.01)
        sampler.device = sampler._describe(len(samplers))
        samplers.append((sampler, nvml, mj))
    win = window.Window(samplers[0][0], None, [samplers[1][0]])
    win.start()
    for _, nvml, mj in samplers:
        nvml.mj += mj
    win.close()  # stop, and end both sampling processes
    found = win.energy()
    assert found["joules"] == pytest.approx(10.0) and found["boards"] == [pytest.approx(4.0), pytest.approx(6.0)]
    assert found["method"] == "sum of 2 GPU boards: NVML total energy counter at the window's edges"
    assert [d["device"]["nvml_index"] for d in win.telemetry()["devices"]] == [1]


def test_rapl_sums_package_domains_only(tmp_path):
    _rapl(tmp_path, "package-0", "intel-rapl:0", 5)
    _rapl(tmp_path, "package-1", "intel-rapl:1", 5)
    _rapl(tmp_path, "psys", "intel-rapl:2", 5)  # the whole platform: overlaps both packages
    _rapl(tmp_path, "core", "intel-rapl:0:0", 5)  # a sub-domain of package 0
    _rapl(tmp_path, "package-0", "intel-rapl-mmio:0", 5)  # package 0 again, through MMIO
    assert [name for name, _, _ in energy.packages(str(tmp_path))] == ["package-0", "package-1"]
    only_mmio = tmp_path / "mmio"
    _rapl(only_mmio, "package-0", "intel-rapl-mmio:0", 5)
    assert [path for _, path, _ in energy.packages(str(only_mmio))] == [
        str(only_mmio / "intel-rapl-mmio:0" / "energy_uj")
    ]


def test_energy_per_sample_counts_what_the_window_processed():
    from dlrepro.store import tables

    found = {"status": "ok", "joules": 26.0, "mean_w": 13.0, "method": "RAPL package counters (powercap)"}
    throughput = {"energy": found, "timing": {"repeats": [[0.1] * 4] * 2, "lead_in": {"iterations": 1}}}
    assert tables._energy(throughput, {"batch_size": 2})["energy_j_per_sample"] == 26.0 / 20  # (2 x (4 + 1)) x 2
    convergence = {"energy": found, "convergence": {"epochs": [{"iterations": 4}, {"iterations": 9}]}}
    assert tables._energy(convergence, {"batch_size": 2})["energy_j_per_sample"] == 1.0  # training samples only


def test_a_j_per_sample_whose_energy_window_is_not_the_measured_one_is_flagged_where_the_report_shows_it():
    """The committed H200 JAX FCN-S b32 job's windows (fcn-20261203T173433Z-74c9b923: 0.1179 s of energy counters for
    0.0519 s measured) against one within a sampling period (0.025 s) and one with no recorded window (RAPL before
    issue 52)."""
    import pandas as pd

    from dlrepro.store import tables
    from dlrepro.views import costs

    def result(seconds, wall):
        found = {"status": "ok", "joules": 33.478, "method": "NVML total energy counter at the window's edges"}
        return {
            "energy": dict(found, seconds=seconds) if seconds else found,
            "telemetry": {"interval_s": 0.025},
            "cpu_usage": {"wall_seconds": wall},
            "timing": {"repeats": [[0.001] * 8] * 6},
        }

    rows = [
        dict(tables._energy(result(*windows), {"batch_size": 32}), status="ok")
        for windows in ((0.11789615499999684, 0.05188462600000321), (0.0719, 0.0520), (None, 0.0520))
    ]
    assert [r["energy_window_differs"] for r in rows] == [True, False, None]
    assert (rows[0]["energy_window_s"], rows[0]["measured_window_s"]) == (0.11789615499999684, 0.05188462600000321)
    assert costs.joules(pd.DataFrame(rows)) == ["0.0218 (energy window 2.27x the measured one)", "0.0218", "0.0218"]
    assert costs.per_sample(0.0194, 2.2722) == " (0.0194 J/sample; energy window 2.27x the measured one)"
