"""Expand a spec into jobs: framework x variant x batch size (x thread count) (x seed) on one device.

A job is the job.json body of runner.contract (schema dlrepro.job/1), complete in
itself: the runner never reads specs. Dataset and weight files are named by the
dataset actually used, so ``resolve`` fills them in once the cache holds it.
The user's choices and overrides come as dlrepro.run.options.RunOptions; its digest, with
the spec's, names the run configuration in the bundle id.
"""

import hashlib
import json

from dlrepro.errors import DlreproError
from dlrepro.names import unknown as unknown_name
from dlrepro.plan.expressible import unsupported
from runner.adapters import capabilities
from runner.contract import JOB_SCHEMA, OPTION_DEFAULTS
from runner.frameworks import Token

QUICK = {
    "warmup": 1,
    "iterations": 3,
    "repeats": 1,
    "epochs": 1,
    "max_iterations_per_epoch": 100,
    "inference_batches": 3,
}
TIMEOUT_S = {"throughput": 1800, "convergence": 86400, "inference": 1800, "parameters": 600}


def _pick(option, quick_value, spec_value, quick):
    if option is not None:
        return option
    return quick_value if quick else spec_value


def _job_id(variant, framework, device, batch_size, threads, mode, default_mode, ranks=None, seed=None):
    """variant.framework.device.b<batch>[.t<threads>][.g<GPUs> | .r<CPU ranks>][.mode][.s<seed>]: the batch as the
    spec gives it (a data-parallel job's total under strong scaling, per GPU under weak scaling); the seed only when
    the run trains more than one (``seed`` None otherwise)."""
    parts = [variant, framework, device, "b%d" % batch_size]
    if threads:
        parts.append("t%d" % threads)
    if ranks is not None:
        parts.append("%s%d" % ("g" if device == "cuda" else "r", ranks))
    if mode != default_mode:
        parts.append(mode)
    if seed is not None:
        parts.append("s%d" % seed)
    return ".".join(parts)


def _data(variant):
    data = variant.data
    if data.kind == "synthetic":
        return {"kind": "synthetic", "seed": data.seed}
    return {
        "kind": "dataset",
        "name": data.name,
        "candidates": [data.name] + list(data.fallback),
        "format": None,
        "files": None,
        "scale": data.scale,
        "subtract_mean": data.subtract_mean,
        "options": data.tokens.model_dump(exclude_none=True) if data.tokens else {},
    }


def _sizes(variant, options, mode):
    if options.batch_sizes:
        return options.batch_sizes
    sizes = variant.batch_sizes.get(options.device, [])
    if mode == "convergence" and variant.convergence.batch_size:
        sizes = [variant.convergence.batch_size]
    return sizes[:1] if options.quick else sizes


def _seeds(variant, options, mode):
    """The seeds of a job's independent trainings: 0..N-1, N from --seeds, else 1 under --quick, else the variant's
    ``convergence.seeds``; one training (seed 0) in any other mode."""
    if mode != "convergence":
        return [0]
    return list(range(_pick(options.seeds, 1, variant.convergence.seeds, options.quick)))


def _threads(variant, options):
    if options.threads is None:
        return [None]
    if options.threads == "sweep":
        return variant.threads or [None]
    return options.threads


def _ranks(variant, options):
    if options.ranks is None:
        return [None]
    return list(variant.gpus) if options.ranks == "spec" else list(options.ranks)


def _data_parallel(variant, batch_size, ranks, optimizer):
    """The job's data-parallel fields for ``ranks`` (None: a plain job), or None when the batch cannot be split:
    {ranks, scaling, batch_size (total mini-batch), rank_batch_size, optimizer (weak scaling: lr times ranks)}."""
    if ranks is None:
        return {"ranks": None, "scaling": None, "rank_batch_size": None}
    scaling = variant.scaling or "strong"
    if scaling == "strong" and batch_size % ranks:
        return None
    per_rank = batch_size // ranks if scaling == "strong" else batch_size
    found = {"ranks": ranks, "scaling": scaling, "batch_size": per_rank * ranks, "rank_batch_size": per_rank}
    if scaling == "weak" and optimizer:
        found["optimizer"] = dict(optimizer, lr=optimizer["lr"] * ranks)
    return found


