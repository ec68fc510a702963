"""`dlrepro plan`: what a study would get on a host before anything runs (dlrepro.coverage), as a table grouped by
what the user would need for each verdict."""
from invoke import Exit

from dlrepro.cli.console import console, user_errors
from dlrepro.cli.options import count, task


@task(help={
    "study": "a study of studies/ (dlbench, dlf) or the path of a study file; 'all': the README's table, every "
             "study on the standard hosts (Markdown)",
    "gpu-model": "a GPU model (K80, GTX 980, GTX Titan X, P100, GTX 1080, V100, A100, L4, RTX 4090, H100, H200, or "
                 "as nvidia-smi names it; default: this host's)",
    "gpu-count": "how many GPUs, >= 1 (default: 1 with --gpu-model, else this host's)",
    "cpus": "CPU cores, >= 1 (default: this host's)",
    "datasets": "the datasets in the cache, comma-separated, 'all' or 'none' (default: this host's cache)",
    "allow-ptx-jit": "count an image that runs only by PTX JIT as runnable (as `dlrepro run --allow-ptx-jit`)",
})
def plan(c, study, gpu_model="", gpu_count="", cpus="", datasets="", allow_ptx_jit=False):
    """Say what a host would get of a study.

    Every claim and published cell: testable, or the exact reason (no GPU, too few GPUs or cores, a tool the suite
    does not run, no image or no kernels for the GPU, no such model in the adapter, a dataset to fetch). Reads the
    study, the specs and the image matrix; runs nothing. Exit status 0, 2 on bad input."""
    from dlrepro import coverage, studies
    from dlrepro.errors import DlreproError
    from dlrepro.images import matrix as matrixmod

    with user_errors():
        matrix = matrixmod.load()
        if study == "all":
            if gpu_model or gpu_count or cpus or datasets or allow_ptx_jit:
                raise DlreproError("plan all: prints the README's table for its standard hosts and takes no other "
                                   "option", "name a study to plan for one host: dlrepro plan dlbench --gpu-model H100")
            print(coverage.markdown_table([studies.load(n) for n in studies.available()], matrix), end="")
            raise Exit(code=0)
        chosen = studies.load(study)
        here = coverage.this_host(allow_ptx_jit)
        if gpu_count and not (gpu_model or here.gpu):
            raise DlreproError("--gpu-count: this host has no GPU; say which", "add --gpu-model, e.g. --gpu-model H100")
        hardware = coverage.Hardware(
            gpu_model or here.gpu, count("--gpu-count", gpu_count) or (1 if gpu_model else here.gpus),
            count("--cpus", cpus) or here.cpus, _datasets(datasets, coverage, here), allow_ptx_jit,
            None if gpu_model else here.gpu_capability)
        try:
            hardware.capability
        except ValueError as exc:
            raise DlreproError("--gpu-model: %s" % exc, "give one of those names") from None
        show(chosen, hardware, coverage.plan(chosen, hardware, matrix))
    raise Exit(code=0)


def _datasets(text, coverage, here):
    """The dataset names --datasets gives ('all', 'none', or names of the catalogue), this host's when not given."""
    from dlrepro.errors import DlreproError
    from dlrepro.run.optiontext import split

    wanted = split(text)
    if not wanted:
        return here.datasets
    if wanted in (["all"], ["none"]):
        return coverage.every_dataset() if wanted == ["all"] else frozenset()
    unknown = sorted(set(wanted) - coverage.every_dataset())
    if unknown:
        raise DlreproError("--datasets: no dataset %s in dlrepro/datasets.yaml" % ", ".join(map(repr, unknown)),
                           "give 'all', 'none' or some of: %s" % ", ".join(sorted(coverage.every_dataset())))
    return frozenset(wanted)


def show(study, hardware, found):
    """The plan as text: one line of counts, then the claims grouped by cause, then the cells' counts."""
    from rich.table import Table

    from dlrepro import coverage

    name = study.title.split(" - ")[0]
    testable, causes = coverage.counts(found["claims"])
    cells, cell_causes = coverage.counts(found["cells"])
    console.print("On %s: %d of %s %d claims testable; %d of %d published cells judged, %d more shown (measured on "
                  "other hardware than the published)." % (
                      hardware.describe(), testable, name + ("'" if name.endswith("s") else "'s"),
                      len(found["claims"]), cells, len(found["cells"]), cell_causes.get("other hardware", 0)),
                  markup=False)
    table = Table(title="claims by what they need", show_lines=False)
    for column in ("needs", "claim", "why"):
        table.add_column(column, overflow="fold")
    for o in found["claims"]:
        if o.testable:
            table.add_row("nothing more: testable", o.what, "caveat: %s" % o.caveat if o.caveat else "")
    for cause in causes:
        for o in found["claims"]:
            if not o.testable and o.cause == cause:
                table.add_row(coverage.SHORT[cause], o.what, o.reason)
    console.print(table)
    if cell_causes:
        console.print("published cells not judged: %s" % ", ".join(
            "%s %d" % ("measured on other hardware (shown)" if c == "other hardware" else c, n)
            for c, n in cell_causes.items()), markup=False)
