"""benchmarks/cpu_by_process.py: a CI run's CPU-seconds by kind of process, from the kernel's process accounting."""

import struct

import pytest

from tests.helpers import benchmark

# (name, pid, ppid, start, elapsed ticks, user ticks, system ticks): a run as fresh_ci.sh records it, written in
# the order processes end; PID 30 is used twice (a pip that ended before the test started, then a worker)
RUN = [
    ("pip", 30, 2, 1000, 4000, 5000, 700),  # the README's install: 57 CPU-s
    ("sh", 12, 11, 1100, 3000, 100, 0),  # a build step's shell under dockerd's runc
    ("pip", 13, 12, 1101, 2900, 1500, 200),  # its pip: 17 CPU-s, with the shell's 1: 18
    ("runc", 11, 10, 1100, 3100, 50, 50),  # dockerd's runc of the step: 1 CPU-s
    ("python", 21, 20, 1200, 6000, 9000, 1000),  # a job in a container: 100 CPU-s
    ("containerd-shim", 20, 1, 1199, 6100, 200, 0),  # 2 CPU-s
    ("python3", 32, 31, 1300, 1000, 2400, 100),  # the dlrepro CLI a test started: 25 CPU-s
    ("docker", 33, 31, 1310, 100, 300, 0),  # a docker CLI a test started: 3 CPU-s
    ("python3", 31, 30, 1250, 9000, 20000, 500),  # an xdist worker (PID 30 again, now pytest): 205 CPU-s
    ("pytest", 30, 2, 1240, 9100, 300, 100),  # 4 CPU-s
    ("dockerd", 10, 2, 990, 20000, 9000, 300),  # the engine, stopped after the tests: 93 CPU-s
    ("bash", 2, 1, 980, 30000, 100, 100),  # fresh_ci.sh: 2 CPU-s
]


def _comp_t(ticks):
    """``ticks`` as a comp_t (13 bits of mantissa, a base-8 exponent above them); exact values only."""
    exponent = 0
    while ticks >= 1 << 13:
        assert ticks % 8 == 0, ticks
        ticks, exponent = ticks // 8, exponent + 1
    return exponent << 13 | ticks


def _acct(path, rows, version=3):
    with open(path, "wb") as out:
        for name, pid, ppid, start, elapsed, user, system in rows:
            out.write(
                struct.pack(
                    "<BBHIIIIIIf8H16s",
                    0,
                    version,
                    0,
                    0,
                    0,
                    0,
                    pid,
                    ppid,
                    start,
                    float(elapsed),
                    _comp_t(user),
                    _comp_t(system),
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    name.encode(),
                )
            )
    return path


def test_each_process_counts_to_the_kind_its_ancestors_give_it(tmp_path, capsys):
    module = benchmark("cpu_by_process")
    found = module.by_kind(_acct(tmp_path / "acct", RUN))
    assert {k: round(sum(v.values()), 2) for k, v in found.items()} == {
        "host pip install": 57.0,
        "image build steps": 19.0,  # the step's runc, shell and pip
        "container engines": 96.0,  # dockerd and the docker CLI
        "containers": 102.0,
        "test subprocesses": 25.0,
        "pytest workers": 205.0,
        "the rest": 6.0,  # pytest itself and fresh_ci.sh's shell
    }
    assert found["image build steps"] == {"pip": 17.0, "sh": 1.0, "runc": 1.0}
    module.main(str(tmp_path / "acct"), 2)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].split() == ["all", "processes", "510", "CPU-s"]
    assert printed[1].split() == ["containers", "102", "CPU-s", "python", "100,", "containerd-shim", "2"]


def test_a_large_time_is_read_through_comp_ts_exponent():
    """comp_t: 13 bits of mantissa, then a base-8 exponent: 0x2001 is 1 x 8 = 8 ticks; 0x4fff is 4095 x 64."""
    module = benchmark("cpu_by_process")
    assert (module.comp_t(0x1FFF), module.comp_t(0x2001), module.comp_t(0x4FFF)) == (8191, 8, 262_080)


def test_an_older_record_version_is_refused_naming_the_file(tmp_path):
    path = _acct(tmp_path / "acct", RUN[:1], version=2)
    with pytest.raises(ValueError, match=r"acct: record 0 is acct version 2, not 3"):
        benchmark("cpu_by_process").records(str(path))
