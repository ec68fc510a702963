"""What each framework adapter can express, readable without importing any framework.

The host uses this to declare spec/framework pairs unsupported, with the reason, before
anything runs (they are listed by `invoke specs --show` and in each bundle), and each
adapter raises UnsupportedError for the same layers, losses and optimizers if a job asks
anyway. Measurement options are refused by runner.job itself (``unsupported_options``)
before an adapter exists, so the adapters do not check them again.
"""
from runner import shapes

ALL_LAYERS = frozenset(shapes.PRIMITIVES)
LOSSES = frozenset(["softmax_cross_entropy", "sigmoid_binary_cross_entropy"])
OPTIMIZERS = frozenset(["sgd", "adam"])
RECURRENT = frozenset(["embedding", "lstm", "gru", "last_step"])

CAPABILITIES = {
    "torch": {"layers": ALL_LAYERS, "losses": LOSSES, "optimizers": OPTIMIZERS,
              "weights": frozenset(["tfjs-layers", "torchvision-state-dict"])},
    "tensorflow": {"layers": ALL_LAYERS, "losses": LOSSES, "optimizers": OPTIMIZERS,
                   "weights": frozenset(["tfjs-layers"])},
    "mxnet": {"layers": ALL_LAYERS, "losses": LOSSES, "optimizers": OPTIMIZERS,
              "weights": frozenset(["tfjs-layers"])},
    "jax": {"layers": ALL_LAYERS, "losses": LOSSES, "optimizers": OPTIMIZERS,
            "weights": frozenset(["tfjs-layers"])},
    "cntk": {"layers": ALL_LAYERS - RECURRENT, "losses": LOSSES, "optimizers": OPTIMIZERS,
             "weights": frozenset(["tfjs-layers"]),
             "layer_notes": dict.fromkeys(RECURRENT, (
                 "CNTK's recurrent layers run over its sequence axis; carrying an LSTM's state across mini-batches "
                 "(truncated back-propagation) and cuDNN/PyTorch's GRU (reset gate after the recurrent product, two "
                 "bias sets) are not expressed by this adapter"))},
    "caffe2": {"layers": ALL_LAYERS - RECURRENT, "losses": LOSSES, "optimizers": OPTIMIZERS,
               "weights": frozenset(["tfjs-layers"]),
               "layer_notes": dict.fromkeys(RECURRENT, "Caffe2 has Gather embeddings and RecurrentNetwork LSTM/GRU "
                                                       "cells, but this adapter does not build them yet")},
    "caffe": {"layers": ALL_LAYERS - frozenset(["gru"]), "losses": LOSSES, "optimizers": OPTIMIZERS,
              "weights": frozenset(["tfjs-layers"]),
              "layer_notes": {"gru": "Caffe 1.0 has none, only RNN and LSTM"}},
}
# measurement options each adapter implements (runner.contract.OPTION_DEFAULTS); the rest take the defaults only
_ALL = {"precision": ("fp32", "tf32", "bf16", "fp16"), "layout": ("default", "channels_last"), "compile": (False, True)}
OPTIONS = {
    "torch": _ALL,
    "jax": {"precision": ("fp32", "tf32"), "layout": ("default", "channels_last")},
}
OPTION_NOTES = {"cuda_graphs": "no adapter captures CUDA graphs yet"}
WEIGHT_FORMAT_NOTES = {
    "torchvision-state-dict": "torchvision's weights are a PyTorch pickle, which only torch reads",
}


def _layer_types(layers):
    for layer in layers:
        yield layer["type"]
        for key in ("body", "shortcut", "after"):
            for kind in _layer_types(layer.get(key, [])):
                yield kind


def unsupported(framework, layers, loss, optimizer, weights_format):
    """Why ``framework`` cannot run a model of these (expanded) ``layers`` with this loss,
    optimizer name (None for inference) and weight format (None without weights); None if it can."""
    caps = CAPABILITIES.get(framework)
    if caps is None:
        return "no runner adapter for %s" % framework
    missing = sorted(set(_layer_types(layers)) - caps["layers"])
    if missing:
        notes = caps.get("layer_notes", {})
        by_note = {}
        for kind in missing:
            by_note.setdefault(notes.get(kind), []).append(kind)
        return "the %s adapter has no layer %s" % (framework, "; ".join(
            ", ".join(kinds) + (" (%s)" % note if note else "") for note, kinds in sorted(by_note.items(), key=str)))
    if loss not in caps["losses"]:
        return "the %s adapter has no loss %s" % (framework, loss)
    if optimizer is not None and optimizer not in caps["optimizers"]:
        return "the %s adapter has no optimizer %s" % (framework, optimizer)
    if weights_format is not None and weights_format not in caps["weights"]:
        return "%s cannot read %s weights: %s" % (framework, weights_format,
                                                  WEIGHT_FORMAT_NOTES.get(weights_format, "no reader"))
    return None


def unsupported_options(framework, job, device):
    """Why ``framework``'s adapter cannot run ``job``'s measurement options on ``device``, or None."""
    from runner.contract import OPTION_DEFAULTS

    have = OPTIONS.get(framework, {})
    problems = []
    for name in ("precision", "layout", "compile", "cuda_graphs"):
        value = job.get(name, OPTION_DEFAULTS[name])
        if value != OPTION_DEFAULTS[name] and value not in have.get(name, ()):
            note = OPTION_NOTES.get(name)
            problems.append("%s=%s (the %s adapter has %s)" % (
                name, value, framework, note or ", ".join(str(v) for v in have.get(name, (OPTION_DEFAULTS[name],)))))
    if device != "cuda" and job.get("precision", "fp32") == "tf32":
        problems.append("precision=tf32 on %s (TF32 is a mode of NVIDIA GPUs' matrix units)" % device)
    if problems:
        return "the %s adapter cannot run %s" % (framework, "; ".join(problems))
    return None

# the module each adapter imports its framework from (checked before a local run: dlrepro.run.executors.local)
MODULES = {"torch": "torch", "tensorflow": "tensorflow", "mxnet": "mxnet", "jax": "jax", "cntk": "cntk",
           "caffe2": "caffe2.python", "caffe": "caffe"}
