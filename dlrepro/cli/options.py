"""One set of options for every task: no automatic short flags (Invoke's first free letter gave one letter a
different meaning per task), four shared ones that mean the same everywhere, positional arguments marked in
the help, and a positional that ``--against`` may stand in for (``compare OLD NEW`` or ``compare NEW --against
OLD``); ``task`` is Invoke's @task with them, and the option help the tasks share."""

from invoke import Task
from invoke import task as invoke_task
from invoke.parser import Argument

# the only short flags: each means one thing in every task that has the option
SHORT = {"framework": "f", "device": "d", "results": "r", "out": "o"}


class DlTask(Task):
    """An Invoke task with the suite's flags: SHORT's short flags, "(positional)" in a positional's help,
    ``either`` ({positional: option}): the positional need not be given when that option is, and ``more``: its
    one positional is a comma-separated list that takes further words too, each kept whole (`report A B` lists A
    and B; dlrepro.cli.main.joined, dlrepro.run.optiontext.names)."""

    def __init__(self, *args, either=None, more=False, **kwargs):
        kwargs["auto_shortflags"] = False
        super().__init__(*args, **kwargs)
        self.either = either or {}
        self.more = more

    def arg_opts(self, name, default, taken_names):
        opts = super().arg_opts(name, default, taken_names)
        short = SHORT.get(name)
        if short and short not in taken_names:
            opts["names"].append(short)
        if opts["positional"]:
            opts["help"] = "(positional%s%s) %s" % (
                ", or --%s" % self.either[name] if name in self.either else "",
                ", one or more" if self.more else "",
                opts.get("help") or "",
            )
        return opts

    def get_arguments(self, ignore_unknown_help=None):
        """Invoke's arguments, the same on every call (Invoke's arg_opts pops each help text it uses, so a second
        call gave arguments without help)."""
        helps = dict(self.help)
        arguments = super().get_arguments(ignore_unknown_help)
        self.help = helps
        by_name = {a.name: a for a in arguments}
        for positional, option in self.either.items():
            by_name[positional].__class__ = _EitherArgument
            by_name[positional].stand_in = by_name[option]
        return arguments


class _EitherArgument(Argument):
    """A positional argument that has a value ("") once its stand-in option has one: the parser asks for it only
    while neither is given."""

    stand_in = None

    @property
    def value(self):
        if self._value is None and self.stand_in is not None and self.stand_in.value:
            return ""
        return super().value

    @value.setter
    def value(self, arg):
        self.set_value(arg, cast=True)


def task(*args, **kwargs):
    """Invoke's @task with the suite's flags (DlTask)."""
    return invoke_task(*args, klass=DlTask, **kwargs)


# option help shared by the tasks
ENGINE_HELP = "docker (default, or $DLREPRO_ENGINE) or podman (its Docker-compatible API socket)"
BASE_SOURCE_HELP = "auto (a base already here, else registry by digest, else mmdebstrap), registry or bootstrap"
RESULTS_HELP = "the results folder (default: $DLREPRO_RESULTS, else the checkout's results/)"
PRICE_HELP = (
    "USD per device-hour (one GPU, or one logical CPU), as the price table's, for the cost per 1M samples: "
    "a job pays it for each device it used, so a 2-CPU job twice a 1-CPU job's (default: "
    "dlrepro/inputs/prices.yaml, dated on-demand list prices with their sources)"
)
BUNDLE_HELP = "a bundle: its folder, its id under --results, or 'latest'"


def count(option, text):
    """``text`` as a whole number >= 1, 0 when not given (""); DlreproError naming ``option`` otherwise."""
    from dlrepro.errors import DlreproError

    if text == "":
        return 0
    if not str(text).isdigit() or int(text) < 1:
        raise DlreproError("%s: expected a whole number of at least 1 (got %r)" % (option, text), "e.g. %s 4" % option)
    return int(text)
