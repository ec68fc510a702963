"""What the durable-run tests share: a run killed after its first job, and the check that its resume completed it."""

import json
import signal
import subprocess
import sys
import time

import pytest

from dlrepro import REPO_ROOT
from dlrepro.store import validate

# DLF's GRU on synthetic reviews (3.8 M parameters: FCN-S's 118 M took each job a second more to initialise)
GRU = [
    "--spec=imdb-gru",
    "--variant=imdb-gru-synthetic",
    "--framework=torch",
    "--warmup=0",
    "--iterations=3",
    "--repeats=1",
]
FIRST, SECOND = "imdb-gru-synthetic.torch.cpu.b8", "imdb-gru-synthetic.torch.cpu.b64"


def _kill_after_first_job(args, results, first):
    """Start `invoke run ARGS`, SIGKILL it as soon as job ``first`` is in its partial bundle; returns the partial."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "invoke", "run"] + args + ["--results", str(results)],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        found = list(results.glob(".*.partial/jobs/%s/result.json" % first))
        if found:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return found[0].parents[2]
        time.sleep(0.2)
    proc.kill()
    pytest.fail("job %s did not end within 300 s (exit status %s)" % (first, proc.poll()))


def _resumed_completely(partial, results, first, second):
    """The partial bundle of a killed run kept ``first``; `--resume latest` runs only ``second`` and publishes."""
    assert json.loads((partial / "jobs" / first / "result.json").read_text())["status"] == "ok"
    assert not (partial / "jobs" / second / "result.json").exists()
    listed = invoke("bundles", "--results", str(results))
    assert listed.returncode == 0 and "partial (its run ended)" in listed.stdout
    done = invoke("run", "--resume", "latest", "--results", str(results))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 of 2 jobs to run" in done.stdout
    folder = results / partial.name[1 : -len(".partial")]
    body = json.loads((folder / "bundle.json").read_text())
    assert [r["job_id"] for r in body["jobs"]] == [first, second] and body["counts"]["ok"] == 2
    assert [a["jobs"] for a in body["attempts"]] == [[first, second], [second]]
    stamps = [
        json.loads((folder / "jobs" / j / "result.json").read_text())["attempt"]["number"] for j in (first, second)
    ]
    assert stamps == [1, 2] and validate.check(folder) == []
    return folder


def invoke(*args, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "invoke"] + list(args),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO_ROOT,
        **kwargs,
    )
