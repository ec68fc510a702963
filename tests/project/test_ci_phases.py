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
