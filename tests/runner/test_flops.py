"""FLOPs per iteration from the spec (runner.flops), checked against PyTorch's own FLOP counter.

torch.utils.flop_counter.FlopCounterMode counts matrix products only (mm, addmm, bmm, convolution and
their backward), 2 FLOPs a multiply-add: it does not see bias adds, activations, batch norm, pooling,
dropout, embeddings (a gather), the loss or the optimizer step. So it is set against runner.flops'
forward_matmul + backward_matmul, like for like. The model and its input are on PyTorch's meta device: the
counter reads the products' shapes, and no arithmetic is done (DenseNet-121's count took 6.9 s of CPU time on the
CPU, 1.4 s on meta); nn.LSTM / nn.GRU run there as their matrix products, as on the CPU with oneDNN's fused RNN
kernel switched off (whose inside the counter does not see): every model's count was the same both ways
(2026-12-06).
"""

import pytest

from dlrepro.inputs import spec
from runner import flops, shapes

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from runner.adapters import torch_layers  # noqa: E402

MODELS = sorted({(name, variant.model) for name in spec.available() for variant in spec.load(name).variants.values()})


def _model_dict(name, model):
    m = spec.load(name).models[model]
    return {
        "layers": m.layer_dicts(),
        "input_shape": list(m.input_shape),
        "parameters": m.parameters,
        "input_kind": m.input_kind,
        "classes": m.classes,
    }


def _torch_count(model, batch):
    layers = shapes.expand(model["layers"], model["input_shape"])
    with torch.device("meta"):
        net = torch_layers.sequential(layers, tuple(model["input_shape"]), {})
    net.train()
    if model["input_kind"] == "tokens":
        vocab = next(layer["vocab"] for layer in layers if layer["type"] == "embedding")
        x = torch.randint(0, vocab, [batch] + model["input_shape"], device="meta")
    else:
        x = torch.randn([batch] + model["input_shape"], device="meta")
    with FlopCounterMode(display=False) as counter:
        net(x).float().square().mean().backward()  # a loss the counter does not see, like the spec's
    return counter.get_total_flops()


@pytest.mark.parametrize("name, model", MODELS)
def test_matrix_products_match_pytorchs_flop_counter(name, model):
    m = _model_dict(name, model)
    counted = flops.of_model(m, 2)
    theirs = _torch_count(m, 2)
    ours = counted["forward_matmul"] + counted["backward_matmul"]
    assert abs(ours - theirs) <= 0.01 * theirs, (ours, theirs)


def test_alexnet_s_forward_products_by_hand():
    """conv1: 2 * (3*11*11) * (96*54*54) = 203,233,536 FLOPs per sample; the five convolutions and three dense
    layers: 2.26 GFLOPs."""
    m = _model_dict("alexnet", "alexnet-s")
    convs = [
        (3 * 11 * 11, 96 * 54 * 54),
        (96 * 25, 256 * 27 * 27),
        (256 * 9, 384 * 13 * 13),
        (384 * 9, 384 * 13 * 13),
        (384 * 9, 256 * 13 * 13),
    ]
    dense = [(256 * 36, 4096), (4096, 4096), (4096, 1000)]
    forward = sum(2 * a * b for a, b in convs + dense)
    counted = flops.of_model(m, 1)
    assert counted["forward_matmul"] == forward == 2_262_915_328
    # backward: 2x forward, less conv1's input gradient (its input is the data)
    assert counted["backward_matmul"] == 2 * forward - 2 * 363 * 96 * 54 * 54


def test_training_iteration_adds_other_ops_and_the_update():
    """FCN-S, batch 4: products 3x forward except the first layer's input gradient; sigmoid and bias adds;
    softmax loss over 26752 logits; SGD 2 FLOPs per parameter."""
    m = _model_dict("fcn", "fcn-s")
    widths = [26752, 2048, 2048, 2048, 26752]
    macs = sum(a * b for a, b in zip(widths, widths[1:]))
    counted = flops.of_model(m, 4, {"name": "sgd", "lr": 0.05})
    assert counted["forward_matmul"] == 4 * 2 * macs
    assert counted["backward_matmul"] == 4 * (4 * macs - 2 * 26752 * 2048)
    bias, sigmoid, loss = sum(widths[1:]), 3 * 2048, 3 * 26752
    assert counted["forward_other"] == 4 * (bias + sigmoid + loss)
    assert counted["backward_other"] == 4 * (sigmoid + loss)
    assert counted["optimizer"] == 2 * 117_997_696
    assert counted["inference"] == 4 * (2 * macs + bias + sigmoid)
    assert counted["training"] == sum(
        counted[k] for k in ("forward_matmul", "backward_matmul", "forward_other", "backward_other", "optimizer")
    )


@pytest.mark.parametrize(
    "optimizer, expected",
    [
        (None, 0),
        ({"name": "sgd", "lr": 0.1}, 2),
        ({"name": "sgd", "lr": 0.1, "momentum": 0.9}, 4),
        ({"name": "sgd", "lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-4}, 8),
        ({"name": "adam", "lr": 1e-3}, 12),
        ({"name": "sgd", "lr": 0.1, "clip_norm": 5.0}, 5),
    ],
)
def test_optimizer_flops_per_parameter(optimizer, expected):
    assert flops.optimizer_per_parameter(optimizer) == expected


def test_of_job_times_the_mini_batch_of_a_throughput_or_inference_job_only():
    m = _model_dict("fcn", "fcn-s")
    job = {"model": m, "batch_size": 8, "optimizer": {"name": "sgd", "lr": 0.05}, "mode": "throughput"}
    assert flops.of_job(job) == flops.of_model(m, 8, job["optimizer"])["training"]
    assert flops.of_job(dict(job, mode="inference")) == flops.of_model(m, 8)["inference"]
    assert flops.of_job(dict(job, mode="convergence")) is None
