"""Caffe adapter (BVLC Caffe 1.0, pycaffe; Debian's CPU_ONLY build, or the same source compiled with CUDA 11.8 in the
caffe-1.0.0-cuda image): the job's layer list as a caffe.NetSpec, trained by a Caffe solver driven from Python.

Idioms: the network is generated as a NetSpec (NetParameter) from the expanded layer list: Input layers for the data
and the label, Convolution / Pooling / InnerProduct / BatchNorm + Scale / Eltwise / Concat / Embed / LSTM layers,
ReLU, Sigmoid, TanH and Dropout computed in place where the input blob has no other reader, and the loss layer
(SoftmaxWithLoss, SigmoidCrossEntropyLoss) on top. The training net lives inside a solver (SGD, Nesterov or Adam;
lr_policy fixed) made from a generated solver prototxt that embeds it; ``train_step`` writes the mini-batch into the
Input blobs (net.blobs) and calls ``solver.step(1)`` (forward, backward, update). Evaluation and inference use a
second net of the TEST phase (dropout off, batch norm on its running statistics) that shares the training net's
parameters (``Net.share_with``). Every array handed to Caffe is float32 (labels and token ids too), the blob type.

Conventions (what Caffe does its own way, and how the spec's recipe is met):
- pooling: Caffe rounds up by default (round_mode CEIL, with its pad clip); a layer with ``ceil: false`` gets
  round_mode FLOOR (in Debian's Caffe, which is BVLC's 2018 master), so every shape equals runner.shapes'; average
  pooling divides by the window clipped to the padded input, as count_include_pad.
- initialisation: "xavier" is Caffe's XavierFiller (U(+-sqrt(3/fan_in))), "glorot_uniform" the same filler with
  variance_norm AVERAGE, "uniform" a uniform filler on every parameter; biases start at 0. "default" is Caffe's own
  default only in name: Caffe's default filler is the constant 0, which no network trains from, so "default" means
  what Caffe's own model prototxts use, the xavier filler and zero biases.
- batch norm: BatchNorm (its mean, variance and scale-factor blobs are statistics with lr_mult 0, not counted)
  followed by Scale with a bias (gamma, beta: 2C parameters); the spec's momentum m becomes moving_average_fraction
  1 - m (Caffe's running sums are normalised by their own weight, which only changes evaluation statistics).
- losses: SoftmaxWithLoss averages over the predictions (normalization VALID); "sum_over_time" is normalization NONE
  with loss_weight 1 / batch size. Caffe's solver update with momentum (V = m V + lr (g + wd w); w -= V) equals
  PyTorch's for a fixed learning rate; clip_gradients is the global L2 norm, applied before weight decay, as
  PyTorch's clip_grad_norm_ then SGD. Caffe's Adam applies epsilon before the bias correction (lr
  sqrt(1-b2^t)/(1-b1^t) m / (sqrt(v) + eps)).
- recurrent layers: Caffe's LSTM is time-major (T, N, F) with a sequence-continuation input; token batches are
  transposed on the way in. It keeps one bias vector per gate set (4 units), where the spec counts two, declared by
  ``conventions()``. Its state carries from one forward pass to the next when the continuation flag of the first
  step is 1 (a stateful layer after the first batch), without back-propagation across batches. Caffe 1.0 has no GRU
  layer.

Timed step (``train_step``): on the CPU the mini-batch copied into the Input blobs (one memcpy; the studies' Caffe
read theirs through a data layer, which also copies into its top blob), ``solver.step(1)`` (forward, backward,
update) and the loss read from its blob; Caffe runs synchronously on the CPU. On a GPU the batch is written into the
blobs only when other arrays come (the runner reuses one synthetic batch, as the other adapters keep theirs on the
device; DLBench's data layer prefetched its batches to the GPU outside the step), the step's kernels are queued on
the default stream and the loss the host reads is the loss layer's own host copy, which does not wait for backward
and update: ``synchronize()`` (cudaDeviceSynchronize) is what ends a repeat.

On a GPU (job["device"] "cuda": Caffe's GPU mode on the job's GPU 0, which CUDA_VISIBLE_DEVICES makes the job's own)
the build must link CUDA: in Debian's CPU_ONLY build ``set_device`` aborts the process, so the adapter refuses
first. No cuDNN: Debian built Caffe without it, and so does the CUDA image (convolutions are Caffe's im2col + cuBLAS
GEMM; DLBench's Caffe 1.0rc5 ran cuDNN 5.1); no NCCL, so no multi-GPU path.
"""

