"""What a resume continues: the bundle's spec and measurement options, checked against what is given again, and
which of its jobs run again."""

import json
from pathlib import Path

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError
from dlrepro.inputs import spec as specmod
from dlrepro.names import unknown as unknown_name
from dlrepro.run.executors.base import LOST
from dlrepro.run.options import WHERE, RunOptions


def _changes(then, now, where="", limit=5):
    """Up to ``limit`` differences between two resolved specs, each ``FIELD: THEN there, NOW here``."""
    if isinstance(then, dict) and isinstance(now, dict):
        found = []
        for key in list(then) + [k for k in now if k not in then]:
            found += _changes(then.get(key), now.get(key), "%s.%s" % (where, key) if where else key, limit)
        return found[:limit]
    return [] if then == now else ["%s: %s there, %s here" % (where, json.dumps(then), json.dumps(now))]


def checked(prior, spec_name, options):
    """(spec, its file, options) of a resume of the bundle whose bundle.json is ``prior``: its spec, which must still
    hash as recorded, and its measurement options (options given again must be the same; where it runs may change).
    Raises DlreproError naming what differs."""
    record = prior["spec"]
    path = (
        Path(spec_name)
        if spec_name and Path(spec_name).suffix in (".yaml", ".yml")
        else specmod.spec_path(spec_name)
        if spec_name
        else (REPO_ROOT / record["file"])
    )
    spec = specmod.load(str(path))
    if spec.name != record["name"]:
        raise DlreproError("--resume: the bundle ran spec %s, not %s" % (record["name"], spec.name))
    if spec.digest() != record["sha256"]:  # the rule: the resolved spec must match; comments and layout may change
        commit = ((prior.get("suite") or {}).get("git") or {}).get("commit")  # a partial bundle has none yet
        raise DlreproError(
            "--resume: spec %s has changed since the bundle ran: %s"
            % (
                path,
                "; ".join(_changes(record.get("resolved") or {}, spec.model_dump(mode="json")))
                or "resolved sha256 %s now, %s recorded" % (spec.digest()[:12], record["sha256"][:12]),
            ),
            "restore the spec file as it was (sha256 %s%s), or start a new run"
            % (
                (record.get("file_sha256") or "not recorded")[:12],
                "; `git log -- %s` finds it" % record["file"]
                if not commit
                else ", %s at commit %s" % (record["file"], commit),
            ),
        )
    recorded = RunOptions(**prior["options"])
    if options.executor is None:  # not given: where the bundle ran
        options = options.model_copy(update={"executor": recorded.executor})
    where = WHERE
    given = options.model_dump(exclude=where)
    if given != RunOptions().model_dump(exclude=where) and options.digest() != recorded.digest():
        differ = sorted(k for k, v in given.items() if v != getattr(recorded, k))
        raise DlreproError(
            "--resume: the bundle was measured with other options: %s"
            % ", ".join("%s=%r there, %r here" % (k, getattr(recorded, k), given[k]) for k in differ),
            "resume without measurement options (the bundle's are used), or start a new run",
        )
    return spec, path, recorded.model_copy(update={k: getattr(options, k) for k in where})


def known(jobs, rerun):
    """Raise DlreproError naming the near miss when a job id of ``rerun`` is none of ``jobs``' (the bundle's)."""
    ids = [job["id"] for job in jobs]
    unknown = [j for j in rerun or [] if j not in ids]
    if unknown:
        raise DlreproError(
            "--rerun: the bundle has no job %s" % ", ".join(unknown_name(j, ids) for j in unknown),
            "give job ids of the bundle (the folders under its jobs/), comma-separated",
        )


def to_run(jobs, statuses, retry_failed=False, rerun=None):
    """The jobs a resume runs: those without a result, skipped or lost (``statuses``: {job id: status}), the failed
    ones with ``retry_failed``, and the ids ``rerun`` whatever their result."""
    return [
        j
        for j in jobs
        if statuses.get(j["id"]) in (None, "skipped", LOST)
        or (retry_failed and statuses.get(j["id"]) == "failed")
        or j["id"] in (rerun or ())
    ]
