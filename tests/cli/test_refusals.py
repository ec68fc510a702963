"""Bad input refused before anything is written (issue 53): a framework version no image runs, a report into a
bundle, one bundle compared with itself; and paths as data (a space in a bundle's or a results folder's path).
Each refusal exits 2 with one error line naming the option or path, and the results folder is listed before and
after: nothing is added or changed there. No engine is needed: the checks come before any engine call."""

import json

import pytest

from tests.bundles import Job, make
from tests.helpers import dlrepro_here


def dlrepro(*args, cwd):
    """The `dlrepro` command run in ``cwd`` (in this process: tests.helpers.dlrepro_here); (exit status, its
    output lines, stdout's then stderr's)."""
    done = dlrepro_here(*args, cwd=cwd, env={"COLUMNS": "300"})
    return done.returncode, (done.stdout + done.stderr).strip().splitlines()


def listing(folder):
    """Every file and folder under ``folder`` with its size and modification time: what a command may not change."""
    return sorted(
        (str(p.relative_to(folder)), p.stat().st_size if p.is_file() else None, p.stat().st_mtime_ns)
        for p in folder.rglob("*")
    )


@pytest.fixture
def results(tmp_path):
    """A results folder holding one bundle, as a run writes it."""
    folder = tmp_path / "results"
    make(folder, "fcn", [Job("torch", "fcn-s", 64, medians=[0.10] * 6)])
    return folder


@pytest.mark.parametrize(
    "task, framework, error, remedy",
    [
        (
            "run",
            "tensorflow@1.4",
            "--framework tensorflow@1.4: no image of tensorflow 1.4 on cpu; its versions on cpu "
            "here: 1.4.0, 2.21.0; did you mean tensorflow@1.4.0?",
            "give --framework tensorflow@VERSION with one of those, or tensorflow alone for the newest (2.21.0)",
        ),
        (
            "run",
            "torch@0.3.1",
            "--framework torch@0.3.1: no image of torch 0.3.1 on cpu; its versions on cpu here: "
            "1.0.0, 2.13.0; did you mean torch@1.0.0?",
            "give --framework torch@VERSION with one of those, or torch alone for the newest (2.13.0)",
        ),
        (
            "run",
            "tensorflow@",
            "--framework: 'tensorflow@' has no version after the @ (NAME@VERSION, or NAME alone for "
            "the newest) (got ['tensorflow@'])",
            "give each option a value in its range: `dlrepro --help run` lists them",
        ),
        (
            "build",
            "tensorflow@",
            "--framework tensorflow@: 'tensorflow@' has no version after the @ (NAME@VERSION, or "
            "NAME alone for the newest); its versions on cpu here: 1.4.0, 2.21.0",
            "give --framework tensorflow@VERSION with one of those, or tensorflow alone for the newest (2.21.0)",
        ),
        (
            "build",
            "tensorflow@1.4",
            "--framework tensorflow@1.4: no image of tensorflow 1.4 on cpu; its versions on cpu "
            "here: 1.4.0, 2.21.0; did you mean tensorflow@1.4.0?",
            "give --framework tensorflow@VERSION with one of those, or tensorflow alone for the newest (2.21.0)",
        ),
    ],
    ids=["run-short-version", "run-unserved", "run-no-version", "build-no-version", "build-short-version"],
)
def test_a_version_no_image_runs_is_refused_before_a_bundle_exists(tmp_path, results, task, framework, error, remedy):
    before = listing(results)
    args = ["--spec", "fcn", "-r", str(results), "--quick"] if task == "run" else ["-d", "cpu"]
    status, lines = dlrepro(task, "-f", framework, *args, cwd=tmp_path)
    assert (status, lines) == (2, ["error: " + error, "remedy: " + remedy])
    assert listing(results) == before


def test_a_keras_version_of_a_spec_that_has_keras_is_refused_with_its_nearest(tmp_path, results):
    before = listing(results)
    status, lines = dlrepro(
        "run", "--spec", "cifar10-vgg", "-f", "keras-theano@9", "-r", str(results), "--quick", cwd=tmp_path
    )
    assert (status, lines[0]) == (
        2,
        "error: --framework keras-theano@9: no image of keras-theano 9 on cpu; its "
        "versions on cpu here: 2.1.5; did you mean keras-theano@2.1.5?",
    )
    assert listing(results) == before


def test_a_study_refuses_a_version_before_its_record_exists(tmp_path, results):
    before = listing(results)
    status, lines = dlrepro(
        "study", "dlbench", "-f", "tensorflow@1.4", "-d", "cpu", "--quick", "-r", str(results), cwd=tmp_path
    )
    assert (status, lines[0]) == (
        2,
        "error: --framework tensorflow@1.4: no image of tensorflow 1.4 on cpu; its "
        "versions on cpu here: 1.4.0, 2.21.0; did you mean tensorflow@1.4.0?",
    )
    assert listing(results) == before


def test_the_matrix_check_leaves_served_versions_and_plain_names_alone():
    from dlrepro.images import matrix as matrixmod

    matrix = matrixmod.load()
    matrix.check_versions(["tensorflow@1.4.0", "torch", "keras-theano@2.1.5"], ["cpu"])  # raises nothing
    with pytest.raises(
        Exception,
        match=r"^--framework keras-theano@2.1.5: no image of keras-theano 2.1.5 on cuda; "
        r"matrix.yaml has no keras-theano image on cuda$",
    ):
        matrix.check_versions(["keras-theano@2.1.5"], ["cuda"])


