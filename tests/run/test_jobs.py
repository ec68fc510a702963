"""Expanding specs into job.json bodies (the host -> runner contract)."""

import pytest

from dlrepro.errors import DlreproError
from dlrepro.inputs import spec
from dlrepro.plan import expressible
from dlrepro.run import jobs
from dlrepro.run.options import RunOptions
from runner import contract, stats
from tests.helpers import seeded


def expand(name, **options):
    """Jobs of spec ``name``; PyTorch's only unless ``frameworks`` is given."""
    options.setdefault("frameworks", ["torch"])
    return jobs.expand(spec.load(name), RunOptions(**options))


def test_cpu_jobs_use_the_published_cpu_batches():
    assert [j["id"] for j in expand("alexnet")] == ["alexnet-s.torch.cpu.b16", "alexnet-r.torch.cpu.b1024"]
    assert [j["id"] for j in expand("fcn")] == ["fcn-s.torch.cpu.b64", "fcn-8.torch.cpu.b64", "fcn-r.torch.cpu.b1024"]


def test_cuda_sweep():
    got = expand("alexnet", device="cuda")
    assert [j["batch_size"] for j in got] == [16, 32, 64, 128, 32, 64, 128, 256, 512, 1024]


def test_every_job_of_every_spec_satisfies_the_contract():
    for name in spec.available():
        for device in ("cpu", "cuda"):
            for job in expand(name, device=device):
                contract.check_job(job)
                assert job["model"]["parameters"] == spec.load(name).models[job["model"]["name"]].parameters


def test_dataset_files_are_named_once_the_cache_holds_them(mnist):
    job = expand("fcn", variants=["fcn-r"])[0]
    assert job["data"]["files"] is None and job["data"]["candidates"] == ["mnist"]
    jobs.resolve(job, "data", mnist)
    assert job["data"]["files"]["train_images"] == "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db"
    assert job["data"]["format"] == "mnist-idx" and job["data"]["scale"] == 0.00390625
    assert job["model"]["init"] == {"scheme": "xavier"}


def test_quick_and_overrides():
    quick = expand("fcn", quick=True, device="cuda", variants=["fcn-s", "fcn-r"])
    assert [(j["batch_size"], j["warmup"], j["iterations"], j["repeats"]) for j in quick] == [
        (32, 1, 3, 1),
        (32, 1, 3, 1),
    ]
    chosen = expand("fcn", variants=["fcn-s"], batch_sizes=[8, 16], iterations=5, threads=[2])
    assert [j["id"] for j in chosen] == ["fcn-s.torch.cpu.b8.t2", "fcn-s.torch.cpu.b16.t2"]
    assert {j["iterations"] for j in chosen} == {5}


def test_thread_sweep_as_dlbench_ran_it():
    got = expand("alexnet", variants=["alexnet-s"], threads="sweep")
    assert [(j["id"], j["threads"]) for j in got] == [("alexnet-s.torch.cpu.b16.t%d" % t, t) for t in (1, 2, 4, 8)]
    assert {j["threads"] for j in expand("imdb-gru", variants=["imdb-gru"], threads="sweep")} == {None}  # none listed


def test_modes_follow_the_variant_unless_asked():
    conv = expand("fcn", mode="convergence", epochs=5)
    assert [(j["id"], j["epochs"], j["batch_size"]) for j in conv] == [("fcn-r.torch.cpu.b64.convergence", 5, 64)]
    quick = expand("fcn", mode="convergence", quick=True)[0]
    assert quick["epochs"] == 1 and quick["max_iterations_per_epoch"] == 100
    gru = expand("imdb-gru", variants=["imdb-gru"])[0]
    assert gru["id"] == "imdb-gru.torch.cpu.b64.s0" and gru["mode"] == "convergence" and gru["epochs"] == 3
    assert gru["test_complete_batches"] is True and gru["data"]["candidates"] == ["imdb", "imdb-reviews"]
    assert gru["data"]["options"] == {"vocab": 30000, "maxlen": 150} and gru["optimizer"]["name"] == "adam"
    features = expand("resnet50-features", variants=["features"])[0]
    assert features["mode"] == "inference" and features["inference_batches"] == 40 and features["optimizer"] is None
    assert features["weights"]["name"] == "resnet50-keras-v1" and features["weights"]["top1"] == 74.9


def test_unknown_variant_framework_and_repeats():
    with pytest.raises(DlreproError, match="spec fcn has no variant fcn-x; it has: fcn-s, fcn-8, fcn-r"):
        expand("fcn", variants=["fcn-x"])
    with pytest.raises(DlreproError, match="declares no adapter for 'theano'"):
        expand("fcn", frameworks=["theano"])
    with pytest.raises(ValueError, match="lists 8 more than once"):
        RunOptions(batch_sizes=[8, 8])


