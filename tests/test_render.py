"""What `invoke compare` and `invoke bundles` print: units in the headers, before/after by bundle id, a closing
line, exit 2 on nothing in common, the next step as a copyable footnote."""
import shutil
import subprocess
import sys

from dlrepro import REPO_ROOT

OLD, NEW = "alexnet-20261130T041002Z-d802ef07", "alexnet-20261130T043240Z-d802ef07"  # PyTorch on an H200, b16-128
CPU = "alexnet-20261130T031432Z-74e68a2e"  # AlexNet-S b16 on 2 CPUs


def invoke(*args):
    return subprocess.run([sys.executable, "-m", "invoke"] + list(args), capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)})


def test_bundle_against_bundle_labels_before_and_after_and_closes_with_the_counts():
    done = invoke("compare", NEW, "--against", OLD)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "after %s against before %s (spec alexnet)" % (NEW, OLD) in out
    assert "before (ms)" in out and "after (ms)" in out and "Δ%" in out
    # batch sizes in numeric order, times in ms: 3.50 ms at b16 (3.499 s/1000), 14.5 ms at b128
    rows = [line for line in out.splitlines() if "PyTorch" in line]
    assert [r.split("│")[4].strip() for r in rows] == ["16", "32", "64", "128"]
    assert "3.50" in rows[0] and "+0.1%" in rows[0]  # the medians of the 3 repeat medians a side
    # 3 repeats a side: too few for an interval of the change, so no "unchanged" can be shown; each "cannot
    # tell" says why in a footnote under the table, as --json's reason does
    assert [r.split("│")[-2].strip() for r in rows] == ["cannot tell [%d]" % n for n in (1, 2, 3, 4)]
    assert out.strip().splitlines()[-6:] == [
        "[%d] cannot tell: %s: 3 vs 3 repeats give no 98%% interval to show it inside -4.8%% to +5.0%%" % (n, change)
        for n, change in ((1, "+0.1%"), (2, "-0.1%"), (3, "-0.2%"), (4, "-0.3%"))] + [
        "0 unchanged, 0 slower, 0 faster, 4 cannot tell; alpha 0.01, min effect 5%",
        # review N9: with 3 repeats a side "slower" can never be shown; the closing line says what would
        "advice: 3 vs 3 repeats cannot give p < 0.01: run both with --repeats 5 or more"]
    # both bundles, their host and GPU, first: nothing differs but the runs
    assert out.startswith("A (before): %s (" % OLD) and "NVIDIA H200" in out.splitlines()[0]
    assert "differs:" not in out


def test_two_bundles_with_nothing_in_common_exit_2():
    done = invoke("compare", CPU, "--against", OLD)
    assert done.returncode == 2
    assert "share no configuration" in done.stdout and "0 unchanged, 0 slower, 0 faster, 4 only in A, 7 only in B" \
        in done.stdout


def test_bundles_shows_device_hardware_frameworks_and_the_recorded_remedy(tmp_path):
    # the four H200 feature-extraction bundles of 2026-11-30, in a results folder of their own (results/ gains more)
    for found in sorted((REPO_ROOT / "results").glob("resnet50-features-20261130T*")):
        shutil.copytree(found, tmp_path / found.name)
    done = invoke("bundles", "--spec", "resnet50-features", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "bundles (4) of spec resnet50-features" in done.stdout and "NVIDIA H200" in done.stdout
    assert "alexnet" not in done.stdout
    # the skipped jobs' recorded remedy, one line each, not a resume that would skip them again; recorded as
    # `invoke datasets.fetch ...` (the checkout's spelling), shown as the dlrepro command
    assert done.stdout.strip().splitlines()[-2:] == ["[1] dlrepro datasets.fetch resnet50-keras-v1",
                                                     "[2] dlrepro datasets.fetch resnet50-keras-v1"]
    missing = invoke("bundles", "--results", str(REPO_ROOT / "no-such-folder"))
    assert missing.returncode == 2 and "no such folder" in missing.stdout + missing.stderr


def test_bundles_refuses_an_unknown_spec_in_one_line_with_the_near_miss(tmp_path):
    from dlrepro import spec

    done = invoke("bundles", "--spec", "alexnt")
    assert done.returncode == 2 and done.stdout.strip().splitlines() == [
        "error: %s: no such spec (did you mean alexnet?); available: %s" % (
            REPO_ROOT / "specs" / "alexnt.yaml", ", ".join(spec.available()))]
    assert invoke("bundles", "--spec", "densenet121-chestxray", "--results", str(tmp_path)).stdout.startswith(
        "bundles (0) of spec densenet121-chestxray")  # a spec with no bundle there: an empty listing, not an error
