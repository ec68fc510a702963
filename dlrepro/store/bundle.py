"""Result bundles, schema ``dlrepro.bundle/3``: one self-describing folder per run.

    results/<spec>-<UTC yyyymmddThhmmssZ>-<config hash>/
        bundle.json      schema, suite version and git commit, command, resolved spec and its hash,
                         run options, executor, host, images (tag, image ID, base, recipe digest),
                         datasets (files, SHA-256, source), one summary entry per job, status counts,
                         state ("partial" | "complete"; older bundles say "published") and the attempts that wrote it
        jobs/<job id>/   job.json, result.json, log.txt; attempts/<n>/ the results of earlier attempts
        images/<name>/   Dockerfile, requirements.lock, pip-freeze.txt, dpkg.txt (docker executor)
        summary.parquet  one row per job, with provenance columns (dlrepro.store.tables)
        summary.csv      the same rows as CSV
        samples.parquet  one row per measured iteration, epoch or inference pass
        SHA256SUMS       every other file, `sha256sum -c` format

The config hash is the digest of the resolved spec and the run options, so runs of the same
configuration share it. A run writes its bundle under ``results/.<id>.partial``: bundle.json (state
"partial", the planned jobs, the attempts) from its start, each job's result the moment the job
ends (moved in whole by a rename, so the folder is consistent at every instant), and the running
jobs' scratch output under ``.work/``, where a killed run leaves what those jobs measured. ``finish``
writes the tables and SHA256SUMS and renames it into place; a published bundle is never modified
afterwards, except by a resume that names it (``reopen``; "latest" is only ever a partial bundle),
which checks every file against SHA256SUMS (a changed file stops it), moves it back, runs what is
missing and publishes it again with its tables and checksums rebuilt. A results folder that cannot be written
(full, read-only) raises ResultsUnwritable naming it; what was measured stays in the partial bundle.
"""

import errno
import functools
import json
import os
import re
import shutil
from pathlib import Path

from dlrepro import __version__, checkout, folders
from dlrepro.errors import BundleError, DlreproError, ResultsUnwritable
from dlrepro.files import parse_sums, sha256_file, sums_text
from dlrepro.store import tables
from runner.contract import utc_now, write_json

SCHEMA = "dlrepro.bundle/3"  # 3: state and attempts (resumable partial bundles); 2: tidy tables; 1: summary.csv only
# a job's status: "interrupted" is a job the machine lost (its engine went away, its node failed, it was preempted),
# run again by a plain resume; "failed" failed on its own (--retry-failed runs it again)
STATUSES = ("ok", "failed", "skipped", "interrupted")
WORK = ".work"  # scratch output of running jobs, inside the partial bundle
LOCK = "owner.lock"  # in WORK: the lock of the process that writes the bundle (dlrepro.run.lock), kept to the end
NOT_WRITABLE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG)


COMPLETE = "complete"  # a finished bundle's state; bundles written before the rename say OLD_COMPLETE
OLD_COMPLETE = "published"


def state(found):
    """The state of bundle.json ``found``: "partial" or "complete" (an old bundle's "published", or none, is
    complete)."""
    value = found.get("state", COMPLETE)
    return COMPLETE if value == OLD_COMPLETE else value


def results_root():
    """The results folder when none is given: $DLREPRO_RESULTS, else the checkout's results/."""
    return folders.results_root()


def _partial_name(bundle_id):
    return ".%s.partial" % bundle_id


def counts(statuses):
    """{status: how many} of a list of job statuses: ok, failed and skipped always, interrupted when any is (a
    bundle written before that status existed counts the same)."""
    found = {s: statuses.count(s) for s in STATUSES}
    if not found["interrupted"]:
        del found["interrupted"]
    return found


def _holds_bundle(folder):
    """Whether ``folder`` holds a bundle.json: False for a name the system cannot look up (OSError: one too long)."""
    try:
        return (folder / "bundle.json").is_file()
    except OSError:
        return False


