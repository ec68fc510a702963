"""Shape inference and parameter counts for the layer vocabulary of job.json.

A model is a list of layers (dicts with a ``type`` key) applied in order to one
sample of shape ``input_shape``: (C, H, W) for images, (F,) for feature vectors.
Every framework adapter builds its network from the same list, and the host
checks a spec's stated parameter count against ``count_parameters`` before any
job runs, so the arithmetic lives here once.

Pooling follows Caffe: with ``ceil: true`` the output size is
ceil((H + 2*pad - kernel) / stride) + 1, reduced by one when pad > 0 and the last
window would start in the padding. PyTorch's ``ceil_mode`` applies that reduction
even without padding, which differs only when stride > kernel; every framework's
measured parameter count is checked against this arithmetic, so such a difference
cannot pass unnoticed.
"""
import math

ACTIVATIONS = ("relu", "sigmoid", "tanh")
LAYER_TYPES = ("conv", "maxpool", "avgpool", "dense", "dropout", "flatten") + ACTIVATIONS


class ShapeError(ValueError):
    """A layer cannot be applied to the shape that reaches it."""


def conv_output(size, kernel, stride, pad):
    """Output length of a convolution along one axis (floor rounding, as every framework)."""
    return (size + 2 * pad - kernel) // stride + 1


def pool_output(size, kernel, stride, pad, ceil):
    """Output length of a pooling window along one axis; ``ceil`` selects Caffe's rounding."""
    span = size + 2 * pad - kernel
    if not ceil:
        return span // stride + 1
    out = int(math.ceil(float(span) / stride)) + 1
    if pad > 0 and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _layer_step(layer, shape):
    """Return (output shape, parameter count) of one layer applied to ``shape``."""
    kind = layer["type"]
    if kind == "conv":
        if len(shape) != 3:
            raise ShapeError("conv needs a (C, H, W) input, got %s" % (shape,))
        c, h, w = shape
        k, s, p = layer["kernel"], layer.get("stride", 1), layer.get("pad", 0)
        oh, ow = conv_output(h, k, s, p), conv_output(w, k, s, p)
        if oh < 1 or ow < 1:
            raise ShapeError("conv %dx%d/%d leaves no output from %s" % (k, k, s, shape))
        params = layer["filters"] * c * k * k + (layer["filters"] if layer.get("bias", True) else 0)
        return (layer["filters"], oh, ow), params
    if kind in ("maxpool", "avgpool"):
        if len(shape) != 3:
            raise ShapeError("%s needs a (C, H, W) input, got %s" % (kind, shape))
        c, h, w = shape
        k, s, p, ceil = layer["kernel"], layer.get("stride", layer["kernel"]), layer.get("pad", 0), layer.get("ceil", False)
        oh, ow = pool_output(h, k, s, p, ceil), pool_output(w, k, s, p, ceil)
        if oh < 1 or ow < 1:
            raise ShapeError("%s %dx%d/%d leaves no output from %s" % (kind, k, k, s, shape))
        return (c, oh, ow), 0
    if kind == "flatten":
        n = 1
        for d in shape:
            n *= d
        return (n,), 0
    if kind == "dense":
        if len(shape) != 1:
            raise ShapeError("dense needs a flat input (add a flatten layer), got %s" % (shape,))
        params = layer["units"] * shape[0] + (layer["units"] if layer.get("bias", True) else 0)
        return (layer["units"],), params
    if kind in ACTIVATIONS or kind == "dropout":
        return tuple(shape), 0
    raise ShapeError("unknown layer type %r; known: %s" % (kind, ", ".join(LAYER_TYPES)))


def trace(layers, input_shape):
    """Walk ``layers`` from one sample of ``input_shape``.

    Returns a list of (layer, input shape, output shape, parameters), one per layer.
    Raises ShapeError naming the layer index when a layer does not fit.
    """
    rows = []
    shape = tuple(input_shape)
    for i, layer in enumerate(layers):
        try:
            out, params = _layer_step(layer, shape)
        except ShapeError as exc:
            raise ShapeError("layer %d (%s): %s" % (i, layer.get("type"), exc))
        rows.append((layer, shape, out, params))
        shape = out
    return rows


def count_parameters(layers, input_shape):
    """Total number of trainable parameters (weights and biases) of the layer list."""
    return sum(row[3] for row in trace(layers, input_shape))


def output_shape(layers, input_shape):
    """Shape of one sample after the last layer."""
    rows = trace(layers, input_shape)
    return rows[-1][2] if rows else tuple(input_shape)
