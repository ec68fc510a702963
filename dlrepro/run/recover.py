"""What the attempts of a bundle that died or lost their engine left behind, taken back: their containers removed
(``containers_gone``), what their jobs had measured in their scratch output taken into the bundle (``recover``),
and a partial bundle closed as it is (``finalize``). A resume (dlrepro.run.runs) does the first two before it
runs anything."""

from pathlib import Path

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError
from dlrepro.run import lock
from dlrepro.run.executors.base import LOST, settle
from dlrepro.store import bundle as bundlemod
from dlrepro.store.bundle import BundleWriter
from runner.contract import new_result, utc_now

KILLED = "the run was killed before this job finished"


def scratch_roots(writer):
    """The folders under which the attempts of ``writer``'s bundle had their supervisors' output (``scratch_root``):
    its work folder's, and those of the worker pools its attempts ran in."""
    return sorted(writer.work_dir.glob("attempt-*")) + [
        Path(a["pool"]["scratch"]) for a in writer.body["attempts"] if a.get("pool")
    ]


def containers_gone(writer):
    """Make sure that no container of an earlier docker attempt of the bundle still runs (found by the run label, or
    the label of the study's worker pool it ran in, of a study no longer running; one whose engine went away may
    have lived on), so that what it left can be taken; returns a line per container removed. Raises ExecutorError
    when the engine does not answer."""
    docker = [a for a in writer.body["attempts"] if a.get("executor") == "docker"]
    if not docker or not any(root.is_dir() for root in scratch_roots(writer)):
        return []
    from dlrepro.run.executors import docker as docker_executor

    pools = sorted({a["pool"]["id"] for a in docker if a.get("pool")})
    return docker_executor.remove_run(writer.id) + [
        line for pool in pools for line in docker_executor.remove_run(pool, dead_only=True)
    ]


def recover(writer, stamp):
    """Take into the bundle what jobs of dead attempts left in its scratch output (in its work folder, or in the
    worker pool of the study it ran in; their containers gone:
    ``containers_gone``): their unfinished results, with what they measured, marked skipped (the run was
    killed) or, for a job the machine lost, interrupted with the recorded reason; returns their ids."""
    taken = []
    for folder in [f for root in scratch_roots(writer) for f in sorted(root.glob("*/*"))]:
        if not folder.is_dir() or folder.name not in writer.job_ids:
            continue
        recorded = writer.read_result(folder.name) if writer.statuses()[folder.name] == LOST else None
        if settle(folder, LOST, recorded["reason"]) if recorded else settle(folder, "skipped", KILLED):
            writer.accept(folder.name, folder, stamp)
            taken.append(folder.name)
    return taken


NOT_RUN = "not run: the bundle was finalized as it was, before this job ran"


def finalize(bundle, results_dir=REPO_ROOT / "results"):
    """Finalize a partial bundle (id, folder or "latest") as it is, its state complete: what dead attempts left of
    running jobs is kept (marked skipped), the jobs that never ran are recorded as skipped (NOT_RUN); returns the bundle
    path. Raises DlreproError for a bundle that is not partial or that a live run is writing."""
    folder = bundlemod.locate(bundle, results_dir, partial=True)
    found = bundlemod.body(folder)
    if found.get("state") != "partial":
        raise DlreproError("%s is complete already" % folder, "`dlrepro bundles` lists the partial ones")
    owner = lock.take(folder)
    if [r for r in found.get("submitted") or [] if not r.get("collected")]:
        owner.release()
        raise DlreproError(
            "%s has jobs submitted to Slurm whose results are not taken yet" % folder,
            "`dlrepro run --resume %s` waits for them (scancel them first to stop them)" % found["id"],
        )
    writer = BundleWriter.reopen(folder, owner)
    last = (writer.body["attempts"] or [{"number": 0, "host": None, "executor": None}])[-1]
    stamp = {key: last.get(key) for key in ("number", "host", "executor")}
    recover(writer, stamp)
    for job_id, status in writer.statuses().items():
        if status is None:
            result = new_result(job_id, "skipped", reason=NOT_RUN)
            result["started"] = result["finished"] = utc_now()
            result["attempt"] = stamp
            writer.write_result(job_id, result)
    path = writer.finish({"interrupted": True})
    owner.release()
    return path
