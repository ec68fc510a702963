"""A whole study in one command: every run of a study manifest (dlrepro.inputs.studies) that this host can run, one
bundle per run, and a study record that names them (``results/studies/<study>-<UTC>.json``).

Each run becomes one ``runs.run`` (a bundle of its own, durable and resumable as any run is). What this host
cannot run is listed with the reason instead of being tried: a cuda run without an NVIDIA GPU, GPU counts
beyond the host's (a run with GPU counts runs data-parallel jobs of the counts this host has, the 1-GPU one
included as the base of the speedups), thread counts beyond its CPUs (an oversubscribed count measures contention, not
scaling), a run of another device than the one asked for. The record is rewritten as each run starts and
ends, so a study killed midway is resumed (``resume``) from the record: published bundles are kept, partial
ones resumed, the rest run. ``quick`` makes a smoke pass of the whole study (each run --quick, thread sweeps
cut to their smallest and largest count here). ``runs`` (``--run``) runs only those runs of the study, the others
recorded as not asked. ``versions`` (``--versions published|today|both``) runs the study's tools at the versions
it published (or the nearest the image matrix has), today's, or both side by side (dlrepro.inputs.eras). A tool whose
scripts timed another step than the suite's (the study's ``steps``) has its jobs built that way where its adapter
can (RunOptions.steps), and each run's notes say which of its frameworks were, or why not.

The runs share their workers: the study owns one WorkerPool (dlrepro.run.pool; its folder
``studies/.<record>.pool/`` beside the record while the study runs) and passes it to each run, so the jobs
of every run with the same image, device and settings go to one warm worker, in one container for the whole
study (docker), the runs still one after another. The pool is closed at the study's end, on an error and
on an interrupt: no container or process of it is left.

When the container engine goes away (EngineLost: in a run's plan, an image lookup or build, or between runs)
the study stops there, as a run does: that run's bundle stays partial with the jobs the engine lost
"interrupted", its record entry "interrupted", the pool's output left as it is (a container may live on
without its engine), and ``dlrepro study NAME --resume latest`` reruns exactly those jobs, then the runs not
done yet.
"""

from dataclasses import dataclass, field

from dlrepro import REPO_ROOT
from dlrepro.errors import DlreproError, EngineLost, RunBroken
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import eras, studies
from dlrepro.inputs import spec as specmod
from dlrepro.names import unknown as unknown_name
from dlrepro.plan import coverage_record, hostinfo
from dlrepro.run import executors
from dlrepro.run import jobs as jobsmod
from dlrepro.run import runs as runsmod
from dlrepro.run.options import RunOptions, Step, checked
from dlrepro.run.pool import WorkerPool
from dlrepro.store import bundle as bundlemod
from dlrepro.store import records
from dlrepro.store.records import records_dir
from runner.adapters import capabilities
from runner.contract import utc_now
from runner.environment import usable_cpus
from runner.frameworks import Token


@dataclass
class Planned:
    """One run of the study on this host: its options, or why it cannot run here; ``notes`` say what was cut."""

    id: str
    run: studies.Run
    options: RunOptions = None
    why: str = None
    notes: list = field(default_factory=list)
    jobs: int = 0
    versions: dict = field(default_factory=dict)  # {version set: [{tool, token, label}]} (--versions)


def _known_runs(study, runs):
    """Raise DlreproError naming the study's runs when ``runs`` (run ids, or None) holds one the study lacks."""
    unknown = [r for r in runs or [] if r not in study.runs]
    if unknown:
        raise DlreproError(
            "--run: study %s has no run %s; its runs: %s"
            % (study.name, ", ".join(unknown_name(r, study.runs) for r in unknown), ", ".join(study.runs)),
            "give run ids of the study, comma-separated",
        )


