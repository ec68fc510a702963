"""The PyTorch adapter in this Python: every spec's models with the spec's parameter count, and its idioms."""

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dlrepro.inputs import spec  # noqa: E402
from dlrepro.run import jobs  # noqa: E402
from dlrepro.run.options import RunOptions  # noqa: E402
from runner import adapters, data, measure  # noqa: E402

SPEC_MODELS = [(name, variant) for name in spec.available() for variant in spec.load(name).variants]


def job_for(name, variant, **options):
    options = dict({"frameworks": ["torch"], "variants": [variant]}, **options)
    return jobs.expand(spec.load(name), RunOptions(**options))[0]


@pytest.mark.parametrize("name, variant", SPEC_MODELS)
def test_every_spec_model_has_its_stated_parameter_count(name, variant):
    job = job_for(name, variant)
    assert (
        adapters.load(job).build()
        == job["model"]["parameters"]
        == spec.load(name).models[job["model"]["name"]].parameters
    )


# each network's trainable parameters as published or derived from an independent definition, not from the spec
PUBLISHED = {
    # torchvision.models.resnet50 (v1.5), IMAGENET1K_V1 weights' "num_params" in torchvision's model table
    ("resnet50", "resnet50"): 25_557_032,
    # torchvision.models.densenet121 (7,978,856 with its 1000-class head) with DLF's Linear(1024 -> 14) head:
    # 7,978,856 - (1024 * 1000 + 1000) + (1024 * 14 + 14)
    ("densenet121-chestxray", "densenet121-synthetic"): 7_978_856 - (1024 * 1000 + 1000) + (1024 * 14 + 14),
    # DLF's GRU (notebooks/common/params_lstm.py): Embedding(30000, 125) + GRU(125 -> 100, cuDNN's two bias sets)
    # + Dense(100 -> 2)
    ("imdb-gru", "imdb-gru"): 30000 * 125 + 3 * (125 * 100 + 100 * 100 + 2 * 100) + (100 * 2 + 2),
    # DLBench's LSTM (tools/tensorflow/rnn/lstm/lstm.py SmallConfig): Embedding(10000, 256) + 2 x LSTM(256) with
    # PyTorch's two bias sets + softmax(256 -> 10000)
    ("lstm", "lstm"): 10000 * 256 + 2 * 4 * (256 * 256 + 256 * 256 + 2 * 256) + (256 * 10000 + 10000),
    # DLBench's FCN-8 (ffn26752l6): 26752 -> 2048 x 6 hidden -> 26752, all with biases
    ("fcn", "fcn-8"): (26752 * 2048 + 2048) + 5 * (2048 * 2048 + 2048) + (2048 * 26752 + 26752),
    # DLF's CNN (notebooks/common, Keras definition): conv 3x3 50, 50, 100, 100; dense 6400 -> 512 -> 10
    ("cifar10-vgg", "cifar10-vgg"): (3 * 9 * 50 + 50)
    + (50 * 9 * 50 + 50)
    + (50 * 9 * 100 + 100)
    + (100 * 9 * 100 + 100)
    + (6400 * 512 + 512)
    + (512 * 10 + 10),
}


@pytest.mark.parametrize("name, variant", sorted(PUBLISHED))
def test_the_layers_have_the_published_count(name, variant):
    """The count the spec's layers give (runner.shapes), and the torch model built from them, against the count
    published or derived above from each network's own definition."""
    from runner import shapes

    model = spec.load(name).models[spec.load(name).variants[variant].model]
    assert shapes.count_parameters(model.layer_dicts(), model.input_shape) == PUBLISHED[(name, variant)]
    assert adapters.load(job_for(name, variant)).build() == PUBLISHED[(name, variant)]


def test_alexnet_r_uses_ceil_pooling_and_an_average_pool():
    adapter = adapters.load(job_for("alexnet", "alexnet-r"))
    adapter.build()
    pools = [m for m in adapter.model if isinstance(m, (torch.nn.MaxPool2d, torch.nn.AvgPool2d))]
    assert [type(p).__name__ for p in pools] == ["MaxPool2d", "MaxPool2d", "AvgPool2d"]
    assert all(p.ceil_mode for p in pools)


def test_xavier_is_caffes_fan_in_uniform():
    adapter = adapters.load(job_for("fcn", "fcn-r"))
    adapter.build()
    first = adapter.model[0]
    bound = math.sqrt(3.0 / 784)
    largest = float(first.weight.detach().abs().max())
    assert 0.95 * bound < largest <= bound
    assert float(first.bias.detach().abs().max()) == 0.0


