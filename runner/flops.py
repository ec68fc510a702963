"""Floating-point operations of one training iteration and of one inference pass, from a spec's layers.

Counted from the expanded layer list and the per-sample shapes that runner.shapes walks; the numbers
depend on nothing a framework chooses, so every framework's job of one spec, variant and mini-batch
gets the same count, and a published timing of that network can be set against the same work.

Rules (FLOPs, not multiply-adds):
  matrix products: a multiply-add is 2 FLOPs.
    conv     2 * (C_in * k * k) * (filters * H' * W') per sample;
    dense    2 * F * units per sample (per time step of a (T, F) input);
    lstm/gru 2 * gates * units * (F + units) per time step and layer (input and recurrent products;
             gates 4 for an LSTM, 3 for a GRU).
    Backward: the weight gradient costs what the forward product did, and so does the input
    gradient, which is not computed where nothing before the layer needs one (the first weighted
    layer on the data: its input is a constant) and, for the recurrent product, at the first time
    step (the initial state of a mini-batch, zeros or the detached state carried over, is a
    constant). So backward is 2x forward for every product but those.
  other (elementwise and reductions; small beside the products, counted as stated and not checked
    against any counter):
    bias add, activation (relu, sigmoid, tanh), dropout mask, residual add: 1 per output element;
    batch norm: 4 per element (statistics, normalise, scale, shift);
    max/avg pooling: kernel*kernel per output element; global average pooling: 1 per input element;
    recurrent cells: 2 bias adds and 1 nonlinearity per gate unit, 5 per unit for the state update;
    embedding, flatten, pad_channels, concat, last_step: 0 (copies, gathers);
    the loss: 3 per logit (softmax and log-likelihood).
    Backward of each of these: the same count again (one multiply by the local derivative per
    element), twice for batch norm; an add's backward is a copy (0); an embedding's backward adds
    each gradient row into its table (dim per token).
  optimizer update, per trainable parameter: SGD 2 (scale, subtract), +2 for momentum, +2 for
    Nesterov, +2 for weight decay; Adam 12; global-norm clipping +3 (square, sum, scale).
An inference pass is the forward count (the matrix products and the other ops).

Not counted anywhere: data movement, the random numbers of dropout, integer work, the loss's
reduction over a mini-batch (a handful of FLOPs per sample).
"""

from runner import shapes

GATES = shapes.RECURRENT_GATES


def _product(n):
    out = 1
    for d in n:
        out *= d
    return out


class Count(object):
    """Per-sample FLOPs of a network: matrix products and other ops, forward and backward."""

    def __init__(self):
        self.forward_matmul, self.backward_matmul, self.forward_other, self.backward_other = 0, 0, 0, 0

    def add(self, other):
        self.forward_matmul += other.forward_matmul
        self.backward_matmul += other.backward_matmul
        self.forward_other += other.forward_other
        self.backward_other += other.backward_other


def _walk(layers, shape, grad_in, count):
    """Add the per-sample FLOPs of ``layers`` from ``shape`` into ``count``; ``grad_in``: whether the input
    needs a gradient. Returns (output shape, whether the output needs a gradient)."""
    for layer in layers:
        shape, grad_in = _layer(layer, shape, grad_in, count)
    return shape, grad_in


