"""The `dlrepro` command (pyproject's [project.scripts]): Invoke's Program on the suite's tasks, so
`dlrepro run --spec=alexnet` works from any folder, as `invoke run --spec=alexnet` does in the checkout."""
from invoke import Program

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


program = Dlrepro(namespace=ns, version=__version__, name="dlrepro", binary="dlrepro")