import ctypes
import math
import os
import tempfile

os.environ.setdefault("GLOG_minloglevel", "2")  # Caffe logs every layer it sets up; keep warnings only

import caffe  # noqa: E402
import numpy as np  # noqa: E402
from caffe import layers as L  # noqa: E402
from caffe import params as P
from caffe.proto import caffe_pb2  # noqa: E402

from runner import shapes  # noqa: E402
from runner.adapters import UnsupportedError  # noqa: E402
from runner.adapters.base import Adapter as Base  # noqa: E402
from runner.adapters.base import batchnorm_targets, kernel_targets
from runner.buildinfo import cuda_runtime, mapped_library  # noqa: E402
from runner.environment import cuda_device  # noqa: E402

DEBIAN_PACKAGES = ("python3-caffe", "libcaffe1")
BLAS_ALTERNATIVE = "/etc/alternatives/libblas.so.3-x86_64-linux-gnu"
IN_PLACE = ("relu", "sigmoid", "tanh", "dropout")
UNSUPPORTED = {"gru": "Caffe 1.0 has no GRU layer (only RNN and LSTM)"}


def debian_package_versions(status="/var/lib/dpkg/status"):
    """Versions of Caffe's Debian packages from dpkg's status file ({} when there is none)."""
    found, name = {}, None
    try:
        with open(status) as f:
            for line in f:
                if line.startswith("Package: "):
                    name = line.split(":", 1)[1].strip()
                elif line.startswith("Version: ") and name in DEBIAN_PACKAGES:
                    found[name] = line.split(":", 1)[1].strip()
    except (IOError, OSError):
        pass
    return found


def blas_library():
    """The BLAS that Debian's libblas.so.3 alternative selects, and OpenBLAS's build and kernel when it is that."""
    info = {"library": os.path.realpath(BLAS_ALTERNATIVE) if os.path.islink(BLAS_ALTERNATIVE) else None}
    try:
        lib = ctypes.CDLL("libopenblas.so.0")
    except OSError:
        return info
    lib.openblas_get_config.restype = ctypes.c_char_p
    lib.openblas_get_corename.restype = ctypes.c_char_p
    info.update(
        {
            "openblas_config": lib.openblas_get_config().decode(),
            "core": lib.openblas_get_corename().decode(),
            "threads": int(lib.openblas_get_num_threads()),
        }
    )
    return info


