"""CNTK adapter (CNTK 2.7, Python API): the layers library, a Trainer and CNTK's own learners.

Idioms: Convolution2D / Dense / BatchNormalization / Dropout from ``cntk.layers`` and
``C.pooling`` (which has Caffe's ceil rounding, ``ceil_out_dim``); tensors are (C, H, W)
per sample, the batch axis is CNTK's dynamic axis; the loss is a per-sample expression
and ``C.Trainer.train_minibatch`` runs forward, backward and the learner's update.
``Function.eval`` runs in inference mode (dropout off, batch normalization on its running
statistics).

Optimizer semantics, each checked against PyTorch's update on a small problem in CNTK 2.7.post2:
- SGD: ``C.momentum_sgd(..., unit_gain=False)``, as DeepLearningFrameworks' CNTK notebooks:
  v = m v + g, w -= lr v (CNTK's default unit gain would scale g by 1 - m). The learning
  rate is a ``learning_parameter_schedule`` without a reference minibatch size, so it
  applies to the gradient of the mean loss over the mini-batch, as PyTorch's mean loss
  does; l2_regularization_weight adds wd * w to that gradient, as PyTorch's weight decay.
- Nesterov: ``C.nesterov(..., unit_gain=False)`` is PyTorch's nesterov update.
- Adam: ``C.adam(..., unit_gain=True)`` moves each weight by lr / N per step of a mini-batch of N
  (its step is the gradient-scale-free Adam step divided by the mini-batch size), so the
  adapter passes lr * N to get PyTorch's (bias-corrected) Adam step.
Recurrent networks (embedding, LSTM, GRU, last step; a sequence of token ids in): runner.adapters.cntk_recurrent,
with cuDNN's cells, the state carried across mini-batches and global-norm clipping.
Padding: a convolution's symmetric pad of (kernel - 1) / 2 is CNTK's auto padding (the
kernel centred on the first input cell, checked numerically for stride 2); other pads
are explicit zero padding; every layer's CNTK output shape is checked against
runner.shapes, so a geometry CNTK cannot reproduce fails instead of passing silently.

Timed step (``train_step``): ``Trainer.train_minibatch`` (forward, backward, the learner's update) on
Values made once for a synthetic mini-batch (per step for real data, as the studies' minibatch sources
fed them), then ``previous_minibatch_loss_average``, a host float: CNTK's step has returned synchronously,
so reading it waits for nothing more. The studies' CNTK scripts called train_minibatch the same way.
"""

import math
import os

import cntk as C
import numpy as np

from runner import shapes
from runner.adapters import UnsupportedError, base, cntk_recurrent
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets
from runner.environment import cuda_device

_ACTIVATIONS = {"relu": C.relu, "sigmoid": C.sigmoid, "tanh": C.tanh}


