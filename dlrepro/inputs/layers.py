"""The schema of a spec's layer lists: runner.shapes' vocabulary, checked field by field.

A layer is written ``{type: conv, filters: 96, kernel: 11, stride: 4}``; a layer
without settings may be written by its type alone (``- relu``). Composite layers
(residual, concat) hold layer lists of their own; macros (resnet_stage,
densenet_block) are expanded by runner.shapes.expand, the one place that knows them.
"""

from typing import Annotated, Literal, Optional, Union

from pydantic import Field, NonNegativeInt, PositiveFloat, PositiveInt, field_validator

from dlrepro.inputs.yamlfile import Strict


def _shorthand(value):
    """Allow a bare layer name (``- relu``) for layers without settings."""
    if isinstance(value, list):
        return [{"type": v} if isinstance(v, str) else v for v in value]
    return value


class Conv(Strict):
    type: Literal["conv"]
    filters: PositiveInt
    kernel: PositiveInt
    stride: PositiveInt = 1
    pad: NonNegativeInt = 0
    bias: bool = True
    name: Optional[str] = None


class Pool(Strict):
    type: Literal["maxpool", "avgpool"]
    kernel: PositiveInt
    stride: Optional[PositiveInt] = None
    pad: NonNegativeInt = 0
    ceil: bool = Field(False, description="Caffe's ceil rounding of the output size")


class BatchNorm(Strict):
    type: Literal["batchnorm"]
    eps: PositiveFloat = 1e-5
    momentum: float = Field(0.1, gt=0.0, le=1.0, description="weight of a new batch in the running statistics")
    name: Optional[str] = None


class Dense(Strict):
    type: Literal["dense"]
    units: PositiveInt
    bias: bool = True
    name: Optional[str] = None


class Dropout(Strict):
    type: Literal["dropout"]
    rate: float = Field(gt=0.0, lt=1.0)


class Simple(Strict):
    type: Literal["relu", "sigmoid", "tanh", "flatten", "global_avgpool", "last_step"]


class PadChannels(Strict):
    type: Literal["pad_channels"]
    filters: PositiveInt


class Embedding(Strict):
    type: Literal["embedding"]
    vocab: PositiveInt
    dim: PositiveInt


class Recurrent(Strict):
    type: Literal["lstm", "gru"]
    units: PositiveInt
    layers: PositiveInt = 1
    stateful: bool = Field(False, description="carry the final state into the next mini-batch (truncated BPTT)")


class ResnetStage(Strict):
    type: Literal["resnet_stage"]
    stage: PositiveInt = Field(description="stage number in layer names (res2a_branch2a: stage 2)")
    block: Literal["basic", "bottleneck"]
    blocks: PositiveInt
    filters: PositiveInt = Field(description="width of the block's convolutions (bottleneck output: 4x)")
    stride: PositiveInt = 1
    shortcut: Literal["projection", "zero_pad"]
    stride_on: Literal["3x3", "1x1"] = Field("3x3", description="bottleneck: 3x3 (torchvision, v1.5) or first 1x1 (v1)")
    conv_bias: bool = False
    bn_eps: PositiveFloat = 1e-5
    bn_momentum: float = Field(0.1, gt=0.0, le=1.0)
    post_add_relu: bool = True


class DensenetBlock(Strict):
    type: Literal["densenet_block"]
    layers: PositiveInt
    growth: PositiveInt
    bn_size: PositiveInt = 4
    bn_eps: PositiveFloat = 1e-5


class Residual(Strict):
    type: Literal["residual"]
    body: list["Layer"] = Field(min_length=1)
    shortcut: list["Layer"] = []
    after: list["Layer"] = []

    _short = field_validator("body", "shortcut", "after", mode="before")(lambda cls, v: _shorthand(v))


class Concat(Strict):
    type: Literal["concat"]
    body: list["Layer"] = Field(min_length=1)

    _short = field_validator("body", mode="before")(lambda cls, v: _shorthand(v))


Layer = Annotated[
    Union[
        Conv,
        Pool,
        BatchNorm,
        Dense,
        Dropout,
        Simple,
        PadChannels,
        Embedding,
        Recurrent,
        ResnetStage,
        DensenetBlock,
        Residual,
        Concat,
    ],
    Field(discriminator="type"),
]
Residual.model_rebuild()
Concat.model_rebuild()


def as_dicts(layers):
    """Layer models as the plain dicts of job.json (defaults filled in, unset options left out)."""
    return [layer.model_dump(exclude_none=True) for layer in layers]