class _Builder(object):
    """Adds the layers of one net to a NetSpec, naming every layer and blob."""

    def __init__(self, spec, init, phase_train, time_major):
        self.n, self.init, self.train, self.time_major = spec, init, phase_train, time_major
        self.count = {}
        self.expected = []  # (Top, sample shape per runner.shapes, time-major) of every layer built
        self.named = {}  # spec layer name -> (kind, caffe layer names)
        self.statistics = set()  # BatchNorm layers: blobs that are statistics, not parameters

    def _name(self, layer, kind):
        if layer.get("name"):
            return layer["name"]
        self.count[kind] = self.count.get(kind, 0) + 1
        return "%s%d" % (kind, self.count[kind])

    def _put(self, name, top):
        setattr(self.n, name, top)
        return top

    def _fillers(self):
        scheme = self.init["scheme"]
        if scheme == "uniform":
            u = dict(type="uniform", min=-self.init["scale"], max=self.init["scale"])
            return u, u
        if scheme in ("default", "xavier"):
            return dict(type="xavier"), dict(type="constant", value=0)
        if scheme == "glorot_uniform":
            return dict(type="xavier", variance_norm=P.Filler.AVERAGE), dict(type="constant", value=0)
        raise UnsupportedError("caffe adapter has no initialisation %r" % scheme)

    def chain(self, layers, bottom, shape, owned=False):
        """Apply ``layers`` to blob ``bottom`` of sample ``shape``; ``owned``: no other layer reads ``bottom``."""
        for layer in layers:
            bottom = self.layer(layer, bottom, shape, owned)
            shape = shapes.apply(layer, shape)[0]
            if layer["type"] == "last_step":
                self.time_major = False
            self.expected.append((bottom, shape, self.time_major))
            owned = True
        return bottom

    def layer(self, layer, x, shape, owned):
        kind = layer["type"]
        if kind in UNSUPPORTED:
            raise UnsupportedError(UNSUPPORTED[kind])
        name = self._name(layer, kind)
        weight, bias = self._fillers()
        if kind == "conv":
            top = L.Convolution(
                x,
                num_output=layer["filters"],
                kernel_size=layer["kernel"],
                stride=layer.get("stride", 1),
                pad=layer.get("pad", 0),
                bias_term=layer.get("bias", True),
                weight_filler=weight,
                bias_filler=bias,
            )
            self.named[name] = ("conv", [name])
        elif kind in ("maxpool", "avgpool"):
            top = L.Pooling(
                x,
                pool=P.Pooling.MAX if kind == "maxpool" else P.Pooling.AVE,
                kernel_size=layer["kernel"],
                stride=layer.get("stride", layer["kernel"]),
                pad=layer.get("pad", 0),
                round_mode=P.Pooling.CEIL if layer.get("ceil", False) else P.Pooling.FLOOR,
            )
        elif kind == "global_avgpool":
            pooled = self._put(name + "_pool", L.Pooling(x, pool=P.Pooling.AVE, global_pooling=True))
            top = L.Flatten(pooled)
        elif kind == "batchnorm":
            normed = self._put(
                name,
                L.BatchNorm(x, eps=layer.get("eps", 1e-5), moving_average_fraction=1.0 - layer.get("momentum", 0.1)),
            )
            self.statistics.add(name)
            scale = name + "_scale"
            self._put(
                scale,
                L.Scale(
                    normed,
                    bias_term=True,
                    filler=dict(type="constant", value=1),
                    bias_filler=dict(type="constant", value=0),
                    in_place=True,
                ),
            )
            self.named[name] = ("batchnorm", [name, scale])
            return normed
        elif kind == "dense":
            top = L.InnerProduct(
                x,
                num_output=layer["units"],
                bias_term=layer.get("bias", True),
                axis=1 if len(shape) != 2 else 2,
                weight_filler=weight,
                bias_filler=bias,
            )
            self.named[name] = ("dense", [name])
        elif kind in IN_PLACE:
            make = {"relu": L.ReLU, "sigmoid": L.Sigmoid, "tanh": L.TanH, "dropout": L.Dropout}[kind]
            kwargs = {"dropout_ratio": layer["rate"]} if kind == "dropout" else {}
            top = make(x, in_place=owned, **kwargs)
        elif kind == "flatten":
            top = L.Flatten(x)
        elif kind == "pad_channels":
            top = self._pad_channels(name, x, shape[0], layer["filters"] - shape[0])
        elif kind == "residual":
            body = self.chain(layer["body"], x, shape)
            short = self.chain(layer.get("shortcut", []), x, shape)
            added = self._put(name, L.Eltwise(body, short, operation=P.Eltwise.SUM))
            return self.chain(layer.get("after", []), added, shapes.apply_all(layer["body"], shape)[0], True)
        elif kind == "concat":
            body = self.chain(layer["body"], x, shape)
            top = L.Concat(x, body, axis=1)
        elif kind == "embedding":
            top = L.Embed(x, num_output=layer["dim"], input_dim=layer["vocab"], bias_term=False, weight_filler=weight)
            self.named[name] = ("embedding", [name])
        elif kind == "lstm":
            for i in range(layer.get("layers", 1)):
                step = "%s_%d" % (name, i) if layer.get("layers", 1) > 1 else name
                x = self._put(
                    step,
                    L.LSTM(
                        x,
                        self.n.cont,
                        recurrent_param=dict(num_output=layer["units"], weight_filler=weight, bias_filler=bias),
                    ),
                )
                self.named[step] = ("lstm", [step])
            return x
        elif kind == "last_step":
            steps = shape[0]
            if steps > 1:
                _, last = L.Slice(x, slice_point=[steps - 1], axis=0, ntop=2)
                self._put(name + "_first", _)
                x = self._put(name + "_last", last)
            top = L.Reshape(x, reshape_param=dict(shape=dict(dim=[-1, shape[1]])))
        else:
            raise UnsupportedError("caffe adapter has no layer type %r" % kind)
        return self._put(name, top)

    def _pad_channels(self, name, x, channels, extra):
        """Zero channels appended: a Power layer with scale 0 makes zeros of x's shape, Concat and Slice trim."""
        zeros = self._put(name + "_zeros", L.Power(x, power=1.0, scale=0.0, shift=0.0))
        copies = int(math.ceil(float(extra) / channels))
        top = self._put(name + "_cat", L.Concat(*([x] + [zeros] * copies), axis=1))
        if copies * channels == extra:
            return top
        kept, _ = L.Slice(top, slice_point=[channels + extra], axis=1, ntop=2)
        self._put(name + "_rest", _)
        return self._put(name + "_kept", kept)


