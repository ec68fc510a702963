"""Chainer adapter (Chainer 3.x, DeepLearningFrameworks' version, to 7.x, its last release): define-by-run, as
DLF's Chainer notebooks ran it (ilkarman/DeepLearningFrameworks @ 671e2a0 notebooks/Chainer_CNN.ipynb,
Chainer_Inference.ipynb): a ``chainer.Chain`` of links, the forward pass under
``chainer.using_config('train', True)``, ``cleargrads()``, ``loss.backward()``, ``optimizer.update()``. DLF has no
Chainer RNN notebook (its README's GRU table has no Chainer row): the GRU here is this suite's, the spec's layers in
the links below.

NumPy arrays on the CPU (Chainer's CPU backend is NumPy, whose BLAS takes the thread count from
OMP/OPENBLAS/MKL_NUM_THREADS: runner.settings), CuPy arrays on a GPU. Images (N, C, H, W). Links: Convolution2D,
Linear, BatchNormalization (decay = 1 - the spec's momentum), EmbedID, NStepGRU (cuDNN's GRU: two bias sets, the
reset gate after the recurrent product), so every DLF network counts the spec's parameters. Pooling is Chainer's:
max pooling with ``cover_all`` for Caffe's ceil rounding (the same windows, except where Caffe drops a last window
that starts in the padding: refused); average pooling divides by the whole window, so padded or ceil-rounded
averages, which Caffe divides by the cells inside the padding, are refused. Gradient clipping is the optimizer hook
``GradientClipping`` (global norm), then weight decay ``WeightDecay`` (L2 added to the gradient, as the specs').
"""

import chainer
import chainer.functions as F
import chainer.links as L
import numpy as np

from runner import shapes
from runner.adapters import UnsupportedError
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets

_ACTIVATIONS = {"relu": F.relu, "sigmoid": F.sigmoid, "tanh": F.tanh}


class Net(chainer.Chain):
    """The spec's layers as a Chain: links registered by index, the forward pass a walk over (kind, op) pairs."""

    def __init__(self):
        super(Net, self).__init__()
        self.ops = []

    def link(self, made):
        self.add_link("l%d" % len(self._children), made)
        return made

    def __call__(self, x):
        return _run(self.ops, x)


def _run(ops, x):
    for kind, op in ops:
        if kind == "residual":
            body, shortcut, after = op
            x = _run(after, _run(body, x) + _run(shortcut, x))
        elif kind == "concat":
            x = F.concat([x, _run(op, x)], axis=1)
        else:
            x = op(x)
    return x


