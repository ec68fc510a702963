"""Keras 2.1 adapter: DeepLearningFrameworks' Keras (ilkarman/DeepLearningFrameworks @ 671e2a0
notebooks/Keras_TF_*.ipynb, Keras_CNTK_*.ipynb, which print Keras 2.1.4 on TensorFlow 1.4.0 and CNTK 2.4; its README's
Keras(Theano) row ran Theano 1.0.1) on a backend of its time: frameworks keras-tensorflow at a 2.x version (the
TensorFlow 1.4.0 images), keras-cntk (the CNTK 2.5.1 image) and keras-theano (its own image, Theano 1.0.1). The matrix
holds Keras 2.1.5, the first 2.1 release whose GRU has ``reset_after`` (cuDNN's gates, two bias sets: the spec's GRU;
DLF's Keras(TF) notebook ran CuDNNGRU, the same cell, and its Keras(CNTK) one Keras 2.1.4's single-bias GRU, which is
another model).

The network is the Keras 3 adapter's (runner.adapters.keras_adapter: the same Keras layers, ``model.compile``,
``train_on_batch``), in Keras 2's API where it differs: layers of its own for Caffe's pooling and an RNN's last step
(Keras 2 backend functions, with the output shapes Keras 2 asks for; no zero-channel shortcut), the GRU with
``reset_after=True`` and sigmoid gates (Keras 2's default is hard_sigmoid), or CuDNNGRU on a GPU under TensorFlow as
DLF's notebook; optimizers with ``lr``; losses from the backend's ``from_logits`` functions; the backend's thread
count (a TensorFlow session's, CNTK's own; Theano's BLAS and OpenMP variables, runner.settings') and seeds. Keras 2
builds its train function (a TensorFlow graph, a CNTK function, or a Theano function whose C code g++ compiles) at
the first ``train_on_batch``. Images (N, C, H, W), as DLF's notebooks set it
(``K.set_image_data_format('channels_first')``: CNTK's and Theano's own layout), except under TensorFlow 1.4 on a CPU,
whose convolutions have (N, H, W, C) only (DLF's Keras on CNTK notebook made channels-last costs 1.256x its CPU a step:
results/study-parity-20261207/README.md). Losses on logits exact on every backend, pretrained kernels flipped
for Theano's true convolution.
"""

import importlib
import os

import keras
import numpy as np
from keras import backend as K

from runner import frameworks, shapes
from runner.adapters import UnsupportedError, keras_adapter
from runner.adapters.base import Adapter as Base

_LOWEST = -3.0e38  # a max-pooling pad cell (float32); -inf would give nan where it is multiplied by zero


def _data_format(channels_first):
    return "channels_first" if channels_first else "channels_last"


class CaffePool(keras.layers.Layer):
    """keras_adapter.CaffePool in Keras 2's backend functions (K.spatial_2d_padding pads zeros: max pooling adds
    the lowest float32 to the pad cells)."""

    def __init__(self, kind, kernel, stride, pad, ceil, in_shape, channels_first, **kwargs):
        super(CaffePool, self).__init__(**kwargs)
        self.kind, self.kernel, self.stride, self.pad = kind, kernel, stride, pad
        self.fmt = _data_format(channels_first)
        c, h, w = in_shape
        out = [shapes.pool_output(n, kernel, stride, pad, ceil) for n in (h, w)]
        self.extra = [max(0, (o - 1) * stride + kernel - n - 2 * pad) for o, n in zip(out, (h, w))]
        self.out = (c,) + tuple(out) if channels_first else tuple(out) + (c,)

    def _pad(self, x, before, after):
        return K.spatial_2d_padding(x, ((before, after[0]), (before, after[1])), data_format=self.fmt)

    def _window(self, x, mode):
        return K.pool2d(x, (self.kernel, self.kernel), (self.stride, self.stride), "valid", self.fmt, pool_mode=mode)

    def call(self, x):
        after = [self.pad + e for e in self.extra]
        if self.kind == "maxpool":
            inside = self._pad(K.ones_like(x), self.pad, after)
            return self._window(self._pad(x, self.pad, after) + (1.0 - inside) * _LOWEST, "max")
        total = self._window(self._pad(x, self.pad, after), "avg")
        counted = self._pad(K.ones_like(self._pad(x, self.pad, [self.pad, self.pad])), 0, self.extra)
        return total / self._window(counted, "avg")

    def compute_output_shape(self, input_shape):
        return (input_shape[0],) + self.out