def test_lstm_init_and_state_carried_between_mini_batches():
    job = job_for("lstm", "lstm-synthetic", batch_sizes=[4])
    adapter = adapters.load(job)
    adapter.build()
    assert max(float(p.detach().abs().max()) for p in adapter.model.parameters()) <= 0.1
    x, y = adapter.to_device(*data.synthetic_batch(job["model"], 4, 0))
    assert tuple(x.shape) == (4, 32) and tuple(y.shape) == (4, 32)
    adapter.train_step(x, y)
    rnn = [m for m in adapter.model.modules() if hasattr(m, "stateful")][0]
    assert rnn.state is not None and tuple(rnn.state[0].shape) == (2, 4, 256)
    adapter.reset_state()
    assert rnn.state is None


def test_throughput_measurement_records_every_iteration():
    job = dict(job_for("fcn", "fcn-s"), batch_size=4, warmup=1, iterations=3, repeats=2)
    job["model"] = dict(
        job["model"], layers=[{"type": "dense", "units": 10}], input_shape=[20], classes=10, parameters=210
    )
    adapter = adapters.load(job)
    assert adapter.build() == 210
    timing, loss = measure.throughput(adapter, job)
    assert len(timing["warmup_seconds"]) == 1 and [len(r) for r in timing["repeats"]] == [3, 3]
    assert timing["summary"]["n"] == 6 and timing["throughput"] == pytest.approx(4 / timing["summary"]["median"])
    assert np.isfinite(loss["first"]) and np.isfinite(loss["last"])


def test_language_model_convergence_reports_perplexity_and_cumulative_time():
    job = dict(job_for("lstm", "lstm-synthetic"), batch_size=4, epochs=2, max_iterations_per_epoch=None)
    job["model"] = dict(
        job["model"],
        input_shape=[5],
        classes=50,
        parameters=None,
        layers=[
            {"type": "embedding", "vocab": 50, "dim": 8},
            {"type": "lstm", "units": 8, "stateful": True},
            {"type": "dense", "units": 50},
        ],
    )
    adapter = adapters.load(job)
    adapter.build()
    stream = np.random.RandomState(0).randint(0, 50, 500)
    timing, loss, conv = measure.convergence(adapter, job, data.LanguageModelData(stream, stream[:200], 5))
    first, second = conv["epochs"]
    assert first["iterations"] == (500 // 4 - 1) // 5 and second["cumulative_seconds"] == pytest.approx(
        first["seconds"] + second["seconds"]
    )
    assert (
        conv["final_perplexity"] == pytest.approx(math.exp(second["mean_token_loss"])) and conv["final_perplexity"] > 1
    )
    assert (
        conv["total_seconds"] == pytest.approx(second["cumulative_seconds"])
        and timing["quantity"] == "seconds per epoch"
    )


def test_feature_extraction_runs_without_gradients_in_eval_mode():
    job = dict(job_for("resnet50-features", "features"), batch_size=2, inference_batches=2)
    adapter = adapters.load(job)
    adapter.build()
    assert not adapter.model.training
    timing, inference = measure.inference(adapter, job)
    assert inference["images"] == 4 and inference["output_shape"] == [2048]
    assert inference["seconds_per_1000_images"] == pytest.approx(inference["pass_seconds"] / 4 * 1000)
    assert timing["summary"]["n"] == 2


def test_tf32_is_off_for_fp32():
    adapters.load(job_for("fcn", "fcn-s"))
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False


def torchvision_keys(name):
    """torchvision's state-dict key prefix of our Keras/Caffe layer name (the inverse of the adapter's map)."""
    if name in ("conv1", "bn_conv1", "fc1000"):
        return {"conv1": "conv1", "bn_conv1": "bn1", "fc1000": "fc"}[name]
    kind, rest = ("conv", name[3:]) if name.startswith("res") else ("bn", name[2:])
    stage, block, branch = int(rest[0]), "abcdef".index(rest[1]), rest.split("_branch")[1]
    if branch == "1":
        return "layer%d.%d.downsample.%d" % (stage - 1, block, 0 if kind == "conv" else 1)
    return "layer%d.%d.%s%d" % (stage - 1, block, kind, "abc".index(branch[1]) + 1)


def test_torchvision_weights_are_mapped_to_the_v15_layers(tmp_path, monkeypatch):
    import hashlib
    import io

    job = job_for("resnet50-features", "features-torchvision")
    job["model"] = dict(
        job["model"],
        classes=1000,
        parameters=25_557_032,
        layers=job["model"]["layers"] + [{"type": "dense", "units": 1000, "name": "fc1000"}],
    )
    source = adapters.load(job)
    source.build()
    state = {}
    for name, m in source.named.items():
        for field, value in m.state_dict().items():
            state["%s.%s" % (torchvision_keys(name), field)] = value.clone()
    buf = io.BytesIO()
    torch.save(state, buf)
    digest = hashlib.sha256(buf.getvalue()).hexdigest()
    (tmp_path / "sha256").mkdir()
    (tmp_path / "sha256" / digest).write_bytes(buf.getvalue())
    monkeypatch.setenv(data.DATA_ROOT_ENV, str(tmp_path))
    target = adapters.load(dict(job, seed=1))
    target.build()
    record = target.load_weights({"format": "torchvision-state-dict", "files": {"state_dict": digest}})
    assert record["values_loaded"] == 25_557_032 + 2 * sum(
        m.num_features for m in target.model.modules() if isinstance(m, torch.nn.BatchNorm2d)
    )
    for (a, pa), (b, pb) in zip(source.model.state_dict().items(), target.model.state_dict().items()):
        assert a == b and torch.equal(pa, pb), a


