"""dlrepro's front door. `invoke --list` shows the tasks; `invoke --help TASK` their options.

    invoke build run --spec=alexnet        build the default images, then run the alexnet spec
    invoke run --spec=fcn --executor local run in this Python, without containers
    invoke specs --show alexnet            what a spec defines

Each task parses its options, calls one library function and renders what it returns
(dlrepro.cli); errors print as ``error:`` and ``remedy:`` lines with exit status 1.
"""
from invoke import Collection, Exit, task

from dlrepro import REPO_ROOT
from dlrepro.cli.console import RichReporter, console, user_errors
from dlrepro.run.options import UNSET, split


def _number(option, text, low, high):
    """``text`` as a number in [low, high) (high None: unbounded; low excluded when it is 0 for alpha)."""
    from dlrepro.errors import DlreproError

    try:
        value = float(text)
    except ValueError:
        value = None
    if value is None or value < low or (high is not None and not low < value < high):
        raise DlreproError("%s: expected a number %s (got %r)" % (
            option, ">= %g" % low if high is None else "between %g and %g" % (low, high), text))
    return value


ENGINE_HELP = "docker (default, or $DLREPRO_ENGINE) or podman (its Docker-compatible API socket)"
BASE_SOURCE_HELP = "auto (a base already here, else registry by digest, else debootstrap), registry or bootstrap"


@task(help={
    "framework": "frameworks to build, comma-separated (NAME or NAME@VERSION), or 'all' (default: the matrix's "
                 "default_frameworks)",
    "device": "cpu or cuda, comma-separated (default: cpu, plus cuda when an NVIDIA GPU is visible)",
    "base-source": BASE_SOURCE_HELP,
    "no-host-pip": "ignore this host's pip settings (index, find-links, cert) inside the build",
    "ca-bundle": "extra CA bundle for pip inside the build (default: the host pip's cert)",
    "engine": ENGINE_HELP,
})
def build(c, framework="", device="", base_source="auto", no_host_pip=False, ca_bundle="", engine=""):
    """Build the pinned images (alone: the default frameworks for this host's devices).

    Without options it builds images/matrix.yaml's default_frameworks for every device this
    host can run: cpu, and cuda when an NVIDIA GPU is visible. An image whose content-hashed
    tag exists is not rebuilt. `invoke run` builds what it needs too, so
    `invoke build run --spec=NAME` works as typed."""
    from dlrepro import engine as enginemod
    from dlrepro.images import build as buildmod, matrix as matrixmod
    from dlrepro.run import hostinfo

    with user_errors():
        enginemod.use(engine)
        matrix = matrixmod.load()
        entries = matrix.select(split(framework), split(device) or hostinfo.devices())
        options = buildmod.BuildOptions(base_source, not no_host_pip, ca_bundle or None)
        for entry in entries:
            built = buildmod.ensure(matrix, entry, options, lambda m: console.print("[dim]%s[/]" % m))
            console.print("%s: %s (%s, %s)" % (built.image.name, built.tag, built.image_id[:19],
                                                "built in %.0f s" % built.seconds if built.built else "cached"))


def _spec_names():
    from dlrepro import spec as specmod

    return ", ".join(specmod.available())