def _known_options(study, specs, device, frameworks, executor):
    """Raise DlreproError, as ``dlrepro run`` does, for a device, executor or framework it would refuse: a
    framework none of the study's specs (``specs``: {name: Spec}) declares, or a version no image of the matrix
    runs on the device asked for (else on any of the study's devices)."""
    checked(**{k: v for k, v in dict(device=device, frameworks=frameworks, executor=executor).items() if v})
    known = list(dict.fromkeys(f for spec in specs.values() for f in spec.frameworks))
    jobsmod.known_frameworks(frameworks or [], known, "study %s" % study.name)
    if executor in executors.IN_IMAGES:
        devices = [device] if device else sorted({run.device for run in study.runs.values()})
        matrixmod.load().check_versions(frameworks, devices)


def _versioned(study, matrix, run, versions, chosen, item):
    """``chosen`` (the frameworks the run would take, in its order) with each of the study's tools at version set
    ``versions`` (dlrepro.inputs.eras over the image ``matrix``: NAME@VERSION tokens); a framework that is none of the
    study's tools stays as it is. What stands for what goes to ``item.notes``, and each set's tokens to
    ``item.versions`` for the record."""
    names = {Token.parse(f).name for f in chosen}
    sets = {
        name: [c for c in eras.choose(study, matrix, run.device, name) if c.framework in names]
        for name in (("published", "today") if versions == "both" else (versions,))
    }
    picked = [c for c in eras.choose(study, matrix, run.device, versions) if c.framework in names]
    item.notes.append("--versions %s: %s" % (versions, ", ".join(c.label for c in picked)))
    item.versions = {
        name: [{"tool": c.tool, "token": c.token, "label": c.label} for c in found if c.token]
        for name, found in sets.items()
    }
    ours = {c.framework for c in picked}
    return [
        t for f in chosen for t in ([c.token for c in picked if c.framework == f and c.token] if f in ours else [f])
    ]


def _steps(study, run_id, run, chosen, threads, notes):
    """{token: Step} for the tokens of ``chosen`` whose tool's scripts timed a step otherwise than the suite in run
    ``run_id`` (``study.steps``) and whose adapter builds it that way; the others keep the suite's step.
    ``notes``: {token: what was done, and why}."""
    found = {}
    for tool, step in [(tool, step) for tool, step in study.steps.items() if run_id in step.runs]:
        values = {"gradients": step.gradients, "thread_pools": step.thread_pools if threads else "all"}
        also = "; the study's step also did, not reproduced here: %s" % "; ".join(step.differs) if step.differs else ""
        for token in [t for t in chosen if Token.parse(t).name == study.framework(tool)]:
            problem = capabilities.unsupported_options(token, dict(values, threads=1), run.device)
            said = ", ".join("%s %s" % kv for kv in values.items())
            if Step(**values) == Step():
                notes[token] = "%s (%s): the suite's step, as the study's scripts (%s)%s" % (tool, token, said, also)
            elif problem:
                notes[token] = "%s (%s): the suite's step, not the study's (%s): %s%s" % (
                    tool,
                    token,
                    said,
                    problem,
                    also,
                )
            else:
                found[token] = Step(**values)
                notes[token] = "%s (%s): timed as the study's scripts did: %s%s" % (tool, token, said, also)
    return found


