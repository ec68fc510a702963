"""PyTorch adapter (torch >= 1.0: today's, and 1.0.0 for the studies' 0.3): builds the job's layer list as nn
modules and trains it with torch.optim. Before 1.7 there is no TF32 switch (nor TF32), before 1.5 no
channels_last, before 1.2 no nn.Flatten: the era's defaults run, and the options that need those are refused
(its era record in runner.frameworks).

Idioms: ``model.train()`` for training steps, ``model.eval()`` and ``torch.no_grad()``
for evaluation and feature extraction; cuDNN autotuning (``cudnn.benchmark``)
follows the job, on by default as DeepLearningFrameworks' README (lesson 3)
recommends; recurrent layers are nn.LSTM / nn.GRU (cuDNN kernels on GPU). On CUDA the model's
parameters are made and initialised on the GPU (torch >= 2.0), from the job's seed (torch.manual_seed
seeds the CUDA generator too), so they differ from a CPU build's draws of the same distributions.

Precision (job["precision"]): "fp32" means true fp32: TF32 is switched off for matmuls
AND cuDNN convolutions, since the studies' GPUs (K80, P100, GTX 1080) had no TF32 (PyTorch's
own default on Ampere and later is TF32 on for cuDNN convolutions, off for matmuls).
"tf32": on for both. "bf16" / "fp16": torch.autocast around forward and loss, parameters
and optimizer state in fp32 (fp16 with a GradScaler), TF32 off for what stays fp32.
Layout (job["layout"]): "default" is NCHW; "channels_last" converts the model and every
4-d input to torch.channels_last. job["compile"]: torch.compile the model.
On CUDA the measured repeats are timed with CUDA events (``device_clock``; runner.measure).

Timed step (``train_step``): zero_grad (set_to_none; zeroed in place before torch 1.7), forward, loss,
backward, optimizer step, as the studies' PyTorch loops (DeepLearningFrameworks' notebooks; DLBench ran Lua
Torch's forward, backward, updateParameters). Nothing else: the loss is returned as a device tensor (no host sync per
step); gradient clipping and autocast / GradScaler only where the spec or --precision asks.
"""

import contextlib
import inspect
import math
import os

import torch
import torch.nn.functional as F
from torch import nn

from runner import data as datamod
from runner import shapes
from runner.adapters import UnsupportedError, torch_layers
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets, test_metrics

# gradients dropped before each step (torch >= 1.7; the default from 2.0), zeroed in place before (the studies' era)
ZERO_GRAD = (
    {"set_to_none": True} if "set_to_none" in inspect.signature(torch.optim.Optimizer.zero_grad).parameters else {}
)

# torch.cuda.current_stream takes the device (torch >= 1.1)
STREAM_OF_DEVICE = "device" in inspect.signature(torch.cuda.current_stream).parameters


def _tf32_switches():
    """Whether this torch has the TF32 switches (1.7 and later)."""
    return hasattr(getattr(torch.backends, "cuda", None), "matmul")


@contextlib.contextmanager
def _nothing():
    yield


def _made_on(device):
    """The block's new tensors are made on ``device`` (torch >= 2.0, CUDA): a model's parameters are created and
    initialised where they train, with no host copy to fill and move (FCN-S's 118 million parameters took 1.0 s
    to build on the host of an H200, most of the job's time outside its warm-up and measured window). On the CPU,
    or before torch 2.0, nothing changes: the model is built on the host."""
    return device if device.type == "cuda" and hasattr(device, "__enter__") else _nothing()


def _initialize(model, init):
    """Apply the spec's initialisation; "default" keeps PyTorch's own."""
    scheme = init["scheme"]
    if scheme == "default":
        return
    if scheme == "uniform":  # every parameter U(-scale, scale), as TensorFlow's PTB models do
        for p in model.parameters():
            nn.init.uniform_(p, -init["scale"], init["scale"])
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


def _loss(loss):
    """The job's loss as f(outputs, targets) -> scalar.

    softmax_cross_entropy over the last axis: reduction "mean" averages over every
    prediction (samples, or tokens of a sequence); "sum_over_time" sums a sequence's
    tokens and averages over sequences, as TensorFlow's PTB model (sequence_loss_by_example
    / batch_size). sigmoid_binary_cross_entropy: the mean over all labels of logits.
    """
    if loss["name"] == "sigmoid_binary_cross_entropy":
        return F.binary_cross_entropy_with_logits
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("torch adapter has no loss %r" % loss["name"])
    if loss.get("reduction", "mean") == "sum_over_time":
        return lambda out, y: (
            F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="sum") / y.shape[0]
        )
    return lambda out, y: F.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))


