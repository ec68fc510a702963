"""The `dlrepro` command (pyproject's [project.scripts]): Invoke's Program on the suite's tasks, so
`dlrepro run --spec=alexnet` works from any folder, as `invoke run --spec=alexnet` does in the checkout."""
import contextlib
import os
import shlex
import sys

from invoke import Program
from invoke.exceptions import ParseError

from dlrepro import __version__
from dlrepro.cli.options import SHORT
from dlrepro.cli.tasks import ns


class Dlrepro(Program):
    """Invoke's Program (`dlrepro --help` lists the core options and the tasks), whose core options give up the
    short flags the tasks share: -d is --device, not --debug; -f is --framework, not --config."""

    def core_args(self):
        args = super().core_args()
        for arg in args:
            arg.names = tuple(n for n in arg.names if n not in SHORT.values())
        return args

    def parse_core(self, argv):
        with usage_errors():
            super().parse_core(argv)

    def parse_tasks(self):
        with usage_errors():
            super().parse_tasks()

    def run(self, argv=None, exit=True):
        """Invoke's run, with ``TASK --help`` read as ``--help TASK``: Invoke takes a task's first positional
        argument from the next word, so `dlrepro study-report --help` looked for a study named "--help"."""
        argv = shlex.split(argv) if isinstance(argv, str) else list(sys.argv if argv is None else argv)
        with quiet_broken_pipe():
            return super().run(help_first(argv, self.namespace.task_names), exit)


@contextlib.contextmanager
def quiet_broken_pipe():
    """A reader that stopped reading (`dlrepro --list | head`) ends the command quietly, exit status 1, instead of
    a BrokenPipeError traceback; standard output goes to /dev/null so Python's flush at exit cannot raise again."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


@contextlib.contextmanager
def usage_errors():
    """Invoke's ParseError (an unknown option, a missing argument) as the suite's usage error: 'error: ...' and a
    remedy on stderr and exit status 2 (Invoke's own is 1, the suite's "done, something failed")."""
    try:
        yield
    except ParseError as exc:
        task = getattr(getattr(exc, "context", None), "name", None)
        print("error: %s" % exc, file=sys.stderr)
        print("remedy: `dlrepro --help %s` lists its arguments" % task if task else
              "remedy: `dlrepro --list` lists the tasks, `dlrepro --help TASK` their arguments", file=sys.stderr)
        sys.exit(2)


def help_first(argv, task_names):
    """``argv`` with a --help (or -h) that follows a task's name moved before it: [binary, "--help", task].
    ``task_names``: {name: [aliases]} of the collection."""
    names = set(task_names) | {alias for aliases in task_names.values() for alias in aliases}
    for i, word in enumerate(argv[1:], 1):
        if word in names:
            return argv[:i] + ["--help", word] if {"--help", "-h"} & set(argv[i + 1:]) else argv
    return argv


program = Dlrepro(namespace=ns, version=__version__, name="dlrepro", binary="dlrepro")
