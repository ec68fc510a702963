"""PyTorch adapter (torch >= 1.10): builds the job's layer list as an ``nn.Sequential``, trains it with torch.optim.

Precision "fp32" means true fp32: TF32 is switched off for matmuls and cuDNN
convolutions, since the studies' GPUs (K80, P100, GTX 1080) had no TF32.
cuDNN autotuning (``cudnn.benchmark``) follows the job, on by default as
DeepLearningFrameworks' README (lesson 3) recommends.
"""
import math

import torch
from torch import nn

from runner import shapes
from runner.adapters import UnsupportedError

_ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}


def _module(layer, in_shape):
    kind = layer["type"]
    if kind == "conv":
        return nn.Conv2d(in_shape[0], layer["filters"], layer["kernel"], stride=layer.get("stride", 1),
                         padding=layer.get("pad", 0), bias=layer.get("bias", True))
    if kind in ("maxpool", "avgpool"):
        cls = nn.MaxPool2d if kind == "maxpool" else nn.AvgPool2d
        kwargs = {"count_include_pad": True} if kind == "avgpool" else {}
        return cls(layer["kernel"], stride=layer.get("stride", layer["kernel"]), padding=layer.get("pad", 0),
                   ceil_mode=layer.get("ceil", False), **kwargs)
    if kind == "dense":
        return nn.Linear(in_shape[0], layer["units"], bias=layer.get("bias", True))
    if kind == "dropout":
        return nn.Dropout(layer["rate"])
    if kind == "flatten":
        return nn.Flatten()
    if kind in _ACTIVATIONS:
        return _ACTIVATIONS[kind]()
    raise UnsupportedError("torch adapter has no layer type %r" % kind)


def _initialize(model, scheme):
    """Apply the spec's weight initialisation; biases start at zero except for "default"."""
    if scheme == "default":
        return
    for m in model.modules():
        if not isinstance(m, (nn.Conv2d, nn.Linear)):
            continue
        receptive = m.weight[0][0].numel()  # kh * kw for a conv weight (out, in, kh, kw), 1 for dense
        fan_in, fan_out = m.weight.shape[1] * receptive, m.weight.shape[0] * receptive
        if scheme == "xavier":  # Caffe XavierFiller, variance_norm FAN_IN: U(-a, a), a = sqrt(3 / fan_in)
            bound = math.sqrt(3.0 / fan_in)
        elif scheme == "glorot_uniform":  # Glorot & Bengio 2010: a = sqrt(6 / (fan_in + fan_out))
            bound = math.sqrt(6.0 / (fan_in + fan_out))
        else:
            raise UnsupportedError("torch adapter has no initialisation %r" % scheme)
        nn.init.uniform_(m.weight, -bound, bound)
        if m.bias is not None:
            nn.init.zeros_(m.bias)


class Adapter(object):
    name = "torch"

    def __init__(self, job):
        self.job = job
        self.device = torch.device("cuda:0" if job["device"] == "cuda" else "cpu")
        if job.get("threads"):
            torch.set_num_threads(job["threads"])
        if job.get("precision", "fp32") != "fp32":
            raise UnsupportedError("precision %r is not implemented yet" % job["precision"])
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = bool(job.get("cudnn_autotune", True))
        torch.manual_seed(job.get("seed", 0))
        self.model = None

    def environment(self):
        env = {
            "framework": "torch",
            "framework_version": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "mkldnn": torch.backends.mkldnn.is_available(),
            "tf32": {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32},
            "cudnn_autotune": torch.backends.cudnn.benchmark,
            "layout": "NCHW",
        }
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            env["gpu"] = {"name": props.name, "capability": "%d.%d" % (props.major, props.minor),
                          "memory_bytes": props.total_memory, "arch_list": torch.cuda.get_arch_list()}
        return env

    def build(self):
        model = self.job["model"]
        rows = shapes.trace(model["layers"], model["input_shape"])
        self.model = nn.Sequential(*[_module(layer, in_shape) for layer, in_shape, _, _ in rows])
        _initialize(self.model, model.get("init", "default"))
        self.model.to(self.device).train()
        if self.job.get("loss", "softmax_cross_entropy") != "softmax_cross_entropy":
            raise UnsupportedError("torch adapter has no loss %r" % self.job["loss"])
        opt = self.job["optimizer"]
        if opt["name"] != "sgd":
            raise UnsupportedError("torch adapter has no optimizer %r" % opt["name"])
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=opt["lr"], momentum=opt.get("momentum", 0.0),
                                         weight_decay=opt.get("weight_decay", 0.0))
        self.loss_fn = nn.CrossEntropyLoss()
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def to_device(self, x, y):
        return (torch.from_numpy(x).to(self.device, non_blocking=False),
                torch.from_numpy(y).to(self.device, non_blocking=False))

    def train_step(self, x, y):
        self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss.detach()

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def losses(self, handles):
        if not handles:
            return []
        return [float(v) for v in torch.stack(handles).cpu().tolist()]

    def accuracy(self, x, y, batch_size):
        self.model.eval()
        correct = 0
        with torch.no_grad():
            for i in range(0, len(x), batch_size):
                xb, yb = self.to_device(x[i:i + batch_size], y[i:i + batch_size])
                correct += int((self.model(xb).argmax(dim=1) == yb).sum())
        self.model.train()
        return correct / float(len(x))
