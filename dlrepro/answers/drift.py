"""Claim drift: does each claim keep its verdict from the versions a study published (or the nearest the image
matrix has) to today's? One more view of the answer model: the same claim rules (answers.claims) applied to the
rows of each version set of a study run with ``--versions both`` (dlrepro.inputs.eras).

The record says which framework tokens each run ran for each set (``runs.<id>.versions``: {set: [{tool, token,
label}]}); a row belongs to a set when its job ran one of those tokens (its job id is
``variant.<token with @ as ->.device...``). A framework that is none of the study's tools (an extra the suite
also runs) belongs to both. Changes:

  flips        both sets answered (holds or direction holds, size does not / does not hold) and one holds where
               the other does not
  shifts       holds at one set, direction holds (size does not) at the other
  keeps        both answered alike
  cannot tell  one side is inconclusive (a smoke pass, an interval across the band) or not testable
  same images  every tool the claim names ran the same image at both sets (the matrix has no older version that
               stands for its published one, or the study names none): nothing was compared
  not judged   neither side could be judged here
"""

from dataclasses import dataclass

from dlrepro.answers import verdicts
from runner.frameworks import Token

SETS = ("published", "today")
ANSWERED = (verdicts.HOLDS, verdicts.DIRECTION_ONLY, verdicts.DOES_NOT_HOLD)
FLIPS, SHIFTS, KEEPS, CANNOT_TELL, SAME, NOT_JUDGED = (
    "flips",
    "shifts",
    "keeps",
    "cannot tell",
    "same images",
    "not judged",
)
CHANGES = (FLIPS, SHIFTS, KEEPS, CANNOT_TELL, SAME, NOT_JUDGED)  # the order a view lists them in


@dataclass
class Drift:
    """One claim at both version sets: ``published`` and ``today`` are its claims.Verdict at each, ``labels``
    {set: "PyTorch 1.0.0 (published: 0.3.1); ..."} what ran for the study's tools, ``same``: every tool the claim
    names ran the same image at both."""

    claim: str
    text: str
    published: object
    today: object
    labels: dict
    same: bool = False

    @property
    def judged(self):
        """Whether either side could be judged here (change is not NOT_JUDGED)."""
        return self.change != NOT_JUDGED

    @property
    def change(self):
        """One of CHANGES (module doc)."""
        then, now = self.published.verdict, self.today.verdict
        if then in verdicts.UNJUDGED and now in verdicts.UNJUDGED:
            return NOT_JUDGED
        if self.same:
            return SAME
        if then in ANSWERED and now in ANSWERED:
            if then == now:
                return KEEPS
            return SHIFTS if {then, now} == {verdicts.HOLDS, verdicts.DIRECTION_ONLY} else FLIPS
        return CANNOT_TELL


def sets_of(record):
    """{set: {run id: [{tool, token, label}]}} of a record whose runs ran version sets; {} for one without (a study
    run without --versions, or with one set only: nothing to set side by side)."""
    found = {}
    for run_id, entry in record["runs"].items():
        for name, chosen in (entry.get("versions") or {}).items():
            found.setdefault(name, {})[run_id] = chosen
    return found if set(SETS) <= set(found) else {}


def rows_of(summary, record, name):
    """The rows of ``summary`` (with a ``run`` column) that belong to version set ``name`` of ``record``: a study
    tool's jobs of that set's tokens, every other framework's jobs as they are."""
    sets = sets_of(record)
    keep = [_belongs(row, sets, name) for _, row in summary.iterrows()]
    return summary[keep] if len(summary) else summary


def _belongs(row, sets, name):
    """Whether ``row`` (its ``run``, ``framework`` and ``framework_version``, the version the framework reported,
    its local part after a "+" left out) is of set ``name``: a framework no set's token names is of every set; else
    a token of the set names it at that version, a token without one (today's image) standing for every version
    no token of the run pins."""

    def tokens(chosen):
        return [t for t in (Token.parse(c["token"]) for c in chosen.get(row["run"], [])) if t.name == row["framework"]]

    named = [t for chosen in sets.values() for t in tokens(chosen)]
    if not named:
        return True
    version = str(row["framework_version"]).split("+")[0]
    pinned = {t.version for t in named if t.version}
    return any(version == t.version if t.version else version not in pinned for t in tokens(sets[name]))


def _same(claim, sets):
    """Whether every tool ``claim`` names ran the same framework token at both sets in its runs."""
    tools = {t for tier in claim.order for t in tier} | set(claim.tools) | ({claim.subject} if claim.subject else set())
    tokens = [
        {(run, c["tool"], c["token"]) for run in claim.runs for c in sets[name].get(run, []) if c["tool"] in tools}
        for name in SETS
    ]
    return tokens[0] == tokens[1]


def drift(study, summary, record, evaluate):
    """One Drift per claim of ``study`` judged (``evaluate(rows, set name)`` -> [claims.Verdict], the same call the
    study's answer makes, with that set's host plan) on the rows of each version set of ``record``; [] for a record
    without both sets. Listed in
    CHANGES order, then the study's claim order."""
    sets = sets_of(record)
    if not sets:
        return []
    judged = {name: {v.claim: v for v in evaluate(rows_of(summary, record, name), name)} for name in SETS}
    labels = {name: "; ".join(sorted({c["label"] for chosen in sets[name].values() for c in chosen})) for name in SETS}
    out = [
        Drift(
            claim,
            study.claims[claim].text,
            judged["published"][claim],
            judged["today"][claim],
            labels,
            _same(study.claims[claim], sets),
        )
        for claim in study.claims
    ]
    return sorted(out, key=lambda d: CHANGES.index(d.change))
