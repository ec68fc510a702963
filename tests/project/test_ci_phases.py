"""benchmarks/ci_phases.py: the phases of a fresh-clone CI run, and how busy the host's CPUs were in its tests."""

from tests.helpers import benchmark


def test_the_cpu_counters_give_the_busy_share_of_the_tests_window(tmp_path, capsys):
    """Two CPUs for 100 s of tests (20,000 ticks): 18,000 busy (user, system, irq, softirq), 1,000 niced (another
    user's), 600 idle, 400 on I/O; of the busy ones, 60 CPU-seconds in the engine's containers and build steps, 45 of
    them in build steps. The samples before the tests started and after they ended are not counted."""
    log = tmp_path / "fresh-ci.log"
    log.write_text(
        "   50.0 + ruff check .\n   50.5 + pytest\n   60.0 [gw0] workers [2 items]\n"
        "  100.0 0.5s call     tests/engine/test_x.py::test_a\n"
        "  160.0 ===== 2 passed in 100.00s =====\n"
    )
    (tmp_path / "fresh-ci-cpu.log").write_text(
        "   10.0 cpu  100 0 0 900 0 0 0 0 0 0\n"  # before the tests: not counted
        "   10.0 cgroup docker 1000000000\n"
        "   60.0 cpu  1000 0 0 1000 0 0 0 0 0 0\n"
        "   60.0 cgroup docker 5000000000\n   60.0 cgroup buildkit 2000000000\n"
        "  160.0 cpu  16000 1000 2900 1600 400 50 50 0 0 0\n"
        "  160.0 cgroup docker 65000000000\n  160.0 cgroup buildkit 47000000000\n"
        "  170.0 cpu  99999 0 0 0 0 0 0 0 0 0\n"
        "  170.0 cgroup docker 99000000000\n"
    )
    ci_phases = benchmark("ci_phases")
    assert ci_phases.cpu_use(str(tmp_path / "fresh-ci-cpu.log"), 60.0, 160.0) == (180.0, 10.0, 4.0, 200.0)
    assert ci_phases.cgroup_use(str(tmp_path / "fresh-ci-cpu.log"), 60.0, 160.0) == {"docker": 60.0, "buildkit": 45.0}
    ci_phases.main(str(log))
    printed = capsys.readouterr().out.splitlines()
    busy = "CPUs busy during the tests                   180 of 200 CPU-seconds (90%), "
    assert busy + "10 niced (not CI's), 4 waiting on I/O" in printed
    assert "  of them in image build steps                45 CPU-seconds" in printed
    assert "  in containers                               15 CPU-seconds" in printed
    assert "tests (wall)                                 100 s" in printed


def test_the_timeline_gives_each_workers_idle_seconds_and_each_windows_tests_beside_its_cpu(tmp_path, capsys):
    """Two workers from 60 s: gw0 in tests/engine/test_x.py::test_a 60-100 s (setup and call) and test_c 130-160 s,
    so 70 s in tests and 30 s idle; gw1 in test_b 60-400 s, across the first two windows of 300 s. In the first
    window the host used 200 CPU-seconds: 40 in build steps, 100 in containers (140 in the engine's cgroup), 60 in
    the rest."""
    log = tmp_path / "fresh-ci.log"
    log.write_text("   50.5 + pytest\n   60.0 [gw0] workers [3 items]\n  400.0 ===== 3 passed in 340.00s =====\n")
    (tmp_path / "fresh-ci-tests.tsv").write_text(
        "gw0\tsetup\t60.0\t70.0\tpassed\ttests/engine/test_x.py::test_a@engine\n"
        "gw0\tcall\t70.0\t100.0\tpassed\ttests/engine/test_x.py::test_a@engine\n"
        "gw0\tcall\t130.0\t160.0\tpassed\ttests/engine/test_x.py::test_c@engine\n"
        "gw1\tcall\t60.0\t400.0\tpassed\ttests/views/test_y.py::test_b\n"
    )
    (tmp_path / "fresh-ci-cpu.log").write_text(
        "    0.0 cpu  0 0 0 0 0 0 0 0 0 0\n    0.0 cgroup docker 0\n    0.0 cgroup buildkit 0\n"
        "  300.0 cpu  15000 0 5000 40000 0 0 0 0 0 0\n"
        "  300.0 cgroup docker 140000000000\n  300.0 cgroup buildkit 40000000000\n"
    )
    benchmark("ci_phases").main(str(log))
    printed = capsys.readouterr().out.splitlines()
    assert "worker gw0                                    70 s in tests, 30 s idle, done at 160 s" in printed
    assert "worker gw1                                   340 s in tests, 0 s idle, done at 400 s" in printed
    window = printed.index("    0-  300 s  CPU-s: build 40, containers 100, rest 60")
    assert printed[window + 1 : window + 3] == [
        "  gw0    70 s: test_x.py::test_a 40; test_x.py::test_c 30",
        "  gw1   240 s: test_y.py::test_b 240",
    ]
    assert printed[window + 3 : window + 6] == [
        "  300-  600 s  ",
        "  gw0     0 s: ",
        "  gw1   100 s: test_y.py::test_b 100",
    ]
