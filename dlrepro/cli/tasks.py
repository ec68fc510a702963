"""dlrepro's tasks: `dlrepro --list` shows them, `dlrepro --help TASK` their options (`invoke ...` in the checkout).

    dlrepro run --spec=alexnet -f torch --quick   build what it needs, run, write a bundle
    dlrepro report latest                         its report.md and report.html
    dlrepro study dlbench --quick                 a whole published study and its report
    dlrepro specs --show alexnet                  what a spec defines

Each task parses its options, calls one library function and renders what it returns (dlrepro.cli); errors print
as ``error:`` and ``remedy:`` lines. Exit status (dlrepro.errors, docs/usage.md): 0 done, nothing failed; 1 done,
and something failed (a regression or gate, a job, a check); 2 bad input or usage, or an error that stopped the
command; 130 interrupted. Only the tasks that need them import the heavy libraries
(pandas, pyarrow, matplotlib, scipy, docker), so every task starts in a fraction of a second.

One option means one thing in every task: the short flags are -f (--framework), -d (--device), -r (--results)
and -o (--out) only; --results (else $DLREPRO_RESULTS, else the checkout's results/) is where every task that
reads or writes bundles looks, so a bundle written with --results DIR is named by id with --results DIR.
"""

import shlex
import sys

from invoke import Collection, Exit
from rich.markup import escape

from dlrepro import folders
from dlrepro.cli.answer_tasks import (
    archive,
    check,
    compare,
    merge,
    out_folder,
    report,
    site,
    study_report,
    validate,
    verify,
    write_study_report,
)
from dlrepro.cli.console import console, dim, user_errors
from dlrepro.cli.options import BASE_SOURCE_HELP, ENGINE_HELP, RESULTS_HELP, count, task
from dlrepro.cli.plan_task import plan
from dlrepro.run.optiontext import UNSET, split


def _interrupted(exc, then=""):
    """The line a task prints on Ctrl-C or SIGTERM: what stopped it (the signal, or Ctrl-C) and what to do next."""
    console.print("[yellow]interrupted[/] (%s)%s" % (str(exc) or "Ctrl-C", then))
    raise Exit(code=130) from None


def _deprecated(old, new):
    print("warning: `%s` is deprecated and goes in the next release: use `%s`" % (old, new), file=sys.stderr)


@task(
    help={
        "framework": "frameworks to build, comma-separated (NAME or NAME@VERSION), or 'all' (default: the matrix's "
        "default_frameworks)",
        "device": "cpu or cuda, comma-separated (default: cpu, plus cuda when an NVIDIA GPU is visible)",
        "base-source": BASE_SOURCE_HELP,
        "no-host-pip": "ignore this host's pip settings (index, find-links, cert) inside the build",
        "ca-bundle": "extra CA bundle for pip inside the build (default: the host pip's cert)",
        "engine": ENGINE_HELP,
        "jobs": "images built at once, >= 1 (default: this machine's CPUs plus one); a base several need is made once",
        "sources-from": "folder holding the source archives of a framework built from source (torch7: "
        "dlrepro/inputs/datasets.yaml's lua-* files, by name); default: fetched from their canonical mirrors",
    }
)
def build(
    c, framework="", device="", base_source="auto", no_host_pip=False, ca_bundle="", engine="", jobs="", sources_from=""
):
    """Build the pinned images for this host's devices.

    Without options it builds images/matrix.yaml's default_frameworks for every device this
    host can run: cpu, and cuda when an NVIDIA GPU is visible. An image whose content-hashed
    tag exists is not rebuilt; the others build --jobs at a time, and one that fails does not stop
    the rest (exit 1). `dlrepro run` builds what it needs too, so `invoke build run --spec=NAME`
    works as typed in the checkout."""
    from dlrepro import engine as enginemod
    from dlrepro.errors import ImageError
    from dlrepro.images import build as buildmod
    from dlrepro.images import matrix as matrixmod
    from dlrepro.plan import hostinfo

    with user_errors():
        workers = count("--jobs", jobs)
        enginemod.use(engine)
        matrix = matrixmod.load()
        entries = matrix.select(split(framework), split(device) or hostinfo.devices())
        options = buildmod.BuildOptions(base_source, not no_host_pip, ca_bundle or None, sources_from or None)
        done = buildmod.ensure_all(matrix, entries, options, lambda m: console.print(dim(m)), workers or None)
        for name, built in done.items():
            if isinstance(built, ImageError):  # the build's last lines, the hint and the remedy, as a lone build says
                console.print("[red]%s: not built:[/] %s" % (name, escape(str(built))))
                if built.remedy:
                    console.print("[bold]remedy:[/] %s" % escape(built.remedy))
            else:
                console.print(
                    "%s: %s (%s, %s)"
                    % (
                        name,
                        built.tag,
                        built.image_id[:19],
                        "built in %.0f s" % built.seconds if built.built else "cached",
                    )
                )
        failed = [name for name, built in done.items() if isinstance(built, ImageError)]
        if failed:
            console.print("%d of %d images not built: %s" % (len(failed), len(done), ", ".join(failed)))
            raise Exit(code=1)


