"""Extension points that carry their own names (issue 51): a claim kind is one class in dlrepro.inputs.claimkinds (the
fields it needs, its tools, when enough of them run, its test words, its axis, its judge), an executor a subclass of
dlrepro.run.executors.base.Executor with a ``name``. Each test adds one and shows where it is found."""

import pytest

from dlrepro.answers import claims, verdicts  # noqa: F401 (claims registers the judges)
from dlrepro.errors import ExecutorError
from dlrepro.inputs import claimkinds, studies
from dlrepro.run import executors
from dlrepro.run.executors import base


def test_every_kind_names_its_fields_and_its_test_and_has_a_judge():
    assert {name: (kind.needs, kind.test, kind.judge is not None) for name, kind in claimkinds.KINDS.items()} == {
        "ordering": (("runs", "variant", "order"), "pairs' 95% intervals", True),
        "ratio": (
            ("runs", "variant", "subject", "tools", "band"),
            "95% interval of the ratio per tool against the band",
            True,
        ),
        "band": (("runs", "variant", "tools", "band"), "95% interval per tool against the band", True),
        "scaling": (
            ("runs", "variant", "band", "over", "at", "to"),
            "95% interval of the speedup per tool against the band",
            True,
        ),
        "untestable": (("why",), None, False),
    }


def _claim(**fields):
    return studies.Claim(**dict(dict(text="t", source="s", runs=["r"], variant="v"), **fields))


def test_a_kind_says_which_tools_must_run_for_a_verdict():
    ordering = _claim(kind="ordering", order=[["A", "B"], ["C"]])
    kind = claimkinds.of(ordering)
    assert kind.tools(ordering) == ["A", "B", "C"]
    assert (kind.enough(ordering, {"A", "B"}), kind.enough(ordering, {"A", "C"})) == (False, True)
    ratio = _claim(kind="ratio", subject="M", tools=["A", "B"], band=[4.0, 7.0])
    assert claimkinds.of(ratio).tools(ratio) == ["M", "A", "B"] and not claimkinds.of(ratio).enough(ratio, {"A", "B"})
    assert claimkinds.of(ratio).axis(ratio) == "speed ratio, M over each tool"


def test_an_unknown_kind_is_refused_naming_the_kinds():
    with pytest.raises(ValueError) as caught:
        _claim(kind="ranking", order=[["A"], ["B"]])
    assert "unknown claim kind 'ranking'; the kinds are: ordering, ratio, band, scaling, untestable" in str(
        caught.value
    )


@pytest.fixture
def faster_than(monkeypatch):
    """A made-up kind: ``subject`` is faster than every one of ``tools`` (its judge a stub)."""
    monkeypatch.setattr(claimkinds, "KINDS", dict(claimkinds.KINDS))

    @claimkinds.register
    class FasterThan(claimkinds.ClaimKind):
        name, needs, test = "faster-than", ("runs", "variant", "subject", "tools"), "the subject's interval first"

    claimkinds.judge("faster-than")(lambda study, claim, rows: (verdicts.HOLDS, "stub", {}, [], None))
    return claimkinds.KINDS["faster-than"]


def test_a_new_kind_is_a_class_and_a_judge(faster_than):
    claim = _claim(kind="faster-than", subject="M", tools=["A"])
    assert claimkinds.of(claim) is faster_than and faster_than.tools(claim) == ["M", "A"]
    with pytest.raises(ValueError) as caught:
        _claim(kind="faster-than", subject="M")
    assert "a faster-than claim needs tools" in str(caught.value)
    assert faster_than.judge(None, claim, None)[:2] == (verdicts.HOLDS, "stub")


def test_an_executor_registers_by_its_name(monkeypatch):
    monkeypatch.setattr(base, "EXECUTORS", dict(base.EXECUTORS))
    monkeypatch.setattr(executors, "EXECUTORS", base.EXECUTORS)
    assert sorted(base.EXECUTORS) == ["docker", "local", "slurm"] and executors.IN_IMAGES == ("docker", "slurm")

    class Remote(executors.LocalExecutor):
        name = "remote"

    made = executors.get("remote", python="/usr/bin/python3")
    assert type(made) is Remote and made.python == "/usr/bin/python3"
    with pytest.raises(ExecutorError) as caught:
        executors.get("podman")
    assert str(caught.value).startswith("unknown executor 'podman': use docker, local, remote or slurm")
