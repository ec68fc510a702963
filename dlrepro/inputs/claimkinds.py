"""The kinds of a study's claims, each one class that carries its name (dlrepro.inputs.studies.Claim's ``kind``).

A kind says which of a claim's fields it needs (``needs``: the study file is refused without them), which of the
study's tools the claim names (``tools``), which of them must be runnable for a verdict (``enough``:
dlrepro.plan.coverage
plans with it), the words of its statistical test (``test``), the label of its figure's axis where that is not the
metric (``axis``: dlrepro.views.study_plots) and its judge, the answer layer's rule that gives the verdict
(registered by dlrepro.answers.claims with ``judge``: a rule of the answer layer, which this input module
may not import). A new kind is a subclass with ``register``, a judge, and its words in docs/studies.md.
"""

KINDS = {}  # name -> ClaimKind, in the order registered


def register(cls):
    """Class decorator: ``cls`` (a ClaimKind subclass with a ``name``) is the kind of that name; returns it."""
    KINDS[cls.name] = cls()
    return cls


def of(claim):
    """The ClaimKind of ``claim`` (a dlrepro.inputs.studies.Claim)."""
    return KINDS[claim.kind]


def judge(name):
    """Decorator: the function is kind ``name``'s judge, (study, claim, rows) -> (verdict, evidence, values,
    points, band) (dlrepro.answers.claims)."""

    def registered(function):
        KINDS[name].judge = function
        return function

    return registered


class ClaimKind:
    """One kind of claim (module docstring); the defaults are those of a claim stated for each of its tools."""

    name = None
    testable = True  # False: no run can test a claim of this kind (its ``why`` says so)
    needs = ()  # the Claim fields it must give
    test = None  # the words of its test, e.g. "95% interval per tool against the band"; None: not judged
    judge = None

    def tools(self, claim):
        """The study's tools ``claim`` names, in its order: its subject, then its ``tools``."""
        return ([claim.subject] if claim.subject else []) + list(claim.tools)

    def enough(self, claim, available):
        """Whether the tools in ``available`` (a set of the study's tool names) can give ``claim`` a verdict."""
        return bool(available)

    def axis(self, claim):
        """Its figure's axis label, None where the axis is the claim's metric."""
        return None


@register
class Ordering(ClaimKind):
    """``order``: tiers of tools, best first (within a tier: no order stated), on ``metric``."""

    name, needs, test = "ordering", ("runs", "variant", "order"), "pairs' 95% intervals"

    def tools(self, claim):
        return [t for tier in claim.order for t in tier]

    def enough(self, claim, available):
        """Two tools of different tiers."""
        return len({i for i, tier in enumerate(claim.order) for t in tier if t in available}) >= 2


@register
class Ratio(ClaimKind):
    """The others' metric / ``subject``'s metric lies in ``band`` (e.g. "MXNet about 5.5x faster")."""

    name, needs = "ratio", ("runs", "variant", "subject", "tools", "band")
    test = "95% interval of the ratio per tool against the band"

    def enough(self, claim, available):
        """The subject and one other."""
        return claim.subject in available and any(t in available for t in claim.tools)

    def axis(self, claim):
        return "speed ratio, %s over each tool" % claim.subject


@register
class Band(ClaimKind):
    """Each named tool's metric lies in ``band`` (e.g. an accuracy the study says every tool reaches)."""

    name, needs, test = "band", ("runs", "variant", "tools", "band"), "95% interval per tool against the band"


@register
class Scaling(ClaimKind):
    """From ``at`` to ``to`` (threads, or GPUs), each tool's speedup t(at) / t(to) lies in ``band``."""

    name, needs = "scaling", ("runs", "variant", "band", "over", "at", "to")
    test = "95% interval of the speedup per tool against the band"

    def axis(self, claim):
        return "speedup over %s" % claim.over


@register
class Untestable(ClaimKind):
    """No run here can test it: ``why``."""

    name, needs, testable = "untestable", ("why",), False

    def tools(self, claim):
        return []

    def enough(self, claim, available):
        return False
