"""dlrepro's front door. `invoke --list` shows the tasks; `invoke --help TASK` their options.

    invoke build run --spec=alexnet        build the default images, then run the alexnet spec
    invoke run --spec=fcn --executor local run in this Python, without containers
    invoke specs --show alexnet            what a spec defines
"""
import json

from invoke import Collection, Exit, task

from dlrepro import REPO_ROOT
from dlrepro.console import RichReporter, console, layer_summary, summary_frame, summary_table, user_errors

OPTION_NAMES = {"frameworks": "--framework", "variants": "--variant", "batch_sizes": "--batch-size",
                "timeout_s": "--timeout"}
UNSET = -1  # integer options left at -1 take the spec's value


def _list(text, convert=str):
    return [convert(x.strip()) for x in text.split(",") if x.strip()] or None


def _given(value):
    return None if value == UNSET else value


def _threads(text):
    from dlrepro.errors import DlreproError

    if text.strip() == "sweep":
        return "sweep"
    try:
        return _list(text, int)
    except ValueError:
        raise DlreproError("--threads: expected 'sweep' or comma-separated thread counts (got %r)" % text) from None


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


def _host_devices():
    from dlrepro import hostinfo

    return ["cpu", "cuda"] if hostinfo.gpus() else ["cpu"]


@task(help={
    "framework": "frameworks to build, comma-separated, or 'all' (default: the matrix's default_frameworks)",
    "device": "cpu or cuda, comma-separated (default: cpu, plus cuda when an NVIDIA GPU is visible)",
    "base-source": "auto (registry by digest when reachable, else debootstrap), registry or bootstrap",
    "no-host-pip": "ignore this host's pip settings (index, find-links, cert) inside the build",
    "ca-bundle": "extra CA bundle for pip inside the build (default: the host pip's cert)",
})
def build(c, framework="", device="", base_source="auto", no_host_pip=False, ca_bundle=""):
    """Build the pinned images (alone: the default frameworks for this host's devices).

    Without options it builds images/matrix.yaml's default_frameworks for every device this
    host can run: cpu, and cuda when an NVIDIA GPU is visible. An image whose content-hashed
    tag exists is not rebuilt. `invoke run` builds what it needs too, so
    `invoke build run --spec=NAME` works as typed."""
    from dlrepro import build as buildmod, matrix as matrixmod
    from dlrepro.errors import DlreproError

    with user_errors():
        matrix = matrixmod.load()
        frameworks = sorted({i.framework for i in matrix.images}) if framework == "all" else \
            (_list(framework) or matrix.default_frameworks)
        devices = _list(device) or _host_devices()
        wrong = [d for d in devices if d not in ("cpu", "cuda")]
        if wrong:
            raise DlreproError("--device: expected cpu or cuda (got %s)" % ", ".join(map(repr, wrong)))
        options = buildmod.BuildOptions(base_source, not no_host_pip, ca_bundle or None)
        for fw in frameworks:
            for dev in devices:
                built = buildmod.ensure(matrix, matrix.find(fw, dev), options, lambda m: console.print("[dim]%s[/]" % m))
                console.print("%s: %s (%s, %s)" % (built.image.name, built.tag, built.image_id[:19],
                                                    "built in %.0f s" % built.seconds if built.built else "cached"))


def _spec_names():
    from dlrepro import spec as specmod

    return ", ".join(specmod.available())


