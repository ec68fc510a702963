"""Lua Torch 7 adapter (torch7 + nn + optim built from their sources in the torch7 images, cutorch + cunn too in the
CUDA one): DLBench's fifth tool.

Torch 7 is a Lua library (LuaJIT), which no Python binding of its time reaches, so the adapter drives one LuaJIT
process per job, ``runner/adapters/torch7_harness.lua``, over its standard input and output (the protocol is at the
top of that file), and everything that makes the numbers stays in the Python runner: warm-up, the timed window
(runner.measure times ``train_step`` as for every other adapter), the result files. The model is Lua source made
from the spec's layers by runner.adapters.torch7_lua; its parameter count is the one Torch 7 reports
(``getParameters()``), so a spec's count is checked against Torch 7's own modules.

Timed step (``train_step``): one request line ("train <slot>") and one reply line with the loss: inside, the
harness runs ``optim.sgd`` / ``optim.adam`` on a closure that zeroes the gradients, runs forward, the criterion
and backward, as DLBench's Torch scripts did. ``gradients`` (runner.contract): "pruned" (the default) sets the first
module's ``gradInput`` to nil, so that its gradient with respect to the mini-batch, which nothing reads, is not
computed (the ``model:get(1).gradInput = nil`` of DLBench's Torch AlexNet and ResNet models); "gate_op" keeps nn's
backward as it is, which computes it (for FCN-S a 64 x 2048 by 2048 x 26752 product, 7.0 of 45 GFLOP a step), as
DLBench's Torch FCN scripts ran it. ``thread_pools`` "intra_op": Torch 7 has one pool (OpenMP's, with OpenBLAS's
threads), set from the variables either way; the process is then not confined (runner.settings), as DLBench's
"N threads" (OMP_NUM_THREADS alone) were not. The request and the reply are a pipe round trip each (tens of
microseconds against FCN-R's milliseconds); Torch 7 runs synchronously on the CPU, so the reply means the update
is done. ``to_device`` copies the float32 mini-batch and its labels into one of two slots of the harness
(Torch tensors; a batch replaces the one before the last), as another framework copies to its device; a real-data
job does it inside the step, as it does for every adapter (runner.measure).

Conventions: labels are 1-based in Torch 7 (the harness adds 1); the loss is nn.CrossEntropyCriterion (softmax
cross entropy averaged over the mini-batch); optim.sgd runs with dampening 0 (its default dampening equals the
momentum; PyTorch's and Caffe's is 0), weight decay added to the gradient before momentum, as PyTorch's.
Initialisation: "default" is each nn module's own reset(); "xavier" Caffe's XavierFiller (U(+-sqrt(3/fan_in))),
"glorot_uniform" Glorot's, "uniform" every parameter U(+-scale); biases 0.

Device cuda (images/matrix.yaml torch7-7.0-cuda): the harness loads cutorch and cunn, initialises the model on the
CPU (one seed, one model on either device), then moves the model, the criterion and each mini-batch to the GPU
(``:cuda()``; labels ``:cudaLong()``); ``synchronize`` is ``cutorch.synchronize()``, which runner.measure calls
before each clock read (the "pipelined_wall" timer: no device clock is reached from here). Convolutions are cunn's
own (im2col + cuBLAS): cudnn.torch is not built (it needs cuDNN 7, which no CUDA 11 has), where DLBench's Torch ran
cuDNN. One GPU per job (the first visible one), float32 only, no data-parallel path (cunn's nn.DataParallelTable is
not driven). A cuda job where cutorch or cunn does not load (the CPU image has neither; without a GPU cutorch
stops at device discovery: "cuda runtime error (100) : no CUDA-capable device is detected") is recorded failed with
that line (runner.job), before anything is built.

Python 3.6 syntax, standard library and numpy only.
"""

import os
import subprocess

import numpy as np

