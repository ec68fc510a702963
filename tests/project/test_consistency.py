"""The lists that must agree across the suite: a type or version known in one place and not in another fails here,
not in the middle of a run (a framework's own facts are one record: tests/test_framework_record.py)."""

import typing

from dlrepro.images import matrix as matrixmod
from dlrepro.inputs.layers import Layer
from runner import frameworks, shapes


def test_an_images_keras_is_the_version_its_lock_pins():
    """A variant's version is what the image installs: the lock's pin of its package (Keras for keras-*): Keras 3 in
    today's images, Keras 2.1.5 in TensorFlow 1.4.0's and CNTK 2.5.1's (keras-theano's own image has Keras as its
    framework)."""
    from dlrepro.images import locks

    matrix = matrixmod.load()
    variants = [(image, v) for image in matrix.images for v in image.variants]
    assert sorted((image.name, v.framework) for image, v in variants) == [
        ("cntk-2.5.1-cpu", "keras-cntk"),
        ("jax-0.10.2-cpu", "keras-jax"),
        ("jax-0.10.2-cuda", "keras-jax"),
        ("tensorflow-1.4.0-cpu", "keras-tensorflow"),
        ("tensorflow-1.4.0-cuda", "keras-tensorflow"),
        ("tensorflow-2.21.0-cpu", "keras-tensorflow"),
        ("tensorflow-2.21.0-cuda", "keras-tensorflow"),
        ("torch-2.13.0-cpu", "keras-torch"),
        ("torch-2.13.0-cuda", "keras-torch"),
    ]
    for image, variant in variants:
        pins = {pin.name: pin.version for pin in locks.parse(image.lock)}
        assert pins["keras"] == variant.version == ("2.1.5" if image.version in ("1.4.0", "2.5.1") else "3.15.1"), (
            image.name
        )
        assert frameworks.backend(variant.framework) == image.framework


def test_the_spec_schema_knows_exactly_the_runners_layer_types():
    schema_types = set()
    for cls in typing.get_args(typing.get_args(Layer)[0]):
        schema_types.update(typing.get_args(cls.model_fields["type"].annotation))
    assert schema_types == set(shapes.PRIMITIVES) | set(shapes.MACROS)
    assert frameworks.ALL_LAYERS == frozenset(shapes.PRIMITIVES)
