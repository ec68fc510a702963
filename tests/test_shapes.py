"""Shape arithmetic and parameter counts of the layer vocabulary (runner.shapes)."""
import pytest

from dlrepro import spec
from runner import shapes


@pytest.mark.parametrize("name, model, expected", [
    ("alexnet", "alexnet-s", 62_378_344),
    ("alexnet", "alexnet-r", 89_578),
    ("fcn", "fcn-s", 117_997_696),
    ("fcn", "fcn-r", 14_205_962),
])
def test_spec_models_have_the_published_parameter_counts(name, model, expected):
    m = spec.load(name).models[model]
    assert shapes.count_parameters(m.layer_dicts(), m.input_shape) == expected == m.parameters


def test_alexnet_s_feature_map_is_6x6_with_caffe_ceil_pooling():
    m = spec.load("alexnet").models["alexnet-s"]
    rows = shapes.trace(m.layer_dicts(), m.input_shape)
    flatten = [r for r in rows if r[0]["type"] == "flatten"][0]
    assert flatten[1] == (256, 6, 6)


def test_alexnet_r_floor_pooling_gives_dlbench_doc_count():
    """DLBench's doc (~85K) counts floor-mode pooling: 64x3x3 into the classifier."""
    m = spec.load("alexnet").models["alexnet-r"]
    floor = [dict(layer, ceil=False) if "pool" in layer["type"] else layer for layer in m.layer_dicts()]
    assert shapes.count_parameters(floor, m.input_shape) == 85_098


@pytest.mark.parametrize("size, kernel, stride, pad, ceil, expected", [
    (54, 3, 2, 0, True, 27), (54, 3, 2, 0, False, 26), (13, 3, 2, 0, True, 6), (32, 3, 2, 0, True, 16),
    (32, 3, 2, 0, False, 15), (6, 3, 2, 1, True, 4),
    (5, 2, 2, 1, True, 3),  # with pad, a last window that would start in the padding is dropped
])
def test_pool_output(size, kernel, stride, pad, ceil, expected):
    assert shapes.pool_output(size, kernel, stride, pad, ceil) == expected


def test_a_layer_that_does_not_fit_names_its_index():
    with pytest.raises(shapes.ShapeError, match="layer 1 .dense.: dense needs a flat input"):
        shapes.trace([{"type": "conv", "filters": 4, "kernel": 3}, {"type": "dense", "units": 2}], [3, 8, 8])