def plan(
    study, device=None, frameworks=None, executor="docker", quick=False, gpus=None, cpus=None, runs=None, versions=None
):
    """Planned runs of ``study`` on this host (``gpus``: NVML's GPUs, ``cpus``: usable CPUs; this host's by
    default), restricted to the run ids ``runs``, ``device`` and ``frameworks`` when given; ``versions``: a
    version set of dlrepro.inputs.eras (published, today or both) for the study's tools instead of the frameworks'
    plain names. Raises DlreproError for a run id the study does not have, a version set it does not know, and
    for a device, executor or framework ``dlrepro run`` refuses (a framework none of the study's specs
    declares)."""
    _known_runs(study, runs)
    specs = {run.spec: specmod.load(run.spec) for run in study.runs.values()}
    _known_options(study, specs, device, frameworks, executor)
    matrix = None
    if versions:
        eras.checked(versions)
        matrix = matrixmod.load()
        pinned = [f for f in frameworks or [] if Token.parse(f).version]
        if pinned:
            raise DlreproError(
                "--framework %s with --versions: the version set picks each tool's version" % ",".join(pinned),
                "give plain framework names with --versions, or leave --versions out to run exactly those versions",
            )
    gpus = hostinfo.gpus() if gpus is None else gpus
    cpus = cpus or usable_cpus()
    planned = []
    for run_id, run in study.runs.items():
        item = Planned(run_id, run)
        planned.append(item)
        if runs and run_id not in runs:
            item.why = "not asked: --run %s was given" % ",".join(runs)
            continue
        if device and run.device != device:
            item.why = "--device %s was asked" % device
            continue
        if run.device == "cuda" and not gpus:
            item.why = "it needs an NVIDIA GPU; NVML sees none on this host"
            continue
        counts = [g for g in run.gpus if g <= max(len(gpus), 1)]
        if not counts:
            item.why = "it needs %s GPUs; this host has %d" % (min(run.gpus), len(gpus))
            continue
        if len(counts) < len(run.gpus):
            item.notes.append(
                "GPU counts %s left out: this host has %d GPU%s"
                % (", ".join(str(g) for g in run.gpus if g not in counts), len(gpus), "s"[len(gpus) == 1 :])
            )
        spec = specs[run.spec]
        chosen = [f for f in (frameworks or spec.frameworks) if Token.parse(f).name in spec.frameworks]
        if not chosen:
            item.why = "spec %s has none of the frameworks asked for (%s)" % (run.spec, ", ".join(frameworks))
            continue
        if versions:
            chosen = _versioned(study, matrix, run, versions, chosen, item)
        step_notes = {}
        threads = run.thread_counts(spec, quick, cpus, item.notes)
        item.options = RunOptions(
            frameworks=chosen,
            device=run.device,
            executor=executor,
            variants=run.variants,
            mode=run.mode,
            batch_sizes=run.batch_sizes,
            threads=threads,
            quick=quick,
            ranks=counts if run.gpus != [1] else None,
            steps=_steps(study, run_id, run, chosen, threads, step_notes),
        )
        try:
            expanded = jobsmod.expand(spec, item.options)
            item.jobs = len(expanded)  # the step notes of the frameworks that have jobs in the run
            item.notes += [
                note for token, note in step_notes.items() if token in {Token.of_job(job).text for job in expanded}
            ]
        except DlreproError as exc:
            item.why, item.options = str(exc), None
    return planned


def _reuse_recorded(record, planned):
    """A resume: each run the record has options for keeps them (and its job count and why_here), whatever this
    host would plan now."""
    for item in planned:
        entry = record.body["runs"].get(item.id) or {}
        if entry.get("options"):
            item.options, item.why = RunOptions.model_validate(entry["options"]), entry.get("why_here")
            item.jobs, item.notes = entry.get("jobs", item.jobs), entry.get("notes", item.notes)
            item.versions = entry.get("versions", item.versions)


def _record_plan(record, planned):
    for item in planned:
        entry = record.body["runs"].setdefault(item.id, {})
        if entry.get("state") == "published":  # what it was planned and published with stays as it was
            continue
        if item.versions:
            entry["versions"] = item.versions
        entry.update(
            spec=item.run.spec,
            variants=item.run.variants,
            device=item.run.device,
            why_here=item.why,
            notes=item.notes,
            jobs=item.jobs,
            what=item.run.why,
            options=item.options.model_dump(mode="json") if item.options else None,
        )
        entry.setdefault("bundle", None)
        entry.setdefault("state", "not runnable" if item.why else "planned")