@task(help={
    "spec": "spec name (%s) or the path of a spec file" % _spec_names(),
    "framework": "frameworks, comma-separated (default: the spec's)",
    "device": "cpu (default) or cuda",
    "executor": "docker (default; on --resume the bundle's), local (this Python, no containers) or slurm (sbatch "
                "job arrays, one task per job, each in the job's container on its node)",
    "engine": ENGINE_HELP,
    "partition": "with --executor slurm: the partition to submit to (default: the cluster's default)",
    "slurm-option": "with --executor slurm: one more sbatch option, e.g. --slurm-option=--account=lab (repeatable)",
    "max-parallel": "with --executor slurm: at most this many tasks of an array at once (>= 1; default: no cap)",
    "detach": "with --executor slurm: return once submitted; `invoke run --resume BUNDLE` takes the results",
    "variant": "variants to run, comma-separated (default: all)",
    "mode": "throughput (seconds per mini-batch), convergence (epochs, test accuracy) or inference "
            "(default: each variant's own)",
    "batch-size": "batch sizes, comma-separated (default: the spec's for the device)",
    "warmup": "warm-up iterations, >= 0 (default: the spec's)",
    "iterations": "measured iterations per repeat, >= 1 (default: the spec's)",
    "repeats": "repeats of the measured iterations, >= 1 (default: the spec's)",
    "epochs": "epochs of a convergence run, >= 1 (default: the spec's)",
    "threads": "CPU thread counts, comma-separated, or 'sweep' for the study's (sets OMP/MKL/OpenBLAS and the "
               "framework's; default: the framework's choice)",
    "gpu": "host GPU index for --device cuda (default 0)",
    "gpus": "host GPU indices for --device cuda, comma-separated: independent jobs run concurrently, one per GPU",
    "precision": "fp32 (default: TF32 off, as on the studies' GPUs), tf32, bf16 or fp16 (autocast; PyTorch)",
    "layout": "default (the framework's) or channels_last (NHWC memory layout; PyTorch, JAX)",
    "cudnn-autotune": "cuDNN picks algorithms by benchmarking (default on; --no-cudnn-autotune)",
    "compile": "torch.compile the model (PyTorch; default off)",
    "allow-ptx-jit": "run a build that ships no kernels for this GPU, only PTX for an older one (marked ptx_jit)",
    "quick": "smoke run: first batch size, 1 warm-up + 3 iterations, convergence 1 epoch of 100 iterations",
    "python": "interpreter for --executor local (default: this one)",
    "results": "folder for bundles (default: results/)",
    "base-source": BASE_SOURCE_HELP,
    "timeout": "seconds before a job is killed (default 1800, convergence 86400)",
    "resume": "continue a bundle (its id, folder, or 'latest'): run only its jobs without an ok result, with its "
              "spec and options",
    "retry-failed": "with --resume: run its failed jobs again too",
    "memory": "memory limit of each job container, e.g. 8g or 512m (default: this host's memory less headroom)",
    "isolation": "worker (default: the jobs that share their settings run in one warm process, which imports the "
                 "framework once) or process (one process per job)",
    "ranks": "data-parallel jobs: rank counts, comma-separated (one rank per GPU on cuda, one process or device "
             "each on the CPU), or 'spec' for the variant's GPU counts; the batch sizes are total mini-batches "
             "under strong scaling, per rank under weak (the spec says which); default: plain one-device jobs",
}, auto_shortflags=False, iterable=["slurm_option"])  # too many options for one-letter flags: each a guess
def run(c, spec="", framework="", device="cpu", executor="", variant="", mode="", batch_size="",
        warmup=UNSET, iterations=UNSET, repeats=UNSET, epochs=UNSET, threads="", gpu=0, quick=False, python="",
        results="", base_source="auto", timeout=UNSET, gpus="", precision="fp32", layout="default",
        cudnn_autotune=True, compile=False, allow_ptx_jit=False, resume="", retry_failed=False, memory="",
        engine="", partition="", slurm_option=None, max_parallel=UNSET, detach=False, isolation="worker", ranks=""):
    """Run every job of a spec and write a result bundle under results/ (or continue one: --resume).

    Jobs are frameworks x variants x batch sizes on one device. The exit status is 0 when
    every job that could run here ran (skipped jobs name their reason and remedy), 1 when
    a job failed or none ran, 130 when interrupted (the bundle keeps what finished)."""
    import json

    from dlrepro import engine as enginemod
    from dlrepro.cli import render
    from dlrepro.errors import DlreproError
    from dlrepro.images import build as buildmod
    from dlrepro.run import options as optionsmod, runs

    with user_errors():
        enginemod.use(engine)
        options = optionsmod.from_cli(
            framework, device, executor, variant, mode, batch_size, warmup, iterations, repeats, epochs, threads,
            gpu, quick, timeout, gpus, precision, layout, cudnn_autotune, compile, allow_ptx_jit, isolation, ranks)
        if not spec and not resume:
            raise DlreproError("give --spec NAME (a spec to run) or --resume BUNDLE (a bundle to continue)")
        if retry_failed and not resume:
            raise DlreproError("--retry-failed goes with --resume BUNDLE")
        slurm = optionsmod.slurm_settings(options.executor, partition, slurm_option, max_parallel, detach)
        try:
            with RichReporter() as reporter:
                path = runs.run(spec or None, options, buildmod.BuildOptions(base_source),
                                results or REPO_ROOT / "results", python or None, reporter, resume or None,
                                retry_failed, optionsmod.memory_bytes(memory) if memory else None, slurm=slurm)
        except KeyboardInterrupt as exc:
            console.print("[yellow]interrupted[/] (%s)" % exc)
            raise Exit(code=130) from None
        bundle = json.loads((path / "bundle.json").read_text())
        if bundle["state"] == "partial":  # detached: its jobs are queued or running in Slurm
            console.print("submitted to Slurm: array %s (%d jobs); bundle (partial): %s\n"
                          "take the results (waits for the arrays): invoke run --resume %s" % (
                              ", ".join(r["array_id"] for r in bundle["submitted"]),
                              sum(len(r["jobs"]) for r in bundle["submitted"]), path, bundle["id"]))
            return
        counts = bundle["counts"]
        render.summary_table(bundle["jobs"], "%s (%s)" % (bundle["id"], ", ".join("%d %s" % (n, s)
                                                                                    for s, n in counts.items())))
        console.print("bundle: %s" % path)
        if counts["failed"] or not counts["ok"]:
            raise Exit(code=1)


