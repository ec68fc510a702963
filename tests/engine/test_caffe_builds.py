"""Which Caffe a job gets: Debian's CPU_ONLY build refuses a GPU job before pycaffe could abort the process
(set_device in a CPU_ONLY build is a fatal error), and the adapter records which build ran (CUDA or not, the
library it loaded) from the libraries the process has mapped."""
import json
import os

import pytest

from dlrepro import REPO_ROOT
from runner import environment

PROBE = """
import json, sys
from runner.adapters import UnsupportedError
from runner.adapters.caffe_adapter import Adapter
job = {"device": "cpu", "model": {"layers": [], "input_shape": [4]}, "threads": 1}
found = {"cpu": Adapter(job).environment()}
try:
    Adapter(dict(job, device="cuda"))
except UnsupportedError as exc:
    found["cuda"] = str(exc)
json.dump(found, open(sys.argv[1], "w"))
"""


def test_the_loaded_library_is_read_from_the_process_maps(tmp_path):
    maps = tmp_path / "maps"
    maps.write_text(
        "7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f02-7f03 rw-p 00000000 00:00 0 \n"
        "7f04-7f05 r-xp 00000000 08:01 2 /opt/caffe/lib/libcaffe.so.1.0.0\n"
        "7f06-7f07 r-xp 00000000 08:01 3 /usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89\n")
    assert environment.mapped_library("libcudart.so", str(maps)) == "/usr/lib/x86_64-linux-gnu/libcudart.so.11.8.89"
    assert environment.mapped_library("libcaffe.so", str(maps)) == "/opt/caffe/lib/libcaffe.so.1.0.0"
    assert environment.mapped_library("libcublas.so", str(maps)) is None
    assert environment.mapped_library("libc.so", str(tmp_path / "gone")) is None
    assert environment.cuda_runtime(str(tmp_path / "no-such-library.so")) is None


@pytest.mark.docker
def test_debians_cpu_only_caffe_refuses_a_gpu_job_and_says_which_build_ran(docker_engine, caffe_cpu_image, tmp_path):
    image = caffe_cpu_image
    tmp_path.chmod(0o777)
    (tmp_path / "probe.py").write_text(PROBE)
    docker_engine.containers.run(
        image.tag, ["python", "/out/probe.py", "/out/found.json"], network_mode="none", remove=True,
        user="%d:%d" % (os.getuid(), os.getgid()), environment={"PYTHONPATH": "/opt/dlrepro"},
        volumes={str(REPO_ROOT / "runner"): {"bind": "/opt/dlrepro/runner", "mode": "ro"}, str(tmp_path): {"bind": "/out"}})
    found = json.loads((tmp_path / "found.json").read_text())
    assert found["cuda"] == ("this Caffe is a CPU_ONLY build (it links no CUDA runtime): run the job in the "
                             "caffe-1.0.0-cuda image")
    cpu = found["cpu"]
    assert (cpu["mode"], cpu["cuda_build"], cpu["cuda"], cpu["cudnn"]) == ("CPU", False, None, None)
    assert cpu["library"] == "/usr/lib/x86_64-linux-gnu/libcaffe.so.1.0.0"
    assert cpu["debian_packages"]["libcaffe1"] == "1.0.0+git20180821.99bd997-8+b2"