def test_config_digest_is_stable_and_option_sensitive():
    s = spec.load("fcn")
    a = jobs.digest(s, RunOptions(quick=True))
    assert a == jobs.digest(s, RunOptions(quick=True, executor="local"))  # where it runs is not what it runs
    assert a != jobs.digest(s, RunOptions())


def test_a_mode_that_does_not_apply_is_reported_not_run():
    s = spec.load("fcn")
    options = RunOptions(mode="convergence")
    reason = "convergence needs real data and a convergence section"
    assert jobs.left_out(s, options) == [
        {"variant": "fcn-s", "framework": None, "reason": reason},
        {"variant": "fcn-8", "framework": None, "reason": reason},
    ]
    features = RunOptions(mode="throughput", variants=["features"])
    assert jobs.left_out(spec.load("resnet50-features"), features) == [
        {"variant": "features", "framework": None, "reason": "throughput trains, and the variant has no optimizer"}
    ]
    with pytest.raises(DlreproError, match="features: throughput trains, and the variant has no optimizer"):
        jobs.expand(spec.load("resnet50-features"), features)


def test_thread_counts_do_not_apply_to_gpus():
    with pytest.raises(DlreproError, match="--threads sets CPU thread counts; it does not apply to --device cuda"):
        expand("fcn", device="cuda", threads="sweep")


def test_unsupported_pairs_are_declared_with_the_reason():
    s = spec.load("resnet50-features")
    assert expressible.unsupported(s, "features", "mxnet") is None
    reason = expressible.unsupported(s, "features-torchvision", "jax")
    assert reason == (
        "jax cannot read torchvision-state-dict weights: torchvision's weights are a PyTorch pickle, "
        "which only torch reads"
    )
    left = jobs.left_out(s, RunOptions(frameworks=["torch", "jax"]))
    assert left == [{"variant": "features-torchvision", "framework": "jax", "reason": "unsupported: " + reason}]
    assert [j["framework"] for j in jobs.expand(s, RunOptions(frameworks=["torch", "jax"]))] == [
        "torch",
        "jax",
        "torch",
    ]


def test_a_framework_version_can_be_asked_for():
    job = expand("fcn", variants=["fcn-s"], frameworks=["tensorflow@2.21.0"])[0]
    assert job["framework"] == "tensorflow" and job["framework_version"] == "2.21.0"
    assert job["id"] == "fcn-s.tensorflow-2.21.0.cpu.b64"
    with pytest.raises(DlreproError, match="declares no adapter for 'theano@1.0'"):
        expand("fcn", frameworks=["theano@1.0"])
    era = expand("fcn", variants=["fcn-r"], frameworks=["mxnet@0.12.0", "mxnet"])
    assert [(j["framework"], j["framework_version"]) for j in era] == [("mxnet", "0.12.0"), ("mxnet", None)]


def test_run_options_from_the_command_line_name_the_wrong_option():
    from dlrepro.run import options

    with pytest.raises(DlreproError, match=r"^--gpus: expected comma-separated GPU indices \(got '0,x'\)$"):
        options.from_cli(device="cuda", gpus="0,x")
    with pytest.raises(DlreproError, match=r"^--batch-size: expected comma-separated numbers \(got '8,a'\)$"):
        options.from_cli(batch_size="8,a")
    with pytest.raises(DlreproError, match=r"^--threads: expected 'sweep' or comma-separated thread counts"):
        options.from_cli(threads="two")
    with pytest.raises(DlreproError, match=r"^--repeats: Input should be greater than 0 \(got 0\)$"):
        options.from_cli(repeats=0)
    assert options.from_cli(framework="torch,jax", batch_size="8, 16", threads="sweep", gpus="0,1").model_dump(
        include={"frameworks", "batch_sizes", "threads", "gpus"}
    ) == {"frameworks": ["torch", "jax"], "batch_sizes": [8, 16], "threads": "sweep", "gpus": [0, 1]}


def test_a_framework_gets_the_initialisation_its_study_code_used():
    s = spec.load("cifar10-vgg")
    found = {
        j["framework"]: j["model"]["init"]
        for j in jobs.expand(s, RunOptions(frameworks=["torch", "mxnet"], variants=["cifar10-vgg-synthetic"]))
    }
    assert found == {"torch": {"scheme": "default"}, "mxnet": {"scheme": "glorot_uniform"}}  # DLF's Gluon: Xavier()
    assert "Gluon_CNN.ipynb" in s.models["vgg"].framework_init_source


