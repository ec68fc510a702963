"""Caffe2 adapter (the caffe2 Python package of the PyTorch 1.10.2 wheel, its last working release).

Idioms: ``workspace.GlobalInit`` before any other Caffe2 call; the network is built
with ``brew`` helpers on a ``model_helper.ModelHelper`` (parameters in its
param_init_net), gradients by ``AddGradientOperators``, the update by the
``optimizer`` module's builders; a second ModelHelper with ``init_params=False``
and ``is_test`` layers shares the parameter blobs for evaluation and inference, as
Caffe2's own tutorials do. Both nets are created once (``workspace.CreateNet``) and
run by name. Layout is NCHW; pooling with ``ceil`` (Caffe's rounding) is written as
explicit extra bottom/right padding. Inputs are fed into the workspace with the
job's device option (``FeedBlob``), so a synthetic mini-batch stays on the device.

Conventions matched to the spec (PyTorch's): MomentumSGDUpdate computes
v = lr * g + m * v, p -= v, which with a constant learning rate is PyTorch's
v = m * v + g, p -= lr * v; Nesterov is off unless the job asks (Caffe2's SgdOptimizer
defaults it on); weight decay is added to every trainable parameter's gradient
(biases and batch-norm scale and shift included, as torch.optim does), not with
Caffe2's add_weight_decay, which skips biases. SpatialBN's momentum is the weight of
the old running average (1 - the spec's momentum).

Timed step (``train_step``): ``RunNet`` of the training net (forward, gradient operators, update
operators), then ``FetchBlob("loss")``, a copy of one scalar to the host after the net has finished (RunNet
is synchronous). A synthetic mini-batch is fed once (``to_device``); a real one is fed per step, as the
studies' input pipelines fed theirs.
"""

import os
import re

import numpy as np
from caffe2.proto import caffe2_pb2
from caffe2.python import brew, core, model_helper, optimizer, workspace

from runner import data as datamod
from runner import shapes
from runner.adapters import UnsupportedError
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets

UNSUPPORTED_LAYERS = {
    "embedding": "the adapter does not build Caffe2's Gather-based embeddings and sparse updates yet",
    "lstm": "the adapter does not build Caffe2's RecurrentNetwork LSTM (rnn_cell.LSTM) yet",
    "gru": "the adapter does not build Caffe2's RecurrentNetwork GRU (gru_cell.GRU) yet",
    "last_step": "only used after recurrent layers, which the adapter does not build yet",
}

_initialized = []


def _global_init(threads):
    """workspace.GlobalInit, once per process, before any other Caffe2 call."""
    if _initialized:
        return
    args = ["caffe2", "--caffe2_log_level=1"]
    if threads:
        args += ["--caffe2_omp_num_threads=%d" % threads, "--caffe2_mkl_num_threads=%d" % threads]
    workspace.GlobalInit(args)
    _initialized.append(args)


def _torch_version():
    """(version, cuda) from the torch wheel's version.py, read without importing torch."""
    import caffe2

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(caffe2.__file__))), "torch", "version.py")
    found = {}
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"^(__version__|cuda)\s*=\s*'([^']*)'", line)
                if m:
                    found[m.group(1)] = m.group(2)
    except (IOError, OSError):
        pass
    return found.get("__version__"), found.get("cuda")


