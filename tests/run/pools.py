"""What the pool tests share: the shared-study file and a worker's seat."""

import pytest

from dlrepro import REPO_ROOT

pytest.importorskip("torch")


SHARED = REPO_ROOT / "tests" / "data" / "shared-study.yaml"


def _seat(worker):
    """(worker id, jobs before) of a result's worker record."""
    return worker["id"], worker["jobs_before"]