def _optimizer(params, opt):
    if opt["name"] == "sgd":
        return torch.optim.SGD(
            params,
            lr=opt["lr"],
            momentum=opt.get("momentum", 0.0),
            weight_decay=opt.get("weight_decay", 0.0),
            nesterov=opt.get("nesterov", False),
        )
    if opt["name"] == "adam":
        return torch.optim.Adam(
            params,
            lr=opt["lr"],
            betas=tuple(opt.get("betas", (0.9, 0.999))),
            eps=opt.get("eps", 1e-8),
            weight_decay=opt.get("weight_decay", 0.0),
        )
    raise UnsupportedError("torch adapter has no optimizer %r" % opt["name"])


def _torchvision_resnet_as_keras(files):
    """torchvision ResNet state-dict entries under Keras/Caffe layer names, in Keras layouts.

    conv1 -> conv1, bn1 -> bn_conv1, layerL.B.convK / bnK -> res{L+1}{B}_branch2{a,b,c},
    layerL.B.downsample.0 / .1 -> res{L+1}{B}_branch1, fc -> fc1000.
    """
    import io

    state = torch.load(io.BytesIO(datamod.read_verified(files["state_dict"])), map_location="cpu")
    out = {}
    for key, value in state.items():
        parts = key.split(".")
        array = value.numpy()
        if parts[0] in ("conv1", "bn1", "fc"):
            layer, field = {"conv1": "conv1", "bn1": "bn_conv1", "fc": "fc1000"}[parts[0]], parts[1]
        else:
            tag = "%d%s" % (int(parts[0][len("layer") :]) + 1, shapes.block_letter(int(parts[1])))
            if parts[2] == "downsample":
                layer, field = ("res" if parts[3] == "0" else "bn") + tag + "_branch1", parts[4]
            else:
                kind, branch = parts[2][:-1], "abc"[int(parts[2][-1]) - 1]
                layer, field = ("res" if kind == "conv" else "bn") + tag + "_branch2" + branch, parts[3]
        if field == "num_batches_tracked":
            continue
        if layer.startswith("bn"):
            field = {
                "weight": "gamma",
                "bias": "beta",
                "running_mean": "moving_mean",
                "running_var": "moving_variance",
            }[field]
        elif field == "weight":  # back to Keras layouts, which load_weights transposes
            array = array.transpose(2, 3, 1, 0) if array.ndim == 4 else array.T
            field = "kernel"
        out["%s/%s" % (layer, field)] = array
    return out


def _compiled_graphs():
    """How many graphs torch.compile (dynamo) has compiled in this process since its last reset."""
    import torch._dynamo.utils

    return torch._dynamo.utils.counters["stats"]["unique_graphs"]


def _recompile_limit():
    import torch._dynamo.config as config

    return getattr(config, "recompile_limit", None) or getattr(config, "cache_size_limit", None)


def _peer_access():
    """{"i->j": whether GPU i can read GPU j's memory directly (P2P)} over the GPUs this process sees."""
    count = torch.cuda.device_count()
    return dict(
        ("%d->%d" % (i, j), bool(torch.cuda.can_device_access_peer(i, j)))
        for i in range(count)
        for j in range(count)
        if i != j
    )


class _EventClock(object):
    """torch.cuda.Event timing events on ``stream`` (runner.adapters.base ``device_clock``)."""

    def __init__(self, stream):
        self.stream = stream

    def marks(self, count):
        events = [torch.cuda.Event(enable_timing=True) for _ in range(count)]
        for event in events:  # made now: torch creates a CUDA event at its first record, a driver call that
            event.record(self.stream)  # would otherwise fall inside every timed iteration (cudaEventCreate)
        return events

    def record(self, event, result):
        event.record(self.stream)

    def wait(self, event):
        event.synchronize()

    def seconds(self, start, end):
        return start.elapsed_time(end) / 1000.0

    def forget(self, events):
        pass


