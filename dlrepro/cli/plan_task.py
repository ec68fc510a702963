"""`dlrepro plan`: what a study would get on a host before anything runs (dlrepro.coverage), as a table grouped by
what the user would need for each verdict."""
from invoke import Exit

from dlrepro.cli.console import console, user_errors
from dlrepro.cli.options import task


@task(help={
    "study": "a study of studies/ (dlbench, dlf) or the path of a study file; 'all': the README's table, every "
             "study on the standard hosts (Markdown)",
    "gpu-model": "a GPU model (K80, GTX 980, Titan X, P100, GTX 1080, V100, A100, L4, RTX 4090, H100, H200; default: "
                 "this host's)",
    "gpu-count": "how many GPUs (default: 1 with --gpu-model, else this host's)",
    "cpus": "CPU cores (default: this host's)",
    "datasets": "the datasets in the cache, comma-separated, or 'all' (default: this host's cache)",
    "allow-ptx-jit": "count an image that runs only by PTX JIT as runnable (as `dlrepro run --allow-ptx-jit`)",
})
def plan(c, study, gpu_model="", gpu_count=0, cpus=0, datasets="", allow_ptx_jit=False):
    """Say what a host would get of a study.

    Every claim and published cell: testable, or the exact reason (no GPU, too few GPUs or cores, a tool the suite
    does not run, no image or no kernels for the GPU, no such model in the adapter, a dataset to fetch). Reads the
    study, the specs and the image matrix; runs nothing. Exit status 0, 2 on bad input."""
    from dlrepro import coverage, studies
    from dlrepro.errors import DlreproError
    from dlrepro.images import matrix as matrixmod
    from dlrepro.run.optiontext import split

    with user_errors():
        matrix = matrixmod.load()
        if study == "all":
            print(coverage.markdown_table([studies.load(n) for n in studies.available()], matrix), end="")
            raise Exit(code=0)
        chosen = studies.load(study)
        here = coverage.this_host(allow_ptx_jit)
        wanted = split(datasets)
        hardware = coverage.Hardware(
            gpu_model or here.gpu, int(gpu_count) or (1 if gpu_model else here.gpus), int(cpus) or here.cpus,
            coverage.every_dataset() if wanted == ["all"] else frozenset(wanted) if wanted else here.datasets,
            allow_ptx_jit, None if gpu_model else here.gpu_capability)
        try:
            hardware.capability
        except ValueError as exc:
            raise DlreproError("--gpu-model: %s" % exc, "give one of those names") from None
        show(chosen, hardware, coverage.plan(chosen, hardware, matrix))
    raise Exit(code=0)


def show(study, hardware, found):
    """The plan as text: one line of counts, then the claims grouped by cause, then the cells' counts."""
    from rich.table import Table

    from dlrepro import coverage

    name = study.title.split(" - ")[0]
    testable, causes = coverage.counts(found["claims"])
    cells, cell_causes = coverage.counts(found["cells"])
    console.print("On %s: %d of %s's %d claims testable, %d of %d published cells." % (
        hardware.describe(), testable, name, len(found["claims"]), cells, len(found["cells"])), markup=False)
    table = Table(title="claims by what they need", show_lines=False)
    for column in ("needs", "claim", "why"):
        table.add_column(column, overflow="fold")
    for o in found["claims"]:
        if o.testable:
            table.add_row("nothing more: testable", o.what, "")
    for cause in causes:
        for o in found["claims"]:
            if not o.testable and o.cause == cause:
                table.add_row(coverage.SHORT[cause], o.what, o.reason)
    console.print(table)
    if cell_causes:
        console.print("published cells not testable: %s" % ", ".join(
            "%s %d" % (c, n) for c, n in cell_causes.items()), markup=False)
