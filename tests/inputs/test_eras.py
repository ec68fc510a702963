"""Then and now (dlrepro.inputs.eras): which image stands for each version a study published, the gap it records, and
what a study run with --versions published|today|both plans."""

import pytest

from dlrepro.errors import DlreproError, ImageError
from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import eras, studies
from dlrepro.run import study as studymod


class Served:
    """A matrix that has exactly these versions ({(framework, device): [versions, today's last]})."""

    def __init__(self, served):
        self.served = served

    def versions(self, framework, device):
        return self.served.get((framework, device), [])


def test_the_nearest_served_version_is_the_published_one_else_the_earliest_after_else_the_latest_before():
    assert eras.nearest(["1.0.0", "2.13.0"], "1.0.0") == "1.0.0"
    assert eras.nearest(["2.13.0", "1.0.0", "1.4.0"], "0.3.1") == "1.0.0"  # order of the list does not matter
    assert eras.nearest(["2.5", "2.7.post2"], "2.4") == "2.5"
    assert eras.nearest(["2.5", "2.7.post2"], "2.7") == "2.7.post2"  # a post release comes after its release
    assert eras.nearest(["1.0.0"], "1.0rc5") == "1.0.0"  # a release candidate comes before its release
    assert eras.nearest(["0.12.0", "1.9.1"], "2.0.0") == "1.9.1"
    assert eras.nearest(["1.4.0", "2.21.0"], "0.11.0rc0") == "1.4.0"
    with pytest.raises(DlreproError, match="no served version to stand for 0.3.1"):
        eras.nearest([], "0.3.1")


def test_each_version_set_names_what_stands_for_what_with_the_gap():
    dlf = studies.load("dlf")
    served = Served(
        {
            ("torch", "cpu"): ["1.0.0", "2.13.0"],
            ("tensorflow", "cpu"): ["1.4.0", "2.21.0"],
            ("mxnet", "cpu"): ["0.12.0", "1.9.1"],
            ("cntk", "cpu"): ["2.7.post2"],
            ("caffe2", "cpu"): ["1.10.2"],
            ("chainer", "cpu"): ["3.4.0", "7.8.1"],
            ("keras-tensorflow", "cpu"): ["2.1.5", "3.15.1"],
            ("keras-cntk", "cpu"): ["2.1.5"],
            ("keras-theano", "cpu"): ["2.1.5"],
        }
    )
    published = eras.choose(dlf, served, "cpu", "published")
    assert [(c.token, c.label) for c in published] == [
        ("torch@1.0.0", "PyTorch 1.0.0 (published: 0.3.1)"),
        ("tensorflow@1.4.0", "Tensorflow 1.4.0"),
        ("mxnet@0.12.0", "MXNet(Gluon) 0.12.0"),
        ("cntk", "CNTK 2.7.post2 (published: 2.4)"),
        ("caffe2", "Caffe2 1.10.2 (published: not stated)"),
        ("chainer@3.4.0", "Chainer 3.4.0"),
        ("keras-tensorflow@2.1.5", "Keras(TF) 2.1.5 (published: 2.1.4)"),
        ("keras-cntk", "Keras(CNTK) 2.1.5 (published: 2.1.4)"),
        ("keras-theano", "Keras(Theano) 2.1.5 (published: 2.1.4)"),
    ]
    today = eras.choose(dlf, served, "cpu", "today")
    assert eras.tokens(today) == [
        "torch",
        "tensorflow",
        "mxnet",
        "cntk",
        "caffe2",
        "chainer",
        "keras-tensorflow",
        "keras-cntk",
        "keras-theano",
    ]
    assert [c.label for c in today][:2] == ["PyTorch 2.13.0", "Tensorflow 2.21.0"]
    both = eras.choose(dlf, served, "cpu", "both")  # CNTK's published version runs on today's image: once
    assert eras.tokens(both) == [
        "torch@1.0.0",
        "torch",
        "tensorflow@1.4.0",
        "tensorflow",
        "mxnet@0.12.0",
        "mxnet",
        "cntk",
        "caffe2",
        "chainer@3.4.0",
        "chainer",
        "keras-tensorflow@2.1.5",
        "keras-tensorflow",
        "keras-cntk",
        "keras-theano",
    ]
    (none,) = eras.choose(dlf, Served({}), "cuda", "published")[:1]
    assert none.token is None and none.label == "PyTorch (no image; published: 0.3.1)"
    assert none.why == "no cuda image of torch in the matrix"
    with pytest.raises(DlreproError, match=r"^--versions: expected one of published, today, both \(got 'then'\)$"):
        eras.choose(dlf, served, "cpu", "then")