class Adapter(Base):
    name = "torch"

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.distributed = job.get("ranks") is not None
        local = int(os.environ.get("LOCAL_RANK", "0")) if self.distributed else 0
        self.device = torch.device("cuda:%d" % local if job["device"] == "cuda" else "cpu")
        if self.distributed:  # env:// rendezvous (runner.ranks); every collective has the job's time limit
            import datetime

            import torch.distributed as dist

            if self.device.type == "cuda":
                torch.cuda.set_device(self.device)
            dist.init_process_group(
                "nccl" if self.device.type == "cuda" else "gloo",
                rank=int(os.environ["RANK"]),
                world_size=job["ranks"],
                timeout=datetime.timedelta(seconds=job.get("timeout_s") or 1800),
            )
        self.build_name = "torch %s" % torch.__version__
        if job.get("threads"):
            torch.set_num_threads(job["threads"])
        precision = job.get("precision", "fp32")
        tf32 = precision == "tf32"
        if _tf32_switches():  # torch >= 1.7; older builds have no TF32 to turn off
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
        torch.backends.cudnn.benchmark = bool(job.get("cudnn_autotune", True))
        self.amp_dtype = (
            (torch.bfloat16 if precision == "bf16" else torch.float16) if precision in ("bf16", "fp16") else None
        )  # looked up only then: torch < 1.3 has no bfloat16
        self.scaler = None
        if precision == "fp16" and self.device.type == "cuda":
            self.scaler = torch.cuda.amp.GradScaler()
        # None: PyTorch's default (contiguous) layout, the only one before 1.5
        self.memory_format = torch.channels_last if job.get("layout", "default") == "channels_last" else None
        torch.manual_seed(job.get("seed", 0))
        self.model, self.named, self.clip_norm = None, {}, None

    def _autocast(self):
        if self.amp_dtype is None:
            return _nothing()
        return torch.autocast(self.device.type, dtype=self.amp_dtype)

    def gpu_capability(self):
        """(GPU name, compute capability "X.Y") of the job's GPU; None on the CPU."""
        if self.device.type != "cuda":
            return None
        major, minor = torch.cuda.get_device_capability(self.device)
        return torch.cuda.get_device_name(self.device), "%d.%d" % (major, minor)

    def cuda_archs(self):
        """The architectures this torch build ships kernels (sm_XY) and PTX (compute_XY) for; [] where torch cannot
        say (before 1.6): the image matrix's list is used then."""
        if not torch.cuda.is_available() or not hasattr(torch.cuda, "get_arch_list"):  # torch < 1.6 cannot say
            return []
        return list(torch.cuda.get_arch_list())

    def device_clock(self):
        """On CUDA, CUDA events on the device's current stream (runner.adapters.base ``device_clock``); None
        elsewhere."""
        if self.device.type != "cuda":
            return None
        if not STREAM_OF_DEVICE:  # torch 1.0: the current device's
            with torch.cuda.device(self.device):
                return _EventClock(torch.cuda.current_stream())
        return _EventClock(torch.cuda.current_stream(self.device))

    def environment(self):
        env = {
            "framework": "torch",
            "framework_version": torch.__version__,
            "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads() if hasattr(torch, "get_num_interop_threads") else None,
            "mkldnn": torch.backends.mkldnn.is_available() if hasattr(torch.backends, "mkldnn") else None,
            "tf32": {"matmul": torch.backends.cuda.matmul.allow_tf32, "cudnn": torch.backends.cudnn.allow_tf32}
            if _tf32_switches()
            else None,
            "autocast": str(self.amp_dtype).replace("torch.", "") if self.amp_dtype is not None else None,
            "grad_scaler": self.scaler is not None,
            "cudnn_autotune": torch.backends.cudnn.benchmark if self.device.type == "cuda" else None,
            "layout": "NHWC (channels_last)" if self.memory_format is not None else "NCHW",
            "compile": bool(self.job.get("compile")),
            "cuda_graphs": False,
            "zero_grad": "set to none" if ZERO_GRAD else "zeroed in place",
        }
        if self.distributed:
            import torch.distributed as dist

            env["data_parallel"] = {
                "backend": dist.get_backend(),
                "world_size": dist.get_world_size(),
                "rank": dist.get_rank(),
                "how": "DistributedDataParallel",
                "broadcast_buffers": False,
                "gradient_as_bucket_view": True,
                "nccl": ".".join(map(str, torch.cuda.nccl.version())) if self.device.type == "cuda" else None,
                "peer_access": _peer_access() if self.device.type == "cuda" else None,
            }
        if self.device.type == "cuda":
            props = torch.cuda.get_device_properties(self.device)
            env["gpu"] = {
                "name": props.name,
                "capability": "%d.%d" % (props.major, props.minor),
                "memory_bytes": props.total_memory,
                "arch_list": self.cuda_archs() or None,
                "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            }
        return env

    def build(self):
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        with _made_on(self.device):
            self.model = torch_layers.sequential(layers, tuple(model["input_shape"]), self.named)
            _initialize(self.model, model.get("init", {"scheme": "default"}))
        self.model.to(self.device, **self._layout())
        self.model.train(self.job["mode"] != "inference")
        if self.job.get("compile"):  # dynamo's caches start empty: an earlier job's entries in this warm worker
            torch._dynamo.reset()  # would fill its per-frame recompile limit, and a job past it runs eager
            self.compiled_before = _compiled_graphs()
            self.forward = torch.compile(self.model)
        else:
            self.forward = self.model
        if self.distributed:  # gradients averaged across the ranks during backward
            # each rank keeps its own batch-norm statistics, as the studies' frameworks did (no broadcast of rank
            # 0's buffers before every forward); gradients live in the all-reduce buckets (no copy in and out)
            self.forward = nn.parallel.DistributedDataParallel(
                self.forward,
                device_ids=[self.device.index] if self.device.type == "cuda" else None,
                broadcast_buffers=False,
                gradient_as_bucket_view=True,
            )
        self.loss_fn = _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}))
        if self.job.get("optimizer"):  # none for inference
            self.clip_norm = self.job["optimizer"].get("clip_norm")
            self.optimizer = _optimizer(self.model.parameters(), self.job["optimizer"])
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad)

    def _weight_arrays(self, weights):
        """tfjs-layers weights, or torchvision's ResNet state dict under the same Keras names and layouts."""
        if weights["format"] == "torchvision-state-dict":
            return _torchvision_resnet_as_keras(weights["files"])
        return super(Adapter, self)._weight_arrays(weights)

    def _weight_targets(self, m):
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            return batchnorm_targets(m.weight, m.bias, m.running_mean, m.running_var)
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            return kernel_targets(m.weight, m.bias)
        return None

    def _set_weight(self, target, array):
        with torch.no_grad():
            target.copy_(torch.from_numpy(array.copy()))

    def _input(self, x):
        x = torch.from_numpy(x).to(self.device)
        return x.contiguous(**self._layout()) if x.dim() == 4 else x

    def _layout(self):
        """The memory_format argument of a channels_last job; none otherwise (torch < 1.5 takes none)."""
        return {"memory_format": self.memory_format} if self.memory_format is not None else {}

    def to_device(self, x, y):
        return self._input(x), torch.from_numpy(y).to(self.device)

    def ran(self):
        """With --compile: ``compiled_graphs``, the graphs torch.compile compiled for this job. None compiled means
        the model ran eager: the job fails rather than report eager timings as compiled."""
        if not self.job.get("compile"):
            return {}
        graphs = _compiled_graphs() - self.compiled_before
        if graphs < 1:
            raise RuntimeError(
                "torch.compile compiled no graph for this job: it ran eager (recompile limit %s)" % _recompile_limit()
            )
        return {"compiled_graphs": graphs}

    def release(self):
        """Drop the model and optimizer (and a data-parallel job's process group) and give their device memory
        back to the GPU; a compiled job's dynamo caches go too."""
        if self.__dict__.get("distributed"):
            import torch.distributed as dist

            dist.destroy_process_group()
        if (self.__dict__.get("job") or {}).get("compile"):
            torch._dynamo.reset()
        super(Adapter, self).release()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def barrier(self):
        if self.distributed:
            import torch.distributed as dist

            dist.barrier(device_ids=[self.device.index] if self.device.type == "cuda" else None)

    def parameters(self):
        return [p.detach().cpu().numpy().copy() for p in self.model.parameters() if p.requires_grad]

    def reset_state(self):
        for m in self.model.modules():
            if isinstance(m, torch_layers.Recurrent):
                m.state = None

    def train_step(self, x, y):
        self.optimizer.zero_grad(**ZERO_GRAD)
        if self.amp_dtype is None:
            loss = self.loss_fn(self.forward(x), y)
        else:
            with torch.autocast(self.device.type, dtype=self.amp_dtype):
                loss = self.loss_fn(self.forward(x), y)
        if self.scaler is not None:
            self.scaler.scale(loss).backward()
            if self.clip_norm:
                self.scaler.unscale_(self.optimizer)
                nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            return loss.detach()
        loss.backward()
        if self.clip_norm:
            nn.utils.clip_grad_norm_(self.model.parameters(), self.clip_norm)
        self.optimizer.step()
        return loss.detach()

    def synchronize(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def losses(self, handles):
        if not handles:
            return []
        return [float(v) for v in torch.stack(handles).cpu().tolist()]

    def infer(self, x):
        with torch.no_grad(), self._autocast():
            return self.forward(self._input(x)).float().cpu().numpy()

    def evaluate(self, batches, target):
        """Test metrics over numpy ``batches``: test_accuracy (classes), mean_token_loss (sequences), test_loss."""
        self.model.eval()
        correct = total = 0
        loss_sum = 0.0
        with torch.no_grad():
            for x, y in batches:
                with self._autocast():
                    out = self.forward(self._input(x)).float()
                yd = torch.from_numpy(y).to(self.device)
                if target == "multilabel":
                    loss_sum += float(F.binary_cross_entropy_with_logits(out, yd, reduction="sum"))
                    total += yd.numel()
                else:
                    flat, labels = out.reshape(-1, out.shape[-1]), yd.reshape(-1)
                    loss_sum += float(F.cross_entropy(flat, labels, reduction="sum"))
                    correct += int((flat.argmax(dim=1) == labels).sum())
                    total += labels.numel()
        self.model.train()
        return test_metrics(target, loss_sum, correct, total)
