"""The run's one background image build (tests/image_build.py): `.ci/run` starts it before the test extras install,
in a folder it names; pytest makes that build its run's and starts no second one, and a pytest the tests start has a
folder of its own."""

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from dlrepro import REPO_ROOT
from tests import image_build


@pytest.fixture
def started(monkeypatch, tmp_path):
    """Builds started by ``image_build.start`` ([(argv, Popen keywords)]), with an engine that answers and no process
    started, under TMPDIR ``tmp_path`` and run id ci-1-2."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(image_build.tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setenv(image_build.RUN_ENV, "ci-1-2")
    monkeypatch.setattr(image_build.engine, "client", lambda: object())
    found = []
    monkeypatch.setattr(
        image_build.subprocess, "Popen", lambda argv, **kw: found.append((argv, kw)) or SimpleNamespace(pid=4242)
    )
    return found


def test_without_a_folder_the_command_refuses_in_one_line():
    environment = {k: v for k, v in os.environ.items() if k != image_build.DIR_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "tests.image_build"], cwd=REPO_ROOT, env=environment, capture_output=True, text=True
    )
    assert done.returncode == 1 and done.stdout == ""
    assert (
        done.stderr
        == "tests/image_build.py: set DLREPRO_TEST_IMAGES_DIR to the folder of the build (.ci/run sets it)\n"
    )


def test_the_first_start_of_a_run_builds_its_images_and_a_second_start_does_not(started, tmp_path):
    assert image_build.folder() == str(tmp_path / "dlrepro-test-images-ci-1-2")
    assert image_build.start(("torch", "chainer@3.4.0")) is True
    assert image_build.start(("torch",)) is False  # another xdist worker of the run: the build has started
    ((argv, kw),) = started
    assert argv[-3:] == ["build", "--device=cpu", "--framework=torch,chainer@3.4.0"]
    assert argv[2] == '"$@"; echo $? > "%s/status"' % image_build.folder()
    assert kw["start_new_session"] is True and kw["cwd"] == str(REPO_ROOT)
    assert sorted(os.listdir(image_build.folder())) == ["log", "pid", "started"]
    assert open(os.path.join(image_build.folder(), "pid")).read() == "4242"


def test_pytest_adopts_the_build_ci_started_and_a_pytest_it_starts_does_not(started, tmp_path, monkeypatch):
    early = tmp_path / "dlrepro-test-images-ci-77-88"  # .ci/run's folder
    assert image_build.start(image_build.TEST_IMAGES, str(early)) is True
    assert started[0][0][-1] == "--framework=" + ",".join(image_build.TEST_IMAGES)
    monkeypatch.setenv(image_build.DIR_ENV, str(early))
    image_build.adopt()  # pytest's first process, its run id ci-1-2
    assert os.path.realpath(image_build.folder()) == str(early) and image_build.DIR_ENV not in os.environ
    assert image_build.start(("torch",)) is False and len(started) == 1  # the collection's start: none
    monkeypatch.setenv(image_build.RUN_ENV, "ci-3-4")  # a pytest that a test starts: its own run, no folder to adopt
    image_build.adopt()
    assert not os.path.exists(image_build.folder())
