"""How a measured cell's training step was timed, where a study's own scripts timed another step than the suite's
default (the study's ``steps``, runner.contract ``gradients`` and ``thread_pools``): one line for the study
report's footnotes, beside every cell it touches (issue 55).

Pure: a study manifest's ``steps`` and a summary row in, text out.
"""

from dlrepro.answers import measured
from runner.contract import OPTION_DEFAULTS

OPTIONS = ("gradients", "thread_pools")


def _words(values):
    return ", ".join("%s %s" % (k.replace("_", " "), values[k]) for k in OPTIONS if k in values)


def note(study, tool, run, row):
    """The step semantics of ``tool``'s measured ``row`` (a summary row) in study run ``run``, '' where neither the
    job nor the study's scripts differ from the suite's step. What the job ran is its row's ``gradients`` and
    ``thread_pools`` (tables before dlrepro.tables/8 lack them: those jobs ran the defaults; a GPU job's thread
    pools are not compared). The study's is its ``steps`` entry for ``tool`` where that names ``run``, with the work
    its scripts did that the suite's step does not (``differs``).

    'TensorFlow: timed as the study's scripts did: gradients gate_op, thread pools intra_op (studies/dlbench.yaml
    steps.TensorFlow)', or 'TensorFlow: timed with the suite's step, gradients pruned, thread pools all; the study's
    scripts timed gradients gate_op, thread pools intra_op (studies/dlbench.yaml steps.TensorFlow)'."""
    options = OPTIONS if measured.get(row, "device") == "cpu" else ("gradients",)
    ran = {k: measured.get(row, k) or OPTION_DEFAULTS[k] for k in options}
    default = {k: OPTION_DEFAULTS[k] for k in options}
    step = study.steps.get(tool)
    step = step if step is not None and run in step.runs else None
    theirs = {k: getattr(step, k) for k in options} if step is not None else default
    parts = []
    if theirs != default:
        parts.append(
            "timed as the study's scripts did: %s" % _words(ran)
            if ran == theirs
            else "timed with the suite's step, %s; the study's scripts timed %s" % (_words(ran), _words(theirs))
        )
    elif ran != default:
        parts.append("timed with %s" % _words(ran))
    if step is not None and step.differs:
        parts.append("the study's step also did, not reproduced here: %s" % "; ".join(step.differs))
    if not parts:
        return ""
    return "%s: %s%s" % (tool, "; ".join(parts), " (studies/%s.yaml steps.%s)" % (study.name, tool) if step else "")
