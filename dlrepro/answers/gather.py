"""From the store to the answer model, once per question: reads bundle folders (bundle.json, the tidy tables) and
study records (with their manifest as recorded), and builds the model of dlrepro.answers from them.

  bundles(names)            BundleAnswer of bundles named by folder, id or "latest" (``dlrepro report``, ``check``)
  comparison(a, b, ...)     Comparison of bundle b against bundle a (``dlrepro compare``)
  study(name, results_dir)  StudyAnswer of a study record (``dlrepro study-report``)

The only place the answer layer's inputs are read; every view renders what these return.
"""

from pathlib import Path

from dlrepro.answers import model
from dlrepro.answers import study as studyanswer
from dlrepro.errors import DlreproError
from dlrepro.inputs import spec as specmod
from dlrepro.plan import coverage_record
from dlrepro.store import bundle, records, tables


def _is_folder(name):
    """Whether ``name`` is a folder: False for a name the system cannot look up (OSError: one too long)."""
    try:
        return Path(name).is_dir()
    except OSError:
        return False


def folders(names, results_dir=None):
    """Bundle folders from paths, bundle ids under the results folder or "latest" (the newest complete bundle), in
    order, each once. Raises DlreproError for a name that is no bundle and for no name at all."""
    found = []
    for name in names:
        if name == "latest":
            folder = bundle.latest_complete(results_dir)
        else:
            folder = bundle.locate(name, results_dir if _is_folder(name) else bundle.existing_root(results_dir))
        if folder.resolve() not in {f.resolve() for f in found}:
            found.append(folder)
    if not found:
        raise DlreproError("no bundle given", "give bundle folders or ids, comma-separated, or 'latest'")
    return found


def bundles(names, results_dir=None, price_per_hour=None):
    """The BundleAnswer of the bundles ``names`` (folders, ids or "latest"); ``price_per_hour``: USD per
    device-hour (None: dlrepro/inputs/prices.yaml's)."""
    found = folders(names, results_dir)
    summary, samples = tables.merge(found)
    return model.bundle_answer([bundle.body(f) for f in found], summary, samples, price_per_hour)


def comparison(a, b, min_effect=0.05, alpha=0.01, results_dir=None):
    """The Comparison of bundle ``b`` against bundle ``a`` (folders, ids or "latest"). Raises DlreproError when
    ``a`` and ``b`` name one bundle (its folder named twice, or by id and by path): a bundle compared with itself
    says nothing."""
    first, second = (folders([name], results_dir)[0] for name in (a, b))
    if first.resolve() == second.resolve():
        raise DlreproError(
            "compare %s %s: one bundle named twice (%s)" % (a, b, first),
            "give two bundles: the baseline A and the bundle B checked against it",
        )
    return model.comparison(
        bundle.body(first),
        bundle.body(second),
        (tables.summary(first), tables.samples(first)),
        (tables.summary(second), tables.samples(second)),
        min_effect,
        alpha,
    )


def study(name, results_dir, price_per_hour=None):
    """The StudyAnswer of study record ``name`` (a record file, or a study name: its latest record under
    ``results_dir``): its manifest as recorded (records.manifest), the bundles the record names that are under
    ``results_dir`` (the others named as missing), for runs without a bundle the spec's published values as
    today's spec file gives them, and the host plan the record holds (computed once for a record without one:
    dlrepro.plan.coverage_record.of_record)."""
    from dlrepro.images import matrix as matrixmod

    record = records.find(name, results_dir)
    manifest, note = records.manifest(record)
    found, missing = records.bundles(record, results_dir)
    bodies = [bundle.body(f) for f in found.values()]
    if found:
        summary, samples = tables.merge(list(found.values()))
        runs_of = {f.name.lstrip(".").replace(".partial", ""): run for run, f in found.items()}
        summary = summary.assign(run=summary["bundle_id"].map(runs_of))
    else:
        summary, samples = studyanswer.empty_summary(tables.SUMMARY_COLUMNS), None
    with_bundle = {b["spec"]["name"] for b in bodies}
    unrecorded = {}
    for run in manifest.runs.values():
        if run.spec not in with_bundle and run.spec not in unrecorded:
            unrecorded[run.spec] = specmod.load(run.spec).references
    planned = coverage_record.of_record(
        record.body, manifest, bodies, None if record.body.get("plan") else matrixmod.load() if bodies else None
    )
    return studyanswer.study_answer(
        manifest,
        record.body,
        records.shown(record.path),
        note,
        bodies,
        summary,
        samples,
        missing,
        records.shown(results_dir),
        unrecorded,
        price_per_hour,
        planned,
    )
