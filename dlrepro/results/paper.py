"""A study's published tables in their own layout, the value measured here beside each published cell.

Each cell is one (row: a tool of the study, column: a published column) and gets one outcome:
  "reproduces" / "differs" (the measured / published ratio inside or outside the tolerance, judged as
  dlrepro.results.compare judges it: a time on other hardware is not judged),
  "cannot be compared" with the reason (the study's values were not retrieved, the suite does not run
  the tool, the published cell is empty, the hardware differs, the job measured another quantity),
  "not run" with the reason (the run is not runnable here, the job was skipped or failed).
Per column, the ranking of the tools measured vs published (compare.ranking: Kendall's tau).
"""
from dataclasses import dataclass, field

import pandas as pd

from dlrepro.results import compare
from dlrepro.results.answers import hardware

OUTCOMES = ("reproduces", "differs", "cannot be compared", "not run")


@dataclass
class Cell:
    row: str
    column: str
    published: float = None
    measured: float = None
    ratio: float = None
    verdict: str = ""
    outcome: str = ""
    why: str = ""  # the particular reason, for the cell
    reason: str = ""  # the kind of reason, for the counts
    framework: str = None
    run: str = None


@dataclass
class PaperTable:
    name: str
    title: str
    source: str
    status: str
    rows: list
    columns: list  # column labels
    cells: dict  # (row, column label) -> Cell
    rankings: list = field(default_factory=list)  # one sentence per column that ranks
    note: str = None


def _reference(references, column, tool):
    """The published reference of ``tool`` in ``column`` (variant, batch size, metric, kind, hardware and source
    text), or None."""
    variant = column.reference_variant or column.variant
    for ref in references:
        if ref.variant == variant and ref.metric == column.metric and ref.kind == column.kind \
                and ref.framework == tool and (column.batch_size is None or ref.batch_size == column.batch_size) \
                and (column.hardware is None or column.hardware.lower() in ref.hardware.lower()) \
                and (column.source is None or column.source in ref.source):
            return ref
    return None


def _measured_rows(summary, column, framework):
    """(run id, the summary rows of the column's first run that has the framework's job), else (None, empty)."""
    for run in column.runs:
        rows = summary[(summary["run"] == run) & (summary["variant"] == column.variant)
                       & (summary["framework"] == framework)]
        if column.batch_size is not None:
            rows = rows[rows["batch_size"] == column.batch_size]
        rows = rows[rows["ranks"] == column.gpus] if column.gpus > 1 else rows[rows["ranks"].fillna(1) == 1]
        if column.threads is not None:
            rows = rows[rows["threads"] == column.threads]
        elif rows["threads"].notna().any():
            rows = rows[rows["threads"] == rows["threads"].max()]
        if len(rows):
            return run, rows
    return None, summary.iloc[0:0]


def _outcome(cell, outcome, reason, detail=""):
    cell.outcome, cell.reason, cell.why = outcome, reason, reason + (" (%s)" % detail if detail else "")


