"""What reproduces where: per study, each claim's verdict on every (host, version set) it was run on, from the study
records under a results folder (one more view of the answer model: the verdicts are answers.claims', the
published set's from answers.drift where a record ran ``--versions both``).

A column is one host at one version set ("today's versions", or "the published versions" of a record that ran
both): its host fingerprint (answers.configkey.fingerprint of the record's first bundle: CPU model, logical CPUs,
ISA flags, GPUs), labelled by answers.study.host_line, so that two machines sold under one CPU model name, one with
AVX-512, are two columns. Where several records share a column the newest gives its cells and the others are named
in ``earlier``. Pure: StudyAnswer objects in, Matrix objects out.
"""
from dataclasses import dataclass, field

from dlrepro.results.answers import configkey

TODAY, PUBLISHED = "today's versions", "the published versions"


@dataclass
class Column:
    host: str  # answers.study.host_line
    versions: str  # TODAY or PUBLISHED
    record: str  # the record's name (its file's stem) whose verdicts the cells are
    created: str
    smoke: bool  # the record's runs were smoke passes (--quick)
    finished: bool  # the record says its study finished (a study stopped part way has no ``finished``)
    earlier: list = field(default_factory=list)  # the names of older records of the same column
    fingerprint: str = None  # configkey.host_text of the host's fingerprint (None: a record without a bundle)


@dataclass
class Matrix:
    """One study: ``claims`` [(claim id, text)] in the manifest's order, ``columns`` [Column] in the order first
    run, ``cells`` {(claim id, column index): claims.Verdict}."""
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


def matrices(answers):
    """[Matrix], one per study name (sorted), of the StudyAnswers ``answers`` (any order)."""
    out = []
    for study in sorted({a.record["study"] for a in answers}):
        mine = sorted((a for a in answers if a.record["study"] == study), key=lambda a: (a.record["created"], _name(a)))
        columns, cells, at = [], {}, {}
        for answer in mine:
            for versions, verdicts in _verdicts(answer).items():
                where = (_fingerprint(answer), versions)
                column = Column(answer.host or "no bundle", versions, _name(answer), answer.record["created"],
                                bool((answer.record.get("asked") or {}).get("quick")),
                                bool(answer.record.get("finished")), fingerprint=where[0])
                if where in at:
                    column.earlier = columns[at[where]].earlier + [columns[at[where]].record]
                    columns[at[where]] = column
                else:
                    at[where] = len(columns)
                    columns.append(column)
                for claim, verdict in verdicts.items():
                    cells[(claim, at[where])] = verdict
        manifest = mine[-1].study
        out.append(Matrix(study, manifest.title, [(name, claim.text) for name, claim in manifest.claims.items()],
                          columns, cells))
    return out
