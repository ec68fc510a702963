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

from runner import frameworks, shapes
from runner.adapters import UnsupportedError, base
from runner.adapters.base import Adapter as Base, batchnorm_targets, kernel_targets
from runner.environment import cuda_device

_ACTIVATIONS = {"relu": C.relu, "sigmoid": C.sigmoid, "tanh": C.tanh}
# the reason its record gives (runner.frameworks, which may not import cntk)
RECURRENT_REASON = frameworks.FRAMEWORKS["cntk"].layer_notes["lstm"]


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
        self.named, self.model, self.trainer = {}, None, None

    def environment(self):
        device = C.device.use_default_device()
        gpu = device.type() == C.device.DeviceKind.GPU
        return {"framework": "cntk", "framework_version": C.__version__, "device": str(device),
                "cuda": "enabled" if gpu else None, "cudnn": "enabled" if gpu else None,
                "threads": C.cntk_py.get_max_num_cputhreads(), "layout": "NCHW",
                "learner_semantics": "lr on the mean-loss gradient, momentum without unit gain",
                # CNTK 2.7 bundles MKL-ML 2018, which takes its slow generic path on non-Intel CPUs unless 5 (AVX2)
                "mkl_debug_cpu_type": os.environ.get("MKL_DEBUG_CPU_TYPE")}

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
            fn = C.layers.Convolution2D((k, k), filters, strides=(s, s), pad=auto, bias=layer.get("bias", True),
                                        init=self._init(shape[0] * k * k, filters * k * k),
                                        init_bias=self._bias_init())
            out = fn(x)
        elif kind in ("maxpool", "avgpool"):
            k, s, p = layer["kernel"], layer.get("stride", layer["kernel"]), layer.get("pad", 0)
            if p > 0 and not (k % 2 == 1 and p == (k - 1) // 2):
                raise UnsupportedError("CNTK pools pad only (kernel - 1) / 2 (auto padding), not %d for %dx%d"
                                       % (p, k, k))
            kind_ = C.MAX_POOLING if kind == "maxpool" else C.AVG_POOLING
            # include_pad: averages count padding cells (PyTorch's count_include_pad); the cells a ceil
            # window reaches beyond the input are never counted, as in Caffe
            out = C.pooling(x, kind_, (k, k), strides=(s, s), auto_padding=[False, p > 0, p > 0],
                            ceil_out_dim=layer.get("ceil", False), include_pad=p > 0)
        elif kind == "global_avgpool":
            out = C.reshape(C.reduce_mean(x, axis=(1, 2)), (shape[0],))
        elif kind == "batchnorm":
            momentum = layer.get("momentum", 0.1)  # the new batch's weight per mini-batch
            batch = self.job["batch_size"]
            constant = 0 if momentum >= 1 else (float("inf") if momentum <= 0 else -batch / math.log(1.0 - momentum))
            spatial = {"map_rank": 1} if len(shape) == 3 else {}  # per channel, or per feature of a flat input
            fn = C.layers.BatchNormalization(normalization_time_constant=constant, epsilon=layer.get("eps", 1e-5),
                                             **spatial)
            out = fn(x)
        elif kind == "dense":
            if len(shape) != 1:
                raise UnsupportedError("the cntk adapter applies dense layers to flat (F,) inputs only")
            fn = C.layers.Dense(layer["units"], bias=layer.get("bias", True),
                                init=self._init(shape[0], layer["units"]), init_bias=self._bias_init())
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
        elif kind in ("embedding", "lstm", "gru", "last_step"):
            raise UnsupportedError("cntk adapter: %s" % RECURRENT_REASON)
        else:
            raise UnsupportedError("cntk adapter has no layer type %r" % kind)
        expected = shapes.apply(layer, shape)[0]
        if tuple(out.shape) != tuple(expected):
            raise UnsupportedError("CNTK's %s gives %s where the spec's arithmetic gives %s"
                                   % (kind, tuple(out.shape), tuple(expected)))
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
        if self.target == "sequence":
            raise UnsupportedError("cntk adapter: %s" % RECURRENT_REASON)
        layers = shapes.expand(model["layers"], model["input_shape"])
        self.features = C.input_variable(tuple(model["input_shape"]), np.float32, name="features")
        self.model = self._chain(layers, self.features, tuple(model["input_shape"]))
        classes = model["classes"]
        self.labels = C.input_variable((classes,), np.float32, name="labels")
        self.eye = np.eye(classes, dtype=np.float32)
        self.loss = _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}), self.model, self.labels)
        opt = self.job.get("optimizer")
        if opt:  # none for inference
            if opt.get("clip_norm"):
                raise UnsupportedError("CNTK's learners clip per sample (gradient_clipping_threshold_per_sample), "
                                       "not by the global norm that the spec asks for")
            self.trainer = C.Trainer(self.model, (self.loss, None),
                                     [_learner(self.model.parameters, opt, self.job["batch_size"])])
        return int(sum(p.value.size for p in self.model.parameters))

    def _weight_targets(self, fn):
        params = dict((p.name, p) for p in fn.parameters)
        if "scale" in params:  # batch normalization
            consts = dict((c.name, c) for c in fn.constants)
            return batchnorm_targets(params["scale"], params["bias"], consts["aggregate_mean"],
                                     consts["aggregate_variance"])
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

    def to_device(self, x, y):
        device = C.device.use_default_device()
        return (C.Value(batch=np.ascontiguousarray(x, dtype=np.float32), device=device),
                C.Value(batch=self._targets(y), device=device))

    def train_step(self, x, y):
        self.trainer.train_minibatch({self.features: x, self.labels: y})
        return self.trainer.previous_minibatch_loss_average  # CNTK's steps run synchronously

    def infer(self, x):
        return np.asarray(self.model.eval({self.features: np.ascontiguousarray(x, dtype=np.float32)}))


