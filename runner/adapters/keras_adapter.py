"""Keras adapter: Keras 3 on its TensorFlow, JAX or PyTorch backend (frameworks keras-tensorflow, keras-jax,
keras-torch), as DeepLearningFrameworks' Keras notebooks used it (ilkarman/DeepLearningFrameworks @ 671e2a0
notebooks/Keras_TF_CNN.ipynb, Keras_CNTK_RNN.ipynb, ...): a functional ``keras.Model`` of Keras layers,
``model.compile`` with a Keras optimizer and loss, and ``train_on_batch`` for one mini-batch (the step ``fit``
runs), in the backend's own compiled form (Keras's ``jit_compile="auto"``, recorded as resolved).

The backend is the framework's suffix; runner.settings sets KERAS_BACKEND (and the backend's own thread knobs)
before this module imports keras, so one process runs one backend. Images: channels-last (N, H, W, C) on the CPU,
Keras's default and the only layout TensorFlow's CPU convolutions take; channels-first (N, C, H, W) on GPUs, as
the notebooks set it (``K.set_image_data_format('channels_first')``). Recurrent layers are Keras's GRU
(reset_after=True: two bias sets, as cuDNN's, which Keras uses on GPUs where the backend has it).

What the DLF networks need and no more: padded convolutions are "same" where that pads symmetrically (stride 1,
kernel 2p+1) and an explicit zero padding before a "valid" one otherwise; pooling is native where Caffe's
rounding gives the same windows and padded first otherwise (``CaffePool`` of keras_pool, in keras.ops: every backend
runs
it). Weight decay is refused: Keras 3's optimizers decay apart from the gradient (another update than the specs'
L2), and a regularizer would put its term into the recorded loss. On a GPU, PyTorch's cuDNN autotuning follows the
job (``cudnn.benchmark``; TensorFlow's and XLA's switches are runner.settings'); a CPU job sees no GPU (runner.settings
hides them: Keras places work on any GPU its backend sees).
``train_on_batch`` returns the loss as a Python float, so each step waits for the device, as it does in Keras.
"""

import importlib
import os

import keras
import numpy as np

from runner import frameworks, shapes
from runner.adapters import UnsupportedError, keras_init
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets
from runner.adapters.keras_pool import CaffePool

_ACTIVATIONS = {"relu": "relu", "sigmoid": "sigmoid", "tanh": "tanh"}


class PadChannels(keras.layers.Layer):
    """Zero channels appended to reach ``filters`` (a ResNet-56 option-A shortcut)."""

    def __init__(self, extra, channels_first, **kwargs):
        super(PadChannels, self).__init__(**kwargs)
        self.pads = [[0, 0], [0, extra], [0, 0], [0, 0]] if channels_first else [[0, 0], [0, 0], [0, 0], [0, extra]]

    def call(self, x):
        return keras.ops.pad(x, self.pads)


class LastStep(keras.layers.Layer):
    """The last time step of (N, T, F): (N, F)."""

    def call(self, x):
        return x[:, -1]