def locate(name, results_dir=None, partial=False, spec=None):
    """The absolute folder of bundle ``name``: a path, a bundle id under the results folder, or (``partial``) the
    partial bundle of that id, or "latest": the most recently created partial bundle (of spec ``spec`` when given; a
    published bundle is never "latest", it is reopened only when named). Raises DlreproError naming what to
    give."""
    results_dir = Path(results_dir or results_root())
    if partial and name == "latest":
        rows = [r for r in listing(results_dir) if spec is None or r["spec"] == spec]
        found = [r for r in rows if r["state"] == "partial"]
        if found:
            return found[-1]["folder"]
        of = " of spec %s" % spec if spec else ""
        if rows:
            raise DlreproError(
                "latest: no partial bundle%s under %s; the newest%s, %s, is %s and is not reopened as "
                "'latest'" % (of, results_dir, of, rows[-1]["id"], rows[-1]["state"]),
                "name it to run its skipped or failed jobs again (`dlrepro run --resume %s`, with "
                "--retry-failed for the failed ones), or start a new run" % rows[-1]["id"],
            )
        raise DlreproError("latest: no bundle%s under %s" % (of, results_dir), "start a run: `dlrepro run --spec NAME`")
    candidates = [Path(name), results_dir / name] + ([results_dir / _partial_name(name)] if partial else [])
    for folder in candidates:
        if _holds_bundle(folder):
            return folder.absolute()  # a container engine mounts absolute paths only
    raise DlreproError(
        "%s: no bundle.json there; give a bundle folder or the id of one under %s (another "
        "results folder: --results DIR)%s" % (name, results_dir, "; `dlrepro bundles` lists them" if partial else "")
    )


def body(folder):
    """bundle.json of the bundle in ``folder`` as a dict; raises BundleError when it cannot be read."""
    path = Path(folder) / "bundle.json"
    try:
        found = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BundleError(
            "%s: cannot be read (%s); `dlrepro validate %s` lists what is wrong" % (path, exc, folder)
        ) from None
    if not isinstance(found, dict) or "spec" not in found or "jobs" not in found:
        raise BundleError(
            "%s: not a bundle's bundle.json (no spec or jobs); `dlrepro validate %s` lists what is wrong"
            % (path, folder)
        )
    return found


def _statuses(folder, job_ids):
    """{job id: status of its result.json, or None when it has none}."""
    found = {}
    for job_id in job_ids:
        path = Path(folder) / "jobs" / job_id / "result.json"
        try:
            found[job_id] = json.loads(path.read_text())["status"] if path.is_file() else None
        except (OSError, ValueError, KeyError):
            found[job_id] = None
    return found


def listing(results_dir=None):
    """Every bundle under the results folder, oldest first: {id, folder, state, spec, created, counts (ok,
    failed, skipped, interrupted when any, missing), running ({host, pid} of a run writing it, or None),
    submitted (ids of scheduler arrays whose results are still to be taken), devices (its jobs' device
    classes), hardware (the GPU names, one per GPU, on cuda; else the CPU model), frameworks (codes), precision
    (the run's: fp32, tf32, bf16, fp16), next (what to type next, next_step; "" when nothing is left to do)}."""
    rows = []
    for path in sorted(Path(results_dir or results_root()).glob("*/bundle.json")):  # pathlib's * matches .<id>.partial
        try:
            found = body(path.parent)
        except BundleError:
            continue
        plan = found.get("plan") or [r["job_id"] for r in found["jobs"]]
        statuses = list(_statuses(path.parent, plan).values())
        options, host = found.get("options") or {}, found.get("host") or {}
        devices = sorted({j["device"] for j in found["jobs"] if j.get("device")} or {options.get("device") or "cpu"})
        row = {
            "id": found.get("id"),
            "folder": path.parent,
            "state": state(found),
            "spec": found["spec"]["name"],
            "created": found.get("created"),
            "counts": dict(counts(statuses), missing=statuses.count(None)),
            "running": found.get("running"),
            "submitted": [r["array_id"] for r in found.get("submitted") or [] if not r.get("collected")],
            "devices": devices,
            "hardware": [g["name"] for g in host.get("gpus") or []]
            if "cuda" in devices and host.get("gpus")
            else [(host.get("cpu") or {}).get("model", "")],
            "frameworks": sorted(
                {j["framework"] for j in found["jobs"] if j.get("framework")} or set(options.get("frameworks") or [])
            ),
            "precision": options.get("precision") or "fp32",
        }
        rows.append(dict(row, next=next_step(row, found["jobs"])))
    return sorted(rows, key=lambda r: (r["created"] or "", r["id"] or ""))


