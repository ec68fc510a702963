"""Specs on the terminal: the list (one row per variant, with the study that uses it and whether its data is
in the cache here) and one spec in full (its models layer by layer, one table of its variants, its references)."""

from rich.table import Table

from dlrepro import folders
from dlrepro.cli.console import console
from dlrepro.inputs import datasets, yamlfile
from dlrepro.inputs.references import KINDS
from runner import shapes


def studies_using():
    """{spec name: [study names whose runs use it]}, from studies/*.yaml as written (not validated: the list
    stays quick, and a broken study file is reported by the tasks that load it)."""
    found = {}
    for name in folders.names(folders.STUDIES_DIR):
        try:
            body = yamlfile.LOADER((folders.STUDIES_DIR / ("%s.yaml" % name)).read_text()).get_single_data()
        except (OSError, ValueError, AttributeError) + (yamlfile.yaml.YAMLError,):
            continue
        for run in (body or {}).get("runs", {}).values():
            users = found.setdefault(run.get("spec"), [])
            if name not in users:
                users.append(name)
    return found


def data_here(data):
    """Where a variant's data stands in this host's cache: "synthetic", "cached", "fallback NAME" (cached) or
    "missing"."""
    if data.kind == "synthetic":
        return "synthetic"
    for i, name in enumerate([data.name] + list(data.fallback)):
        if not datasets.missing(name):
            return "cached" if i == 0 else "fallback %s" % name
    return "missing"


def _data_name(data):
    return "synthetic" if data.kind == "synthetic" else data.name


def _batch_sizes(variant):
    return "; ".join("%s %s" % (d, ",".join(map(str, b))) for d, b in variant.batch_sizes.items())


def spec_list(specs):
    """One table of every variant of ``specs``: spec, variant, mode, parameters, data and whether it is cached
    here, batch sizes per device, and the studies that use the spec."""
    users = studies_using()
    table = Table(title="specs (%d): dlrepro specs --show NAME" % len(specs), title_justify="left")
    for column in ("spec", "variant", "mode", "parameters", "data", "here", "batch sizes", "study"):
        table.add_column(column, justify="right" if column == "parameters" else "left")
    missing = set()
    for s in specs:
        for i, (vname, v) in enumerate(s.variants.items()):
            table.add_row(
                s.name if i == 0 else "",
                vname,
                v.mode,
                format(s.models[v.model].parameters, ","),
                _data_name(v.data),
                data_here(v.data),
                _batch_sizes(v),
                ", ".join(users.get(s.name, [])) if i == 0 else "",
                end_section=i == len(s.variants) - 1,
            )
            if data_here(v.data) == "missing":
                missing.add(v.data.name)
    console.print(table)
    for name in sorted(missing):
        console.print("missing data: dlrepro datasets.fetch %s" % name, markup=False)


def _optimizer(variant):
    o = variant.optimizer
    if o is None:
        return "-"
    text = "%s lr %g" % (o.name, o.lr)
    if o.momentum:
        text += " momentum %g" % o.momentum
    if o.weight_decay:
        text += " wd %g" % o.weight_decay
    return text


def _schedule(variant):
    """warm-up / iterations x repeats, or the epochs (x seeds) of a convergence run, or the batches of an inference
    run."""
    if variant.mode == "convergence":
        seeds = variant.convergence.seeds
        return "%d epochs%s" % (variant.convergence.epochs, " x %d seeds" % seeds if seeds > 1 else "")
    if variant.mode == "inference":
        return "%d batches" % variant.inference.batches
    return "%d / %d x %d" % (variant.warmup, variant.iterations, variant.repeats)


def variant_table(s):
    """The variants of spec ``s`` as one table; each variant's description and sources as numbered notes."""
    table = Table(title="variants of %s" % s.name, title_justify="left")
    for column in (
        "variant",
        "model",
        "mode",
        "data",
        "batch sizes",
        "threads",
        "warm-up / iterations x repeats",
        "optimizer",
        "note",
    ):
        table.add_column(column)
    notes = []
    for vname, v in s.variants.items():
        notes.append(
            "%s%s%s"
            % (
                v.description,
                "; optimizer: %s" % v.optimizer_source if v.optimizer_source else "",
                "; %s" % v.notes if v.notes else "",
            )
        )
        table.add_row(
            vname,
            v.model,
            v.mode,
            "%s (%s)" % (_data_name(v.data), data_here(v.data)),
            _batch_sizes(v),
            ",".join(map(str, v.threads)) or "-",
            _schedule(v),
            _optimizer(v),
            "[%d]" % len(notes),
        )
    console.print(table)
    for i, note in enumerate(notes, 1):
        console.print("  [%d] %s" % (i, note), markup=False)