def test_a_convergence_job_is_one_job_per_seed():
    three = jobs.expand(seeded(3), RunOptions(frameworks=["torch", "jax"], variants=["imdb-gru"]))
    assert [(j["id"], j["seed"]) for j in three] == [
        ("imdb-gru.%s.cpu.b64.s%d" % (f, n), n) for f in ("torch", "jax") for n in range(3)
    ]
    one = jobs.expand(seeded(1), RunOptions(frameworks=["torch"], variants=["imdb-gru"]))
    assert [(j["id"], j["seed"]) for j in one] == [("imdb-gru.torch.cpu.b64", 0)]  # one seed: no suffix
    asked = jobs.expand(seeded(3), RunOptions(frameworks=["torch"], variants=["imdb-gru"], seeds=2))
    assert [(j["id"], j["seed"]) for j in asked] == [("imdb-gru.torch.cpu.b64.s0", 0), ("imdb-gru.torch.cpu.b64.s1", 1)]
    # the variant as the suite ships it: six, the fewest units of a 95% interval
    assert (
        [j["seed"] for j in expand("imdb-gru", variants=["imdb-gru"])]
        == list(range(stats.MIN_UNITS_95))
        == list(range(6))
    )


def test_quick_trains_one_seed_unless_seeds_are_asked_for():
    quick = jobs.expand(seeded(6), RunOptions(frameworks=["torch"], variants=["imdb-gru"], quick=True))
    assert [(j["id"], j["seed"], j["epochs"]) for j in quick] == [("imdb-gru.torch.cpu.b64", 0, 1)]
    both = jobs.expand(seeded(6), RunOptions(frameworks=["torch"], variants=["imdb-gru"], quick=True, seeds=2))
    assert [j["id"] for j in both] == ["imdb-gru.torch.cpu.b64.s0", "imdb-gru.torch.cpu.b64.s1"]


def test_seeds_leave_other_modes_at_one_job_and_are_refused_where_nothing_converges():
    mixed = jobs.expand(seeded(2), RunOptions(frameworks=["torch"]))
    assert [(j["id"], j["seed"]) for j in mixed] == [
        ("imdb-gru.torch.cpu.b64.s0", 0),
        ("imdb-gru.torch.cpu.b64.s1", 1),
        ("imdb-gru-synthetic.torch.cpu.b64", 0),
    ]
    with pytest.raises(
        DlreproError,
        match=r"^--seeds 3: seeds are independent trainings of convergence jobs, and "
        r"none of the jobs selected is one$",
    ) as caught:
        jobs.expand(seeded(2), RunOptions(frameworks=["torch"], variants=["imdb-gru-synthetic"], seeds=3))
    assert caught.value.remedy == "leave --seeds out, or select a convergence variant (or --mode convergence)"


def test_a_bad_seeds_value_is_refused_naming_the_option():
    from dlrepro.run import options

    with pytest.raises(DlreproError, match=r"^--seeds: Input should be greater than 0 \(got 0\)$"):
        options.from_cli(seeds=0)
    with pytest.raises(DlreproError, match=r"^--seeds: Input should be greater than 0 \(got -3\)$"):
        options.from_cli(seeds=-3)
    assert options.from_cli(seeds=4).seeds == 4 and options.from_cli().seeds is None


def test_seeds_not_given_keep_the_configuration_digest():
    # the digest RunOptions(quick=True) had before the seeds option existed: its bundle ids stay as they were
    assert RunOptions(quick=True).digest() == "0dab3244d35031309f906dda690a7afc44bd18c577daa48d7a4df87383264274"
    assert RunOptions(quick=True, seeds=1).digest() != RunOptions(quick=True).digest()  # asked for: a configuration


def test_an_evaluation_batch_size_goes_into_convergence_jobs_only_where_given():
    from dlrepro.run import options

    gru = expand("imdb-gru", variants=["imdb-gru"], quick=True, test_batch_size=4160)[0]
    assert (gru["batch_size"], gru["test_batch_size"], gru["test_complete_batches"]) == (64, 4160, True)
    assert "test_batch_size" not in expand("imdb-gru", variants=["imdb-gru"], quick=True)[0]  # the runner: batch_size
    assert "test_batch_size" not in expand("imdb-gru", variants=["imdb-gru-synthetic"], test_batch_size=4160)[0]
    assert (
        options.from_cli(test_batch_size="4160").test_batch_size == 4160 and options.from_cli().test_batch_size is None
    )
    with pytest.raises(DlreproError, match=r"^--test-batch-size: Input should be greater than 0 \(got 0\)$"):
        options.from_cli(test_batch_size=0)
    # not given: the configuration digest of before the option; given: another configuration
    assert RunOptions(quick=True).digest() == "0dab3244d35031309f906dda690a7afc44bd18c577daa48d7a4df87383264274"
    assert RunOptions(quick=True, test_batch_size=64).digest() != RunOptions(quick=True).digest()
