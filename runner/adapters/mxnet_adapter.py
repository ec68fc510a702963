"""MXNet adapter (MXNet 1.x, Gluon): hybridized HybridBlocks, gluon.Trainer, NCHW.

Idioms: every part of the network without carried recurrent state is a HybridBlock
and is ``hybridize()``d (static allocation and shapes, as DeepLearningFrameworks'
README lessons 13-15 say); Gluon's pooling has Caffe's ceil mode ("full" convention)
itself; rnn.LSTM / rnn.GRU are the fused (cuDNN on GPUs) kernels, with two bias
vectors per gate set as PyTorch; token ids enter embeddings as float32, as Gluon
expects; the loss is the batch mean and ``Trainer.step(1)`` does not rescale it.

Runs on MXNet 1.9.1 and on 0.12.0 (the version DeepLearningFrameworks measured, Nov 2017).
The few 0.12 differences are the ``_LEGACY_*`` branches below, each named by what the old
Gluon lacks; the models they build have the same parameters.

Timed step (``train_step``): autograd.record around forward and loss, backward, ``Trainer.step(1)``,
as DeepLearningFrameworks' Gluon notebooks; gradient clipping only where the spec asks. The loss stays an
NDArray (MXNet's engine runs asynchronously; the repeat's end waits with ``mx.nd.waitall``).

Data-parallel (``job["ranks"]`` = R, runner.ranks): one process drives R contexts (GPUs 0..R-1, or R CPU contexts
of the one CPU), as DLBench's MXNet scripts did with several --gpus: the parameters are initialised once and copied
to each, the total mini-batch is split into R equal shards (rank r: rows r*b .. (r+1)*b), each context runs forward
and backward on its shard's mean loss, and the Trainer's kvstore ("device", DLBench's default) sums the gradients,
which ``step(R)`` divides by R: the mean-loss gradient of the whole mini-batch. With gradient clipping (MXNet >= 1.3)
the gradients are all-reduced first, clipped at R x the norm (the sum's norm), then applied.
"""

import os
import re

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon
from mxnet.gluon import nn
from mxnet.gluon import rnn as grnn

from runner import shapes
from runner.adapters import UnsupportedError
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets, test_metrics
from runner.environment import cuda_device

MX_VERSION = tuple(int(v) for v in re.match(r"(\d+)\.(\d+)", mx.__version__).groups())
# MXNet < 1.3: hybridize() takes no static_alloc / static_shape (CachedOp without static memory planning).
_LEGACY_HYBRIDIZE = MX_VERSION < (1, 3)
# MXNet < 1.3: rnn.LSTM / rnn.GRU are plain Blocks (not hybridizable; on the CPU they run as unrolled
# LSTMCell / GRUCell steps, fused only on GPUs), so they split the net into hybridized segments.
_LEGACY_RNN = not issubclass(grnn.LSTM, gluon.HybridBlock)
# MXNet < 1.3: avg pooling always counts the padding (Caffe's way) and takes no count_include_pad.
_LEGACY_AVGPOOL = MX_VERSION < (1, 3)


def _children(block):
    """A block's child blocks: a list in MXNet < 1.3, a name -> block dict after."""
    children = block._children
    return list(children.values()) if isinstance(children, dict) else list(children)


def _gpus():
    if hasattr(mx.context, "num_gpus"):
        return mx.context.num_gpus()
    try:  # MXNet < 1.3 has no num_gpus(): try to place an array on GPU 0
        mx.nd.zeros((1,), ctx=mx.gpu(0)).wait_to_read()
        return 1
    except mx.base.MXNetError:
        return 0


class Residual(gluon.HybridBlock):
    def __init__(self, body, shortcut, after, **kwargs):
        super(Residual, self).__init__(**kwargs)
        with self.name_scope():
            self.body, self.shortcut, self.after = body, shortcut, after

    def hybrid_forward(self, F, x):
        return self.after(self.body(x) + self.shortcut(x))


class Concat(gluon.HybridBlock):
    def __init__(self, body, **kwargs):
        super(Concat, self).__init__(**kwargs)
        with self.name_scope():
            self.body = body

    def hybrid_forward(self, F, x):
        return F.concat(x, self.body(x), dim=1)