class Adapter(Base):
    name = "chainer"  # kernels W (out, in, kh, kw) and (out, in): the base's default layouts

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.xp = np
        if job["device"] == "cuda":
            import cupy

            if not chainer.cuda.available:
                raise UnsupportedError("the job asks for a GPU and Chainer finds no CuPy with a GPU")
            self.xp = cupy
            cupy.cuda.Device(0).use()
        np.random.seed(job.get("seed", 0))  # Chainer's initializers draw from NumPy's global generator
        self.build_name = "chainer %s" % chainer.__version__
        self.named, self.net, self.optimizer = {}, None, None

    def environment(self):
        cuda = cudnn = None
        if self.xp is not np:
            cuda = self.xp.cuda.runtime.runtimeGetVersion()
            cudnn = self.xp.cuda.cudnn.getVersion() if chainer.cuda.cudnn_enabled else None
        return {
            "framework": "chainer",
            "framework_version": chainer.__version__,
            "numpy": np.__version__,
            "cupy": getattr(self.xp, "__version__", None) if self.xp is not np else None,
            "cuda": cuda,
            "cudnn": cudnn,
            "threads": self.job.get("threads"),
            "layout": "NCHW",
            "train_step": "cleargrads, backward, optimizer.update",
        }

    # ------------------------------------------------------------------ building

    def _init(self, kind):
        """(initialW, initial_bias) for a conv or dense link; (None, None): Chainer's own (LeCun normal, zeros)."""
        init = self.job["model"].get("init", {"scheme": "default"})
        scheme = init["scheme"]
        if scheme == "default":
            return None, None
        if scheme == "uniform":
            return chainer.initializers.Uniform(init["scale"]), chainer.initializers.Uniform(init["scale"])
        if scheme == "xavier":  # Caffe's XavierFiller: U(-a, a), a = sqrt(3 / fan_in)
            return chainer.initializers.LeCunUniform(), chainer.initializers.Zero()
        if scheme == "glorot_uniform":
            return chainer.initializers.GlorotUniform(), chainer.initializers.Zero()
        raise UnsupportedError("the chainer adapter has no initialisation %r" % scheme)

    def _make(self, layer, shape):
        kind, net = layer["type"], self.net
        if kind == "conv":
            weight, bias = self._init(kind)
            return "plain", self._name(
                layer,
                net.link(
                    L.Convolution2D(
                        shape[0],
                        layer["filters"],
                        layer["kernel"],
                        stride=layer.get("stride", 1),
                        pad=layer.get("pad", 0),
                        nobias=not layer.get("bias", True),
                        initialW=weight,
                        initial_bias=bias,
                    )
                ),
            )
        if kind == "maxpool":
            k, s, p, ceil = (
                layer["kernel"],
                layer.get("stride", layer["kernel"]),
                layer.get("pad", 0),
                layer.get("ceil", False),
            )
            if any(
                shapes.pool_output(n, k, s, p, ceil) != (n + 2 * p - k + (s - 1 if ceil else 0)) // s + 1
                for n in shape[1:]
            ):
                raise UnsupportedError(
                    "the chainer adapter has no max pooling whose last window Caffe drops (it "
                    "starts in the padding: Chainer's cover_all keeps it)"
                )
            return "plain", lambda x: F.max_pooling_2d(x, k, s, p, cover_all=ceil)
        if kind == "avgpool":
            k, s, p, ceil = (
                layer["kernel"],
                layer.get("stride", layer["kernel"]),
                layer.get("pad", 0),
                layer.get("ceil", False),
            )
            if p or any(
                shapes.pool_output(n, k, s, 0, ceil) != shapes.pool_output(n, k, s, 0, False) for n in shape[1:]
            ):
                raise UnsupportedError(
                    "the chainer adapter has no padded or ceil-rounded average pooling (Chainer "
                    "divides by the whole window, Caffe by the cells inside the padding)"
                )
            return "plain", lambda x: F.average_pooling_2d(x, k, s, 0)
        if kind == "global_avgpool":
            return "plain", lambda x: F.mean(x, axis=(2, 3))
        if kind == "batchnorm":
            return "plain", self._name(
                layer,
                net.link(
                    L.BatchNormalization(shape[0], decay=1.0 - layer.get("momentum", 0.1), eps=layer.get("eps", 1e-5))
                ),
            )
        if kind == "dense":
            weight, bias = self._init(kind)
            return "plain", self._name(
                layer,
                net.link(
                    L.Linear(
                        int(np.prod(shape)),
                        layer["units"],
                        nobias=not layer.get("bias", True),
                        initialW=weight,
                        initial_bias=bias,
                    )
                ),
            )
        if kind == "dropout":
            rate = layer["rate"]
            return "plain", lambda x: F.dropout(x, rate)
        if kind == "flatten":
            return "plain", lambda x: F.reshape(x, (x.shape[0], -1))
        if kind in _ACTIVATIONS:
            return "plain", _ACTIVATIONS[kind]
        if kind == "pad_channels":
            extra = layer["filters"] - shape[0]
            return "plain", lambda x: F.pad(x, ((0, 0), (0, extra), (0, 0), (0, 0)), "constant")
        if kind == "residual":
            inner = shapes.apply_all(layer["body"], shape)[0]
            return "residual", (
                self._ops(layer["body"], shape),
                self._ops(layer.get("shortcut", []), shape),
                self._ops(layer.get("after", []), inner),
            )
        if kind == "concat":
            return "concat", self._ops(layer["body"], shape)
        if kind == "embedding":
            scale = self.job["model"].get("init", {}).get("scale")
            embed = net.link(
                L.EmbedID(layer["vocab"], layer["dim"], initialW=chainer.initializers.Uniform(scale) if scale else None)
            )
            return "plain", embed
        if kind == "gru":
            gru = net.link(L.NStepGRU(layer.get("layers", 1), shape[-1], layer["units"], 0.0))
            return "plain", lambda x: F.stack(gru(None, list(F.separate(x, axis=0)))[1], axis=0)
        if kind == "last_step":
            return "plain", lambda x: x[:, -1]
        raise UnsupportedError("the chainer adapter has no layer type %r" % kind)

    def _name(self, layer, link):
        if layer.get("name"):
            self.named[layer["name"]] = link
        return link

    def _ops(self, layers, shape):
        return [self._make(layer, in_shape) for layer, in_shape in shapes.inputs(layers, shape)]

    def build(self):
        model = self.job["model"]
        if model.get("init", {}).get("scheme") == "uniform" and any(
            t["type"] in ("gru", "lstm") for t in shapes.expand(model["layers"], model["input_shape"])
        ):
            raise UnsupportedError("the chainer adapter has no uniform initialisation of NStepGRU's weights")
        self.net = Net()
        self.net.ops = self._ops(shapes.expand(model["layers"], model["input_shape"]), tuple(model["input_shape"]))
        if self.xp is not np:
            self.net.to_gpu(0)
        self.loss_fn = _loss(self.job.get("loss", {}))
        opt = self.job.get("optimizer")
        if opt is not None:
            self.optimizer = _optimizer(opt)
            self.optimizer.setup(self.net)
            if opt.get("clip_norm"):  # hooks run in the order added: clip the gradient, then add the decay (torch's)
                self.optimizer.add_hook(chainer.optimizer.GradientClipping(opt["clip_norm"]))
            if opt.get("weight_decay"):
                self.optimizer.add_hook(chainer.optimizer.WeightDecay(opt["weight_decay"]))
        return int(sum(p.size for p in self.net.params()))

    # ------------------------------------------------------------------ running

    def to_device(self, x, y):
        return self.xp.asarray(x), self.xp.asarray(y.astype(np.int32) if y.dtype == np.int64 else y)

    def train_step(self, x, y):
        with chainer.using_config("train", True):
            loss = self.loss_fn(self.net(x), y)
        self.net.cleargrads()
        loss.backward()
        self.optimizer.update()
        return loss.array  # the value alone: the Variable would keep the step's graph and activations alive

    def losses(self, handles):
        return [float(chainer.cuda.to_cpu(h)) for h in handles]

    def synchronize(self):
        if self.xp is not np:
            self.xp.cuda.Stream.null.synchronize()

    def parameters(self):
        """The parameters in the model's order: links by their index (l0, l1, ...), a link's by name."""

        def order(item):
            link, _, name = item[0].lstrip("/").partition("/")
            return int(link[1:]), name

        return [chainer.cuda.to_cpu(p.array) for _, p in sorted(self.net.namedparams(), key=order)]

    def infer(self, x):
        with chainer.using_config("train", False), chainer.no_backprop_mode():
            out = self.net(self.xp.asarray(x.astype(np.int32) if x.dtype == np.int64 else x))
        return chainer.cuda.to_cpu(out.array)

    def _weight_targets(self, link):
        if isinstance(link, L.BatchNormalization):
            return batchnorm_targets(link.gamma, link.beta, link.avg_mean, link.avg_var)
        return kernel_targets(link.W, getattr(link, "b", None))

    def _set_weight(self, target, array):
        if isinstance(target, chainer.Variable):
            target.array[...] = self.xp.asarray(array)
        else:
            target[...] = self.xp.asarray(array)


