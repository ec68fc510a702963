"""A study's published tables in their own layout, the value measured here beside each published cell.

Each cell is one (row: a tool of the study, column: a published column) and gets one outcome
(answers.verdicts.CELL), judged as answers.published.judge judges a spec's references:
  REPRODUCES / DIFFERS  the 95% interval of measured / published inside or wholly outside the tolerance, on the
                        same hardware (``direction``: faster / slower, higher / lower);
  CANNOT_TELL           the interval across the tolerance's edge, or no interval, on the same hardware;
  OTHER_HARDWARE        a time or rate measured on other hardware: the ratio is shown, not judged;
  CANNOT_COMPARE        with the reason: the study's values were not retrieved, the suite does not run the tool,
                        the published cell is empty, a smoke pass (a --quick job, "trained 1 of 3 epochs": its
                        value shown, no ratio), the job measured another quantity, several jobs match
                        (answers.measured.pick), or "cannot judge: bundle X missing" (``missing``);
  NOT_RUN               with the reason: the run is not runnable here, the job was skipped or failed.
The measured value is shown whenever a job measured the cell's quantity, whatever the outcome. On a CPU, the tools
of one column are set side by side at one thread count: the column's, else the largest every measured tool has
(answers.measured.common_threads), named in ``threads``. A measured cell whose job timed its step otherwise than the
suite's default, or whose study's scripts did (the study's ``steps``), says how in ``step`` (answers.steps).
Per column, the ranking of the tools measured vs published (answers.ranking: Kendall's tau), made only from
cells measured on the published hardware's device class.
"""

from dataclasses import dataclass, field

import pandas as pd

from dlrepro.answers import measured, published, ranking, steps, verdicts
from dlrepro.inputs.references import of_column

OUTCOMES = verdicts.CELL


@dataclass
class Cell:
    """One published cell and what was measured for it; values in the measured unit (s, images/s, fraction)."""

    row: str  # the tool, as the table prints it
    column: str  # the column's label
    published: float = None
    measured: float = None  # shown whenever the job measured the quantity (a smoke pass's too)
    ratio: float = None  # measured / published (None for a smoke pass)
    lower: float = None  # the tolerance the ratio is judged against
    upper: float = None
    outcome: str = ""  # verdicts.CELL
    direction: str = None  # of a ratio outside the tolerance: faster / slower, higher / lower
    why: str = ""  # the particular reason, for the cell
    reason: str = ""  # the kind of reason, for the counts
    smoke: str = None  # why the measured value is a smoke pass (answers.measured.smoke), or None
    interval: tuple = None  # the measured value's 95% interval (low, high: repeats or seeds), or None
    threads: int = None  # the CPU threads of the measured job
    framework: str = None
    run: str = None  # the study run the measured row comes from
    job_id: str = None
    measured_on: str = None  # the device name of the measured row
    step: str = ""  # how the measured job's step was timed, where it or the study's differs (answers.steps.note)


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
    kind: str = None  # the kind of its metric: time, rate or accuracy (answers.measured.metric_kind)
    timers: list = field(default_factory=list)  # 'column: PyTorch by device_events; JAX by host_sync' where mixed


def _measured_rows(summary, column, framework, missing):
    """(run id, the summary rows of the column's first run that has the framework's job), else (None, empty);
    runs whose bundle is ``missing`` are passed over."""
    if not len(summary):
        return None, summary
    mine = (summary["variant"] == column.variant) & (summary["framework"] == framework)
    if column.batch_size is not None:
        mine &= summary["batch_size"] == column.batch_size
    mine &= (summary["ranks"] == column.gpus) if column.gpus > 1 else (summary["ranks"].fillna(1) == 1)
    for run in column.runs:
        if run in missing:
            continue
        found = mine & (summary["run"] == run)  # one mask, one selection: each selection copies every column
        if found.any():
            return run, summary[found]
    return None, summary.iloc[0:0]


def _outcome(cell, outcome, reason, detail=""):
    cell.outcome, cell.reason, cell.why = outcome, reason, reason + (" (%s)" % detail if detail else "")


def _other_batches(summary, column, framework):
    """{run: [mini-batch sizes]} at which ``framework`` has jobs of the column's variant in the column's runs,
    none of them the column's mini-batch."""
    if not len(summary):
        return {}
    mine = summary[
        summary["run"].isin(column.runs) & (summary["framework"] == framework) & (summary["variant"] == column.variant)
    ]
    return {run: sorted(int(b) for b in set(g["batch_size"].dropna())) for run, g in mine.groupby("run", sort=True)}