class Adapter(Base):
    name = "caffe"

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.cudart = mapped_library("libcudart.so")
        if job["device"] == "cuda":
            if self.cudart is None:
                raise UnsupportedError(
                    "this Caffe is a CPU_ONLY build (it links no CUDA runtime): run the job in "
                    "the caffe-1.0.0-cuda image"
                )
            caffe.set_mode_gpu()
            caffe.set_device(0)
        else:
            caffe.set_mode_cpu()
        self.seed = job.get("seed", 0)
        caffe.set_random_seed(self.seed)
        self.solver = self.net = self.test_net = None
        self.named, self.statistics = {}, set()
        self.sequence = job["model"].get("target", "class") == "sequence"
        self.tokens = job["model"].get("input_kind", "dense") == "tokens"
        self.workdir = tempfile.mkdtemp(prefix="caffe-")
        self.carry = False  # whether the first step of the next batch continues the previous one's state
        self._fed = None  # (x, y, carry) last written into the training net's blobs

    def environment(self):
        packages = debian_package_versions()
        blas = blas_library()
        gpu = self.job["device"] == "cuda"
        return {
            "framework": "caffe",
            "framework_version": getattr(caffe, "__version__", None) or packages.get("python3-caffe"),
            "debian_packages": packages,
            "library": mapped_library("libcaffe.so"),
            "blas": blas,
            "mode": "GPU" if gpu else "CPU",
            "cuda_build": self.cudart is not None,
            "cuda": cuda_runtime(self.cudart) if gpu else None,
            "cudnn": None,
            "threads": blas.get("threads", self.job.get("threads")),
            "layout": "NCHW",
            "solver": self.solver_type if self.solver is not None else None,
        }

    def gpu_capability(self):
        """The GPU's name and compute capability from the CUDA driver: pycaffe reports neither."""
        return cuda_device() if self.job["device"] == "cuda" else None

    # ------------------------------------------------------------------ building

    def _input_dims(self, batch):
        shape = list(self.job["model"]["input_shape"])
        if self.tokens:  # (T, N): Caffe's recurrent layers are time-major
            return shape + [batch]
        return [batch] + shape

    def _label_dims(self, batch):
        model = self.job["model"]
        if model.get("target") == "multilabel":
            return [batch, model["classes"]]
        if self.sequence:
            return [model["input_shape"][0], batch]
        return [batch]

    def _has_recurrent(self, layers):
        return any(layer["type"] == "lstm" for layer in layers)

    def _netspec(self, train):
        """The NetParameter of the training net (with label and loss) or of the TEST net (logits out)."""
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        n = caffe.NetSpec()
        batch = self.job["batch_size"]
        n.data = L.Input(shape=dict(dim=self._input_dims(batch)))
        if self._has_recurrent(layers):
            if not self.tokens:
                raise UnsupportedError("caffe adapter feeds recurrent layers from token ids only")
            n.cont = L.Input(shape=dict(dim=[model["input_shape"][0], batch]))
        builder = _Builder(n, model.get("init", {"scheme": "default"}), train, self.tokens)
        shape = tuple(model["input_shape"])
        if self.tokens:
            shape = (shape[0],)
        out = builder.chain(layers, n.data, shape)
        if train:
            n.label = L.Input(shape=dict(dim=self._label_dims(batch)))
            n.loss = self._loss_layer(out, n.label)
        self.named, self.statistics = builder.named, builder.statistics
        names = dict((top, name) for name, top in n.tops.items())

        def blob(top):
            while top.fn.in_place:  # an in-place layer's output is its input's blob
                top = top.fn.inputs[0]
            return names[top]

        self.expected_blobs = []
        for top, sample, time_major in builder.expected:
            dims = (sample[0], batch) + tuple(sample[1:]) if time_major else (batch,) + tuple(sample)
            self.expected_blobs.append((blob(top), dims))
        self.output = blob(out)
        net = n.to_proto()
        net.name = model["name"]
        if not train:
            net.state.phase = caffe.TEST
        return net

    def _loss_layer(self, out, label):
        loss = self.job.get("loss", {"name": "softmax_cross_entropy"})
        self.loss_weight = 1.0
        if loss["name"] == "sigmoid_binary_cross_entropy":
            return L.SigmoidCrossEntropyLoss(out, label, loss_param=dict(normalization=P.Loss.VALID))
        if loss["name"] != "softmax_cross_entropy":
            raise UnsupportedError("caffe adapter has no loss %r" % loss["name"])
        axis = 2 if self.sequence else 1
        if loss.get("reduction", "mean") == "sum_over_time":
            self.loss_weight = 1.0 / self.job["batch_size"]
            return L.SoftmaxWithLoss(
                out,
                label,
                softmax_param=dict(axis=axis),
                loss_weight=self.loss_weight,
                loss_param=dict(normalization=P.Loss.NONE),
            )
        return L.SoftmaxWithLoss(out, label, softmax_param=dict(axis=axis), loss_param=dict(normalization=P.Loss.VALID))

    def _solver_param(self, net):
        opt = self.job["optimizer"]
        s = caffe_pb2.SolverParameter()
        s.net_param.CopyFrom(net)
        s.base_lr = opt["lr"]
        s.lr_policy = "fixed"
        s.weight_decay = opt.get("weight_decay", 0.0)
        s.regularization_type = "L2"
        s.max_iter = 2**31 - 1
        s.display = 0
        s.snapshot = 0
        s.snapshot_after_train = False
        s.random_seed = self.seed
        s.solver_mode = caffe_pb2.SolverParameter.GPU if self.job["device"] == "cuda" else caffe_pb2.SolverParameter.CPU
        if opt.get("clip_norm"):
            s.clip_gradients = opt["clip_norm"]
        if opt["name"] == "sgd":
            s.type = "Nesterov" if opt.get("nesterov") else "SGD"
            s.momentum = opt.get("momentum", 0.0)
        elif opt["name"] == "adam":
            betas = opt.get("betas", (0.9, 0.999))
            s.type = "Adam"
            s.momentum, s.momentum2, s.delta = betas[0], betas[1], opt.get("eps", 1e-8)
        else:
            raise UnsupportedError("caffe adapter has no optimizer %r" % opt["name"])
        self.solver_type = s.type
        return s

    def _write(self, name, message):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(str(message))  # protobuf's text format
        return path

    def build(self):
        if self.job.get("optimizer"):
            solver_param = self._solver_param(self._netspec(train=True))
            self.solver = caffe.get_solver(self._write("solver.prototxt", solver_param))
            self.net = self.solver.net
        else:  # inference: the TEST net alone
            self._test_net()
            self.net = self.test_net
        self._check_shapes(self.net)
        counted = 0
        for name, blobs in self.net.params.items():
            if name not in self.statistics:
                counted += sum(int(b.data.size) for b in blobs)
        return counted

    def _check_shapes(self, net):
        """Every layer's output blob has the shape runner.shapes gives (else Caffe's net is not the spec's)."""
        for name, dims in self.expected_blobs:
            actual = tuple(net.blobs[name].data.shape)
            if actual != dims:
                raise UnsupportedError(
                    "Caffe's blob %s has shape %s where the spec's layers give %s" % (name, actual, dims)
                )

    def _test_net(self):
        if self.test_net is None:
            caffe.set_random_seed(self.seed)
            path = self._write("test_net.prototxt", self._netspec(train=False))
            self.test_net = caffe.Net(path, caffe.TEST)
            if self.net is not None:
                self.test_net.share_with(self.net)
            self.test_carry = False
        return self.test_net

    def conventions(self):
        layers = shapes.expand(self.job["model"]["layers"], self.job["model"]["input_shape"])
        fewer = sum(4 * layer["units"] * layer.get("layers", 1) for layer in layers if layer["type"] == "lstm")
        if not fewer:
            return []
        return [
            {
                "name": "caffe-lstm-single-bias",
                "difference": fewer,
                "reason": "Caffe's LSTM keeps one bias vector per gate set; cuDNN and PyTorch keep two",
            }
        ]

    # ------------------------------------------------------------------ running

    def to_device(self, x, y):
        """Float32 host arrays in the blobs' layouts (written into the blobs' host memory; in GPU mode Caffe copies
        them to the device inside the step)."""
        if self.tokens:
            x = x.T
        if self.sequence:
            y = y.T
        return np.ascontiguousarray(x, dtype=np.float32), np.ascontiguousarray(y, dtype=np.float32)

    def _feed(self, net, x, y=None, carry=False):
        blobs = net.blobs
        if blobs["data"].data.shape != x.shape:
            blobs["data"].reshape(*x.shape)
            if y is not None:
                blobs["label"].reshape(*y.shape)
            if "cont" in blobs:
                blobs["cont"].reshape(*x.shape[:2])
            net.reshape()
        blobs["data"].data[...] = x
        if y is not None:
            blobs["label"].data[...] = y
        if "cont" in blobs:
            blobs["cont"].data[...] = 1.0
            blobs["cont"].data[0] = 1.0 if carry else 0.0

    def _stateful(self):
        return any(layer.get("stateful") for layer in self.job["model"]["layers"])

    def reset_state(self):
        self.carry = False
        self.test_carry = False

    def train_step(self, x, y):
        fed = (x, y, self.carry)
        if self.job["device"] == "cpu" or self._fed is None or any(a is not b for a, b in zip(fed, self._fed)):
            self._feed(self.net, x, y, self.carry)
            self._fed = fed
        self.carry = self._stateful()
        self.solver.step(1)
        return float(self.net.blobs["loss"].data) * self.loss_weight

    def synchronize(self):
        """Wait for the GPU to finish the queued steps (cudaDeviceSynchronize of the CUDA runtime Caffe loaded);
        nothing on the CPU. Raises RuntimeError with CUDA's error code when the call fails."""
        if self.job["device"] == "cuda":
            code = ctypes.CDLL(self.cudart).cudaDeviceSynchronize()
            if code != 0:
                raise RuntimeError("cudaDeviceSynchronize returned CUDA error %d" % code)

    def _forward(self, x):
        net = self._test_net()
        self._feed(net, x, carry=self.test_carry)
        self.test_carry = self._stateful()
        net.forward()
        return net.blobs[self.output].data

    def infer(self, x):
        return self._forward(self.to_device(x, np.zeros(1))[0]).copy()

    def _test_outputs(self, x, y):
        """The TEST net's outputs and the targets, both in the blobs' (time-major for sequences) order."""
        xd, yd = self.to_device(x, y)
        return self._forward(xd), yd

    def _weight_targets(self, layer):
        kind, caffe_names = layer
        params = self.net.params
        if kind == "batchnorm":
            stats, scale = params[caffe_names[0]], params[caffe_names[1]]
            return batchnorm_targets(scale[0], scale[1], stats[0], stats[1])
        if kind in ("conv", "dense"):
            blobs = params[caffe_names[0]]
            return kernel_targets(blobs[0], blobs[1] if len(blobs) > 1 else None)
        return None

    def _weight_shape(self, blob):
        return blob.data.shape

    def _set_weight(self, blob, array):
        blob.data[...] = array

    def _weights_loaded(self, layers):
        """BatchNorm's third blob, the running sums' weight (not counted), to 1: the statistics as loaded."""
        for kind, caffe_names in layers.values():
            if kind == "batchnorm":
                self.net.params[caffe_names[0]][2].data[...] = 1.0
