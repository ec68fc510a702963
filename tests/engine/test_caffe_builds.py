"""Which Caffe a job gets: Debian's CPU_ONLY build refuses a GPU job before pycaffe could abort the process
(set_device in a CPU_ONLY build is a fatal error), and the adapter records which build ran (CUDA or not, the
library it loaded) from the libraries the process has mapped."""

import json

import pytest

from tests import helpers

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


@pytest.mark.docker
def test_debians_cpu_only_caffe_refuses_a_gpu_job_and_says_which_build_ran(docker_engine, caffe_cpu_image, tmp_path):
    image = caffe_cpu_image
    (tmp_path / "probe.py").write_text(PROBE)
    helpers.run_python(docker_engine, image.tag, tmp_path, "/out/probe.py", "/out/found.json")
    found = json.loads((tmp_path / "found.json").read_text())
    assert found["cuda"] == (
        "this Caffe is a CPU_ONLY build (it links no CUDA runtime): run the job in the caffe-1.0.0-cuda image"
    )
    cpu = found["cpu"]
    assert (cpu["mode"], cpu["cuda_build"], cpu["cuda"], cpu["cudnn"]) == ("CPU", False, None, None)
    assert cpu["library"] == "/usr/lib/x86_64-linux-gnu/libcaffe.so.1.0.0"
    assert cpu["debian_packages"]["libcaffe1"] == "1.0.0+git20180821.99bd997-8+b2"
