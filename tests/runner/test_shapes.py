"""Shape arithmetic and parameter counts of the layer vocabulary (runner.shapes)."""

import pytest

from dlrepro.inputs import spec
from runner import shapes


@pytest.mark.parametrize(
    "name, model, expected",
    [
        ("alexnet", "alexnet-s", 62_378_344),
        ("alexnet", "alexnet-r", 89_578),
        ("fcn", "fcn-s", 117_997_696),
        ("fcn", "fcn-r", 14_205_962),
    ],
)
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


@pytest.mark.parametrize(
    "size, kernel, stride, pad, ceil, expected",
    [
        (54, 3, 2, 0, True, 27),
        (54, 3, 2, 0, False, 26),
        (13, 3, 2, 0, True, 6),
        (32, 3, 2, 0, True, 16),
        (32, 3, 2, 0, False, 15),
        (6, 3, 2, 1, True, 4),
        (5, 2, 2, 1, True, 3),  # with pad, a last window that would start in the padding is dropped
    ],
)
def test_pool_output(size, kernel, stride, pad, ceil, expected):
    assert shapes.pool_output(size, kernel, stride, pad, ceil) == expected


def test_a_layer_that_does_not_fit_names_its_index():
    with pytest.raises(shapes.ShapeError, match=r"layer 1 \(dense\): dense needs \(F,\) or \(T, F\) input"):
        shapes.trace([{"type": "conv", "filters": 4, "kernel": 3}, {"type": "dense", "units": 2}], [3, 8, 8])


def test_resnet_stage_expands_to_named_blocks():
    stage = {
        "type": "resnet_stage",
        "stage": 3,
        "block": "bottleneck",
        "blocks": 2,
        "filters": 128,
        "stride": 2,
        "shortcut": "projection",
        "stride_on": "1x1",
    }
    first, second = shapes.expand([stage], [256, 56, 56])
    assert [layer.get("name") for layer in first["body"] if layer.get("name")] == [
        "res3a_branch2a",
        "bn3a_branch2a",
        "res3a_branch2b",
        "bn3a_branch2b",
        "res3a_branch2c",
        "bn3a_branch2c",
    ]
    assert first["body"][0]["stride"] == 2 and first["body"][3]["stride"] == 1  # v1: stride on the first 1x1
    assert [layer["name"] for layer in first["shortcut"]] == ["res3a_branch1", "bn3a_branch1"] and second[
        "shortcut"
    ] == []
    assert shapes.output_shape([stage], [256, 56, 56]) == (512, 28, 28)


def test_option_a_shortcut_has_no_parameters():
    block = shapes.expand(
        [
            {
                "type": "resnet_stage",
                "stage": 3,
                "block": "basic",
                "blocks": 1,
                "filters": 32,
                "stride": 2,
                "shortcut": "zero_pad",
            }
        ],
        [16, 32, 32],
    )[0]
    assert block["shortcut"] == [{"type": "avgpool", "kernel": 1, "stride": 2}, {"type": "pad_channels", "filters": 32}]
    assert shapes.apply_all(block["shortcut"], (16, 32, 32)) == ((32, 16, 16), 0)


def test_densenet_block_grows_channels():
    assert shapes.output_shape([{"type": "densenet_block", "layers": 6, "growth": 32}], [64, 56, 56]) == (256, 56, 56)


def test_recurrent_counts_two_bias_vectors_per_gate_set():
    lstm = [{"type": "embedding", "vocab": 100, "dim": 8}, {"type": "lstm", "units": 16, "layers": 2}]
    assert shapes.count_parameters(lstm, [5]) == 800 + 4 * (8 * 16 + 16 * 16 + 32) + 4 * (16 * 16 + 16 * 16 + 32)
    gru = [{"type": "embedding", "vocab": 100, "dim": 8}, {"type": "gru", "units": 16}, {"type": "last_step"}]
    assert shapes.output_shape(gru, [5]) == (16,)


def test_a_residual_whose_branches_disagree_is_refused():
    bad = {"type": "residual", "body": [{"type": "conv", "filters": 8, "kernel": 3, "pad": 1}]}
    with pytest.raises(
        shapes.ShapeError, match=r"layer 0 \(residual\): residual body gives \(8, 4, 4\) but its shortcut \(4, 4, 4\)"
    ):
        shapes.trace([bad], [4, 4, 4])


def test_inputs_pairs_each_layer_with_the_shape_that_reaches_it():
    layers = [
        {"type": "conv", "filters": 8, "kernel": 3, "pad": 1},
        {"type": "maxpool", "kernel": 2},
        {"type": "flatten"},
    ]
    assert [shape for _, shape in shapes.inputs(layers, (3, 8, 8))] == [(3, 8, 8), (8, 8, 8), (8, 4, 4)]
