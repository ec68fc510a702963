"""Study records, the store's other half: what a study run asked for, each of its runs' plan, state and bundle.

    results/studies/<study>-<UTC stamp>.json   written by dlrepro.run.study as runs start and end (SCHEMA)

``find`` is the one way to name a record (a record file, or a study name: its latest record found anywhere under
the results folder); ``manifest`` gives the study manifest the record was made from, as recorded (today's file when
its SHA-256 is the recorded one, else the file at the record's commit from git); ``bundles`` gives the bundle
folder of each run and the bundle ids the results folder lacks.
"""

import json
import re
import tempfile
from pathlib import Path

from dlrepro import REPO_ROOT, __version__, checkout, names
from dlrepro.errors import DlreproError, SpecError
from dlrepro.files import sha256_file
from dlrepro.inputs import studies
from dlrepro.store import bundle as bundlemod
from runner.contract import utc_now, write_json

SCHEMA = "dlrepro.study/1"
STAMP = re.compile(r"^(?P<study>.+)-(?P<stamp>\d{8}T\d{6}(?:\.\d+)?Z)\.json$")


def records_dir(results_dir):
    """Where a study writes its records: RESULTS/studies/."""
    return Path(results_dir) / "studies"


def shown(path):
    """A path relative to the repository where it lies inside it, else its name: no machine path in a report."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(REPO_ROOT.resolve()))
    except ValueError:
        return path.name if path.is_absolute() else str(path)


class Record:
    """One study record: ``path`` and its JSON ``body``; rewritten (save) as the study's runs start and end."""

    def __init__(self, path, body):
        self.path, self.body = Path(path), body

    @classmethod
    def new(cls, study, manifest, results_dir, asked):
        """A record of a new run of ``study`` (studies.Study) from manifest file ``manifest``, not yet saved."""
        stamp = utc_now().replace("-", "").replace(":", "")
        path = records_dir(results_dir) / ("%s-%s.json" % (study.name, stamp))
        recorded = (
            manifest.resolve().relative_to(REPO_ROOT) if manifest.resolve().is_relative_to(REPO_ROOT) else manifest
        )
        return cls(
            path,
            {
                "schema": SCHEMA,
                "study": study.name,
                "created": utc_now(),
                "manifest": {"file": str(recorded), "sha256": sha256_file(manifest)},
                "asked": asked,
                "suite": {"version": __version__, "git": checkout.state()},
                "runs": {},
            },
        )

    def save(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json(str(self.path), self.body)


def _read(path):
    """The Record in file ``path``; raises DlreproError naming the file when it is not one (unreadable, not JSON,
    or JSON of another schema than SCHEMA)."""
    remedy = "give a study record (results/studies/<study>-<stamp>.json, `dlrepro study` writes them) or a study name"
    try:
        body = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise DlreproError("%s: not a study record (%s)" % (shown(path), exc), remedy) from None
    schema = body.get("schema") if isinstance(body, dict) else None
    if schema != SCHEMA:
        raise DlreproError(
            "%s: not a study record (schema %s; this file's: %s)"
            % (shown(path), SCHEMA, schema if isinstance(schema, str) else "none"),
            remedy,
        )
    return Record(path, body)


def find(name, results_dir):
    """The Record of ``name``: a record file, or the latest record of exactly study ``name`` anywhere under
    ``results_dir`` (**/<name>-<YYYYMMDDTHHMMSSZ>.json; a resume looks in records_dir only). Raises DlreproError
    naming what to give instead."""
    path = Path(name)
    if path.is_file():
        return _read(path)
    if path.suffix == ".json" or len(path.parts) > 1:  # a file named, not a study
        records = sorted(p.name for p in Path(results_dir).rglob("*.json") if STAMP.match(p.name))
        raise DlreproError(
            "%s: no such study record file" % name,
            "give one of the records under %s (%s), or a "
            "study name" % (shown(results_dir), ", ".join(records) or "none"),
        )
    found = sorted(
        (m.group("stamp"), p)
        for p in Path(results_dir).rglob("%s-*.json" % name)
        if (m := STAMP.match(p.name)) and m.group("study") == name
    )
    if found:
        return _read(found[-1][1])
    known = studies.available()
    if name not in known:
        raise DlreproError(
            "%s: no such study%s; studies: %s" % (name, names.near_miss(name, known), ", ".join(known)),
            "give a study name or a record file (results/studies/<study>-<stamp>.json)",
        )
    raise DlreproError(
        "no study record of %s under %s" % (name, shown(results_dir)),
        "give the record file (results/**/%s-<stamp>.json), or start the study: "
        "`dlrepro study %s --quick`" % (name, name),
    )


def manifest(record):
    """(studies.Study, note): the manifest the record was made from. Today's file (the repository's, or a study
    file outside it at its recorded path) when its SHA-256 is the recorded one (note None); else the version at the
    record's commit (or any commit that has it), with a note saying so.
    Raises DlreproError when no version of the file has the recorded SHA-256, or when the recorded one does not
    validate under today's schema."""
    entry = record.body["manifest"]
    outside = Path(entry["file"])  # a study file of the user's own, outside the repository: no history to search
    if outside.is_absolute() and outside.is_file() and sha256_file(outside) == entry["sha256"]:
        return studies.load(str(outside)), None
    relpath = shown(entry["file"]) if outside.is_absolute() else entry["file"]
    commit = ((record.body.get("suite") or {}).get("git") or {}).get("commit")
    found = checkout.versioned_file(relpath, entry["sha256"], commit)
    today = REPO_ROOT / relpath
    today_sha = sha256_file(today) if today.is_file() else None
    if found is None:
        raise DlreproError(
            "%s: the manifest %s changed since the record was made (sha256 %s recorded, %s now) and "
            "the recorded one is not in git at commit %s"
            % (shown(record.path), relpath, entry["sha256"][:12], (today_sha or "no file")[:12], commit),
            "check out the commit the record names, or run the study again",
        )
    data, revision = found
    if revision is None:
        return studies.load(str(today)), None
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / Path(relpath).name
        copy.write_bytes(data)
        try:
            study = studies.load(str(copy))
        except SpecError as exc:  # a manifest of an older schema: its claims cannot be judged by today's rules
            first = str(exc).replace(str(copy), "%s@%s" % (relpath, revision[:12])).splitlines()[0]
            raise DlreproError(
                "%s: the manifest as recorded (%s at commit %s) does not validate under today's "
                "rules: %s" % (shown(record.path), relpath, revision[:12], first),
                "run the study again, or check out commit %s to rebuild this report" % revision[:12],
            ) from None
    return study, "judged by %s as recorded (sha256 %s, commit %s); today's file differs (sha256 %s)" % (
        relpath,
        entry["sha256"][:12],
        revision[:12],
        (today_sha or "no file")[:12],
    )


def bundles(record, results_dir):
    """({run id: bundle folder}, {run id: bundle id the record names that ``results_dir`` lacks})."""
    folders, missing = {}, {}
    for run_id, entry in record.body["runs"].items():
        if entry.get("bundle"):
            try:
                folders[run_id] = bundlemod.locate(entry["bundle"], results_dir, partial=True)
            except DlreproError:
                missing[run_id] = entry["bundle"]
    return folders, missing