def existing_root(results_dir=None):
    """The results folder (``results_dir``, else results_root()); raises DlreproError naming it when it does not
    exist, so that a bundle id looked up there is not reported as a missing bundle."""
    root = Path(results_dir or results_root())
    if not root.is_dir():
        raise DlreproError(
            "--results %s: no such folder" % root,
            "give the folder the bundles were written to (default: the checkout's results/, or DLREPRO_RESULTS)",
        )
    return root


def latest_complete(results_dir=None):
    """The folder of the newest complete bundle under the results folder: what "latest" names for the tasks that
    read a finished bundle (report, check, compare, validate, archive; a resume's "latest" is the newest partial
    one, ``locate``). Raises DlreproError when the folder is missing or holds no complete bundle."""
    root = existing_root(results_dir)
    found = [r for r in listing(root) if r["state"] != "partial"]
    if not found:
        raise DlreproError("latest: no complete bundle under %s" % root, "start a run: `dlrepro run --spec NAME`")
    return found[-1]["folder"]


def next_step(row, jobs):
    """The one command to type next for the bundle of listing row ``row`` and bundle.json jobs ``jobs``: the
    remedy its first skipped or failed job recorded, where that names a command (one that older bundles
    recorded as `invoke TASK`, the checkout's spelling, as `dlrepro TASK`); else the resume that runs its
    missing, skipped or interrupted jobs (and, for a partial bundle no scheduler array holds, the finalize
    that closes it as it is); else the retry of its failed jobs; "" when every job is ok."""
    c, bundle_id = row["counts"], row["id"]
    for job in jobs if c["skipped"] or c["failed"] else ():
        command = re.search(r"`([^`]+)`", job.get("remedy") or "")
        if job.get("status") in ("skipped", "failed") and command:
            return re.sub(r"^invoke ", "dlrepro ", command.group(1))
    if row["state"] == "partial" or c["missing"] or c["skipped"] or c.get("interrupted"):
        return "dlrepro run --resume %s" % bundle_id + (
            "; or dlrepro finalize %s" % bundle_id if row["state"] == "partial" and not row["submitted"] else ""
        )
    return "dlrepro run --resume %s --retry-failed" % bundle_id if c["failed"] else ""


def _unchanged(folder):
    """Raise BundleError when a file that the SHA256SUMS of the bundle in ``folder`` lists is missing or differs
    from its recorded SHA-256 (a bundle without SHA256SUMS, never published, has nothing recorded)."""
    sums = Path(folder) / "SHA256SUMS"
    if not sums.is_file():
        return
    listed, _ = parse_sums(sums.read_text(errors="replace"))
    changed = [
        name
        for name, digest in listed.items()
        if not (Path(folder) / name).is_file() or sha256_file(Path(folder) / name) != digest
    ]
    if changed:
        raise BundleError(
            "%s: %s changed since SHA256SUMS recorded %s: the bundle is not reopened, so that no "
            "checksum is written over a changed file"
            % (folder, ", ".join(changed), "it" if len(changed) == 1 else "them"),
            "restore %s as recorded (from the bundle's archive or a copy), or start a new run; "
            "`dlrepro validate %s` lists every problem" % ("it" if len(changed) == 1 else "them", folder),
        )


def _writes(method):
    """Turn a failed write of the results folder (full, read-only, no permission) into ResultsUnwritable; a writer
    whose lock (``owner``) another process took over writes nothing (its ResultsUnwritable)."""

    @functools.wraps(method)
    def wrapped(self, *args, **kwargs):
        if self.owner is not None:
            self.owner.check()
        try:
            return method(self, *args, **kwargs)
        except OSError as exc:
            if exc.errno not in NOT_WRITABLE:
                raise
            raise self.unwritable(exc) from None

    return wrapped