from runner import buildinfo, shapes
from runner.adapters import UnsupportedError, torch7_lua
from runner.adapters.base import Adapter as Base

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch7_harness.lua")
LUAJIT = os.environ.get("DLREPRO_LUAJIT", "luajit")


class HarnessError(RuntimeError):
    """The Lua harness answered with an error, or ended."""


def gradients_text(pruned):
    """What the step's backward computes, given the module whose input gradient the harness pruned ("none": none)."""
    if pruned == "none":
        return "nn's backward: every module's gradient with respect to its input, the first's (the mini-batch's) too"
    return "nn's backward less the first module's (%s) gradient with respect to the mini-batch (gradInput nil)" % pruned


class Harness(object):
    """A running torch7_harness.lua: ``call(line, payload)`` -> (reply text, reply payload or None)."""

    def __init__(self, command=None):
        self.process = subprocess.Popen(
            command or [LUAJIT, HARNESS], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )  # its stderr is the job's

    def call(self, line, payload=b"", reply_bytes=None):
        """Send one request; returns the reply's text, and with ``reply_bytes`` (a function of the text giving a
        byte count) the payload too. Raises HarnessError with the harness's message."""
        self.process.stdin.write(line.encode() + b"\n" + payload)
        self.process.stdin.flush()
        answer = self.process.stdout.readline().decode().rstrip("\n")
        if not answer.startswith("= "):
            raise HarnessError(
                "the Torch 7 harness %s: %s"
                % ("ended (exit status %s)" % self.process.wait() if not answer else "failed", answer[2:] or answer)
            )
        text = answer[2:]
        if reply_bytes is None:
            return text
        return text, self.process.stdout.read(reply_bytes(text))

    def close(self):
        if self.process.poll() is None:
            try:
                self.process.stdin.write(b"quit\n")
                self.process.stdin.close()
            except OSError:
                pass
            self.process.wait()


DEVICES = ("cpu", "cuda")
GPU_CODE = "cunn's own kernels: convolutions by im2col + cuBLAS GEMM (no cuDNN: cudnn.torch is not built), float32"


def setup_request(job):
    """The harness's first request for ``job``: "setup <threads> <seed> <device>" (device cuda loads cutorch and
    cunn there)."""
    return "setup %d %d %s" % (job.get("threads") or 0, job.get("seed") or 0, job["device"])


