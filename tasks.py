"""The tasks of `invoke` in this checkout: the same as the `dlrepro` command's (dlrepro.cli.tasks)."""
from dlrepro.cli.tasks import ns  # noqa: F401
