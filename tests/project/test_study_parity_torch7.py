"""benchmarks/study_parity_peer.py's Torch 7 side (issue 55): a step of DLBench's Lua script is the time from one
``optim.sgd`` return to the next (its loop's ``input:copy`` included), and benchmarks/study_parity.py runs the script
with DLBench's command line, one update more than the steps it times."""

from tests.helpers import benchmark


def test_a_step_runs_from_one_update_s_return_to_the_next_and_the_first_return_starts_the_clock():
    # per optim.sgd call: wall and CPU seconds at its start, then at its return (the prelude's lines)
    lines = ["0.25 0.5 1.0 1.25", "1.125 1.375 2.0 3.25", "", "2.5 3.5 3.25 5.5"]
    clock = benchmark("study_parity_peer").torch7_clock(lines)
    assert (clock.wall, clock.cpu, clock.inside) == ([1.0, 1.25], [2.0, 2.25], [0.875, 0.75])


def test_dlbench_s_torch_script_runs_one_update_more_than_the_steps_timed_on_the_cpu():
    module = benchmark("study_parity")
    torch7 = module.STUDY["torch7"]
    args = torch7["args"](6)
    assert (args[args.index("-nIterations") + 1], args[args.index("-nEpochs") + 1]) == ("7", "1")
    assert (args[args.index("-deviceId") + 1], args[args.index("-batchSize") + 1]) == ("-1", "64")
    assert torch7["env"](2) == {"OMP_NUM_THREADS": "2"}
    assert torch7["ways"]["DLBench's step"] == module.Step(gradients="gate_op", thread_pools="intra_op")