def test_a_batch_larger_than_the_training_set_fails_at_once():
    job = dict(job_for("fcn", "fcn-r"), batch_size=8, warmup=1, iterations=1, repeats=1, epochs=1)
    job["model"] = dict(job["model"], layers=[{"type": "dense", "units": 10}], input_shape=[4], parameters=50)
    adapter = adapters.load(job)
    adapter.build()
    tiny = data.ArrayData(
        np.zeros((5, 4), np.float32), np.zeros(5, np.int64), np.zeros((5, 4), np.float32), np.zeros(5, np.int64)
    )
    with pytest.raises(data.DataError, match="batch size 8 is larger than the training set"):
        measure.throughput(adapter, job, tiny)
    with pytest.raises(data.DataError, match="batch size 8 is larger than the test set"):
        measure.convergence(adapter, dict(job, test_complete_batches=True), tiny)


def test_the_test_set_in_larger_evaluation_batches_scores_the_same_and_is_recorded():
    """--test-batch-size changes how the test samples are batched, not which ones or their score (a GRU has no
    state across samples); the result names the size and the samples."""
    job = dict(job_for("imdb-gru", "imdb-gru", batch_sizes=[8]), batch_size=8, epochs=1, max_iterations_per_epoch=3)
    job["model"] = dict(
        job["model"],
        layers=[
            {"type": "embedding", "vocab": 50, "dim": 8},
            {"type": "gru", "units": 6},
            {"type": "last_step"},
            {"type": "dense", "units": 2},
        ],
        parameters=None,
    )
    rng = np.random.RandomState(0)
    tokens = data.ArrayData(
        rng.randint(0, 50, (40, 12)), rng.randint(0, 2, 40), rng.randint(0, 50, (37, 12)), rng.randint(0, 2, 37)
    )
    adapter = adapters.load(job)
    adapter.build()
    _, _, conv = measure.convergence(adapter, dict(job, test_complete_batches=True, test_batch_size=12), tokens)
    assert (conv["test_batches"], conv["test_batch_size"], conv["test_samples"]) == (
        3,
        12,
        32,
    )  # 4 batches of 8: 12, 12, 8
    in_eights, in_twelves = (adapter.evaluate(tokens.test(8, True, size), "class") for size in (8, 12))
    assert in_eights["test_accuracy"] == in_twelves["test_accuracy"] == conv["final_test_accuracy"]
    assert in_eights["test_loss"] == pytest.approx(in_twelves["test_loss"], rel=1e-6)


def test_compile_jobs_in_one_warm_worker_each_compile_and_record_the_graphs(monkeypatch):
    """A warm worker serves job after job in one process. Without a reset, dynamo keeps one cache entry per model on
    the shared frame up to its recompile limit (8 in torch 2.13): from the 9th --compile job on, the model ran eager
    while the result said compile. Each job now starts from empty caches and records the graphs it compiled; a
    job that compiled none fails instead of timing eager mode as compiled. (The "eager" backend: dynamo's
    capture and caches as with inductor, without its C++ build.)"""
    import functools

    from runner.adapters import torch_adapter

    monkeypatch.setattr(torch, "compile", functools.partial(torch.compile, backend="eager"))
    assert torch_adapter._recompile_limit() == 8
    monkeypatch.setattr(torch._dynamo.config, "recompile_limit", 2)  # reached sooner: a shorter test
    limit = torch_adapter._recompile_limit()
    job = dict(job_for("fcn", "fcn-r", compile=True, batch_sizes=[4]), batch_size=4)
    x = np.random.RandomState(0).rand(4, 784).astype(np.float32)
    y = np.arange(4, dtype=np.int64)
    recorded = []
    for _ in range(limit + 4):
        adapter = adapters.load(job)
        adapter.build()
        for _ in range(2):
            adapter.train_step(*adapter.to_device(x, y))
        recorded.append(adapter.ran()["compiled_graphs"])
        adapter.release()
    assert limit == 2 and len(recorded) == 6 and min(recorded) >= 1, recorded
    # the same jobs without the reset: past the limit they compile nothing, and the job says so
    monkeypatch.setattr(torch._dynamo, "reset", lambda: None)
    failures = []
    for _ in range(limit + 2):
        adapter = adapters.load(job)
        adapter.build()
        adapter.train_step(*adapter.to_device(x, y))
        try:
            adapter.ran()
        except RuntimeError as exc:
            failures.append(str(exc))
        adapter.release()
    assert failures and failures[0] == "torch.compile compiled no graph for this job: it ran eager (recompile limit 2)"
