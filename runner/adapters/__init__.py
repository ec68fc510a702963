"""Framework adapters: one module per framework, all behind the same small interface.

An adapter is constructed from the job dict and offers:

- ``environment()``: dict of framework, CUDA/cuDNN versions, device name, threads.
- ``build()``: create the model from ``job["model"]["layers"]`` (runner.shapes, macros
  expanded), its initialisation, loss and optimizer; return the measured number of
  trainable parameters.
- ``conventions()``: how this framework's count differs from the spec's by convention, as
  [{name, difference (spec count - framework count), reason}] (e.g. Keras LSTMs keep one
  bias vector per gate set where cuDNN and PyTorch keep two); [] when it does not.
- ``load_weights(weights)``: copy pretrained weights (job["weights"]) into the named
  layers; returns a record of what was loaded.
- ``to_device(x, y)``: copy a numpy mini-batch (runner.data's shapes and dtypes) to
  the job's device; returns framework arrays.
- ``train_step(x, y)``: one training iteration (forward, backward, optional gradient
  clipping, update) on device arrays; returns the loss as a device value without
  synchronising.
- ``reset_state()``: forget carried recurrent state (start of an epoch or evaluation).
- ``synchronize()``: block until the device has finished all queued work.
- ``losses(handles)``: floats of loss values returned by ``train_step``.
- ``infer(x)``: forward pass without gradients in inference mode on a numpy batch;
  returns the outputs as numpy (copied back to the host).
- ``evaluate(batches, target)``: metrics over numpy (x, y) test batches: test_accuracy
  and test_loss for classes, mean_token_loss for sequences, test_loss for multi-label.

The module for framework ``name`` is ``runner.adapters.<name>_adapter`` and is
imported only when a job asks for it, so importing the runner never imports a
framework.
"""
import importlib
import os

SUFFIX = "_adapter.py"


class UnsupportedError(RuntimeError):
    """The framework adapter cannot express something the job asks for."""


def available():
    """Frameworks that have an adapter module here (found by file name, nothing imported)."""
    return sorted(f[:-len(SUFFIX)] for f in os.listdir(os.path.dirname(__file__)) if f.endswith(SUFFIX))


def load(job):
    """Construct the adapter for ``job["framework"]``; raises UnsupportedError for an unknown one."""
    name = job["framework"]
    try:
        module = importlib.import_module("runner.adapters.%s_adapter" % name)
    except ImportError as exc:
        if getattr(exc, "name", None) == "runner.adapters.%s_adapter" % name:
            raise UnsupportedError("no runner adapter for framework %r" % name)
        raise
    return module.Adapter(job)


def test_metrics(target, loss_sum, correct, total):
    """What every adapter's evaluate returns, from sums over ``total`` test samples (tokens for
    sequences): {"test_accuracy" (fraction), "test_loss"} for classes, {"mean_token_loss"} for
    sequences, {"test_loss"} for multilabel targets."""
    if target == "sequence":
        return {"mean_token_loss": loss_sum / total}
    if target == "multilabel":
        return {"test_loss": loss_sum / total}
    return {"test_accuracy": correct / float(total), "test_loss": loss_sum / total}


def tfjs_weights(weights, framework):
    """The arrays of pretrained weights in tfjs-layers format (runner.data.load_tfjs_layers), by
    Keras weight name; raises UnsupportedError for another format."""
    if weights["format"] != "tfjs-layers":
        raise UnsupportedError("%s adapter cannot read weights in %r" % (framework, weights["format"]))
    from runner import data
    return data.load_tfjs_layers(weights["files"])
