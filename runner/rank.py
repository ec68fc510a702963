"""One rank (>= 1) of a data-parallel job: ``python -m runner.rank JOB.json OUTDIR RANK``, started by rank 0
(runner.ranks) with the rendezvous in its environment. It runs the job as rank 0 does (the same warm-up,
repeats and barriers on its shard of each mini-batch) and writes OUTDIR/rank-<RANK>.json; it ends itself when
rank 0 is gone."""

import os
import sys

from runner import job, ranks


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: python -m runner.rank JOB.json OUTDIR RANK\n")
        return 2
    ranks.watch_rank0(os.getppid())
    result = job.run(argv[0], argv[1], rank=int(argv[2]))
    return 0 if result["status"] in ("ok", "skipped") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