class LastStep(keras.layers.Layer):
    """The last time step of (N, T, F): (N, F)."""

    def call(self, x):
        return K.squeeze(x[:, -1:], 1)  # CNTK's x[:, -1] keeps the indexed axis (as length 1)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


def _no_pad_channels(extra, channels_first):
    raise UnsupportedError("the Keras 2 adapter has no zero-channel shortcut (pad_channels); no DLF network has one")


class Adapter(keras_adapter.Adapter):
    pool_layer, pad_layer, last_step_layer = CaffePool, staticmethod(_no_pad_channels), LastStep

    def __init__(self, job):
        Base.__init__(self, job)
        self.name = job["framework"]
        self.backend = K.backend()
        if frameworks.backend(self.name) != self.backend:
            raise UnsupportedError(
                "%s needs KERAS_BACKEND=%s (runner.settings); keras loaded %s"
                % (self.name, frameworks.backend(self.name), self.backend)
            )
        self.lib = importlib.import_module(self.backend)
        # DLF's notebooks set channels-first on every backend; TensorFlow 1.4's CPU convolutions have channels-last only
        self.gpu = job["device"] == "cuda"
        self.channels_first = self.gpu or self.backend != "tensorflow"
        if self.gpu and not self._gpus():
            raise UnsupportedError("the job asks for a GPU and Keras's %s backend sees none" % self.backend)
        self._session(job.get("threads"), job.get("seed", 0))
        self.build_name = "keras %s (%s %s)" % (keras.__version__, self.backend, self.lib.__version__)
        K.set_image_data_format(_data_format(self.channels_first))
        self.named, self.model = {}, None

    def _session(self, threads, seed):
        """The backend's thread count and seeds (NumPy's seeds Keras 2's initializers; TensorFlow's graph seed
        its dropout). Theano's threads are its BLAS's and OpenMP's, which runner.settings sets."""
        np.random.seed(seed)
        if self.backend == "theano":
            return
        if self.backend == "cntk":
            if threads:
                self.lib.cntk_py.set_max_num_cputhreads(int(threads))
            self.lib.cntk_py.set_fixed_random_seed(seed)
            return
        tf = self.lib  # Keras 2 builds in TensorFlow's default graph (a new one after each job's clear_session)
        tf.set_random_seed(seed)
        self.config = tf.ConfigProto(
            intra_op_parallelism_threads=threads or 0, inter_op_parallelism_threads=threads or 0
        )
        K.set_session(tf.Session(config=self.config))

    def _gpus(self):
        if self.backend == "theano":  # this image's Theano has no GPU backend (libgpuarray)
            return 0
        if self.backend == "cntk":
            return len([d for d in self.lib.device.all_devices() if d.type() == self.lib.device.DeviceKind.GPU])
        from tensorflow.python.client import device_lib

        return len([d for d in device_lib.list_local_devices() if d.device_type == "GPU"])

    def environment(self):
        if self.backend == "cntk":
            threads = self.lib.cntk_py.get_max_num_cputhreads()
        elif self.backend == "theano":
            threads = int(os.environ["OPENBLAS_NUM_THREADS"]) if os.environ.get("OPENBLAS_NUM_THREADS") else None
        else:
            threads = self.config.intra_op_parallelism_threads or None
        found = {
            "framework": self.name,
            "framework_version": keras.__version__,
            "backend": self.backend,
            "backend_version": self.lib.__version__,
            "cuda": None,
            "cudnn": None,
            "threads": threads,
            "layout": "NCHW" if self.channels_first else "NHWC",
            "train_step": "model.train_on_batch",
            "gru": self._gru_kind(),
            "gpus": self._gpus(),
        }
        if self.backend == "theano":  # the compiler of its C code and the BLAS it links (empty: NumPy's C API)
            found.update(cxx=self.lib.config.cxx, blas_ldflags=self.lib.config.blas.ldflags)
        return found

    # ------------------------------------------------------------------ building

    def _flatten(self, fmt):
        return (
            keras.layers.Flatten()
        )  # Keras 2's flattens the layout it is given: (C, H, W), or (H, W, C) under TensorFlow on a CPU

    def _gru_kind(self):
        return "CuDNNGRU" if self.gpu and self.backend == "tensorflow" else "GRU(reset_after=True)"

    def _gru(self, units):
        init = self._initializers("gru")
        if self._gru_kind() == "CuDNNGRU":
            return keras.layers.CuDNNGRU(units, return_sequences=True, **init)
        return keras.layers.GRU(units, return_sequences=True, reset_after=True, recurrent_activation="sigmoid", **init)

    def _size(self, variable):
        return K.count_params(variable)

    def _optimizer(self, opt):
        """Keras 2's SGD or Adam; ``clipnorm`` clips by the global norm of all gradients in Keras 2.1
        (Optimizer.get_gradients), the specs' clip_norm."""
        if opt.get("weight_decay"):
            raise UnsupportedError(
                "the %s adapter has no L2 weight decay: a regularizer would add its term to the "
                "recorded loss" % self.name
            )
        clip = {"clipnorm": opt["clip_norm"]} if opt.get("clip_norm") else {}
        if opt["name"] == "sgd":
            return keras.optimizers.SGD(
                lr=opt["lr"], momentum=opt.get("momentum", 0.0), nesterov=opt.get("nesterov", False), **clip
            )
        if opt["name"] == "adam":
            betas = opt.get("betas", (0.9, 0.999))
            return keras.optimizers.Adam(
                lr=opt["lr"], beta_1=betas[0], beta_2=betas[1], epsilon=opt.get("eps", 1e-8), **clip
            )
        raise UnsupportedError("the %s adapter has no optimizer %r" % (self.name, opt["name"]))

    def _loss(self, loss):
        """Cross entropy on logits, averaged over the mini-batch by Keras; targets (N, 1). Keras 2's Theano backend
        (and its CNTK one for sigmoids) takes ``from_logits`` as a softmax or sigmoid, clipped to [1e-7, 1 - 1e-7],
        then a log: a loss capped near 16 with no gradient past it. So the sigmoid's is written out here, and the
        softmax's where the backend's is not exact (TensorFlow's and CNTK's are)."""
        if keras_adapter._loss_name(loss, self.name) == "sigmoid_binary_cross_entropy":
            return lambda y, z: K.mean(K.relu(z) - z * y + K.softplus(-K.abs(z)), axis=-1)
        if self.backend == "theano":
            return lambda y, z: (
                K.logsumexp(z, axis=-1)
                - K.sum(K.one_hot(K.cast(K.flatten(y), "int32"), K.int_shape(z)[-1]) * z, axis=-1)
            )
        return lambda y, z: K.sparse_categorical_crossentropy(y, z, from_logits=True)

    # ------------------------------------------------------------------ running

    def to_device(self, x, y):
        """NumPy arrays (Keras 2 feeds them at each step); targets as (N, 1) float32, the placeholder Keras makes for
        a loss of its own."""
        return self._input(x), y.reshape(len(y), -1).astype(np.float32)

    def parameters(self):
        return K.batch_get_value(self.model.trainable_weights)

    def infer(self, x):
        return self.model.predict_on_batch(self._input(x))

    def release(self):
        """Drop the model; under TensorFlow also Keras's session and graph (Keras 2's CNTK and Theano backends keep
        no session: a model's functions go with it)."""
        Base.release(self)
        if K.backend() == "tensorflow":
            K.clear_session()

    def _from_keras(self, field, array, shape):
        """Theano's conv2d (Keras 2's Theano backend) is a true convolution, which flips its kernels: pretrained
        Keras kernels are flipped once more (keras.utils.conv_utils.convert_kernel, as Keras's own applications)."""
        array = Base._from_keras(self, field, array, shape)
        if self.backend == "theano" and field == "kernel" and array.ndim == 4:
            return np.ascontiguousarray(array[::-1, ::-1])
        return array

    def _weight_shape(self, variable):
        return tuple(K.int_shape(variable))

    def _set_weight(self, variable, array):
        K.set_value(variable, array)