class PadChannels(gluon.HybridBlock):
    """Zero channels appended: (C, H, W) -> (C + extra, H, W)."""

    def __init__(self, channels, extra, **kwargs):
        super(PadChannels, self).__init__(**kwargs)
        self.channels, self.extra = channels, extra

    def hybrid_forward(self, F, x):
        zeros = F.zeros_like(x)
        pieces = [zeros] * (self.extra // self.channels)
        if self.extra % self.channels:
            pieces.append(F.slice_axis(zeros, axis=1, begin=0, end=self.extra % self.channels))
        return F.concat(x, *pieces, dim=1)


class LastStep(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        # (N, 1, C) -> (N, C) by reshape: MXNet 0.12 has no squeeze operator
        return F.reshape(F.slice_axis(x, axis=1, begin=-1, end=None), shape=(0, -1))


class Identity(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x


class Stateful(gluon.Block):
    """A recurrent layer whose final state feeds the next call (truncated back-propagation)."""

    def __init__(self, layer, **kwargs):
        super(Stateful, self).__init__(**kwargs)
        with self.name_scope():
            self.layer = layer
        self.state = {}  # by context: a data-parallel job's contexts each carry their own shard's

    def forward(self, x):
        if x.context not in self.state:
            self.state[x.context] = self.layer.begin_state(batch_size=x.shape[0], ctx=x.context)
        out, state = self.layer(x, self.state[x.context])
        self.state[x.context] = [s.detach() for s in state]
        return out


class Chain(gluon.Block):
    """Hybridized segments and stateful recurrent layers, applied in order."""

    def __init__(self, parts, **kwargs):
        super(Chain, self).__init__(**kwargs)
        with self.name_scope():
            for i, part in enumerate(parts):
                if isinstance(self._children, dict):
                    self.register_child(part, "part%d" % i)
                else:  # MXNet < 1.3: register_child(block) takes no name
                    self.register_child(part)
        self.parts = parts

    def forward(self, x):
        for part in self.parts:
            x = part(x)
        return x


def _env_int(name):
    """An integer setting MXNet read from the environment at import (runner.settings), or None: its default."""
    value = os.environ.get(name)
    return int(value) if value and value.isdigit() else None


class Adapter(Base):
    name = "mxnet"

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.build_name = "mxnet %s" % mx.__version__
        if job["device"] == "cuda" and _gpus() < 1:
            raise UnsupportedError("the job asks for a GPU and MXNet sees none")
        ranks = job.get("ranks")
        if ranks and job["device"] == "cuda" and _gpus() < ranks:
            raise UnsupportedError("the job has %d ranks and MXNet sees %d GPUs" % (ranks, _gpus()))
        self.ctxs = [(mx.gpu if job["device"] == "cuda" else mx.cpu)(i) for i in range(ranks or 1)]
        self.ctx = self.ctxs[0]
        mx.random.seed(job.get("seed", 0))
        np.random.seed(job.get("seed", 0))
        self.named, self.stateful = {}, []

    def environment(self):
        if hasattr(mx, "runtime"):
            features = mx.runtime.Features()
            enabled = [
                f
                for f in ("CUDA", "CUDNN", "NCCL", "MKLDNN", "BLAS_OPEN", "OPENMP", "CPU_AVX2")
                if features.is_enabled(f)
            ]
        else:  # MXNet < 1.5 cannot report its build features
            enabled = None
        gpu = bool(enabled and "CUDA" in enabled) or (enabled is None and self.job["device"] == "cuda")
        return {
            "framework": "mxnet",
            "framework_version": mx.__version__,
            "features": enabled,
            "cuda": "enabled" if gpu else None,
            "cudnn": "enabled" if enabled and "CUDNN" in enabled else None,
            "threads": _env_int("OMP_NUM_THREADS"),
            "engine_workers": _env_int("MXNET_CPU_WORKER_NTHREADS"),
            "cudnn_autotune": os.environ.get("MXNET_CUDNN_AUTOTUNE_DEFAULT", "1") != "0"
            if self.job["device"] == "cuda"
            else None,
            "tf32_override": os.environ.get("NVIDIA_TF32_OVERRIDE"),
            "hybridized": True,
            "layout": "NCHW",
            "static_alloc": not _LEGACY_HYBRIDIZE,
            "rnn_hybridized": not _LEGACY_RNN,
            "data_parallel": {
                "how": "one process over several contexts, gradients summed by the kvstore",
                "kvstore": "device",
                "world_size": len(self.ctxs),
                "contexts": [str(c) for c in self.ctxs],
            }
            if self.job.get("ranks")
            else None,
        }

    def gpu_capability(self):
        """The GPU's name and compute capability from the CUDA driver: MXNet does not name its GPUs."""
        return cuda_device()

    # ------------------------------------------------------------------ building

    def _block(self, layer, shape):
        kind = layer["type"]
        if kind == "conv":
            b = nn.Conv2D(
                layer["filters"],
                layer["kernel"],
                strides=layer.get("stride", 1),
                padding=layer.get("pad", 0),
                use_bias=layer.get("bias", True),
                in_channels=shape[0],
            )
        elif kind in ("maxpool", "avgpool"):
            cls = nn.MaxPool2D if kind == "maxpool" else nn.AvgPool2D
            kwargs = {"count_include_pad": True} if kind == "avgpool" and not _LEGACY_AVGPOOL else {}
            b = cls(
                layer["kernel"],
                strides=layer.get("stride", layer["kernel"]),
                padding=layer.get("pad", 0),
                ceil_mode=layer.get("ceil", False),
                **kwargs,
            )
        elif kind == "global_avgpool":
            b = nn.HybridSequential()
            b.add(nn.GlobalAvgPool2D(), nn.Flatten())
        elif kind == "batchnorm":
            b = nn.BatchNorm(
                axis=1, momentum=1.0 - layer.get("momentum", 0.1), epsilon=layer.get("eps", 1e-5), in_channels=shape[0]
            )
        elif kind == "dense":
            b = nn.Dense(layer["units"], use_bias=layer.get("bias", True), flatten=len(shape) == 1, in_units=shape[-1])
        elif kind == "dropout":
            b = nn.Dropout(layer["rate"])
        elif kind == "flatten":
            b = nn.Flatten()
        elif kind in ("relu", "sigmoid", "tanh"):
            b = nn.Activation(kind)
        elif kind == "pad_channels":
            b = PadChannels(shape[0], layer["filters"] - shape[0])
        elif kind == "residual":
            inner = shapes.apply_all(layer["body"], shape)[0]
            b = Residual(
                self._hybrid(layer["body"], shape),
                self._hybrid(layer.get("shortcut", []), shape),
                self._hybrid(layer.get("after", []), inner),
            )
        elif kind == "concat":
            b = Concat(self._hybrid(layer["body"], shape))
        elif kind == "embedding":
            b = nn.Embedding(layer["vocab"], layer["dim"])
        elif kind in ("lstm", "gru"):
            cls = grnn.LSTM if kind == "lstm" else grnn.GRU
            b = cls(layer["units"], num_layers=layer.get("layers", 1), layout="NTC", input_size=shape[-1])
        elif kind == "last_step":
            b = LastStep()
        else:
            raise UnsupportedError("mxnet adapter has no layer type %r" % kind)
        if layer.get("name"):
            self.named[layer["name"]] = b
        return b

    def _hybrid(self, layers, shape):
        seq = nn.HybridSequential()
        if not layers:
            seq.add(Identity())
        for layer, in_shape in shapes.inputs(layers, shape):
            seq.add(self._block(layer, in_shape))
        return seq

    def build(self):
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        parts, segment, shape, start = [], [], tuple(model["input_shape"]), tuple(model["input_shape"])
        # stateful (and, before MXNet 1.3, all) recurrent layers split the net into hybridized segments
        for layer in layers:
            if layer.get("stateful") or (_LEGACY_RNN and layer["type"] in ("lstm", "gru")):
                if segment:
                    parts.append(self._hybrid(segment, start))
                block = self._block(layer, shape)
                if layer.get("stateful"):
                    block = Stateful(block)
                    self.stateful.append(block)
                parts.append(block)
                segment, start = [], shapes.apply(layer, shape)[0]
            else:
                segment.append(layer)
            shape = shapes.apply(layer, shape)[0]
        if segment:
            parts.append(self._hybrid(segment, start))
        self.net = Chain(parts)
        self._initialize(model.get("init", {"scheme": "default"}))
        for part in parts:
            if isinstance(part, gluon.HybridBlock):
                if _LEGACY_HYBRIDIZE:
                    part.hybridize()
                else:
                    part.hybridize(static_alloc=True, static_shape=True)
        opt = self.job.get("optimizer")
        if opt:
            name, settings = _optimizer(opt)
            self.clip_norm = opt.get("clip_norm")
            if len(self.ctxs) > 1 and self.clip_norm and _LEGACY_HYBRIDIZE:
                raise UnsupportedError(
                    "MXNet < 1.3's Trainer cannot all-reduce gradients before an update "
                    "(allreduce_grads), which clipping a data-parallel step needs"
                )
            # several contexts: the kvstore sums their gradients (with clipping: all-reduced, then updated apart)
            extra = {"kvstore": "device"} if len(self.ctxs) > 1 else {}
            if len(self.ctxs) > 1 and self.clip_norm:
                extra["update_on_kvstore"] = False
            self.trainer = gluon.Trainer(self.net.collect_params(), name, settings, **extra)
        self.loss_fn = _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}))
        return int(sum(p.data().size for p in self.net.collect_params().values() if p.grad_req != "null"))

    def _initialize(self, init):
        scheme = init["scheme"]
        self.net.initialize(mx.init.Uniform(0.07), ctx=self.ctxs)  # Gluon's default
        params = self.net.collect_params().values()
        if scheme == "uniform":
            for p in params:
                if p.grad_req != "null":
                    p.initialize(init=mx.init.Uniform(init["scale"]), ctx=self.ctxs, force_reinit=True)
        elif scheme in ("xavier", "glorot_uniform"):
            factor = "in" if scheme == "xavier" else "avg"  # U(-a, a), a = sqrt(3 / factor)
            for block in self._conv_and_dense():
                block.weight.initialize(init=mx.init.Xavier("uniform", factor, 3), ctx=self.ctxs, force_reinit=True)
                if block.bias is not None:
                    block.bias.initialize(init=mx.init.Zero(), ctx=self.ctxs, force_reinit=True)
        elif scheme != "default":
            raise UnsupportedError("mxnet adapter has no initialisation %r" % scheme)

    def _conv_and_dense(self):
        found = []

        def walk(block):
            if isinstance(block, (nn.Conv2D, nn.Dense)):
                found.append(block)
            for child in _children(block):
                walk(child)

        walk(self.net)
        return found

    # ------------------------------------------------------------------ running

    def _array(self, x):
        return mx.nd.array(x, ctx=self.ctx, dtype="float32")

    def to_device(self, x, y):
        """On the job's device; a data-parallel job's total mini-batch as a list of its ranks' shards, one per
        context (rank r: rows r*b .. (r+1)*b, as runner.adapters.base ``shard``)."""
        dtype = "float32" if y.dtype != np.float32 else y.dtype
        if len(self.ctxs) > 1:
            b = len(x) // len(self.ctxs)
            return (
                [mx.nd.array(x[r * b : (r + 1) * b], ctx=c, dtype="float32") for r, c in enumerate(self.ctxs)],
                [mx.nd.array(y[r * b : (r + 1) * b], ctx=c, dtype=dtype) for r, c in enumerate(self.ctxs)],
            )
        return self._array(x), mx.nd.array(y, ctx=self.ctx, dtype=dtype)

    def shard(self, x, y):
        """The whole total mini-batch: one process drives every rank's context, and ``to_device`` splits it."""
        return x, y

    def parameters(self):
        return [p.data(self.ctx).asnumpy() for p in self.net.collect_params().values() if p.grad_req != "null"]

    def release(self):
        """Finish MXNet's queued work, then drop the model."""
        mx.nd.waitall()
        super(Adapter, self).release()

    def reset_state(self):
        for stateful in self.stateful:
            stateful.state = {}

    def train_step(self, x, y):
        if len(self.ctxs) > 1:
            return self._parallel_step(x, y)
        with autograd.record():
            loss = self.loss_fn(self.net(x), y)
        loss.backward()
        if self.clip_norm:
            grads = [p.grad(self.ctx) for p in self.net.collect_params().values() if p.grad_req != "null"]
            gluon.utils.clip_global_norm(grads, self.clip_norm)
        self.trainer.step(1)
        return loss

    def _parallel_step(self, xs, ys):
        """The data-parallel step (module docstring) on the shards ``xs``, ``ys`` (one per context); returns the
        shards' mean losses."""
        with autograd.record():
            losses = [self.loss_fn(self.net(x), y) for x, y in zip(xs, ys)]
        autograd.backward(losses)
        ranks = len(self.ctxs)
        if self.clip_norm:
            self.trainer.allreduce_grads()
            for ctx in self.ctxs:
                grads = [p.grad(ctx) for p in self.net.collect_params().values() if p.grad_req != "null"]
                gluon.utils.clip_global_norm(grads, self.clip_norm * ranks)
            self.trainer.update(ranks)
        else:
            self.trainer.step(ranks)
        return losses

    def synchronize(self):
        mx.nd.waitall()

    def losses(self, handles):
        """Floats of the step losses; a data-parallel step's: the mean of its equal shards' mean losses."""
        return [
            float(np.mean([s.asscalar() for s in h])) if isinstance(h, list) else float(h.asscalar()) for h in handles
        ]

    def infer(self, x):
        return self.net(self._array(x)).asnumpy()

    def evaluate(self, batches, target):
        correct = total = 0
        loss_sum = 0.0
        for x, y in batches:
            out = self.net(self._array(x))
            yd = mx.nd.array(y, ctx=self.ctx)
            if target == "multilabel":
                loss_sum += float(_bce(out, yd).sum().asscalar())
                total += y.size
                continue
            flat, labels = out.reshape((-1, out.shape[-1])), yd.reshape((-1,))
            loss_sum += float(_nll(flat, labels).sum().asscalar())
            correct += int((flat.argmax(axis=1) == labels).sum().asscalar())
            total += labels.shape[0]
        return test_metrics(target, loss_sum, correct, total)

    def _weight_targets(self, block):
        if isinstance(block, nn.BatchNorm):
            return batchnorm_targets(block.gamma, block.beta, block.running_mean, block.running_var)
        if isinstance(block, (nn.Conv2D, nn.Dense)):
            return kernel_targets(block.weight, block.bias)
        return None

    def _set_weight(self, param, array):
        param.set_data(mx.nd.array(array, ctx=self.ctx))


