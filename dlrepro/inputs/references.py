"""Published reference values that a spec carries, each with its kind and source.

Kinds are kept apart and never mixed (from ../shared/research/reference-results.yaml):
  published             printed in a study's published table (README or paper) at a stated version
  notebook_measured     printed in a committed notebook's output (may differ from the README)
  third_party_rerun     measured by someone other than the authors with the study's scripts
  contributor_estimate  an approximate number stated by a contributor in a PR or issue
  secondhand_ratio      a ratio reported by a secondary source about a table whose numbers are missing
"""

import re
from typing import Literal, Optional, Union

from pydantic import Field, PositiveInt, field_validator, model_serializer, model_validator

from dlrepro.inputs import yamlfile
from dlrepro.inputs.yamlfile import Strict

KINDS = ("published", "notebook_measured", "third_party_rerun", "contributor_estimate", "secondhand_ratio")


class Tolerance(Strict):
    """The band of measured / published ratios that counts as reproducing a reference."""

    lower: float = Field(gt=0, description="smallest ratio that reproduces")
    upper: float = Field(gt=0, description="largest ratio that reproduces")

    @model_validator(mode="after")
    def _ordered(self):
        if not self.lower <= 1.0 <= self.upper:
            raise ValueError("lower <= 1 <= upper (got %s, %s)" % (self.lower, self.upper))
        return self


class Reference(Strict):
    id: str
    kind: Literal["published", "notebook_measured", "third_party_rerun", "contributor_estimate", "secondhand_ratio"]
    variant: Optional[str] = Field(None, description="the variant it measures; none when no variant matches exactly")
    experiment: str = Field(description="the experiment as the source names it")
    framework: str
    framework_version: Optional[str] = None
    hardware: str
    gpus: Optional[PositiveInt] = Field(
        None,
        description="GPUs the value was measured on; default: the 'Nx ' the "
        "hardware begins with ('4x NVIDIA Tesla V100'), else one",
    )
    batch_size: Optional[PositiveInt] = None
    metric: str
    value: Union[float, list[float]] = Field(description="a number, or [low, high] for a stated range")
    unit: str
    source: str
    notes: Optional[str] = None
    tolerance: Optional[Tolerance] = Field(
        None, description="default: dlrepro.answers.published.DEFAULT_TOLERANCE by metric"
    )

    _known_variant = field_validator("variant")(yamlfile.reference("variants", "variant", optional=True))

    @field_validator("value")
    @classmethod
    def _range(cls, value):
        if isinstance(value, list) and len(value) != 2:
            raise ValueError("a range is [low, high]")
        return value

    @model_validator(mode="after")
    def _gpus_agree(self):
        stated = stated_gpus(self.hardware)
        if self.gpus and stated and self.gpus != stated:
            raise ValueError(
                "gpus is %d but hardware says %dx (%r): make them agree" % (self.gpus, stated, self.hardware)
            )
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        """An unset ``gpus`` is left out, so that specs (and bundles) from before the field keep their digest."""
        body = handler(self)
        if body.get("gpus") is None:
            body.pop("gpus", None)
        return body


class Missing(Strict):
    """A published result the spec belongs to whose numbers could not be retrieved."""

    id: str
    what: str
    where: str
    status: str


def stated_gpus(hardware):
    """The GPU count a hardware text begins with ('4x NVIDIA Tesla V100' -> 4), or None."""
    found = re.match(r"\s*(\d+)\s*x\s", hardware)
    return int(found[1]) if found else None


def of_column(references, column, tool):
    """The reference of ``tool`` in a study table's ``column`` (inputs.studies.Column: variant, batch size, metric,
    kind, hardware and source text) among ``references`` ([Reference]), or None."""
    variant = column.reference_variant or column.variant
    for ref in references:
        if (
            ref.variant == variant
            and ref.metric == column.metric
            and ref.kind == column.kind
            and ref.framework == tool
            and (column.batch_size is None or ref.batch_size == column.batch_size)
            and (column.hardware is None or column.hardware.lower() in ref.hardware.lower())
            and (column.source is None or column.source in ref.source)
        ):
            return ref
    return None
