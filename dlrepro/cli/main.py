"""The `dlrepro` command (pyproject's [project.scripts]): Invoke's Program on the suite's tasks, so
`dlrepro run --spec=alexnet` works from any folder, as `invoke run --spec=alexnet` does in the checkout."""
from invoke import Program

from dlrepro import __version__
from dlrepro.cli.tasks import ns

program = Program(namespace=ns, version=__version__, name="dlrepro", binary="dlrepro")