@task(help={
    "spec": "spec name (%s) or the path of a spec file" % _spec_names(),
    "framework": "frameworks, comma-separated (default: the spec's)",
    "device": "cpu (default) or cuda",
    "executor": "docker (default) or local (this Python, no containers)",
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
    "base-source": "auto (a base already here, else registry by digest, else debootstrap), registry or bootstrap",
    "timeout": "seconds before a job is killed (default 1800, convergence 86400)",
}, auto_shortflags=False)  # too many options for one-letter flags: each would be a guess
def run(c, spec, framework="", device="cpu", executor="docker", variant="", mode="", batch_size="",
        warmup=UNSET, iterations=UNSET, repeats=UNSET, epochs=UNSET, threads="", gpu=0, quick=False, python="",
        results="", base_source="auto", timeout=UNSET, gpus="", precision="fp32", layout="default",
        cudnn_autotune=True, compile=False, allow_ptx_jit=False):
    """Run every job of a spec and write a result bundle under results/.

    Jobs are frameworks x variants x batch sizes on one device. The exit status is 0 when
    every job that could run here ran (skipped jobs name their reason and remedy), 1 when
    a job failed or none ran, 130 when interrupted (the bundle keeps what finished)."""
    from pydantic import ValidationError

    from dlrepro import build as buildmod, jobs, runs
    from dlrepro.errors import DlreproError

    with user_errors():
        try:
            options = jobs.RunOptions(
                frameworks=_list(framework), device=device, executor=executor, variants=_list(variant),
                mode=mode or None,
                batch_sizes=_list(batch_size, int), warmup=_given(warmup), iterations=_given(iterations),
                repeats=_given(repeats), epochs=_given(epochs),
                threads=_threads(threads), gpu=gpu, quick=quick,
                timeout_s=_given(timeout), gpus=_list(gpus, int), precision=precision, layout=layout,
                cudnn_autotune=cudnn_autotune, compile=compile, allow_ptx_jit=allow_ptx_jit)
        except ValidationError as exc:
            deepest = {}  # an option that may take several forms reports each; keep the most specific
            for e in sorted(exc.errors(), key=lambda e: -len(e["loc"])):
                deepest.setdefault(e["loc"][0], e)
            raise DlreproError("\n".join("%s: %s (got %r)" % (
                OPTION_NAMES.get(name, "--" + str(name).replace("_", "-")), e["msg"], e["input"])
                for name, e in deepest.items())) from None
        except ValueError as exc:  # a batch size that is not a number
            raise DlreproError("--batch-size: expected comma-separated numbers (%s)" % exc) from None
        build_options = buildmod.BuildOptions(base_source)
        try:
            with RichReporter() as reporter:
                path = runs.run(spec, options, build_options, results or REPO_ROOT / "results", python or None,
                                reporter)
        except KeyboardInterrupt as exc:
            console.print("[yellow]interrupted[/] (%s)" % exc)
            raise Exit(code=130) from None
        bundle = json.loads((path / "bundle.json").read_text())
        counts = bundle["counts"]
        summary_table(bundle["jobs"], "%s (%s)" % (bundle["id"], ", ".join("%d %s" % (n, s) for s, n in counts.items())))
        console.print("bundle: %s" % path)
        if counts["failed"] or not counts["ok"]:
            raise Exit(code=1)


@task(help={"show": "print one spec in full: models layer by layer, variants, batch sizes"})
def specs(c, show=""):
    """List the specs, or show one."""
    from rich.table import Table

    from dlrepro import jobs, spec as specmod
    from runner import shapes

    with user_errors():
        if not show:
            for name in specmod.available():
                s = specmod.load(name)
                console.print("[bold]%s[/]: %s" % (name, s.title))
                for vname, v in s.variants.items():
                    m = s.models[v.model]
                    console.print("  %-12s %s parameters, %s, batch sizes %s" % (
                        vname, format(m.parameters, ","), v.data.kind if v.data.kind == "synthetic" else v.data.name,
                        ", ".join("%s %s" % (d, b) for d, b in v.batch_sizes.items())))
            return
        s = specmod.load(show)
        console.print("[bold]%s[/]: %s\nstudy: %s\nsource: %s\nframeworks: %s" % (
            s.name, s.title, s.study, s.source, ", ".join(s.frameworks)))
        for mname, m in s.models.items():
            table = Table(title="model %s: %s parameters" % (mname, format(m.parameters, ",")), caption=m.source)
            for column in ("layer", "settings", "input", "output", "parameters"):
                table.add_column(column, justify="right" if column == "parameters" else "left")
            for layer, shape_in, shape_out, params in shapes.trace(m.layer_dicts(), m.input_shape):
                table.add_row(layer["type"], layer_summary(layer), str(shape_in), str(shape_out), format(params, ","))
            console.print(table)
        for vname, v in s.variants.items():
            console.print("[bold]variant %s[/]: %s" % (vname, v.description))
            console.print_json(data=v.model_dump(mode="json", exclude={"description"}, exclude_none=True))
            for framework in s.frameworks:
                reason = jobs.unsupported(s, vname, framework)
                if reason:
                    console.print("[yellow]unsupported[/] %s on %s: %s" % (vname, framework, reason))
        _references(s)


