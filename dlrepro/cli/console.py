"""The terminal: one rich console and one way to print errors (the run's progress bars: dlrepro.cli.progress)."""

import contextlib
import sys

from invoke import Exit
from rich.console import Console
from rich.markup import escape

from dlrepro.errors import DlreproError

# logs and CI output are not terminals: give tables room rather than rich's 80 columns
console = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
MARK = {
    "ok": "[green]ok[/]",
    "failed": "[red]failed[/]",
    "skipped": "[yellow]skipped[/]",
    "interrupted": "[magenta]interrupted[/]",
}


def dim(message):
    """A log line of the library, dimmed; its own brackets (BuildKit's "[system 2/5] RUN ...") printed as they are."""
    return "[dim]%s[/]" % escape(message)


def print_error(exc):
    """``error: MESSAGE`` and, when the error has one, ``remedy: REMEDY``."""
    console.print("[red]error:[/] %s" % exc)
    if getattr(exc, "remedy", None):
        console.print("[bold]remedy:[/] %s" % exc.remedy)


@contextlib.contextmanager
def user_errors():
    """Turn the suite's errors into ``error:`` / ``remedy:`` lines and the error's exit status (no traceback):
    2 (bad input or usage, or an error that stopped the command), 1 for MissingBundles (dlrepro.errors)."""
    try:
        yield
    except DlreproError as exc:
        print_error(exc)
        raise Exit(code=exc.exit_code) from None
