"""The PyTorch adapter's layers (runner.adapters.torch_adapter): the spec's layer list as nn modules.

``sequential(layers, shape, named)`` builds nn.Sequential for inputs of ``shape`` (C, H, W) or (T, F) without the
batch axis; layers with a ``name`` are remembered in ``named`` (name -> module), for weights loaded by name.
Recurrent layers are nn.LSTM / nn.GRU, batch first (N, T, F); raises UnsupportedError for a layer type it has no
module for.
"""

import torch
import torch.nn.functional as F
from torch import nn

from runner import shapes
from runner.adapters import UnsupportedError

_ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}


class Residual(nn.Module):
    def __init__(self, body, shortcut, after):
        super(Residual, self).__init__()
        self.body, self.shortcut, self.after = body, shortcut, after

    def forward(self, x):
        return self.after(self.body(x) + self.shortcut(x))


class Concat(nn.Module):
    def __init__(self, body):
        super(Concat, self).__init__()
        self.body = body

    def forward(self, x):
        return torch.cat([x, self.body(x)], 1)


class PadChannels(nn.Module):
    def __init__(self, extra):
        super(PadChannels, self).__init__()
        self.extra = extra

    def forward(self, x):
        return F.pad(x, (0, 0, 0, 0, 0, self.extra))


class GlobalAvgPool(nn.Module):
    def forward(self, x):
        return x.mean(dim=(2, 3))


class Flatten(nn.Module):
    """(N, ...) -> (N, features), as nn.Flatten (torch >= 1.2) does."""

    def forward(self, x):
        return x.reshape(x.shape[0], -1)


class LastStep(nn.Module):
    def forward(self, x):
        return x[:, -1]


class Recurrent(nn.Module):
    """nn.LSTM / nn.GRU on (N, T, F), batch first; with ``stateful`` the final state feeds the next call."""

    def __init__(self, kind, width, layer):
        super(Recurrent, self).__init__()
        cls = nn.LSTM if kind == "lstm" else nn.GRU
        self.rnn = cls(width, layer["units"], num_layers=layer.get("layers", 1), batch_first=True)
        self.stateful, self.state = layer.get("stateful", False), None

    def forward(self, x):
        out, state = self.rnn(x, self.state)
        if self.stateful:
            self.state = tuple(s.detach() for s in state) if isinstance(state, tuple) else state.detach()
        return out


def _module(layer, in_shape, named):
    kind = layer["type"]
    if kind == "conv":
        m = nn.Conv2d(
            in_shape[0],
            layer["filters"],
            layer["kernel"],
            stride=layer.get("stride", 1),
            padding=layer.get("pad", 0),
            bias=layer.get("bias", True),
        )
    elif kind in ("maxpool", "avgpool"):
        cls = nn.MaxPool2d if kind == "maxpool" else nn.AvgPool2d
        kwargs = {"count_include_pad": True} if kind == "avgpool" else {}
        m = cls(
            layer["kernel"],
            stride=layer.get("stride", layer["kernel"]),
            padding=layer.get("pad", 0),
            ceil_mode=layer.get("ceil", False),
            **kwargs,
        )
    elif kind == "global_avgpool":
        m = GlobalAvgPool()
    elif kind == "batchnorm":
        cls = nn.BatchNorm2d if len(in_shape) == 3 else nn.BatchNorm1d
        m = cls(in_shape[0], eps=layer.get("eps", 1e-5), momentum=layer.get("momentum", 0.1))
    elif kind == "dense":
        m = nn.Linear(in_shape[-1], layer["units"], bias=layer.get("bias", True))
    elif kind == "dropout":
        m = nn.Dropout(layer["rate"])
    elif kind == "flatten":
        m = nn.Flatten() if hasattr(nn, "Flatten") else Flatten()  # nn.Flatten: torch >= 1.2
    elif kind in _ACTIVATIONS:
        m = _ACTIVATIONS[kind]()
    elif kind == "pad_channels":
        m = PadChannels(layer["filters"] - in_shape[0])
    elif kind == "residual":
        m = Residual(
            sequential(layer["body"], in_shape, named),
            sequential(layer.get("shortcut", []), in_shape, named),
            sequential(layer.get("after", []), shapes.apply_all(layer["body"], in_shape)[0], named),
        )
    elif kind == "concat":
        m = Concat(sequential(layer["body"], in_shape, named))
    elif kind == "embedding":
        m = nn.Embedding(layer["vocab"], layer["dim"])
    elif kind in ("lstm", "gru"):
        m = Recurrent(kind, in_shape[-1], layer)
    elif kind == "last_step":
        m = LastStep()
    else:
        raise UnsupportedError("torch adapter has no layer type %r" % kind)
    if layer.get("name"):
        named[layer["name"]] = m
    return m


def sequential(layers, shape, named):
    return nn.Sequential(*[_module(layer, in_shape, named) for layer, in_shape in shapes.inputs(layers, shape)])
