"""What each framework adapter can express, readable without importing any framework: the checks that read each
framework's record (runner.frameworks).

The host uses this to declare spec/framework pairs unsupported, with the reason, before
anything runs (they are listed by `dlrepro specs --show` and in each bundle), and each
adapter raises UnsupportedError for the same layers, losses and optimizers if a job asks
anyway. Measurement options are refused by runner.job itself (``unsupported_options``)
before an adapter exists, so the adapters do not check them again.
"""

from runner import frameworks

OPTION_NOTES = {"cuda_graphs": "no adapter captures CUDA graphs yet"}
WEIGHT_FORMAT_NOTES = {"torchvision-state-dict": "torchvision's weights are a PyTorch pickle, which only torch reads"}


def _layer_types(layers):
    for layer in layers:
        yield layer["type"]
        for key in ("body", "shortcut", "after"):
            for kind in _layer_types(layer.get(key, [])):
                yield kind


def unsupported(framework, layers, loss, optimizer, weights_format):
    """Why ``framework`` (NAME, or NAME@VERSION: its era's record, runner.frameworks.of) cannot run a model of these
    (expanded) ``layers`` with this loss, optimizer name (None for inference) and weight format (None without
    weights); None if it can."""
    record = frameworks.of(framework)
    if record is None:
        return "no runner adapter for %s" % frameworks.token(framework).name
    label = record.label
    missing = sorted(set(_layer_types(layers)) - record.layers)
    if missing:
        by_note = {}
        for kind in missing:
            by_note.setdefault(record.layer_notes.get(kind), []).append(kind)
        return "the %s adapter has no layer %s" % (
            label,
            "; ".join(
                ", ".join(kinds) + (" (%s)" % note if note else "") for note, kinds in sorted(by_note.items(), key=str)
            ),
        )
    if loss not in record.losses:
        return "the %s adapter has no loss %s" % (label, loss)
    if optimizer is not None and optimizer not in record.optimizers:
        return "the %s adapter has no optimizer %s" % (label, optimizer)
    if weights_format is not None and weights_format not in record.weights:
        return "%s cannot read %s weights: %s" % (
            label,
            weights_format,
            record.weight_notes.get(weights_format) or WEIGHT_FORMAT_NOTES.get(weights_format, "no reader"),
        )
    return None


def unsupported_options(framework, job, device):
    """Why ``framework``'s adapter (NAME, or NAME@VERSION: its era's record) cannot run ``job``'s measurement
    options on ``device``, or None."""
    from runner.contract import OPTION_DEFAULTS

    record = frameworks.of(framework)
    have = record.options if record else {}
    label = record.label if record else frameworks.token(framework).name
    problems = []
    for name in ("precision", "layout", "compile", "cuda_graphs", "gradients", "thread_pools") + (
        ("cudnn_autotune",) if device == "cuda" else ()
    ):
        value = job.get(name, OPTION_DEFAULTS[name])
        if value != OPTION_DEFAULTS[name] and value not in have.get(name, ()):
            note = OPTION_NOTES.get(name)
            problems.append(
                "%s=%s (the %s adapter has %s)"
                % (name, value, label, note or ", ".join(str(v) for v in have.get(name, (OPTION_DEFAULTS[name],))))
            )
    if job.get("thread_pools", "all") != "all" and not job.get("threads"):
        problems.append(
            "thread_pools=%s without a thread count (it says how --threads is applied)" % job["thread_pools"]
        )
    if device != "cuda" and job.get("precision", "fp32") == "tf32":
        problems.append("precision=tf32 on %s (TF32 is a mode of NVIDIA GPUs' matrix units)" % device)
    compiled = (record and record.compiled) or ("torch.compile compiles it" if job.get("compile") else None)
    if job.get("mode") == "throughput" and job.get("warmup", 1) == 0 and compiled:
        problems.append(
            "warm-up 0: its first iteration compiles the training step (%s), and that would be timed" % compiled
        )
    if problems:
        return "the %s adapter cannot run %s" % (label, "; ".join(problems))
    return None


def unsupported_parallel(framework, mode):
    """Why ``framework``'s adapter (NAME, or NAME@VERSION: its era's record) cannot run a data-parallel job (the
    job's ``ranks``) in ``mode``, or None."""
    record = frameworks.of(framework)
    if record is None or record.no_data_parallel:
        return "no data-parallel training in the %s adapter: %s" % (
            record.label if record else frameworks.token(framework).name,
            record.no_data_parallel if record else "not implemented",
        )
    if mode != "throughput":
        return "data-parallel jobs time training steps (throughput mode), not %s" % mode
    return None