def _not_found(cell, column, not_run, missing, elsewhere=None, left_out=None):
    """The outcome of a cell whose framework has no job at the column's configuration in any of its runs
    (``elsewhere``: {run: mini-batch sizes} it has jobs of the column's variant at; ``left_out``: {(run, variant,
    framework): why its bundle left that pair out}, e.g. an adapter that cannot express the model)."""
    gone = [missing[r] for r in column.runs if r in missing]
    ran = [r for r in column.runs if r not in not_run and r not in missing]
    why = [
        (r, (left_out or {})[(r, column.variant, cell.framework)])
        for r in ran
        if (r, column.variant, cell.framework) in (left_out or {})
    ]
    if why:
        _outcome(
            cell,
            verdicts.NOT_RUN,
            "left out of the run: %s" % why[0][1].split(":")[0],
            "%s in run %s: %s" % (cell.framework, why[0][0], why[0][1]),
        )
    elif elsewhere:
        _outcome(
            cell,
            verdicts.NOT_RUN,
            "not measured at this mini-batch",
            "%s measured %s"
            % (
                cell.framework,
                "; ".join("mini-batch %s in run %s" % (", ".join(map(str, b)), r) for r, b in elsewhere.items()),
            ),
        )
    elif ran:
        _outcome(
            cell,
            verdicts.NOT_RUN,
            "the framework was not among those run",
            "%s in run %s" % (cell.framework, ", ".join(ran)),
        )
    elif gone:
        _outcome(cell, verdicts.CANNOT_COMPARE, "cannot judge: bundle missing", "; ".join(gone))
    else:
        _outcome(cell, verdicts.NOT_RUN, not_run[column.runs[0]], "run %s" % column.runs[0])


def _judge(cell, row, ref):
    """Fill a cell with a published value and its measured row from answers.published.judge."""
    judged = published.judge(row, ref)
    cell.ratio, cell.direction, cell.smoke, cell.outcome = judged.ratio, judged.direction, judged.smoke, judged.verdict
    cell.lower, cell.upper = judged.lower, judged.upper
    if judged.verdict == verdicts.OTHER_HARDWARE:
        _outcome(cell, judged.verdict, "other hardware", judged.why)
    elif judged.smoke:
        _outcome(cell, judged.verdict, "smoke pass", judged.smoke)
    elif judged.verdict == verdicts.CANNOT_COMPARE:
        cell.reason, cell.why = "the job measured another quantity", judged.why
    elif judged.verdict == verdicts.CANNOT_TELL:
        _outcome(
            cell,
            judged.verdict,
            "no 95% interval" if judged.interval is None else "interval across the tolerance",
            judged.why.split(": ", 1)[-1] if judged.interval is None else judged.why,
        )
    elif judged.verdict == verdicts.DIFFERS:
        _outcome(cell, judged.verdict, judged.direction)
    return judged


def _cell(study, table, column, tool, summary, references, not_run, missing, threads=None, left_out=None):
    """(Cell, answers.published.Judged or None, the measured row or None) of one tool in one column."""
    cell = Cell(tool, column.label, framework=study.framework(tool))
    ref = of_column(references, column, tool) if table.status == "published" else None
    if ref is not None and not isinstance(ref.value, list):
        cell.published = ref.value * published.TO_MEASURED_UNIT[ref.unit]
    if table.status != "published":
        _outcome(cell, verdicts.CANNOT_COMPARE, "the published values were not retrieved", table.source)
    if cell.framework is None:
        if not cell.outcome:
            _outcome(cell, verdicts.CANNOT_COMPARE, "a tool the suite does not run", study.not_run_text([tool]))
        return cell, None, None
    cell.run, rows = _measured_rows(summary, column, cell.framework, missing)
    ok = rows[rows["status"] == "ok"]
    row, ambiguous = measured.pick(ok, column.threads or threads) if len(ok) else (None, None)
    if row is not None:
        cell.measured, cell.job_id = measured.raw(row, column.metric), row["job_id"]
        cell.threads = measured.get(row, "threads")
        cell.measured_on, cell.interval = row["device_name"], measured.interval(row, column.metric)
        cell.step = steps.note(study, tool, cell.run, row)
    if cell.outcome:
        return cell, None, None  # measured beside the published cell, which cannot be compared
    if cell.published is None:
        _outcome(cell, verdicts.CANNOT_COMPARE, "the table has no value for this tool", tool)
    elif cell.run is None:
        _not_found(cell, column, not_run, missing, _other_batches(summary, column, cell.framework), left_out)
    elif not len(ok):
        failed = rows.iloc[-1]
        _outcome(
            cell, verdicts.NOT_RUN, "the job was %s" % failed["status"], "%s: %s" % (failed["job_id"], failed["reason"])
        )
    elif row is None:
        _outcome(cell, verdicts.CANNOT_COMPARE, "several jobs match", ambiguous)
    else:
        return cell, _judge(cell, row, ref), row
    return cell, None, None


