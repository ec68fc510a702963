"""The lists that must agree across the suite: a framework added in one place and forgotten in another fails here,
not in the middle of a run."""
import typing

from dlrepro.images import matrix as matrixmod
from dlrepro.layers import Layer
from dlrepro.frameworks import DISPLAY, STUDY_NAMES
from dlrepro.results.views import palette
from runner import adapters, shapes
from runner.adapters import capabilities
from tests.test_frameworks import FRAMEWORKS


def test_every_framework_is_everywhere():
    modules = set(adapters.available())
    assert modules == {"torch", "tensorflow", "mxnet", "jax", "cntk", "caffe2", "caffe"}
    assert set(capabilities.CAPABILITIES) == modules  # what each adapter can express
    assert set(STUDY_NAMES) == modules  # how each is named in the studies' tables
    assert set(DISPLAY) == set(palette.FRAMEWORKS) == modules  # its one spelling and its one colour
    assert set(FRAMEWORKS) == modules  # the container tests run each one
    matrix = matrixmod.load()
    assert {image.framework for image in matrix.images} == modules  # each has an image
    assert set(matrix.default_frameworks) <= modules
    assert {image.framework for image in matrix.images if image.device == "cpu"} == modules
    assert set(capabilities.OPTIONS) <= modules


def test_the_spec_schema_knows_exactly_the_runners_layer_types():
    schema_types = set()
    for cls in typing.get_args(typing.get_args(Layer)[0]):
        schema_types.update(typing.get_args(cls.model_fields["type"].annotation))
    assert schema_types == set(shapes.PRIMITIVES) | set(shapes.MACROS)
    assert capabilities.ALL_LAYERS == frozenset(shapes.PRIMITIVES)