def test_a_study_run_with_versions_plans_each_run_at_those_versions():
    dlf = studies.load("dlf")
    both = {p.id: p for p in studymod.plan(dlf, gpus=[], cpus=2, runs=["cpu-rnn"], versions="both")}
    rnn = both["cpu-rnn"]
    assert rnn.options.frameworks == [
        "torch@1.0.0",
        "torch",
        "tensorflow@1.4.0",
        "tensorflow",
        "mxnet@0.12.0",
        "mxnet",
        "jax",
        "cntk@2.5.1",
        "cntk",
        "caffe2",
        "caffe",
        "chainer@3.4.0",
        "chainer",
        "keras-tensorflow@2.1.5",
        "keras-tensorflow",
        "keras-jax",
        "keras-torch",
        "keras-cntk",
        "keras-theano",
    ]
    assert rnn.notes[0] == (
        "--versions both: PyTorch 1.0.0 (published: 0.3.1), PyTorch 2.13.0, Tensorflow 1.4.0, "
        "Tensorflow 2.21.0, MXNet(Gluon) 0.12.0, MXNet(Gluon) 1.9.1, CNTK 2.5.1 (published: 2.4), "
        "CNTK 2.7.post2, Caffe2 1.10.2 (published: not stated), Chainer 3.4.0, Chainer 7.8.1, Keras(TF) "
        "2.1.5 (published: 2.1.4), Keras(TF) 3.15.1, Keras(CNTK) 2.1.5 (published: 2.1.4), "
        "Keras(Theano) 2.1.5 (published: 2.1.4)"
    )
    # the frameworks with a GRU (PyTorch, TensorFlow, MXNet, CNTK, Chainer and Keras on TensorFlow twice, JAX, Keras
    # on JAX, PyTorch, CNTK and Theano), six seeds each
    assert rnn.jobs == 17 * 6
    assert [c["token"] for c in rnn.versions["published"]] == [
        "torch@1.0.0",
        "tensorflow@1.4.0",
        "mxnet@0.12.0",
        "cntk@2.5.1",
        "caffe2",
        "chainer@3.4.0",
        "keras-tensorflow@2.1.5",
        "keras-cntk",
        "keras-theano",
    ]
    assert [c["token"] for c in rnn.versions["today"]] == [
        "torch",
        "tensorflow",
        "mxnet",
        "cntk",
        "caffe2",
        "chainer",
        "keras-tensorflow",
        "keras-cntk",
        "keras-theano",
    ]
    with pytest.raises(DlreproError, match="^--versions: expected one of published, today, both"):
        studymod.plan(dlf, gpus=[], cpus=2, versions="old")
    with pytest.raises(
        DlreproError, match="^--framework mxnet@0.12.0 with --versions: the version set picks"
    ) as caught:
        studymod.plan(dlf, frameworks=["mxnet@0.12.0", "torch"], gpus=[], cpus=2, versions="both")
    assert caught.value.remedy.startswith("give plain framework names with --versions")


def test_an_unknown_version_names_the_served_ones():
    served = matrixmod.load()
    with pytest.raises(ImageError) as caught:
        served.select(["mxnet@0.9.3"])
    assert str(caught.value) == (
        "--framework mxnet@0.9.3: no image of mxnet 0.9.3 on cpu; its versions on cpu here: "
        "0.12.0, 1.9.1; did you mean mxnet@0.12.0?"
    )


def test_a_published_version_for_a_tool_the_suite_does_not_run_is_refused(tmp_path):
    text = (
        studies.path_of("dlf")
        .read_text()
        .replace("versions:  #", "versions:\n  Julia-Knet: {version: 0.9.0, source: x}\n  #", 1)
    )
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(DlreproError) as caught:
        studies.load(str(path))
    assert (
        "versions: 'Julia-Knet': not a tool the suite runs; the study's are: PyTorch, Tensorflow, MXNet(Gluon), "
        "CNTK, Caffe2, Chainer, Keras(TF)" in str(caught.value.problems)
    )


def _chosen(*tokens):
    """A record's chosen list for DLBench's tools Caffe, CNTK, TensorFlow and MXNet at ``tokens``."""
    return [{"tool": tool, "token": t, "label": t} for tool, t in zip(("Caffe", "CNTK", "TensorFlow", "MXNet"), tokens)]


