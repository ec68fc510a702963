"""The docker executor's skips decided before any build: the run asks the engine, which must answer, only for its
limits, its version (for the bundle's record) and containers an earlier run left; needs a Docker engine."""

import json

import pytest

from dlrepro.plan import hostinfo
from dlrepro.run import runs
from dlrepro.run.options import RunOptions

pytestmark = pytest.mark.docker


def test_cuda_on_a_host_without_a_gpu_is_skipped_before_any_build(docker_engine, tmp_path, reporter, monkeypatch):
    monkeypatch.setattr(hostinfo, "gpus", lambda: [])  # this host's GPUs, whatever it has, are not seen
    path = runs.run(
        "fcn",
        RunOptions(frameworks=["torch"], variants=["fcn-s"], device="cuda", quick=True),
        results_dir=tmp_path,
        reporter=reporter,
    )
    bundle = json.loads((path / "bundle.json").read_text())
    assert bundle["images"] == [] and bundle["counts"] == {"ok": 0, "failed": 0, "skipped": 1}
    result = json.loads((path / "jobs" / "fcn-s.torch.cuda.b32" / "result.json").read_text())
    assert result["reason"] == "GPU 0 is not visible on this host (NVML sees no NVIDIA GPU)"
    assert "--device cpu" in result["remedy"]
