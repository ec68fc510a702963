"""The command line as a whole: one meaning per flag, help that shows what to type, a `dlrepro` that works from
any folder, starts without the heavy libraries, and finds bundles under --results or $DLREPRO_RESULTS."""

import json
import os
import subprocess
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.cli.options import SHORT
from dlrepro.cli.tasks import ns
from tests.helpers import dlrepro_here

HEAVY = ("pandas", "pyarrow", "matplotlib", "scipy", "docker", "rich.table", "pydantic")
ALEXNET = REPO_ROOT / "results" / "alexnet-20261130T031432Z-74e68a2e"


def tasks():
    """{dotted task name: its invoke Task} for every task, sub-collections' included."""
    return {name: ns[name] for name in ns.task_names}


def dlrepro(*args, cwd, env=None):
    """The `dlrepro` console command's entry point (pyproject's [project.scripts]) run in ``cwd``."""
    return subprocess.run(
        [sys.executable, "-c", "from dlrepro.cli.main import program; program.run()"] + list(args),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), COLUMNS="200", **(env or {})),
    )


def test_no_flag_means_two_things():
    meanings = {}
    for name, t in tasks().items():
        for arg in t.get_arguments():
            for flag in arg.names:
                if len(flag) == 1:
                    meanings.setdefault(flag, set()).add(arg.name)
    assert meanings == {short: {long} for long, short in SHORT.items() if short in meanings}
    assert set(meanings) == {"f", "d", "r", "o"}


def test_options_that_recur_take_the_same_kind_of_value_everywhere():
    kinds = {}
    for name, t in tasks().items():
        for arg in t.get_arguments():
            kinds.setdefault(arg.name, set()).add((arg.kind, arg.positional))
    recurring = {n: k for n, k in kinds.items() if len(k) > 1}
    # a bundle is positional where a task takes one; --resume takes a value in run and study alike
    assert recurring == {}, recurring
    assert {(n, a.kind) for n in ("run", "study") for a in tasks()[n].get_arguments() if a.name == "resume"} == {
        ("run", str),
        ("study", str),
    }


def test_every_task_that_names_a_bundle_takes_results():
    names_bundles = {
        n
        for n, t in tasks().items()
        for a in t.get_arguments()
        if a.name in ("bundle", "bundles", "old", "resume", "name")
    } - {"datasets.fetch"}
    assert names_bundles == {
        "archive",
        "check",
        "compare",
        "finalize",
        "merge",
        "publish",
        "report",
        "run",
        "study",
        "study-report",
        "validate",
    }
    for n in names_bundles | {"bundles"}:
        assert "results" in [a.name for a in tasks()[n].get_arguments()], n


def test_help_marks_positionals_and_summaries_fit_the_list():
    for name, t in tasks().items():
        for arg in t.get_arguments():
            assert arg.positional == (arg.help or "").startswith("(positional"), (name, arg.name)
        first = t.__doc__.strip().splitlines()[0]
        assert len(first) <= 50 and first.endswith("."), (name, first)


def test_the_tasks_start_without_the_heavy_libraries():
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, dlrepro.cli.main; print(' '.join(m for m in %r if m in sys.modules))" % (HEAVY,),
        ],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)),
    ).stdout.split()
    assert loaded == []


def test_dlrepro_works_from_any_folder(tmp_path):
    listed = dlrepro("--list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert {line.split()[0] for line in listed.stdout.splitlines()[2:] if line.strip()} == set(ns.task_names) | {
        "datasets.list"
    }
    shown = dlrepro("specs", cwd=tmp_path)
    assert shown.returncode == 0 and "alexnet-s" in shown.stdout and "dlbench" in shown.stdout