class Adapter(Base):
    name = "caffe2"

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        _global_init(job.get("threads"))
        self.build_name = "caffe2 %s" % _torch_version()[0]
        seed = job.get("seed", 0)
        if job["device"] == "cuda":
            if not workspace.has_gpu_support or workspace.NumGpuDevices() < 1:
                raise UnsupportedError(
                    "the job asks for a GPU and Caffe2 sees none (has_gpu_support=%s)" % workspace.has_gpu_support
                )
            self.device = core.DeviceOption(workspace.GpuDeviceType, 0, random_seed=seed)
            self.cudnn = {"use_cudnn": True, "cudnn_exhaustive_search": bool(job.get("cudnn_autotune", True))}
        else:
            self.device = core.DeviceOption(caffe2_pb2.CPU, random_seed=seed)
            self.cudnn = {}
        np.random.seed(seed)
        self.named, self.fed, self.counter = {}, None, [0]
        self.train_model = self.test_model = None

    def environment(self):
        version, cuda = _torch_version()
        env = {
            "framework": "caffe2",
            "framework_version": version,
            "torch_wheel_cuda": cuda,
            "has_gpu_support": bool(workspace.has_gpu_support),
            "cuda": None,
            "cudnn": None,
            # without OMP_NUM_THREADS GlobalInit sets one OpenMP thread (caffe2 init_omp)
            "threads": self.job.get("threads") or int(os.environ.get("OMP_NUM_THREADS") or 1),
            "global_init": _initialized[0] if _initialized else None,
            # MKL 2020.0 in the wheel takes a slow generic path on AMD CPUs unless this is 5 (AVX2)
            "mkl_debug_cpu_type": os.environ.get("MKL_DEBUG_CPU_TYPE"),
            "net_type": "simple",
            "layout": "NCHW",
        }
        if self.job["device"] == "cuda":
            env["cuda"] = workspace.GetCUDAVersion()
            env["cudnn"] = workspace.GetCuDNNVersion()
            name, capability = self.gpu_capability()
            env["gpu"] = {
                "name": name,
                "capability": capability,
                "memory_bytes": workspace.GetDeviceProperties(0).get("totalGlobalMem"),
            }
        return env

    def gpu_capability(self):
        """(name, compute capability "X.Y") of GPU 0 from Caffe2's workspace.GetDeviceProperties (None without one)."""
        props = workspace.GetDeviceProperties(0)
        return (props.get("name"), "%s.%s" % (props.get("major"), props.get("minor"))) if props else None

    # ------------------------------------------------------------------ building

    def _blob(self, kind, layer):
        """The layer's output blob: its name, or l<N>_<type> (no spec names a layer so); parameters add _w, _b, ..."""
        if layer.get("name"):
            return layer["name"]
        self.counter[0] += 1
        return "l%d_%s" % (self.counter[0], kind)

    def _layers(self, m, layers, x, shape, is_test):
        for layer, in_shape in shapes.inputs(layers, shape):
            x = self._layer(m, layer, x, in_shape, is_test)
        return x

    def _layer(self, m, layer, x, shape, is_test):
        kind = layer["type"]
        out = self._blob(kind, layer)
        if kind in UNSUPPORTED_LAYERS:
            raise UnsupportedError("caffe2 adapter has no layer %s: %s" % (kind, UNSUPPORTED_LAYERS[kind]))
        if kind == "conv":
            bias = layer.get("bias", True)
            kwargs = dict(
                self.cudnn, **self._fillers(layer["filters"] * layer["kernel"] ** 2, shape[0] * layer["kernel"] ** 2)
            )
            y = brew.conv(
                m,
                x,
                out,
                dim_in=shape[0],
                dim_out=layer["filters"],
                kernel=layer["kernel"],
                stride=layer.get("stride", 1),
                pad=layer.get("pad", 0),
                no_bias=not bias,
                **kwargs,
            )
        elif kind in ("maxpool", "avgpool"):
            y = self._pool(m, kind, layer, x, out, shape)
        elif kind == "global_avgpool":
            pooled = brew.average_pool(m, x, out + "_pool", global_pooling=True)
            y = m.net.Flatten(pooled, out)
        elif kind == "batchnorm":
            if len(shape) != 3:
                raise UnsupportedError("caffe2 adapter has batchnorm for images (C, H, W) only, got %s" % (shape,))
            y = brew.spatial_bn(
                m,
                x,
                out,
                shape[0],
                epsilon=layer.get("eps", 1e-5),
                momentum=1.0 - layer.get("momentum", 0.1),
                is_test=is_test,
            )
            if self.init["scheme"] == "uniform" and m.init_params:  # every parameter, as the other adapters
                scale = float(self.init["scale"])
                for suffix in ("_s", "_b"):
                    m.param_init_net.UniformFill([], out + suffix, shape=[shape[0]], min=-scale, max=scale)
        elif kind == "dense":
            if len(shape) != 1:
                raise UnsupportedError("caffe2 adapter has dense layers on flat (F,) inputs only, got %s" % (shape,))
            y = brew.fc(
                m,
                x,
                out,
                dim_in=shape[0],
                dim_out=layer["units"],
                no_bias=not layer.get("bias", True),
                **self._fillers(layer["units"], shape[0]),
            )
        elif kind == "dropout":
            y = brew.dropout(m, x, out, ratio=layer["rate"], is_test=is_test)
        elif kind == "flatten":
            y = m.net.Flatten(x, out)
        elif kind == "relu":
            y = brew.relu(m, x, out)
        elif kind == "sigmoid":
            y = m.net.Sigmoid(x, out)
        elif kind == "tanh":
            y = brew.tanh(m, x, out)
        elif kind == "pad_channels":
            zeros = m.net.ConstantFill(x, out + "_zeros", value=0.0)  # the shape of x
            extra, pieces = layer["filters"] - shape[0], [x]
            pieces += [zeros] * (extra // shape[0])
            if extra % shape[0]:
                pieces.append(
                    m.net.Slice(zeros, out + "_part", starts=[0, 0, 0, 0], ends=[-1, extra % shape[0], -1, -1])
                )
            y = m.net.Concat(pieces, [out, out + "_split"], axis=1)[0]
        elif kind == "residual":
            body = self._layers(m, layer["body"], x, shape, is_test)
            short = self._layers(m, layer.get("shortcut", []), x, shape, is_test)
            added = m.net.Sum([body, short], out + "_sum")
            y = self._layers(m, layer.get("after", []), added, shapes.apply_all(layer["body"], shape)[0], is_test)
        elif kind == "concat":
            body = self._layers(m, layer["body"], x, shape, is_test)
            y = m.net.Concat([x, body], [out, out + "_split"], axis=1)[0]
        else:
            raise UnsupportedError("caffe2 adapter has no layer type %r" % kind)
        if layer.get("name"):  # the same blobs in the training and the test net
            self.named[layer["name"]] = (kind, out)
        return y

    def _pool(self, m, kind, layer, x, out, shape):
        """Max or average pooling; Caffe's ceil rounding as explicit extra padding at the bottom and right.

        The extra rows and columns are what CAFFE_LEGACY_POOLING adds itself, written out so that every
        engine takes them (MKL-DNN rejects the legacy mode). Max pooling ignores padding; an average
        pool divides by the count of pixels inside the (declared) padding, as Caffe does.
        """
        k, stride, pad, ceil = (
            layer["kernel"],
            layer.get("stride", layer["kernel"]),
            layer.get("pad", 0),
            layer.get("ceil", False),
        )
        kwargs = {"kernel": k, "stride": stride}
        extra = [0, 0]
        if ceil:
            for axis, size in enumerate(shape[1:]):
                rows = (shapes.pool_output(size, k, stride, pad, True) - 1) * stride + k
                extra[axis] = max(0, rows - (size + 2 * pad))
        if extra == [0, 0]:
            kwargs["pad"] = pad
        else:
            kwargs.update(pad_t=pad, pad_l=pad, pad_b=pad + extra[0], pad_r=pad + extra[1])
        if kind == "maxpool":
            return brew.max_pool(m, x, out, **kwargs)
        if extra != [0, 0] and pad > 0:
            raise UnsupportedError("caffe2 adapter has no average pooling with both padding and ceil rounding")
        # Caffe counts the declared padding in the divisor, never the extra ceil rows: with extra rows
        # there is no declared padding, so only pixels inside the image count
        return brew.average_pool(m, x, out, count_include_pad=extra == [0, 0], **kwargs)

    def _fillers(self, fan_out, fan_in):
        """weight_init / bias_init for brew.conv and brew.fc from the spec's initialisation."""
        scheme = self.init["scheme"]
        if scheme == "default":  # brew's own: XavierFill weights, zero biases
            return {}
        if scheme == "xavier":  # Caffe's XavierFiller (FAN_IN): U(-a, a), a = sqrt(3 / fan_in); XavierFill is that
            return {"weight_init": ("XavierFill", {}), "bias_init": ("ConstantFill", {"value": 0.0})}
        if scheme == "glorot_uniform":
            bound = float(np.sqrt(6.0 / (fan_in + fan_out)))
            return {
                "weight_init": ("UniformFill", {"min": -bound, "max": bound}),
                "bias_init": ("ConstantFill", {"value": 0.0}),
            }
        if scheme == "uniform":
            scale = float(self.init["scale"])
            return {
                "weight_init": ("UniformFill", {"min": -scale, "max": scale}),
                "bias_init": ("UniformFill", {"min": -scale, "max": scale}),
            }
        raise UnsupportedError("caffe2 adapter has no initialisation %r" % scheme)

    def _forward(self, m, is_test):
        model = self.job["model"]
        self.counter[0] = 0  # the same blob names in the training and the test net
        return self._layers(m, self.layers, "data", tuple(model["input_shape"]), is_test)

    def build(self):
        model = self.job["model"]
        self.init = model.get("init", {"scheme": "default"})
        self.layers = shapes.expand(model["layers"], model["input_shape"])
        self.loss = self.job.get("loss", {"name": "softmax_cross_entropy"})
        if self.loss["name"] not in ("softmax_cross_entropy", "sigmoid_binary_cross_entropy"):
            raise UnsupportedError("caffe2 adapter has no loss %r" % self.loss["name"])
        if self.loss.get("reduction", "mean") != "mean":
            raise UnsupportedError("caffe2 adapter has no loss reduction %r" % self.loss["reduction"])
        if model.get("target", "class") == "sequence" or model.get("input_kind", "dense") != "dense":
            raise UnsupportedError("caffe2 adapter has no sequence models yet")
        opt = self.job.get("optimizer")
        training = self.job["mode"] != "inference" and bool(opt)
        with core.DeviceScope(self.device):
            self.test_model = model_helper.ModelHelper(name="test", init_params=not training)
            self.output = self._forward(self.test_model, True)
            if training:
                self.train_model = model_helper.ModelHelper(name="train")
                logits = self._forward(self.train_model, False)
                self._add_loss(self.train_model, logits)
                self._add_optimizer(self.train_model, opt)
                owner = self.train_model
            else:
                owner = self.test_model
        workspace.RunNetOnce(owner.param_init_net)
        self.to_device(*datamod.synthetic_batch(model, 1, 0))  # the nets' input blobs must exist to create them
        self.fed = None
        if training:
            workspace.CreateNet(self.train_model.net)
        workspace.CreateNet(self.test_model.net)
        self.params = list(owner.GetParams())
        return int(sum(workspace.FetchBlob(str(p)).size for p in self.params))

    def _add_loss(self, m, logits):
        if self.loss["name"] == "softmax_cross_entropy":
            m.net.SoftmaxWithLoss([logits, "label"], ["softmax", "loss"])
        else:
            per_sample = m.net.SigmoidCrossEntropyWithLogits([logits, "label"], "xent")  # mean over the labels
            m.net.AveragedLoss(per_sample, "loss")
        m.AddGradientOperators(["loss"])

    def _add_optimizer(self, m, opt):
        if opt.get("clip_norm"):
            raise UnsupportedError("caffe2 adapter has no gradient clipping yet")
        wd = float(opt.get("weight_decay", 0.0))
        if wd:  # L2 on every trainable parameter's gradient, as torch.optim's weight_decay
            decay = m.param_init_net.ConstantFill([], "weight_decay", shape=[1], value=wd)
            one = m.param_init_net.ConstantFill([], "weight_decay_one", shape=[1], value=1.0)
            for p in m.GetParams():
                grad = m.param_to_grad[p]
                m.net.WeightedSum([grad, one, p, decay], grad)
        if opt["name"] == "sgd":
            optimizer.build_sgd(
                m,
                base_learning_rate=float(opt["lr"]),
                policy="fixed",
                momentum=float(opt.get("momentum", 0.0)),
                nesterov=bool(opt.get("nesterov", False)),
            )
        elif opt["name"] == "adam":
            betas = opt.get("betas", (0.9, 0.999))
            optimizer.build_adam(
                m,
                base_learning_rate=float(opt["lr"]),
                policy="fixed",
                beta1=float(betas[0]),
                beta2=float(betas[1]),
                epsilon=float(opt.get("eps", 1e-8)),
            )
        else:
            raise UnsupportedError("caffe2 adapter has no optimizer %r" % opt["name"])

    # ------------------------------------------------------------------ running

    def release(self):
        """Drop the nets and every blob of Caffe2's one global workspace, which the next job would find."""
        super(Adapter, self).release()
        workspace.ResetWorkspace()

    def feed(self, name, array):
        workspace.FeedBlob(name, array, device_option=self.device)

    def _label(self, y):
        if self.loss["name"] == "softmax_cross_entropy":
            return np.ascontiguousarray(y, dtype=np.int32)
        return np.ascontiguousarray(y, dtype=np.float32)

    def to_device(self, x, y):
        """Feeds the mini-batch into the workspace (on the job's device); returns it as a handle."""
        handle = (np.ascontiguousarray(x, dtype=np.float32), self._label(y))
        self.feed("data", handle[0])
        self.feed("label", handle[1])
        self.fed = handle
        return handle

    def train_step(self, x, y):
        if self.fed is None or self.fed[0] is not x or self.fed[1] is not y:
            self.to_device(x, y)
        workspace.RunNet(self.train_model.net.Proto().name)
        return workspace.FetchBlob("loss")  # RunNet has finished the device's work: already a host value

    def losses(self, handles):
        return [float(np.asarray(h).reshape(())) for h in handles]

    def infer(self, x):
        self.feed("data", np.ascontiguousarray(x, dtype=np.float32))
        self.fed = None
        workspace.RunNet(self.test_model.net.Proto().name)
        return workspace.FetchBlob(str(self.output))

    def _weight_targets(self, layer):
        kind, blob = layer
        if kind == "batchnorm":
            return batchnorm_targets(blob + "_s", blob + "_b", blob + "_rm", blob + "_riv")
        if kind in ("conv", "dense"):
            return kernel_targets(blob + "_w", blob + "_b" if workspace.HasBlob(blob + "_b") else None)
        return None

    def _weight_shape(self, blob):
        return workspace.FetchBlob(blob).shape

    def _set_weight(self, blob, array):
        self.feed(blob, np.ascontiguousarray(array, dtype=np.float32))
