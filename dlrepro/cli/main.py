"""The `dlrepro` command (pyproject's [project.scripts]): Invoke's Program on the suite's tasks, so
`dlrepro run --spec=alexnet` works from any folder, as `invoke run --spec=alexnet` does in the checkout."""

import contextlib
import os
import shlex
import sys

from invoke import Program
from invoke.exceptions import ParseError
from invoke.parser import ParserContext

from dlrepro import __version__
from dlrepro.cli import usage
from dlrepro.cli.options import SHORT
from dlrepro.cli.tasks import ns
from dlrepro.run.optiontext import WORDS

# the core options `dlrepro --help` shows; Invoke's others (--echo, --pty, --dry, --hide, --write-pyc, --config,
# --debug, ...) concern the shell commands Invoke's tasks run, its configuration files and its own debugging,
# none of which dlrepro's tasks use: they still parse, unlisted
SHOWN = ("help", "list", "version", "print-completion-script")


class Dlrepro(Program):
    """Invoke's Program on the suite's tasks: its core options give up the short flags the tasks share (-d is
    --device, not --debug; -f is --framework, not --config), `dlrepro --help` lists only SHOWN of them, and a
    usage error is the suite's (dlrepro.cli.usage; exit status 2)."""

    def core_args(self):
        args = super().core_args()
        for arg in args:
            arg.names = tuple(n for n in arg.names if n not in SHORT.values())
        return args

    @property
    def shown_context(self):
        return ParserContext(args=[a for a in self.core_args() if a.name in SHOWN])

    def print_help(self):
        print("Usage: %s [--core-opts] <subcommand> [--subcommand-opts] ...\n\nCore options:\n" % self.binary)
        self.print_columns(self.shown_context.help_tuples())
        self.list_tasks()

    def parse_core(self, argv):
        with self.usage_errors():
            super().parse_core(argv)

    def parse_tasks(self):
        with self.usage_errors():
            super().parse_tasks()

    def parse_cleanup(self):
        with self.usage_errors():
            super().parse_cleanup()

    @contextlib.contextmanager
    def usage_errors(self):
        """Invoke's ParseError (an unknown task or option, a missing argument) as the suite's usage error:
        'error: ...' and 'remedy: ...' on stderr (dlrepro.cli.usage) and exit status 2 (Invoke's own is 1, the
        suite's "done, something failed")."""
        try:
            yield
        except ParseError as exc:
            error, remedy = usage.explain(
                str(exc),
                getattr(exc, "context", None),
                sorted(answers_to(self.namespace)),
                sorted(self.shown_context.flags),
            )
            print("error: %s\nremedy: %s" % (error, remedy), file=sys.stderr)
            sys.exit(2)

    def run(self, argv=None, exit=True):
        """Invoke's run, with ``TASK --help`` read as ``--help TASK`` (Invoke takes a task's first positional
        argument from the next word, so `dlrepro study-report --help` looked for a study named "--help") and the
        words after a list positional joined to it (`report A B` lists A and B; dlrepro.cli.options)."""
        argv = shlex.split(argv) if isinstance(argv, str) else list(sys.argv if argv is None else argv)
        argv = joined(help_first(argv, self.namespace), self.namespace)
        with quiet_broken_pipe():
            return super().run(argv, exit)


@contextlib.contextmanager
def quiet_broken_pipe():
    """A reader that stopped reading (`dlrepro --list | head`) ends the command quietly, exit status 1, instead of
    a BrokenPipeError traceback; standard output goes to /dev/null so Python's flush at exit cannot raise again."""
    try:
        yield
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(1)


def answers_to(collection):
    """Every word that names a task of ``collection``: its dotted names, their aliases, and the name of a
    sub-collection with a default task ("datasets")."""
    names = collection.task_names
    return (
        set(names) | {a for aliases in names.values() for a in aliases} | {n.split(".")[0] for n in names if "." in n}
    )


def help_first(argv, collection):
    """``argv`` with a --help (or -h) that follows a task's name moved before it: [binary, "--help", task]."""
    names = answers_to(collection)
    for i, word in enumerate(argv[1:], 1):
        if word in names:
            return argv[:i] + ["--help", word] if {"--help", "-h"} & set(argv[i + 1 :]) else argv
    return argv


def joined(argv, collection):
    """``argv`` with the further words after a list positional's first one joined to it by WORDS, up to the next
    task name (dlrepro.cli.options.DlTask's ``more``): [.., "report", "A", "--out", "x", "B"] -> [.., "report",
    "A\\0B", "--out", "x"], each word kept whole for dlrepro.run.optiontext.names (a path with a space or comma is
    one bundle). An option's value (the word after an option that takes one) is left in place."""
    names = answers_to(collection)
    out, task, first, values = list(argv[:1]), None, None, {}
    words = iter(argv[1:])
    for word in words:
        if word.startswith("-"):
            out.append(word)
            value = next(words, None) if "=" not in word and values.get(word) else None
            out += [value] if value is not None else []
        elif task is not None and task.more and first is not None and word not in names:
            out[first] += WORDS + word
        else:
            if word in names:
                task, first = collection[word], None
                values = {
                    ("--" if len(n) > 1 else "-") + n: a.takes_value for a in task.get_arguments() for n in a.names
                }
            elif task is not None and first is None:
                first = len(out)
            out.append(word)
    return out


# Invoke's options that only choose which tasks.py its own program loads (with their values, but --no-dedupe)
LOADER_OPTIONS = ("-c", "--collection", "-r", "--search-root", "--no-dedupe")


def take_over(invoke):
    """Run the command line that Invoke's own program ``invoke`` was given (`invoke X` in the checkout, which
    loads its tasks.py) as `dlrepro X`, and exit with its status: the same output and exit status for the same
    command line in either spelling (2 for a usage error, where Invoke's program exits 1). The options before
    the first task that only choose the tasks file (LOADER_OPTIONS) are left out."""
    words, kept = iter(invoke.argv[1:]), []
    for word in words:
        if not word.startswith("-"):
            kept += [word] + list(words)
        elif word.split("=")[0] not in LOADER_OPTIONS:
            kept.append(word)
        elif "=" not in word and word != "--no-dedupe":
            next(words, None)
    sys.exit(program.run(["dlrepro"] + kept))


program = Dlrepro(namespace=ns, version=__version__, name="dlrepro", binary="dlrepro")