def _study_names():
    from dlrepro import studies

    return ", ".join(studies.available())


@task(help={
    "name": "a study of studies/ (%s) or the path of a study file" % _study_names(),
    "device": "only the study's runs on this device: cpu or cuda (default: every run this host can do)",
    "framework": "frameworks, comma-separated (default: each spec's)",
    "executor": "docker (default), local or slurm (each run's jobs as Slurm job arrays; the cluster's default "
                "partition)",
    "engine": ENGINE_HELP,
    "quick": "a smoke pass of the whole study: each run --quick, thread sweeps cut to their ends",
    "resume": "continue the study's latest record (its own options)",
    "results": "folder for bundles and study records (default: results/)",
    "python": "interpreter for --executor local (default: this one)",
    "out": "folder for the study report (default: reports/<study record name>)",
})
def study(c, name, device="", framework="", executor="docker", quick=False, resume=False, results="", python="",
          out="", engine=""):
    """Run every job of a published study that this host can run, then write its report (invoke study-report).

    One bundle per run of the study and a study record naming them (results/studies/); what this host cannot
    run is listed with the reason. Resumable: --resume continues the latest record of the study."""
    from dlrepro.cli.console import StudyReporter
    from dlrepro.results import study_report
    from dlrepro import engine as enginemod
    from dlrepro.run import study as studyrun

    with user_errors():
        enginemod.use(engine)
        results_dir = results or REPO_ROOT / "results"
        try:
            with StudyReporter() as reporter:
                record = studyrun.run(name, device or None, split(framework), executor, quick, resume, results_dir,
                                      reporter, python=python or None)
        except KeyboardInterrupt as exc:
            console.print("[yellow]interrupted[/] (%s); continue with: invoke study %s --resume" % (exc, name))
            raise Exit(code=130) from None
        console.print("study record: %s" % record.path)
        made = study_report.write(str(record.path), out or None, results_dir)
        console.print("study report: %s (and %s)" % (made.html, made.markdown))


@task(name="study-report", help={
    "name": "a study name (its latest record under results/studies/) or a study record file",
    "out": "folder for study.html, study.md and figures/ (default: reports/<study record name>)",
    "results": "the results folder (default: results/)"})
def study_report(c, name, out="", results=""):
    """Write the report of a study: the published cells reproduced or not, each claim's verdict, the paper's
    tables with the measured values beside the published ones."""
    from dlrepro.results import study_report as reports

    with user_errors():
        made = reports.write(name, out or None, results or REPO_ROOT / "results")
        for path in [made.html, made.markdown] + made.figures:
            console.print(str(path))


@task(help={"results": "the results folder (default: results/)"})
def bundles(c, results=""):
    """List the bundles, complete and partial: their state, job counts, and how to resume each.

    Results that detached Slurm arrays have finished are taken into their bundles first (no waiting)."""
    from dlrepro.cli import render
    from dlrepro.results import bundle as bundlemod
    from dlrepro.run import runs

    with user_errors():
        runs.take_submitted(results or REPO_ROOT / "results", runs.Reporter())
        render.bundles(bundlemod.listing(results or None))


@task(help={"bundle": "a partial bundle (its id, folder, or 'latest')",
            "results": "the results folder (default: results/)"})
def publish(c, bundle, results=""):
    """Publish a partial bundle as it is: its missing jobs are recorded as skipped (not run)."""
    from dlrepro.run import runs

    with user_errors():
        console.print("bundle: %s" % runs.publish(bundle, results or REPO_ROOT / "results"))


