"""The layer vocabulary of job.json: shape inference, parameter counts and macro expansion.

A model is a list of layers (dicts with a ``type`` key) applied in order to one
sample: (C, H, W) for images, (F,) for feature vectors, (T,) for token ids and
(T, F) for sequences. Every framework adapter builds its network from the
expanded list, and the host checks a spec's stated parameter count against
``count_parameters`` before any job runs, so the arithmetic lives here once.

Primitives
  conv {filters, kernel, stride=1, pad=0, bias=true}      (C,H,W) -> (filters,H',W')
  maxpool | avgpool {kernel, stride=kernel, pad=0, ceil=false}
  global_avgpool                                          (C,H,W) -> (C,)
  batchnorm {eps=1e-5, momentum=0.1}                      affine: 2C parameters; momentum is the
                                                          new batch's weight in the running average
  dense {units, bias=true}                                (F,) -> (units,); (T,F) -> (T,units)
  dropout {rate}, flatten, relu, sigmoid, tanh
  pad_channels {filters}                                  (C,H,W) -> (filters,H,W), zeros appended
  residual {body, shortcut=[], after=[]}                  after(body(x) + shortcut(x)); [] = identity
  concat {body}                                           channels of x, then of body(x)
  embedding {vocab, dim}                                  (T,) ids -> (T, dim)
  lstm | gru {units, layers=1}                            (T,F) -> (T,units); two bias vectors per
                                                          gate set (cuDNN's and PyTorch's convention)
  last_step                                               (T,F) -> (F,)
Macros (expanded by ``expand`` into primitives)
  resnet_stage {stage, block: basic|bottleneck, blocks, filters, stride=1, shortcut: projection|zero_pad,
                stride_on: 3x3|1x1, conv_bias=false, bn_eps=1e-5, bn_momentum=0.1, post_add_relu=true}
  densenet_block {layers, growth, bn_size=4, bn_eps=1e-5}

Layers that hold weights may carry a ``name``; resnet_stage names its layers as
Caffe's and Keras's ResNets do (res2a_branch2a, bn2a_branch2a, ...), so pretrained
weights can be matched by name.

Pooling follows Caffe: with ``ceil: true`` the output size is
ceil((H + 2*pad - kernel) / stride) + 1, reduced by one when pad > 0 and the last
window would start in the padding. PyTorch's ``ceil_mode`` applies that reduction
even without padding, which differs only when stride > kernel; every framework's
measured parameter count is checked against this arithmetic, so such a difference
cannot pass unnoticed.
"""

import math

ACTIVATIONS = ("relu", "sigmoid", "tanh")
PRIMITIVES = (
    "conv",
    "maxpool",
    "avgpool",
    "global_avgpool",
    "batchnorm",
    "dense",
    "dropout",
    "flatten",
    "pad_channels",
    "residual",
    "concat",
    "embedding",
    "lstm",
    "gru",
    "last_step",
) + ACTIVATIONS
MACROS = ("resnet_stage", "densenet_block")
RECURRENT_GATES = {"lstm": 4, "gru": 3}


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


def _need(shape, rank, kind):
    if len(shape) != rank:
        what = {1: "a flat (F,)", 2: "a sequence (T, F)", 3: "an image (C, H, W)"}[rank]
        raise ShapeError("%s needs %s input, got %s" % (kind, what, shape))


def block_letter(index):
    """The letter of a residual block within its stage, as Caffe's and Keras's ResNets name them (0 -> a)."""
    if index >= 26:
        raise ShapeError("a stage of more than 26 blocks has no Caffe/Keras block letters")
    return "abcdefghijklmnopqrstuvwxyz"[index]


def _conv(name, kernel, filters, stride=1, pad=0, bias=False):
    return dict(
        {"type": "conv", "filters": filters, "kernel": kernel, "stride": stride, "pad": pad, "bias": bias},
        **({"name": name} if name else {}),
    )


def _bn(name, eps, momentum):
    return {"type": "batchnorm", "eps": eps, "momentum": momentum, "name": name}