def _learner(parameters, opt, batch_size):
    lr = C.learning_parameter_schedule(opt["lr"])  # on the mean-loss gradient (no reference minibatch size)
    if opt["name"] == "sgd":
        momentum, wd = opt.get("momentum", 0.0), opt.get("weight_decay", 0.0)
        if opt.get("nesterov"):
            return C.nesterov(parameters, lr, C.momentum_schedule(momentum), unit_gain=False,
                              l2_regularization_weight=wd)
        if momentum:
            return C.momentum_sgd(parameters, lr, C.momentum_schedule(momentum), unit_gain=False,
                                  l2_regularization_weight=wd)
        return C.sgd(parameters, lr, l2_regularization_weight=wd)
    if opt["name"] == "adam":
        if opt.get("weight_decay"):
            raise UnsupportedError("CNTK's adam has only L2 regularisation, not the spec's weight decay")
        betas = opt.get("betas", (0.9, 0.999))
        # CNTK's adam step is lr / minibatch size (see the module docstring): scaled back to PyTorch's
        return C.adam(parameters, C.learning_parameter_schedule(opt["lr"] * batch_size), C.momentum_schedule(betas[0]),
                      unit_gain=True, variance_momentum=C.momentum_schedule(betas[1]), epsilon=opt.get("eps", 1e-8))
    raise UnsupportedError("cntk adapter has no optimizer %r" % opt["name"])


def _loss(loss, z, labels):
    """The job's per-sample loss; the trainer averages it over the mini-batch (see the torch adapter)."""
    if loss["name"] == "sigmoid_binary_cross_entropy":  # mean over labels of the logits' stable BCE
        return C.reduce_mean(C.relu(z) - z * labels + C.softplus(-C.abs(z)), axis=0)
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("cntk adapter has no loss %r" % loss["name"])
    if loss.get("reduction", "mean") != "mean":
        raise UnsupportedError("cntk adapter: %s" % RECURRENT_REASON)
    return C.cross_entropy_with_softmax(z, labels)
