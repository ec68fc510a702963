"""`dlrepro plan`: what a study would get on a host before anything runs (dlrepro.plan.coverage), as a table grouped by
what the user would need for each verdict."""

from invoke import Exit

from dlrepro.cli.console import console, user_errors
from dlrepro.cli.options import count, task


@task(
    help={
        "study": "a study of studies/ (dlbench, dlf) or the path of a study file; 'all': the README's table, every "
        "study on the standard hosts (Markdown)",
        "gpu-model": "a GPU model (K80, GTX 980, GTX Titan X, P100, GTX 1080, V100, A100, L4, RTX 4090, H100, H200, or "
        "as nvidia-smi names it; default: this host's)",
        "gpu-count": "how many GPUs, >= 1 (default: 1 with --gpu-model, else this host's)",
        "cpus": "CPU cores, >= 1 (default: this host's)",
        "datasets": "the datasets in the cache, comma-separated, 'all' or 'none' "
        "(default: this host's cache; 'all' for a "
        "host described by --gpu-model, --gpu-count or --cpus)",
        "allow-ptx-jit": "count an image that runs only by PTX JIT as runnable (as `dlrepro run --allow-ptx-jit`)",
        "versions": "the version set whose images run (as `dlrepro study --versions`): published, today (default) or "
        "both (a plan for each)",
    }
)
def plan(c, study, gpu_model="", gpu_count="", cpus="", datasets="", allow_ptx_jit=False, versions="today"):
    """Say what a host can test of a study, and its rent.

    Every claim and published cell: testable, or the exact reason (no GPU, too few GPUs or cores, a tool the suite
    does not run, no image or no kernels for the GPU, no such model in the adapter, a dataset to fetch), each tool
    at the image its version set runs (dlrepro.inputs.eras); a reason several rows share is a numbered note, said once.
    A host described by an option is assumed to have every dataset fetched unless --datasets says otherwise; the
    first line says what was assumed. Then the host's price per hour (dlrepro/inputs/prices.yaml), the study's time and
    cost there estimated from the passes recorded under results/ (each run's pass named), the images and datasets
    with their sizes, and the command to run there (dlrepro.run.estimate). Reads the study, the specs, the image
    matrix and the committed bundles; runs nothing. Exit status 0, 2 on bad input."""
    from dlrepro.errors import DlreproError
    from dlrepro.images import matrix as matrixmod
    from dlrepro.inputs import eras, studies
    from dlrepro.plan import coverage, coverage_table
    from dlrepro.run import estimate

    with user_errors():
        matrix = matrixmod.load()
        if study == "all":
            if gpu_model or gpu_count or cpus or datasets or allow_ptx_jit or versions != "today":
                raise DlreproError(
                    "plan all: prints the README's table for its standard hosts and takes no other option",
                    "name a study to plan for one host: dlrepro plan dlbench --gpu-model H100",
                )
            print(coverage_table.markdown_table([studies.load(n) for n in studies.available()], matrix), end="")
            raise Exit(code=0)
        sets = ("published", "today") if eras.checked(versions) == "both" else (versions,)
        chosen = studies.load(study)
        here = coverage.this_host(allow_ptx_jit)
        described = bool(gpu_model or gpu_count or cpus)
        if gpu_count and not (gpu_model or here.gpu):
            raise DlreproError("--gpu-count: this host has no GPU; say which", "add --gpu-model, e.g. --gpu-model H100")
        hardware = coverage.Hardware(
            gpu_model or here.gpu,
            count("--gpu-count", gpu_count) or (1 if gpu_model else here.gpus),
            count("--cpus", cpus) or here.cpus,
            _datasets(datasets, coverage, here, described),
            allow_ptx_jit,
            None if gpu_model else here.gpu_capability,
        )
        try:
            hardware.capability
        except ValueError as exc:
            raise DlreproError("--gpu-model: %s" % exc, "give one of those names") from None
        said = assumptions(hardware, described, cpus, datasets, coverage.every_dataset())
        recorded = estimate.passes(specs={run.spec for run in chosen.runs.values()})
        for name in sets:
            given = coverage.inputs(chosen, matrix, name)
            show(chosen, hardware, coverage.plan(given, hardware), "%s; %s" % (said, SETS[name]))
            rent(given, hardware, recorded)
    raise Exit(code=0)


SETS = {"today": "today's versions", "published": "the published versions"}


