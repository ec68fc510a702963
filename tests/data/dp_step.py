"""One training step of a job on its share of one synthetic mini-batch, the trainable parameters written before and
after it (OUT.npz: before0.., after0..):
``python tests/data/dp_step.py JOB.json OUT.npz [RANK]`` (a PyTorch rank joins the job's rendezvous).

Used by tests/run/test_data_parallel.py: N ranks on shards and one rank on the whole mini-batch must end the step with
the same parameters."""

import json
import os
import sys

import numpy as np


def main(job_path, out, rank):
    from runner import data, ranks, settings

    with open(job_path) as f:
        job = json.load(f)
    settings.apply(job, rank)
    if job.get("ranks") is not None and job["framework"] in ranks.PROCESS_PER_RANK:
        os.environ.update(ranks.environment(job, rank))
    from runner import adapters

    adapter = adapters.load(job)
    adapter.build()
    before = adapter.parameters()
    # a dataset variant's job (FCN-R) steps on a synthetic batch of its model's shapes too
    x, y = data.synthetic_batch(job["model"], job["batch_size"], job["data"].get("seed", 0))
    adapter.losses([adapter.train_step(*adapter.to_device(*adapter.shard(x, y)))])
    adapter.synchronize()
    after = adapter.parameters()
    np.savez(
        out,
        **dict([("before%d" % i, p) for i, p in enumerate(before)] + [("after%d" % i, p) for i, p in enumerate(after)]),
    )
    adapter.release()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 0)
