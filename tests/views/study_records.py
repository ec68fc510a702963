"""A study record of the test study report-study, written as `dlrepro study` writes one
(tests/data/report-study.yaml); the answers of the committed study records, computed once per process."""

import functools
import hashlib
import json
import pickle
from pathlib import Path

from dlrepro import REPO_ROOT
from dlrepro.answers import gather

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


@functools.lru_cache(maxsize=None)
def _pickled_answer(path, results):
    return pickle.dumps(gather.study(path, results), protocol=pickle.HIGHEST_PROTOCOL)


def committed_answer(path, results=REPO_ROOT / "results"):
    """``gather.study(path, results)`` of a committed study record: computed once per process (3 to 6 s each; the
    committed reports' tests and the site's ask for every record), each call given a copy of its own (the answer
    pickled, as `dlrepro site` keeps answers: dlrepro.cli.site_cache), so no test sees what another did to it. For
    the committed records only: a test's own record or results folder changes what the answer reads."""
    return pickle.loads(_pickled_answer(str(path), Path(results)))
