"""Runs that survive anything: a killed run keeps its finished jobs and leaves no container or process, `--resume`
runs only what is missing, a full results folder stops with a clear error and a resumable bundle, a memory limit
stops one job, and the local executor skips a framework its Python lacks."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError, ResultsUnwritable
from dlrepro.run import runs
from dlrepro.run.options import RunOptions
from dlrepro.store import bundle as bundlemod
from dlrepro.store import validate
from tests.run.durable_runs import FIRST, GRU, SECOND, _kill_after_first_job, _resumed_completely, invoke


def _descendants_running(marker):
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


def test_sigkill_of_a_local_run_leaves_no_process_and_resume_completes(tmp_path):
    results = tmp_path / "results"
    partial = _kill_after_first_job(GRU + ["--batch-size=8,64", "--executor=local"], results, FIRST)
    deadline = time.time() + 10
    while time.time() < deadline and _descendants_running(str(partial)):
        time.sleep(0.2)
    assert _descendants_running(str(partial)) == []  # the supervisor saw its pipe close and ended its job
    _resumed_completely(partial, results, FIRST, SECOND)


def test_an_out_of_memory_kill_names_the_container_limit_only_where_it_was_reached(tmp_path, monkeypatch):
    """Constructed cgroups, v1 (the peak usage) and v2 (memory.events "oom"): the OOM kill count rises both when
    the container's usage reached its limit and when the whole host ran out (the global OOM killer, as a study's
    warm workers once caused); the reason names the limit only in the first case."""
    from runner import limits, supervise

    v1 = tmp_path / "v1" / "memory"
    v1.mkdir(parents=True)
    (v1 / "memory.limit_in_bytes").write_text("%d\n" % (700 << 20))
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n")
    (v1 / "memory.max_usage_in_bytes").write_text("%d\n" % (300 << 20))
    monkeypatch.setattr(limits, "ROOT", str(tmp_path / "v1"))
    assert limits.counters() == (3, 0) and limits.memory_limit() == 700 << 20  # its peak is under the limit
    (v1 / "memory.max_usage_in_bytes").write_text("%d\n" % (700 << 20))
    assert limits.counters() == (3, None)  # it reached the limit at some time: then, or before
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "memory.max").write_text("%d\n" % (700 << 20))
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 41\noom 2\noom_kill 5\n")
    monkeypatch.setattr(limits, "ROOT", str(v2))
    assert limits.counters() == (5, 2)
    what = "the worker process running it"
    assert supervise._exit_reason(-9, True, what, at_limit=False) == (
        "out of memory: the host, or a cgroup above this one, ran out of memory (this one's own limit of 700.0 MiB "
        "was not reached) and the kernel killed the worker process running it"
    )
    assert supervise._exit_reason(-9, True, what, at_limit=True) == (
        "out of memory (limit 700.0 MiB): the kernel killed the worker process running it"
    )
    assert supervise._exit_reason(-9, True, what) == (
        "out of memory (limit 700.0 MiB, or the host's: this kernel's counters cannot tell which): the kernel killed "
        "the worker process running it"
    )
    assert (
        supervise._exit_reason(-9, False, what)
        == "the worker process running it died of SIGKILL (killed: out of memory?)"
    )
    (v2 / "memory.max").write_text("max\n")  # no limit (a local or Slurm job's cgroup): never "the limit"
    assert supervise._exit_reason(-9, True, "the job process") == (
        "out of memory: the host, or a cgroup above this one, ran out of memory (this one has no limit) and the "
        "kernel killed the job process"
    )


@pytest.fixture
def tiny_results(tmp_path):
    """A results folder on a tmpfs of 96 KB: room for a partial bundle and two jobs' results, not for the tables."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "tiny"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(folder)], check=True)
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_full_results_folder_is_a_clear_error_and_a_resumable_partial(tiny_results, reporter):
    options = RunOptions(frameworks=["torch"], executor="local", variants=["fcn-s"], batch_sizes=[8, 16], quick=True)
    with pytest.raises(ResultsUnwritable) as err:
        runs.run("fcn", options, results_dir=tiny_results, reporter=reporter)
    (partial,) = tiny_results.glob(".*.partial")
    assert str(err.value).startswith("results folder %s cannot be written (" % tiny_results)
    assert "No space left on device" in str(err.value) and "what was measured is kept in %s" % partial in str(err.value)
    assert err.value.remedy == "free space or make it writable, then `dlrepro run --resume %s`" % partial.name[1:-8]
    counts = bundlemod.listing(tiny_results)[0]["counts"]
    assert counts["ok"] >= 1 and counts["ok"] + counts["missing"] == 2  # what was measured is kept, and only that
    subprocess.run(["mount", "-o", "remount,size=16m", str(tiny_results)], check=True)
    path = runs.run(None, RunOptions(), results_dir=tiny_results, reporter=reporter, resume="latest")
    assert reporter.total == counts["missing"] and validate.check(path) == []  # only what was missing ran again
    assert json.loads((path / "bundle.json").read_text())["counts"] == {"ok": 2, "failed": 0, "skipped": 0}


