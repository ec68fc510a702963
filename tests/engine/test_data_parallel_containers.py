"""Data-parallel jobs in containers: JAX's two XLA host devices and MXNet's two CPU contexts (one process each) take
the same training step as one device on the whole mini-batch (tests/data/dp_step.py), as PyTorch's ranks do
(tests/run/test_data_parallel.py); bundles of data-parallel jobs have their ranks and speedups.
Needs a Docker engine."""

import json

import pytest

from dlrepro.run.options import RunOptions
from dlrepro.store import tables
from tests.helpers import fresh_cache
from tests.run.data_parallel_jobs import _same_step, _step_in, one_process_bundle, whole_and_split

pytestmark = pytest.mark.all_cpus  # ranks of their own CPUs (tests/conftest.py)


@pytest.mark.docker
@pytest.mark.parametrize("framework", ["jax", "mxnet"])
def test_two_cpu_devices_of_one_process_take_the_step_of_one_device_on_the_whole_mini_batch(
    framework, request, docker_engine, tmp_path
):
    """JAX's two XLA host devices, MXNet's two CPU contexts with a kvstore (one process each)."""
    image = request.getfixturevalue("%s_cpu_image" % framework)
    _step_in(image, docker_engine, tmp_path, whole_and_split(framework))
    _same_step(tmp_path, 1e-6)


@pytest.mark.docker
def test_a_bundle_of_data_parallel_jobs_has_their_ranks_and_speedups(
    torch_cpu_image, jax_cpu_image, tmp_path, reporter, monkeypatch, mnist
):
    """FCN-R on MNIST (DLBench's data-parallel network: 14.2 M parameters, an eighth of FCN-S's to reduce)."""
    from dlrepro.run import runs

    fresh_cache(monkeypatch, tmp_path, mnist=mnist)
    path = runs.run(
        "fcn",
        RunOptions(frameworks=["torch", "jax"], variants=["fcn-r"], batch_sizes=[8], quick=True, ranks=[1, 2]),
        results_dir=tmp_path,
        reporter=reporter,
    )
    summary = tables.summary(path).set_index("job_id")
    assert sorted(summary.index) == [
        "fcn-r.jax.cpu.b8.r1",
        "fcn-r.jax.cpu.b8.r2",
        "fcn-r.torch.cpu.b8.r1",
        "fcn-r.torch.cpu.b8.r2",
    ]
    assert set(summary["status"]) == {"ok"} and list(summary["rank_batch_size"].sort_index()) == [8, 4, 8, 4]
    for framework in ("jax", "torch"):
        two, one = summary.loc["fcn-r.%s.cpu.b8.r2" % framework], summary.loc["fcn-r.%s.cpu.b8.r1" % framework]
        assert two["scaling_base"] == "fcn-r.%s.cpu.b8.r1" % framework and one["speedup"] == 1.0
        assert two["speedup"] == pytest.approx(one["median"] / two["median"])
        assert two["scaling_efficiency"] == pytest.approx(two["speedup"] / 2)
    result = json.loads((path / "jobs" / "fcn-r.torch.cpu.b8.r2" / "result.json").read_text())
    assert [r["rank"] for r in result["ranks"]] == [0, 1] and result["environment"]["data_parallel"][
        "backend"
    ] == "gloo"
    assert all(len(r["repeats"]) == len(result["timing"]["repeats"]) for r in result["ranks"])
    jax_env = json.loads((path / "jobs" / "fcn-r.jax.cpu.b8.r2" / "result.json").read_text())["environment"]
    assert jax_env["data_parallel"]["world_size"] == 2 and jax_env["process"]["variables"]["XLA_FLAGS"].startswith(
        "--xla_force_host_platform_device_count=2"
    )
    assert result["timing"]["ranks_joined"] == "slowest rank per iteration (maximum over 2 ranks)"
    assert result["cpu_usage"]["cpu_seconds"] == pytest.approx(sum(result["cpu_usage"]["rank_cpu_seconds"]))
    ranked = tables.samples(path)
    torch2 = ranked[ranked["job_id"] == "fcn-r.torch.cpu.b8.r2"]
    per_rank = torch2[torch2["sample"] == "rank iteration"]
    assert set(per_rank["rank"]) == {0, 1} and torch2[torch2["sample"] == "iteration"]["rank"].isna().all()
    slowest = per_rank.groupby(["repeat", "index"])["seconds"].max()
    assert list(torch2[torch2["sample"] == "iteration"].set_index(["repeat", "index"])["seconds"].sort_index()) == list(
        slowest.sort_index()
    )


@pytest.mark.docker
def test_a_bundle_of_one_process_data_parallel_jobs_has_their_devices_and_speedups(
    mxnet_cpu_image, tmp_path, reporter, monkeypatch, mnist
):
    _, results = one_process_bundle("mxnet", tmp_path, reporter, monkeypatch, mnist)
    mx_env = results[2]["environment"]
    assert (
        mx_env["data_parallel"]["contexts"] == ["cpu(0)", "cpu(1)"] and mx_env["data_parallel"]["kvstore"] == "device"
    )