def _references(s):
    """The spec's published references as one table per kind, and what could not be retrieved."""
    from rich.table import Table

    from dlrepro.references import KINDS

    for kind in KINDS:
        refs = [r for r in s.references if r.kind == kind]
        if not refs:
            continue
        table = Table(title="references: %s (%d)" % (kind, len(refs)))
        for column in ("variant", "framework", "hardware", "batch", "metric", "value", "source"):
            table.add_column(column, overflow="fold")
        for r in refs:
            value = "%s-%s" % tuple(r.value) if isinstance(r.value, list) else "%g" % r.value
            table.add_row(r.variant or "-", "%s %s" % (r.framework, r.framework_version or ""), r.hardware,
                          str(r.batch_size or ""), r.metric, "%s %s" % (value, r.unit), r.source)
        console.print(table)
    for m in s.missing_references:
        console.print("[yellow]missing[/] %s: %s (%s; %s)" % (m.id, m.what, m.where, m.status))


def _dataset_names():
    from dlrepro import datasets

    return ", ".join(sorted(datasets.catalogue().datasets))


@task(name="list", default=True)
def datasets_list(c):
    """List the catalogued datasets: which files the cache holds, re-hashed to verify them."""
    from rich.table import Table

    from dlrepro import datasets

    with user_errors():
        table = Table(title="datasets (cache: %s)" % datasets.root())
        for column in ("dataset", "files cached", "verified", "title"):
            table.add_column(column)
        for name, title, have, total, verified in datasets.status():
            table.add_row(name, "%d of %d" % (have, total), ("[green]yes[/]" if verified else "[red]NO[/]")
                          if have else "-", title)
        console.print(table)


@task(name="fetch", help={"name": "a dataset of dlrepro/datasets.yaml (%s)" % _dataset_names(),
                          "from": "a copy you downloaded: the file, a folder holding the files (optionally .gz), or a tar "
                                  "archive holding them"})
def datasets_fetch(c, name, from_=""):
    """Put a dataset into the cache from its mirrors or a local copy; cached files are re-hashed, corrupt ones replaced."""
    from dlrepro import datasets

    with user_errors():
        try:
            record = datasets.import_local(name, from_) if from_ else datasets.ensure(name, console.print, verify=True)
        except datasets.DatasetError as exc:
            if exc.remedy:
                exc.args = ("%s\nremedy: %s" % (exc, exc.remedy),)
            raise
        for f in record.record["files"].values():
            console.print("%s %s: sha256 %s (%s)" % (name, f["name"], f["sha256"],
                                                     (f["source"] or {}).get("mirror", "cached earlier")))


@task(help={"image": "image name (e.g. torch-2.13.0-cpu); default: every image of the matrix"})
def lock(c, image=""):
    """Recompile lock files (images/locks/NAME.txt from NAME.in) with uv, hashes included."""
    from dlrepro import locks, matrix as matrixmod, transport

    from dlrepro.errors import DlreproError

    with user_errors():
        matrix = matrixmod.load()
        chosen = [e for e in matrix.images if not image or e.name == image]
        if not chosen:
            raise DlreproError("--image: no image %r in images/matrix.yaml; it has: %s"
                               % (image, ", ".join(e.name for e in matrix.images)))
        find_links = [d for d in transport.host_settings().find_links if "://" not in d]
        for entry in chosen:
            console.print("locked %s" % locks.compile_lock(entry, find_links).relative_to(REPO_ROOT))