def build(study, summary, references, not_run, missing=None, left_out=None):
    """Every table of ``study`` (PaperTable), from ``summary`` (summary rows with a ``run`` column),
    ``references`` ({spec: [Reference]}), ``not_run`` ({run id: why it did not run here}), ``missing``
    ({run id: why its measurements are not available, e.g. "bundle X missing"}) and ``left_out`` ({(run id,
    variant, framework): why the run's bundle left it out})."""
    missing = missing or {}
    tables = []
    for name, table in study.tables.items():
        cells = {}
        sentences, timers = [], []
        for column in table.columns:
            spec = study.runs[column.runs[0]].spec
            ranked = []
            shared = _shared_threads(study, table, column, summary)
            mixed = measured.mixed_timers(_column_rows(study, table, column, summary))
            if mixed:
                timers.append("%s: %s" % (column.label, mixed))
            for tool in table.rows:
                cell, judged, row = _cell(
                    study, table, column, tool, summary, references.get(spec, []), not_run, missing, shared, left_out
                )
                cells[(tool, column.label)] = cell
                if judged is not None and judged.measured is not None:
                    ranked.append(
                        _ranking_cell(
                            spec, column, cell, judged, of_column(references.get(spec, []), column, tool), row
                        )
                    )
            if len(ranked) >= 2:
                ranks = ranking.ranking(pd.DataFrame(ranked, columns=published.CELL_COLUMNS))
                sentences += ["%s: %s" % (column.label, s) for s in ranks["sentence"]]
        tables.append(
            PaperTable(
                name,
                table.title,
                table.source,
                table.status,
                list(table.rows),
                [c.label for c in table.columns],
                cells,
                sentences,
                table.note,
                measured.metric_kind(table.columns[0].metric),
                timers,
            )
        )
    return tables


def _column_rows(study, table, column, summary):
    """The ok summary rows of the column's variant (and mini-batch) in its runs, of the table's tools."""
    if not len(summary):
        return summary
    rows = summary[
        summary["run"].isin(column.runs) & (summary["variant"] == column.variant) & (summary["status"] == "ok")
    ]
    if column.batch_size is not None:
        rows = rows[rows["batch_size"] == column.batch_size]
    return rows[rows["framework"].isin({study.framework(t) for t in table.rows} - {None})]


def _shared_threads(study, table, column, summary):
    """The thread count a CPU column's tools are set side by side at: the largest every tool with an ok job of the
    column's variant (and mini-batch) in its runs has (answers.measured.common_threads), else None."""
    if column.threads is not None:
        return None
    rows = _column_rows(study, table, column, summary)
    return measured.common_threads(rows, sorted(set(rows["framework"]))) if len(rows) else None


def _ranking_cell(spec, column, cell, judged, ref, row):
    """An answers.published.CELL_COLUMNS row of one measured cell, for answers.ranking."""
    low, high = judged.interval or (None, None)
    return {
        "spec": spec,
        "variant": column.variant,
        "batch_size": row["batch_size"],
        "framework": cell.framework,
        "measured_framework_version": row["framework_version"],
        "device": row["device"],
        "threads": row["threads"] if row["device"] == "cpu" else None,
        "measured_hardware": row["device_name"],
        "metric": column.metric,
        "unit": published.UNIT[measured.metric_kind(column.metric)],
        "measured": judged.measured,
        "ci95_low": low,
        "ci95_high": high,
        "published": judged.published,
        "ratio": judged.ratio,
        "lower": judged.lower,
        "upper": judged.upper,
        "verdict": judged.verdict,
        "direction": judged.direction,
        "why": judged.why,
        "smoke": judged.smoke,
        "no_interval": judged.no_interval,
        "seeds": measured.get(row, "seeds"),
        "reference_id": ref.id,
        "reference_kind": ref.kind,
        "published_framework": ref.framework,
        "published_version": ref.framework_version,
        "published_hardware": ref.hardware,
        "source": ref.source,
        "bundle_id": row["bundle_id"],
        "job_id": row["job_id"],
    }


def counts(tables):
    """{outcome: number of cells} over every table (OUTCOMES), and {outcome: {reason: number}} for the cells
    that cannot tell, could not be compared or were not run."""
    total = {o: 0 for o in OUTCOMES}
    why = {verdicts.CANNOT_TELL: {}, verdicts.CANNOT_COMPARE: {}, verdicts.NOT_RUN: {}}
    for table in tables:
        for cell in table.cells.values():
            total[cell.outcome] += 1
            if cell.outcome in why:
                why[cell.outcome][cell.reason] = why[cell.outcome].get(cell.reason, 0) + 1
    return total, why
