"""Time `dlrepro site` on the committed results (issue 57's goals on the 2-CPU machine: a full build in at most 60 s,
a rebuild after one new bundle in at most 10 s).

A copy of results/ (every committed bundle and the study records, no reports) is built twice into an empty site
folder: a full build without one bundle (HELD_BACK), then, that bundle copied in, the rebuild. Each is the CLI
(`python -m invoke site`: wall seconds, the machine's other load included, and CPU seconds, user + system of it and
its report workers), so a checkout from before --out and
incremental builds can be timed alike (--repo: its site goes to RESULTS/reports).

  python benchmarks/site_build.py [--repo CHECKOUT] [--python PYTHON]

Prints one line per build: "full build: 41.2 s wall, 70.3 s CPU (81 bundles, ...)" and "one-bundle rebuild: 3.1 s
wall, 2.9 s CPU (...)".
"""

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
HELD_BACK = "alexnet-20261202T004102Z-57aa93db"  # the third run of JAX AlexNet-S b128 on an H200


def _results(source, target):
    """A results folder at ``target``: ``source``'s bundles (HELD_BACK left out) and study records."""
    target.mkdir(parents=True)
    for folder in sorted(source.iterdir()):
        if (folder / "bundle.json").is_file() and folder.name != HELD_BACK:
            shutil.copytree(folder, target / folder.name)
    shutil.copytree(source / "studies", target / "studies")


def _site(repo, python, results, out):
    """Seconds one `site` took and its last line; --out where the checkout has it."""
    helped = subprocess.run([python, "-m", "invoke", "--help", "site"], cwd=repo, capture_output=True, text=True)
    command = [python, "-m", "invoke", "site", "--results", str(results)]
    if "--out" in helped.stdout:
        command += ["--out", str(out)]
    start, used = time.monotonic(), _cpu()
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(repo)))
    took, cpu = time.monotonic() - start, _cpu() - used
    lines = (done.stdout + done.stderr).strip().splitlines()
    if done.returncode not in (0, 1):
        sys.exit("site failed (%d): %s" % (done.returncode, "\n".join(lines[-20:])))
    return took, cpu, lines[-1] if lines else ""


def _cpu():
    """CPU seconds (user + system) of this process's finished children, their report workers included."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=HERE, help="the checkout whose `site` is timed (default: this)")
    parser.add_argument("--python", default=sys.executable, help="the interpreter with the project's packages")
    given = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        results, out = Path(scratch) / "results", Path(scratch) / "site"
        _results(HERE / "results", results)
        print("full build: %.1f s wall, %.1f s CPU (%s)" % _site(given.repo, given.python, results, out))
        shutil.copytree(HERE / "results" / HELD_BACK, results / HELD_BACK)
        print("one-bundle rebuild: %.1f s wall, %.1f s CPU (%s)" % _site(given.repo, given.python, results, out))


if __name__ == "__main__":
    main()
