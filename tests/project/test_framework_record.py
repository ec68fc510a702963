"""A framework is one record (runner.frameworks; its names and colour in dlrepro.inputs.frameworks), a version one
token.

The record checks itself when it is built; these tests check what lies outside it (its adapter module, its image,
its container test) once per record, and show, with a framework made up for the test, what adding one touches: a
record in each of the two registries and an adapter module. Its image lines and its spec entries are data files.
"""

import sys

import pytest

from dlrepro.images import matrix as matrixmod
from dlrepro.inputs import frameworks as names
from dlrepro.plan import expressible
from dlrepro.views import palette
from runner import adapters, contract, frameworks, settings
from runner.adapters import capabilities
from runner.frameworks import Framework, Token
from tests.containers.frameworks import FRAMEWORKS as CONTAINER_TESTED


def test_every_record_has_its_adapter_module_names_an_image_and_a_container_test():
    found = set(frameworks.FRAMEWORKS)
    assert {"torch", "keras-theano"} < found
    assert set(adapters.available()) == found  # each record's module is a file of runner/adapters
    eras = {r.label: r.module for f in frameworks.FRAMEWORKS.values() for r in f.eras.values()}
    assert eras == {
        "torch 1.x": "torch_adapter",
        "tensorflow 1.x": "tensorflow_graph",
        "keras-tensorflow 2.x": "keras2_adapter",
    }
    assert set(names.FRAMEWORKS) == found  # its one spelling, its study names and its colour
    matrix = matrixmod.load()
    assert set(matrix.frameworks()) == found and set(matrix.default_frameworks) <= found
    assert {f for f in found if matrix.versions(f, "cpu")} == found  # each has a CPU image (Keras: its backend's)
    # the container tests run each one (torch7 in test_torch7.py: its image needs its source archives)
    assert {Token.parse(f).name for f in CONTAINER_TESTED} | {"torch7"} == found


def test_a_framework_has_one_colour_and_one_spelling_of_its_own():
    records = list(names.FRAMEWORKS.values())
    assert len({r.colour for r in records}) == len({r.display for r in records}) == len(records) > 1
    assert palette.colour("keras-cntk") == names.colour("keras-cntk") == "#98df8a"
    assert names.of_study_name("Tensorflow") == ["tensorflow"] and names.of_study_name("Torch") == ["torch7"]


def test_every_option_a_record_honours_is_a_measurement_option_with_its_default():
    for record in [r for f in frameworks.FRAMEWORKS.values() for r in [f] + list(f.eras.values())]:
        for name, values in record.options.items():
            assert contract.OPTION_DEFAULTS[name] in values, (record.label, name)


def test_a_record_says_exactly_one_of_how_it_runs_data_parallel_and_why_not():
    with pytest.raises(ValueError) as caught:
        Framework("fakenet", "fakenet", "zeros")
    assert str(caught.value) == (
        "framework fakenet: give exactly one of data_parallel (how) and no_data_parallel (why not)"
    )
    with pytest.raises(ValueError) as caught:
        Framework("fakenet", "fakenet", "zeros", layers=frozenset(["conv", "capsule"]), data_parallel="one process")
    assert str(caught.value) == "framework fakenet: layers capsule are no runner.shapes primitive"
    era = frameworks.FRAMEWORKS["torch"].at("1.0.0")
    assert (era.label, era.data_parallel, era.no_data_parallel) == (
        "torch 1.x",
        None,
        "its DistributedDataParallel path needs torch 1.7 (gradient_as_bucket_view)",
    )
    assert frameworks.FRAMEWORKS["torch"].at("2.13.0") is frameworks.FRAMEWORKS["torch"]