def test_a_reader_that_stops_reading_ends_the_listing_quietly(tmp_path):
    """`dlrepro --list | head -1` once head has gone: its output pipe has no reader; no BrokenPipeError traceback,
    exit status 1."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    listing = subprocess.run(
        [sys.executable, "-c", "from dlrepro.cli.main import program; program.run()", "--list"],
        stdout=write,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), COLUMNS="200"),
    )
    os.close(write)
    assert listing.returncode == 1 and listing.stderr == b""


def test_a_bundle_under_results_is_named_by_id(tmp_path):
    results = tmp_path / "r"
    results.mkdir()
    subprocess.run(["cp", "-r", str(ALEXNET), str(results)], check=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = dlrepro("validate", ALEXNET.name, "-r", str(results), cwd=elsewhere)
    assert done.returncode == 0 and "valid %s" % (results / ALEXNET.name) in done.stdout, done.stdout
    listed = dlrepro("bundles", cwd=elsewhere, env={"DLREPRO_RESULTS": str(results)})
    assert listed.returncode == 0 and "bundles (1)" in listed.stdout and "complete" in listed.stdout
    report = dlrepro(
        "check", ALEXNET.name, "--results", str(results), "--json", str(tmp_path / "c.json"), cwd=elsewhere
    )
    assert report.returncode == 0 and json.loads((tmp_path / "c.json").read_text())["bundles"] == [ALEXNET.name]
    missing = dlrepro("validate", "alexnet-nope", "-r", str(results), cwd=elsewhere)
    assert missing.returncode == 2 and missing.stdout.startswith("error: alexnet-nope: no bundle.json there")


def test_specs_did_you_mean_and_json(tmp_path):
    near = dlrepro_here("specs", "--show", "alexnt", cwd=tmp_path)
    assert near.returncode == 2 and "did you mean alexnet?" in near.stdout
    resolved = dlrepro_here("specs", "--show", "fcn", "--json", "-", cwd=tmp_path)
    body = json.loads(resolved.stdout)
    assert body["name"] == "fcn" and body["variants"]["fcn-s"]["repeats"] == 6


@pytest.mark.parametrize("out", ["missing/", "missing/deeper/"])
def test_archive_out_folder_with_a_slash_is_a_folder(tmp_path, out):
    from dlrepro.store.archive.write import out_path

    target = out_path("%s/%s" % (tmp_path, out), "b-1")
    assert target == tmp_path / out / "b-1.tar.gz" and (tmp_path / out).is_dir()


def test_a_size_above_the_limits_on_the_command_line_names_the_option(tmp_path):
    done = dlrepro_here(
        "run",
        "--spec=alexnet",
        "--variant=alexnet-s",
        "--batch-size=16,2147483648",
        "--executor=local",
        "--results",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert (
        done.returncode == 2
        and done.stdout.splitlines()[0]
        == (
            "error: --batch-size 2,147,483,648: above the limits of variant alexnet-s (batch_size 65,536, iterations "
            "100,000, repeats 1,000, epochs 1,000)"
        )
        and list(tmp_path.iterdir()) == []
    )


def test_an_interrupt_without_a_reason_says_ctrl_c(capsys):
    from invoke import Exit

    from dlrepro.cli import tasks as tasksmod

    with pytest.raises(Exit) as stopped:
        tasksmod._interrupted(KeyboardInterrupt(), "; continue with: dlrepro study dlbench --resume latest")
    assert stopped.value.code == 130
    assert capsys.readouterr().out == "interrupted (Ctrl-C); continue with: dlrepro study dlbench --resume latest\n"
    with pytest.raises(Exit):
        tasksmod._interrupted(KeyboardInterrupt("signal 15; bundle with the finished jobs: results/x"))
    assert capsys.readouterr().out == "interrupted (signal 15; bundle with the finished jobs: results/x)\n"


def test_dlrepro_help_lists_the_tasks_and_only_the_core_options_that_mean_something(tmp_path):
    done = dlrepro("--help", cwd=tmp_path)
    assert done.returncode == 0 and "Subcommands:" in done.stdout
    listed = done.stdout.split("Subcommands:")[1]
    assert all(name in listed for name in ns.task_names)
    core = done.stdout.split("Subcommands:")[0]
    shown = [line.split()[0] for line in core.splitlines() if line.startswith("  -")]
    assert shown == ["--print-completion-script=STRING", "-h", "-l", "-V,"]
    assert not any(
        hidden in core
        for hidden in (
            "--prompt-for-sudo-password",
            "--pty",
            "--dry",
            "--echo",
            "--hide",
            "--write-pyc",
            "--debug",
            "--config",
            "--warn-only",
        )
    )


def test_a_run_stopped_by_ctrl_c_says_so(tmp_path, monkeypatch):
    from dlrepro.run import runs
    from dlrepro.run.options import RunOptions

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt()  # what Ctrl-C raises: no message

    monkeypatch.setattr(runs._Run, "execute", ctrl_c)
    options = RunOptions(frameworks=["torch"], executor="local", variants=["fcn-s"], batch_sizes=[8], quick=True)
    with pytest.raises(KeyboardInterrupt, match=r"^Ctrl-C; bundle with the finished jobs: %s/fcn-" % tmp_path):
        runs.run("fcn", options, results_dir=tmp_path)


def test_a_look_alike_letter_in_framework_is_pointed_at(tmp_path):
    done = dlrepro_here("run", "--spec=fcn", "-f", "t\u043erch", "--executor=local", "-r", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 2 and done.stdout.strip().splitlines()[0] == (
        "error: spec fcn declares no adapter for 't\u043erch' (character 2, '\u043e', is U+043E CYRILLIC SMALL "
        "LETTER O, not ASCII); its frameworks: %s"
        % ", ".join(__import__("dlrepro.inputs.spec", fromlist=["load"]).load("fcn").frameworks)
    )


def test_task_help_after_the_task_shows_its_help_even_where_it_takes_a_positional(tmp_path):
    positional = sorted(n for n, t in tasks().items() if any(a.positional for a in t.get_arguments()))
    assert {"study-report", "check", "compare", "report"} <= set(positional)
    for name in ("study-report", "check"):
        shown = dlrepro(name, "--help", cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.startswith("Usage: dlrepro [--core-opts] %s [--options]" % name), shown.stdout[:200]
    from dlrepro.cli.main import help_first

    assert help_first(["dlrepro", "compare", "a", "-h"], ns) == ["dlrepro", "--help", "compare"]
    assert help_first(["dlrepro", "run", "--spec", "alexnet"], ns) == ["dlrepro", "run", "--spec", "alexnet"]
    assert help_first(["dlrepro", "--help"], ns) == ["dlrepro", "--help"]


def invoke(*args):
    """`invoke ARGS` in the checkout (Invoke's own program, which loads the checkout's tasks.py)."""
    return subprocess.run(
        [sys.executable, "-m", "invoke"] + list(args),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO_ROOT,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT), COLUMNS="200"),
    )


LIST_REMEDY = "remedy: `dlrepro --list` lists the tasks, `dlrepro --help TASK` their arguments"
MISTAKES = {  # a mistake -> what both spellings print on stderr, with exit status 2
    ("repot",): ["error: no task 'repot' (did you mean report?)", LIST_REMEDY],
    ("run", "--framwork=torch"): [
        "error: run: no option --framwork (did you mean --framework?)",
        "remedy: `dlrepro --help run` lists its arguments",
    ],
    ("--lsit",): ["error: no option --lsit (did you mean --list?)", LIST_REMEDY],
    ("validate",): [
        "error: validate: missing BUNDLE: a bundle: its folder, its id under --results, or 'latest'",
        "remedy: `dlrepro validate BUNDLE`; `dlrepro --help validate` lists its arguments",
    ],
    ("compare", "some-bundle"): [
        "error: compare: missing NEW: the bundle B checked for regressions against A; or give --against: the "
        "baseline A, for `compare B --against A` (the same as `compare A B`)",
        "remedy: `dlrepro compare OLD NEW`; `dlrepro --help compare` lists its arguments",
    ],
    ("validate", "a", "b"): [
        "error: no task 'b'; validate takes one bundle ('a' given)",
        "remedy: `dlrepro --help validate` lists its arguments",
    ],
    ("run", "--spec"): [
        "error: run: --spec needs a value: spec name (%s) or the path of a spec file"
        % ", ".join(sorted(p.stem for p in (REPO_ROOT / "specs").glob("*.yaml"))),
        "remedy: `dlrepro --help run` lists its arguments",
    ],
}


@pytest.mark.parametrize("args", sorted(MISTAKES))
def test_a_usage_error_exits_2_with_the_near_miss_and_the_remedy(tmp_path, args):
    done = dlrepro(*args, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr.splitlines()) == (2, "", MISTAKES[args])


@pytest.mark.parametrize("args", [("repot",), ("run", "--framwork=torch"), ("compare", "some-bundle")])
def test_invoke_in_the_checkout_gives_the_same_exit_status_and_text_as_dlrepro(tmp_path, args):
    """The card's spelling (`invoke X`, Invoke's own program) and `dlrepro X` on the same mistake: an unknown
    task, an unknown option, a missing positional."""
    spelled = invoke(*args)
    assert (spelled.returncode, spelled.stderr.splitlines()) == (2, MISTAKES[args])
    listed = invoke("-c", "tasks", "--list")  # Invoke's own loader options are left out of the hand-over
    assert listed.returncode == 0 and listed.stdout == dlrepro("--list", cwd=tmp_path).stdout


def test_list_positionals_take_further_words_as_a_list(tmp_path):
    from dlrepro.cli.main import joined, program

    assert joined(["dlrepro", "report", "A", "B", "--out", "x", "C", "build"], program.namespace) == [
        "dlrepro",
        "report",
        "A\0B\0C",
        "--out",
        "x",
        "build",
    ]
    assert joined(["dlrepro", "run", "--spec"], program.namespace) == ["dlrepro", "run", "--spec"]
    other = "fcn-20261130T022354Z-cc755c44"  # 3 jobs; ALEXNET has 7
    merged = dlrepro("merge", ALEXNET.name, other, cwd=tmp_path)
    assert merged.returncode == 0 and "2 bundles, 10 jobs" in merged.stdout, merged.stdout + merged.stderr


def test_a_results_folder_that_does_not_exist_is_named(tmp_path):
    for args in (("check", "latest"), ("validate", "some-id"), ("bundles",)):
        done = dlrepro_here(*args, "--results", str(tmp_path / "nope"), cwd=tmp_path)
        assert (done.returncode, done.stdout.splitlines()) == (
            2,
            [
                "error: --results %s: no such folder" % (tmp_path / "nope"),
                "remedy: give the folder the bundles were written to (default: the checkout's results/, or "
                "DLREPRO_RESULTS)",
            ],
        ), args


def test_a_report_goes_under_results_reports_and_says_when_it_replaced_one(tmp_path):
    results, elsewhere = tmp_path / "r", tmp_path / "elsewhere"
    elsewhere.mkdir()
    results.mkdir()
    subprocess.run(["cp", "-r", str(ALEXNET), str(results)], check=True)
    folder = results / "reports" / ALEXNET.name
    first = dlrepro("report", ALEXNET.name, "-r", str(results), cwd=elsewhere)
    assert first.returncode == 0, first.stdout + first.stderr
    assert (folder / "report.md").is_file() and list(elsewhere.iterdir()) == []
    assert "rewrote" not in first.stdout and "%s/report.html" % folder in first.stdout.splitlines()
    again = dlrepro("report", "latest", "-r", str(results), cwd=elsewhere)
    assert (
        again.returncode == 0
        and "rewrote %s: the report there before is replaced" % folder in again.stdout.splitlines()
    )


def test_a_study_report_written_over_one_says_so(tmp_path):
    (tmp_path / "study.md").write_text("an earlier report\n")
    done = dlrepro_here(
        "study-report",
        str(REPO_ROOT / "results" / "studies" / "dlf-20261201T234451Z.json"),
        "--out",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    # the answer first (review N13), then the line that says the earlier report was replaced, then the files
    assert done.stdout.splitlines()[0].startswith("On this study's host (2-CPU AMD EPYC, no GPU) 1 of ")
    assert done.stdout.splitlines()[1:4] == [
        "rewrote %s: the report there before is replaced" % tmp_path,
        str(tmp_path / "study.html"),
        str(tmp_path / "study.md"),
    ]


def test_archive_gives_its_size_in_the_unit_that_fits(tmp_path):
    from dlrepro.views.numbers import size

    assert [size(n) for n in (512, 22_300, 999_700, 1_430_000, 3.1e9)] == [
        "512 bytes",
        "22 KB",
        "1.0 MB",
        "1.4 MB",
        "3.1 GB",
    ]
    done = dlrepro("archive", ALEXNET.name, "--out", "%s/" % tmp_path, cwd=tmp_path)
    made = tmp_path / ("%s.tar.gz" % ALEXNET.name)
    assert (
        done.returncode == 0
        and done.stdout.splitlines()[-1] == "archive: %s (63 files, %s)" % (made, size(made.stat().st_size))
        and size(made.stat().st_size).endswith(" KB")
    ), done.stdout


@pytest.mark.parametrize(
    "args, line",
    [
        (["--iterations", "-1"], "error: --iterations: Input should be greater than 0 (got -1)"),
        (["--repeats=0"], "error: --repeats: Input should be greater than 0 (got 0)"),
        (["--warmup=-1"], "error: --warmup: Input should be greater than or equal to 0 (got -1)"),
        (["--epochs=two"], "error: --epochs: expected a whole number (got 'two')"),
        (["--timeout=0"], "error: --timeout: Input should be greater than 0 (got 0)"),
        (["--gpu=-1"], "error: --gpu: Input should be greater than or equal to 0 (got -1)"),
        (
            ["--executor", "slurm", "--max-parallel=-1"],
            "error: --max-parallel: expected a number of tasks >= 1 (got -1)",
        ),
    ],
)
def test_a_number_option_out_of_its_range_is_one_error_naming_it(tmp_path, args, line):
    """-1 was "not given" once: `--iterations -1` ran the spec's count and exited 0."""
    done = dlrepro_here("run", "--spec=alexnet", "--results", str(tmp_path / "results"), *args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout.splitlines()[0] == line, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "results").exists()  # nothing was run