def _mode_settings(variant, options, mode):
    if mode == "convergence":
        conv = variant.convergence
        settings = {
            "epochs": _pick(options.epochs, QUICK["epochs"], conv.epochs, options.quick),
            "max_iterations_per_epoch": QUICK["max_iterations_per_epoch"]
            if options.quick
            else conv.max_iterations_per_epoch,
            "test_complete_batches": conv.test_complete_batches,
        }
        if options.test_batch_size:  # only where given: the jobs of runs without it are as they were
            settings["test_batch_size"] = options.test_batch_size
        return settings
    if mode == "inference":
        return {
            "inference_batches": QUICK["inference_batches"] if options.quick else variant.inference.batches,
            "untimed_passes": variant.inference.untimed_passes,
        }
    return {}


def step_of(options, framework):
    """The job fields ``gradients`` and ``thread_pools`` (runner.contract) of ``framework`` (a token, NAME or
    NAME@VERSION) under ``options.steps``: its token's entry, else its name's, else the suite's defaults."""
    step = options.steps.get(framework) or options.steps.get(Token.parse(framework).name)
    return (
        step.model_dump()
        if step
        else {"gradients": OPTION_DEFAULTS["gradients"], "thread_pools": OPTION_DEFAULTS["thread_pools"]}
    )


def _checked_steps(options, frameworks, device):
    """Raise DlreproError, one line, for an entry of ``options.steps`` that names none of ``frameworks`` or asks
    its adapter for a step it cannot build (runner.adapters.capabilities.unsupported_options)."""
    for given, step in options.steps.items():
        tokens = [f for f in frameworks if given in (f, Token.parse(f).name)]
        if not tokens:
            raise DlreproError(
                "steps: %s is none of the run's frameworks (%s)" % (given, ", ".join(frameworks)),
                "name a framework of the run (as --framework gives it), or drop the entry",
            )
        problem = next(
            filter(
                None,
                (
                    capabilities.unsupported_options(token, dict(step.model_dump(), threads=1), device)
                    for token in tokens
                ),
            ),
            None,
        )
        if problem:
            raise DlreproError(
                "steps: %s: %s" % (given, problem),
                "leave the step as the suite's for that framework, or choose an image whose adapter "
                "has it (TensorFlow 1.x)",
            )


def _not_applicable(variant, mode):
    """Why ``variant`` cannot run in ``mode``, or None."""
    if mode == "parameters":
        return None
    if mode == "convergence" and (variant.convergence is None or variant.data.kind != "dataset"):
        return "convergence needs real data and a convergence section"
    if mode == "inference" and (variant.inference is None or variant.data.kind != "synthetic"):
        return "inference needs an inference section and synthetic data"
    if mode in ("throughput", "convergence") and variant.optimizer is None:
        return "%s trains, and the variant has no optimizer" % mode
    return None


def left_out(spec, options):
    """{variant, framework, reason} for each selected variant (x framework) that cannot run as asked:
    the mode does not apply to the variant, or the framework's adapter cannot express it."""
    out = []
    for name in options.variants or list(spec.variants):
        reason = _not_applicable(spec.variants[name], options.mode or spec.variants[name].mode)
        if reason:
            out.append({"variant": name, "framework": None, "reason": reason})
            continue
        for framework in _frameworks(spec, options):
            reason = unsupported(spec, name, framework)
            if reason is None and options.ranks is not None:
                reason = capabilities.unsupported_parallel(framework, options.mode or spec.variants[name].mode)
            if reason:
                out.append({"variant": name, "framework": framework, "reason": "unsupported: " + reason})
        if options.ranks is not None and (spec.variants[name].scaling or "strong") == "strong":
            uneven = sorted(
                {
                    (b, r)
                    for b in _sizes(spec.variants[name], options, options.mode or spec.variants[name].mode)
                    for r in _ranks(spec.variants[name], options)
                    if b % r
                }
            )
            for b, r in uneven:
                out.append(
                    {
                        "variant": name,
                        "framework": None,
                        "reason": "batch %d does not split into %d equal rank mini-batches" % (b, r),
                    }
                )
    return out


def _frameworks(spec, options):
    return options.frameworks or list(spec.frameworks)