def test_resume_refuses_other_options_or_a_changed_spec(tmp_path, reporter):
    spec = tmp_path / "fcn.yaml"
    shutil.copyfile(REPO_ROOT / "specs" / "fcn.yaml", spec)
    options = RunOptions(frameworks=["torch"], executor="local", variants=["fcn-s"], batch_sizes=[8], quick=True)
    path = runs.run(str(spec), options, results_dir=tmp_path, reporter=reporter)
    with pytest.raises(
        DlreproError,
        match=r"--resume: the bundle was measured with other options: batch_sizes=\[8\] "
        r"there, \[16\] here",
    ) as err:
        runs.run(None, options.model_copy(update={"batch_sizes": [16]}), results_dir=tmp_path, resume=path.name)
    assert "resume without measurement options" in err.value.remedy
    # the same options given again are fine: nothing is missing, so nothing runs, and the bundle is published again
    again = runs.run(str(spec), options, results_dir=tmp_path, resume=path.name, reporter=reporter)
    assert again == path and reporter.total == 0 and validate.check(path) == []
    spec.write_text(spec.read_text().replace("lr: 0.01", "lr: 0.02", 1))
    with pytest.raises(
        DlreproError,
        match=r"--resume: spec .*fcn.yaml has changed since the bundle ran: "
        r"variants.fcn-s.optimizer.lr: 0.01 there, 0.02 here$",
    ) as err:
        runs.run(None, RunOptions(), results_dir=tmp_path, resume=path.name)
    assert err.value.remedy.startswith("restore the spec file as it was (sha256 ") and "None" not in err.value.remedy


def test_a_partial_bundle_is_finalized_as_it_is(tmp_path):
    results = tmp_path / "results"
    partial = _kill_after_first_job(GRU + ["--batch-size=8,64", "--executor=local"], results, FIRST)
    done = invoke("finalize", "latest", "--results", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((results / partial.name[1 : -len(".partial")] / "bundle.json").read_text())["state"] == "complete"
    again = invoke("publish", "latest", "--results", str(results))  # the deprecated name: same task, a warning
    # latest is the newest partial bundle: there is none left, and the complete one is named, not reopened
    assert again.returncode == 2 and "`publish` is deprecated" in again.stderr
    assert "latest: no partial bundle under" in again.stdout and "is complete and is not reopened" in again.stdout
    folder = results / partial.name[1 : -len(".partial")]
    rows = {r["job_id"]: r for r in json.loads((folder / "bundle.json").read_text())["jobs"]}
    assert rows[FIRST]["status"] == "ok" and rows[SECOND]["status"] == "skipped"
    assert rows[SECOND]["reason"].startswith(("not run: ", "the run was killed"))
    assert validate.check(folder) == []


def test_the_local_executor_skips_a_framework_its_python_cannot_import(tmp_path, reporter):
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    bare = str(tmp_path / "bare" / "bin" / "python")  # a Python without torch
    options = RunOptions(frameworks=["torch"], executor="local", variants=["fcn-s"], batch_sizes=[8], quick=True)
    path = runs.run("fcn", options, results_dir=tmp_path, python=bare, reporter=reporter)
    (row,) = json.loads((path / "bundle.json").read_text())["jobs"]
    assert row["status"] == "skipped" and row["reason"] == "%s cannot import torch (No module named 'torch')" % bare
    assert "install torch into that Python" in row["remedy"] and "--executor docker" in row["remedy"]


def test_rerun_measures_ok_jobs_again_and_keeps_their_earlier_results(tmp_path, reporter):
    """A complete two-job bundle, one job measured again (as the DLF GRU study's PyTorch seeds that ran beside a CI
    run were): that job's earlier result moves to attempts/1/, the other is not touched, the bundle validates."""
    options = RunOptions(
        frameworks=["torch"], executor="local", variants=["imdb-gru-synthetic"], batch_sizes=[8, 16], quick=True
    )
    path = runs.run("imdb-gru", options, results_dir=tmp_path, reporter=reporter)
    first = {d.name: json.loads((d / "result.json").read_text()) for d in (path / "jobs").iterdir()}
    again, kept = FIRST, "imdb-gru-synthetic.torch.cpu.b16"
    with pytest.raises(
        DlreproError,
        match=r"^--rerun: the bundle has no job 'imdb-gru-synthetic.torch.cpu.b9' \(did you mean "
        r"imdb-gru-synthetic.torch.cpu.b8\?\)",
    ) as err:
        runs.run(None, RunOptions(), results_dir=tmp_path, resume=path.name, rerun=["imdb-gru-synthetic.torch.cpu.b9"])
    assert err.value.remedy == "give job ids of the bundle (the folders under its jobs/), comma-separated"
    assert (
        runs.run(None, RunOptions(), results_dir=tmp_path, resume=path.name, rerun=[again], reporter=reporter) == path
        and reporter.total == 1
    )
    assert json.loads((path / "jobs" / again / "attempts" / "1" / "result.json").read_text()) == first[again]
    now = json.loads((path / "jobs" / again / "result.json").read_text())
    assert now["status"] == "ok" and now["started"] >= first[again]["finished"]
    assert json.loads((path / "jobs" / kept / "result.json").read_text()) == first[kept]
    assert not (path / "jobs" / kept / "attempts").exists() and validate.check(path) == []