def test_a_claim_that_flips_between_the_published_versions_and_todays_is_shown_as_flipping():
    """DLBench's GPU ordering (Caffe, then CNTK, then TensorFlow and MXNet) from constructed rows: at the era
    versions it holds, at today's TensorFlow and MXNet are ahead of both (does not hold); Caffe and CNTK ran one
    image for both sets and count in each."""
    import pandas as pd

    from dlrepro.answers import claims, drift, verdicts
    from tests.inputs.studies import _rows

    study = studies.load("dlbench")
    study = study.model_copy(update={"claims": {"fcn-s-ordering": study.claims["fcn-s-ordering"]}})
    then = _rows(
        {"caffe": 1.0, "cntk": 2.0, "tensorflow": 3.0, "mxnet": 4.0}, run="gpu-synthetic", device="cuda", ci="tight"
    ).assign(
        job_id=[
            "fcn-s.caffe.cuda.b64",
            "fcn-s.cntk.cuda.b64",
            "fcn-s.tensorflow-1.4.0.cuda.b64",
            "fcn-s.mxnet-0.12.0.cuda.b64",
        ],
        framework_version=["1.0.0", "2.5.1", "1.4.0", "0.12.0"],
    )
    now = _rows({"tensorflow": 0.5, "mxnet": 0.6}, run="gpu-synthetic", device="cuda", ci="tight").assign(
        job_id=["fcn-s.tensorflow.cuda.b64", "fcn-s.mxnet.cuda.b64"], framework_version=["2.21.0", "1.9.1+cu118"]
    )
    summary = pd.concat([then, now], ignore_index=True)
    record = {
        "runs": {
            "gpu-synthetic": {
                "versions": {
                    "published": _chosen("caffe", "cntk", "tensorflow@1.4.0", "mxnet@0.12.0"),
                    "today": _chosen("caffe", "cntk", "tensorflow", "mxnet"),
                }
            }
        }
    }
    assert list(drift.rows_of(summary, record, "published")["job_id"]) == list(then["job_id"])
    assert list(drift.rows_of(summary, record, "today")["job_id"]) == [
        "fcn-s.caffe.cuda.b64",
        "fcn-s.cntk.cuda.b64",
        "fcn-s.tensorflow.cuda.b64",
        "fcn-s.mxnet.cuda.b64",
    ]
    (found,) = drift.drift(study, summary, record, lambda rows, name: claims.evaluate(study, rows))
    assert (found.claim, found.published.verdict, found.today.verdict, found.change) == (
        "fcn-s-ordering",
        verdicts.HOLDS,
        verdicts.DOES_NOT_HOLD,
        drift.FLIPS,
    )
    assert found.labels == {
        "published": "caffe; cntk; mxnet@0.12.0; tensorflow@1.4.0",
        "today": "caffe; cntk; mxnet; tensorflow",
    }
    same = now.assign(median=[3.0, 4.0], ci95_low=[2.97, 3.96], ci95_high=[3.03, 4.04])  # today's as the era's
    (kept,) = drift.drift(
        study, pd.concat([then, same], ignore_index=True), record, lambda rows, name: claims.evaluate(study, rows)
    )
    assert (kept.published.verdict, kept.today.verdict, kept.change) == (verdicts.HOLDS, verdicts.HOLDS, drift.KEEPS)
    smoke = now.assign(ci95_low=None, ci95_high=None, quick=True)  # today's a smoke pass: no interval
    (unsure,) = drift.drift(
        study, pd.concat([then, smoke], ignore_index=True), record, lambda rows, name: claims.evaluate(study, rows)
    )
    assert (unsure.today.verdict, unsure.change) == (verdicts.INCONCLUSIVE, drift.CANNOT_TELL)
    assert drift.drift(study, summary, {"runs": {"gpu-synthetic": {"versions": {"today": []}}}}, None) == []
    # every tool the claim names on one image at both sets: nothing compared, whatever the verdicts
    alike = {
        "runs": {
            "gpu-synthetic": {
                "versions": {
                    "published": _chosen("caffe", "cntk", "tensorflow", "mxnet"),
                    "today": _chosen("caffe", "cntk", "tensorflow", "mxnet"),
                }
            }
        }
    }
    (same,) = drift.drift(
        study,
        now.assign(job_id=["fcn-s.tensorflow.cuda.b64", "fcn-s.mxnet.cuda.b64"]).pipe(
            lambda rows: pd.concat([then.iloc[:2], rows], ignore_index=True)
        ),
        alike,
        lambda rows, name: claims.evaluate(study, rows),
    )
    assert (same.published.verdict, same.today.verdict, same.change) == (
        verdicts.DOES_NOT_HOLD,
        verdicts.DOES_NOT_HOLD,
        drift.SAME,
    )


