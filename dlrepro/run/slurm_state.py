"""What Slurm says about the tasks of submitted job arrays.

While Slurm knows a job (pending, running, and ``MinJobAge`` seconds after it ended), ``scontrol show job -o``
gives each task's state, reason, node and exit code. After that: ``sacct`` where the site has accounting
(``AccountingStorageType`` other than none), else the job completion file where the site writes one
(``JobCompType=jobcomp/filetxt``, ``JobCompLoc``). A task none of them knows is absent from the answer: then
only the bundle's own files tell whether it finished. The parsers are pure functions of the tools' text.

A query that fails (a non-zero exit other than "Invalid job id", a timeout, slurmctld restarting or failing
over, munge) is tried ``TRIES`` times, ``RETRY_S`` apart; if it still fails, ``tasks`` answers None ("Slurm could
not be asked"), never an empty answer ("asked, and it does not know these tasks").
"""

import re
import subprocess
import time
from typing import NamedTuple, Optional

# states in which a task still runs or may run; every other state is final
ACTIVE = frozenset(
    [
        "PENDING",
        "CONFIGURING",
        "RUNNING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    ]
)
TRIES, RETRY_S = 3, 2.0
UNKNOWN_JOB = "Invalid job id"  # scontrol's answer for a job it no longer knows (ended more than MinJobAge ago)
_PAIR = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z:/_]*)=(\S*)")


class Task(NamedTuple):
    """One array task as Slurm reports it: ``array_id`` (the array's job id), ``index`` (its task index),
    ``job_id`` (the task's own job id), ``state`` (e.g. RUNNING, COMPLETED, CANCELLED, TIMEOUT, FAILED),
    ``reason`` (Slurm's reason text, None when "None"), ``node`` (None before it starts), ``exit_code``
    ("status:signal", None when not known) and ``source`` (scontrol, sacct or jobcomp)."""

    array_id: str
    index: int
    job_id: str
    state: str
    reason: Optional[str]
    node: Optional[str]
    exit_code: Optional[str]
    source: str

    @property
    def active(self):
        return self.state in ACTIVE

    def describe(self):
        """One line: ``task 12_3 (job 15) on n1: CANCELLED, exit code 0:15 (scontrol)``."""
        return "task %s_%d (job %s)%s: %s%s%s (%s)" % (
            self.array_id,
            self.index,
            self.job_id,
            " on %s" % self.node if self.node else "",
            self.state,
            ", reason %s" % self.reason if self.reason else "",
            ", exit code %s" % self.exit_code if self.exit_code else "",
            self.source,
        )


def indices(text):
    """Task indices of an ArrayTaskId text: ``3``, ``0-4%2``, ``1,3-5``."""
    found = []
    for part in text.split("%")[0].split(","):
        low, _, high = part.partition("-")
        if low.isdigit():
            found.extend(range(int(low), int(high or low) + 1))
    return found


def _none(value):
    return None if value in (None, "", "None", "(null)") else value


def _from_fields(fields, source):
    """The Tasks of one record of key=value fields (scontrol's one-line format, the jobcomp file)."""
    array_id, job_id = fields.get("ArrayJobId"), fields.get("JobId")
    if not array_id or not job_id:
        return []
    state = fields.get("JobState", "").split()[0] if fields.get("JobState") else "UNKNOWN"
    node = _none(fields.get("NodeList"))
    return [
        Task(array_id, index, job_id, state, _none(fields.get("Reason")), node, _none(fields.get("ExitCode")), source)
        for index in indices(fields.get("ArrayTaskId", ""))
    ]


def fields(line):
    """{key: value} of one line of ``KEY=VALUE`` pairs (values without spaces, as the fields read here are)."""
    return {m.group(1): m.group(2) for m in _PAIR.finditer(line)}


def parse_scontrol(text):
    """Tasks of ``scontrol show job -o`` output (one job per line; a pending array's unstarted tasks share one)."""
    return [t for line in text.splitlines() if line.strip() for t in _from_fields(fields(line), "scontrol")]


