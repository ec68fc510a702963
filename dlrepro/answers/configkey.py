"""The configuration key, in one home (DESIGN.md, "One home for each fact"): what makes two measurements the same
measurement. ``dlrepro compare`` (answers.regression), the site's history (answers.history) and the study matrix
(answers.matrix) read it from here.

  CONFIGURATION  the job's columns that change the measured quantity: spec, variant, framework and version, device,
                 mode, mini-batch, precision, layout (the option) and memory layout (what the adapter ran: DLF's
                 Keras 2 on CNTK and Theano was NHWC on a CPU before suite commit 687072a, NCHW since), cuDNN
                 autotune, CPU threads (cpu jobs only) and the pools they set (``thread_pools``), the gradients the
                 step computes (``gradients``: a study's step, docs/experiments.md), ranks (the GPU count of a
                 data-parallel job), the timed sample. Measurements of one configuration are one pair of ``compare``
                 and, with the device model (LINE), one line of runs in the history.
  conditions     what must match as well for a pair to be judged: the timer discipline (the tables' ``timer``:
                 device_events, pipelined_wall, host_sync) and the host fingerprint (``fingerprint``: CPU
                 model, logical CPUs, the ISA flags the runner records, GPU models and count). A pair of one
                 configuration whose conditions differ is verdicts.NOT_COMPARABLE (``not_comparable`` says why:
                 TIMER_CHANGED, OTHER_HOST), never faster or slower: two timers measure two quantities
                 (docs/gpu.md), two hosts two machines.

Pure: table rows and bundle.json bodies in, values out.
"""

CONFIGURATION = [
    "spec",
    "variant",
    "framework",
    "framework_version",
    "device",
    "mode",
    "batch_size",
    "precision",
    "layout",
    "memory_layout",
    "cudnn_autotune",
    "threads",
    "thread_pools",
    "gradients",
    "ranks",
    "sample",
]
VERSION = CONFIGURATION.index("framework_version")
LINE = CONFIGURATION + ["device_name"]  # a history's line of runs: one configuration on one device model
# frameworks set side by side (a report's and check's fastest and slowest, their timer notes): one variant, device
# model, mode and mini-batch
SIDE_BY_SIDE = ["spec", "variant", "device_name", "mode", "batch_size"]
TIMER_CHANGED = "timer changed"
OTHER_HOST = "other host"
UNRECORDED = "not recorded"  # a timer from before runner.measure recorded it, or a host record without the part


def normalised(rows):
    """Rows of a samples or summary table with the CONFIGURATION's columns made comparable: threads only for cpu
    jobs (a GPU job's host cores are not what is measured; the host fingerprint holds them); layout and
    cudnn_autotune at their defaults where a bundle from before they were recorded left them empty (it ran at the
    defaults; cuDNN only on cuda)."""
    cuda = rows["device"] == "cuda"
    rows = rows.assign(**{c: None for c in ("thread_pools", "gradients") if c not in rows})  # tables before v8
    return rows.assign(
        threads=rows["threads"].where(rows["device"] == "cpu"),
        layout=rows["layout"].fillna("default"),
        cudnn_autotune=rows["cudnn_autotune"].fillna(True).where(cuda),
    )


def timer_of(rows):
    """How the rows' iterations were timed: their ``timer`` values joined by ' + ' (several where rows of one
    configuration were timed differently), None where no row recorded one."""
    if "timer" not in rows:
        return None
    return " + ".join(sorted(set(rows["timer"].dropna()))) or None


def fingerprint(body):
    """The host fingerprint of a bundle.json body's ``host`` record, as (part, value) pairs: ('CPU', model),
    ('logical CPUs', count), ('ISA', the recorded flags sorted, space-separated: runner.environment.cpu_flags keeps
    those that decide which kernels run, e.g. avx512f, avx512_bf16, amx_tile), ('GPUs', '1 x NVIDIA H200' or
    'none'); UNRECORDED for a part the bundle lacks. Two CPUs sold under one model name with and without AVX-512
    differ in 'ISA'."""
    host = body.get("host") or {}
    cpu = host.get("cpu") or {}
    flags = cpu.get("flags")
    gpus = [g.get("name") or UNRECORDED for g in host.get("gpus") or []]
    return (
        ("CPU", cpu.get("model") or UNRECORDED),
        ("logical CPUs", str(cpu["logical_cpus"]) if cpu.get("logical_cpus") else UNRECORDED),
        ("ISA", " ".join(sorted(flags)) if flags is not None else UNRECORDED),
        ("GPUs", ", ".join("%d x %s" % (gpus.count(g), g) for g in sorted(set(gpus))) or "none"),
    )


def host_text(host):
    """'CPU AMD EPYC, logical CPUs 2, ISA avx avx2 fma, GPUs none' of a ``fingerprint``."""
    return ", ".join("%s %s" % part for part in host)


def not_comparable(timer_a, timer_b, host_a=None, host_b=None):
    """Why a pair of one CONFIGURATION cannot be judged, or None when it can: 'timer changed (host_sync ->
    device_events)' when the timers differ (None counts as UNRECORDED), 'other host (ISA avx avx2 fma -> avx avx2
    avx512_bf16 avx512f fma)' when the ``fingerprint``s differ (the parts that differ; a None host is not looked
    at), both joined by '; ' when both differ. Shown after verdicts.NOT_COMPARABLE: 'not comparable: timer changed
    (...)'."""
    why = []
    if (timer_a or UNRECORDED) != (timer_b or UNRECORDED):
        why.append("%s (%s -> %s)" % (TIMER_CHANGED, timer_a or UNRECORDED, timer_b or UNRECORDED))
    if host_a is not None and host_b is not None and host_a != host_b:
        parts = ["%s %s -> %s" % (name, a, b) for (name, a), (_, b) in zip(host_a, host_b) if a != b]
        why.append("%s (%s)" % (OTHER_HOST, "; ".join(parts)))
    return "; ".join(why) or None
