"""What lets `dlrepro site` rewrite only what changed: a stamp per report (the hash of its inputs and of the code
that draws it), kept in SITE/site-cache.json with the index row the report gave; pages written only when their
bytes differ; each bundle's data files copied beside its report.

A stamp is the SHA-256 of: the code (every file of dlrepro/, runner/, specs/ and studies/, by path and bytes:
``code_digest``), the price given (or none), the report's name, and its inputs' bytes (a bundle's DATA files; a
study record and the bundles it names). Same stamp, same report: it is not drawn again.
"""

import hashlib
import json
import os
import pickle
import shutil
from functools import lru_cache

from dlrepro import REPO_ROOT
from dlrepro.files import tree_digest

DATA = ("summary.csv", "samples.parquet", "bundle.json", "SHA256SUMS")  # a bundle's files the site links
CODE = ("dlrepro", "runner", "specs", "studies")
FILE = "site-cache.json"
ANSWERS = "site-cache"  # SITE/site-cache/<record>.pickle: a study record's answer at its stamp


@lru_cache(maxsize=1)
def code_digest():
    """The SHA-256 of the code and inputs that draw the reports (CODE: every file but caches, by path and bytes)."""
    return tree_digest(REPO_ROOT, CODE)


def stamp(name, files, price_per_hour):
    """The stamp of report ``name`` drawn from ``files`` (paths; a missing one counts as missing) at the price."""
    digest = hashlib.sha256(("%s\0%s\0%r\0" % (code_digest(), name, price_per_hour)).encode())
    for path in files:
        digest.update(str(path.name).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"\0missing\0")
    return digest.hexdigest()


def bundle_files(folder):
    return [folder / name for name in DATA]


def load(site):
    """{"bundles": {id: {"stamp", "row"}}, "records": {name: {"stamp"}}} of the site folder, empty when none or
    unreadable (a rebuild from nothing)."""
    try:
        found = json.loads((site / FILE).read_text())
    except (OSError, ValueError):
        return {"bundles": {}, "records": {}}
    return found if isinstance(found, dict) and set(found) == {"bundles", "records"} else {"bundles": {}, "records": {}}


def save(site, cache):
    write_if_changed(site / FILE, json.dumps(cache, indent=1, sort_keys=True) + "\n")


def write_if_changed(path, text):
    """Write ``text`` at ``path`` unless the file holds it already; returns whether it wrote."""
    data = text.encode()
    try:
        if path.stat().st_size == len(data) and path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return True


def copy_if_changed(source, target):
    """Copy file ``source`` to ``target`` (a hard link where the file system allows it) unless it holds the same
    bytes; returns whether it copied."""
    try:
        if os.path.samefile(source, target) or (
            target.stat().st_size == source.stat().st_size and target.read_bytes() == source.read_bytes()
        ):
            return False
        target.unlink()
    except OSError:
        pass
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)
    return True


def replace_pages(folder, pages, suffixes=(".html", ".json")):
    """Write {file name: text} into ``folder`` where changed, removing the files of ``suffixes`` there that are not
    among them; returns how many it wrote."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if old.suffix in suffixes and old.name not in pages:
            old.unlink()
    return sum(write_if_changed(folder / name, text) for name, text in pages.items())


def keep(site, name, stamp_, answer):
    """Keep ``answer`` of report ``name`` at its stamp in SITE/site-cache/."""
    path = site / ANSWERS / ("%s.pickle" % name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps((stamp_, answer), protocol=pickle.HIGHEST_PROTOCOL))


def kept(site, name, stamp_):
    """The answer kept for report ``name`` at ``stamp_``, or None (none kept, another stamp, or unreadable)."""
    try:
        found, answer = pickle.loads((site / ANSWERS / ("%s.pickle" % name)).read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, ImportError):
        return None
    return answer if stamp_ is not None and found == stamp_ else None
