"""Where the suite's folders are, the same from any working directory: the checkout's specs/ and studies/, and
the results folder (an option, else $DLREPRO_RESULTS, else the checkout's results/). Standard library only, so
the command line can name specs and studies in its help without loading them."""
import os
from pathlib import Path

from dlrepro import REPO_ROOT

SPECS_DIR = REPO_ROOT / "specs"
STUDIES_DIR = REPO_ROOT / "studies"
RESULTS_ENV = "DLREPRO_RESULTS"


def results_root(given=None):
    """The results folder: ``given`` (an option, e.g. --results), else $DLREPRO_RESULTS, else <checkout>/results."""
    return Path(given or os.environ.get(RESULTS_ENV) or REPO_ROOT / "results")


def names(folder):
    """The names (file stems) of the YAML files in ``folder``, sorted."""
    return sorted(p.stem for p in Path(folder).glob("*.yaml"))
