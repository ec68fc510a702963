"""What the host knows of TensorFlow's data-parallel path without TensorFlow: TensorFlow 2's record runs it (one
process over its devices: tf.distribute.MirroredStrategy), TensorFlow 1.x's graph adapter says why it does not, and a
TensorFlow 2 CPU job's one process takes threads x ranks CPUs, as JAX's and MXNet's do (runner.settings). The step
itself: tests/engine/test_tensorflow_data_parallel.py."""

from runner import frameworks, settings
from runner.adapters import capabilities


def test_tensorflow_2_runs_data_parallel_jobs_and_its_1x_graph_adapter_says_why_not():
    assert capabilities.unsupported_parallel("tensorflow", "throughput") is None
    assert capabilities.unsupported_parallel("tensorflow", "accuracy") == (
        "data-parallel jobs time training steps (throughput mode), not accuracy"
    )
    assert capabilities.unsupported_parallel("tensorflow@1.4.0", "throughput") == (
        "no data-parallel training in the tensorflow 1.x adapter: its tf.Session graph adapter has no towers path "
        "yet (one tower per GPU, their gradients averaged, as DLBench's multi-GPU scripts)"
    )
    newest, graph = frameworks.FRAMEWORKS["tensorflow"], frameworks.FRAMEWORKS["tensorflow"].at("1.4.0")
    assert (newest.one_process_ranks, graph.one_process_ranks, graph.data_parallel) == (True, False, None)


def test_a_tensorflow_2_cpu_job_of_2_ranks_takes_threads_x_ranks_cpus_in_its_one_process(tmp_path):
    unread = str(tmp_path / "none")  # no topology to read: the first CPUs allowed are taken
    job = {"framework": "tensorflow", "threads": 2, "ranks": 2, "device": "cpu"}
    assert settings.choice(job, list(range(8)), 0, unread)[0] == [0, 1, 2, 3]
    assert settings.choice(dict(job, ranks=None), list(range(8)), 0, unread)[0] == [0, 1]
    assert settings.choice(dict(job, framework="torch"), list(range(8)), 1, unread)[0] == [2, 3]  # a process a rank
