"""runner.buildinfo inside a framework image, under a job's isolation; needs a Docker engine."""

import pytest

from dlrepro.run import probe


@pytest.mark.docker
def test_buildinfo_runs_in_an_image_with_a_jobs_isolation(torch_cpu_image):
    facts = probe.run_buildinfo(torch_cpu_image.tag, "torch", None)
    assert facts["reported"]["framework_version"] == "2.13.0+cpu" and facts["reported"]["cuda"] is None
    assert facts["device_code"] == [] and facts["main"] is None
    assert facts["python"].startswith("3.11.")
    assert facts["isolation"] == {
        "network": "none",
        "read_only_root": True,
        "user": "non-root",
        "no_new_privileges": True,
        "cap_drop": "ALL",
        "pids_limit": 4096,
        "memory_bytes": None,
        "cpus": None,
    }
