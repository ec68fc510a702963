"""The adapter interface: every hook that runner.job and runner.measure call, documented once, with its default.

Each framework's module ``runner/adapters/<framework>_adapter.py`` defines ``class Adapter(Base)``
(``from runner.adapters.base import Adapter as Base``), constructed by ``runner.adapters.load(job)``
from the job dict (runner.contract's job.json) before the model exists. Hooks that every framework
must implement raise NotImplementedError here; the others have a default that says what it assumes.
Python 3.6 syntax, standard library and numpy only (this module runs in every framework's image).

Arrays. The numpy mini-batches are runner.data's (synthetic_batch, the datasets' batches):
  x  images (N, C, H, W) float32, flat features (N, F) float32, or token ids (N, T) int64;
  y  class indices (N,) int64, next-token ids (N, T) int64 (target "sequence"), or labels
     (N, K) float32 in [0, 1] (target "multilabel").
Outputs (``infer``) are the model's last layer, float32 on the host: logits (N, classes),
(N, T, classes) for sequences, (N, K) for multi-label targets, features (N, ...) for a
feature extractor. "Device values" are whatever the framework keeps on the job's device
(tensors, fed blobs, ...): ``to_device`` makes them, ``train_step`` takes them and returns one.

Pretrained weights (``load_weights``) come by Keras weight name, "<layer>/<field>", where
<layer> is the spec's layer name: conv "kernel" (kh, kw, in, out) and "bias" (out,); dense
"kernel" (in, out) and "bias" (out,); batchnorm "gamma", "beta", "moving_mean",
"moving_variance" (C,). The base does what is common (which fields a layer takes, the layout
change, the missing-weight and shape checks, the count, the record); an adapter says which
targets a named layer has (``_weight_targets``), their shape and how to set one.
"""

import numpy as np

from runner import data as datamod
from runner.adapters import UnsupportedError

BATCHNORM_FIELDS = ("gamma", "beta", "moving_mean", "moving_variance")
# np.transpose axes from Keras's kernel layouts, conv (kh, kw, in, out) and dense (in, out)
OIHW = (3, 2, 0, 1)  # (out, in, kh, kw)
HWIO = (0, 1, 2, 3)  # Keras's own
OUT_IN = (1, 0)
IN_OUT = (0, 1)  # Keras's own


def test_metrics(target, loss_sum, correct, total):
    """What every adapter's evaluate returns, from sums over ``total`` test samples (tokens for
    sequences): {"test_accuracy" (fraction), "test_loss"} for classes, {"mean_token_loss"} for
    sequences, {"test_loss"} for multilabel targets (losses in nats per sample, token or label)."""
    if target == "sequence":
        return {"mean_token_loss": loss_sum / total}
    if target == "multilabel":
        return {"test_loss": loss_sum / total}
    return {"test_accuracy": correct / float(total), "test_loss": loss_sum / total}


def kernel_targets(kernel, bias):
    """``_weight_targets`` of a conv or dense layer: [(field, target)] (``bias`` None: the layer has none)."""
    return [("kernel", kernel)] + ([("bias", bias)] if bias is not None else [])


def batchnorm_targets(gamma, beta, mean, variance):
    """``_weight_targets`` of a batch-norm layer: scale, shift, running mean and running variance."""
    return list(zip(BATCHNORM_FIELDS, (gamma, beta, mean, variance)))