def test_the_nearest_version_shares_the_most_leading_parts_then_the_smallest_step():
    from dlrepro.inputs.frameworks import nearest

    assert nearest("1.4", ["1.4.0", "2.21.0"]) == "1.4.0"
    assert nearest("0.3.1", ["1.0.0", "2.13.0"]) == "1.0.0"
    assert nearest("2.7", ["2.5.1", "2.7.post2"]) == "2.7.post2"
    assert nearest("9", []) is None


@pytest.mark.parametrize("inside", ["", "figures"])
def test_a_report_into_a_bundle_folder_is_refused(tmp_path, results, inside):
    (bundle,) = [p for p in results.iterdir() if p.is_dir()]
    out = bundle / inside if inside else bundle
    before = listing(results)
    status, lines = dlrepro("report", str(bundle), "--out", str(out), cwd=tmp_path)
    assert (status, lines) == (
        2,
        [
            "error: --out %s: %s the bundle folder %s; a bundle holds only the files its checksums list, so nothing is "
            "written there" % (out, "it lies in" if inside else "it is", bundle),
            "remedy: give a folder outside the bundle, or leave --out out",
        ],
    )
    assert listing(results) == before
    assert dlrepro("validate", str(bundle), cwd=tmp_path)[0] == 0


def test_one_bundle_compared_with_itself_is_refused(tmp_path, results):
    (bundle,) = [p for p in results.iterdir() if p.is_dir()]
    before = listing(results)
    status, lines = dlrepro("compare", bundle.name, str(bundle), "-r", str(results), cwd=tmp_path)
    assert (status, lines) == (
        2,
        [
            "error: compare %s %s: one bundle named twice (%s)" % (bundle.name, bundle, results / bundle.name),
            "remedy: give two bundles: the baseline A and the bundle B checked against it",
        ],
    )
    assert listing(results) == before


def test_a_bundle_path_with_a_space_is_one_bundle(tmp_path):
    spaced = tmp_path / "my results"
    bundle = make(spaced, "fcn", [Job("torch", "fcn-s", 64, medians=[0.10] * 6)])
    status, lines = dlrepro("report", str(bundle), "--out", str(tmp_path / "report"), cwd=tmp_path)
    assert status == 0 and str(tmp_path / "report" / "report.html") in lines, lines
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my results", "report"]


def test_list_words_are_split_unless_they_name_a_path(tmp_path):
    from dlrepro.run.optiontext import WORDS, names

    (tmp_path / "a b,c").mkdir()
    assert names(str(tmp_path / "a b,c") + WORDS + "x,y z") == [str(tmp_path / "a b,c"), "x", "y", "z"]
    assert names("") is None


def test_a_worker_takes_paths_with_spaces_whole():
    from runner.worker import order

    assert json.loads(order("/r s/job.json", "/r s/out")) == ["/r s/job.json", "/r s/out"]


def test_the_local_executor_runs_a_job_whose_results_folder_has_a_space(tmp_path, monkeypatch, mnist, reporter):
    pytest.importorskip("torch")
    from dlrepro.run import runs
    from dlrepro.run.options import RunOptions

    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    options = RunOptions(frameworks=["torch"], executor="local", variants=["fcn-s"], batch_sizes=[8], quick=True)
    path = runs.run("fcn", options, results_dir=tmp_path / "my results", reporter=reporter)
    bundle = json.loads((path / "bundle.json").read_text())
    assert bundle["counts"] == {"ok": 1, "failed": 0, "skipped": 0}
    assert path.parent == tmp_path / "my results" and list(cwd.iterdir()) == []


def test_an_engine_lost_during_a_build_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """What a build sees when dockerd is killed mid-step: the build's stream breaks (urllib3's ProtocolError) and
    the engine no longer answers."""
    import urllib3

    from dlrepro import engine
    from dlrepro.cli.main import program
    from dlrepro.images import bases, build

    def broken(matrix, image, options, log):
        raise urllib3.exceptions.ProtocolError("Connection broken: IncompleteRead(0 bytes read)")

    monkeypatch.setenv("DOCKER_HOST", "unix:///nowhere")
    monkeypatch.setattr(bases, "ensure", lambda *args: None)
    monkeypatch.setattr(build, "_ensure", broken)
    monkeypatch.setattr(engine, "answers", lambda: False)
    with pytest.raises(SystemExit) as stopped:
        program.run(["dlrepro", "build", "-f", "torch", "-d", "cpu"])
    out = capsys.readouterr()
    assert stopped.value.code == 2 and "Traceback" not in out.out + out.err
    assert out.out.splitlines() == [
        "error: the Docker engine at unix:///nowhere went away (ProtocolError) during the build of torch-2.13.0-cpu; "
        "the builds stopped (none built)",
        "remedy: start the engine again (e.g. `sudo systemctl start docker`), then `dlrepro build` again as soon as "
        "it answers: it builds only the images still missing, each after waiting for the build steps the lost engine "
        "left running on this host (they hold the apt cache's lock)",
    ]
