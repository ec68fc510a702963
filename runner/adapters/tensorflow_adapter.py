"""TensorFlow adapter (TensorFlow 2 with Keras 3): Keras layers, training steps in graph mode.

Idioms: each training step is a ``tf.function`` (graph mode, as TensorFlow 1 ran the
studies' models), XLA off (``jit_compile=False``, recorded); channels-last (NHWC) on
the CPU, whose convolutions support no other layout, and channels-first (NCHW) on
GPUs, as DeepLearningFrameworks' TensorFlow notebooks; Keras's LSTM and GRU use the
cuDNN kernels on GPUs. Weight decay is added to the gradients (L2, as PyTorch's SGD), not
decoupled as Keras's optimizers would do it.

The timed step holds the ops the studies' TensorFlow code had and no more: a padded
convolution of stride 1 and kernel 2p+1 is a native padding="same" convolution (the
studies' code used "same"); only where "same" would pad otherwise (stride > 1, or an
even kernel: TensorFlow then pads more at the bottom and right than Caffe's symmetric
padding) is the padding an explicit op before a "valid" convolution. Pooling is native
(NCHW on GPUs, NHWC on the CPU) wherever Caffe's rounding gives the same windows as
plain "valid" pooling; only padded or ceil-rounded windows that differ, which Keras
lacks, pad the bottom and right edges first (and for averages divide by the window's
cells inside the padding, as Caffe and PyTorch do). ``environment()["ops"]`` counts
which form each layer took.

Data-parallel jobs (``job["ranks"]``): tf.distribute.MirroredStrategy over R devices of one process
(runner.adapters.tensorflow_parallel).

Counting convention: Keras's LSTM keeps one bias vector per gate set (4 x units per
layer) where cuDNN and PyTorch keep two; its GRU (reset_after=True) keeps two, as they do.
"""

import contextlib
import os

import keras
import numpy as np
import tensorflow as tf

from runner import data as datamod
from runner import shapes
from runner.adapters import UnsupportedError, base, keras_init, keras_pool, tensorflow_parallel
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets, test_metrics

_ACTIVATIONS = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh"}


class CaffePool(keras_pool.CaffePool):
    """runner.adapters.keras_pool.CaffePool in TensorFlow's ops: NCHW pooling stays NCHW on GPUs."""

    FORMATS, PADDING = ("NCHW", "NHWC"), "VALID"
    _pad, _ones = staticmethod(tf.pad), staticmethod(tf.ones)
    _max, _average = staticmethod(tf.nn.max_pool2d), staticmethod(tf.nn.avg_pool2d)


class Recurrent(keras.layers.Layer):
    """Stacked keras LSTM/GRU layers on (N, T, F); with ``stateful`` the final state feeds the next call."""

    def __init__(self, kind, layer, batch_size, initializers, **kwargs):
        super(Recurrent, self).__init__(**kwargs)
        cls = keras.layers.LSTM if kind == "lstm" else keras.layers.GRU
        self.kind, self.units, self.stateful = kind, layer["units"], layer.get("stateful", False)
        self.cells = [
            cls(self.units, return_sequences=True, return_state=True, **initializers)
            for _ in range(layer.get("layers", 1))
        ]
        per_layer = 2 if kind == "lstm" else 1
        self.state = (
            [
                tf.Variable(tf.zeros((batch_size, self.units)), trainable=False)
                for _ in range(per_layer * len(self.cells))
            ]
            if self.stateful
            else []
        )

    def call(self, x, training=False):
        per_layer = 2 if self.kind == "lstm" else 1
        for i, cell in enumerate(self.cells):
            initial = self.state[i * per_layer : (i + 1) * per_layer] or None
            out = cell(x, initial_state=[tf.identity(s) for s in initial] if initial else None, training=training)
            x, final = out[0], out[1:]
            if self.stateful:
                for var, value in zip(self.state[i * per_layer : (i + 1) * per_layer], final):
                    var.assign(value)
        return x

    def reset(self):
        for var in self.state:
            var.assign(tf.zeros_like(var))


