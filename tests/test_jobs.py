"""Expanding specs into job.json bodies (the host -> runner contract)."""
import pytest

from dlrepro import datasets, jobs, spec
from dlrepro.errors import DlreproError
from runner import contract


@pytest.fixture(scope="module")
def catalogue():
    return datasets.catalogue().datasets


def expand(name, catalogue, **options):
    return jobs.expand(spec.load(name), jobs.RunOptions(**options), catalogue)


def test_cpu_jobs_use_the_published_cpu_batches(catalogue):
    ids = [j["id"] for j in expand("alexnet", catalogue)]
    assert ids == ["alexnet-s.torch.cpu.b16", "alexnet-r.torch.cpu.b1024"]
    ids = [j["id"] for j in expand("fcn", catalogue)]
    assert ids == ["fcn-s.torch.cpu.b64", "fcn-r.torch.cpu.b1024"]


def test_cuda_sweep(catalogue):
    got = expand("alexnet", catalogue, device="cuda")
    assert [j["batch_size"] for j in got] == [16, 32, 64, 128, 32, 64, 128, 256, 512, 1024]


def test_every_job_satisfies_the_contract(catalogue):
    for job in expand("fcn", catalogue) + expand("alexnet", catalogue, device="cuda"):
        contract.check_job(job)
        assert job["warmup"] == 8 and job["iterations"] == 8 and job["repeats"] == 3


def test_dataset_jobs_name_files_by_sha256(catalogue):
    job = expand("fcn", catalogue, variants=["fcn-r"])[0]
    assert job["data"]["files"]["train_images"] == "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
    assert job["data"]["scale"] == 0.00390625 and job["model"]["init"] == "xavier"


def test_quick_and_overrides(catalogue):
    quick = expand("fcn", catalogue, quick=True, device="cuda")
    assert [(j["batch_size"], j["warmup"], j["iterations"], j["repeats"]) for j in quick] == \
        [(32, 1, 3, 1), (32, 1, 3, 1)]
    chosen = expand("fcn", catalogue, variants=["fcn-s"], batch_sizes=[8, 16], iterations=5, threads=2)
    assert [j["id"] for j in chosen] == ["fcn-s.torch.cpu.b8.t2", "fcn-s.torch.cpu.b16.t2"]
    assert {j["iterations"] for j in chosen} == {5}


def test_convergence_mode(catalogue):
    got = expand("fcn", catalogue, mode="convergence", epochs=5)
    assert [(j["id"], j["epochs"], j["batch_size"]) for j in got] == [("fcn-r.torch.cpu.b64.convergence", 5, 64)]
    quick = expand("fcn", catalogue, mode="convergence", quick=True)[0]
    assert quick["epochs"] == 1 and quick["max_iterations_per_epoch"] == 100


def test_unknown_variant_and_framework(catalogue):
    with pytest.raises(DlreproError, match="spec fcn has no variant fcn-x; it has: fcn-s, fcn-r"):
        expand("fcn", catalogue, variants=["fcn-x"])
    with pytest.raises(DlreproError, match="declares no adapter for caffe"):
        expand("fcn", catalogue, frameworks=["caffe"])


def test_config_digest_is_stable_and_option_sensitive():
    s = spec.load("fcn")
    a = jobs.digest(s, jobs.RunOptions(quick=True))
    assert a == jobs.digest(s, jobs.RunOptions(quick=True, executor="local"))  # where it runs is not what it runs
    assert a != jobs.digest(s, jobs.RunOptions())
