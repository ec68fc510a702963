"""A lost engine as the run sees it (an executor that loses its engine, no engine needed): the bundle stays partial with
its jobs interrupted, and which partial bundle a resume takes."""

import json
from pathlib import Path

import pytest

from dlrepro.errors import BundleError, DlreproError, EngineLost
from dlrepro.run import executors, recover, runs
from dlrepro.run.executors.local import LocalExecutor
from dlrepro.run.options import RunOptions
from dlrepro.store import bundle as bundlemod
from dlrepro.store import validate

LOST = "the Docker engine at unix:///nowhere went away (ChunkedEncodingError)"


B8, B16 = "imdb-gru-synthetic.torch.cpu.b8", "imdb-gru-synthetic.torch.cpu.b16"


class LosesItsEngine(LocalExecutor):
    """A local executor whose engine "goes away" as soon as the group's first job has started."""

    def _launch(self, image, stage, scratch, data_root, sink, on_event, gpu):
        on_event("start", json.loads(Path(stage, "plan.json").read_text())["jobs"][0], None)
        raise EngineLost(LOST)


def _lose_the_engine(tmp_path, monkeypatch, reporter):
    real = executors.get
    monkeypatch.setattr(executors, "get", lambda *args: LosesItsEngine())
    options = RunOptions(
        frameworks=["torch"], executor="local", variants=["imdb-gru-synthetic"], batch_sizes=[8, 16], quick=True
    )
    with pytest.raises(EngineLost) as err:
        runs.run("imdb-gru", options, results_dir=tmp_path, reporter=reporter)
    monkeypatch.setattr(executors, "get", real)
    return err.value


def test_a_lost_engine_keeps_the_bundle_partial_with_its_jobs_interrupted(tmp_path, monkeypatch, reporter):
    err = _lose_the_engine(tmp_path, monkeypatch, reporter)
    (partial,) = tmp_path.glob(".*.partial")
    bundle_id = partial.name[1 : -len(".partial")]
    assert str(err) == (
        "%s while job %s was running; the run stopped (2 interrupted), its bundle kept partial: %s"
        % (LOST, B8, partial)
    )
    assert err.remedy == (
        "start the engine again (e.g. `sudo systemctl start docker`), then `dlrepro run --resume "
        "%s` as soon as it answers: it runs the interrupted jobs, and an image it builds first "
        "waits for the build steps the lost engine left running on this host" % bundle_id
    )
    results = {j: json.loads((partial / "jobs" / j / "result.json").read_text()) for j in (B8, B16)}
    assert {j: r["status"] for j, r in results.items()} == {B8: "interrupted", B16: "interrupted"}
    assert results[B8]["reason"] == "interrupted by the machine: %s while this job ran" % LOST
    assert results[B16]["reason"] == "interrupted by the machine: %s before this job started" % LOST
    body = json.loads((partial / "bundle.json").read_text())
    assert body["state"] == "partial" and "running" not in body and body["attempts"][0]["lost"] == LOST
    assert reporter.finished == {B8: "interrupted", B16: "interrupted"}
    # a plain resume (no --retry-failed) runs them again
    path = runs.run(None, RunOptions(), results_dir=tmp_path, reporter=reporter, resume="latest")
    assert reporter.total == 2 and validate.check(path) == []
    body = json.loads((path / "bundle.json").read_text())
    assert body["counts"] == {"ok": 2, "failed": 0, "skipped": 0} and body["attempts"][1]["jobs"] == [B8, B16]
    assert json.loads((path / "jobs" / B8 / "attempts" / "1" / "result.json").read_text())["status"] == "interrupted"


def test_a_bundle_published_with_interrupted_jobs_validates(tmp_path, monkeypatch, reporter):
    _lose_the_engine(tmp_path, monkeypatch, reporter)
    path = recover.finalize("latest", tmp_path)
    body = json.loads((path / "bundle.json").read_text())
    assert body["counts"] == {"ok": 0, "failed": 0, "skipped": 0, "interrupted": 2}
    assert [r["status"] for r in body["jobs"]] == ["interrupted", "interrupted"] and validate.check(path) == []


def test_a_resume_refuses_a_file_changed_after_it_was_recorded(tmp_path, reporter):
    options = RunOptions(
        frameworks=["torch"], executor="local", variants=["imdb-gru-synthetic"], batch_sizes=[8], quick=True
    )
    path = runs.run("imdb-gru", options, results_dir=tmp_path, reporter=reporter)
    sums = (path / "SHA256SUMS").read_text()
    with open(path / "jobs" / B8 / "log.txt", "a") as log:
        log.write("written after the run\n")
    with pytest.raises(BundleError) as err:
        runs.run(None, RunOptions(), results_dir=tmp_path, resume=path.name, retry_failed=True)
    assert str(err.value) == (
        "%s: jobs/%s/log.txt changed since SHA256SUMS recorded it: the bundle is not reopened, "
        "so that no checksum is written over a changed file" % (path, B8)
    )
    assert err.value.remedy.startswith("restore it as recorded")
    assert path.is_dir() and (path / "SHA256SUMS").read_text() == sums  # left as it was: published, sums unchanged
    assert [p.file for p in validate.check(path)] == ["jobs/%s/log.txt" % B8]


def _bundle(results, bundle_id, spec, state, created):
    folder = results / (".%s.partial" % bundle_id if state == "partial" else bundle_id)
    folder.mkdir(parents=True)
    (folder / "bundle.json").write_text(
        json.dumps(
            {"id": bundle_id, "created": created, "state": state, "spec": {"name": spec}, "jobs": [], "plan": []}
        )
    )
    return folder


def test_latest_is_the_newest_partial_bundle_of_the_given_spec(tmp_path):
    older = _bundle(tmp_path, "fcn-1", "fcn", "partial", "2026-12-01T10:00:00Z")
    other = _bundle(tmp_path, "alexnet-2", "alexnet", "partial", "2026-12-01T11:00:00Z")
    _bundle(tmp_path, "fcn-3", "fcn", "published", "2026-12-01T12:00:00Z")
    assert bundlemod.locate("latest", tmp_path, partial=True) == other
    assert bundlemod.locate("latest", tmp_path, partial=True, spec="fcn") == older  # not the newer published one
    with pytest.raises(DlreproError) as err:
        bundlemod.locate("latest", tmp_path, partial=True, spec="lstm")
    assert str(err.value) == "latest: no bundle of spec lstm under %s" % tmp_path


def test_latest_never_reopens_a_published_bundle(tmp_path):
    published = _bundle(tmp_path, "fcn-3", "fcn", "published", "2026-12-01T12:00:00Z")
    with pytest.raises(DlreproError) as err:
        runs.run("fcn", RunOptions(), results_dir=tmp_path, resume="latest")
    assert str(err.value) == (
        "latest: no partial bundle of spec fcn under %s; the newest of spec fcn, fcn-3, is "
        "complete and is not reopened as 'latest'" % tmp_path
    )
    assert err.value.remedy == (
        "name it to run its skipped or failed jobs again (`dlrepro run --resume fcn-3`, with "
        "--retry-failed for the failed ones), or start a new run"
    )
    assert json.loads((published / "bundle.json").read_text())["state"] == "published"