def known_frameworks(frameworks, known, owner):
    """Raise DlreproError when one of ``frameworks`` (NAME or NAME@VERSION) is not in ``known``, the frameworks of
    ``owner`` (e.g. "spec alexnet"), naming it with its near miss or odd letter."""
    foreign = [f for f in frameworks if Token.parse(f).name not in known]
    if foreign:
        raise DlreproError(
            "%s declares no adapter for %s; its frameworks: %s"
            % (owner, ", ".join(unknown_name(f, known) for f in foreign), ", ".join(known)),
            "give --framework names of those, comma-separated, or leave --framework out",
        )


def _within_limits(spec, variants, options):
    """Raise DlreproError naming the option when a size given on the command line is above a chosen variant's
    limits (the spec's ``limits``, which the spec may raise)."""
    given = [("--batch-size", b, "batch_size") for b in options.batch_sizes or []] + [
        ("--warmup", options.warmup, "iterations"),
        ("--iterations", options.iterations, "iterations"),
        ("--repeats", options.repeats, "repeats"),
        ("--epochs", options.epochs, "epochs"),
    ]
    for name in variants:
        limits = spec.variants[name].limits
        over = [
            "%s %s" % (option, format(value, ","))
            for option, value, limit in given
            if value is not None and value > getattr(limits, limit)
        ]
        if over:
            raise DlreproError(
                "%s: above the limits of variant %s (%s)"
                % (
                    ", ".join(over),
                    name,
                    ", ".join("%s %s" % (k, format(v, ",")) for k, v in limits.model_dump().items()),
                ),
                "a typo? If the study needs it, raise the limit in the spec: limits: {batch_size: N} in the variant",
            )


def expand(spec, options):
    """Jobs (job.json dicts, in run order) for ``spec`` under ``options``.

    Variants the mode does not apply to are left out (see ``left_out``). A convergence job is one job per
    seed (``_seeds``: each an independent training from job["seed"]). Raises DlreproError for a variant or
    framework the spec does not have, thread counts on a GPU, a selection that leaves no job, --seeds above 1
    where no job is a convergence job, or ``options.steps`` naming another framework or a step its adapter
    cannot build (``_checked_steps``). Each job's ``gradients`` and ``thread_pools`` are its framework's
    ``steps`` entry (``step_of``; thread_pools only with a thread count), else the suite's defaults.
    """
    if options.device == "cuda" and options.threads is not None:
        raise DlreproError("--threads sets CPU thread counts; it does not apply to --device cuda")
    variants = options.variants or list(spec.variants)
    unknown = [v for v in variants if v not in spec.variants]
    if unknown:
        raise DlreproError(
            "spec %s has no variant %s; it has: %s" % (spec.name, ", ".join(unknown), ", ".join(spec.variants))
        )
    _within_limits(spec, variants, options)
    frameworks = _frameworks(spec, options)
    known_frameworks(frameworks, spec.frameworks, "spec %s" % spec.name)
    _checked_steps(options, frameworks, options.device)
    jobs = []
    for name, mode, framework, seeds, batch_size, threads, ranks, seed, parallel in _selected(
        spec, variants, frameworks, options, unsupported
    ):
        variant = spec.variants[name]
        model = spec.models[variant.model]
        token = Token.parse(framework)
        job = {
            "schema": JOB_SCHEMA,
            "id": _job_id(
                name,
                token.job_part,
                options.device,
                batch_size,
                threads,
                mode,
                variant.mode,
                ranks,
                seed if len(seeds) > 1 else None,
            ),
            "spec": {"name": spec.name, "sha256": spec.digest()},
            "variant": name,
            "framework": token.name,
            "framework_version": token.version,
            "device": options.device,
            "mode": mode,
            "model": {
                "name": variant.model,
                "input_shape": list(model.input_shape),
                "input_kind": model.input_kind,
                "target": model.target,
                "classes": model.classes,
                "init": model.init_for(token.name).model_dump(exclude_none=True),
                "parameters": model.parameters,
                "layers": model.layer_dicts(),
            },
            "data": _data(variant),
            "weights": {
                "name": variant.weights.dataset,
                "format": None,
                "files": None,
                "layout": variant.weights.layout,
                "top1": variant.weights.top1,
            }
            if variant.weights
            else None,
            "optimizer": variant.optimizer.model_dump(exclude_none=True) if variant.optimizer else None,
            "loss": variant.loss.model_dump(),
            "batch_size": batch_size,
            "warmup": _pick(options.warmup, QUICK["warmup"], variant.warmup, options.quick),
            "iterations": _pick(options.iterations, QUICK["iterations"], variant.iterations, options.quick),
            "repeats": _pick(options.repeats, QUICK["repeats"], variant.repeats, options.quick),
            "epochs": None,
            "max_iterations_per_epoch": None,
            "threads": threads,
            "precision": options.precision,
            "cudnn_autotune": options.cudnn_autotune,
            "layout": options.layout,
            "compile": options.compile,
            "cuda_graphs": options.cuda_graphs,
            "allow_ptx_jit": options.allow_ptx_jit,
            "cuda_archs": [],
            "seed": seed,
            "timeout_s": options.timeout_s or TIMEOUT_S[mode],
        }
        step = step_of(options, framework)
        job.update(
            gradients=step["gradients"],  # thread_pools says how a thread count is applied
            thread_pools=step["thread_pools"] if threads else OPTION_DEFAULTS["thread_pools"],
        )
        job.update(_mode_settings(variant, options, mode))
        job.update(parallel)
        jobs.append(job)
    if not jobs:
        reasons = "; ".join(
            "%s%s: %s" % (o["variant"], " on " + o["framework"] if o["framework"] else "", o["reason"])
            for o in left_out(spec, options)
        )
        raise DlreproError(
            "spec %s gives no job for device %s with these options%s"
            % (spec.name, options.device, " (%s)" % reasons if reasons else "")
        )
    if options.seeds and options.seeds > 1 and not any(j["mode"] == "convergence" for j in jobs):
        raise DlreproError(
            "--seeds %d: seeds are independent trainings of convergence jobs, and none of the jobs "
            "selected is one" % options.seeds,
            "leave --seeds out, or select a convergence variant (or --mode convergence)",
        )
    return jobs


