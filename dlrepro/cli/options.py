"""One set of options for every task: no automatic short flags (Invoke's first free letter gave one letter a
different meaning per task), four shared ones that mean the same everywhere, positional arguments marked in
the help, and a positional that ``--against`` may stand in for (``compare OLD NEW`` or ``compare NEW --against
OLD``)."""
from invoke import Collection, Task
from invoke.parser import ParserContext

# the only short flags: each means one thing in every task that has the option
SHORT = {"framework": "f", "device": "d", "results": "r", "out": "o"}


class DlTask(Task):
    """An Invoke task with the suite's flags: SHORT's short flags, "(positional)" in a positional's help, and
    ``either`` ({positional: option}): the positional need not be given when that option is."""

    def __init__(self, *args, either=None, **kwargs):
        kwargs["auto_shortflags"] = False
        super().__init__(*args, **kwargs)
        self.either = either or {}

    def arg_opts(self, name, default, taken_names):
        opts = super().arg_opts(name, default, taken_names)
        short = SHORT.get(name)
        if short and short not in taken_names:
            opts["names"].append(short)
        if opts["positional"]:
            opts["help"] = "(positional%s) %s" % (
                ", or --%s" % self.either[name] if name in self.either else "", opts.get("help") or "")
        return opts


class _EitherContext(ParserContext):
    """A task's parser context in which a positional named in ``either`` is not missing once its stand-in option
    has a value."""

    either = {}

    @property
    def missing_positional_args(self):
        return [a for a in self.positional_args if a.value is None
                and not (a.name in self.either and self.flags["--" + self.either[a.name]].value)]


class Tasks(Collection):
    """A collection whose tasks' contexts honour DlTask.either."""

    def to_contexts(self, ignore_unknown_help=None):
        contexts = super().to_contexts(ignore_unknown_help)
        for context in contexts:
            either = getattr(self[context.name], "either", None)
            if either:
                context.__class__ = _EitherContext
                context.either = either
        return contexts
