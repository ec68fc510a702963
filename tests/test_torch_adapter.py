"""The PyTorch adapter in this Python: every spec model built with the spec's parameter count."""
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dlrepro import datasets, jobs, spec  # noqa: E402
from runner import adapters, measure  # noqa: E402


def job_for(name, variant, **options):
    found = jobs.expand(spec.load(name), jobs.RunOptions(variants=[variant], **options), datasets.catalogue().datasets)
    return found[0]


@pytest.mark.parametrize("name, variant, expected", [
    ("alexnet", "alexnet-s", 62_378_344), ("alexnet", "alexnet-r", 89_578),
    ("fcn", "fcn-s", 117_997_696), ("fcn", "fcn-r", 14_205_962)])
def test_models_match_the_spec(name, variant, expected):
    adapter = adapters.load(job_for(name, variant))
    assert adapter.build() == expected


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


def test_throughput_measurement_records_every_iteration():
    job = dict(job_for("fcn", "fcn-s"), batch_size=4, warmup=1, iterations=3, repeats=2)
    job["model"] = dict(job["model"], layers=[{"type": "dense", "units": 10}], input_shape=[20], classes=10,
                        parameters=210)
    adapter = adapters.load(job)
    assert adapter.build() == 210
    timing, loss = measure.throughput(adapter, job)
    assert len(timing["warmup_seconds"]) == 1 and [len(r) for r in timing["repeats"]] == [3, 3]
    assert timing["summary"]["n"] == 6 and timing["throughput"] == pytest.approx(4 / timing["summary"]["median"])
    assert np.isfinite(loss["first"]) and np.isfinite(loss["last"])


def test_tf32_is_off_for_fp32():
    adapters.load(job_for("fcn", "fcn-s"))
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False