@pytest.mark.parametrize("given", ["0", "-1", "two"])
def test_build_jobs_that_is_no_count_of_images_is_one_error_naming_it(tmp_path, given):
    done = dlrepro_here("build", "--jobs=%s" % given, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout.splitlines() == [
        "error: --jobs: expected a whole number of at least 1 (got %r)" % given,
        "remedy: e.g. --jobs 4",
    ], done.stdout


def test_results_that_is_a_file_is_one_error_line(tmp_path):
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    for given, named in ((tmp_path / "notes.txt", "it"), (tmp_path / "notes.txt" / "sub", tmp_path / "notes.txt")):
        done = dlrepro_here("run", "--spec=alexnet", "--quick", "--results", str(given), cwd=tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stdout + done.stderr
        assert done.stdout.splitlines() == [
            "error: --results %s: %s is not a folder" % (given, named),
            "remedy: give a folder for the bundles (it is made when missing), not a file",
        ], done.stdout
    done = dlrepro_here("bundles", cwd=tmp_path, env={"DLREPRO_RESULTS": str(tmp_path / "notes.txt")})
    assert done.returncode == 2 and done.stdout.splitlines()[0] == "error: DLREPRO_RESULTS=%s: it is not a folder" % (
        tmp_path / "notes.txt"
    )


def test_a_bad_seeds_count_or_run_id_exits_2_naming_the_option(tmp_path):
    seeds = dlrepro_here(
        "run", "--spec=imdb-gru", "--seeds=0", "--executor=local", "--results", str(tmp_path), cwd=tmp_path
    )
    assert (
        seeds.returncode == 2
        and seeds.stdout.splitlines()[0] == "error: --seeds: Input should be greater than 0 (got 0)"
    )
    many = dlrepro_here(
        "run", "--spec=imdb-gru", "--seeds=101", "--executor=local", "--results", str(tmp_path), cwd=tmp_path
    )
    assert many.returncode == 2 and many.stdout.splitlines()[0] == (
        "error: --seeds: Input should be less than or equal to 100 (got 101)"
    )  # each seed is a full training
    run = dlrepro_here("study", "dlf", "--run=cpu-rnn,tpu", "--results", str(tmp_path), cwd=tmp_path)
    assert run.returncode == 2 and run.stdout.splitlines()[0].startswith(
        "error: --run: study dlf has no run 'tpu'; its runs: gpu-cnn, cpu-cnn,"
    )
    assert list(tmp_path.iterdir()) == []  # nothing was started


def test_rerun_without_a_bundle_and_an_unknown_version_set_exit_2_naming_the_option(tmp_path):
    rerun = dlrepro_here(
        "run", "--spec=fcn", "--rerun=fcn-s.torch.cpu.b8", "--executor=local", "--results", str(tmp_path), cwd=tmp_path
    )
    assert rerun.returncode == 2 and rerun.stdout.splitlines()[0] == "error: --rerun goes with --resume BUNDLE"
    versions = dlrepro_here("study", "dlf", "--versions=then", "--results", str(tmp_path), cwd=tmp_path)
    assert versions.returncode == 2 and versions.stdout.splitlines() == [
        "error: --versions: expected one of published, today, both (got 'then')",
        "remedy: give --versions published, today or both",
    ]
    assert list(tmp_path.iterdir()) == []  # nothing was started


@pytest.mark.parametrize(
    "args, lines",
    [
        (
            ["--device", "tpu"],
            [
                "error: --device: Input should be 'cpu' or 'cuda' (got 'tpu')",
                "remedy: give each option a value in its range: `dlrepro --help run` lists them",
            ],
        ),
        (
            ["--executor", "nosuch"],
            [
                "error: --executor: Input should be 'docker', 'local' or 'slurm' (got 'nosuch')",
                "remedy: give each option a value in its range: `dlrepro --help run` lists them",
            ],
        ),
        (
            ["--framework", "nosuch"],
            [
                "error: study dlf declares no adapter for 'nosuch'; its frameworks: torch, "
                "tensorflow, mxnet, jax, cntk, caffe2, caffe, chainer, keras-tensorflow, keras-jax, "
                "keras-torch, keras-cntk, keras-theano",
                "remedy: give --framework names of those, comma-separated, or leave --framework out",
            ],
        ),
        (
            ["--framework", "torch,tensorfow"],
            [
                "error: study dlf declares no adapter for 'tensorfow' (did you "
                "mean tensorflow?); its frameworks: torch, "
                "tensorflow, mxnet, jax, cntk, caffe2, caffe, chainer, "
                "keras-tensorflow, keras-jax, keras-torch, keras-cntk, "
                "keras-theano",
                "remedy: give --framework names of those, comma-separated, or leave --framework out",
            ],
        ),
    ],
)
def test_study_refuses_what_run_refuses_before_writing_a_record(tmp_path, args, lines):
    """--device tpu and --framework nosuch once wrote a record of nothing runnable and exited 0, --executor nosuch
    ended in a pydantic traceback, and a typo beside a good framework was dropped."""
    results = tmp_path / "r"
    results.mkdir()
    done = dlrepro_here("study", "dlf", "--results", str(results), *args, cwd=tmp_path)
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (2, lines, "")
    assert list(results.iterdir()) == []
    if args[0] != "--framework":  # `dlrepro run` says the same
        ran = dlrepro_here("run", "--spec=fcn", "--results", str(results), *args, cwd=tmp_path)
        assert (ran.returncode, ran.stdout.splitlines()) == (2, lines)


@pytest.mark.parametrize("task", [["compare", ALEXNET.name, ALEXNET.name], ["check", ALEXNET.name]])
def test_a_json_path_that_cannot_be_written_is_refused_before_anything_runs(tmp_path, task):
    """It was written after the table, and ended in a FileNotFoundError or IsADirectoryError traceback, exit 1."""
    remedy = "remedy: give a file name in a folder that exists, e.g. --json result.json"
    for given, why in (
        (tmp_path / "nope" / "x.json", "no folder %s" % (tmp_path / "nope")),
        (tmp_path, "it is a folder"),
    ):
        done = dlrepro_here(*task, "--json", str(given), cwd=tmp_path)
        assert (done.returncode, done.stdout.splitlines(), done.stderr) == (
            2,
            ["error: --json %s: %s" % (given, why), remedy],
            "",
        ), done.stdout + done.stderr


@pytest.mark.parametrize("task", [["report", ALEXNET.name], ["study-report", "dlf"], ["study", "dlf"]])
def test_a_report_out_that_is_a_file_is_one_error_line(tmp_path, task):
    """It ended in NotADirectoryError (a study: after its runs)."""
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    remedy = "remedy: give a folder for the report (it is made when missing), not a file"
    for given, named in ((tmp_path / "notes.txt", "it"), (tmp_path / "notes.txt" / "sub", tmp_path / "notes.txt")):
        done = dlrepro_here(*task, "--out", str(given), "--results", str(tmp_path / "r"), cwd=tmp_path)
        assert (done.returncode, done.stdout.splitlines(), done.stderr) == (
            2,
            ["error: --out %s: %s is not a folder" % (given, named), remedy],
            "",
        ), done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_json_file_that_is_no_study_record_is_named_as_such(tmp_path):
    """A bundle.json (valid JSON, another schema) ended in KeyError: 'manifest'."""
    remedy = (
        "remedy: give a study record (results/studies/<study>-<stamp>.json, `dlrepro study` writes them) or a "
        "study name"
    )
    done = dlrepro_here("study-report", str(ALEXNET / "bundle.json"), "--out", str(tmp_path), cwd=tmp_path)
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (
        2,
        [
            "error: results/%s/bundle.json: not a study record (schema dlrepro.study/1; this file's: dlrepro.bundle/1)"
            % ALEXNET.name,
            remedy,
        ],
        "",
    )
    (tmp_path / "list.json").write_text("[1, 2]\n")
    done = dlrepro_here("study-report", str(tmp_path / "list.json"), "--out", str(tmp_path), cwd=tmp_path)
    assert (done.returncode, done.stdout.splitlines()) == (
        2,
        ["error: list.json: not a study record (schema dlrepro.study/1; this file's: none)", remedy],
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["list.json"]


def test_bundles_in_one_quoted_argument_are_split_on_spaces_as_the_help_says(tmp_path):
    from dlrepro.run.optiontext import split

    assert split(" a b,c ,\td\n") == ["a", "b", "c", "d"] and split(" , ") is None
    other = "fcn-20261130T022354Z-cc755c44"
    done = dlrepro_here("report", "%s %s" % (ALEXNET.name, other), "--out", str(tmp_path / "rep"), cwd=tmp_path)
    assert done.returncode == 0 and str(tmp_path / "rep" / "report.html") in done.stdout.splitlines(), done.stdout
    assert "%s, %s" % (ALEXNET.name, other) in (tmp_path / "rep" / "report.md").read_text()


def test_a_bundle_name_too_long_for_the_system_is_no_bundle(tmp_path):
    """It ended in OSError: File name too long."""
    name = "x" * 300
    for task in (["report", name], ["compare", name, "latest"], ["validate", name]):
        done = dlrepro_here(*task, cwd=tmp_path)
        assert (done.returncode, done.stdout.splitlines(), done.stderr) == (
            2,
            [
                "error: %s: no bundle.json there; give a bundle folder or the "
                "id of one under %s (another results folder: "
                "--results DIR)" % (name, REPO_ROOT / "results")
            ],
            "",
        ), task


EFFECT = [
    "error: --min-effect: expected a number from 0 (included) to 1 (excluded) (got %r)",
    "remedy: e.g. --min-effect 0.05 (a change of 5%)",
]
ALPHA = ["error: --alpha: expected a number from 0 (excluded) to 0.5 (excluded) (got %r)", "remedy: e.g. --alpha 0.01"]


@pytest.mark.parametrize(
    "option, value, lines",
    [("--min-effect", v, EFFECT) for v in ("nan", "inf", "-inf", "1", "-0.1")]
    + [("--alpha", v, ALPHA) for v in ("nan", "inf", "0", "0.5", "x")],
)
def test_min_effect_and_alpha_out_of_range_or_not_finite_are_refused(tmp_path, option, value, lines):
    """--min-effect nan printed "+nan%" and exited 0; inf was taken too."""
    done = dlrepro_here("compare", ALEXNET.name, ALEXNET.name, option, value, cwd=tmp_path)
    assert (done.returncode, done.stdout.splitlines(), done.stderr) == (2, [lines[0] % value, lines[1]], "")


def test_a_run_ends_with_the_command_that_reports_its_bundle(tmp_path):
    """Review U5: `dlrepro run` ended at 'bundle: <path>' with no next step."""
    done = dlrepro(
        "run",
        "--spec=fcn",
        "--variant=fcn-s",
        "--framework=torch",
        "--executor=local",
        "--quick",
        "--batch-size=8",
        "--results",
        str(tmp_path),
        cwd=tmp_path,
    )
    (folder,) = [p for p in tmp_path.iterdir() if p.name.startswith("fcn-")]
    assert done.returncode == 0 and done.stdout.splitlines()[-2:] == [
        "bundle: %s" % folder,
        "next: dlrepro report latest --results %s" % tmp_path,
    ]
