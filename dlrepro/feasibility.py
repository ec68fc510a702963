"""Pre-flight: can an image run on this host? Checked before the image is built or started.

An image entry may state what its framework build needs: CPU instruction sets
(``cpu_flags``; e.g. TensorFlow's wheels use AVX since 1.6 and stop at import on a
CPU without it), and for CUDA images the minimum driver (``min_driver``) and the GPU
architectures its kernels are compiled for (``cuda_archs``, e.g. ["sm_50", ...,
"sm_86"]; a GPU outside the list could only JIT-compile PTX, which is not what the
study measured). A job whose image cannot run here is recorded as skipped with the
reason and the remedy, before any build.
"""
from dlrepro import hostinfo
from runner.environment import cpu_flags, cpu_model

REMEDY_MATRIX = "or choose another version of the framework (--framework NAME@VERSION; images/matrix.yaml)"


def _version(text):
    return tuple(int(p) for p in text.split(".") if p.isdigit())


def check(image, device, gpu=0, host=None):
    """None when ``image`` (a matrix.Image) can run here, else (reason, remedy).

    ``host``: {"cpu_flags": [...], "cpu_model": str, "gpus": hostinfo.gpus()}; this host's by default.
    """
    host = host or {"cpu_flags": cpu_flags(), "cpu_model": cpu_model(), "gpus": hostinfo.gpus()}
    missing = [flag for flag in image.cpu_flags if flag not in host["cpu_flags"]]
    if missing:
        return ("%s is built for CPUs with %s, which this CPU (%s) lacks" % (image.name, ", ".join(missing).upper(),
                                                                            host["cpu_model"]),
                "run on a CPU with %s, %s" % (", ".join(missing).upper(), REMEDY_MATRIX))
    if device != "cuda":
        return None
    found = [g for g in host["gpus"] if g["index"] == gpu]
    if not found:
        return None  # the executor's own pre-flight names the missing GPU
    card = found[0]
    if image.min_driver and _version(card["driver"]) < _version(image.min_driver):
        return ("%s (CUDA %s) needs NVIDIA driver %s or newer; this host has %s" % (image.name, image.cuda,
                                                                                   image.min_driver, card["driver"]),
                "update the driver, %s" % REMEDY_MATRIX)
    arch = "sm_" + card["capability"].replace(".", "")
    if image.cuda_archs and arch not in image.cuda_archs:
        return ("%s has no kernels for %s (%s, compute capability %s); its build ships %s"
                % (image.name, card["name"], arch, card["capability"], ", ".join(image.cuda_archs)),
                "run on a GPU the build supports, %s" % REMEDY_MATRIX)
    return None