@task(help={"show": "print one spec in full: models layer by layer, variants, batch sizes"})
def specs(c, show=""):
    """List the specs, or show one."""
    from dlrepro import spec as specmod
    from dlrepro.cli import render
    from dlrepro.run import jobs

    with user_errors():
        if not show:
            render.spec_list(specmod.load(name) for name in specmod.available())
            return
        s = specmod.load(show)
        render.spec_detail(s, jobs.unsupported_pairs(s))


def _dataset_names():
    from dlrepro import datasets

    return ", ".join(sorted(datasets.catalogue().datasets))


@task(name="list", default=True)
def datasets_list(c):
    """List the catalogued datasets: which files the cache holds, re-hashed to verify them."""
    from dlrepro import datasets
    from dlrepro.cli import render

    with user_errors():
        render.datasets_table(datasets.root(), datasets.status())


@task(name="fetch", help={"name": "a dataset of dlrepro/datasets.yaml (%s)" % _dataset_names(),
                          "from": "a copy you downloaded: the file, a folder holding the files (optionally .gz), or a tar "
                                  "archive holding them"})
def datasets_fetch(c, name, from_=""):
    """Put a dataset into the cache from its mirrors or a local copy; cached files are re-hashed, corrupt ones replaced."""
    from dlrepro import datasets

    with user_errors():
        record = datasets.import_local(name, from_) if from_ else datasets.ensure(name, console.print, verify=True)
        for f in record.record["files"].values():
            console.print("%s %s: sha256 %s (%s)" % (name, f["name"], f["sha256"],
                                                     (f["source"] or {}).get("mirror", "cached earlier")))


@task(help={"image": "image name (e.g. torch-2.13.0-cpu); default: every image of the matrix"})
def lock(c, image=""):
    """Recompile lock files (images/locks/NAME.txt from NAME.in) with uv, hashes included."""
    from dlrepro.images import locks, matrix as matrixmod

    with user_errors():
        for path in locks.compile_locks(matrixmod.load(), image or None):
            console.print("locked %s" % path.relative_to(REPO_ROOT))


@task(help={"bundle": "a bundle folder (results/<bundle-id>) or a bundle id under results/"})
def validate(c, bundle):
    """Check a bundle against its schema, one check per concern (checksums, bundle.json, spec hash, jobs,
    tables, statistics); exit status 1 when any check fails."""
    from dlrepro.cli import render
    from dlrepro.results import bundle as bundles, validate as checks

    with user_errors():
        folder = bundles.locate(bundle)
        problems = checks.check(folder)
        render.problems(problems)
        if problems:
            console.print("[red]invalid:[/] %s: %d problem(s)" % (folder, len(problems)))
            raise Exit(code=1)
        console.print("[green]valid[/] %s: %s" % (folder, ", ".join(c.__name__ for c in checks.CHECKS)))


@task(help={"bundles": "bundle folders or ids, comma-separated",
            "out": "folder for summary.parquet, summary.csv and samples.parquet (default: print the summary only)"})
def merge(c, bundles, out=""):
    """Merge bundles (machines, suite versions) into one summary and one samples table.

    A bundle given twice is read once; the same job measured in several bundles is kept each
    time, numbered in the columns measurement / measurements."""
    from dlrepro.cli import render
    from dlrepro.results import bundle as bundlesmod, tables

    with user_errors():
        summary, samples = tables.merge_to([bundlesmod.locate(b) for b in split(bundles) or []], out or None)
        if out:
            console.print("wrote %s: %d jobs, %d samples" % (out, len(summary), len(samples)))
        console.print(render.summary_frame(summary, ["bundle_id", "job_id", "device_name", "framework_version",
                                                     "status", "median", "throughput", "measurement", "measurements"],
                                           "%d bundles, %d jobs" % (summary["bundle_id"].nunique(), len(summary))))


@task(help={"bundle": "the bundle to compare (folder or id)",
            "against": "'published' (the spec's published references, default) or another bundle (folder or id): "
                       "then BUNDLE is B, the one checked for regressions against it",
            "min-effect": "smallest relative change of the median reported as a change, >= 0 (default 0.05 = 5%)",
            "alpha": "significance level of the Mann-Whitney U test, between 0 and 0.5 (default 0.01)",
            "fail-on": "exit status 1 when a cell is: slower (default with --against), faster, change (either; "
                       "against the published values also a ranking that does not hold), unproven (slower or "
                       "'cannot tell') or never (default against the published values); 'cannot tell' fails "
                       "only under unproven",
            "json": "also write the result as JSON to this file (in every case)"})
