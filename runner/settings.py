"""What a job's process must have before its framework is imported: the environment variables each framework
reads once, at import or when it first builds its thread pools, and the CPUs the process may run on.

A thread count is real, not a hint: ``threads`` sets the variables of the BLAS and OpenMP libraries
(OMP/MKL/OpenBLAS_NUM_THREADS), each framework's own knob (XLA's CPU flags for JAX, one MXNet engine
worker so that only its OpenMP pool runs ops; TensorFlow's, PyTorch's, CNTK's and Caffe2's pools are set
by their adapters, which have an API for it), and confines the process to that many CPUs (its affinity
mask: one CPU per physical core, within one NUMA node where one has enough cores, SMT siblings only when
there are fewer cores than threads: runner.topology; the choice and the topology it rests on are recorded),
so that no framework can use more, whatever it does. A job whose ``thread_pools`` is "intra_op" (a study's
"N threads" as it set them, runner.contract) keeps the variables but is not confined: its adapter sets only the
intra-op pool. A data-parallel CPU job's ranks each get ``threads``
CPUs of their own: torch's rank processes each its share, JAX's, MXNet's and TensorFlow 2's one process (all its ranks)
``threads`` x ranks. The CPU time measured over the window then says what it did use (runner.window).

Options that a framework reads from the environment: cuDNN autotuning off (TensorFlow
TF_CUDNN_USE_AUTOTUNE=0, MXNet MXNET_CUDNN_AUTOTUNE_DEFAULT=0, JAX --xla_gpu_autotune_level=0) and true
fp32 for frameworks whose CUDA libraries would use TF32 on Ampere and later (NVIDIA_TF32_OVERRIDE=0, read
by cuBLAS and cuDNN >= 11; TensorFlow, PyTorch and JAX switch TF32 off through their own APIs).

Jobs whose settings differ cannot share a worker process (runner.worker): ``key`` tells them apart.
"""

import os

from runner import frameworks, topology

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
TF32_OVERRIDE = ("mxnet", "cntk", "caffe2")  # their CUDA libraries follow NVIDIA_TF32_OVERRIDE


def _xla_flags(job):
    flags = []
    if job["device"] == "cpu" and (job.get("ranks") or 1) > 1:  # the CPU as that many devices, for its ranks
        flags.append("--xla_force_host_platform_device_count=%d" % job["ranks"])
    if job.get("threads"):
        # XLA has no thread-count flag (and stops parsing XLA_FLAGS at a token without "--", dropping the rest):
        # its CPU pool is sized from the CPUs the process may run on, which ``cpus`` confines
        flags.append("--xla_cpu_multi_thread_eigen=%s" % ("false" if job["threads"] == 1 else "true"))
    if job["device"] == "cuda" and not job.get("cudnn_autotune", True):
        flags.append("--xla_gpu_autotune_level=0")
    return flags


def environment(job):
    """{variable: value} to set before the job's framework is imported."""
    env, framework, threads = {}, frameworks.backend(job["framework"]), job.get("threads")
    if framework != job["framework"]:  # Keras: its backend is read once, when keras is first imported
        env["KERAS_BACKEND"] = framework
        if job["device"] == "cpu":  # Keras places work on any GPU its backend sees
            env.update({"CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"})
    if threads:
        env.update((name, str(threads)) for name in THREAD_VARIABLES)
        if framework == "mxnet":
            env["MXNET_CPU_WORKER_NTHREADS"] = "1"
    if framework == "jax" and _xla_flags(job):
        env["XLA_FLAGS"] = " ".join([os.environ.get("XLA_FLAGS", "")] + _xla_flags(job)).strip()
    if job.get("ranks") is not None:  # NVLink multicast off in every rank: it can take shared GPUs out of service
        env.update(topology.NO_MULTICAST)
    if job["device"] == "cuda":
        if not job.get("cudnn_autotune", True):
            env.update(
                {"tensorflow": {"TF_CUDNN_USE_AUTOTUNE": "0"}, "mxnet": {"MXNET_CUDNN_AUTOTUNE_DEFAULT": "0"}}.get(
                    framework, {}
                )
            )
        if job.get("precision", "fp32") == "fp32" and framework in TF32_OVERRIDE:
            env["NVIDIA_TF32_OVERRIDE"] = "0"
    return env


POOL = "DLREPRO_CPU_POOL"  # the CPUs a data-parallel job's ranks are chosen from, before rank 0 confined itself


def allowed_cpus():
    """The CPUs this process may run on, sorted."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return list(range(os.cpu_count() or 1))


def _width(job):
    """(threads' worth of CPUs one process of ``job`` runs, its processes): JAX, MXNet and TensorFlow 2 run every
    rank in their one process (their records' one_process_ranks, runner.frameworks)."""
    ranks = job.get("ranks") or 1
    record = frameworks.FRAMEWORKS.get(job["framework"])
    one = bool(record and record.one_process_ranks)
    return job["threads"] * (ranks if one else 1), 1 if one else ranks


def choice(job, allowed=None, rank=0, root=topology.SYSFS):
    """(CPUs, record) for rank ``rank`` of ``job`` with ``threads``: the job's CPUs taken together by
    runner.topology.choose (every rank's, so that ranks do not share a core), then the rank's share; (None, None)
    for a job without a thread count or one that is not confined (``thread_pools`` "intra_op"). Fewer CPUs allowed
    than every rank needs: each rank the first share."""
    if not job.get("threads") or job.get("thread_pools", "all") != "all":
        return None, None
    if allowed is None:  # the ranks rank 0 starts inherit its confinement: they choose from what it could use
        pool = os.environ.get(POOL)
        allowed = [int(c) for c in pool.split(",")] if pool else allowed_cpus()
    width, processes = _width(job)
    where = topology.read(allowed, root)
    taken, rule = topology.choose(allowed, width * processes, where)
    mine = taken[rank * width : (rank + 1) * width] or taken[:width]
    return sorted(mine), topology.describe(mine, rule, where)


def cpus(job, allowed=None, rank=0):
    """The CPUs a job with ``threads`` is confined to (``choice``), or None (no limit)."""
    return choice(job, allowed, rank)[0]


def key(job):
    """What must be the same for jobs to share a process: the framework (and version), the device, the
    environment before import and the CPUs."""
    return (
        job["framework"],
        job.get("framework_version"),
        job["device"],
        tuple(sorted(environment(job).items())),
        tuple(cpus(job) or ()),
        job.get("ranks"),
        job.get("thread_pools", "all"),
    )


def record(job, rank=0):
    """What ``apply`` sets for ``job`` (rank ``rank`` of a data-parallel job), for result.json's environment:
    {"variables": {...}, "cpus": [...] or None, "requested_threads", "thread_pools" (runner.contract),
    "cpu_choice": runner.topology.describe's record or None}."""
    chosen, how = choice(job, rank=rank)
    return {
        "variables": environment(job),
        "cpus": chosen,
        "requested_threads": job.get("threads"),
        "thread_pools": job.get("thread_pools", "all"),
        "cpu_choice": how,
    }


def apply(job, rank=0):
    """Set this process's environment and CPU affinity for ``job`` (before its framework is imported); returns
    ``record(job, rank)``."""
    found = record(job, rank)
    os.environ.update(found["variables"])
    if found["cpus"] and job.get("ranks") and rank == 0:
        os.environ.setdefault(POOL, ",".join(str(c) for c in allowed_cpus()))
    if found["cpus"]:
        os.sched_setaffinity(0, found["cpus"])
    return found