def test_a_token_is_parsed_once_and_written_once():
    token = Token.parse("tensorflow@1.4.0")
    assert (token.name, token.version, token.major, token.text, token.job_part) == (
        "tensorflow",
        "1.4.0",
        "1",
        "tensorflow@1.4.0",
        "tensorflow-1.4.0",
    )
    plain = Token.of_job({"framework": "mxnet", "framework_version": None})
    assert (plain, plain.text, plain.job_part, plain.major) == (("mxnet", None), "mxnet", "mxnet", None)
    for text, problem in (
        ("tensorflow@", "'tensorflow@' has no version after the @ (NAME@VERSION, or NAME alone for the newest)"),
        ("@1.4.0", "'@1.4.0' has no framework name before the @"),
    ):
        with pytest.raises(ValueError) as caught:
            Token.parse(text)
        assert str(caught.value) == problem


ADAPTER = '''"""A framework made up for tests/test_framework_record.py."""
from runner.adapters.base import Adapter as Base


class Adapter(Base):
    def environment(self):
        return {"framework": "fakenet", "framework_version": "0.1.0"}
'''


@pytest.fixture
def fakenet(tmp_path, monkeypatch):
    """A framework "fakenet" added as a new one is: its runner record (an era 0.x too), its names and colour, its
    adapter module (here in a temporary folder of the runner.adapters package)."""
    (tmp_path / "fakenet_adapter.py").write_text(ADAPTER)
    monkeypatch.setattr(adapters, "__path__", list(adapters.__path__) + [str(tmp_path)])
    record = Framework(
        "fakenet",
        "fakenet",
        "its own (zeros)",
        backend="torch",
        layers=frameworks.ALL_LAYERS - {"lstm"},
        layer_notes={"lstm": "fakenet has none"},
        options={"precision": ("fp32", "bf16")},
        compiled="fakenet traces it",
        no_data_parallel="fakenet has no collective",
    )
    monkeypatch.setitem(frameworks.FRAMEWORKS, "fakenet", record.add_era("0", options={}))
    monkeypatch.setitem(names.FRAMEWORKS, "fakenet", names.Names("fakenet", "FakeNet", ("Fake-Net",), "#000001"))
    yield record
    sys.modules.pop("runner.adapters.fakenet_adapter", None)


def test_a_new_framework_is_a_record_in_each_registry_and_an_adapter_module(fakenet, monkeypatch):
    job = {"framework": "fakenet", "framework_version": None, "device": "cpu", "mode": "throughput", "warmup": 0}
    assert "fakenet" in adapters.available() and adapters.module_name(job) == "fakenet_adapter"
    assert adapters.load(dict(job, model={}, seed=0)).environment()["framework"] == "fakenet"
    assert capabilities.unsupported("fakenet", [{"type": "lstm"}], "softmax_cross_entropy", "sgd", None) == (
        "the fakenet adapter has no layer lstm (fakenet has none)"
    )
    assert capabilities.unsupported_options("fakenet", dict(job, precision="bf16"), "cpu") == (
        "the fakenet adapter cannot run warm-up 0: its first iteration compiles the training step (fakenet traces "
        "it), and that would be timed"
    )
    assert capabilities.unsupported_options("fakenet@0.1.0", dict(job, precision="bf16", warmup=1), "cpu") == (
        "the fakenet 0.x adapter cannot run precision=bf16 (the fakenet 0.x adapter has fp32)"
    )
    assert capabilities.unsupported_parallel("fakenet", "throughput") == (
        "no data-parallel training in the fakenet adapter: fakenet has no collective"
    )
    assert settings.environment(dict(job, threads=1))["KERAS_BACKEND"] == "torch"  # its backend, from the record
    assert (names.display("fakenet"), palette.colour("fakenet"), names.of_study_name("Fake-Net")) == (
        "FakeNet",
        "#000001",
        ["fakenet"],
    )
    from dlrepro.inputs import spec as specmod

    fcn = specmod.load("fcn")
    fcn = fcn.model_copy(update={"frameworks": fcn.frameworks + ["fakenet"]})
    assert expressible.unsupported(fcn, "fcn-r", "fakenet") is None