class Adapter(Base):
    name = "cntk"
    dense_kernel_axes = base.IN_OUT  # Dense W is (in, out) as in Keras; conv kernels (out, in, kh, kw)

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.build_name = "cntk %s" % C.__version__
        if job["device"] == "cuda":
            if not any(d.type() == C.device.DeviceKind.GPU for d in C.device.all_devices()):
                raise UnsupportedError("the job asks for a GPU and CNTK sees none")
            C.device.try_set_default_device(C.device.gpu(0))
        else:
            C.device.try_set_default_device(C.device.cpu())
        if job.get("threads"):
            C.cntk_py.set_max_num_cputhreads(int(job["threads"]))
        seed = job.get("seed", 0)
        C.cntk_py.set_fixed_random_seed(seed)
        np.random.seed(seed)
        self.named, self.model, self.trainer, self.carried = {}, None, None, cntk_recurrent.Carried()

    def environment(self):
        device = C.device.use_default_device()
        gpu = device.type() == C.device.DeviceKind.GPU
        return {
            "framework": "cntk",
            "framework_version": C.__version__,
            "device": str(device),
            "cuda": "enabled" if gpu else None,
            "cudnn": "enabled" if gpu else None,
            "threads": C.cntk_py.get_max_num_cputhreads(),
            "layout": "NCHW",
            "learner_semantics": "lr on the mean-loss gradient, momentum without unit gain",
            "recurrent": "cells in CNTK ops (two bias sets; the GRU's reset after the recurrent product) under "
            "C.layers.Recurrence; stateful layers fed the previous mini-batch's final state",
            # CNTK 2.7 bundles MKL-ML 2018, which takes its slow generic path on non-Intel CPUs unless 5 (AVX2)
            "mkl_debug_cpu_type": os.environ.get("MKL_DEBUG_CPU_TYPE"),
        }

    def gpu_capability(self):
        """The GPU's name and compute capability from the CUDA driver: CNTK's device API has neither."""
        return cuda_device()

    # ------------------------------------------------------------------ building

    def _init(self, fan_in, fan_out):
        scheme = self.init["scheme"]
        if scheme == "default":
            return C.glorot_uniform()  # the layers library's default
        if scheme == "xavier":  # Caffe XavierFiller, FAN_IN: U(-a, a), a = sqrt(3 / fan_in)
            return C.uniform(math.sqrt(3.0 / fan_in))
        if scheme == "glorot_uniform":
            return C.uniform(math.sqrt(6.0 / (fan_in + fan_out)))
        if scheme == "uniform":
            return C.uniform(self.init["scale"])
        raise UnsupportedError("cntk adapter has no initialisation %r" % scheme)

    def _bias_init(self):
        return C.uniform(self.init["scale"]) if self.init["scheme"] == "uniform" else 0

    def _layer(self, layer, x, shape):
        """The CNTK node of ``layer`` applied to node ``x`` of per-sample ``shape``."""
        kind = layer["type"]
        fn = None
        if kind == "conv":
            k, s, p, filters = layer["kernel"], layer.get("stride", 1), layer.get("pad", 0), layer["filters"]
            auto = p > 0 and k % 2 == 1 and p == (k - 1) // 2
            if p > 0 and not auto:
                x = C.pad(x, pattern=[(0, 0), (p, p), (p, p)])
            fn = C.layers.Convolution2D(
                (k, k),
                filters,
                strides=(s, s),
                pad=auto,
                bias=layer.get("bias", True),
                init=self._init(shape[0] * k * k, filters * k * k),
                init_bias=self._bias_init(),
            )
            out = fn(x)
        elif kind in ("maxpool", "avgpool"):
            k, s, p = layer["kernel"], layer.get("stride", layer["kernel"]), layer.get("pad", 0)
            if p > 0 and not (k % 2 == 1 and p == (k - 1) // 2):
                raise UnsupportedError(
                    "CNTK pools pad only (kernel - 1) / 2 (auto padding), not %d for %dx%d" % (p, k, k)
                )
            kind_ = C.MAX_POOLING if kind == "maxpool" else C.AVG_POOLING
            # include_pad: averages count padding cells (PyTorch's count_include_pad); the cells a ceil
            # window reaches beyond the input are never counted, as in Caffe
            out = C.pooling(
                x,
                kind_,
                (k, k),
                strides=(s, s),
                auto_padding=[False, p > 0, p > 0],
                ceil_out_dim=layer.get("ceil", False),
                include_pad=p > 0,
            )
        elif kind == "global_avgpool":
            out = C.reshape(C.reduce_mean(x, axis=(1, 2)), (shape[0],))
        elif kind == "batchnorm":
            momentum = layer.get("momentum", 0.1)  # the new batch's weight per mini-batch
            batch = self.job["batch_size"]
            constant = 0 if momentum >= 1 else (float("inf") if momentum <= 0 else -batch / math.log(1.0 - momentum))
            spatial = {"map_rank": 1} if len(shape) == 3 else {}  # per channel, or per feature of a flat input
            fn = C.layers.BatchNormalization(
                normalization_time_constant=constant, epsilon=layer.get("eps", 1e-5), **spatial
            )
            out = fn(x)
        elif kind == "dense":
            if len(shape) != 1 and not _is_sequence(x):
                raise UnsupportedError("the cntk adapter applies dense layers to flat (F,) inputs or per time step")
            fn = C.layers.Dense(
                layer["units"],
                bias=layer.get("bias", True),
                init=self._init(shape[-1], layer["units"]),
                init_bias=self._bias_init(),
            )
            out = fn(x)
        elif kind == "dropout":
            out = C.layers.Dropout(dropout_rate=layer["rate"])(x)
        elif kind == "flatten":
            out = C.reshape(x, (int(np.prod(shape)),))
        elif kind in _ACTIVATIONS:
            out = _ACTIVATIONS[kind](x)
        elif kind == "pad_channels":
            out = C.pad(x, pattern=[(0, layer["filters"] - shape[0]), (0, 0), (0, 0)])
        elif kind == "residual":
            body = self._chain(layer["body"], x, shape)
            inner = shapes.apply_all(layer["body"], shape)[0]
            out = self._chain(layer.get("after", []), body + self._chain(layer.get("shortcut", []), x, shape), inner)
        elif kind == "concat":
            out = C.splice(x, self._chain(layer["body"], x, shape), axis=0)
        elif kind == "embedding":
            out = cntk_recurrent.embedding(layer, self._init(layer["vocab"], layer["dim"]))(x)
        elif kind in ("lstm", "gru"):
            units = layer["units"]
            out = cntk_recurrent.recurrent(
                layer, x, shape[-1], self._init(shape[-1], units), self._bias_init(), self.carried
            )
        elif kind == "last_step":
            out = C.sequence.last(x)
        else:
            raise UnsupportedError("cntk adapter has no layer type %r" % kind)
        expected = shapes.apply(layer, shape)[0]
        if _is_sequence(out):  # the time axis is CNTK's dynamic sequence axis, not in the static shape
            expected = expected[1:]
        if tuple(out.shape) != tuple(expected):
            raise UnsupportedError(
                "CNTK's %s gives %s where the spec's arithmetic gives %s" % (kind, tuple(out.shape), tuple(expected))
            )
        if layer.get("name") and fn is not None:
            self.named[layer["name"]] = fn
        return out

    def _chain(self, layers, x, shape):
        for layer, in_shape in shapes.inputs(layers, shape):
            x = self._layer(layer, x, in_shape)
        return x

    def build(self):
        model = self.job["model"]
        self.init = model.get("init", {"scheme": "default"})
        if isinstance(self.init, str):
            self.init = {"scheme": self.init}
        self.target = model.get("target", "class")
        layers = shapes.expand(model["layers"], model["input_shape"])
        # tokens: a sequence of (1,) ids (the time axis is CNTK's sequence axis; runner.adapters.cntk_recurrent)
        self.tokens = model.get("input_kind") == "tokens"
        self.features = (
            C.sequence.input_variable((1,), np.float32, name="features")
            if self.tokens
            else C.input_variable(tuple(model["input_shape"]), np.float32, name="features")
        )
        self.model = self._chain(layers, self.features, tuple(model["input_shape"]))
        classes = model["classes"]
        # per-token targets dense, as DLBench's CNTK LSTM (its labels an Input, not a SparseInput): CNTK's
        # cross_entropy_with_softmax has no CPU kernel for sparse targets
        self.labels = (
            C.sequence.input_variable(classes, np.float32, name="labels")
            if self.target == "sequence"
            else C.input_variable((classes,), np.float32, name="labels")
        )
        self.classes = classes
        self.eye = None if self.target == "sequence" else np.eye(classes, dtype=np.float32)  # dense class targets
        self.loss = _loss(
            self.job.get("loss", {"name": "softmax_cross_entropy"}),
            self.model,
            self.labels,
            model["input_shape"][0] if self.target == "sequence" else None,
        )
        # the model with the stateful layers' final states as outputs, which a step fetches and the next one feeds
        self.outputs = C.combine([self.model] + self.carried.finals) if self.carried.finals else self.model
        opt = self.job.get("optimizer")
        if opt:  # none for inference
            rows = self.job.get("rank_batch_size") or self.job["batch_size"]
            self.trainer = C.Trainer(self.outputs, (self.loss, None), [_learner(self.model.parameters, opt, rows)])
        return int(sum(p.value.size for p in self.model.parameters))

    def _weight_targets(self, fn):
        params = dict((p.name, p) for p in fn.parameters)
        if "scale" in params:  # batch normalization
            consts = dict((c.name, c) for c in fn.constants)
            return batchnorm_targets(
                params["scale"], params["bias"], consts["aggregate_mean"], consts["aggregate_variance"]
            )
        return kernel_targets(params["W"], params.get("b"))

    def _from_keras(self, field, array, shape):
        """Keras's layouts in CNTK's, where a convolution's bias is (out, 1, 1)."""
        array = super(Adapter, self)._from_keras(field, array, shape)
        return array.reshape(shape) if field == "bias" and array.size == np.prod(shape) else array

    def _set_weight(self, target, array):
        target.value = np.ascontiguousarray(array, dtype=np.float32)

    def _weights_loaded(self, layers):
        """Batch norm's running-statistics sample count (aggregate_count, not counted) to 1: the loaded statistics."""
        for fn in layers.values():
            for const in fn.constants:
                if const.name == "aggregate_count":
                    const.value = np.ones(const.shape, np.float32)

    # ------------------------------------------------------------------ running

    def _targets(self, y):
        return y.astype(np.float32) if self.target == "multilabel" else self.eye[y]

    def _features(self, x, device):
        if self.tokens:
            return C.Value.create(self.features, list(np.asarray(x, np.float32)[..., None]), device=device)
        return C.Value(batch=np.ascontiguousarray(x, dtype=np.float32), device=device)

    def to_device(self, x, y):
        device = C.device.use_default_device()
        self.rows = len(x)
        labels = (
            C.Value.create(self.labels, list(_one_hot(y, self.classes)), device=device)
            if self.target == "sequence"
            else C.Value(batch=self._targets(y), device=device)
        )
        return self._features(x, device), labels

    def reset_state(self):
        self.carried.reset()

    def train_step(self, x, y):
        arguments = {self.features: x, self.labels: y}
        if self.carried.finals:
            self.carried.keep(
                self.trainer.train_minibatch(self.carried.feed(arguments, self.rows), outputs=self.carried.finals)[1]
            )
        else:
            self.trainer.train_minibatch(arguments)
        return self.trainer.previous_minibatch_loss_average  # CNTK's steps run synchronously

    def infer(self, x):
        arguments = {self.features: self._features(x, C.device.use_default_device())}
        if not self.carried.finals:
            return np.asarray(self.model.eval(arguments))
        found = self.outputs.eval(self.carried.feed(arguments, len(x)))
        self.carried.keep(found)
        return np.asarray(found[self.model.output])


def _learner(parameters, opt, batch_size):
    """The learner of optimizer ``opt`` for a mini-batch of ``batch_size`` samples (module docstring)."""
    lr = C.learning_parameter_schedule(opt["lr"])  # on the mean-loss gradient (no reference minibatch size)
    if opt.get("clip_norm"):
        if opt["name"] != "sgd" or opt.get("momentum") or opt.get("weight_decay") or opt.get("nesterov"):
            raise UnsupportedError(
                "the cntk adapter clips by the global norm with plain SGD only (a universal "
                "learner); CNTK's own learners clip each parameter's gradient on its own"
            )
        return cntk_recurrent.clipped_sgd(parameters, opt["lr"], opt["clip_norm"], batch_size)
    if opt["name"] == "sgd":
        momentum, wd = opt.get("momentum", 0.0), opt.get("weight_decay", 0.0)
        if opt.get("nesterov"):
            return C.nesterov(
                parameters, lr, C.momentum_schedule(momentum), unit_gain=False, l2_regularization_weight=wd
            )
        if momentum:
            return C.momentum_sgd(
                parameters, lr, C.momentum_schedule(momentum), unit_gain=False, l2_regularization_weight=wd
            )
        return C.sgd(parameters, lr, l2_regularization_weight=wd)
    if opt["name"] == "adam":
        if opt.get("weight_decay"):
            raise UnsupportedError("CNTK's adam has only L2 regularisation, not the spec's weight decay")
        betas = opt.get("betas", (0.9, 0.999))
        # CNTK's adam step is lr / minibatch size (see the module docstring): scaled back to PyTorch's
        return C.adam(
            parameters,
            C.learning_parameter_schedule(opt["lr"] * batch_size),
            C.momentum_schedule(betas[0]),
            unit_gain=True,
            variance_momentum=C.momentum_schedule(betas[1]),
            epsilon=opt.get("eps", 1e-8),
        )
    raise UnsupportedError("cntk adapter has no optimizer %r" % opt["name"])


def _one_hot(y, classes):
    """(N, T) integer targets as (N, T, classes) float32 one-hot rows (numpy 1.14's API: CNTK 2.5.1's image)."""
    return (np.asarray(y, np.int64)[..., None] == np.arange(classes)).astype(np.float32)


def _is_sequence(node):
    """Whether a node has CNTK's sequence axis besides the batch axis."""
    return len(node.dynamic_axes) > 1


def _loss(loss, z, labels, steps=None):
    """The job's per-sample loss; the trainer averages it over the mini-batch (see the torch adapter). A sequence
    target (``steps`` time steps): the per-token losses summed over the sequence ("sum_over_time") or averaged
    over it ("mean", which averaged over the mini-batch too is the mean over every token)."""
    if loss["name"] == "sigmoid_binary_cross_entropy":  # mean over labels of the logits' stable BCE
        return C.reduce_mean(C.relu(z) - z * labels + C.softplus(-C.abs(z)), axis=0)
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("cntk adapter has no loss %r" % loss["name"])
    if steps is None:
        return C.cross_entropy_with_softmax(z, labels)
    summed = C.sequence.reduce_sum(C.cross_entropy_with_softmax(z, labels))
    return summed if loss.get("reduction", "mean") == "sum_over_time" else summed / float(steps)