def _resnet_stage(m, channels):
    """Residual blocks of one ResNet stage; ``channels`` is the stage's input channel count."""
    blocks = []
    bottleneck = m["block"] == "bottleneck"
    out = m["filters"] * (4 if bottleneck else 1)
    eps, mom, bias = m.get("bn_eps", 1e-5), m.get("bn_momentum", 0.1), m.get("conv_bias", False)
    for i in range(m["blocks"]):
        s = m.get("stride", 1) if i == 0 else 1
        tag = "%s%s" % (m["stage"], block_letter(i))
        if bottleneck:
            first_stride = s if m.get("stride_on", "3x3") == "1x1" else 1
            body = [
                _conv("res%s_branch2a" % tag, 1, m["filters"], first_stride, 0, bias),
                _bn("bn%s_branch2a" % tag, eps, mom),
                {"type": "relu"},
                _conv("res%s_branch2b" % tag, 3, m["filters"], s // first_stride, 1, bias),
                _bn("bn%s_branch2b" % tag, eps, mom),
                {"type": "relu"},
                _conv("res%s_branch2c" % tag, 1, out, 1, 0, bias),
                _bn("bn%s_branch2c" % tag, eps, mom),
            ]
        else:
            body = [
                _conv("res%s_branch2a" % tag, 3, out, s, 1, bias),
                _bn("bn%s_branch2a" % tag, eps, mom),
                {"type": "relu"},
                _conv("res%s_branch2b" % tag, 3, out, 1, 1, bias),
                _bn("bn%s_branch2b" % tag, eps, mom),
            ]
        shortcut = []
        if s != 1 or channels != out:
            if m["shortcut"] == "projection":
                shortcut = [_conv("res%s_branch1" % tag, 1, out, s, 0, bias), _bn("bn%s_branch1" % tag, eps, mom)]
            else:  # option A of He et al.: subsample, then zero channels
                shortcut = [{"type": "avgpool", "kernel": 1, "stride": s}, {"type": "pad_channels", "filters": out}]
        blocks.append(
            {
                "type": "residual",
                "body": body,
                "shortcut": shortcut,
                "after": [{"type": "relu"}] if m.get("post_add_relu", True) else [],
            }
        )
        channels = out
    return blocks


def _densenet_block(m):
    """DenseNet-BC layers: each concatenates BN-ReLU-Conv1x1(bn_size*k)-BN-ReLU-Conv3x3(k) to its input."""
    eps, width = m.get("bn_eps", 1e-5), m.get("bn_size", 4) * m["growth"]
    return [
        {
            "type": "concat",
            "body": [
                {"type": "batchnorm", "eps": eps},
                {"type": "relu"},
                _conv(None, 1, width),
                {"type": "batchnorm", "eps": eps},
                {"type": "relu"},
                _conv(None, 3, m["growth"], 1, 1),
            ],
        }
        for _ in range(m["layers"])
    ]


def expand(layers, input_shape):
    """The layer list with every macro replaced by primitives (recursively inside composites)."""
    result, shape = [], tuple(input_shape)
    for i, layer in enumerate(layers):
        kind = layer["type"]
        try:
            if kind == "resnet_stage":
                _need(shape, 3, kind)
                new = _resnet_stage(layer, shape[0])
            elif kind == "densenet_block":
                new = _densenet_block(layer)
            elif kind in ("residual", "concat"):
                parts = {"body": expand(layer["body"], shape)}
                if "shortcut" in layer:
                    parts["shortcut"] = expand(layer["shortcut"], shape)
                if "after" in layer:
                    parts["after"] = expand(layer["after"], apply_all(parts["body"], shape)[0])
                new = [dict(layer, **parts)]
            else:
                new = [layer]
            for item in new:
                shape = apply(item, shape)[0]
        except ShapeError as exc:
            raise ShapeError("layer %d (%s): %s" % (i, kind, exc))
        result.extend(new)
    return result


def apply_all(layers, shape):
    """(output shape, parameter count) of primitives applied in order to ``shape``."""
    params = 0
    for layer in layers:
        shape, p = apply(layer, shape)
        params += p
    return shape, params


def inputs(layers, shape):
    """(layer, the per-sample shape that reaches it) for each of ``layers`` in order, from ``shape``."""
    for layer in layers:
        yield layer, shape
        shape = apply(layer, shape)[0]


def apply(layer, shape):
    """(output shape, parameter count) of one primitive applied to ``shape``."""
    kind = layer["type"]
    if kind == "conv":
        _need(shape, 3, kind)
        c, h, w = shape
        k, s, p = layer["kernel"], layer.get("stride", 1), layer.get("pad", 0)
        oh, ow = conv_output(h, k, s, p), conv_output(w, k, s, p)
        if oh < 1 or ow < 1:
            raise ShapeError("conv %dx%d/%d leaves no output from %s" % (k, k, s, shape))
        return (layer["filters"], oh, ow), layer["filters"] * c * k * k + (
            layer["filters"] if layer.get("bias", True) else 0
        )
    if kind in ("maxpool", "avgpool"):
        _need(shape, 3, kind)
        c, h, w = shape
        k, s, p, ceil = (
            layer["kernel"],
            layer.get("stride", layer["kernel"]),
            layer.get("pad", 0),
            layer.get("ceil", False),
        )
        oh, ow = pool_output(h, k, s, p, ceil), pool_output(w, k, s, p, ceil)
        if oh < 1 or ow < 1:
            raise ShapeError("%s %dx%d/%d leaves no output from %s" % (kind, k, k, s, shape))
        return (c, oh, ow), 0
    if kind == "global_avgpool":
        _need(shape, 3, kind)
        return (shape[0],), 0
    if kind == "batchnorm":
        if len(shape) not in (1, 3):
            raise ShapeError("batchnorm needs (F,) or (C, H, W), got %s" % (shape,))
        return tuple(shape), 2 * shape[0]
    if kind == "flatten":
        n = 1
        for d in shape:
            n *= d
        return (n,), 0
    if kind == "dense":
        if len(shape) not in (1, 2):
            raise ShapeError("dense needs (F,) or (T, F) input (add a flatten layer), got %s" % (shape,))
        params = layer["units"] * shape[-1] + (layer["units"] if layer.get("bias", True) else 0)
        return tuple(shape[:-1]) + (layer["units"],), params
    if kind == "pad_channels":
        _need(shape, 3, kind)
        if layer["filters"] < shape[0]:
            raise ShapeError("pad_channels to %d cannot shrink %d channels" % (layer["filters"], shape[0]))
        return (layer["filters"],) + tuple(shape[1:]), 0
    if kind == "residual":
        body, p_body = apply_all(layer["body"], shape)
        short, p_short = apply_all(layer.get("shortcut", []), shape)
        if body != short:
            raise ShapeError("residual body gives %s but its shortcut %s" % (body, short))
        out, p_after = apply_all(layer.get("after", []), body)
        return out, p_body + p_short + p_after
    if kind == "concat":
        _need(shape, 3, kind)
        body, params = apply_all(layer["body"], shape)
        if len(body) != 3 or body[1:] != shape[1:]:
            raise ShapeError("concat body gives %s, which does not match %s in H and W" % (body, shape))
        return (shape[0] + body[0],) + tuple(shape[1:]), params
    if kind == "embedding":
        _need(shape, 1, kind)
        return (shape[0], layer["dim"]), layer["vocab"] * layer["dim"]
    if kind in RECURRENT_GATES:
        _need(shape, 2, kind)
        gates, units, width, params = RECURRENT_GATES[kind], layer["units"], shape[1], 0
        for _ in range(layer.get("layers", 1)):
            params += gates * (width * units + units * units + 2 * units)
            width = units
        return (shape[0], units), params
    if kind == "last_step":
        _need(shape, 2, kind)
        return (shape[1],), 0
    if kind in ACTIVATIONS or kind == "dropout":
        return tuple(shape), 0
    if kind in MACROS:
        raise ShapeError("macro %s must be expanded first (shapes.expand)" % kind)
    raise ShapeError("unknown layer type %r; known: %s" % (kind, ", ".join(PRIMITIVES + MACROS)))


def trace(layers, input_shape):
    """Walk the expanded ``layers`` from one sample of ``input_shape``.

    Returns a list of (layer, input shape, output shape, parameters), one per top-level
    primitive after macro expansion. Raises ShapeError naming the index of the (written)
    layer that does not fit.
    """
    rows, shape = [], tuple(input_shape)
    for layer in expand(layers, shape):
        out, params = apply(layer, shape)
        rows.append((layer, shape, out, params))
        shape = out
    return rows


def count_parameters(layers, input_shape):
    """Total number of trainable parameters (weights, biases, batch-norm scale and shift)."""
    return sum(row[3] for row in trace(layers, input_shape))


def output_shape(layers, input_shape):
    """Shape of one sample after the last layer."""
    rows = trace(layers, input_shape)
    return rows[-1][2] if rows else tuple(input_shape)
