"""The one background build of a test run's CPU images: which images the tests run (IMAGES_OF, TEST_IMAGES), the run's
id (RUN_ENV, set by tests/conftest.py) and the folder of its build (``folder``: its ``started`` mark, ``pid``, ``log``
and exit ``status``), and ``start``, which starts `dlrepro build` of them in a process of its own, once per run.

tests/conftest.py starts it at the end of collection. `.ci/run` starts it earlier, as `python -m tests.image_build`
with DIR_ENV naming a folder, once the package's own dependencies are installed and before the test extras are: pip
installs on one CPU, and the build (the bases' mmdebstrap first) takes the other. pytest, given the same DIR_ENV,
makes that build its run's (``adopt``). No pytest here: the test extras are not installed yet when `.ci/run` runs
this."""

import os
import subprocess
import sys
import tempfile
import time

from dlrepro import REPO_ROOT, engine
from dlrepro.errors import ExecutorError

# The CPU images the tests run, as framework tokens (NAME or NAME@VERSION), by the fixture that gives them: a session
# builds those its collected tests use, all at once (build.ensure_all), in the background. The rest of the matrix
# (its era versions no test runs, every CUDA image) is tested by rendering its Dockerfile and checking its lock
# (tests/images/test_images.py); `bash benchmarks/build_all_cpu.sh` builds every CPU image.
# tests/containers/test_frameworks.py: every framework's newest, the Keras 2.1 rows' backends and DLF's Chainer 3.4.0
FRAMEWORKS = (
    "torch",
    "tensorflow",
    "mxnet",
    "jax",
    "cntk",
    "caffe2",
    "caffe",
    "chainer",
    "keras-theano",
    "tensorflow@1.4.0",
    "cntk@2.5.1",
    "chainer@3.4.0",
)
IMAGES_OF = {
    "torch_cpu_image": ("torch",),
    "jax_cpu_image": ("jax",),
    "caffe_cpu_image": ("caffe",),
    "mxnet_cpu_image": ("mxnet",),
    "cntk_cpu_image": ("cntk",),
    "images": FRAMEWORKS,
    "image_of": FRAMEWORKS + ("torch@1.0.0",),
    # tests/engine/test_seeds.py's frameworks (Keras 2.1 in the CNTK 2.5.1 and TensorFlow 1.4.0 images) and
    # test_optimizers.py's CNTK, which they take from ``cpu_image``
    "seed_image": ("torch", "tensorflow", "mxnet", "jax", "chainer", "cntk@2.5.1", "tensorflow@1.4.0"),
}
TEST_IMAGES = tuple(dict.fromkeys(token for tokens in IMAGES_OF.values() for token in tokens))
RUN_ENV = "DLREPRO_TEST_RUN"  # one id per test run, shared by its xdist workers: the folder of its one image build
DIR_ENV = "DLREPRO_TEST_IMAGES_DIR"  # the folder of a build started before pytest (`.ci/run`), for pytest to adopt


def new_run_id():
    """An id for a test run: this process's PID and the time."""
    return "%d-%d" % (os.getpid(), time.time())


def folder():
    """The folder of this run's background build: its ``started`` mark, ``pid``, ``log`` and exit ``status``."""
    return os.path.join(tempfile.gettempdir(), "dlrepro-test-images-%s" % os.environ[RUN_ENV])


def adopt():
    """In pytest's first process, before its workers start: a build that `.ci/run` started (its folder in DIR_ENV)
    becomes this run's (the run's folder is a link to it), and DIR_ENV leaves the environment, so that a pytest the
    tests start (tests/project/test_tree.py's collection) has a run and a folder of its own and neither waits for
    nor stops that build. Raises FileExistsError where the run's folder exists already."""
    started = os.environ.pop(DIR_ENV, None)
    if started:
        os.symlink(started, folder())


def start(tokens, where=None):
    """Start `dlrepro build` of the images ``tokens`` in a process of its own (out of reach of the tests'
    monkeypatching and environment changes) when an engine answers, unless the build of the folder ``where`` (None:
    this run's, ``folder``) has started already; returns whether this call started it. The build writes its exit
    status to <where>/status when it ends."""
    try:
        engine.client()
    except ExecutorError:
        return False
    where = where or folder()
    os.makedirs(where, exist_ok=True)
    try:
        os.mkdir(os.path.join(where, "started"))
    except FileExistsError:
        return False  # another process of this run started it
    with open(os.path.join(where, "log"), "w") as log:
        process = subprocess.Popen(
            [
                "sh",
                "-c",
                '"$@"; echo $? > "%s"' % os.path.join(where, "status"),
                "sh",
                sys.executable,
                "-c",
                "from dlrepro.cli.main import program; program.run()",
                "build",
                "--device=cpu",
                "--framework=" + ",".join(tokens),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=str(REPO_ROOT),
            start_new_session=True,
        )
    with open(os.path.join(where, "pid"), "w") as out:
        out.write(str(process.pid))
    return True


if __name__ == "__main__":
    if not os.environ.get(DIR_ENV):
        sys.exit("tests/image_build.py: set %s to the folder of the build (.ci/run sets it)" % DIR_ENV)
    started = start(TEST_IMAGES, os.environ[DIR_ENV])
    print("test images: %s (%s)" % ("building in the background" if started else "not started", os.environ[DIR_ENV]))
