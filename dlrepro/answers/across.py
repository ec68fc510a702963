"""One configuration across hardware and versions: the configurations of the history (answers.history) that share a
spec, variant, framework, mode and mini-batch, set side by side on every host and version that measured them, each
by its newest run, with the published values of that spec, variant, framework and mini-batch beside them (the
references its bundles recorded: answers.model.recorded).

A row is one history line (one device model, version, precision, thread count ...): its newest point's throughput
(samples/s), fraction of peak, USD per 1M samples and J per sample, where that run has them (None otherwise, never
0). Pure: Configurations and references in, Across objects out.
"""

import hashlib
import re
from dataclasses import dataclass, field

from dlrepro.inputs.frameworks import study_names

KEY = ["spec", "variant", "framework", "mode", "batch_size"]


@dataclass
class Row:
    """A history line's newest run: ``configuration`` (answers.history.Configuration) and ``point`` its last Point."""

    configuration: object
    point: object


@dataclass
class Across:
    key: dict  # KEY column -> value
    slug: str  # a file name, unique per key
    rows: list = field(default_factory=list)  # Row, by device model, then version, precision, threads, ranks
    published: list = field(default_factory=list)  # references.Reference of the key, by kind, hardware and id

    @property
    def hosts(self):
        """The device models measured, sorted."""
        return sorted({r.configuration.key["device_name"] for r in self.rows})


def slug(key):
    """'alexnet.alexnet-s.jax.throughput.b128-1a2b3c4d': readable, unique by the hash of the key."""
    text = "%s.%s.%s.%s.b%s" % tuple(key[c] for c in KEY)
    digest = hashlib.sha256(repr([key[c] for c in KEY]).encode()).hexdigest()[:8]
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text) + "-" + digest


def _order(row):
    k = row.configuration.key
    return tuple(
        "" if k[c] is None else str(k[c])
        for c in ("device_name", "framework_version", "precision", "threads", "ranks", "layout")
    ) + (row.configuration.slug,)


def _published(references, key):
    """The references of ``key``'s spec at its variant and mini-batch whose tool is its framework
    (frameworks.study_names)."""
    names = study_names(key["framework"])
    found = [
        r
        for r in references.get(key["spec"], ())
        if r.variant == key["variant"] and r.batch_size == key["batch_size"] and r.framework in names
    ]
    return sorted(found, key=lambda r: (r.kind, r.hardware, r.id))


def across(configurations, references):
    """[Across] of the history's ``configurations`` (answers.history.history), sorted by slug; ``references``:
    {spec name: [Reference]} as the bundles recorded them."""
    groups = {}
    for c in configurations:
        key = {k: c.key[k] for k in KEY}
        groups.setdefault(tuple(key.values()), (key, []))[1].append(Row(c, c.points[-1]))
    found = [
        Across(key, slug(key), sorted(rows, key=_order), _published(references, key)) for key, rows in groups.values()
    ]
    return sorted(found, key=lambda a: a.slug)
