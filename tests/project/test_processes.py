"""The run-end check for processes the tests started (tests/processes.py, applied by tests/conftest.py): a process
carrying the run's id is found wherever it was re-parented, and ended; one without it is not touched."""

import os
import subprocess
import sys
import time

from tests import processes


def test_a_detached_process_of_the_run_is_found_and_ended_and_another_is_left_alone():
    mine = subprocess.Popen(
        ["sleep", "60"], env=dict(os.environ, DLREPRO_PROCESS_CHECK="this-test"), start_new_session=True
    )
    other = subprocess.Popen(
        ["sleep", "60"], env=dict(os.environ, DLREPRO_PROCESS_CHECK="another-run"), start_new_session=True
    )
    try:
        deadline = time.time() + 10  # until the child has exec'd sleep: before, /proc shows the forked parent's
        while processes.marked("DLREPRO_PROCESS_CHECK", "this-test") == {} and time.time() < deadline:
            time.sleep(0.05)
        assert processes.marked("DLREPRO_PROCESS_CHECK", "this-test") == {mine.pid: "sleep 60"}
        assert processes.left_behind("DLREPRO_PROCESS_CHECK", "this-test", grace_s=0.5) == {mine.pid: "sleep 60"}
        assert mine.wait(10) == -9 and other.poll() is None
        assert processes.marked("DLREPRO_PROCESS_CHECK", "this-test") == {}
    finally:
        other.kill()
        other.wait(10)


def test_a_process_that_ends_within_the_grace_period_is_not_counted():
    quick = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(0.5)"], env=dict(os.environ, DLREPRO_PROCESS_CHECK="ends-soon")
    )
    assert processes.left_behind("DLREPRO_PROCESS_CHECK", "ends-soon", grace_s=10) == {}
    assert quick.wait(10) == 0
