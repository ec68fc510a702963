"""The job's model as Lua source for Torch 7's nn package (runner.adapters.torch7_adapter runs it).

``model_source(layers, input_shape)`` turns the expanded layer list (runner.shapes.expand) into one Lua expression
that builds an ``nn.Sequential``: the same text for the same layers, so a test can pin it without Lua. Every module
is batch-mode (N first) and NCHW, the layout of the runner's arrays, so no array is transposed on the way in.

Layers and their Torch 7 modules (nn at 8726825, 2017-10):
  dense            nn.Linear(in, out[, false])         conv          nn.SpatialConvolution(c, f, k, k, s, s, p, p)
                                                                        (:noBias() without a bias)
  maxpool/avgpool  nn.Spatial{Max,Average}Pooling(k, k, s, s, p, p), :ceil() for Caffe's rounding; average pooling
                   divides by the padded window (count_include_pad), as runner.shapes' other frameworks
  global_avgpool   nn.SpatialAveragePooling(w, h) and nn.View(c)
  batchnorm        nn.SpatialBatchNormalization / nn.BatchNormalization(C, eps, momentum): Torch 7's momentum is
                   the spec's (the weight of a new batch in the running statistics); scale and shift: 2C parameters
  flatten          nn.View(n):setNumInputDims(rank), row-major as the spec's (C, H, W)
  dropout          nn.Dropout(rate) (scaled at training time)
  relu/sigmoid/tanh nn.ReLU / nn.Sigmoid / nn.Tanh; ReLU in place except as the first module of a list, whose input
                   another branch (a shortcut) or the runner (its reused synthetic batch) still reads
  residual         nn.ConcatTable(body, shortcut or nn.Identity) into nn.CAddTable, then the ``after`` layers
  pad_channels     nn.Padding(1, extra, 3): zero channels after the input's (ResNet-56's option A)
  concat           nn.ConcatTable(nn.Identity, body) into nn.JoinTable(2) (DenseNet)
Recurrent layers (embedding, lstm, gru, last_step) have no module here: Torch 7's nn has none of DLBench's LSTM
(its Torch script used Element-Research's rnn package), so runner.adapters.capabilities refuses them first.

Python 3.6 syntax, standard library only.
"""

from runner import shapes

RECURRENT = frozenset(["embedding", "lstm", "gru", "last_step"])


class NoModule(ValueError):
    """A layer this translation has no Torch 7 module for."""


def _number(value):
    """A float as Lua reads it back exactly (repr of a Python float is the shortest round-trip form)."""
    return repr(float(value))


def _pool(layer, kind):
    k, s, p = layer["kernel"], layer.get("stride", layer["kernel"]), layer.get("pad", 0)
    text = "nn.Spatial%sPooling(%d, %d, %d, %d, %d, %d)" % (kind, k, k, s, s, p, p)
    return text + (":ceil()" if layer.get("ceil", False) else "")


def module(layer, shape, first):
    """The Lua expression of one primitive ``layer`` reached by per-sample ``shape`` (``first``: the first module of
    its list, whose input others may read). Raises NoModule for a layer Torch 7's nn does not express here."""
    kind = layer["type"]
    if kind == "dense":
        return "nn.Linear(%d, %d%s)" % (shape[-1], layer["units"], "" if layer.get("bias", True) else ", false")
    if kind == "conv":
        k, s, p = layer["kernel"], layer.get("stride", 1), layer.get("pad", 0)
        text = "nn.SpatialConvolution(%d, %d, %d, %d, %d, %d, %d, %d)" % (shape[0], layer["filters"], k, k, s, s, p, p)
        return text + ("" if layer.get("bias", True) else ":noBias()")
    if kind == "maxpool":
        return _pool(layer, "Max")
    if kind == "avgpool":
        return _pool(layer, "Average")
    if kind == "global_avgpool":
        return "nn.Sequential():add(nn.SpatialAveragePooling(%d, %d)):add(nn.View(%d))" % (shape[2], shape[1], shape[0])
    if kind == "batchnorm":
        name = "nn.SpatialBatchNormalization" if len(shape) == 3 else "nn.BatchNormalization"
        return "%s(%d, %s, %s)" % (name, shape[0], _number(layer.get("eps", 1e-5)), _number(layer.get("momentum", 0.1)))
    if kind == "flatten":
        size = 1
        for d in shape:
            size *= d
        return "nn.View(%d):setNumInputDims(%d)" % (size, len(shape))
    if kind == "dropout":
        return "nn.Dropout(%s)" % _number(layer["rate"])
    if kind == "relu":
        return "nn.ReLU()" if first else "nn.ReLU(true)"
    if kind == "sigmoid":
        return "nn.Sigmoid()"
    if kind == "tanh":
        return "nn.Tanh()"
    if kind == "pad_channels":
        return "nn.Padding(1, %d, 3)" % (layer["filters"] - shape[0])
    if kind == "residual":
        body = sequential(layer["body"], shape)
        shortcut = sequential(layer["shortcut"], shape) if layer.get("shortcut") else "nn.Identity()"
        text = "nn.Sequential():add(nn.ConcatTable():add(%s):add(%s)):add(nn.CAddTable(true))" % (body, shortcut)
        out = shapes.apply_all(layer["body"], shape)[0]
        for after, at in shapes.inputs(layer.get("after", []), out):
            text += ":add(%s)" % module(after, at, False)  # the sum is this block's own tensor
        return text
    if kind == "concat":
        return "nn.Sequential():add(nn.ConcatTable():add(nn.Identity()):add(%s)):add(nn.JoinTable(2))" % sequential(
            layer["body"], shape
        )
    if kind in RECURRENT:
        raise NoModule("Torch 7's nn has no %s module of DLBench's kind (its LSTM script used the rnn package)" % kind)
    raise NoModule("no Torch 7 module for layer type %r" % kind)


def sequential(layers, shape):
    """An ``nn.Sequential()`` expression of primitive ``layers`` applied to per-sample ``shape``."""
    parts = ["nn.Sequential()"]
    for i, (layer, at) in enumerate(shapes.inputs(layers, tuple(shape))):
        parts.append(":add(%s)" % module(layer, at, i == 0))
    return "".join(parts)


def model_source(layers, input_shape):
    """Lua source of a chunk that returns the model of expanded ``layers`` for samples of ``input_shape``."""
    return "return %s\n" % sequential(layers, input_shape)
