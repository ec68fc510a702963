"""The CPUs a thread count takes: one per physical core within one NUMA node, read from a fake sysfs tree."""

from runner import settings, topology


def _sysfs(root, siblings, nodes):
    """A /sys/devices/system tree: ``siblings`` [[cpu, ...] per core], ``nodes`` {node: [cpu, ...]}."""
    for core, members in enumerate(siblings):
        for cpu in members:
            folder = root / "cpu" / ("cpu%d" % cpu) / "topology"
            folder.mkdir(parents=True)
            (folder / "physical_package_id").write_text("0\n")
            (folder / "core_id").write_text("%d\n" % core)
            (folder / "thread_siblings_list").write_text(",".join(str(c) for c in members) + "\n")
    for node, cpus in nodes.items():
        (root / "node" / ("node%d" % node)).mkdir(parents=True)
        (root / "node" / ("node%d" % node) / "cpulist").write_text(",".join(str(c) for c in cpus) + "\n")
    return str(root)


def _smt(tmp_path):
    """4 cores with 2 threads each, siblings numbered adjacently (0,1), (2,3), ..., one node."""
    return _sysfs(tmp_path, [[0, 1], [2, 3], [4, 5], [6, 7]], {0: list(range(8))})


def _numa(tmp_path):
    """2 nodes of 4 cores, SMT siblings numbered 8 apart: node 0 has CPUs 0-3 and 8-11, node 1 4-7 and 12-15."""
    return _sysfs(
        tmp_path, [[c, c + 8] for c in range(8)], {0: [0, 1, 2, 3, 8, 9, 10, 11], 1: [4, 5, 6, 7, 12, 13, 14, 15]}
    )


def test_adjacent_smt_siblings_are_taken_only_when_the_cores_run_out(tmp_path):
    root = _smt(tmp_path)
    where = topology.read(range(8), root)
    assert where[3] == {"package": 0, "core": 1, "node": 0, "siblings": [2, 3]}
    assert topology.choose(list(range(8)), 2, where) == ([0, 2], 1)  # not 0 and 1: two threads of one core
    assert topology.choose(list(range(8)), 4, where) == ([0, 2, 4, 6], 1)
    assert topology.choose(list(range(8)), 6, where) == ([0, 2, 4, 6, 1, 3], 3)
    assert topology.choose([1, 2, 3, 5], 2, where) == ([1, 2], 1)  # the allowed thread of each core


def test_a_two_node_machine_keeps_a_job_on_one_node_while_it_has_the_cores(tmp_path):
    root = _numa(tmp_path)
    allowed = list(range(16))
    where = topology.read(allowed, root)
    assert topology.choose(allowed, 4, where) == ([0, 1, 2, 3], 1)
    assert topology.choose(allowed, 6, where) == ([0, 1, 2, 3, 4, 5], 2)  # cores first, across the nodes
    cut = [2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15]  # node 0: only cores 2 and 3 allowed
    assert topology.choose(cut, 3, where) == ([4, 5, 6], 1)
    assert topology.choose(cut, 5, where) == ([4, 5, 6, 7, 2], 2)  # the node with more cores first
    assert topology.choose(allowed, 10, where) == ([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 3)
    assert topology.choose([0, 1, 8, 9, 4], 4, where) == ([0, 1, 8, 9], 3)  # siblings within node 0


def test_the_choice_is_recorded_and_ranks_get_cores_of_their_own(tmp_path):
    root = _smt(tmp_path)
    job = {"framework": "torch", "threads": 2, "ranks": 2, "device": "cpu"}
    zero, record = settings.choice(job, list(range(8)), 0, root)
    one, _ = settings.choice(job, list(range(8)), 1, root)
    assert (zero, one) == ([0, 2], [4, 6])
    assert record == {
        "rule": "one CPU per physical core, within one NUMA node",
        "cpus": [
            {"cpu": 0, "package": 0, "core": 0, "node": 0, "siblings": [0, 1]},
            {"cpu": 2, "package": 0, "core": 1, "node": 0, "siblings": [2, 3]},
        ],
    }
    jax = dict(job, framework="jax")  # one process runs both ranks: threads x ranks CPUs
    assert settings.choice(jax, list(range(8)), 0, root)[0] == [0, 2, 4, 6]
    assert settings.choice({"framework": "torch", "threads": None}, list(range(8)), 0, root) == (None, None)


def test_without_a_readable_topology_the_first_cpus_are_taken_and_the_record_says_so(tmp_path):
    cpus, record = settings.choice({"framework": "torch", "threads": 2}, [3, 4, 5], 0, str(tmp_path / "none"))
    assert cpus == [3, 4] and record == {
        "rule": "the first allowed CPUs (the CPU topology could not be read)",
        "cpus": [{"cpu": 3}, {"cpu": 4}],
    }
    assert topology.parse_list("0-2,8,10-11") == [0, 1, 2, 8, 10, 11]


def test_ranks_started_by_a_confined_rank_0_choose_from_what_it_could_use(tmp_path, monkeypatch):
    root = _smt(tmp_path)
    job = {"framework": "torch", "threads": 2, "ranks": 2, "device": "cpu"}
    monkeypatch.setenv(settings.POOL, "0,1,2,3,4,5,6,7")  # what rank 0 saw before it confined itself to [0, 2]
    assert settings.choice(job, None, 1, root)[0] == [4, 6]
    where = topology.read(range(8), root)
    assert topology.choose([0, 1], 4, where) == ([0, 1], 4)  # fewer allowed than asked for: said so
    assert topology.RULES[4].endswith("(fewer allowed than asked for: ranks share them)")


def test_rank_0_of_a_data_parallel_job_leaves_its_ranks_the_cpus_it_could_use(monkeypatch):
    import os

    confined = []
    monkeypatch.setattr(os, "environ", {})
    monkeypatch.setattr(os, "sched_setaffinity", lambda pid, cpus: confined.append(sorted(cpus)))
    monkeypatch.setattr(settings, "allowed_cpus", lambda: [0, 1, 2, 3])
    found = settings.apply({"framework": "torch", "threads": 1, "ranks": 2, "device": "cpu"}, 0)
    assert os.environ[settings.POOL] == "0,1,2,3" and confined == [found["cpus"]] and len(found["cpus"]) == 1


def test_core_count_counts_each_core_once_however_many_of_its_threads_are_given(tmp_path):
    root = _smt(tmp_path)
    assert topology.core_count([0, 1], root) == 1  # two SMT siblings: one core
    assert topology.core_count([0, 2], root) == 2 and topology.core_count(list(range(8)), root) == 4
    assert topology.core_count([9], root) is None and topology.core_count([], root) is None  # no topology for CPU 9