def spec_detail(s, unsupported):
    """A spec in full: each model layer by layer with shapes and parameters, its variants in one table, which
    framework cannot express which variant (``unsupported``: [(variant, framework, reason)]), and its published
    references. `dlrepro specs --show NAME --json` gives the resolved spec instead."""
    console.print(
        "[bold]%s[/]: %s\nstudy: %s\nsource: %s\nframeworks: %s"
        % (s.name, s.title, s.study, s.source, ", ".join(s.frameworks))
    )
    for mname, m in s.models.items():
        table = Table(title="model %s: %s parameters" % (mname, format(m.parameters, ",")), caption=m.source)
        for column in ("layer", "settings", "input", "output", "parameters"):
            table.add_column(column, justify="right" if column == "parameters" else "left")
        for layer, shape_in, shape_out, params in shapes.trace(m.layer_dicts(), m.input_shape):
            table.add_row(layer["type"], layer_summary(layer), str(shape_in), str(shape_out), format(params, ","))
        console.print(table)
        console.print(
            "initialisation of %s%s:"
            % (mname, " (per framework: %s)" % m.framework_init_source if m.framework_init_source else "")
        )
        for f in s.frameworks:
            console.print("  %-12s %s" % (f, _init_text(m.init_for(f), f)), markup=False)
    variant_table(s)
    for variant, framework, reason in unsupported:
        console.print("[yellow]unsupported[/] %s on %s: %s" % (variant, framework, reason))
    references(s)


def layer_summary(layer):
    """A compact description of a layer: "conv 3x3/2 64", composite layers by their branches."""
    kind = layer["type"]
    if kind == "conv":
        text = "conv %dx%d%s %d" % (
            layer["kernel"],
            layer["kernel"],
            "/%d" % layer["stride"] if layer.get("stride", 1) != 1 else "",
            layer["filters"],
        )
        return text + (" p%d" % layer["pad"] if layer.get("pad") else "")
    if kind in ("residual", "concat"):
        parts = [(key, layer.get(key)) for key in ("body", "shortcut", "after") if layer.get(key)]
        return " | ".join(
            "%s: %s" % (key, ", ".join(layer_summary(layer) for layer in branch)) for key, branch in parts
        ) + (" | shortcut: identity" if kind == "residual" and not layer.get("shortcut") else "")
    settings = ", ".join("%s=%s" % (k, v) for k, v in layer.items() if k not in ("type", "name"))
    return "%s%s" % (kind, " (%s)" % settings if settings else "")


def _init_text(init, framework):
    from runner.frameworks import FRAMEWORKS

    if init.scheme == "default":
        return "default, %s" % FRAMEWORKS[framework].default_init
    return init.scheme + (" +-%g" % init.scale if init.scale else "")


def references(s):
    """The spec's published references as one table per kind, and what could not be retrieved."""
    for kind in KINDS:
        refs = [r for r in s.references if r.kind == kind]
        if not refs:
            continue
        table = Table(title="references: %s (%d)" % (kind, len(refs)))
        for column in ("variant", "framework", "hardware", "batch", "metric", "value", "source"):
            table.add_column(column, overflow="fold")
        for r in refs:
            value = "%s-%s" % tuple(r.value) if isinstance(r.value, list) else "%g" % r.value
            table.add_row(
                r.variant or "-",
                "%s %s" % (r.framework, r.framework_version or ""),
                r.hardware,
                str(r.batch_size or ""),
                r.metric,
                "%s %s" % (value, r.unit),
                r.source,
            )
        console.print(table)
    for m in s.missing_references:
        console.print("[yellow]missing[/] %s: %s (%s; %s)" % (m.id, m.what, m.where, m.status))
