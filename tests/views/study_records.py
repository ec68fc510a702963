"""A study record of the test study report-study, written as `dlrepro study` writes one
(tests/data/report-study.yaml)."""

import hashlib
import json

from dlrepro import REPO_ROOT

MANIFEST = REPO_ROOT / "tests" / "data" / "report-study.yaml"
ALEXNET = "alexnet-20261130T031432Z-74e68a2e"  # AlexNet-S b16 on 2 CPUs, 7 frameworks, 1 thread count
GONE = "fcn-20990101T000000Z-00000000"


def write_record(folder, fcn_bundle=GONE, sha256=None, name="report-study-20261201T000000Z.json", versions=None):
    """A study record of report-study: run cpu -> the committed AlexNet bundle (``versions``: its version sets, as
    --versions records them), gpu not runnable, fcn -> ``fcn_bundle``."""
    path = folder / "studies" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = {
        "cpu": {
            "spec": "alexnet",
            "variants": ["alexnet-s"],
            "device": "cpu",
            "state": "published",
            "bundle": ALEXNET,
            "what": "the AlexNet-S column",
            "versions": versions or {},
        },
        "gpu": {
            "spec": "alexnet",
            "variants": ["alexnet-s"],
            "device": "cuda",
            "state": "not runnable",
            "bundle": None,
            "why_here": "it needs an NVIDIA GPU; NVML sees none on this host",
        },
        "fcn": {"spec": "fcn", "variants": ["fcn-s"], "device": "cpu", "state": "published", "bundle": fcn_bundle},
    }
    path.write_text(
        json.dumps(
            {
                "schema": "dlrepro.study/1",
                "study": "report-study",
                "created": "2026-12-01T00:00:00Z",
                "manifest": {
                    "file": "tests/data/report-study.yaml",
                    "sha256": sha256 or hashlib.sha256(MANIFEST.read_bytes()).hexdigest(),
                },
                "asked": {"device": None, "executor": "docker", "frameworks": None, "quick": True},
                "suite": {"version": "0.1.0", "git": {"commit": None, "dirty": False}},
                "runs": runs,
            }
        )
    )
    return path