class Adapter(object):
    """One framework's way of building, training and running the job's model (see the module docstring)."""

    name = None  # the framework, as job["framework"]
    conv_kernel_axes = OIHW  # where the framework keeps a conv kernel's axes, from Keras's (kh, kw, in, out)
    dense_kernel_axes = OUT_IN  # and a dense kernel's, from Keras's (in, out)

    def __init__(self, job):
        self.job = job
        self.build_name = self.name  # the build named in an architecture refusal; adapters add the version

    def _lacks(self, hook):
        return NotImplementedError("the %s adapter does not implement %s (runner.adapters.base)" % (self.name, hook))

    # ------------------------------------------------------------------ describing

    def environment(self):
        """dict for result.json's environment: framework, framework_version, cuda, cudnn (None on the CPU),
        threads, layout, and whatever else decides the numbers (precision modes, build features, device)."""
        raise self._lacks("environment()")

    def ran(self):
        """dict for result.json's environment once the job measured: what actually ran, where only the run can
        tell (torch: the graphs torch.compile compiled); {} by default."""
        return {}

    def gpu_capability(self):
        """(GPU name, compute capability "X.Y") of a cuda job's GPU, for the architecture check
        (runner.archs); None: the adapter cannot tell, recorded as "unknown" and nothing checked."""
        return None

    def cuda_archs(self):
        """The architectures the framework build says it ships ("sm_XY" cubins, "compute_XY" PTX);
        None or []: it does not say, and the image matrix's table (job["cuda_archs"]) is used."""
        return None

    def device_clock(self):
        """The device's own clock for runner.measure's "device_events" timer, or None (the job's device has none
        this adapter can reach: the CPU, or a framework that exposes no stream; measure then takes the repeat's
        pipelined wall time on a GPU, the host clock around ``synchronize()`` on the CPU). A clock has
        ``marks(count)`` -> ``count`` events, made before the timed iterations; ``record(event, result)``: record
        the event in stream order once the step that returned ``result`` is done, without waiting on the host;
        ``wait(event)``: block until it has completed; ``seconds(start, end)``: device seconds between two
        completed events; ``forget(events)``: let completed events go."""
        return None

    # ------------------------------------------------------------------ building

    def build(self):
        """Create the model of job["model"]["layers"] (runner.shapes.expand), its initialisation, loss
        and optimizer (none for inference); returns the number of trainable parameters (int)."""
        raise self._lacks("build()")

    def conventions(self):
        """How this framework's parameter count differs from the spec's by convention: [{name, difference
        (spec count - framework count), reason}], e.g. one LSTM bias vector per gate set; [] when it does not."""
        return []

    def load_weights(self, weights):
        """Copy pretrained weights (job["weights"]) into the named layers, after ``build``; returns
        {"name", "layers" (named layers), "values_loaded" (numbers copied)}.

        Raises DataError when a named layer has no weights or a weight of another shape,
        UnsupportedError for a layer kind or a weight format the adapter does not load.
        """
        source = self._weight_arrays(weights)
        layers = self._weight_layers()
        missing = sorted(set(layers) - set(key.split("/")[0] for key in source))
        if missing:
            raise datamod.DataError("the weights have nothing for layers %s" % ", ".join(missing[:5]))
        loaded = 0
        for name, layer in sorted(layers.items()):
            targets = self._weight_targets(layer)
            if targets is None:
                raise UnsupportedError("the %s adapter loads no pretrained weights into layer %s" % (self.name, name))
            for field, target in targets:
                key = "%s/%s" % (name, field)
                if key not in source:
                    raise datamod.DataError("the weights have no %s" % key)
                shape = tuple(self._weight_shape(target))
                array = self._from_keras(field, source[key], shape)
                if array.shape != shape:
                    raise datamod.DataError("weight %s has shape %s, the layer %s" % (key, array.shape, shape))
                self._set_weight(target, array)
                loaded += int(array.size)
        self._weights_loaded(layers)
        return {"name": weights.get("name"), "layers": len(layers), "values_loaded": loaded}

    def _weight_arrays(self, weights):
        """{Keras weight name: numpy array} of job["weights"]: "tfjs-layers" (runner.data.load_tfjs_layers);
        raises UnsupportedError for another format."""
        if weights["format"] != "tfjs-layers":
            raise UnsupportedError("%s adapter cannot read weights in %r" % (self.name, weights["format"]))
        return datamod.load_tfjs_layers(weights["files"])

    def _weight_layers(self):
        """{spec layer name: the framework's layer} of the layers that take pretrained weights (``self.named``)."""
        return self.named

    def _weight_targets(self, layer):
        """[(Keras field, target)] of a named layer (kernel_targets, batchnorm_targets); None: no weights to load."""
        raise self._lacks("_weight_targets() for load_weights()")

    def _weight_shape(self, target):
        """The shape of a target (a tuple of ints)."""
        return target.shape

    def _from_keras(self, field, array, shape):
        """A Keras array in the framework's layout (kernels: ``conv_kernel_axes``, ``dense_kernel_axes``)."""
        if field != "kernel":
            return array
        return array.transpose(self.conv_kernel_axes if array.ndim == 4 else self.dense_kernel_axes)

    def _set_weight(self, target, array):
        """Copy ``array`` (numpy, float32, the target's shape) into ``target``."""
        raise self._lacks("_set_weight() for load_weights()")

    def _weights_loaded(self, layers):
        """After every array is copied (``layers`` as ``_weight_layers`` gave them); nothing by default."""

    # ------------------------------------------------------------------ running

    def to_device(self, x, y):
        """Copy a numpy mini-batch (x, y) to the job's device; returns (x, y) as device values."""
        raise self._lacks("to_device()")

    def train_step(self, x, y):
        """One training iteration on device values from ``to_device``: forward, loss, backward, gradient
        clipping when the optimizer asks, update. Returns the loss as a device value, without waiting
        for the device (``losses`` reads it)."""
        raise self._lacks("train_step()")

    def reset_state(self):
        """Forget carried recurrent state (an epoch's or an evaluation's start); nothing by default."""

    def shard(self, x, y):
        """This rank's part of a total mini-batch (numpy, before ``to_device``): rows r*b .. (r+1)*b of a
        data-parallel job (runner.ranks; b = job["rank_batch_size"]), the whole batch otherwise. Adapters that
        drive several devices from one process split it their own way."""
        if self.job.get("ranks") is None:
            return x, y
        from runner import ranks

        b, r = self.job["rank_batch_size"], ranks.rank()
        return x[r * b : (r + 1) * b], y[r * b : (r + 1) * b]

    def barrier(self):
        """Wait until every rank of a data-parallel job reaches this point (each repeat's edges); nothing for a
        single process."""

    def parameters(self):
        """The trainable parameters as numpy arrays, in the model's order (for checking training steps against
        each other: one rank against several)."""
        raise self._lacks("parameters()")

    def release(self):
        """Give back what the job holds, so that the next job in the same process (runner.worker) starts fresh:
        its model, optimizer and device memory, and the framework caches that would carry over. By default the
        adapter's attributes are dropped and the garbage collector runs; adapters add their framework's own."""
        import gc

        self.__dict__.clear()
        gc.collect()

    def synchronize(self):
        """Block until the device has finished all queued work; nothing by default (a framework whose
        calls return when their work is done)."""

    def losses(self, handles):
        """Floats of the loss values that ``train_step`` returned; by default float() of each."""
        return [float(h) for h in handles]

    def infer(self, x):
        """Forward pass of a numpy batch ``x`` without gradients, in inference mode (dropout off, batch
        norm on its running statistics); returns the outputs as a numpy array on the host."""
        raise self._lacks("infer()")

    def evaluate(self, batches, target):
        """Test metrics (test_metrics) over numpy (x, y) ``batches``; ``target``: "class", "sequence", "multilabel".

        This default sums in float64 numpy over ``_test_outputs``: softmax cross entropy and top-1
        hits over the last axis, or the logits' binary cross entropy summed over every label.
        """
        correct = total = 0
        loss_sum = 0.0
        for x, y in batches:
            out, y = self._test_outputs(x, y)
            out = out.astype(np.float64)
            if target == "multilabel":
                loss_sum += float(np.sum(np.maximum(out, 0) - out * y + np.log1p(np.exp(-np.abs(out)))))
                total += y.size
                continue
            flat, labels = out.reshape(-1, out.shape[-1]), y.reshape(-1).astype(np.int64)
            shifted = flat - flat.max(axis=1, keepdims=True)
            log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
            loss_sum += float(-log_probs[np.arange(len(labels)), labels].sum())
            correct += int((flat.argmax(axis=1) == labels).sum())
            total += len(labels)
        return test_metrics(target, loss_sum, correct, total)

    def _test_outputs(self, x, y):
        """(outputs, targets) of a numpy test batch as numpy arrays in the same order of samples
        (and tokens); by default ``infer(x)`` and ``y``."""
        return self.infer(x), y
