"""The progress of a run or a study on the terminal: a rich bar over the jobs and one line per finished job."""

import datetime
import statistics

from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from dlrepro.cli.console import MARK, console, dim
from dlrepro.run.runs import Reporter


def job_line(job_id, result):
    """One line for a finished job: status, median and spread, throughput, parameters, or the reason."""
    status = result["status"]
    line = "%s %s" % (MARK.get(status, status), job_id)
    timing = result.get("timing")
    if status == "ok" and timing:
        s = timing["summary"]
        line += "  %.4g s (mean %.4g, IQR %.2g) %s, %.4g %s" % (
            s["median"],
            s["mean"],
            s["iqr"],
            timing["quantity"],
            timing["throughput"],
            timing["throughput_unit"],
        )
        params = result.get("parameters")
        if params:
            line += ", %s parameters" % format(params["measured"], ",")
            for c in params.get("conventions") or []:
                line += " (+%s by convention: %s)" % (format(c["difference"], ","), c["name"])
        conv = result.get("convergence") or {}
        if conv.get("final_test_accuracy") is not None:
            line += ", test accuracy %.2f%%" % (100 * conv["final_test_accuracy"])
        if conv.get("final_perplexity") is not None:
            line += ", test perplexity %.1f" % conv["final_perplexity"]
        if conv:
            line += ", %.1f s for %d epochs" % (conv["total_seconds"], len(conv["epochs"]))
        if result.get("inference"):
            line += ", %.3g s per 1000 images" % result["inference"]["seconds_per_1000_images"]
    elif result.get("reason"):
        line += ": " + result["reason"]
        if result.get("remedy"):
            line += "\n    remedy: " + result["remedy"]
    return line


def skipped_summary(causes):
    """One paragraph per cause of skipped jobs, ``causes`` {(reason, remedy): [job ids]}: how many jobs, the reason,
    the remedy once, and the jobs' list."""
    lines = []
    for (reason, remedy), job_ids in causes.items():
        lines.append("%s %d job%s: %s" % (MARK["skipped"], len(job_ids), "" if len(job_ids) == 1 else "s", reason))
        if remedy:
            lines.append("    remedy: " + remedy)
        lines.append("    jobs: " + ", ".join(job_ids))
    return lines


class RichReporter(Reporter):
    """The run's progress as a rich bar over the jobs, one line per finished job; jobs queued in a scheduler
    (Slurm) are counted as queued, running and done. Skipped jobs are told by cause: the first of a cause with
    its reason, the others as the same; once the run ends, each cause once with its remedy and its jobs
    (``skipped_summary``)."""

    def __init__(self):
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.task = None
        self.queued, self.running = set(), set()
        self.skipped = {}  # (reason, remedy): [job ids]

    def _describe(self, job_id):
        counts = (
            "%d queued, %d running: " % (len(self.queued), len(self.running)) if self.queued or self.running else ""
        )
        self.progress.update(self.task, description=counts + (job_id or ""))

    def __enter__(self):  # the bar starts with the jobs: an error before them prints alone, on its first line
        return self

    def __exit__(self, *exc):
        if self.task is not None:
            self.progress.stop()
        for line in skipped_summary(self.skipped):
            console.print(line)

    def _begin(self, description, **fields):
        self.progress.start()
        self.task = self.progress.add_task(description, **fields)

    def log(self, message):
        self.progress.console.print(dim(message))

    def started(self, total):
        if self.task is None:
            self._begin("jobs", total=total)
        else:  # a resume that first took the results of submitted jobs
            self.progress.reset(self.task, total=total)

    def job_queued(self, job_id):
        self.queued.add(job_id)
        self._describe(job_id)

    def job_started(self, job_id):
        self.queued.discard(job_id)
        self.running.add(job_id)
        self._describe(job_id)

    def _finished_line(self, job_id, result):
        if result["status"] != "skipped" or not result.get("reason"):
            return job_line(job_id, result)
        same = self.skipped.setdefault((result["reason"], result.get("remedy")), [])
        same.append(job_id)
        if len(same) > 1:
            return "%s %s: the same reason as %s" % (MARK["skipped"], job_id, same[0])
        return "%s %s: %s (remedy at the end)" % (MARK["skipped"], job_id, result["reason"])

    def job_finished(self, job_id, result):
        self.queued.discard(job_id)
        self.running.discard(job_id)
        self.progress.console.print(self._finished_line(job_id, result))
        self.progress.advance(self.task)
        self._describe(None)


def _seconds(result):
    """A job's wall time (s) from its result's started and finished times, or None."""
    try:
        times = [datetime.datetime.fromisoformat(result[k].replace("Z", "+00:00")) for k in ("started", "finished")]
    except (KeyError, AttributeError, TypeError, ValueError):
        return None
    return (times[1] - times[0]).total_seconds()


class StudyReporter(RichReporter):
    """One bar over a whole study: done / total jobs, elapsed time, and the time left estimated from the jobs
    measured so far (the median wall time of the jobs that ran, times the jobs left)."""

    def __init__(self):
        super().__init__()
        self.progress.columns += (TextColumn("{task.fields[left]}"),)
        self.walls = []

    def started(self, total):
        if self.task is None:
            self._begin("study", total=total, left="")

    def job_finished(self, job_id, result):
        super().job_finished(job_id, result)
        wall = _seconds(result)
        if result.get("status") == "ok" and wall is not None:
            self.walls.append(wall)
        task = self.progress.tasks[self.task]
        if self.walls:
            left = statistics.median(self.walls) * max(task.total - task.completed, 0)
            self.progress.update(self.task, left="about %s left" % datetime.timedelta(seconds=round(left)))
