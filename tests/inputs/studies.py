"""What the study tests share: the tiny study file, a study file with one line changed, and tidy rows of a run."""

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import SpecError
from dlrepro.inputs import studies
from dlrepro.store import tables
from runner import stats

TINY = REPO_ROOT / "tests" / "data" / "tiny-study.yaml"


def _bad(tmp_path, text, old, new):
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(SpecError) as err:
        studies.load(str(path))
    return path, err.value.problems


def _rows(values, variant="fcn-s", run="fcn", metric_column="median", threads=None, ci=None, device="cpu", quick=None):
    """Summary rows: {framework: value} (or {(framework, threads): value}) of one run; ``ci``: {framework: (low,
    high)}, or "tight" for a repeat-level interval of +-1% around every value (no ci: a --quick smoke pass, unless
    ``quick`` is False: then a full job with too few repeats for an interval)."""
    rows = []
    for key, value in values.items():
        framework, t = key if isinstance(key, tuple) else (key, threads)
        low, high = (
            (value * 0.99, value * 1.01) if ci == "tight" else ci.get(framework, (None, None)) if ci else (None, None)
        )
        rows.append(
            {
                "run": run,
                "variant": variant,
                "framework": framework,
                "status": "ok",
                "mode": "throughput",
                "quantity": "seconds per mini-batch",
                "device": device,
                "batch_size": 64,
                "threads": t,
                metric_column: value,
                "throughput": 64 / value,
                "ci95_low": low,
                "ci95_high": high,
                "ci95_method": stats.CI_METHOD if ci else None,
                "ci95_units": 6 if ci else 1,
                "n": 48 if ci else 3,
                "quick": not ci if quick is None else quick,
                "precision": "fp32",
                "job_id": "%s.%s.t%s" % (variant, framework, t),
            }
        )
    return tables.frame(rows, tables.SUMMARY_COLUMNS).assign(run=[r["run"] for r in rows])
