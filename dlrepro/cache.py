"""Where the suite keeps what it downloads or builds outside the repository.

``DLREPRO_CACHE`` (default ~/.cache/dlrepro) holds the dataset cache (datasets/sha256/<hex>),
build contexts and logs (builds/), bootstrap scratch space (bootstrap/), and the tables derived from bundles of an
older tables version (tables/<key>/, dlrepro.store.tables.kept_folder).
"""

import os
from pathlib import Path


def root():
    return Path(os.environ.get("DLREPRO_CACHE") or Path.home() / ".cache" / "dlrepro")


def directory(*parts):
    """``root()/parts``, created if missing."""
    path = root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