class BundleWriter:
    """Writes a run into ``results/.<id>.partial`` (a new bundle, or a reopened one) and publishes it."""

    def __init__(self, results_dir, spec_name, config_digest):
        self.created = utc_now()
        stamp = self.created.replace("-", "").replace(":", "")
        self.results_dir = Path(results_dir)
        base, n = "%s-%s-%s" % (spec_name, stamp, config_digest[:8]), 1
        try:
            self.results_dir.mkdir(parents=True, exist_ok=True)
            while True:  # the partial folder reserves the id; a second run in the same second gets -2, -3, ...
                self.id = base if n == 1 else "%s-%d" % (base, n)
                self.partial = self.results_dir / _partial_name(self.id)
                if not (self.results_dir / self.id).exists():
                    try:
                        self.partial.mkdir()
                        break
                    except FileExistsError:
                        pass
                n += 1
            self.jobs_dir.mkdir()
        except OSError as exc:
            if exc.errno not in NOT_WRITABLE:
                raise
            raise ResultsUnwritable(
                "results folder %s cannot be written (%s): nothing was run" % (self.results_dir, exc.strerror),
                "free space or choose a writable folder (--results)",
            ) from None
        self.body = {
            "schema": SCHEMA,
            "id": self.id,
            "created": self.created,
            "state": "partial",
            "jobs": [],
            "attempts": [],
        }
        self.job_ids = []  # in the order first written: the order of the bundle's rows
        self.owner = None  # the lock this process holds on the bundle (dlrepro.run.lock.Lock), once taken

    @classmethod
    def reopen(cls, folder, owner=None):
        """The writer of an existing bundle for a resume: a partial one as it is, a published one moved back to
        ``.<id>.partial`` once every file matches its SHA256SUMS (its tables and checksums are rebuilt when it is
        published again). The caller makes sure that no live run writes it: ``owner``, the lock it took on
        ``folder`` (dlrepro.run.lock), follows the folder to ``.<id>.partial``. Raises
        BundleError naming each file changed or missing since SHA256SUMS recorded it (nothing is then moved):
        checksums are never written again over a changed file."""
        folder = Path(folder)
        found = body(folder)
        _unchanged(folder)
        self = cls.__new__(cls)
        self.results_dir, self.id, self.created = folder.parent, found["id"], found["created"]
        self.partial, self.owner = self.results_dir / _partial_name(self.id), owner
        if folder != self.partial:
            os.rename(folder, self.partial)
            if owner is not None:
                owner.moved(self.partial)
        if (self.partial / "SHA256SUMS").is_file():  # verified: written again by finish
            (self.partial / "SHA256SUMS").unlink()
        found["state"] = "partial"
        self.body = found
        self.body.setdefault("attempts", [])
        self.job_ids = list(found.get("plan") or [r["job_id"] for r in found["jobs"]])
        return self

    @property
    def jobs_dir(self):
        return self.partial / "jobs"

    @property
    def work_dir(self):
        """Scratch output of the running jobs (inside the partial bundle, so that a killed run leaves it)."""
        return self.partial / WORK

    def unwritable(self, exc):
        free = shutil.disk_usage(self.results_dir).free if self.results_dir.exists() else None
        return ResultsUnwritable(
            "results folder %s cannot be written (%s%s): the run stopped; what was measured is kept in %s"
            % (self.results_dir, exc.strerror, ", %d bytes free" % free if free is not None else "", self.partial),
            "free space or make it writable, then `dlrepro run --resume %s`" % self.id,
        )

    def job_dir(self, job_id):
        return self.jobs_dir / job_id

    def statuses(self):
        """{job id: the status of its result, or None} for every planned job."""
        return _statuses(self.partial, self.job_ids)

    @_writes
    def save(self, **updates):
        """bundle.json of the partial bundle, with ``updates`` (the planned jobs, the running attempt, ...)."""
        self.body.update(updates, plan=self.job_ids)
        write_json(str(self.partial / "bundle.json"), self.body)

    @_writes
    def write_job(self, job):
        if job["id"] not in self.job_ids:
            self.job_ids.append(job["id"])
        self.job_dir(job["id"]).mkdir(parents=True, exist_ok=True)
        write_json(str(self.job_dir(job["id"]) / "job.json"), job)

    @_writes
    def write_result(self, job_id, result):
        write_json(str(self.job_dir(job_id) / "result.json"), result)

    def read_result(self, job_id):
        return json.loads((self.job_dir(job_id) / "result.json").read_text())

    @_writes
    def accept(self, job_id, source, stamp):
        """Take the result.json (and log.txt) that a job left in folder ``source`` into the bundle, with
        ``stamp`` (its attempt: number, host, executor) added: the log first, then the result, each by a rename,
        so the bundle holds either the whole finished job or nothing of it. Returns the result."""
        source, target = Path(source), self.job_dir(job_id)
        target.mkdir(parents=True, exist_ok=True)
        if (source / "log.txt").is_file():
            os.replace(source / "log.txt", target / "log.txt")
            if os.geteuid() == 0:  # written in a container as its non-root user
                os.chown(target / "log.txt", 0, 0)
        result = json.loads((source / "result.json").read_text())
        result["attempt"] = stamp
        write_json(str(source / "result.json"), result)
        os.replace(source / "result.json", target / "result.json")
        return result

    @_writes
    def retire(self, job_id):
        """Move a job's result and log of an earlier attempt to jobs/<id>/attempts/<n>/ before it runs again."""
        current = self.job_dir(job_id)
        if not (current / "result.json").is_file():
            return
        attempts = current / "attempts"
        n = 1 + len(list(attempts.glob("*"))) if attempts.is_dir() else 1
        (attempts / str(n)).mkdir(parents=True)
        for name in ("result.json", "log.txt"):
            if (current / name).is_file():
                os.replace(current / name, attempts / str(n) / name)

    @_writes
    def keep(self, name, text):
        """Keep a launch record (e.g. the batch script of a Slurm array) as file ``name`` of the bundle (in its
        SHA256SUMS and archive once published); returns its path."""
        path = self.partial / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def submitted(self, record):
        """Record (or update) a submission to a scheduler in bundle.json's ``submitted`` (named by its
        ``array_id``): jobs that run, or wait to run, outside this process."""
        found = list(self.body.get("submitted") or [])
        at = [i for i, r in enumerate(found) if r["array_id"] == record["array_id"]]
        if at:
            found[at[0]] = record
        else:
            found.append(record)
        self.save(submitted=found)

    def pending(self):
        """The submissions whose jobs have not all been taken into the bundle yet."""
        return [r for r in self.body.get("submitted") or [] if not r.get("collected")]

    @_writes
    def add_image(self, built):
        folder = self.partial / "images" / built.image.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "Dockerfile").write_text(built.dockerfile)
        for name, text in built.manifests.items():
            (folder / name).write_text(text)

    @_writes
    def finish(self, body):
        """Write bundle.json (with one summary row per job and the status counts), the tidy tables and
        SHA256SUMS, then rename into place; returns the bundle path. The scratch output goes first, but the lock
        (``owner``) stays in ``.work`` (outside SHA256SUMS) until the published folder is in place: only then is it
        given up, so no other process can take the bundle while it is published."""
        for path in list(self.work_dir.iterdir()) if self.work_dir.is_dir() else []:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            elif not path.name.startswith(LOCK):  # the lock and its breaker's stay
                path.unlink()
        body = dict(
            self.body,
            **body,
            schema=SCHEMA,
            id=self.id,
            created=self.created,
            finished=utc_now(),
            state=COMPLETE,
            suite={"version": __version__, "git": checkout.state()},
        )
        body.pop("running", None)
        body.pop("plan", None)
        rows, samples = tables.build(self.partial, body, self.job_ids)
        body.update(jobs=rows, counts=counts([r["status"] for r in rows]))
        tables.write(self.partial, rows, samples)
        write_json(str(self.partial / "bundle.json"), body)
        (self.partial / "SHA256SUMS").write_text(
            sums_text(
                {
                    p.relative_to(self.partial).as_posix(): sha256_file(p)
                    for p in self.partial.rglob("*")
                    if p.is_file() and p.name != "SHA256SUMS" and p.relative_to(self.partial).parts[0] != WORK
                }
            )
        )
        published = self.results_dir / self.id
        if self.owner is not None:
            self.owner.check()
        os.rename(self.partial, published)
        if self.owner is not None:
            self.owner.moved(published)
            self.owner.release()
        shutil.rmtree(published / WORK, ignore_errors=True)
        return published