@task(help={"bundle": "a bundle folder (results/<bundle-id>) or a bundle id under results/"})
def validate(c, bundle):
    """Check a bundle against its schema, one check per concern (checksums, bundle.json, spec hash, jobs,
    tables, statistics); exit status 1 when any check fails."""
    from dlrepro import bundle as bundles, validate as checks

    with user_errors():
        folder = bundles.locate(bundle)
        problems = checks.check(folder)
        for p in problems:
            console.print("[red]%s[/] %s: %s" % (p.check, p.file, p.message))
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
    from pathlib import Path

    from dlrepro import bundle as bundlesmod, tables

    with user_errors():
        summary, samples = tables.merge([bundlesmod.locate(b) for b in _list(bundles) or []], with_samples=bool(out))
        if out:
            Path(out).mkdir(parents=True, exist_ok=True)
            tables.write(out, summary.to_dict("records"), samples.to_dict("records"))
            console.print("wrote %s: %d jobs, %d samples" % (out, len(summary), len(samples)))
        console.print(summary_frame(summary, ["bundle_id", "job_id", "device_name", "framework_version", "status",
                                              "median", "throughput", "measurement", "measurements"],
                                    "%d bundles, %d jobs" % (summary["bundle_id"].nunique(), len(summary))))


@task(help={"bundle": "the bundle to compare (folder or id)",
            "against": "'published' (the spec's published references, default) or another bundle (folder or id): "
                       "then BUNDLE is B, the one checked for regressions against it",
            "min-effect": "smallest relative change of the median reported as a change, >= 0 (default 0.05 = 5%)",
            "alpha": "significance level of the Mann-Whitney U test, between 0 and 1 (default 0.01)"})
def compare(c, bundle, against="published", min_effect="0.05", alpha="0.01"):
    """Compare a bundle with the published numbers (ratio and verdict per cell, ranking with Kendall's
    tau), or with another bundle (Mann-Whitney U on the timed iterations, minimum effect)."""
    from dlrepro import bundle as bundlesmod, compare as comparemod, tables
    from dlrepro.errors import DlreproError

    with user_errors():
        folder = bundlesmod.locate(bundle)
        if against != "published":
            effect, level = _number("--min-effect", min_effect, 0, None), _number("--alpha", alpha, 0, 1)
            base = bundlesmod.locate(against)
            specs = [bundlesmod.body(f)["spec"]["name"] for f in (base, folder)]
            if specs[0] != specs[1]:
                raise DlreproError("%s is a bundle of spec %s, %s of spec %s: compare bundles of one spec"
                                   % (base.name, specs[0], folder.name, specs[1]))
            rows = comparemod.against_bundle(tables.samples(base), tables.samples(folder), effect, level)
            shown = ["variant", "framework", "device", "batch_size", "sample", "n_a", "n_b", "median_a", "median_b",
                     "change", "p_value", "verdict"]
            console.print(summary_frame(rows, shown, "%s (B) against %s (A), seconds; spec %s" % (
                folder.name, base.name, ", ".join(rows["spec"].dropna().unique()))))
            return
        body = bundlesmod.body(folder)
        cells = comparemod.against_published(tables.summary(folder), comparemod.recorded_references([body]))
        if cells.empty:
            console.print("no job of %s matches a published reference of spec %s" % (folder.name, body["spec"]["name"]))
            return
        console.print(summary_frame(cells, ["variant", "batch_size", "framework", "metric", "measured", "published",
                                            "ratio", "verdict", "published_framework", "published_hardware",
                                            "measured_hardware"], "%s against the published references" % folder.name))
        for sentence in comparemod.ranking(cells)["sentence"]:
            console.print("- " + sentence)


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
    from dlrepro import archive as archives

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
    from dlrepro import archive as archives

    with user_errors():
        result = archives.verify(archive)
        for p in result.problems:
            console.print("[red]%s[/]: %s: %s" % (p.file, p.check, p.message))
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
    from dlrepro import report as reports

    with user_errors():
        made = reports.write(_list(bundles) or [], out or None)
        for path in [made.html, made.markdown] + made.figures:
            console.print(str(path))


ns = Collection(build, run, specs, lock, validate, merge, compare, archive, verify, report, Collection("datasets", datasets_list, datasets_fetch))