def _cell(study, table, column, tool, summary, references, not_run):
    cell = Cell(tool, column.label, framework=study.framework(tool))
    ref = _reference(references, column, tool) if table.status == "published" else None
    if ref is not None and not isinstance(ref.value, list):
        cell.published = ref.value * compare.TO_MEASURED_UNIT[ref.unit]
    if table.status != "published":
        _outcome(cell, "cannot be compared", "the published values were not retrieved", table.source)
    if cell.framework is None:
        if not cell.outcome:
            _outcome(cell, "cannot be compared", "a tool the suite does not run", tool)
        return cell, None
    run, rows = _measured_rows(summary, column, cell.framework)
    cell.run = run
    ok = rows[rows["status"] == "ok"]
    if len(ok):
        row = ok.iloc[-1]
        cell.measured = compare.measured_value(row, column.metric)
    if table.status != "published":
        pass  # measured beside the published cell, which cannot be compared
    elif cell.published is None:
        _outcome(cell, "cannot be compared", "the table has no value for this tool", tool)
    elif run is None:
        ran = [r for r in column.runs if r not in not_run]
        if ran:
            _outcome(cell, "not run", "the framework was not among those run", "%s in run %s" % (
                cell.framework, ", ".join(ran)))
        else:
            _outcome(cell, "not run", not_run[column.runs[0]], "run %s" % column.runs[0])
    elif not len(ok):
        failed = rows.iloc[-1]
        _outcome(cell, "not run", "the job was %s" % failed["status"], "%s: %s" % (failed["job_id"], failed["reason"]))
    elif cell.measured is None:
        done = ok.iloc[-1]
        _outcome(cell, "cannot be compared", "the job measured another quantity", "%s, %s" % (
            done["quantity"], "%s epochs" % done["epochs"] if pd.notna(done["epochs"]) else "mode %s" % done["mode"]))
    else:
        kind = compare.metric_kind(column.metric)
        lower, upper = (ref.tolerance.lower, ref.tolerance.upper) if ref.tolerance else compare.DEFAULT_TOLERANCE[kind]
        cell.ratio = cell.measured / cell.published
        comparable = hardware.same_hardware(ref.hardware, row["device"], row["device_name"], ref.gpus, row["ranks"])
        cell.verdict = compare.verdict(kind, cell.ratio, lower, upper, comparable)
        if cell.verdict == "reproduces":
            cell.outcome = "reproduces"
        elif cell.verdict.startswith("not comparable"):
            _outcome(cell, "cannot be compared", "other hardware", "measured on %s, published on %s" % (
                ok.iloc[-1]["device_name"], ref.hardware))
        else:
            _outcome(cell, "differs", cell.verdict)
    return cell, (ref, ok.iloc[-1] if len(ok) and cell.measured is not None and cell.published is not None else None)


def build(study, summary, references, not_run):
    """Every table of ``study`` (PaperTable), from ``summary`` (summary rows with a ``run`` column),
    ``references`` ({spec: [Reference]}) and ``not_run`` ({run id: why it did not run here})."""
    tables = []
    for name, table in study.tables.items():
        cells = {}
        sentences = []
        for column in table.columns:
            spec = study.runs[column.runs[0]].spec
            ranked = []
            for tool in table.rows:
                cell, pair = _cell(study, table, column, tool, summary, references.get(spec, []), not_run)
                cells[(tool, column.label)] = cell
                if pair and pair[1] is not None:
                    ref, row = pair
                    ranked.append(_ranking_cell(spec, column, cell, ref, row))
            if len(ranked) >= 2:
                ranks = compare.ranking(pd.DataFrame(ranked, columns=compare.CELL_COLUMNS))
                sentences += ["%s: %s" % (column.label, s) for s in ranks["sentence"]]
        tables.append(PaperTable(name, table.title, table.source, table.status, list(table.rows),
                                 [c.label for c in table.columns], cells, sentences, table.note))
    return tables


def _ranking_cell(spec, column, cell, ref, row):
    """A compare.CELL_COLUMNS row of one measured cell, for compare.ranking."""
    timing = column.metric == "seconds_per_minibatch" and compare.repeat_level(row)
    return {"spec": spec, "variant": column.variant, "batch_size": row["batch_size"], "framework": cell.framework,
            "measured_framework_version": row["framework_version"], "device": row["device"],
            "measured_hardware": row["device_name"], "metric": column.metric,
            "unit": {"time": "s", "rate": "images/s", "accuracy": "fraction"}[compare.metric_kind(column.metric)],
            "measured": cell.measured, "ci95_low": row["ci95_low"] if timing else None,
            "ci95_high": row["ci95_high"] if timing else None, "published": cell.published, "ratio": cell.ratio,
            "lower": None, "upper": None, "verdict": cell.verdict, "reference_id": ref.id, "reference_kind": ref.kind,
            "published_framework": ref.framework, "published_version": ref.framework_version,
            "published_hardware": ref.hardware, "source": ref.source, "bundle_id": row["bundle_id"],
            "job_id": row["job_id"]}


def counts(tables):
    """{outcome: number of cells} over every table, and {outcome: {reason: number}} for the cells not judged."""
    total = {o: 0 for o in OUTCOMES}
    why = {"cannot be compared": {}, "not run": {}}
    for table in tables:
        for cell in table.cells.values():
            total[cell.outcome] += 1
            if cell.outcome in why:
                why[cell.outcome][cell.reason] = why[cell.outcome].get(cell.reason, 0) + 1
    return total, why
