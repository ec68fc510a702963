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
    """The absolute results folder: ``given`` (an option, e.g. --results), else $DLREPRO_RESULTS, else
    <checkout>/results.
    Raises DlreproError naming the option (or the variable) when that path, or a folder above it, is a file."""
    path = Path(
        given or os.environ.get(RESULTS_ENV) or REPO_ROOT / "results"
    ).absolute()  # engines mount absolute paths
    at = file_in_the_way(path)
    if at:
        from dlrepro.errors import DlreproError

        named = (
            "--results %s" % path
            if given
            else "%s=%s" % (RESULTS_ENV, path)
            if os.environ.get(RESULTS_ENV)
            else "results folder %s" % path
        )
        raise DlreproError(
            "%s: %s is not a folder" % (named, "it" if at == path else at),
            "give a folder for the bundles (it is made when missing), not a file",
        )
    return path


def file_in_the_way(path):
    """What keeps folder ``path`` from being made or used: ``path`` itself or the nearest folder above it that
    exists, when that is not a folder; else None."""
    for at in [path] + list(path.parents):
        if at.exists():
            return None if at.is_dir() else at
    return None


def bundle_around(path):
    """The bundle folder (one holding a bundle.json) that ``path`` is, or lies in, the nearest first; None when
    there is none. A bundle's files are the ones its checksums list: nothing else is written there."""
    at = Path(path).resolve()
    for folder in [at] + list(at.parents):
        if (folder / "bundle.json").is_file():
            return folder
    return None


def names(folder):
    """The names (file stems) of the YAML files in ``folder``, sorted."""
    return sorted(p.stem for p in Path(folder).glob("*.yaml"))
