"""A study's step semantics (runner.contract ``gradients``, ``thread_pools``): from studies/dlbench.yaml's ``steps``
through the run options into job.json, the runner's settings and refusals, result.json's options and the tidy
summary (issue 55). Engine-free."""

import json
import shutil

import pandas as pd
import pytest

from dlrepro.errors import DlreproError
from dlrepro.inputs import spec, studies
from dlrepro.run import jobs
from dlrepro.run import study as studymod
from dlrepro.run.options import RunOptions, Step, checked
from dlrepro.store import tables
from runner import contract, settings
from runner.adapters import capabilities
from tests.inputs.studies import TINY, _bad
from tests.store.real_bundles import REAL, rewrite

DLBENCH_STEP = Step(gradients="gate_op", thread_pools="intra_op")


def _fcn_s(**options):
    return jobs.expand(spec.load("fcn"), RunOptions(variants=["fcn-s"], batch_sizes=[64], **options))


def test_dlbench_s_tensorflow_jobs_are_planned_with_its_step_where_the_adapter_builds_it():
    planned = {
        p.id: p
        for p in studymod.plan(
            studies.load("dlbench"),
            device="cpu",
            frameworks=["tensorflow", "mxnet"],
            cpus=2,
            gpus=[],
            runs=["cpu-synthetic"],
            versions="published",
        )
    }
    run = planned["cpu-synthetic"]
    assert run.options.steps == {"tensorflow@1.4.0": DLBENCH_STEP}
    notes = {n.split(" ")[0]: n for n in run.notes if "(tensorflow@" in n or "(mxnet@" in n}
    assert notes["TensorFlow"] == (
        "TensorFlow (tensorflow@1.4.0): timed as the study's scripts did: gradients gate_op, thread_pools intra_op"
    )
    assert notes["MXNet"].startswith(
        "MXNet (mxnet@0.12.0): the suite's step, as the study's scripts (gradients "
        "pruned, thread_pools all); the study's step also did, not reproduced here: "
        "FeedForward.fit given the kvstore 'device' as an object"
    )
    by_id = {j["id"]: j for j in jobs.expand(spec.load("fcn"), run.options)}
    assert (
        by_id["fcn-s.tensorflow-1.4.0.cpu.b64.t1"]["gradients"],
        by_id["fcn-s.tensorflow-1.4.0.cpu.b64.t1"]["thread_pools"],
    ) == ("gate_op", "intra_op")
    assert (
        by_id["fcn-s.mxnet-0.12.0.cpu.b64.t1"]["gradients"],
        by_id["fcn-s.mxnet-0.12.0.cpu.b64.t1"]["thread_pools"],
    ) == ("pruned", "all")


def test_dlbench_s_torch_fcn_runs_are_planned_with_its_step_and_its_cnn_runs_keep_the_suite_s():
    planned = {
        p.id: p
        for p in studymod.plan(
            studies.load("dlbench"),
            device="cpu",
            frameworks=["torch7"],
            cpus=2,
            gpus=[],
            runs=["cpu-synthetic", "cpu-synthetic-cnn"],
        )
    }
    assert planned["cpu-synthetic"].options.steps == {"torch7": DLBENCH_STEP}
    assert [n for n in planned["cpu-synthetic"].notes if n.startswith("Torch (")] == [
        "Torch (torch7): timed as the study's scripts did: gradients gate_op, thread_pools intra_op; the study's step "
        "also did, not reproduced here: the mini-batch copied into the model's input tensor each step "
        "(input:copy(inputCPU): 64 x 26752 floats) inside the timed loop (the suite's synthetic batch stays where "
        "to_device put it): 1.1-12.7 ms a step outside optim.sgd, median 1.3, against its 4.1-10.1 s steps "
        "(benchmarks/study_parity.py, dlbench-torch7-fcn-s.md)"
    ]
    # DLBench's Torch AlexNet sets its first module's gradInput to nil: the suite's step
    assert planned["cpu-synthetic-cnn"].options.steps == {}
    job = jobs.expand(spec.load("fcn"), planned["cpu-synthetic"].options)[0]
    assert (job["id"], job["gradients"], job["thread_pools"]) == ("fcn-s.torch7.cpu.b64.t1", "gate_op", "intra_op")
    assert settings.cpus(job) is None  # not confined: OMP_NUM_THREADS alone, as fc-benchmarks.sh ran `th`


def test_a_run_whose_scripts_took_pruned_gradients_keeps_the_suite_s_step():
    planned = {
        p.id: p
        for p in studymod.plan(
            studies.load("dlbench"),
            device="cpu",
            frameworks=["tensorflow"],
            cpus=2,
            gpus=[],
            runs=["cpu-synthetic-rnn"],
            versions="published",
        )
    }
    assert planned["cpu-synthetic-rnn"].options.steps == {}  # DLBench's lstm.py: tf.gradients
    assert not [n for n in planned["cpu-synthetic-rnn"].notes if "step" in n]


def test_today_s_tensorflow_keeps_the_suite_s_step_and_the_plan_says_why():
    planned = {
        p.id: p
        for p in studymod.plan(
            studies.load("dlbench"), device="cpu", frameworks=["tensorflow"], cpus=2, gpus=[], runs=["cpu-synthetic"]
        )
    }
    run = planned["cpu-synthetic"]
    assert run.options.steps == {}
    assert run.notes[-1] == (
        "TensorFlow (tensorflow): the suite's step, not the study's (gradients gate_op, thread_pools intra_op): the "
        "tensorflow adapter cannot run gradients=gate_op (the tensorflow adapter has pruned); thread_pools=intra_op "
        "(the tensorflow adapter has all)"
    )


