"""benchmarks/study_parity.py's MXNet variants (issue 55): each takes one piece out of DLBench's step (its metric,
momentum and weight decay, the decoding threads, the pinning), edited into DLBench's files as the peer edits them
or passed to ``docker run`` and the peer; and --deadline past midnight."""

import json
import subprocess

from tests.helpers import benchmark

# DLBench's lines (synthetic/experiments/mxnet/fc/train_model.py, train_fake_data.py @ 978b034) the variants edit
TRAIN_MODEL = "        momentum           = 0.9,\n        wd                 = 0.00001,\n    eval_metrics = ['ce']\n"
TRAIN_FAKE_DATA = "\tpreprocess_threads = 20,\n"


def edited(tmp_path, name):
    """(train_model.py, train_fake_data.py) after variant ``name``'s edits, in a folder of its own."""
    folder = tmp_path / name
    folder.mkdir()
    (folder / "train_model.py").write_text(TRAIN_MODEL)
    (folder / "train_fake_data.py").write_text(TRAIN_FAKE_DATA)
    variant = benchmark("study_parity").STUDY["mxnet"]["variants"][name]
    benchmark("study_parity_peer").substituted(str(folder), variant.get("subs", []))
    return (folder / "train_model.py").read_text(), (folder / "train_fake_data.py").read_text()


def test_p_mom_is_plain_sgd_and_keeps_the_metric_and_the_kvstore(tmp_path):
    model, data = edited(tmp_path, "P-mom")
    assert model == (
        "        momentum           = 0.0,\n        wd                 = 0.0,\n    eval_metrics = ['ce']\n"
    )
    assert data == TRAIN_FAKE_DATA
    assert "args" not in benchmark("study_parity").STUDY["mxnet"]["variants"]["P-mom"]


def test_p_metric_only_waits_for_the_outputs_p_dec1_decodes_on_one_thread_and_p_scale_scales_by_1_256(tmp_path):
    model, data = edited(tmp_path, "P-metric")
    assert model.splitlines()[2] == (
        "    eval_metrics = type('WaitMetric', (mx.metric.EvalMetric,), "
        "{'update': lambda self, labels, preds: [p.wait_to_read() for p in preds]})('wait')"
    )
    assert edited(tmp_path, "P-dec1") == (TRAIN_MODEL, "\tpreprocess_threads = 1,\n")
    assert edited(tmp_path, "P-scale") == (TRAIN_MODEL, "\tpreprocess_threads = 20, scale = 0.00390625,\n")


def test_p_pin_pins_the_container_to_n_cpus_and_p_decoded_asks_the_peer_for_resident_arrays(monkeypatch):
    module = benchmark("study_parity")
    commands = []

    def run(command, **kwargs):
        commands.append(command)
        out = "PEER " + json.dumps({"wall": [1.0, 2.0, 3.0], "cpu": [0.5, 0.75, 1.0], "edited": ["e"]})
        return subprocess.CompletedProcess(command, 0, out + "\n", "")

    monkeypatch.setattr(module.subprocess, "run", run)
    variants = module.STUDY["mxnet"]["variants"]
    assert module.peer_unit("mxnet", 1, "/s", "img", 1, 2, variants["P-pin"]) == ([2.0, 3.0], [0.75, 1.0], ["e"], [])
    module.peer_unit("mxnet", 2, "/s", "img", 1, 2, variants["P-decoded"])
    pinned, decoded = commands
    assert pinned[:5] == ["docker", "run", "--rm", "--cpuset-cpus", "0-0"]
    assert "--cpuset-cpus" not in decoded
    assert decoded[decoded.index("--subs") + 2 : decoded.index("--subs") + 4] == ["--decoded", "--"]
    assert decoded[3:9] == [
        "-e",
        "MXNET_CPU_WORKER_NTHREADS=2",
        "-e",
        "OMP_NUM_THREADS=2",
        "-e",
        "OPENBLAS_NUM_THREADS=2",
    ]
    assert variants["P-w1"] == {"env": {"MXNET_CPU_WORKER_NTHREADS": "1"}, "min_threads": 2}


def test_a_deadline_earlier_in_the_day_than_now_is_the_next_days():
    module = benchmark("study_parity")
    now = 86400 * 3 + 22 * 3600 + 41 * 60  # 22:41 UTC
    assert module.deadline_of("00:00", now) == 86400 * 4
    assert module.deadline_of("23:50", now) == 86400 * 3 + 23 * 3600 + 50 * 60


def test_a_peer_units_cpu_is_the_mean_of_its_steps_as_the_suites_window_is():
    """The suite's CPU a step is its window's CPU seconds / T (a mean); the study's code's is the mean of its timed
    steps too, not their median: steps of 1.0, 1.0 and 1.6 CPU-s are 1.2 a step, where their median says 1.0."""
    assert benchmark("study_parity").per_unit([1.0, 1.0, 1.6]) == [1.2]
