"""What `dlrepro compare` and `dlrepro bundles` print (in the test's process: tests.helpers.dlrepro_here): units
in the headers, before/after by bundle id, a closing line, exit 2 on nothing in common; bundles grouped by hardware,
precision and frameworks in an 80-120 column terminal, the next step as a copyable footnote."""

import json
import shutil

import pytest

from dlrepro import REPO_ROOT
from dlrepro.cli.console import console as CONSOLE
from tests.helpers import dlrepro_here

OLD, NEW = "alexnet-20261130T041002Z-d802ef07", "alexnet-20261130T043240Z-d802ef07"  # PyTorch on an H200, b16-128
CPU = "alexnet-20261130T031432Z-74e68a2e"  # AlexNet-S b16 on 2 CPUs


def test_bundle_against_bundle_labels_before_and_after_and_closes_with_the_counts():
    done = dlrepro_here("compare", NEW, "--against", OLD)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "after %s against before %s (spec alexnet)" % (NEW, OLD) in out
    assert "before (ms)" in out and "after (ms)" in out and "Δ%" in out
    # batch sizes in numeric order, times in ms: 3.50 ms at b16 (3.499 s/1000), 14.5 ms at b128
    rows = [line for line in out.splitlines() if "PyTorch" in line]
    assert [r.split("│")[4].strip() for r in rows] == ["16", "32", "64", "128"]
    assert "3.50" in rows[0] and "3.51" in rows[0]  # the medians of the 3 repeat medians a side
    # A ran on a 16-CPU VM with one H200, B on a 32-CPU VM with two: another host (answers.configkey), so no pair is
    # judged; each row says so, the reason once as a footnote under the table, as --json's reason does
    assert [r.split("│")[-2].strip() for r in rows] == ["not comparable [1]"] * 4
    assert out.strip().splitlines()[-2:] == [
        "[1] not comparable: other host (logical CPUs 16 -> 32; GPUs 1 x NVIDIA H200 -> 2 x NVIDIA H200)",
        "0 unchanged, 0 slower, 0 faster, 4 not comparable; alpha 0.01, min effect 5%",
    ]
    # both bundles, their host and GPU, first, then what differs between the hosts
    assert out.startswith("A (before): %s (" % OLD) and "NVIDIA H200" in out.splitlines()[0]
    assert out.splitlines()[2:4] == ["differs: logical CPUs 16 / 32", "differs: GPUs 1 x NVIDIA H200 / 2 x NVIDIA H200"]


def test_two_bundles_with_nothing_in_common_exit_2():
    done = dlrepro_here("compare", CPU, "--against", OLD)
    assert done.returncode == 2
    assert (
        "share no configuration" in done.stdout
        and "0 unchanged, 0 slower, 0 faster, 4 only in A, 7 only in B" in done.stdout
    )


def test_bundles_groups_by_hardware_precision_and_frameworks_with_the_recorded_remedy(tmp_path):
    # the four H200 feature-extraction bundles of 2026-11-30, in a results folder of their own (results/ gains more)
    for found in sorted((REPO_ROOT / "results").glob("resnet50-features-20261130T*")):
        shutil.copytree(found, tmp_path / found.name)
    done = dlrepro_here("bundles", "--spec", "resnet50-features", "--results", str(tmp_path))
    assert done.returncode == 0, done.stderr
    # the skipped jobs' recorded remedy, one line each, not a resume that would skip them again; recorded as
    # `invoke datasets.fetch ...` (the checkout's spelling), shown as the dlrepro command
    assert [line.rstrip() for line in done.stdout.splitlines()] == [
        "bundles (4) of spec resnet50-features",
        "                                                                      ok/failed/",
        "bundle                                         state                     skipped  next",
        "H200 (cuda), fp32: torch",
        "  resnet50-features-20261130T041453Z-0450c065  complete, nothing ran       0/0/2  [1]",
        "  resnet50-features-20261130T043434Z-542d064b  complete                    1/0/0",
        "H200 (cuda), fp32: jax",
        "  resnet50-features-20261130T042352Z-7205b588  complete, nothing ran       0/0/1  [2]",
        "  resnet50-features-20261130T043453Z-b79498eb  complete                    1/0/0",
        "[1] dlrepro datasets.fetch resnet50-keras-v1",
        "[2] dlrepro datasets.fetch resnet50-keras-v1",
    ]
    missing = dlrepro_here("bundles", "--results", str(REPO_ROOT / "no-such-folder"))
    assert missing.returncode == 2 and "no such folder" in missing.stdout + missing.stderr


