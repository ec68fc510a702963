"""Invoke's parser errors as the suite's usage errors: what was wrong in the suite's words, with the near miss
("did you mean report?") and what to type instead. Standard library only: an error costs no import."""

import re

from dlrepro.names import near_miss

UNKNOWN = re.compile(r"^No idea what '(.+)' is!$")
MISSING = re.compile(r"^'(.+)' did not receive required positional arguments: ")
NO_VALUE = re.compile(r"^Flag <\w+: ([\w-]+).*> needed value and was not given one!$")
LIST_HINT = "`dlrepro --list` lists the tasks, `dlrepro --help TASK` their arguments"


def explain(message, context, task_names, core_flags):
    """(error, remedy) of Invoke's ParseError text ``message``, raised in parser context ``context`` (a task's,
    with its arguments and the values given so far; None before the first task). ``task_names``: every name a
    task answers to; ``core_flags``: the program's own flags (--list, --help, ...). A message of another shape
    is kept as Invoke wrote it."""
    task = getattr(context, "name", None)
    remedy = "`dlrepro --help %s` lists its arguments" % task if task else LIST_HINT
    unknown = UNKNOWN.match(message)
    if unknown and unknown.group(1).startswith("-"):
        flag = unknown.group(1).split("=")[0]
        known = list(core_flags) + (list(context.flags) + list(context.inverse_flags) if context else [])
        return "%sno option %s%s" % ("%s: " % task if task else "", flag, near_miss(flag, known)), remedy
    if unknown:
        word = unknown.group(1)
        taken = [a for a in getattr(context, "positional_args", ()) if a.value is not None]
        return "no task %r%s" % (
            word,
            near_miss(word, task_names)
            or (
                "; %s takes %s" % (task, ", ".join("one %s (%r given)" % (a.name, a.value) for a in taken))
                if taken
                else ""
            ),
        ), remedy
    if MISSING.match(message) and context is not None:
        return "%s: missing %s" % (task, "; ".join(_wanted(a) for a in context.missing_positional_args)), (
            "`dlrepro %s %s`; %s" % (task, " ".join(a.name.upper() for a in context.positional_args), remedy)
        )
    no_value = NO_VALUE.match(message)
    if no_value and context is not None and no_value.group(1) in context.args:
        arg = context.args[no_value.group(1)]
        return "%s: --%s needs a value: %s" % (task, arg.name.replace("_", "-"), arg.help), remedy
    return message, remedy


def _wanted(arg):
    """'NEW: the bundle B ...; or give --against: the baseline A ...' for a positional argument not given: its
    help (without the "(positional)" mark), and the option that may stand in for it (dlrepro.cli.options)."""
    text = "%s: %s" % (arg.name.upper(), re.sub(r"^\(positional[^)]*\) ", "", arg.help or ""))
    stand_in = getattr(arg, "stand_in", None)
    return text + ("; or give --%s: %s" % (stand_in.name, stand_in.help) if stand_in is not None else "")