def _layer(layer, shape, grad_in, count):
    kind = layer["type"]
    out, params = shapes.apply(layer, shape)
    size, out_size = _product(shape), _product(out)
    if kind in ("conv", "dense"):
        fan_in = shape[0] * layer["kernel"] ** 2 if kind == "conv" else shape[-1]
        macs = fan_in * out_size
        count.forward_matmul += 2 * macs
        count.backward_matmul += 2 * macs * (2 if grad_in else 1)
        if layer.get("bias", True):
            count.forward_other += out_size
        return out, True
    if kind in GATES:
        steps, width, units, gates = shape[0], shape[1], layer["units"], GATES[kind]
        for _ in range(layer.get("layers", 1)):
            inputs, recurrent = 2 * steps * gates * units * width, 2 * steps * gates * units * units
            count.forward_matmul += inputs + recurrent
            count.backward_matmul += inputs * (2 if grad_in else 1) + recurrent + recurrent * (steps - 1) // steps
            cell = steps * units * (3 * gates + 5)
            count.forward_other += cell
            count.backward_other += cell
            width, grad_in = units, True
        return out, True
    if kind in ("residual", "concat"):
        body, grad_body = _walk(layer["body"], shape, grad_in, count)
        if kind == "concat":
            return out, grad_in or grad_body
        _, grad_short = _walk(layer.get("shortcut", []), shape, grad_in, count)
        count.forward_other += _product(body)
        return _walk(layer.get("after", []), body, grad_body or grad_short, count)
    if kind == "batchnorm":
        count.forward_other += 4 * size
        count.backward_other += 8 * size
        return out, True
    if kind == "embedding":
        count.backward_other += out_size
        return out, True
    if kind in ("maxpool", "avgpool"):
        other = layer["kernel"] ** 2 * out_size
    elif kind == "global_avgpool":
        other = size
    elif kind in shapes.ACTIVATIONS or kind == "dropout":
        other = size
    else:  # flatten, pad_channels, last_step: copies
        other = 0
    count.forward_other += other
    count.backward_other += other if grad_in else 0
    return out, grad_in


def per_sample(layers, input_shape):
    """The per-sample Count of the (written or expanded) ``layers`` applied to one sample of ``input_shape``.
    Raises runner.shapes.ShapeError where a layer does not fit."""
    count = Count()
    expanded = shapes.expand(layers, tuple(input_shape))
    out, _ = _walk(expanded, tuple(input_shape), False, count)
    return count, out


def optimizer_per_parameter(optimizer):
    """FLOPs of one update per trainable parameter (the rules above); 0 without an optimizer."""
    if not optimizer:
        return 0
    if optimizer["name"] == "adam":
        flops = 12
    else:
        flops = 2 + (2 if optimizer.get("momentum") else 0) + (2 if optimizer.get("nesterov") else 0)
    flops += 2 if optimizer.get("weight_decay") else 0
    return flops + (3 if optimizer.get("clip_norm") else 0)


def of_model(model, batch_size, optimizer=None):
    """FLOPs of one mini-batch of ``batch_size`` samples for a job's ``model`` (job.json's model: layers,
    input_shape, parameters) and ``optimizer`` (job.json's, None for inference).

    Returns a dict of ints, FLOPs per mini-batch:
      forward_matmul, backward_matmul   the matrix products (what torch.utils.flop_counter counts),
      forward_other, backward_other     the elementwise ops and the loss,
      optimizer                         the update (parameters x optimizer_per_parameter),
      inference                         one inference pass (forward, matrix products and other ops),
      training                          one training iteration (forward, backward, update).
    """
    count, out = per_sample(model["layers"], model["input_shape"])
    loss = 3 * _product(out)
    n = batch_size
    result = {
        "forward_matmul": n * count.forward_matmul,
        "backward_matmul": n * count.backward_matmul,
        "forward_other": n * (count.forward_other + loss),
        "backward_other": n * (count.backward_other + loss),
        "optimizer": model["parameters"] * optimizer_per_parameter(optimizer),
    }
    result["inference"] = n * (count.forward_matmul + count.forward_other)
    result["training"] = sum(
        result[k] for k in ("forward_matmul", "backward_matmul", "forward_other", "backward_other", "optimizer")
    )
    return result


def of_job(job):
    """FLOPs of one timed mini-batch of ``job`` (job.json): a training iteration, or for an inference job
    an inference pass. None for a convergence job or a model without layers."""
    model = job.get("model") or {}
    if not model.get("layers") or job.get("mode") not in ("throughput", "inference"):
        return None
    counted = of_model(model, job["batch_size"], job.get("optimizer"))
    return counted["training"] if job["mode"] == "throughput" else counted["inference"]