@task(
    help={
        "spec": "spec name (%s) or the path of a spec file" % ", ".join(folders.names(folders.SPECS_DIR)),
        "framework": "frameworks, comma-separated (default: the spec's)",
        "device": "cpu (default) or cuda",
        "executor": "docker (default; on --resume the bundle's), local (this Python, no containers) or slurm (sbatch "
        "job arrays, one task per job, each in the job's container on its node)",
        "engine": ENGINE_HELP,
        "partition": "with --executor slurm: the partition to submit to (default: the cluster's default)",
        "slurm-option": "with --executor slurm: one more sbatch option, e.g. --slurm-option=--account=lab (repeatable)",
        "max-parallel": "with --executor slurm: at most this many tasks of an array at once (>= 1; default: no cap)",
        "detach": "with --executor slurm: return once submitted; `dlrepro run --resume BUNDLE` takes the results",
        "variant": "variants to run, comma-separated (default: all)",
        "mode": "throughput (seconds per mini-batch), convergence (epochs, test accuracy) or inference "
        "(default: each variant's own)",
        "batch-size": "batch sizes, comma-separated (default: the spec's for the device)",
        "warmup": "warm-up iterations, >= 0 (default: the spec's)",
        "iterations": "measured iterations per repeat, >= 1 (default: the spec's)",
        "repeats": "repeats of the measured iterations, >= 1 (default: the spec's)",
        "epochs": "epochs of a convergence run, >= 1 (default: the spec's)",
        "seeds": "independent trainings of each convergence job, >= 1: one job each, seeds 0..N-1 (default: the "
        "spec's; --quick: 1)",
        "test-batch-size": "a convergence job's evaluation mini-batch size, >= 1 (default: the training batch size; "
        "the test samples evaluated stay the spec's)",
        "threads": "CPU thread counts, comma-separated, or 'sweep' for the study's (sets OMP/MKL/OpenBLAS and the "
        "framework's; default: the framework's choice)",
        "gpu": "host GPU index for --device cuda (default 0)",
        "gpus": "host GPU indices for --device cuda, comma-separated: independent jobs run concurrently, one per GPU",
        "precision": "fp32 (default: TF32 off, as on the studies' GPUs), tf32, bf16 "
        "(mixed precision: PyTorch, JAX) or fp16 (PyTorch)",
        "layout": "default (the framework's) or channels_last (NHWC memory layout; PyTorch, JAX)",
        "cudnn-autotune": "cuDNN picks algorithms by benchmarking (default on; --no-cudnn-autotune)",
        "compile": "torch.compile the model (PyTorch; default off)",
        "allow-ptx-jit": "run a build that ships no kernels for this GPU, only PTX for an older one (marked ptx_jit)",
        "quick": "smoke run: first batch size, 1 warm-up + 3 iterations, convergence 1 epoch of 100 iterations",
        "python": "interpreter for --executor local (default: this one)",
        "results": "folder for bundles (default: $DLREPRO_RESULTS, else the checkout's results/)",
        "base-source": BASE_SOURCE_HELP,
        "timeout": "seconds before a job is killed, >= 1 (default 1800, convergence 86400)",
        "resume": "continue a bundle (its id, folder, or 'latest'): run only its jobs without an ok result, with its "
        "spec and options",
        "retry-failed": "with --resume: run its failed jobs again too",
        "rerun": "with --resume: run these jobs again whatever their result, "
        "comma-separated job ids (e.g. jobs measured "
        "beside another load); each earlier result stays under jobs/<id>/attempts/<n>/",
        "memory": "memory limit of each job container, e.g. 8g or 512m (default: this host's memory less headroom)",
        "isolation": "worker (default: the jobs that share their settings run in one warm process, which imports the "
        "framework once) or process (one process per job)",
        "ranks": "data-parallel jobs: rank counts, comma-separated (one rank per GPU on cuda, one process or device "
        "each on the CPU), or 'spec' for the variant's GPU counts; the batch sizes are total mini-batches "
        "under strong scaling, per rank under weak (the spec says which); default: plain one-device jobs",
    },
    iterable=["slurm_option"],
)
def run(
    c,
    spec="",
    framework="",
    device="cpu",
    executor="",
    variant="",
    mode="",
    batch_size="",
    warmup=UNSET,
    iterations=UNSET,
    repeats=UNSET,
    epochs=UNSET,
    threads="",
    gpu=0,
    quick=False,
    python="",
    results="",
    base_source="auto",
    timeout=UNSET,
    gpus="",
    precision="fp32",
    layout="default",
    cudnn_autotune=True,
    compile=False,
    allow_ptx_jit=False,
    resume="",
    retry_failed=False,
    rerun="",
    memory="",
    engine="",
    partition="",
    slurm_option=None,
    max_parallel=UNSET,
    detach=False,
    isolation="worker",
    ranks="",
    seeds=UNSET,
    test_batch_size=UNSET,
):
    """Run a spec's jobs into a bundle, or --resume one.

    Jobs are frameworks x variants x batch sizes on one device. The exit status is 0 when
    every job that could run here ran (skipped jobs name their reason and remedy), 1 when
    a job failed or none ran, 2 on bad input or an error that stopped the run, 130 when
    interrupted (the bundle keeps what finished)."""
    import json

    from dlrepro import engine as enginemod
    from dlrepro.cli import render
    from dlrepro.cli.progress import RichReporter
    from dlrepro.errors import DlreproError
    from dlrepro.images import build as buildmod
    from dlrepro.run import options as optionsmod
    from dlrepro.run import runs

    with user_errors():
        enginemod.use(engine)
        options = optionsmod.from_cli(
            framework,
            device,
            executor,
            variant,
            mode,
            batch_size,
            warmup,
            iterations,
            repeats,
            epochs,
            threads,
            gpu,
            quick,
            timeout,
            gpus,
            precision,
            layout,
            cudnn_autotune,
            compile,
            allow_ptx_jit,
            isolation,
            ranks,
            seeds,
            test_batch_size,
        )
        if not spec and not resume:
            raise DlreproError("give --spec NAME (a spec to run) or --resume BUNDLE (a bundle to continue)")
        if (retry_failed or rerun) and not resume:
            raise DlreproError("%s goes with --resume BUNDLE" % ("--retry-failed" if retry_failed else "--rerun"))
        slurm = optionsmod.slurm_settings(options.executor, partition, slurm_option, max_parallel, detach)
        try:
            with RichReporter() as reporter:
                path = runs.run(
                    spec or None,
                    options,
                    buildmod.BuildOptions(base_source),
                    folders.results_root(results),
                    python or None,
                    reporter,
                    resume or None,
                    retry_failed,
                    optionsmod.memory_bytes(memory) if memory else None,
                    slurm=slurm,
                    rerun=split(rerun),
                )
        except KeyboardInterrupt as exc:
            _interrupted(exc)
        bundle = json.loads((path / "bundle.json").read_text())
        if bundle["state"] == "partial":  # detached: its jobs are queued or running in Slurm
            console.print(
                "submitted to Slurm: array %s (%d jobs); bundle (partial): %s\n"
                "take the results (waits for the arrays): dlrepro run --resume %s"
                % (
                    ", ".join(r["array_id"] for r in bundle["submitted"]),
                    sum(len(r["jobs"]) for r in bundle["submitted"]),
                    path,
                    bundle["id"],
                )
            )
            return
        counts = bundle["counts"]
        render.summary_table(
            bundle["jobs"], "%s (%s)" % (bundle["id"], ", ".join("%d %s" % (n, s) for s, n in counts.items()))
        )
        console.print("bundle: %s" % path)
        console.print(next_step(results))
        if counts["failed"] or not counts["ok"]:
            raise Exit(code=1)


