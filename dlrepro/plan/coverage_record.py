"""The host plan a study record holds: `dlrepro study` records, per version set it runs, the plan of its host
(dlrepro.plan.coverage: every claim's and published cell's Outcome) in the record's ``plan``, and a report reads it from
there (dlrepro.answers.gather), so that a report of a record says what the plan said when the study ran, whatever
the specs, the image matrix and the dataset catalogue say today. A record made before it has none: its plan is
computed once, from the record's own manifest, the specs its bundles recorded and the host of its first bundle.

  record["plan"] = {"host": "1 x H200, 16 CPU cores", "sets": {"today": {"claims": [Outcome as a dict, ...],
                                                                         "cells": [...]}, "published": {...}}}
"""

from dataclasses import asdict, replace

from dlrepro.inputs import spec as specmod
from dlrepro.plan import coverage


def sets_of(versions):
    """The version sets a study run with ``--versions versions`` (None: today's) plans: both gives two."""
    return ("published", "today") if versions == "both" else (versions or "today",)


def record(study, hardware, matrix, versions, specs=None):
    """The ``plan`` entry of a study record: the plan of ``study`` on ``hardware`` for each version set of
    ``versions`` (sets_of), Outcomes as plain data; ``specs`` {name: Spec} where loaded already."""
    given = {name: coverage.inputs(study, matrix, name, specs) for name in sets_of(versions)}
    found = {name: coverage.plan(inputs, hardware) for name, inputs in given.items()}
    return {
        "host": hardware.describe(),
        "sets": {
            name: {part: [asdict(o) for o in outcomes] for part, outcomes in plan.items()}
            for name, plan in found.items()
        },
    }


def this_host(study, matrix, versions, specs=None):
    """record() on this host (dlrepro.plan.coverage.this_host) with every dataset, as a report has always planned a
    study's host: what a run skipped for want of a dataset, its bundle says."""
    return record(study, replace(coverage.this_host(), datasets=coverage.every_dataset()), matrix, versions, specs)


def claims(plan):
    """{version set: {claim: coverage.Outcome}} of a record's ``plan`` entry."""
    return {name: {o["what"]: coverage.Outcome(**o) for o in found["claims"]} for name, found in plan["sets"].items()}


def of_record(body, study, bodies, matrix):
    """{version set: {claim: coverage.Outcome}} of study record ``body`` (its manifest ``study``, as recorded): its
    recorded plan, else (a record made before plans were recorded) the plan computed once on the host of its first
    bundle, from the specs its bundles recorded (today's file only for a spec none of them ran); None without either."""
    versions = (body.get("asked") or {}).get("versions")
    if body.get("plan"):
        return claims(body["plan"])
    if not bodies:
        return None
    specs = {}
    for b in bodies:
        specs.setdefault(b["spec"]["name"], _recorded(b["spec"]))
    return claims(record(study, coverage.of_host(bodies[0]["host"]), matrix, versions, specs))


def _recorded(spec):
    """The Spec a bundle recorded (its ``spec`` entry's ``resolved``), today's file where it no longer validates."""
    try:
        return specmod.Spec.model_validate(spec["resolved"])
    except (KeyError, ValueError):
        return specmod.load(spec["name"])
