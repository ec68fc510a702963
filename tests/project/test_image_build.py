"""The run's one background image build (tests/image_build.py): `.ci/run` starts it before the test extras install,
under the id that pytest then takes, and pytest does not start a second one."""

import os
import subprocess
import sys
from types import SimpleNamespace

from dlrepro import REPO_ROOT
from tests import image_build


def test_without_a_run_id_the_command_refuses_in_one_line():
    environment = {k: v for k, v in os.environ.items() if k != image_build.RUN_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "tests.image_build"], cwd=REPO_ROOT, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr
        == "tests/image_build.py: set DLREPRO_TEST_RUN to the id the test run will take (.ci/run exports it)\n"
    )


def test_the_first_start_of_a_run_builds_its_images_and_a_second_start_does_not(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(image_build.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setenv(image_build.RUN_ENV, "ci-1-2")
    monkeypatch.setattr(image_build.engine, "client", lambda: object())
    started = []
    monkeypatch.setattr(
        image_build.subprocess, "Popen", lambda argv, **kw: started.append((argv, kw)) or SimpleNamespace(pid=4242)
    )
    assert image_build.folder() == str(tmp_path / "dlrepro-test-images-ci-1-2")
    assert image_build.start(("torch", "chainer@3.4.0")) is True
    assert image_build.start(("torch",)) is False  # pytest's workers after .ci/run: the build has started
    ((argv, kw),) = started
    assert argv[-3:] == ["build", "--device=cpu", "--framework=torch,chainer@3.4.0"]
    assert argv[2] == '"$@"; echo $? > "%s/status"' % image_build.folder()
    assert kw["start_new_session"] is True and kw["cwd"] == str(REPO_ROOT)
    assert sorted(os.listdir(image_build.folder())) == ["log", "pid", "started"]
    assert open(os.path.join(image_build.folder(), "pid")).read() == "4242"