def gpu_record(fields):
    """result.json's ``gpu`` of a cuda job from the setup reply's GPU fields (name, "major.minor", memory bytes,
    CUDA runtime and driver versions as cudaRuntimeGetVersion gives them, e.g. 11080): {name, capability,
    memory_bytes, cuda_runtime ("11.8"), cuda_driver ("12.2")}."""
    name, capability, memory, runtime, driver = fields

    def dotted(number):
        return "%d.%d" % (int(number) // 1000, int(number) % 1000 // 10)

    return {
        "name": name,
        "capability": capability,
        "memory_bytes": int(memory),
        "cuda_runtime": dotted(runtime),
        "cuda_driver": dotted(driver),
    }


class Adapter(Base):
    name = "torch7"

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        if job["device"] not in DEVICES:
            raise UnsupportedError("the torch7 adapter runs on %s, not %s" % (" or ".join(DEVICES), job["device"]))
        self.build_name = "torch7 (Lua)"
        self.harness = Harness()
        self.slots, self.pruned = 0, "none"  # pruned: set by build()
        try:
            reply = self.harness.call(setup_request(job)).split("|")
        except HarnessError:
            self.harness.close()  # no adapter is returned, so nothing else would end the LuaJIT process
            raise
        self.lua = {"luajit": reply[0], "threads": int(reply[1]), "openmp": reply[2]}
        self.gpu = gpu_record(reply[3:]) if job["device"] == "cuda" else None

    def environment(self):
        return {
            "framework": "torch7",
            "framework_version": buildinfo.torch7_version(buildinfo.torch7_sources()),
            "sources": buildinfo.torch7_sources(),
            "luajit": self.lua["luajit"],
            "openmp": self.lua["openmp"],
            "threads": self.lua["threads"],
            "cuda": self.gpu["cuda_runtime"] if self.gpu else None,
            "cudnn": None,
            "gpu": self.gpu,
            "gpu_code": GPU_CODE if self.gpu else None,
            "layout": "NCHW",
            "gradients": gradients_text(self.pruned),
            "driver": "runner.adapters.torch7_harness.lua over a pipe (one LuaJIT process per job)",
        }

    def gpu_capability(self):
        return (self.gpu["name"], self.gpu["capability"]) if self.gpu else None

    def synchronize(self):
        if self.gpu:
            self.harness.call("sync")

    def build(self):
        model = self.job["model"]
        if model.get("target", "class") != "class":
            raise UnsupportedError("the torch7 adapter trains class targets only (nn.CrossEntropyCriterion)")
        layers = shapes.expand(model["layers"], model["input_shape"])
        try:
            source = torch7_lua.model_source(layers, model["input_shape"]).encode()
        except torch7_lua.NoModule as exc:
            raise UnsupportedError("the torch7 adapter: %s" % exc)
        count, self.pruned = self.harness.call(
            "model %d %s" % (len(source), self.job.get("gradients", "pruned")), source
        ).split()
        count = int(count)
        init = model.get("init", {"scheme": "default"})
        if init["scheme"] not in ("default", "xavier", "glorot_uniform", "uniform"):
            raise UnsupportedError("the torch7 adapter has no initialisation %r" % init["scheme"])
        self.harness.call("init %s %s" % (init["scheme"], repr(float(init.get("scale") or 0.0))))
        opt = self.job.get("optimizer")
        if opt:
            if opt.get("clip_norm"):
                raise UnsupportedError("the torch7 adapter does not clip gradients (optim has no clip_norm)")
            betas = opt.get("betas") or (0.9, 0.999)
            self.harness.call(
                "optim %s %r %r %d %r %r %r %r"
                % (
                    opt["name"],
                    float(opt["lr"]),
                    float(opt.get("momentum", 0.0)),
                    int(opt.get("nesterov", False)),
                    float(opt.get("weight_decay", 0.0)),
                    float(betas[0]),
                    float(betas[1]),
                    float(opt.get("eps") or 1e-8),
                )
            )
        return count

    def to_device(self, x, y):
        x = np.ascontiguousarray(x, dtype=np.float32)
        y = np.ascontiguousarray(y, dtype=np.int64)
        self.slots = self.slots % 2 + 1  # two slots in turn: a batch replaces the one before the last
        return self._send(self.slots, x, y), None

    def _send(self, slot, x, y):
        xb, yb = x.tobytes(), y.tobytes()
        self.harness.call(
            "batch %d %d %d %d %s" % (slot, x.shape[0], len(xb), len(yb), " ".join(str(d) for d in x.shape[1:])),
            xb + yb,
        )
        return slot

    def train_step(self, x, y):
        return float(self.harness.call("train %d" % x))

    def infer(self, x):
        slot = self._send(0, np.ascontiguousarray(x, dtype=np.float32), np.zeros(len(x), dtype=np.int64))
        text, data = self.harness.call("infer %d" % slot, reply_bytes=lambda t: int(t.split()[0]))
        return np.frombuffer(data, dtype=np.float32).reshape([int(d) for d in text.split()[1:]])

    def parameters(self):
        text, data = self.harness.call("params", reply_bytes=lambda t: int(t.split()[1]))
        sizes = [int(s) for s in text.split()[2:]]
        flat = np.frombuffer(data, dtype=np.float32)
        return [flat[sum(sizes[:i]) : sum(sizes[: i + 1])].copy() for i in range(len(sizes))]

    def release(self):
        harness = self.__dict__.get("harness")
        if harness is not None:
            harness.close()
        super(Adapter, self).release()