def test_a_tensorflow_1_job_goes_to_the_graph_adapter_and_is_told_what_it_cannot_run():
    from runner import adapters, frameworks
    from runner.adapters import capabilities

    assert adapters.module_name({"framework": "tensorflow", "framework_version": "1.4.0"}) == "tensorflow_graph"
    assert adapters.module_name({"framework": "tensorflow", "framework_version": None}) == "tensorflow_adapter"
    assert adapters.module_name({"framework": "mxnet", "framework_version": "0.12.0"}) == "mxnet_adapter"
    assert "tensorflow_graph" not in adapters.available()  # an era module is no framework of its own
    assert (frameworks.of("tensorflow@1.4.0").label, frameworks.of("tensorflow").label) == (
        "tensorflow 1.x",
        "tensorflow",
    )
    gru = studies.specmod.load("imdb-gru")
    from dlrepro.plan import expressible

    assert expressible.unsupported(gru, "imdb-gru", "tensorflow") is None
    # BasicLSTMCell and CudnnCompatibleGRUCell
    assert expressible.unsupported(gru, "imdb-gru", "tensorflow@1.4.0") is None
    tf14 = {"framework": "tensorflow", "framework_version": "1.4.0", "mode": "throughput", "warmup": 1}
    assert capabilities.unsupported_options("tensorflow@1.4.0", dict(tf14, precision="bf16"), "cpu") == (
        "the tensorflow 1.x adapter cannot run precision=bf16 (the tensorflow 1.x adapter has fp32)"
    )


def test_an_era_adapter_refuses_the_options_its_framework_did_not_have():
    from runner.adapters import capabilities
    from runner.frameworks import Token

    torch10 = {"framework": "torch", "framework_version": "1.0.0", "mode": "throughput", "warmup": 1}
    assert (
        capabilities.unsupported_options(
            Token.of_job(dict(torch10, precision="bf16")), dict(torch10, precision="bf16"), "cpu"
        )
        == "the torch 1.x adapter cannot run precision=bf16 (the torch 1.x adapter "
        "has fp32)"
    )
    assert capabilities.unsupported_options("torch", dict(torch10, precision="bf16"), "cpu") is None
    assert "layout=channels_last" in capabilities.unsupported_options(
        "torch@1.0.0", dict(torch10, layout="channels_last"), "cpu"
    )
    tf14 = {"framework": "tensorflow", "framework_version": "1.4.0", "mode": "throughput", "warmup": 0}
    assert capabilities.unsupported_options(Token.of_job(tf14), tf14, "cpu") == (
        "the tensorflow 1.x adapter cannot run warm-up 0: its first iteration compiles the training step (the first "
        "Session.run prunes, places and optimises the graph), and that would be timed"
    )


def test_one_release_written_two_ways_is_the_same_version():
    assert eras.nearest(["1.4", "2.21.0"], "1.4.0") == "1.4"
    assert eras.Chosen("Tensorflow", "tensorflow", "tensorflow@1.4", "1.4", "1.4.0").label == "Tensorflow 1.4"


def test_holds_at_one_set_and_direction_only_at_the_other_shifts_and_both_untestable_is_not_judged():
    from types import SimpleNamespace as Verdict

    from dlrepro.answers import drift, verdicts

    def change(then, now, same=False):
        return drift.Drift("c", "text", Verdict(verdict=then), Verdict(verdict=now), {}, same).change

    assert change(verdicts.HOLDS, verdicts.DIRECTION_ONLY) == drift.SHIFTS
    assert change(verdicts.DIRECTION_ONLY, verdicts.DOES_NOT_HOLD) == drift.FLIPS
    assert change(verdicts.DOES_NOT_HOLD, verdicts.DOES_NOT_HOLD) == drift.KEEPS
    assert change(verdicts.HOLDS, verdicts.INCONCLUSIVE) == drift.CANNOT_TELL
    assert change(verdicts.HOLDS, verdicts.DOES_NOT_HOLD, same=True) == drift.SAME
    assert change(verdicts.NOT_TESTABLE, verdicts.NOT_TESTABLE, same=True) == drift.NOT_JUDGED