def test_a_run_without_thread_counts_keeps_every_pool_and_a_cuda_run_gets_the_gradients_only():
    job = _fcn_s(frameworks=["tensorflow@1.4.0"], steps={"tensorflow": DLBENCH_STEP})[0]
    assert (job["threads"], job["gradients"], job["thread_pools"]) == (None, "gate_op", "all")
    cuda = _fcn_s(frameworks=["tensorflow@1.4.0"], device="cuda", steps={"tensorflow@1.4.0": DLBENCH_STEP})[0]
    assert (cuda["gradients"], cuda["thread_pools"]) == ("gate_op", "all")


def test_a_step_an_adapter_cannot_build_is_refused_in_one_line():
    with pytest.raises(DlreproError) as caught:
        _fcn_s(frameworks=["mxnet"], steps={"mxnet": Step(gradients="gate_op")})
    assert str(caught.value).splitlines()[0] == (
        "steps: mxnet: the mxnet adapter cannot run gradients=gate_op (the mxnet adapter has pruned)"
    )
    with pytest.raises(DlreproError) as caught:
        _fcn_s(frameworks=["tensorflow@1.4.0"], steps={"torch": DLBENCH_STEP})
    assert str(caught.value).splitlines()[0] == "steps: torch is none of the run's frameworks (tensorflow@1.4.0)"
    with pytest.raises(DlreproError) as caught:
        checked(steps={"tensorflow": {"gradients": "all"}})
    assert str(caught.value).splitlines()[0] == "--steps: Input should be 'pruned' or 'gate_op' (got 'all')"


def test_the_runner_refuses_intra_op_without_a_thread_count_and_on_today_s_tensorflow():
    tf14 = {"framework": "tensorflow", "framework_version": "1.4.0", "mode": "throughput", "warmup": 1}
    assert (
        capabilities.unsupported_options(
            "tensorflow@1.4.0", dict(tf14, gradients="gate_op", threads=1, thread_pools="intra_op"), "cpu"
        )
        is None
    )
    assert capabilities.unsupported_options("tensorflow@1.4.0", dict(tf14, thread_pools="intra_op"), "cpu") == (
        "the tensorflow 1.x adapter cannot run thread_pools=intra_op without a thread count (it says how --threads "
        "is applied)"
    )
    assert capabilities.unsupported_options("tensorflow", dict(tf14, gradients="gate_op"), "cpu") == (
        "the tensorflow adapter cannot run gradients=gate_op (the tensorflow adapter has pruned)"
    )


def test_an_intra_op_job_is_not_confined_and_records_what_it_was_asked():
    job = _fcn_s(frameworks=["tensorflow@1.4.0"], threads=[1], steps={"tensorflow@1.4.0": DLBENCH_STEP})[0]
    pinned = _fcn_s(frameworks=["tensorflow@1.4.0"], threads=[1])[0]
    assert settings.choice(job, [0, 1]) == (None, None)
    assert settings.choice(pinned, [0, 1])[0] == [0]
    record = settings.record(job)
    assert (record["cpus"], record["requested_threads"], record["thread_pools"]) == (None, 1, "intra_op")
    assert record["variables"]["OMP_NUM_THREADS"] == "1"  # as DLBench's OMP_NUM_THREADS=1
    assert settings.key(job) != settings.key(pinned)
    assert contract.job_options(job) == {
        "precision": "fp32",
        "cudnn_autotune": None,
        "layout": "default",
        "compile": False,
        "cuda_graphs": False,
        "allow_ptx_jit": False,
        "gradients": "gate_op",
        "thread_pools": "intra_op",
        "ptx_jit": False,
    }


def test_the_suite_s_step_keeps_the_configuration_digest():
    assert RunOptions(steps={}).digest() == RunOptions().digest()
    assert RunOptions(steps={"tensorflow": DLBENCH_STEP}).digest() != RunOptions().digest()


def test_a_manifest_s_step_for_a_tool_the_suite_does_not_run_is_named(tmp_path):
    path, problems = _bad(
        tmp_path,
        TINY.read_text(),
        "runs:\n",
        "steps:\n  Torch:\n    gradients: gate_op\n    runs: [fcn]\n    source: a script\nruns:\n",
    )
    assert len(problems) == 1 and "steps: 'Torch': not a tool the suite runs; the study's are: " in problems[0]
    path, problems = _bad(
        tmp_path,
        TINY.read_text(),
        "runs:\n",
        "steps:\n  TensorFlow:\n    gradients: gate_op\n    runs: [cpu]\n    source: a script\nruns:\n",
    )
    assert len(problems) == 1 and "steps.TensorFlow.runs: unknown run 'cpu'; the study has: fcn, gpu" in problems[0]


def test_the_tidy_summary_shows_how_each_job_timed_its_step(tmp_path):
    real = tmp_path / "real"
    shutil.copytree(REAL, real)
    job_path = real / "jobs" / "alexnet-s.torch.cpu.b16" / "job.json"
    job = json.loads(job_path.read_text())
    job_path.write_text(json.dumps(dict(job, threads=1, gradients="gate_op", thread_pools="intra_op")))
    summary = tables.summary(rewrite(real, tmp_path / "results")).set_index("framework")
    assert (summary.loc["torch", "gradients"], summary.loc["torch", "thread_pools"]) == ("gate_op", "intra_op")
    assert summary.loc["caffe", "gradients"] == "pruned" and summary.loc["caffe", "thread_pools"] is pd.NA