def assumptions(hardware, described, cpus, datasets, catalogue):
    """What a plan's first line assumes, in words: whose cores ("this host's" when a described host did not give
    --cpus) and which datasets ("every dataset assumed fetched", "datasets cached: none of 7", ...)."""
    cores = "this host's cores, --cpus to give yours" if described and not cpus else None
    have = len(hardware.datasets & catalogue)
    if described and not datasets:
        data = "every dataset assumed fetched, --datasets to say which"
    elif datasets:
        data = "datasets: %s of %d, as given" % (have, len(catalogue))
    else:
        data = "datasets cached here: %s of %d, --datasets all assumes them fetched" % (have, len(catalogue))
    return "; ".join(w for w in (cores, data) if w)


def _datasets(text, coverage, here, described):
    """The dataset names --datasets gives ('all', 'none', or names of the catalogue); when not given, every one for a
    ``described`` host, else this host's cache."""
    from dlrepro.errors import DlreproError
    from dlrepro.run.optiontext import split

    wanted = split(text)
    if not wanted:
        return coverage.every_dataset() if described else here.datasets
    if wanted in (["all"], ["none"]):
        return coverage.every_dataset() if wanted == ["all"] else frozenset()
    unknown = sorted(set(wanted) - coverage.every_dataset())
    if unknown:
        raise DlreproError(
            "--datasets: no dataset %s in dlrepro/inputs/datasets.yaml" % ", ".join(map(repr, unknown)),
            "give 'all', 'none' or some of: %s" % ", ".join(sorted(coverage.every_dataset())),
        )
    return frozenset(wanted)


def show(study, hardware, found, said):
    """The plan as text: one line of counts (with ``said``: its assumptions and version set), the line naming the
    study's own tables that are not in the suite where there are some (studies.Study.unretrieved: before anyone rents a
    K80 to judge DLBench's), then the claims grouped by cause, then the cells' counts by cause, then the notes: each
    reason that two rows share or that the cells' line counts, once (plan_text)."""
    from rich.table import Table

    from dlrepro.cli import plan_text
    from dlrepro.plan import coverage

    name = study.title.split(" - ")[0]
    testable, causes = coverage.counts(found["claims"])
    cells, cell_causes = coverage.counts(found["cells"])
    console.print(
        "On %s [%s]: %d of %s %d claims testable; %d of %d published cells judged, %d more shown "
        "(measured on other hardware than the published)."
        % (
            hardware.describe(),
            said,
            testable,
            name + ("'" if name.endswith("s") else "'s"),
            len(found["claims"]),
            cells,
            len(found["cells"]),
            cell_causes.get("other hardware", 0),
        ),
        markup=False,
    )
    if study.unretrieved():
        console.print(study.unretrieved(), markup=False, soft_wrap=True)
    notes, shared = plan_text.Notes(), plan_text.shared_reasons(found)
    table = Table(title="claims by what they need", show_lines=False)
    for column in ("needs", "claim", "why"):
        table.add_column(column, overflow="fold")
    for i, o in enumerate(o for o in found["claims"] if o.testable):
        table.add_row("" if i else "nothing more: testable", o.what, plan_text.why_text(o, notes, shared))
    for cause in causes:
        for i, o in enumerate(o for o in found["claims"] if not o.testable and o.cause == cause):
            table.add_row("" if i else coverage.SHORT[cause], o.what, plan_text.why_text(o, notes, shared))
    console.print(table)
    cells_line = plan_text.cells_line(found, notes)
    for line in ([cells_line] if cells_line else []) + notes.lines():
        console.print(line, markup=False, soft_wrap=True)


def rent(given, hardware, recorded):
    """What renting ``hardware`` for the study takes (dlrepro.run.estimate, from the Passes ``recorded``): its price per
    hour, the study's estimated time and cost there with their source, the images and datasets it needs, and the
    command to run there."""
    from dlrepro.cli import plan_text
    from dlrepro.run import estimate

    runs = estimate.runs(given, hardware, recorded)
    price = estimate.price(hardware)
    lines = [plan_text.price_line(price, hardware)]
    if runs:
        lines += plan_text.time_lines(runs, price) + plan_text.fetch_lines(
            runs, estimate.image_sizes(), estimate.dataset_bytes
        )
    else:
        lines.append("time: none of the study's runs has a job on this host")
    lines.append(plan_text.command_line(given.study, given.versions))
    console.print("To rent this host:", markup=False)
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)