class Net(keras.Model):
    """The layer list as a Keras model: a call walks the built operations in order.

    ``layers_made`` lists every Keras layer the operations use, so that Keras tracks
    their weights (operations may be closures around them).
    """

    def __init__(self, ops, layers_made, **kwargs):
        super(Net, self).__init__(**kwargs)
        self.ops, self.layers_made = ops, layers_made

    def call(self, x, training=False):
        return _run(self.ops, x, training)


def _run(ops, x, training):
    for kind, op in ops:
        if kind == "residual":
            body, shortcut, after = op
            x = _run(after, _run(body, x, training) + _run(shortcut, x, training), training)
        elif kind == "concat":
            body, axis = op
            x = tf.concat([x, _run(body, x, training)], axis=axis)
        elif kind in ("dropout", "batchnorm", "recurrent"):
            x = op(x, training=training)
        else:
            x = op(x)
    return x


class Adapter(Base):
    name = "tensorflow"
    conv_kernel_axes, dense_kernel_axes = base.HWIO, base.IN_OUT  # Keras's own, on every device

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        # a data-parallel job's devices, set before the runtime starts (runner.adapters.tensorflow_parallel)
        self.devices = tensorflow_parallel.configure(job) if job.get("ranks") else None
        self.mirrored = None  # their MirroredStrategy (build)
        # the process is confined to as many CPUs too, a data-parallel job's threads x ranks (runner.settings)
        threads = job.get("threads") and job["threads"] * (job.get("ranks") or 1)
        if threads and tf.config.threading.get_intra_op_parallelism_threads() != threads:
            # settable before TensorFlow's runtime starts only: a worker's later jobs have the same count
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        gpus = tf.config.list_physical_devices("GPU")
        if job["device"] == "cuda" and not gpus:
            raise UnsupportedError("the job asks for a GPU and TensorFlow sees none")
        tf.config.experimental.enable_tensor_float_32_execution(False)
        keras.utils.set_random_seed(job.get("seed", 0))
        self.device = "/GPU:0" if job["device"] == "cuda" else "/CPU:0"
        self.build_name = "tensorflow %s" % tf.__version__
        self.channels_first = job["device"] == "cuda"
        self.named, self.recurrent, self.made, self.last, self.ops = {}, [], [], None, {}

    def cuda_archs(self):
        """The architectures this TensorFlow build ships (sm_XY cubins, compute_XY PTX), as its build info says."""
        return list(tf.sysconfig.get_build_info().get("cuda_compute_capabilities") or [])

    def gpu_capability(self):
        """(GPU name, compute capability "X.Y") of the job's GPU; None on the CPU."""
        gpus = tf.config.list_physical_devices("GPU")
        if self.job["device"] != "cuda" or not gpus:
            return None
        details = tf.config.experimental.get_device_details(gpus[0])
        capability = details.get("compute_capability")
        return (details.get("device_name", "GPU"), "%d.%d" % tuple(capability)) if capability else None

    def environment(self):
        info = tf.sysconfig.get_build_info()
        return {
            "framework": "tensorflow",
            "framework_version": tf.__version__,
            "keras": keras.__version__,
            "cuda": info.get("cuda_version"),
            "cudnn": info.get("cudnn_version"),
            "threads": tf.config.threading.get_intra_op_parallelism_threads() or None,
            "inter_op_threads": tf.config.threading.get_inter_op_parallelism_threads() or None,
            "cudnn_autotune": os.environ.get("TF_CUDNN_USE_AUTOTUNE", "1") != "0" if self.channels_first else None,
            "xla": False,
            "tf32": tf.config.experimental.tensor_float_32_execution_enabled(),
            "layout": "NCHW" if self.channels_first else "NHWC",
            "ops": self.ops,
            "gpus": [d.name for d in tf.config.list_physical_devices("GPU")],
            "data_parallel": {
                "how": "tf.distribute.MirroredStrategy in one process, gradients summed by one all-reduce",
                "world_size": len(self.devices),
                "devices": self.devices,
                "all_reduce": tensorflow_parallel.ALL_REDUCE[self.job["device"]],
            }
            if self.mirrored
            else None,
        }

    # ------------------------------------------------------------------ building

    def _initializers(self, kind):
        return keras_init.initializers(self.job["model"].get("init", {"scheme": "default"}), kind, "tensorflow")

    def _count(self, what):
        self.ops[what] = self.ops.get(what, 0) + 1

    def _op(self, layer, shape):
        kind, op = self._make(layer, shape)
        for made in op if isinstance(op, tuple) else [op]:
            if isinstance(made, keras.layers.Layer):
                self.made.append(made)
        return kind, op

    def _make(self, layer, shape):
        kind, cf = layer["type"], self.channels_first
        fmt = "channels_first" if cf else "channels_last"
        axis = 1 if cf and len(shape) == 3 else -1
        if kind == "conv":
            stride, pad = layer.get("stride", 1), layer.get("pad", 0)
            same = pad and stride == 1 and layer["kernel"] == 2 * pad + 1  # "same" pads symmetrically only then
            conv = keras.layers.Conv2D(
                layer["filters"],
                layer["kernel"],
                strides=stride,
                padding="same" if same else "valid",
                use_bias=layer.get("bias", True),
                data_format=fmt,
                **self._initializers(kind),
            )
            self._name(layer, conv)
            self.made.append(conv)
            self._count("conv, padding 'same'" if same else "conv, explicit zero padding" if pad else "conv")
            if pad and not same:
                pad = keras.layers.ZeroPadding2D(pad, data_format=fmt)
                return "plain", lambda x: conv(pad(x))
            return "plain", conv
        if kind in ("maxpool", "avgpool"):
            stride, pad, ceil = layer.get("stride", layer["kernel"]), layer.get("pad", 0), layer.get("ceil", False)
            if pad == 0 and all(
                shapes.pool_output(n, layer["kernel"], stride, 0, ceil)
                == shapes.pool_output(n, layer["kernel"], stride, 0, False)
                for n in shape[1:]
            ):
                self._count("%s, native" % kind)  # nothing to pad: Caffe's rounding gives the same windows
                cls = keras.layers.MaxPooling2D if kind == "maxpool" else keras.layers.AveragePooling2D
                return "plain", cls(layer["kernel"], stride, padding="valid", data_format=fmt)
            self._count("%s, padded for Caffe's windows" % kind)
            return "plain", CaffePool(kind, layer["kernel"], stride, pad, ceil, shape, cf)
        if kind == "global_avgpool":
            return "plain", keras.layers.GlobalAveragePooling2D(data_format=fmt)
        if kind == "batchnorm":
            bn = keras.layers.BatchNormalization(
                axis=axis, momentum=1.0 - layer.get("momentum", 0.1), epsilon=layer.get("eps", 1e-5)
            )
            self._name(layer, bn)
            return "batchnorm", bn
        if kind == "dense":
            dense = keras.layers.Dense(layer["units"], use_bias=layer.get("bias", True), **self._initializers(kind))
            self._name(layer, dense)
            return "plain", dense
        if kind == "dropout":
            return "dropout", keras.layers.Dropout(layer["rate"])
        if kind == "flatten":
            return "plain", keras.layers.Flatten(data_format=fmt)
        if kind in _ACTIVATIONS:
            return "plain", keras.layers.Activation(_ACTIVATIONS[kind])
        if kind == "pad_channels":
            extra = layer["filters"] - shape[0]
            pads = [[0, 0], [0, extra], [0, 0], [0, 0]] if cf else [[0, 0], [0, 0], [0, 0], [0, extra]]
            return "plain", lambda x: tf.pad(x, pads)
        if kind == "residual":
            inner = shapes.apply_all(layer["body"], shape)[0]
            return "residual", (
                self._ops(layer["body"], shape),
                self._ops(layer.get("shortcut", []), shape),
                self._ops(layer.get("after", []), inner),
            )
        if kind == "concat":
            return "concat", (self._ops(layer["body"], shape), axis)
        if kind == "embedding":
            return "plain", keras.layers.Embedding(layer["vocab"], layer["dim"], **self._initializers(kind))
        if kind in ("lstm", "gru"):
            if layer.get("stateful") and self.devices:
                raise UnsupportedError(
                    "the tensorflow adapter carries no recurrent state per replica in a data-parallel job"
                )
            rnn = Recurrent(kind, layer, self.job["batch_size"], self._initializers(kind))
            self.recurrent.append(rnn)
            return "recurrent", rnn
        if kind == "last_step":
            return "plain", lambda x: x[:, -1]
        raise UnsupportedError("tensorflow adapter has no layer type %r" % kind)

    def _name(self, layer, op):
        if layer.get("name"):
            self.named[layer["name"]] = op

    def _ops(self, layers, shape):
        return [self._op(layer, in_shape) for layer, in_shape in shapes.inputs(layers, shape)]

    def _placed(self):
        """Where the model's variables and steps go: the strategy's scope (every replica's device) for a
        data-parallel job, the job's device otherwise."""
        return self.mirrored.scope() if self.mirrored else tf.device(self.device)

    def build(self):
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        if self.devices:
            self.mirrored = tensorflow_parallel.strategy(self.devices, self.job["device"])
        with self._placed():
            self.net = Net(self._ops(layers, tuple(model["input_shape"])), self.made)
            # one sample creates the weights (a state-carrying RNN's state is the job's mini-batch): the forward of a
            # whole mini-batch cost a parameters job 3.2 s (DenseNet-121, b16) on 2 CPUs
            rows = self.job["batch_size"] if any(rnn.stateful for rnn in self.recurrent) else 1
            self.net(self._input(datamod.synthetic_batch(model, rows, 0)[0]), training=False)
            for rnn in self.recurrent:
                rnn.reset()
        self.loss_fn = _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}))
        with self._placed() if self.mirrored else contextlib.suppress():  # the optimizer's variables mirrored too
            self._compile()
        return int(sum(np.prod(v.shape) for v in self.net.trainable_variables))

    def conventions(self):
        """Keras LSTMs have one bias vector per gate set; the spec counts two (cuDNN, PyTorch)."""
        out = []
        for rnn in self.recurrent:
            if rnn.kind == "lstm":
                out.append(
                    {
                        "name": "keras-lstm-single-bias",
                        "difference": 4 * rnn.units * len(rnn.cells),
                        "reason": "Keras's LSTM keeps one bias vector per gate set (4 x %d per layer, %d layers) "
                        "where cuDNN and PyTorch keep two" % (rnn.units, len(rnn.cells)),
                    }
                )
        return out

    def _compile(self):
        opt = self.job.get("optimizer")
        variables = self.net.trainable_variables
        if opt is None:
            self.optimizer = None
        elif opt["name"] == "sgd":
            self.optimizer = keras.optimizers.SGD(
                opt["lr"], momentum=opt.get("momentum", 0.0), nesterov=opt.get("nesterov", False)
            )
        elif opt["name"] == "adam":
            betas = opt.get("betas", (0.9, 0.999))
            self.optimizer = keras.optimizers.Adam(
                opt["lr"], beta_1=betas[0], beta_2=betas[1], epsilon=opt.get("eps", 1e-8)
            )
        else:
            raise UnsupportedError("tensorflow adapter has no optimizer %r" % opt["name"])
        if self.optimizer is not None:
            self.optimizer.build(variables)
        decay, clip = (opt or {}).get("weight_decay", 0.0), (opt or {}).get("clip_norm")

        @tf.function(jit_compile=False)
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = self.loss_fn(self.net(x, training=True), y)
            grads = tape.gradient(loss, variables)
            if decay:
                grads = [g + decay * v for g, v in zip(grads, variables)]
            if clip:
                grads, _ = tf.clip_by_global_norm(grads, clip)
            self.optimizer.apply_gradients(zip(grads, variables))
            return loss

        @tf.function(jit_compile=False)
        def forward(x):
            return self.net(x, training=False)

        self._step, self._forward = step, forward
        if self.mirrored and self.optimizer is not None:
            self._step = tensorflow_parallel.step(self.mirrored, self.net, self.loss_fn, self.optimizer, decay, clip)

    # ------------------------------------------------------------------ running

    def _input(self, x):
        if x.ndim == 4 and not self.channels_first:
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        return tf.convert_to_tensor(x)

    def to_device(self, x, y):
        """On the job's device; a data-parallel job's total mini-batch as per-replica shards on its devices."""
        if self.mirrored:
            return tensorflow_parallel.distribute(self.mirrored, self._input(x), tf.convert_to_tensor(y))
        with tf.device(self.device):
            return tf.identity(self._input(x)), tf.identity(tf.convert_to_tensor(y))

    def shard(self, x, y):
        """The whole total mini-batch: one process drives every replica, and ``to_device`` splits it."""
        return x, y

    def parameters(self):
        return [np.array(v.numpy()) for v in self.net.trainable_variables]

    def release(self):
        """Drop the model and Keras's global state (layer names, the graph's caches)."""
        super(Adapter, self).release()
        keras.backend.clear_session()

    def reset_state(self):
        for rnn in self.recurrent:
            rnn.reset()

    def train_step(self, x, y):
        if self.mirrored:  # the strategy places each replica's work
            self.last = self._step(x, y)
            return self.last
        with tf.device(self.device):
            self.last = self._step(x, y)
        return self.last

    def synchronize(self):
        if hasattr(tf.test.experimental, "sync_devices"):
            tf.test.experimental.sync_devices()
        elif self.last is not None:
            self.last.numpy()

    def infer(self, x):
        with tf.device(self.device):
            return self._forward(self._input(x)).numpy()

    def evaluate(self, batches, target):
        correct = total = 0
        loss_sum = 0.0
        for x, y in batches:
            with tf.device(self.device):
                out = self._forward(self._input(x))
            if target == "multilabel":
                loss_sum += float(tf.reduce_sum(tf.nn.sigmoid_cross_entropy_with_logits(tf.constant(y), out)))
                total += y.size
                continue
            flat = tf.reshape(out, [-1, out.shape[-1]])
            labels = tf.constant(y.reshape(-1))
            loss_sum += float(tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, flat)))
            correct += int(tf.reduce_sum(tf.cast(tf.equal(tf.argmax(flat, 1), labels), tf.int64)))
            total += labels.shape[0]
        return test_metrics(target, loss_sum, correct, total)

    def _weight_targets(self, layer):
        if isinstance(layer, keras.layers.BatchNormalization):
            return batchnorm_targets(layer.gamma, layer.beta, layer.moving_mean, layer.moving_variance)
        return kernel_targets(layer.kernel, layer.bias)  # Conv2D, Dense: bias None without use_bias

    def _set_weight(self, variable, array):
        variable.assign(array)


def _loss(loss):
    """The job's loss on logits; see the torch adapter for the reductions."""
    if loss["name"] == "sigmoid_binary_cross_entropy":
        return lambda out, y: tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(y, out))
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("tensorflow adapter has no loss %r" % loss["name"])
    per_time = loss.get("reduction", "mean") == "sum_over_time"

    def softmax(out, y):
        per = tf.nn.sparse_softmax_cross_entropy_with_logits(y, out)
        return tf.reduce_sum(per) / tf.cast(tf.shape(y)[0], per.dtype) if per_time else tf.reduce_mean(per)

    return softmax