class Adapter(Base):
    conv_kernel_axes, dense_kernel_axes = (0, 1, 2, 3), (0, 1)  # Keras's own
    pool_layer, pad_layer, last_step_layer = CaffePool, PadChannels, LastStep  # Keras 2's are keras2_adapter's

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.name = job["framework"]
        self.backend = keras.backend.backend()
        if frameworks.backend(self.name) != self.backend:
            raise UnsupportedError(
                "%s needs KERAS_BACKEND=%s (runner.settings); keras loaded %s"
                % (self.name, frameworks.backend(self.name), self.backend)
            )
        self.lib = importlib.import_module(self.backend)
        self._threads(job.get("threads"))
        self._fp32()
        if self.backend == "torch" and job["device"] == "cuda":
            self.lib.backends.cudnn.benchmark = bool(job.get("cudnn_autotune", True))
        if job["device"] == "cuda" and not self._gpus():
            raise UnsupportedError("the job asks for a GPU and Keras's %s backend sees none" % self.backend)
        keras.utils.set_random_seed(job.get("seed", 0))
        self.build_name = "keras %s (%s %s)" % (keras.__version__, self.backend, self.lib.__version__)
        self.channels_first = job["device"] == "cuda"
        keras.config.set_image_data_format("channels_first" if self.channels_first else "channels_last")
        self.named, self.model = {}, None

    def _threads(self, threads):
        """The backend's own thread count (JAX's is an XLA flag runner.settings sets before the import)."""
        if not threads:
            return
        if self.backend == "torch":
            self.lib.set_num_threads(threads)
        elif self.backend == "tensorflow" and self.lib.config.threading.get_intra_op_parallelism_threads() != threads:
            self.lib.config.threading.set_intra_op_parallelism_threads(threads)  # before its runtime starts only
            self.lib.config.threading.set_inter_op_parallelism_threads(threads)

    def _fp32(self):
        """Matrix products and convolutions in full FP32 (precision fp32): no TF32, which each backend would use
        on Ampere and later GPUs by its own default (cuDNN convolutions in torch, XLA's default precision)."""
        if self.backend == "torch":
            self.lib.backends.cuda.matmul.allow_tf32 = self.lib.backends.cudnn.allow_tf32 = False
        elif self.backend == "tensorflow":
            self.lib.config.experimental.enable_tensor_float_32_execution(False)
        else:
            self.lib.config.update("jax_default_matmul_precision", "highest")

    def _gpus(self):
        if self.backend == "torch":
            return self.lib.cuda.device_count()
        if self.backend == "tensorflow":
            return len(self.lib.config.list_physical_devices("GPU"))
        return len([d for d in self.lib.devices() if d.platform == "gpu"])

    def environment(self):
        threads = (
            self.lib.get_num_threads()
            if self.backend == "torch"
            else self.lib.config.threading.get_intra_op_parallelism_threads() or None
            if self.backend == "tensorflow"
            else self.job.get("threads")
        )
        cuda = cudnn = None
        if self.backend == "torch" and self.job["device"] == "cuda":
            cuda, cudnn = self.lib.version.cuda, self.lib.backends.cudnn.version()
        elif self.backend == "tensorflow":
            info = self.lib.sysconfig.get_build_info()
            cuda, cudnn = info.get("cuda_version"), info.get("cudnn_version")
        return {
            "framework": self.name,
            "framework_version": keras.__version__,
            "backend": self.backend,
            "backend_version": self.lib.__version__,
            "cuda": cuda,
            "cudnn": cudnn,
            "threads": threads,
            "jit_compile": self.model.jit_compile if self.model is not None else None,
            "layout": "NCHW" if self.channels_first else "NHWC",
            "train_step": "model.train_on_batch",
            "tf32": False,
            "cudnn_autotune": self.lib.backends.cudnn.benchmark if self.backend == "torch" and cuda else None,
            "gpus": self._gpus(),
            "xla_flags": os.environ.get("XLA_FLAGS") if self.backend == "jax" else None,
        }

    # ------------------------------------------------------------------ building

    def _initializers(self, kind):
        return keras_init.initializers(self.job["model"].get("init", {"scheme": "default"}), kind, self.name)

    def _layer(self, layer, x, shape):
        kind, cf = layer["type"], self.channels_first
        fmt = "channels_first" if cf else "channels_last"
        if kind == "conv":
            stride, pad = layer.get("stride", 1), layer.get("pad", 0)
            same = pad and stride == 1 and layer["kernel"] == 2 * pad + 1
            if pad and not same:
                x = keras.layers.ZeroPadding2D(pad, data_format=fmt)(x)
            return self._named(
                layer,
                keras.layers.Conv2D(
                    layer["filters"],
                    layer["kernel"],
                    strides=stride,
                    padding="same" if same else "valid",
                    use_bias=layer.get("bias", True),
                    data_format=fmt,
                    **self._initializers(kind),
                ),
            )(x)
        if kind in ("maxpool", "avgpool"):
            stride, pad, ceil = layer.get("stride", layer["kernel"]), layer.get("pad", 0), layer.get("ceil", False)
            if pad == 0 and all(
                shapes.pool_output(n, layer["kernel"], stride, 0, ceil)
                == shapes.pool_output(n, layer["kernel"], stride, 0, False)
                for n in shape[1:]
            ):
                cls = keras.layers.MaxPooling2D if kind == "maxpool" else keras.layers.AveragePooling2D
                return cls(layer["kernel"], stride, padding="valid", data_format=fmt)(x)
            return self.pool_layer(kind, layer["kernel"], stride, pad, ceil, shape, cf)(x)
        if kind == "global_avgpool":
            return keras.layers.GlobalAveragePooling2D(data_format=fmt)(x)
        if kind == "batchnorm":
            return self._named(
                layer,
                keras.layers.BatchNormalization(
                    axis=1 if cf and len(shape) == 3 else -1,
                    momentum=1.0 - layer.get("momentum", 0.1),
                    epsilon=layer.get("eps", 1e-5),
                ),
            )(x)
        if kind == "dense":
            return self._named(
                layer, keras.layers.Dense(layer["units"], use_bias=layer.get("bias", True), **self._initializers(kind))
            )(x)
        if kind == "dropout":
            return keras.layers.Dropout(layer["rate"])(x)
        if kind == "flatten":
            return self._flatten(fmt)(x)
        if kind in _ACTIVATIONS:
            return keras.layers.Activation(_ACTIVATIONS[kind])(x)
        if kind == "pad_channels":
            return self.pad_layer(layer["filters"] - shape[0], cf)(x)
        if kind == "residual":
            inner = shapes.apply_all(layer["body"], shape)[0]
            added = keras.layers.Add()(
                [self._apply(layer["body"], x, shape), self._apply(layer.get("shortcut", []), x, shape)]
            )
            return self._apply(layer.get("after", []), added, inner)
        if kind == "concat":
            return keras.layers.Concatenate(axis=1 if cf else -1)([x, self._apply(layer["body"], x, shape)])
        if kind == "embedding":
            return keras.layers.Embedding(layer["vocab"], layer["dim"], **self._initializers(kind))(x)
        if kind == "gru":
            for _ in range(layer.get("layers", 1)):
                x = self._gru(layer["units"])(x)
            return x
        if kind == "last_step":
            return self.last_step_layer()(x)
        raise UnsupportedError("the %s adapter has no layer type %r" % (self.name, kind))

    def _flatten(self, fmt):
        return keras.layers.Flatten(data_format=fmt)

    def _gru(self, units):
        """One GRU layer returning every step (N, T, units), cuDNN's gates (reset after the recurrent product)."""
        return keras.layers.GRU(units, return_sequences=True, **self._initializers("gru"))

    def _named(self, layer, made):
        if layer.get("name"):
            self.named[layer["name"]] = made
        return made

    def _apply(self, layers, x, shape):
        for layer, in_shape in shapes.inputs(layers, shape):
            x = self._layer(layer, x, in_shape)
        return x

    def build(self):
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        shape = tuple(model["input_shape"])
        if model.get("input_kind") == "tokens":
            inputs = keras.Input(shape=shape, dtype="int32")
        else:
            inputs = keras.Input(shape=shape if len(shape) != 3 or self.channels_first else shape[1:] + shape[:1])
        self.model = keras.Model(inputs, self._apply(layers, inputs, shape))
        opt = self.job.get("optimizer")
        if opt is not None:
            self.model.compile(optimizer=self._optimizer(opt), loss=self._loss(self.job.get("loss", {})))
        return int(sum(self._size(v) for v in self.model.trainable_weights))

    def _size(self, variable):
        return np.prod(variable.shape)

    def _optimizer(self, opt):
        if opt.get("weight_decay"):
            raise UnsupportedError(
                "the %s adapter has no L2 weight decay: Keras 3's optimizers decay the weights apart "
                "from the gradient, and a regularizer would add its term to the recorded loss" % self.name
            )
        clip = {"global_clipnorm": opt["clip_norm"]} if opt.get("clip_norm") else {}
        if opt["name"] == "sgd":
            return keras.optimizers.SGD(
                opt["lr"], momentum=opt.get("momentum", 0.0), nesterov=opt.get("nesterov", False), **clip
            )
        if opt["name"] == "adam":
            betas = opt.get("betas", (0.9, 0.999))
            return keras.optimizers.Adam(
                opt["lr"], beta_1=betas[0], beta_2=betas[1], epsilon=opt.get("eps", 1e-8), **clip
            )
        raise UnsupportedError("the %s adapter has no optimizer %r" % (self.name, opt["name"]))

    # ------------------------------------------------------------------ running

    def _input(self, x):
        if x.ndim == 4 and not self.channels_first:
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        return x.astype(np.int32) if x.dtype == np.int64 else x

    def to_device(self, x, y):
        return keras.ops.convert_to_tensor(self._input(x)), keras.ops.convert_to_tensor(
            y.astype(np.int32) if y.dtype == np.int64 else y
        )

    def train_step(self, x, y):
        return self.model.train_on_batch(x, y)

    def parameters(self):
        return [keras.ops.convert_to_numpy(v.value) for v in self.model.trainable_weights]

    def infer(self, x):
        return keras.ops.convert_to_numpy(self.model.predict_on_batch(self._input(x)))

    def release(self):
        """Drop the model and Keras's global state (layer names, compiled functions)."""
        super(Adapter, self).release()
        keras.backend.clear_session()

    def _weight_targets(self, layer):
        if isinstance(layer, keras.layers.BatchNormalization):
            return batchnorm_targets(layer.gamma, layer.beta, layer.moving_mean, layer.moving_variance)
        return kernel_targets(layer.kernel, layer.bias)

    def _set_weight(self, variable, array):
        variable.assign(array)

    def _loss(self, loss):
        """The job's loss on logits, as a Keras loss (mean over the mini-batch, and over time steps for sequences)."""
        name = _loss_name(loss, self.name)
        if name == "sigmoid_binary_cross_entropy":
            return keras.losses.BinaryCrossentropy(from_logits=True)
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def _loss_name(loss, adapter):
    """The job's loss name when a Keras adapter has it (softmax or sigmoid cross entropy, mean); raises
    UnsupportedError (naming ``adapter``) for another."""
    name = loss.get("name", "softmax_cross_entropy")
    if name == "sigmoid_binary_cross_entropy":
        return name
    if name != "softmax_cross_entropy" or loss.get("reduction", "mean") != "mean":
        raise UnsupportedError(
            "the %s adapter has no loss %s (reduction %s)" % (adapter, name, loss.get("reduction", "mean"))
        )
    return name
