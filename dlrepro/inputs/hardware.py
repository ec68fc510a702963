"""Whether a job ran on a published value's hardware: the same device model, variant included, and as many GPUs.

A device name ('NVIDIA GeForce GTX 1080 Ti', 'Tesla P100-PCIE-16GB', 'Intel(R) Xeon(R) CPU E5-2630 v3 @ 2.40GHz')
becomes a model key that keeps every word naming another product: Ti / SUPER, the form factor (PCIe, SXM2,
NVL), the memory size (P100 12GB and 16GB, GTX 1060 3GB and 6GB), the Xeon version (E5-2630 v3 and v4; none:
the first generation), the suffix letters (i7-8700K, EPYC 7R13), a laptop or regional part (GTX 980M, "with Max-Q
Design", RTX 4090 D: none of them is the desktop card). Vendor words (NVIDIA, Tesla, GeForce,
Quadro, Intel, AMD, Xeon, Core) name no product and are dropped, so 'Tesla K80' and 'NVIDIA K80' are one key.
A name that leaves a variant open ('Tesla P100', 'Titan X') is not the same as one that names it: unknown is
different. EQUIVALENT lists the only real cases of one product under two names.
"""

import math
import numbers
import re

from dlrepro.inputs.references import stated_gpus

GPU_WORDS = ("nvidia", "tesla", "geforce", "gtx", "titan", "quadro", "gpu")
# one product, two names: the Maxwell GeForce GTX TITAN X (2015) and the Pascal NVIDIA TITAN X (2016), which
# dropped "GTX" and is told apart as "(Pascal)"
EQUIVALENT = {
    "gpu:gtx titan x": "gpu:titan x maxwell",
    "gpu:gtx titan x maxwell": "gpu:titan x maxwell",
    "gpu:gtx titan x pascal": "gpu:titan x pascal",
}
AMBIGUOUS = {"gpu:titan x"}  # Maxwell or Pascal: no one product

_MEMORY = r"\d+\s*gb"
# (device class, pattern, key builder); CPUs first, so that a Xeon's "v3" is not read as a GPU
PATTERNS = [
    ("cpu", r"\bi([3579])[-\s](\d{4,5}[a-z]{0,2}\d?)\b", lambda m: "core i%s-%s" % m.groups()),
    (
        "cpu",
        r"\b(e[357])-\s?(\d{4}[a-z]?)(?:\s*(v\d))?\b",
        lambda m: "xeon %s-%s%s" % (m[1], m[2], " " + m[3] if m[3] else ""),
    ),
    ("cpu", r"\b(platinum|gold|silver|bronze)\s+(\d{4}[a-z]*\+?)", lambda m: "xeon %s %s" % m.groups()),
    ("cpu", r"\bw-(\d{4,5}[a-z]*)\b", lambda m: "xeon w-%s" % m[1]),
    ("cpu", r"\bepyc\s+(\d[0-9a-z]{3,5})\b", lambda m: "epyc %s" % m[1]),
    (
        "cpu",
        r"\bryzen\s+(?:threadripper\s+)?(?:\d\s+)?(pro\s+)?(\d{4}[a-z0-9]*)\b",
        lambda m: "ryzen %s%s" % ("pro " if m[1] else "", m[2]),
    ),
    (
        "gpu",
        r"\b(gtx\s+)?titan(?:\s+(xp|x|v|z|black|rtx))?\b(?:\s*\(?(maxwell|pascal)\)?)?",
        lambda m: " ".join(w for w in ("gtx" if m[1] else None, "titan", m[2], m[3]) if w),
    ),
    (
        "gpu",
        r"\b((?:gtx|rtx|gt|mx)\s*\d{3,4}m?)\b((?:\s+(?:ti|super|laptop|mobile|max-q|ada|d|with max-q(?: design)?|%s)"
        r"(?![\w-]))*)" % _MEMORY,
        lambda m: _with_variants(re.sub(r"\s+", " ", m[1]), m[2]),
    ),
    (
        "gpu",
        r"\b((?:gh|gb|gv|[abhklmptv])\d{1,4}[a-z]?)((?:[\s-]+(?:pcie|sxm\d?|nvl|%s)\b)*)" % _MEMORY,
        lambda m: _with_variants(m[1], m[2]),
    ),
]


def _with_variants(model, variants):
    """'gtx 1080 max-q': the model and its variant words, sorted, memory sizes as '16gb'; "with ... design" around a
    Max-Q says nothing more."""
    words = sorted(
        re.sub(r"(\d+)\s*gb", r"\1gb", w)
        for w in re.findall(r"\d+\s*gb|max-q|[a-z]+\d?", variants)
        if w not in ("with", "design")
    )
    return " ".join([model] + words)


def _clean(text):
    text = re.sub(r"\((?:r|tm)\)|[®™]", " ", text.lower())
    return re.sub(r"\s+", " ", text)


def model_keys(text):
    """The model keys ('gpu:gtx 1080 ti', 'cpu:xeon e5-2630 v3') of every device a hardware text names,
    in order; ambiguous names give none."""
    text, found = _clean(text), []
    for kind, pattern, key in PATTERNS:
        for match in list(re.finditer(pattern, text)):
            name = "%s:%s" % (kind, key(match))
            found.append((match.start(), EQUIVALENT.get(name, name)))
        text = re.sub(pattern, lambda m: " " * len(m[0]), text)  # a span names one device
    return [name for _, name in sorted(found) if name not in AMBIGUOUS]


def model_key(device_name):
    """The model key of a measured device's name, or None when it names none or several."""
    keys = model_keys(device_name) if isinstance(device_name, str) else []
    return keys[0] if len(keys) == 1 else None


def reference_device(hardware):
    """The device class a reference's hardware text names: "cuda" for a GPU (GPU_WORDS, or a GPU model, and not
    "CPU-only"), else "cpu"."""
    text = hardware.lower()
    gpu = any(w in text for w in GPU_WORDS) or any(k.startswith("gpu:") for k in model_keys(hardware))
    return "cuda" if gpu and "cpu-only" not in text else "cpu"


def same_hardware(reference_hardware, device, device_name, gpus=None, ranks=None):
    """Whether a job ran on the published hardware: the same device class (a GPU reference names a GPU:
    GPU_WORDS, or a GPU model, and not "CPU-only"), the job's device model among those the reference names
    (model_key), and for a GPU job as many GPUs: ``gpus`` the reference's (None: stated_gpus, else 1),
    ``ranks`` the job's data-parallel ranks (None or NA: one GPU). Conservative: unknown means different."""
    keys = model_keys(reference_hardware)
    measured = model_key(device_name)
    if device != reference_device(reference_hardware) or measured is None or measured not in keys:
        return False
    if measured.startswith("gpu:") != (device == "cuda"):
        return False
    job_gpus = int(ranks) if isinstance(ranks, numbers.Real) and not math.isnan(ranks) else 1  # None, NaN, NA: 1
    return device != "cuda" or job_gpus == (gpus or stated_gpus(reference_hardware) or 1)
