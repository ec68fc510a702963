"""`invoke` in this checkout is the `dlrepro` command (dlrepro.cli.main). Invoke's own program reads its core
options, then loads this file for its tasks; here it hands the whole command line to dlrepro's program
instead, so that `invoke X` and `dlrepro X` print the same and exit with the same status (Invoke's program
exits 1 for a usage error, the suite 2). Imported any other way, this file is only the tasks' collection."""

import sys

from dlrepro.cli.tasks import ns  # noqa: F401  (the collection Invoke's loader looks for)

_invoke = getattr(sys.modules.get("invoke.main"), "program", None)
if _invoke is not None and _invoke.namespace is None and not hasattr(_invoke, "collection"):
    from dlrepro.cli.main import take_over

    take_over(_invoke)
