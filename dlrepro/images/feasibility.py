"""Pre-flight: can an image run on this host? Checked before the image is built or started.

An image entry may state what its framework build needs: CPU instruction sets
(``cpu_flags``; e.g. TensorFlow's wheels use AVX since 1.6 and stop at import on a
CPU without it), and for CUDA images the minimum driver (``min_driver``) and the GPU
architectures its kernels are compiled for (``cuda_archs``: "sm_XY" for machine code,
"compute_XY" for PTX, e.g. CNTK 2.7's ["sm_30", ..., "sm_70", "compute_30", ..., "compute_70"]) where the framework
cannot report them itself (the table is the matrix; PyTorch's own list,
torch.cuda.get_arch_list(), is checked again by the runner). The rules are CUDA's
(runner.archs.judge): machine code runs on its major architecture at the same or a
newer minor; a GPU with none could only JIT-compile the PTX of an older architecture,
which is not what a study measured: such a job is refused unless --allow-ptx-jit is
given, and its result is then marked ptx_jit. A job whose image cannot run here is
recorded as skipped with the reason and the remedy, before any build.
"""

from runner import archs

REMEDY_MATRIX = "or choose another version of the framework (--framework NAME@VERSION; images/matrix.yaml)"


def _version(text):
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def check(image, device, gpu=0, host=None, allow_ptx_jit=False):
    """None when ``image`` (a matrix.Image) can run on ``host``, else (reason, remedy).

    ``gpu``: a host GPU index or a list of them (each is checked). ``host`` (required): {"cpu_flags": [...],
    "cpu_model": str, "gpus": [{index, name, driver, capability}]}, as dlrepro.plan.hostinfo.facts() gives.
    """
    if host is None:
        raise TypeError("feasibility.check needs the host's facts (dlrepro.plan.hostinfo.facts())")
    missing = [flag for flag in image.cpu_flags if flag not in host["cpu_flags"]]
    if missing:
        return (
            "%s is built for CPUs with %s, which this CPU (%s) lacks"
            % (image.name, ", ".join(missing).upper(), host["cpu_model"]),
            "run on a CPU with %s, %s" % (", ".join(missing).upper(), REMEDY_MATRIX),
        )
    if device != "cuda":
        return None
    for index in gpu if isinstance(gpu, (list, tuple)) else [gpu]:
        found = [g for g in host["gpus"] if g["index"] == index]
        if found:  # else the executor's own pre-flight names the missing GPU
            problem = _check_gpu(image, found[0], allow_ptx_jit)
            if problem is not None:
                return problem
    return None


def _check_gpu(image, card, allow_ptx_jit):
    if image.min_driver and _version(card["driver"]) < _version(image.min_driver):
        return (
            "%s (CUDA %s) needs NVIDIA driver %s or newer; this host has %s"
            % (image.name, image.cuda, image.min_driver, card["driver"]),
            "update the driver, %s" % REMEDY_MATRIX,
        )
    try:
        archs.check(image.name, card["name"], card["capability"], image.cuda_archs, allow_ptx_jit)
    except archs.Refused as exc:
        return exc.reason, exc.remedy
    return None