def next_step(results=""):
    """The line a run ends with: the command that reports the bundle it just wrote ('next: dlrepro report latest',
    with the run's ``--results`` where one was given)."""
    return "next: dlrepro report latest%s" % (" --results %s" % shlex.quote(results) if results else "")


@task(
    help={
        "name": "a study of studies/ (%s) or the path of a study file" % ", ".join(folders.names(folders.STUDIES_DIR)),
        "device": "only the study's runs on this device: cpu or cuda (default: every run this host can do)",
        "framework": "frameworks, comma-separated (default: each spec's)",
        "executor": "docker (default), local or slurm (each run's jobs as Slurm job arrays; the cluster's default "
        "partition)",
        "engine": ENGINE_HELP,
        "quick": "a smoke pass of the whole study: each run --quick, thread sweeps cut to their ends",
        "run": "only these runs of the study, comma-separated run ids (default: every run; the others are recorded as "
        "not asked)",
        "resume": "continue a study record ('latest': the study's latest, or a record file), with its own options",
        "versions": "the study's tools at the versions it published (or the "
        "nearest the image matrix has: 'published'), "
        "today's ('today', the default) or 'both' side by side",
        "results": "folder for bundles and study records (default: $DLREPRO_RESULTS, else the checkout's results/)",
        "python": "interpreter for --executor local (default: this one)",
        "out": "folder for the study report (default: RESULTS/reports/<study record name>)",
    }
)
def study(
    c,
    name,
    device="",
    framework="",
    executor="docker",
    quick=False,
    resume="",
    results="",
    python="",
    out="",
    engine="",
    run="",
    versions="",
):
    """Run a published study here, then write its report.

    One bundle per run of the study and a study record naming them (results/studies/); what this host cannot
    run is listed with the reason. Resumable: --resume latest continues the latest record of the study."""
    from dlrepro import engine as enginemod
    from dlrepro.cli.progress import StudyReporter
    from dlrepro.run import study as studyrun

    with user_errors():
        enginemod.use(engine)
        results_dir, folder = folders.results_root(results), out_folder(out)
        try:
            with StudyReporter() as reporter:
                record = studyrun.run(
                    name,
                    device or None,
                    split(framework),
                    executor,
                    quick,
                    resume or None,
                    results_dir,
                    reporter,
                    python=python or None,
                    runs=split(run),
                    versions=versions or None,
                )
        except KeyboardInterrupt as exc:
            _interrupted(exc, "; continue with: dlrepro study %s --resume latest" % name)
        console.print("study record: %s" % record.path)
        made = write_study_report(str(record.path), folder, results_dir, False)
        console.print("study report: %s (and %s)" % (made.html, made.markdown))


