"""Then and now: which framework versions a study runs for the versions it published, and for today's.

A study names the version of each tool it published (``versions`` in studies/<name>.yaml, with the source). The
suite runs, for each, the image matrix's (images/matrix.yaml) entry of exactly that version on the device when
there is one, otherwise the nearest it has (the earliest served version after the published one, else the latest
before it), and records the gap: "PyTorch 1.0.0 (published: 0.3.1)". Today's version is the matrix's plain
framework name (its last entry of that framework on the device). Version sets:

  published  each tool at its published (or nearest served) version, which may be today's image when the matrix
             has no older one (its label says the gap); a tool the study names no version for at today's ("published:
             not stated"); a tool with no image on the device is left out with the reason
  today      each tool at today's version (as a run without versions, less a tool with no image on the device)
  both       both, side by side in one bundle per run (job ids name the version: torch-1.0.0)
"""

from dataclasses import dataclass
from typing import Optional

from packaging.version import InvalidVersion, Version

from dlrepro.errors import DlreproError
from runner.frameworks import Token

VERSION_SETS = ("published", "today", "both")
UNSTATED = "not stated"  # the published version of a tool the study names none for: today's image stands in


def key(version):
    """Sort key of a version text: PEP 440 order where it parses (2.7.post2 after 2.7), else after all of those
    in text order."""
    try:
        return (0, Version(str(version)), "")
    except InvalidVersion:
        return (1, Version("0"), str(version))


@dataclass(frozen=True)
class Chosen:
    """One tool's framework at one version set: ``token`` (NAME or NAME@VERSION, as --framework takes it),
    ``runs`` (the version the image has), ``published`` (the study's, for the published set), ``why`` (why it
    is left out: no image)."""

    tool: str
    framework: str
    token: Optional[str]
    runs: Optional[str]
    published: Optional[str] = None
    why: Optional[str] = None

    @property
    def label(self):
        """ "PyTorch 1.0.0 (published: 0.3.1)", "MXNet(Gluon) 0.12.0" (exact), "PyTorch 2.13.0" (today), "Caffe (no
        image; published: 1.0rc5)"."""
        if self.runs is None:
            return "%s (no image%s)" % (self.tool, "; published: %s" % self.published if self.published else "")
        gap = self.published is not None and (self.published == UNSTATED or key(self.published) != key(self.runs))
        return "%s %s%s" % (self.tool, self.runs, " (published: %s)" % self.published if gap else "")


def nearest(served, published):
    """The served version (of ``served``, texts) that stands for ``published``: itself when served, else the
    earliest served after it, else the latest before it. Raises DlreproError when ``served`` is empty."""
    if not served:
        raise DlreproError("no served version to stand for %s" % published)
    order = sorted(served, key=key)
    later = [v for v in order if key(v) >= key(published)]  # equal: the same release however written (1.4, 1.4.0)
    return later[0] if later else order[-1]


def checked(which):
    """``which`` when it is a version set; raises DlreproError naming the sets otherwise."""
    if which not in VERSION_SETS:
        raise DlreproError(
            "--versions: expected one of %s (got %r)" % (", ".join(VERSION_SETS), which),
            "give --versions published, today or both",
        )
    return which


def choose(study, matrix, device, which):
    """The Chosen of each tool the suite runs (study.tools that map to a framework) for version set ``which``
    ("published", "today" or "both") on ``device``, in the study's tool order (both: published first), each
    framework token once (_unique). Raises DlreproError for another set name."""
    sets = [name for name in ("published", "today") if checked(which) in (name, "both")]
    picked = {name: per_tool(study, matrix, device, name) for name in sets}
    return _unique([picked[name][tool] for tool in picked[sets[0]] for name in sets])


def per_tool(study, matrix, device, which):
    """{tool: Chosen} of each tool the suite runs for one version set (``which``: "published" or "today") on
    ``device``, in the study's tool order; two tools of one framework each have theirs (what a plan asks of a tool:
    dlrepro.plan.coverage). Raises DlreproError for another set name."""
    if checked(which) == "both":
        raise DlreproError("one version set at a time: published or today (got both)")
    out = {}
    for tool, framework in study.tools.items():
        if framework is None:
            continue
        served = matrix.versions(framework, device)
        today = served[-1] if served else None
        if which == "published":
            published = study.versions[tool].version if tool in study.versions else UNSTATED
            out[tool] = _published(tool, framework, published, served, today, device)
        else:
            out[tool] = Chosen(
                tool,
                framework,
                framework if today else None,
                today,
                why=None if today else "no %s image of %s in the matrix" % (device, framework),
            )
    return out


def _published(tool, framework, published, served, today, device):
    if not served:
        return Chosen(tool, framework, None, None, published, "no %s image of %s in the matrix" % (device, framework))
    runs = today if published == UNSTATED else nearest(served, published)
    return Chosen(tool, framework, Token(framework, None if runs == today else runs).text, runs, published)


def _unique(chosen):
    """Each framework token once: both sets of a tool whose published version runs on today's image, or two tools
    of one framework, share its jobs (the first one's label is kept)."""
    seen, out = set(), []
    for c in chosen:
        if c.token is None or c.token not in seen:
            out.append(c)
            seen.add(c.token)
    return out


def tokens(chosen):
    """The --framework tokens of ``chosen`` that have an image."""
    return [c.token for c in chosen if c.token]