def run(
    name,
    device=None,
    frameworks=None,
    executor="docker",
    quick=False,
    resume=False,
    results_dir=REPO_ROOT / "results",
    reporter=None,
    build_options=None,
    python=None,
    runs=None,
    versions=None,
):
    """Run study ``name`` on this host; returns the study record (Record). ``runs``: only these run ids of the
    study (None: every run). ``resume``: continue a record of the study ("latest" or True: its latest; else a
    record file), with its own options and runs, instead of starting a new one. Runs that break are recorded as
    broken and the study goes on; an interrupt (Ctrl-C, SIGTERM) stops it after the running run published its
    bundle. ``versions``: a version set of dlrepro.inputs.eras (published, today or both; None: the frameworks' plain
    names, today's). Raises DlreproError for a run id the study does not have, or ``runs`` with ``resume``."""
    study = studies.load(name)
    if resume:
        if runs:
            raise DlreproError(
                "--run goes with a new study, not --resume (a resume runs the record's runs)",
                "leave --run out, or start a new study with it",
            )
        record = records.find(study.name if resume in (True, "latest") else resume, records_dir(results_dir))
        asked = record.body["asked"]
    else:
        asked = {
            "device": device,
            "frameworks": frameworks,
            "executor": executor,
            "quick": quick,
            "runs": runs,
            "versions": versions,
        }
        record = records.Record.new(study, studies.path_of(name), results_dir, asked)
    planned = plan(
        study,
        asked["device"],
        asked["frameworks"],
        asked["executor"],
        asked["quick"],
        runs=asked.get("runs"),
        versions=asked.get("versions"),
    )
    if resume:
        _reuse_recorded(record, planned)
    _record_plan(record, planned)
    if not record.body.get("plan"):  # the host plan's answer per claim and cell, as the study reports read it
        record.body["plan"] = coverage_record.this_host(study, matrixmod.load(), asked.get("versions"))
    record.save()
    reporter = reporter or runsmod.Reporter()
    reporter.started(
        sum(p.jobs for p in planned if p.options)
        - sum(record.body["runs"][p.id].get("done", 0) for p in planned if p.options)
    )
    pool = WorkerPool(
        records_dir(results_dir) / (".%s.pool" % record.path.stem), "study-" + record.path.stem, reporter.log
    )
    try:
        _run_planned(record, planned, results_dir, reporter, build_options, python, pool, name)
    except EngineLost:
        pool.close(lost=True)
        raise
    except BaseException:
        pool.close()
        raise
    pool.close()
    record.body["finished"] = utc_now()
    record.save()
    return record


def _run_planned(record, planned, results_dir, reporter, build_options, python, pool, name):
    """Run each planned run that is not complete yet, its state in the record as it starts and ends (``name``:
    the study as given, for the remedy of a lost engine)."""
    for item in planned:
        entry = record.body["runs"][item.id]
        if item.options is None or entry["state"] in (bundlemod.COMPLETE, bundlemod.OLD_COMPLETE):
            continue
        for note in item.notes:
            reporter.log("%s: %s" % (item.id, note))

        def started(bundle_id, entry=entry):
            entry.update(bundle=bundle_id, state="running")
            record.save()

        try:
            path = runsmod.run(
                item.run.spec if not entry["bundle"] else None,
                item.options,
                build_options,
                results_dir,
                python,
                reporter,
                resume=entry["bundle"],
                on_start=started,
                pool=pool,
            )
            entry.update(state=bundlemod.COMPLETE, bundle=path.name, done=item.jobs)
        except KeyboardInterrupt:
            entry["state"] = "interrupted"
            record.save()
            raise
        except EngineLost as exc:  # every later run needs the engine too: the study stops here
            entry.update(state="interrupted", error=str(exc))
            record.save()
            raise EngineLost(
                "study %s stopped at run %s: %s" % (record.body["study"], item.id, exc),
                "start the engine again (e.g. `sudo systemctl start docker`), then `dlrepro study %s "
                "--resume latest`: it reruns the interrupted jobs, then the runs not done yet" % name,
                exc.running,
            ) from None
        except RunBroken as exc:
            entry.update(state="broken", error=str(exc))
        except DlreproError as exc:
            entry.update(state="not runnable" if not entry["bundle"] else "broken", error=str(exc))
        record.save()