@pytest.mark.parametrize("width", [80, 100, 120])
def test_the_committed_bundles_fit_the_terminal_one_line_a_bundle(width):
    from rich.console import Console

    from dlrepro.cli import render
    from dlrepro.store import bundle

    rows = bundle.listing(REPO_ROOT / "results")
    render.console = console = Console(width=width, record=True, highlight=False, soft_wrap=True)
    try:
        render.bundles(rows)
    finally:
        render.console = CONSOLE
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert max(map(len, lines)) <= width
    table = lines[3 : -sum(1 for r in rows if r["next"])]
    ids = [line.split()[0] for line in table if line.startswith("  ") and line.split()[0] in {r["id"] for r in rows}]
    assert sorted(ids) == sorted(r["id"] for r in rows)  # every id whole on its line, each once
    headings = {line for line in table if not line.startswith(" ")}
    assert {"H200 (cuda), bf16: torch", "H200 (cuda), fp32: torch", "H200 (cuda), bf16: jax"} <= headings
    # a bundle of nothing but skipped jobs says so; at 80 columns its state takes a second line, nothing more does
    nothing = [
        r["id"] for r in rows if r["state"] == "complete" and not r["counts"]["ok"] and not r["counts"]["failed"]
    ]
    assert len(nothing) >= 6
    for found in nothing:
        (at,) = [i for i, line in enumerate(table) if line.split()[:1] == [found]]
        if width == 80:
            assert table[at].split()[1] == "complete," and table[at + 1].strip() == "nothing ran", table[at : at + 2]
        else:
            assert "  complete, nothing ran  " in table[at], table[at]
    groups = len({render._group(r) for r in rows})
    assert len(table) <= len(rows) + 2 * groups + (len(nothing) if width == 80 else 0)


def test_listing_rows_say_the_next_step_hardware_and_precision(tmp_path):
    from dlrepro.store import bundle

    rows = {r["id"]: r for r in bundle.listing(REPO_ROOT / "results")}
    assert {
        k: rows["alexnet-20261201T201858Z-76e63b6c"][k]
        for k in ("devices", "hardware", "precision", "frameworks", "next")
    } == {"devices": ["cuda"], "hardware": ["NVIDIA H200"], "precision": "bf16", "frameworks": ["torch"], "next": ""}
    assert rows[CPU]["hardware"] == ["AMD EPYC"] and rows[CPU]["frameworks"] == [
        "caffe",
        "caffe2",
        "cntk",
        "jax",
        "mxnet",
        "tensorflow",
        "torch",
    ]
    assert rows["resnet50-features-20261130T041453Z-0450c065"]["next"] == "dlrepro datasets.fetch resnet50-keras-v1"
    assert rows["fcn-20261130T014428Z-a5ac0efc"]["next"] == (
        "dlrepro run --resume fcn-20261130T014428Z-a5ac0efc --retry-failed"
    )  # 3 failed jobs, no remedy recorded
    assert rows["lstm-20261130T042215Z-78dd36b7"]["next"] == "dlrepro run --resume lstm-20261130T042215Z-78dd36b7"
    # a partial bundle whose run ended: resume it, or close it as it is
    shutil.copytree(REPO_ROOT / "results" / CPU, tmp_path / (".%s.partial" % CPU))
    body = json.loads((tmp_path / (".%s.partial" % CPU) / "bundle.json").read_text())
    (tmp_path / (".%s.partial" % CPU) / "bundle.json").write_text(json.dumps(dict(body, state="partial")))
    (row,) = bundle.listing(tmp_path)
    assert row["next"] == "dlrepro run --resume %s; or dlrepro finalize %s" % (CPU, CPU)


def test_bundles_refuses_an_unknown_spec_in_one_line_with_the_near_miss(tmp_path):
    from dlrepro.inputs import spec

    done = dlrepro_here("bundles", "--spec", "alexnt")
    assert done.returncode == 2 and done.stdout.strip().splitlines() == [
        "error: %s: no such spec (did you mean alexnet?); available: %s"
        % (REPO_ROOT / "specs" / "alexnt.yaml", ", ".join(spec.available()))
    ]
    assert dlrepro_here("bundles", "--spec", "densenet121-chestxray", "--results", str(tmp_path)).stdout.startswith(
        "bundles (0) of spec densenet121-chestxray"
    )  # a spec with no bundle there: an empty listing, not an error