def compare(c, bundle, against="published", min_effect="0.05", alpha="0.01", fail_on="", json=""):
    """Compare a bundle with the published numbers (ratio and verdict per cell, ranking with Kendall's
    tau), or with another bundle (Mann-Whitney U on the repeat medians, minimum effect).

    Exit status 1 when a cell fails under --fail-on, so a pipeline can stop on a regression."""
    import json as jsonlib
    from pathlib import Path

    from dlrepro.cli import render
    from dlrepro.results import compare as comparemod

    with user_errors():
        fail_on = fail_on or ("never" if against == "published" else "slower")
        found = comparemod.run(bundle, against, _number("--min-effect", min_effect, 0, None),
                               _number("--alpha", alpha, 0, 0.5))
        result = found.to_json(fail_on)
        if json:
            Path(json).write_text(jsonlib.dumps(result, indent=1) + "\n")
        render.comparison(found)
        if result["failed"]:
            console.print("[red]failed[/] (--fail-on %s): %d cell(s)%s" % (
                fail_on, len(result["failing_cells"]), ", %d ranking(s) that do not hold"
                % len(result["failing_rankings"]) if result["failing_rankings"] else ""))
            raise Exit(code=1)


@task(help={
    "bundle": "a bundle folder (results/<bundle-id>) or a bundle id under results/",
    "out": "the archive to write (default: ./<bundle-id>.tar.gz)",
    "images": "also `docker save` the bundle's images, by the image IDs bundle.json records (large)",
    "license": "SPDX id of the results' license, recorded in the RO-Crate (default CC-BY-4.0)",
    "author": "name of the person archiving, recorded as the run's agent in the RO-Crate",
})
def archive(c, bundle, out="", images=False, license="CC-BY-4.0", author=""):
    """Archive a bundle into one tar.gz: the bundle, its exact specs, lock inputs, RO-Crate metadata, a manifest.

    `invoke verify ARCHIVE` rechecks it anywhere, years later."""
    from dlrepro.results import archive as archives

    with user_errors():
        made = archives.create(bundle, out or None, images, license, author or None,
                               log=lambda m: console.print("[dim]%s[/]" % m))
        for warning in made.warnings:
            console.print("[yellow]warning:[/] %s" % warning)
        console.print("archive: %s (%d files, %.1f MB)" % (made.path, len(made.members),
                                                          made.path.stat().st_size / 1e6))


@task(help={"archive": "a tar.gz written by `invoke archive`"})
def verify(c, archive):
    """Recheck an archive: every checksum (manifest, the bundle's SHA256SUMS, RO-Crate) and the bundle's schema.

    Exit status 1 when any check fails; each problem names its file."""
    from dlrepro.cli import render
    from dlrepro.results import archive as archives

    with user_errors():
        result = archives.verify(archive)
        render.problems(result.problems)
        if not result.ok:
            console.print("[red]verify failed:[/] %d problem(s) in %d file(s) of %s" % (
                len(result.problems), len({p.file for p in result.problems}), result.archive))
            raise Exit(code=1)
        console.print("[green]ok[/] %s: %d files; MANIFEST.sha256, SHA256SUMS and the RO-Crate agree; the bundle is "
                      "valid (invoke validate's checks)" % (result.bundle_id, result.files))


@task(help={
    "bundles": "bundle folders (results/<bundle-id>) or bundle ids, comma-separated",
    "out": "folder for report.html, report.md and figures/ (default: reports/<first bundle id>[+N])",
})
def report(c, bundles, out=""):
    """Write a report of bundles: report.md (figures beside it) and a self-contained report.html.

    Environment (the studies' vs here), results, comparison with the published values, ranking
    verdicts, and plots: seconds per mini-batch vs batch size, throughput bars, accuracy vs time."""
    from dlrepro.results import report as reports

    with user_errors():
        made = reports.write(split(bundles) or [], out or None)
        for path in [made.html, made.markdown] + made.figures:
            console.print(str(path))


ns = Collection(build, run, study, study_report, bundles, publish, specs, lock, validate, merge, compare, archive, verify, report,
                Collection("datasets", datasets_list, datasets_fetch))
