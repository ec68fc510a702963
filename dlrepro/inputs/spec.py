"""Experiment specs: one YAML file per experiment family under specs/, validated on load.

A spec holds models (exact layer lists with their expected parameter count),
variants (a model + data + optimizer + batch sizes + measurement settings) and the
published references that belong to them. The layer vocabulary and its shape
arithmetic are the runner's (runner.shapes), so the count a spec states is checked
against its own layers before anything runs, and again against each framework's
model inside the container.
"""

import hashlib
from pathlib import Path
from typing import Annotated, Literal, Optional, Union

from pydantic import (
    Field,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from dlrepro import folders
from dlrepro.errors import SpecError
from dlrepro.files import canonical_json
from dlrepro.inputs import datasets, yamlfile
from dlrepro.inputs.layers import Layer, _shorthand, as_dicts
from dlrepro.inputs.references import Missing, Reference
from dlrepro.inputs.yamlfile import Strict
from dlrepro.names import near_miss, unknown
from runner import adapters, shapes

SPECS_DIR = folders.SPECS_DIR
TOKEN_FORMATS = {"imdb-npz", "imdb-reviews-json", "ptb-text"}  # dataset formats that give token ids


class Init(Strict):
    scheme: Literal["default", "xavier", "glorot_uniform", "uniform"] = "default"
    scale: Optional[PositiveFloat] = Field(None, description="uniform: every parameter U(-scale, scale)")


class Model(Strict):
    """A network as a layer list applied to one sample of ``input_shape``.

    Fields are checked in order: the layers must fit the input shape, the last layer must
    give ``classes`` outputs (per time step for sequence targets), and the layers must
    have exactly ``parameters`` trainable parameters.
    """

    description: str
    source: str = Field(description="where the architecture is defined: repo + commit + file, or paper + table")
    input_shape: list[PositiveInt] = Field(min_length=1, max_length=3)
    input_kind: Literal["dense", "tokens"] = "dense"
    target: Literal["class", "sequence", "multilabel"] = "class"
    init: Init = Init()
    framework_init: dict[str, Init] = Field(
        {},
        description="per framework, the initialisation the study's code for that framework used, where it "
        "differs from init (e.g. DLF's Gluon notebook: Xavier where Gluon's default is Uniform(0.07))",
    )
    framework_init_source: Optional[str] = None
    layers: list[Layer] = Field(min_length=1)
    classes: PositiveInt = Field(description="width of the last layer: classes, or features of a feature extractor")
    parameters: PositiveInt = Field(description="expected trainable parameters; every framework must match")
    notes: Optional[str] = None

    _short = field_validator("layers", mode="before")(lambda cls, v: _shorthand(v))
    _init_short = field_validator("init", mode="before")(lambda cls, v: {"scheme": v} if isinstance(v, str) else v)
    _framework_init_short = field_validator("framework_init", mode="before")(
        lambda cls, v: (
            {k: {"scheme": i} if isinstance(i, str) else i for k, i in v.items()} if isinstance(v, dict) else v
        )
    )

    @field_validator("layers")
    @classmethod
    def _layers_fit(cls, value, info: ValidationInfo):
        if "input_shape" in info.data:
            try:
                shapes.trace(as_dicts(value), info.data["input_shape"])
            except shapes.ShapeError as exc:
                raise ValueError("layers do not fit together: %s" % exc) from None
        return value

    @field_validator("classes")
    @classmethod
    def _classes_match(cls, value, info: ValidationInfo):
        if "layers" in info.data and "input_shape" in info.data:
            out = shapes.output_shape(as_dicts(info.data["layers"]), info.data["input_shape"])
            want = (info.data["input_shape"][0], value) if info.data.get("target") == "sequence" else (value,)
            if out != want:
                raise ValueError("the last layer gives shape %s, not %s" % (out, want))
        return value

    @field_validator("parameters")
    @classmethod
    def _count_matches(cls, value, info: ValidationInfo):
        if "layers" in info.data and "input_shape" in info.data:
            counted = shapes.count_parameters(as_dicts(info.data["layers"]), info.data["input_shape"])
            if counted != value:
                raise ValueError(
                    "the layers have %s parameters but the spec states %s" % (format(counted, ","), format(value, ","))
                )
        return value

    def layer_dicts(self):
        return as_dicts(self.layers)

    def init_for(self, framework):
        """The initialisation a framework's model gets: the study's for that framework, else the model's."""
        return self.framework_init.get(framework, self.init)


def _known_dataset(cls, value):
    known = datasets.catalogue().datasets
    names = value if isinstance(value, list) else [value]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(
            "unknown dataset %s; dlrepro/inputs/datasets.yaml defines: %s"
            % (", ".join(map(repr, unknown)), ", ".join(sorted(known)))
        )
    return value


class Synthetic(Strict):
    kind: Literal["synthetic"]
    seed: NonNegativeInt = Field(description="seed of the random mini-batch, recorded in every job")


class Tokens(Strict):
    vocab: PositiveInt = Field(
        description="number of distinct ids (the embedding's rows): ids >= vocab become "
        "out-of-vocabulary; reviews reserve 0 (pad), 1 (start), 2 (OOV)"
    )
    maxlen: Optional[PositiveInt] = Field(None, description="reviews: keep the last maxlen ids, zero-pad at the end")


class DatasetInput(Strict):
    kind: Literal["dataset"]
    name: str = Field(description="a dataset of dlrepro/inputs/datasets.yaml")
    fallback: list[str] = Field([], description="datasets to use, in order, where `name` cannot be had")
    scale: PositiveFloat = 1.0
    subtract_mean: Optional[Literal["pixel"]] = None
    tokens: Optional[Tokens] = None

    _known = field_validator("name", "fallback")(_known_dataset)


Data = Annotated[Union[Synthetic, DatasetInput], Field(discriminator="kind")]


class Weights(Strict):
    """Pretrained weights for the model's named layers, from the dataset cache."""

    dataset: str
    layout: str = Field(description="which architecture the weights fit and how they were converted")
    top1: float = Field(description="the weights' published ImageNet top-1 accuracy, percent")
    top1_source: str

    _known = field_validator("dataset")(_known_dataset)


class Optimizer(Strict):
    name: Literal["sgd", "adam"]
    lr: PositiveFloat
    momentum: NonNegativeFloat = 0.0
    nesterov: bool = False
    weight_decay: NonNegativeFloat = 0.0
    betas: Optional[list[float]] = Field(None, min_length=2, max_length=2, description="adam")
    eps: Optional[PositiveFloat] = Field(None, description="adam")
    clip_norm: Optional[PositiveFloat] = Field(None, description="clip the global gradient norm to this")


class Loss(Strict):
    name: Literal["softmax_cross_entropy", "sigmoid_binary_cross_entropy"] = "softmax_cross_entropy"
    reduction: Literal["mean", "sum_over_time"] = "mean"


MAX_SEEDS = 100  # independent trainings of one convergence job: each a full training (six give a 95% interval)


class Convergence(Strict):
    """Training to accuracy: epochs over the real training set, evaluation after each."""

    epochs: PositiveInt
    batch_size: Optional[PositiveInt] = Field(None, description="default: the variant's batch size for the device")
    max_iterations_per_epoch: Optional[PositiveInt] = None
    test_complete_batches: bool = Field(False, description="evaluate on complete test mini-batches only (DLF)")
    seeds: PositiveInt = Field(
        1,
        le=MAX_SEEDS,
        description="independent trainings, each its own job with seed "
        "0..seeds-1 (fresh initialisation and data order): six "
        "give a 95% interval of the final test accuracy and "
        "time (runner.stats MIN_UNITS_95)",
    )


class Inference(Strict):
    batches: PositiveInt
    untimed_passes: NonNegativeInt = 1


def _required_in(modes, what):
    """A field validator: the field may be left out only when the variant's mode is not in ``modes``."""

    def check(cls, value, info):
        mode = info.data.get("mode", "throughput")
        if value is None and mode in modes:
            raise ValueError("mode %s needs %s" % (mode, what))
        return value

    return check


class Limits(Strict):
    """Bounds on a variant's sizes, so that a typo (2**31 for 32) is refused naming its field, not met by the
    framework as "Unable to allocate 2.30 PiB". A study that needs more raises them in the variant
    (``limits: {batch_size: 131072}``); they bound the spec's values and the command line's alike."""

    batch_size: PositiveInt = 65536  # samples per mini-batch (DLBench's largest: 4096)
    iterations: PositiveInt = 100_000  # warm-up, and measured iterations per repeat
    repeats: PositiveInt = 1000
    epochs: PositiveInt = 1000


class Variant(Strict):
    """One experiment: expanded into jobs over frameworks x batch sizes (x thread counts) on a device."""

    description: str
    model: str
    mode: Literal["throughput", "convergence", "inference"] = "throughput"
    data: Data
    weights: Optional[Weights] = None
    optimizer: Optional[Optimizer] = Field(None, validate_default=True, description="required unless mode is inference")
    optimizer_source: Optional[str] = None
    loss: Loss = Loss()
    batch_sizes: dict[Literal["cpu", "cuda"], Annotated[list[PositiveInt], Field(min_length=1)]] = Field(min_length=1)
    threads: list[PositiveInt] = Field([], description="the study's CPU thread sweep (dlrepro run --threads=sweep)")
    gpus: list[PositiveInt] = Field(
        [1],
        min_length=1,
        description="the study's GPU counts of data-parallel jobs "
        "(dlrepro run --ranks=spec); 1 alone: the study ran none",
    )
    scaling: Optional[Literal["strong", "weak"]] = Field(
        None,
        description="strong: the batch sizes are total mini-batches split across the GPUs (DLBench); weak: "
        "per-GPU mini-batches, the learning rate times the GPU count (DLF)",
    )
    scaling_source: Optional[str] = None
    warmup: NonNegativeInt = 8
    iterations: PositiveInt = 8
    repeats: PositiveInt = Field(
        6,
        description="repeats of the measured iterations; six are the fewest that give "
        "a 95% CI over repeats (runner.stats)",
    )
    convergence: Optional[Convergence] = Field(None, validate_default=True)
    inference: Optional[Inference] = Field(None, validate_default=True)
    notes: Optional[str] = None
    limits: Limits = Limits()

    _known_model = field_validator("model")(yamlfile.reference("models", "model"))

    def over_limits(self, where):
        """[(field, message)] for each of the variant's sizes above its ``limits`` (``where``: its path)."""
        checks = [
            ("batch_size", "%s.batch_sizes.%s.%d" % (where, d, i), b)
            for d, sizes in self.batch_sizes.items()
            for i, b in enumerate(sizes)
        ]
        checks += [("iterations", "%s.%s" % (where, k), getattr(self, k)) for k in ("warmup", "iterations")]
        checks += [("repeats", where + ".repeats", self.repeats)]
        if self.convergence:
            checks += [("epochs", where + ".convergence.epochs", self.convergence.epochs)]
        return [
            (
                field,
                "%s is above the limit of %s; a variant that needs more says so: limits: {%s: N}"
                % (format(value, ","), format(getattr(self.limits, limit), ","), limit),
            )
            for limit, field, value in checks
            if value > getattr(self.limits, limit)
        ]

    @field_validator("data")
    @classmethod
    def _data_suits_mode(cls, value, info: ValidationInfo):
        mode = info.data.get("mode", "throughput")
        if mode == "inference" and value.kind != "synthetic":
            raise ValueError("mode inference runs on synthetic data (DLF's random images)")
        if mode == "convergence" and value.kind != "dataset":
            raise ValueError("mode convergence trains on a dataset")
        return value

    @field_validator("scaling")
    @classmethod
    def _scaling_with_gpus(cls, value, info: ValidationInfo):
        if value is None and max(info.data.get("gpus") or [1]) > 1:
            raise ValueError("gpus lists more than one GPU: say how the mini-batch scales (strong or weak)")
        return value

    _needs_optimizer = field_validator("optimizer")(
        _required_in(("throughput", "convergence"), "an optimizer (name, lr, ...)")
    )
    _needs_inference = field_validator("inference")(_required_in(("inference",), "an inference section (batches)"))
    _needs_convergence = field_validator("convergence")(
        _required_in(("convergence",), "a convergence section (epochs)")
    )


class Spec(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    study: str
    source: str
    frameworks: list[str] = Field(min_length=1, description="frameworks whose adapters implement these variants")
    models: dict[str, Model]
    variants: dict[str, Variant] = Field(min_length=1)
    references: list[Reference] = []
    missing_references: list[Missing] = []
    notes: Optional[str] = None

    @field_validator("name")
    @classmethod
    def _file_name(cls, value, info: ValidationInfo):
        expected = (info.context or {}).get("file_stem")
        if expected is not None and value != expected:
            raise ValueError("name %r must equal the file name %r" % (value, expected))
        return value

    @model_validator(mode="after")
    def _sizes_within_limits(self):
        """Batch sizes, iteration counts, repeats and epochs within each variant's limits."""
        problems = [
            yamlfile.at(field, message)
            for name, variant in self.variants.items()
            for field, message in variant.over_limits("variants.%s" % name)
        ]
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @model_validator(mode="after")
    def _data_fits_models(self):
        """Each variant's data must suit its model: dense vs token input, vocabulary, sequence length."""
        problems = []
        for name, variant in self.variants.items():
            model, data = self.models.get(variant.model), variant.data
            if model is None or data.kind != "dataset":
                continue
            where = "variants.%s.data" % name
            formats = {datasets.lookup(n).format for n in [data.name] + list(data.fallback)}
            tokens = bool(formats & TOKEN_FORMATS)
            if tokens != (model.input_kind == "tokens"):
                problems.append(
                    yamlfile.at(
                        where,
                        "dataset %s gives %s, model %s takes %s input"
                        % (data.name, "token ids" if tokens else "dense arrays", variant.model, model.input_kind),
                    )
                )
            elif tokens and data.tokens is None:
                problems.append(yamlfile.at(where, "dataset %s needs tokens: {vocab, maxlen}" % data.name))
            elif tokens:
                embedding = [layer for layer in model.layers if layer.type == "embedding"]
                if embedding and embedding[0].vocab != data.tokens.vocab:
                    problems.append(
                        yamlfile.at(
                            where + ".tokens.vocab",
                            "%d ids, but model %s embeds %d" % (data.tokens.vocab, variant.model, embedding[0].vocab),
                        )
                    )
                if data.tokens.maxlen is not None and data.tokens.maxlen != model.input_shape[0]:
                    problems.append(
                        yamlfile.at(
                            where + ".tokens.maxlen",
                            "%d, but model %s reads %d steps"
                            % (data.tokens.maxlen, variant.model, model.input_shape[0]),
                        )
                    )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    @field_validator("frameworks")
    @classmethod
    def _adapters_exist(cls, value):
        missing = [f for f in value if f not in adapters.available()]
        if missing:
            raise ValueError(
                "no runner adapter for %s; runner/adapters has: %s"
                % (", ".join(unknown(f, adapters.available()) for f in missing), ", ".join(adapters.available()))
            )
        return value

    def digest(self):
        """SHA-256 of the resolved spec (canonical JSON, defaults filled in)."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()

    def canonical_json(self):
        return canonical_json(self.model_dump(mode="json"))


def spec_path(name):
    """Path of spec ``name``: a file path as given, else specs/<name>.yaml."""
    path = Path(name)
    if path.suffix in (".yaml", ".yml"):
        return path
    return SPECS_DIR / ("%s.yaml" % name)


def available():
    """Names of the specs under specs/."""
    return folders.names(SPECS_DIR)


def existing(name):
    """The file of spec ``name`` (spec_path); raises SpecError in one line when there is none: the near miss
    ("did you mean alexnet?") and the specs available."""
    path = spec_path(name)
    if not path.is_file():
        raise SpecError(
            path,
            ["%s: no such spec%s; available: %s" % (path, near_miss(str(name), available()), ", ".join(available()))],
        )
    return path


def load(name):
    """Load and validate a spec by name or path; raises SpecError naming file, line and field."""
    path = existing(name)
    return yamlfile.load(path, Spec, names_of=("models", "variants"), context={"file_stem": path.stem})