def _selected(spec, variants, frameworks, options, why_not):
    """(variant name, mode, framework, seeds, batch size, threads, ranks, seed, data-parallel fields) of each job of
    ``variants`` x ``frameworks`` that ``options`` select, in run order; ``why_not(spec, variant, framework)`` says
    why an adapter cannot express a variant (``unsupported``, or a memo of it)."""
    for name in variants:
        variant = spec.variants[name]
        mode = options.mode or variant.mode
        if _not_applicable(variant, mode):
            continue
        for framework in frameworks:
            if why_not(spec, name, framework) or (
                options.ranks is not None and capabilities.unsupported_parallel(framework, mode)
            ):
                continue
            seeds = _seeds(variant, options, mode)
            for batch_size, threads, ranks, seed in [
                (b, t, r, s)
                for b in _sizes(variant, options, mode)
                for t in _threads(variant, options)
                for r in _ranks(variant, options)
                for s in seeds
            ]:
                parallel = _data_parallel(
                    variant,
                    batch_size,
                    ranks,
                    variant.optimizer.model_dump(exclude_none=True) if variant.optimizer else None,
                )
                if parallel is not None:  # a total mini-batch that does not split evenly: left out (left_out)
                    yield name, mode, framework, seeds, batch_size, threads, ranks, seed, parallel


def count(spec, options, why_not=unsupported):
    """How many jobs ``expand`` gives for ``spec`` under ``options`` (0 where it would raise for want of one),
    without building them (what a plan counts: dlrepro.run.estimate); ``why_not`` as ``unsupported`` (a memo of it)."""
    variants = options.variants or list(spec.variants)
    return sum(1 for _ in _selected(spec, variants, _frameworks(spec, options), options, why_not))


def resolve(job, section, record):
    """Name the files of the dataset actually used in ``job[section]`` ("data" or "weights")."""
    job[section] = dict(job[section], name=record.name, format=record.dataset.format, files=record.files)


def digest(spec, options):
    """Short hash of the run configuration (resolved spec + options), used in bundle ids."""
    return hashlib.sha256(json.dumps([spec.digest(), options.digest()]).encode()).hexdigest()
