"""Experiment specs: one YAML file per experiment family under specs/, validated on load.

A spec holds models (exact layer lists with their expected parameter count) and
variants (a model + data + optimizer + batch sizes + measurement settings). The
layer vocabulary and its shape arithmetic are the runner's (runner.shapes), so the
count a spec states is checked against its own layers before anything runs, and
again against each framework's model inside the container.
"""
import hashlib
import json
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import Field, PositiveFloat, PositiveInt, NonNegativeInt, NonNegativeFloat, ValidationInfo, \
    field_validator

from dlrepro import REPO_ROOT, datasets, yamlfile
from dlrepro.errors import SpecError
from dlrepro.yamlfile import Strict
from runner import adapters, shapes

SPECS_DIR = REPO_ROOT / "specs"


class Conv(Strict):
    type: Literal["conv"]
    filters: PositiveInt
    kernel: PositiveInt
    stride: PositiveInt = 1
    pad: NonNegativeInt = 0
    bias: bool = True


class Pool(Strict):
    type: Literal["maxpool", "avgpool"]
    kernel: PositiveInt
    stride: Optional[PositiveInt] = None
    pad: NonNegativeInt = 0
    ceil: bool = Field(False, description="Caffe's ceil rounding of the output size")


class Dense(Strict):
    type: Literal["dense"]
    units: PositiveInt
    bias: bool = True


class Dropout(Strict):
    type: Literal["dropout"]
    rate: float = Field(gt=0.0, lt=1.0)


class Simple(Strict):
    type: Literal["relu", "sigmoid", "tanh", "flatten"]


Layer = Annotated[Union[Conv, Pool, Dense, Dropout, Simple], Field(discriminator="type")]


def _dicts(layers):
    return [layer.model_dump(exclude_none=True) for layer in layers]


class Model(Strict):
    """A network as a layer list applied to one sample of ``input_shape`` ((C, H, W) or (F,)).

    Fields are checked in order: the layers must fit the input shape, the last layer must
    give ``classes`` outputs, and the layers must have exactly ``parameters`` parameters.
    """
    description: str
    source: str = Field(description="where the architecture is defined: repo + commit + file, or paper + table")
    input_shape: list[PositiveInt] = Field(min_length=1, max_length=3)
    init: Literal["default", "xavier", "glorot_uniform"] = "default"
    layers: list[Layer] = Field(min_length=1)
    classes: PositiveInt
    parameters: PositiveInt = Field(description="expected trainable parameters; every framework must match")
    notes: Optional[str] = None

    @field_validator("layers", mode="before")
    @classmethod
    def _shorthand(cls, value):
        """Allow a bare layer name (``- relu``) for layers without settings."""
        if isinstance(value, list):
            return [{"type": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("layers")
    @classmethod
    def _layers_fit(cls, value, info: ValidationInfo):
        if "input_shape" in info.data:
            try:
                shapes.trace(_dicts(value), info.data["input_shape"])
            except shapes.ShapeError as exc:
                raise ValueError("layers do not fit together: %s" % exc) from None
        return value

    @field_validator("classes")
    @classmethod
    def _classes_match(cls, value, info: ValidationInfo):
        if "layers" in info.data:
            out = shapes.output_shape(_dicts(info.data["layers"]), info.data["input_shape"])
            if out != (value,):
                raise ValueError("the last layer gives shape %s, not (%d,)" % (out, value))
        return value

    @field_validator("parameters")
    @classmethod
    def _count_matches(cls, value, info: ValidationInfo):
        if "layers" in info.data:
            counted = shapes.count_parameters(_dicts(info.data["layers"]), info.data["input_shape"])
            if counted != value:
                raise ValueError("the layers have %s parameters but the spec states %s"
                                 % (format(counted, ","), format(value, ",")))
        return value

    def layer_dicts(self):
        return _dicts(self.layers)


class Synthetic(Strict):
    kind: Literal["synthetic"]
    seed: NonNegativeInt = Field(description="seed of the random mini-batch, recorded in every job")


class DatasetInput(Strict):
    kind: Literal["dataset"]
    name: str = Field(description="a dataset of dlrepro/datasets.yaml")
    scale: PositiveFloat = 1.0
    subtract_mean: Optional[Literal["pixel"]] = None

    @field_validator("name")
    @classmethod
    def _known_dataset(cls, value):
        known = datasets.catalogue().datasets
        if value not in known:
            raise ValueError("unknown dataset %r; dlrepro/datasets.yaml defines: %s" % (value, ", ".join(sorted(known))))
        return value


Data = Annotated[Union[Synthetic, DatasetInput], Field(discriminator="kind")]


class Optimizer(Strict):
    name: Literal["sgd"]
    lr: PositiveFloat
    momentum: NonNegativeFloat = 0.0
    weight_decay: NonNegativeFloat = 0.0


class Convergence(Strict):
    """Training to accuracy: epochs over the real training set, test accuracy after each."""
    epochs: PositiveInt
    batch_size: PositiveInt
    max_iterations_per_epoch: Optional[PositiveInt] = None


class Variant(Strict):
    """One experiment: expanded into jobs over frameworks x batch sizes x devices."""
    description: str
    model: str
    data: Data
    optimizer: Optimizer
    optimizer_source: Optional[str] = None
    batch_sizes: dict[Literal["cpu", "cuda"], list[PositiveInt]]
    warmup: NonNegativeInt = 8
    iterations: PositiveInt = 8
    repeats: PositiveInt = 3
    convergence: Optional[Convergence] = None
    notes: Optional[str] = None

    _known_model = field_validator("model")(yamlfile.reference("models", "model"))


class Spec(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    study: str
    source: str
    frameworks: list[str] = Field(min_length=1, description="frameworks whose adapters implement these variants")
    models: dict[str, Model]
    variants: dict[str, Variant] = Field(min_length=1)
    notes: Optional[str] = None

    @field_validator("name")
    @classmethod
    def _file_name(cls, value, info: ValidationInfo):
        expected = (info.context or {}).get("file_stem")
        if expected is not None and value != expected:
            raise ValueError("name %r must equal the file name %r" % (value, expected))
        return value

    @field_validator("frameworks")
    @classmethod
    def _adapters_exist(cls, value):
        missing = [f for f in value if f not in adapters.available()]
        if missing:
            raise ValueError("no runner adapter for %s; runner/adapters has: %s"
                             % (", ".join(missing), ", ".join(adapters.available())))
        return value

    def digest(self):
        """SHA-256 of the resolved spec (canonical JSON, defaults filled in)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def canonical_json(self):
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))


def spec_path(name):
    """Path of spec ``name``: a file path as given, else specs/<name>.yaml."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        return path
    return SPECS_DIR / ("%s.yaml" % name)


def available():
    """Names of the specs under specs/."""
    return sorted(p.stem for p in SPECS_DIR.glob("*.yaml"))


def load(name):
    """Load and validate a spec by name or path; raises SpecError naming file, line and field."""
    path = spec_path(name)
    if not path.is_file():
        raise SpecError(path, ["%s: no such spec; available: %s" % (path, ", ".join(available()))])
    return yamlfile.load(path, Spec, names_of=("models",), context={"file_stem": path.stem})
