"""Executors: where the runner runs. One interface (``base.Executor``), one module per backend.

Every executor stages a group of jobs the same way (a read-only folder with plan.json and
<id>.json), starts the same supervisor (``python -m runner.supervise JOBS OUT``) and moves each
job's result.json and log.txt into the bundle, so their result files are identical in form:

- ``docker`` (``docker.py``): one container per image and group of jobs, through the engine's
  Docker API; its isolation is one pure function of the job (``docker.create_args``);
- ``local`` (``local.py``): the same supervisor in a Python on this machine;
- ``slurm`` (``slurm.py``): Slurm job arrays, one task per job, each running the docker executor's container
  (its command line made from the same ``create_args``) on the node Slurm picked.

The engine behind the containers is Docker or Podman (``dlrepro.engine``).

``prepare`` gives each executor's image for a group (a built image for containers, none locally),
so the run loop never asks which executor it has.
"""

from dlrepro.errors import ExecutorError
from dlrepro.run.executors.base import EXECUTORS, INTERRUPTED, Executor, run_on_gpus
from dlrepro.run.executors.docker import DockerExecutor
from dlrepro.run.executors.local import LocalExecutor
from dlrepro.run.executors.slurm import SlurmExecutor, collect

__all__ = [
    "EXECUTORS",
    "INTERRUPTED",
    "IN_IMAGES",
    "DockerExecutor",
    "Executor",
    "LocalExecutor",
    "SlurmExecutor",
    "collect",
    "get",
    "run_on_gpus",
]

IN_IMAGES = tuple(n for n, cls in EXECUTORS.items() if cls.in_images)  # jobs in the matrix's images: a version
# must be served


def get(name, device="cpu", gpu=0, python=None, memory=None, isolation="worker", slurm=None):
    """The executor called ``name`` (``gpu``: an index or a list of them; ``memory``: bytes per job container;
    ``isolation``: "worker" or "process"; ``slurm``: the slurm executor's {partition, options, max_parallel,
    detach}); raises ExecutorError for an unknown one, a missing engine, or Slurm settings the cluster cannot
    take."""
    if name not in EXECUTORS:
        known = sorted(EXECUTORS)
        raise ExecutorError("unknown executor %r: use %s or %s" % (name, ", ".join(known[:-1]), known[-1]))
    return EXECUTORS[name].create(device, gpu, python=python, memory=memory, isolation=isolation, slurm=slurm)