def parse_jobcomp(text):
    """Tasks of a jobcomp/filetxt file (one finished job per line, the same KEY=VALUE pairs)."""
    return [t for line in text.splitlines() if line.strip() for t in _from_fields(fields(line), "jobcomp")]


def parse_sacct(text):
    """Tasks of ``sacct -n -P -X -o JobIDRaw,JobID,State,Reason,NodeList,ExitCode`` output."""
    found = []
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 6 or "_" not in parts[1]:
            continue
        raw, (array_id, index), state = parts[0], parts[1].split("_", 1), parts[2].split()[0]
        if index.isdigit():
            found.append(
                Task(array_id, int(index), raw, state, _none(parts[3]), _none(parts[4]), _none(parts[5]), "sacct")
            )
    return found


class QueryFailed(Exception):
    """A Slurm command that did not answer (after ``TRIES`` tries): its command line and what it said."""


def _run(command, env=None, unknown_ok=False):
    """The standard output of ``command``, tried ``TRIES`` times; "" when ``unknown_ok`` and it says the job is
    unknown (UNKNOWN_JOB). Raises QueryFailed when every try fails or times out."""
    said = ""
    for attempt in range(TRIES):
        if attempt:
            time.sleep(RETRY_S)
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=60, env=env)
        except (OSError, subprocess.TimeoutExpired) as exc:
            said = str(exc)
            continue
        if proc.returncode == 0:
            return proc.stdout
        said = (proc.stderr or proc.stdout).strip()
        if unknown_ok and UNKNOWN_JOB in said:
            return ""
    raise QueryFailed("%s: %s" % (" ".join(command), said or "no answer"))


def config(env=None):
    """``scontrol show config`` as {key: value}. Raises QueryFailed when it cannot be read."""
    text = _run(["scontrol", "show", "config"], env)
    return {k.strip(): v.strip() for k, sep, v in (line.partition("=") for line in text.splitlines()) if sep}


def tasks(wanted, env=None):
    """{(array id, index): Task} for the tasks ``wanted`` ((array id, index) pairs) that Slurm knows: from
    scontrol, then sacct (with accounting) or the jobcomp file for those scontrol no longer knows; None when
    Slurm could not be asked (QueryFailed after its retries): then nothing is known of any task."""
    try:
        return _tasks({(str(a), int(i)) for a, i in wanted}, env)
    except QueryFailed:
        return None


def _tasks(wanted, env):
    found = {}
    for array_id in sorted({a for a, _ in wanted}):
        for task in parse_scontrol(_run(["scontrol", "show", "job", "-o", array_id], env, unknown_ok=True)):
            if (task.array_id, task.index) in wanted:
                found[(task.array_id, task.index)] = task
    if len(found) == len(wanted):
        return found
    settings = config(env)
    later = []
    if settings.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none":
        later = parse_sacct(
            _run(
                [
                    "sacct",
                    "-n",
                    "-P",
                    "-X",
                    "-j",
                    ",".join(sorted({a for a, _ in wanted})),
                    "-o",
                    "JobIDRaw,JobID,State,Reason,NodeList,ExitCode",
                ],
                env,
            )
        )
    elif settings.get("JobCompType") == "jobcomp/filetxt" and _none(settings.get("JobCompLoc")):
        try:
            with open(settings["JobCompLoc"]) as f:
                later = parse_jobcomp(f.read())
        except FileNotFoundError:  # no job has ended since the file was set up
            later = []
        except OSError as exc:
            raise QueryFailed("the jobcomp file %s: %s" % (settings["JobCompLoc"], exc)) from None
    known = dict(found)
    for task in later:  # the last record of a task wins (a requeued task is written again)
        if (task.array_id, task.index) in wanted and (task.array_id, task.index) not in known:
            found[(task.array_id, task.index)] = task
    return found