def _loss(loss):
    """The job's loss on logits (mean over the mini-batch, and over time steps for sequences)."""
    name = loss.get("name", "softmax_cross_entropy")
    if name == "sigmoid_binary_cross_entropy":
        return lambda out, y: F.mean(F.softplus(out) - out * y)
    if name != "softmax_cross_entropy" or loss.get("reduction", "mean") != "mean":
        raise UnsupportedError(
            "the chainer adapter has no loss %s (reduction %s)" % (name, loss.get("reduction", "mean"))
        )

    def softmax(out, y):
        if out.ndim == 3:  # (N, T, classes) against (N, T)
            return F.softmax_cross_entropy(F.reshape(out, (-1, out.shape[-1])), F.reshape(y, (-1,)))
        return F.softmax_cross_entropy(out, y)

    return softmax


def _optimizer(opt):
    if opt["name"] == "sgd":
        if opt.get("nesterov"):
            return chainer.optimizers.NesterovAG(lr=opt["lr"], momentum=opt.get("momentum", 0.0))
        if opt.get("momentum"):
            return chainer.optimizers.MomentumSGD(lr=opt["lr"], momentum=opt["momentum"])
        return chainer.optimizers.SGD(lr=opt["lr"])
    if opt["name"] == "adam":
        betas = opt.get("betas", (0.9, 0.999))
        return chainer.optimizers.Adam(alpha=opt["lr"], beta1=betas[0], beta2=betas[1], eps=opt.get("eps", 1e-8))
    raise UnsupportedError("the chainer adapter has no optimizer %r" % opt["name"])