@task(help={"results": RESULTS_HELP, "spec": "only the bundles of this spec"})
def bundles(c, results="", spec=""):
    """List bundles: device, frameworks, jobs, next step.

    Results that detached Slurm arrays have finished are taken into their bundles first (no waiting). A --spec
    that is neither a spec nor the spec of a bundle there is refused, naming the near miss and the specs."""
    from dlrepro.cli import render
    from dlrepro.inputs import spec as specmod
    from dlrepro.run import runs
    from dlrepro.store import bundle as bundlemod

    with user_errors():
        root = _results_folder(results)
        runs.take_submitted(root, runs.Reporter())
        rows = bundlemod.listing(root)
        if spec and spec not in {r["spec"] for r in rows}:
            specmod.existing(spec)
        render.bundles(rows, spec or None)


@task(help={"bundle": "a partial bundle: its folder, its id under --results, or 'latest'", "results": RESULTS_HELP})
def finalize(c, bundle, results=""):
    """Close a partial bundle; missing jobs: skipped.

    Its state becomes complete; the jobs that never ran are recorded as skipped (not run)."""
    from dlrepro.run import recover

    with user_errors():
        console.print("bundle: %s" % recover.finalize(bundle, folders.results_root(results)))


@task(help={"bundle": "a partial bundle: its folder, its id under --results, or 'latest'", "results": RESULTS_HELP})
def publish(c, bundle, results=""):
    """Deprecated: the old name of finalize."""
    _deprecated("publish", "finalize")
    finalize(c, bundle, results)


