"""Expand a spec into jobs: framework x variant x batch size (x threads) on one device.

A job is the job.json body of runner.contract (schema dlrepro.job/1), complete in
itself: the runner never reads specs. ``RunOptions`` carries the user's choices and
overrides; its digest, with the spec's, names the run configuration in the bundle id.
"""
import hashlib
import json
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, field_validator

from dlrepro.errors import DlreproError
from runner.contract import JOB_SCHEMA

QUICK = {"warmup": 1, "iterations": 3, "repeats": 1, "epochs": 1, "max_iterations_per_epoch": 100}
TIMEOUT_S = {"throughput": 1800, "convergence": 86400}


class RunOptions(BaseModel):
    """What ``invoke run`` was asked to do; None means "as the spec says"."""
    model_config = ConfigDict(extra="forbid", frozen=True)

    frameworks: Optional[list[str]] = None
    device: Literal["cpu", "cuda"] = "cpu"
    executor: Literal["docker", "local"] = "docker"
    variants: Optional[list[str]] = None
    mode: Literal["throughput", "convergence"] = "throughput"
    batch_sizes: Optional[list[PositiveInt]] = None
    warmup: Optional[NonNegativeInt] = None
    iterations: Optional[PositiveInt] = None
    repeats: Optional[PositiveInt] = None
    epochs: Optional[PositiveInt] = None
    threads: Optional[PositiveInt] = None
    gpu: NonNegativeInt = Field(0, description="host GPU index for --device cuda")
    quick: bool = False
    timeout_s: Optional[PositiveInt] = None

    @field_validator("frameworks", "variants", "batch_sizes")
    @classmethod
    def _no_repeats(cls, value):
        if value is not None and len(set(value)) != len(value):
            raise ValueError("lists %s more than once" % ", ".join(str(v) for v in sorted(set(value), key=str)
                                                                     if value.count(v) > 1))
        return value

    def digest(self):
        """What is measured, not where: the executor and GPU index are left out."""
        return hashlib.sha256(self.model_dump_json(exclude={"executor", "gpu"}).encode()).hexdigest()


def _pick(option, quick_value, spec_value, quick):
    if option is not None:
        return option
    return quick_value if quick else spec_value


def _job_id(variant, framework, device, batch_size, threads, mode):
    parts = [variant, framework, device, "b%d" % batch_size]
    if threads:
        parts.append("t%d" % threads)
    if mode == "convergence":
        parts.append("convergence")
    return ".".join(parts)


def _data(variant, catalogue):
    data = variant.data
    if data.kind == "synthetic":
        return {"kind": "synthetic", "seed": data.seed}
    entry = catalogue[data.name]
    return {"kind": "dataset", "name": data.name, "format": entry.format, "files": entry.digests(),
            "scale": data.scale, "subtract_mean": data.subtract_mean}


def expand(spec, options, catalogue):
    """Jobs (job.json dicts, in run order) for ``spec`` under ``options``.

    ``catalogue`` maps dataset names to datasets.Dataset. Raises DlreproError for a
    variant or framework the spec does not have, or a selection that leaves no job.
    """
    variants = options.variants or list(spec.variants)
    unknown = [v for v in variants if v not in spec.variants]
    if unknown:
        raise DlreproError("spec %s has no variant %s; it has: %s"
                           % (spec.name, ", ".join(unknown), ", ".join(spec.variants)))
    frameworks = options.frameworks or list(spec.frameworks)
    unsupported = [f for f in frameworks if f not in spec.frameworks]
    if unsupported:
        raise DlreproError("spec %s declares no adapter for %s; its frameworks: %s"
                           % (spec.name, ", ".join(unsupported), ", ".join(spec.frameworks)))
    jobs = []
    for name in variants:
        variant = spec.variants[name]
        model = spec.models[variant.model]
        if options.mode == "convergence":
            if variant.convergence is None or variant.data.kind != "dataset":
                continue
            sizes = options.batch_sizes or [variant.convergence.batch_size]
            epochs = _pick(options.epochs, QUICK["epochs"], variant.convergence.epochs, options.quick)
            per_epoch = QUICK["max_iterations_per_epoch"] if options.quick else variant.convergence.max_iterations_per_epoch
        else:
            sizes = options.batch_sizes or variant.batch_sizes.get(options.device, [])
            sizes = sizes[:1] if options.quick and not options.batch_sizes else sizes
            epochs, per_epoch = None, None
        for framework in frameworks:
            for batch_size in sizes:
                jobs.append({
                    "schema": JOB_SCHEMA,
                    "id": _job_id(name, framework, options.device, batch_size, options.threads, options.mode),
                    "spec": {"name": spec.name, "sha256": spec.digest()},
                    "variant": name,
                    "framework": framework,
                    "device": options.device,
                    "mode": options.mode,
                    "model": {"name": variant.model, "input_shape": list(model.input_shape), "classes": model.classes,
                              "init": model.init, "parameters": model.parameters, "layers": model.layer_dicts()},
                    "data": _data(variant, catalogue),
                    "optimizer": variant.optimizer.model_dump(),
                    "loss": "softmax_cross_entropy",
                    "batch_size": batch_size,
                    "warmup": _pick(options.warmup, QUICK["warmup"], variant.warmup, options.quick),
                    "iterations": _pick(options.iterations, QUICK["iterations"], variant.iterations, options.quick),
                    "repeats": _pick(options.repeats, QUICK["repeats"], variant.repeats, options.quick),
                    "epochs": epochs,
                    "max_iterations_per_epoch": per_epoch,
                    "threads": options.threads,
                    "precision": "fp32",
                    "cudnn_autotune": True,
                    "seed": 0,
                    "timeout_s": options.timeout_s or TIMEOUT_S[options.mode],
                })
    if not jobs:
        raise DlreproError("spec %s gives no %s job for device %s with these options%s"
                           % (spec.name, options.mode, options.device,
                              " (convergence needs a variant with a convergence section and a dataset)"
                              if options.mode == "convergence" else ""))
    return jobs


def digest(spec, options):
    """Short hash of the run configuration (resolved spec + options), used in bundle ids."""
    return hashlib.sha256(json.dumps([spec.digest(), options.digest()]).encode()).hexdigest()
