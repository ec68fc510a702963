"""What reproduces where: per study, each claim's verdict on every (host, version set) it was run on, from the study
records under a results folder (one more view of the answer model: the verdicts are answers.claims', the
published set's from answers.drift where a record ran ``--versions both``).

A column is one host at one version set ("today's versions", or "the published versions" of a record that ran
both): its host fingerprint (answers.configkey.fingerprint of the record's first bundle: CPU model, logical CPUs,
ISA flags, GPUs), labelled by answers.study.host_line, so that two machines sold under one CPU model name, one with
AVX-512, are two columns; it is named with the framework versions its records ran. Every record of the column
gives each claim a piece of Evidence; a cell shows the strongest: a verdict on measurements over "not testable
here" or "not asked", then a full run over a smoke pass, then the newest record. Records whose verdict word differs
from it are named beside it (one per word, its strongest), so a later smoke pass never hides a full run's verdict.
Pure: StudyAnswer objects in, Matrix objects out.
"""

from dataclasses import dataclass, field

from dlrepro.answers import configkey
from dlrepro.answers import drift as driftmod
from dlrepro.answers import verdicts as words
from dlrepro.inputs.frameworks import display

TODAY, PUBLISHED = "today's versions", "the published versions"


@dataclass
class Record:
    """One study record of a column: its name (its file's stem), when it was made, whether its runs were smoke
    passes (--quick) and whether the record says its study finished."""

    name: str
    created: str
    smoke: bool
    finished: bool


@dataclass
class Column:
    host: str  # answers.study.host_line
    versions: str  # TODAY or PUBLISHED
    records: list = field(default_factory=list)  # [Record], newest first
    named: list = field(default_factory=list)  # the versions its records ran: ['MXNet 1.9.1', 'PyTorch 2.13.0']
    fingerprint: str = None  # configkey.host_text of the host's fingerprint (None: a record without a bundle)


@dataclass
class Evidence:
    """A claim's verdict (claims.Verdict) in one Record."""

    record: Record
    verdict: object

    @property
    def strength(self):
        """Sort key, strongest last: a verdict on measurements, a full run, the newest."""
        return (
            self.verdict.verdict not in words.UNJUDGED,
            not self.record.smoke,
            self.record.created,
            self.record.name,
        )


@dataclass
class Cell:
    """A claim in a column: ``best`` its strongest Evidence, ``others`` one Evidence per other verdict word the
    column's records gave it (each word's strongest, strongest first)."""

    best: Evidence
    others: list = field(default_factory=list)


@dataclass
class Matrix:
    """One study: ``claims`` [(claim id, text)] in the manifest's order, ``columns`` [Column] in the order first
    run, ``cells`` {(claim id, column index): Cell}."""

    study: str
    title: str
    claims: list
    columns: list
    cells: dict


def _name(answer):
    return answer.record_path.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _verdicts(answer):
    """{version set: {claim id: Verdict}} of one study record."""
    today = {v.claim: v for v in answer.claims}
    today.update({v.claim: v for _, group in answer.untestable for v in group})
    found = {TODAY: today}
    if answer.drift:
        found[PUBLISHED] = {d.claim: d.published for d in answer.drift}
        found[TODAY] = dict(today, **{d.claim: d.today for d in answer.drift})
    return found


def _fingerprint(answer):
    """configkey.host_text of the record's first bundle's host, None without a bundle."""
    bodies = answer.bundle.bodies if answer.bundle is not None else []
    return configkey.host_text(configkey.fingerprint(bodies[0])) if bodies else None


def _named(framework, version):
    """'PyTorch 2.13.0' of a framework code and a version ('2.13.0+cpu': its local part aside; a set's label may
    add ' (published: 0.3.1)'), '' for a tool the suite does not run."""
    return "%s %s" % (display(framework), version.split("+", 1)[0]) if framework else ""


def _versions(answer):
    """{version set: {'PyTorch 2.13.0', 'PyTorch 1.0.0 (published: 0.3.1)', ...}} of one study record: its
    version sets' tools where it ran both, else the framework versions of its ok jobs."""
    sets = driftmod.sets_of(answer.record)
    if sets:
        return {
            TODAY if name == "today" else PUBLISHED: {
                _named(answer.study.framework(c["label"].split(" ", 1)[0]), c["label"].split(" ", 1)[1])
                for chosen in runs.values()
                for c in chosen
            }
            - {""}
            for name, runs in sets.items()
        }
    summary = answer.bundle.summary if answer.bundle else None
    if summary is None or not len(summary):
        return {TODAY: set()}
    ok = summary[summary["status"] == "ok"]
    return {TODAY: {_named(f, v) for f, v in zip(ok["framework"], ok["framework_version"]) if isinstance(v, str)}}


def _cell(pieces):
    """The Cell of a claim's Evidence ``pieces`` (one per record)."""
    ranked = sorted(pieces, key=lambda e: e.strength, reverse=True)
    others, seen = [], {ranked[0].verdict.verdict}
    for piece in ranked[1:]:
        if piece.verdict.verdict not in seen:
            seen.add(piece.verdict.verdict)
            others.append(piece)
    return Cell(ranked[0], others)


def matrices(answers):
    """[Matrix], one per study name (sorted), of the StudyAnswers ``answers`` (any order)."""
    out = []
    for study in sorted({a.record["study"] for a in answers}):
        mine = sorted((a for a in answers if a.record["study"] == study), key=lambda a: (a.record["created"], _name(a)))
        columns, pieces, at = [], {}, {}
        for answer in mine:
            record = Record(
                _name(answer),
                answer.record["created"],
                bool((answer.record.get("asked") or {}).get("quick")),
                bool(answer.record.get("finished")),
            )
            named = _versions(answer)
            for versions, verdicts in _verdicts(answer).items():
                where = (_fingerprint(answer), versions)
                if where not in at:
                    at[where] = len(columns)
                    columns.append(Column(answer.host or "no bundle", versions, fingerprint=where[0]))
                column = columns[at[where]]
                column.records.insert(0, record)
                column.named = sorted(set(column.named) | named.get(versions, set()))
                for claim, verdict in verdicts.items():
                    pieces.setdefault((claim, at[where]), []).append(Evidence(record, verdict))
        manifest = mine[-1].study
        out.append(
            Matrix(
                study,
                manifest.title,
                [(name, claim.text) for name, claim in manifest.claims.items()],
                columns,
                {key: _cell(found) for key, found in pieces.items()},
            )
        )
    return out