@task(
    help={
        "show": "one spec in full: models layer by layer, one table of its variants, its references",
        "json": "with --show: write the resolved spec (every default filled in) as JSON to this file ('-': print "
        "it instead of the tables)",
    }
)
def specs(c, show="", json=""):
    """List the specs, or show one (--show NAME)."""
    from dlrepro.cli import spec_view
    from dlrepro.inputs import spec as specmod

    with user_errors():
        if not show:
            spec_view.spec_list([specmod.load(name) for name in specmod.available()])
            return
        s = specmod.load(show)
        if json:
            import json as jsonlib
            from pathlib import Path

            text = jsonlib.dumps(s.model_dump(mode="json"), indent=1)
            if json == "-":
                print(text)
                return
            Path(json).write_text(text + "\n")
        from dlrepro.plan import expressible

        spec_view.spec_detail(s, expressible.unsupported_pairs(s))


@task(name="list", default=True)
def datasets_list(c):
    """List the datasets and which files the cache holds.

    Each cached file is re-hashed to verify it."""
    from dlrepro.cli import render
    from dlrepro.inputs import datasets

    with user_errors():
        render.datasets_table(datasets.root(), datasets.status())


@task(
    name="fetch",
    help={
        "name": "a dataset of dlrepro/inputs/datasets.yaml (`dlrepro datasets` lists them)",
        "from": "a copy you downloaded: the file, a folder holding the files (optionally .gz), or a tar "
        "archive holding them",
    },
)
def datasets_fetch(c, name, from_=""):
    """Put a dataset into the cache (mirror or copy).

    Cached files are re-hashed, corrupt ones replaced."""
    from dlrepro.inputs import datasets

    with user_errors():
        record = datasets.import_local(name, from_) if from_ else datasets.ensure(name, console.print, verify=True)
        for f in record.record["files"].values():
            console.print(
                "%s %s: sha256 %s (%s)"
                % (name, f["name"], f["sha256"], (f["source"] or {}).get("mirror", "cached earlier"))
            )


@task(help={"image": "image name (e.g. torch-2.13.0-cpu); default: every image of the matrix"})
def lock(c, image=""):
    """Recompile the images' lock files with uv.

    images/locks/NAME.txt from NAME.in."""
    from dlrepro import REPO_ROOT
    from dlrepro.images import locks
    from dlrepro.images import matrix as matrixmod

    with user_errors():
        for path in locks.compile_locks(matrixmod.load(), image or None):
            console.print("locked %s" % path.relative_to(REPO_ROOT))


def _results_folder(results):
    """The results folder (--results, else $DLREPRO_RESULTS, else the checkout's results/); a DlreproError
    naming it when there is no such folder."""
    from dlrepro.store import bundle as bundlemod

    return bundlemod.existing_root(folders.results_root(results))


ns = Collection(
    build,
    run,
    study,
    plan,
    study_report,
    bundles,
    finalize,
    publish,
    specs,
    lock,
    validate,
    merge,
    compare,
    check,
    archive,
    verify,
    report,
    site,
    Collection("datasets", datasets_list, datasets_fetch),
)