def _optimizer(opt):
    if opt["name"] == "sgd":
        name = "nag" if opt.get("nesterov") else "sgd"
        return name, {
            "learning_rate": opt["lr"],
            "momentum": opt.get("momentum", 0.0),
            "wd": opt.get("weight_decay", 0.0),
        }
    if opt["name"] == "adam":
        betas = opt.get("betas", (0.9, 0.999))
        return "adam", {
            "learning_rate": opt["lr"],
            "beta1": betas[0],
            "beta2": betas[1],
            "epsilon": opt.get("eps", 1e-8),
            "wd": opt.get("weight_decay", 0.0),
        }
    raise UnsupportedError("mxnet adapter has no optimizer %r" % opt["name"])


def _nll(logits, labels):
    return -mx.nd.pick(mx.nd.log_softmax(logits, axis=-1), labels, axis=-1)


def _bce(logits, targets):
    return mx.nd.relu(logits) - logits * targets + mx.nd.Activation(-mx.nd.abs(logits), act_type="softrelu")


def _loss(loss):
    """The job's loss on logits; see the torch adapter for the reductions."""
    if loss["name"] == "sigmoid_binary_cross_entropy":
        return lambda out, y: _bce(out, y).mean()
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("mxnet adapter has no loss %r" % loss["name"])
    if loss.get("reduction", "mean") == "sum_over_time":
        return lambda out, y: _nll(out, y).sum() / y.shape[0]
    return lambda out, y: _nll(out, y).mean()
