"""The lists that must agree across the suite: a framework added in one place and forgotten in another fails here,
not in the middle of a run."""
import typing

from dlrepro.images import matrix as matrixmod
from dlrepro.layers import Layer
from dlrepro.frameworks import DISPLAY, STUDY_NAMES
from dlrepro.results.views import palette
from runner import adapters, shapes
from runner.adapters import capabilities

from tests.containers.frameworks import FRAMEWORKS


def test_every_framework_is_everywhere():
    modules = set(adapters.available())
    assert modules == {"torch", "tensorflow", "mxnet", "jax", "cntk", "caffe2", "caffe", "chainer", "keras-tensorflow",
                       "keras-jax", "keras-torch", "keras-cntk", "keras-theano"}
    assert set(capabilities.CAPABILITIES) == modules  # what each adapter can express
    assert set(STUDY_NAMES) == modules  # how each is named in the studies' tables
    assert set(DISPLAY) == set(palette.FRAMEWORKS) == modules  # its one spelling and its one colour
    assert {f.split("@")[0] for f in FRAMEWORKS} == modules  # the container tests run each one
    assert set(capabilities.MODULES) == set(capabilities.DEFAULT_INIT) == modules
    matrix = matrixmod.load()
    assert set(matrix.frameworks()) == modules  # each has an image (Keras: its backend's)
    assert set(matrix.default_frameworks) <= modules
    assert {f for f in modules if matrix.versions(f, "cpu")} == modules
    assert set(capabilities.OPTIONS) <= modules


def test_an_images_keras_is_the_version_its_lock_pins():
    """A variant's version is what the image installs: the lock's pin of its package (Keras for keras-*): Keras 3 in
    today's images, Keras 2.1.5 in TensorFlow 1.4.0's and CNTK 2.5.1's (keras-theano's own image has Keras as its
    framework)."""
    from dlrepro.images import locks

    matrix = matrixmod.load()
    variants = [(image, v) for image in matrix.images for v in image.variants]
    assert sorted((image.name, v.framework) for image, v in variants) == [
        ("cntk-2.5.1-cpu", "keras-cntk"), ("jax-0.10.2-cpu", "keras-jax"), ("jax-0.10.2-cuda", "keras-jax"),
        ("tensorflow-1.4.0-cpu", "keras-tensorflow"), ("tensorflow-1.4.0-cuda", "keras-tensorflow"),
        ("tensorflow-2.21.0-cpu", "keras-tensorflow"), ("tensorflow-2.21.0-cuda", "keras-tensorflow"),
        ("torch-2.13.0-cpu", "keras-torch"), ("torch-2.13.0-cuda", "keras-torch")]
    for image, variant in variants:
        pins = {pin.name: pin.version for pin in locks.parse(image.lock)}
        assert pins["keras"] == variant.version == ("2.1.5" if image.version in ("1.4.0", "2.5.1") else "3.15.1"), image.name
        assert capabilities.backend(variant.framework) == image.framework


def test_the_spec_schema_knows_exactly_the_runners_layer_types():
    schema_types = set()
    for cls in typing.get_args(typing.get_args(Layer)[0]):
        schema_types.update(typing.get_args(cls.model_fields["type"].annotation))
    assert schema_types == set(shapes.PRIMITIVES) | set(shapes.MACROS)
    assert capabilities.ALL_LAYERS == frozenset(shapes.PRIMITIVES)
