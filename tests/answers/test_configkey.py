"""One configuration key (issue 51, item 4; DESIGN.md "One home for each fact"): a pair of one configuration whose
timer or host fingerprint differs is "not comparable", never faster or slower, in the site's history and in
`dlrepro compare`; the study matrix sets two hosts of one CPU model name apart; compare, the history, the matrix and
check's side-by-side groups read the key from answers/configkey.py and define none of their own."""

import ast
from types import SimpleNamespace

from dlrepro import REPO_ROOT
from dlrepro.answers import configkey, gather, history, matrix, verdicts
from dlrepro.cli import render
from dlrepro.store import bundle, tables
from tests.bundles import EPYC, Job, make

AVX512 = dict(EPYC, flags=["avx2", "fma", "avx512f", "avx512_bf16"])  # the same model name, another machine
ANSWERS = REPO_ROOT / "dlrepro" / "answers"


def _history(folders):
    """answers.history of bundle ``folders``, made in the order given (a second apart)."""
    summary, samples = tables.merge(folders)
    bodies = [dict(bundle.body(f), created="2026-12-0%dT00:00:00Z" % i) for i, f in enumerate(folders, 1)]
    return history.history(bodies, summary, samples)


def _shown(point):
    return "%s: %s" % (point.verdict, point.reason)


def test_a_timer_change_in_a_history_is_not_comparable_never_faster(tmp_path):
    before = make(tmp_path / "a", "fcn", [Job("jax", "fcn-s", 64, medians=[0.100] * 6, device="cuda")])
    after = make(
        tmp_path / "b", "fcn", [Job("jax", "fcn-s", 64, medians=[0.088] * 6, device="cuda", timer="device_events")]
    )
    again = make(
        tmp_path / "c", "fcn", [Job("jax", "fcn-s", 64, medians=[0.080] * 6, device="cuda", timer="device_events")]
    )
    (line,) = _history([before, after, again])
    assert [p.timer for p in line.points] == ["host_sync", "device_events", "device_events"]
    assert _shown(line.points[1]) == "not comparable: timer changed (host_sync -> device_events)"
    assert line.points[1].change is None
    # the next run, timed alike, is judged against it: -9.1% with 6 vs 6 separated repeats
    assert (line.points[2].verdict, line.points[2].reason) == (
        verdicts.FASTER,
        "-9.1%, p = 0.0022 < 0.01, 6 vs 6 repeats",
    )


def test_two_cpus_sold_under_one_model_name_are_two_hosts_in_a_history(tmp_path):
    without = make(tmp_path / "a", "alexnet", [Job("torch", "alexnet-s", 16, medians=[0.100] * 6)])
    with_avx512 = make(tmp_path / "b", "alexnet", [Job("torch", "alexnet-s", 16, medians=[0.050] * 6)], cpu=AVX512)
    (line,) = _history([without, with_avx512])  # one line: one configuration on one device model (AMD EPYC 9B14)
    assert line.key["device_name"] == "AMD EPYC 9B14"
    assert _shown(line.points[1]) == "not comparable: other host (ISA avx2 fma -> avx2 avx512_bf16 avx512f fma)"
    assert configkey.host_text(line.points[1].host) == (
        "CPU AMD EPYC 9B14, logical CPUs 2, ISA avx2 avx512_bf16 avx512f fma, GPUs none"
    )


def test_compare_calls_a_timer_change_not_comparable_and_footnotes_why(tmp_path, capsys):
    first = make(
        tmp_path / "a",
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.100] * 6, device="cuda"),
            Job("jax", "fcn-s", 64, medians=[0.100] * 6, device="cuda"),
        ],
    )
    second = make(
        tmp_path / "b",
        "fcn",
        [
            Job("torch", "fcn-s", 64, medians=[0.100] * 6, device="cuda"),
            Job("jax", "fcn-s", 64, medians=[0.080] * 6, device="cuda", timer="device_events"),
        ],
    )
    found = gather.comparison(str(first), str(second))
    rows = found.cells.set_index("framework")
    assert (rows.loc["jax", "verdict"], rows.loc["jax", "reason"]) == (
        verdicts.NOT_COMPARABLE,
        "timer changed (host_sync -> device_events)",
    )
    assert (rows.loc["jax", "median_a"], rows.loc["jax", "median_b"]) == (0.100, 0.080)
    assert rows.loc["torch", "verdict"] == verdicts.NO_CHANGE
    assert found.exit_status("slower") == 0 and found.exit_status("unproven") == 1
    render.comparison(found)
    shown = capsys.readouterr().out
    assert "[1] not comparable: timer changed (host_sync -> device_events)" in shown
    assert "1 unchanged, 0 slower, 0 faster, 1 not comparable;" in shown


def test_compare_across_two_hosts_of_one_cpu_model_name_is_not_comparable(tmp_path):
    first = make(tmp_path / "a", "alexnet", [Job("torch", "alexnet-s", 16, medians=[0.100] * 6)])
    second = make(tmp_path / "b", "alexnet", [Job("torch", "alexnet-s", 16, medians=[0.050] * 6)], cpu=AVX512)
    found = gather.comparison(str(first), str(second))
    (row,) = found.cells.itertuples()
    assert (
        "%s: %s" % (row.verdict, row.reason)
        == "not comparable: other host (ISA avx2 fma -> avx2 avx512_bf16 avx512f fma)"
    )
    assert found.differs == ["ISA avx2 fma / avx2 avx512_bf16 avx512f fma"]


def _answer(name, created, cpu, verdict):
    """A StudyAnswer's fields that answers.matrix reads: one claim, one bundle on a host with CPU record ``cpu``."""
    body = {"host": {"cpu": cpu, "gpus": []}}
    claim = SimpleNamespace(claim="c1", verdict=verdict)
    study = SimpleNamespace(title="a study", claims={"c1": SimpleNamespace(text="a claim")})
    return SimpleNamespace(
        record={"study": "dlf", "created": created, "finished": True, "runs": {}},
        record_path="results/studies/%s.json" % name,
        host="2-CPU AMD EPYC 9B14, no GPU",
        bundle=SimpleNamespace(bodies=[body], summary=None),
        claims=[claim],
        untestable=[],
        drift=[],
        study=study,
    )


def test_the_study_matrix_sets_two_hosts_of_one_cpu_model_name_apart():
    (found,) = matrix.matrices(
        [
            _answer("dlf-1", "2026-12-01", EPYC, verdicts.HOLDS),
            _answer("dlf-2", "2026-12-04", AVX512, verdicts.DOES_NOT_HOLD),
        ]
    )
    assert [(c.host, [r.name for r in c.records], c.fingerprint) for c in found.columns] == [
        ("2-CPU AMD EPYC 9B14, no GPU", ["dlf-1"], "CPU AMD EPYC 9B14, logical CPUs 2, ISA avx2 fma, GPUs none"),
        (
            "2-CPU AMD EPYC 9B14, no GPU",
            ["dlf-2"],
            "CPU AMD EPYC 9B14, logical CPUs 2, ISA avx2 avx512_bf16 avx512f fma, GPUs none",
        ),
    ]
    assert {k: (v.best.verdict.verdict, v.others) for k, v in found.cells.items()} == {
        ("c1", 0): (verdicts.HOLDS, []),
        ("c1", 1): (verdicts.DOES_NOT_HOLD, []),
    }


def _imports(tree):
    return {(n.module, a.name) for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}


def _key_lists(tree):
    """The module-level names assigned a grouping key of their own: a list or tuple literal naming the spec and two
    or more other columns of the key (a list of the columns a view shows, without the spec, is no key)."""

    def names(node):
        return {e.value for e in node.elts if isinstance(e, ast.Constant)}

    return [
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, (ast.List, ast.Tuple))
        for t in n.targets
        if isinstance(t, ast.Name)
        if "spec" in names(n.value) and len(names(n.value) & set(configkey.LINE)) >= 3
    ]


def test_compare_history_matrix_and_check_read_the_key_from_its_one_home_and_define_none():
    for name in ("regression", "history", "matrix", "model"):  # compare, the history, the matrix, check's groups
        tree = ast.parse((ANSWERS / ("%s.py" % name)).read_text())
        assert ("dlrepro.answers", "configkey") in _imports(tree) or any(
            module == "dlrepro.answers.configkey" for module, _ in _imports(tree)
        ), name
        assert _key_lists(tree) == [], name
    assert _key_lists(ast.parse((ANSWERS / "configkey.py").read_text())) == ["CONFIGURATION", "SIDE_BY_SIDE"]


def test_the_committed_jax_fcn_s_b1024_history_on_the_h200_is_a_timer_change_not_a_faster_jax():
    """Review 0525f18 U2 / A2: the site called this pair "faster, -12.3%, p = 0.0022"."""
    from dlrepro.views import site as pages

    folders = [
        REPO_ROOT / "results" / name for name in ("fcn-20261202T004222Z-a1585eee", "fcn-20261203T173433Z-74c9b923")
    ]
    summary, samples = tables.merge(folders)
    found = history.history([bundle.body(f) for f in folders], summary, samples)
    (line,) = [
        c for c in found if (c.key["framework"], c.key["batch_size"], c.key["precision"]) == ("jax", 1024, "fp32")
    ]
    assert line.slug.startswith("fcn.fcn-s.jax-0.11.2.cuda.b1024.fp32-")
    assert [p.timer for p in line.points] == ["host_sync", "device_events"]
    assert _shown(line.points[1]) == "not comparable: timer changed (host_sync -> device_events)"
    html = pages.configuration_page(line, up="../")
    assert "<td>device_events</td>" in html and "timer changed (host_sync -&gt; device_events)" in html


def test_a_memory_layout_the_adapter_changed_is_another_configuration_in_compare_and_the_history(tmp_path, capsys):
    """Suite commit 687072a made DLF's Keras 2 on CNTK channels-first on a CPU (NHWC before): the layout the adapter
    fed its images in (result.json's environment.layout, the tables' memory_layout) is part of the key, so the two
    runs are two configurations, never one faster than the other."""

    def run(folder, layout, median):
        job = Job("keras-cntk", "cifar10-vgg-synthetic", 64, medians=[median] * 6, memory_layout=layout)
        return make(tmp_path / folder, "cifar10-vgg", [job])

    nhwc, nchw, again = run("a", "NHWC", 0.130), run("b", "NCHW", 0.100), run("c", "NCHW", 0.101)
    found = gather.comparison(str(nhwc), str(nchw))
    assert sorted(zip(found.cells["memory_layout"], found.cells["verdict"])) == [
        ("NCHW", verdicts.ONLY_IN_B),
        ("NHWC", verdicts.ONLY_IN_A),
    ]
    assert found.varying == ["memory_layout"]  # compare's table shows the column that tells the two rows apart
    assert found.nothing == (
        "%s and %s share no configuration: every job of one differs from every job of the other in memory_layout "
        "(A NHWC, B NCHW)" % (nhwc.name, nchw.name)
    )
    render.comparison(found)
    shown = capsys.readouterr().out
    assert "memory_layout" in shown and "NCHW" in shown and "NHWC" in shown
    lines = sorted(_history([nhwc, nchw, again]), key=lambda line: line.key["memory_layout"])
    assert [(line.key["memory_layout"], len(line.points)) for line in lines] == [("NCHW", 2), ("NHWC", 1)]
    assert lines[0].points[1].verdict == verdicts.NO_CHANGE
