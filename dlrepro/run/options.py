"""What ``dlrepro run`` was asked to do (RunOptions), and the translation of its command-line text.

RunOptions is immutable and validated by pydantic; None in a field means "as the spec says".
``from_cli`` takes the option texts exactly as typed (comma-separated lists, UNSET, an empty text, for a
number not given: every number given, negative ones too, is checked as the spec's fields are) and raises
DlreproError naming the option (``--batch-size``, ``--iterations``, ...) and what it expects, never a pydantic
or ValueError traceback.
"""

import hashlib
import json
import re
from typing import Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, PositiveInt, ValidationError, field_validator

from dlrepro.errors import DlreproError
from dlrepro.inputs.spec import MAX_SEEDS
from dlrepro.run.optiontext import UNSET, split  # noqa: F401 (split: the tasks' too)
from runner.contract import GRADIENTS, OPTION_DEFAULTS, THREAD_POOLS
from runner.frameworks import Token

WHERE = {"executor", "gpu", "gpus", "isolation"}  # where and how jobs run, not what they measure
OPTION_NAMES = {
    "frameworks": "--framework",
    "variants": "--variant",
    "batch_sizes": "--batch-size",
    "timeout_s": "--timeout",
}


class Step(BaseModel):
    """How one framework's jobs time their training step where a study's own scripts did other work than the
    suite's default (runner.contract: ``gradients``, ``thread_pools``; ``thread_pools`` applies to jobs with a
    thread count)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gradients: Literal[GRADIENTS] = OPTION_DEFAULTS["gradients"]
    thread_pools: Literal[THREAD_POOLS] = OPTION_DEFAULTS["thread_pools"]


class RunOptions(BaseModel):
    """What ``dlrepro run`` was asked to do; None means "as the spec says"."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    frameworks: Optional[list[str]] = Field(None, description="framework names, or name@version for one image")
    device: Literal["cpu", "cuda"] = "cpu"
    executor: Optional[Literal["docker", "local", "slurm"]] = Field(
        None, description="docker, local or slurm; None: docker, or on a resume the bundle's"
    )
    isolation: Literal["worker", "process"] = Field(
        "worker", description="worker: the jobs that share their settings run in one warm process; process: one each"
    )
    variants: Optional[list[str]] = None
    mode: Optional[Literal["throughput", "convergence", "inference", "parameters"]] = Field(
        None, description="default: each variant's own mode; parameters: build the model and count, nothing else"
    )
    batch_sizes: Optional[list[PositiveInt]] = None
    warmup: Optional[NonNegativeInt] = None
    iterations: Optional[PositiveInt] = None
    repeats: Optional[PositiveInt] = None
    epochs: Optional[PositiveInt] = None
    seeds: Optional[PositiveInt] = Field(
        None,
        le=MAX_SEEDS,
        description="independent trainings of each convergence job, seeds 0..N-1; None: the variant's "
        "convergence.seeds (1 with quick)",
    )
    test_batch_size: Optional[PositiveInt] = Field(
        None,
        description="a convergence job's evaluation mini-batch size (the test samples evaluated stay the spec's: "
        "complete training batches where it says so); None: the training batch size",
    )
    threads: Union[Literal["sweep"], list[PositiveInt], None] = Field(
        None, description="thread counts, or 'sweep' for the spec's; None: the framework's choice"
    )
    ranks: Union[Literal["spec"], list[PositiveInt], None] = Field(
        None,
        description="data-parallel ranks per job (one per GPU on cuda, one process each on the CPU), or "
        "'spec' for the variant's GPU counts; None: plain jobs of one device, no data parallelism",
    )
    gpu: NonNegativeInt = Field(0, description="host GPU index for --device cuda")
    gpus: Optional[list[NonNegativeInt]] = Field(
        None, description="host GPU indices for --device cuda: independent jobs run concurrently, one per GPU"
    )
    quick: bool = False
    timeout_s: Optional[PositiveInt] = None
    precision: Literal["fp32", "tf32", "bf16", "fp16"] = Field(
        "fp32", description="fp32 = TF32 off (the studies' GPUs had none); tf32; bf16/fp16 mixed precision"
    )
    cudnn_autotune: bool = True
    layout: Literal["default", "channels_last"] = "default"
    compile: bool = False
    cuda_graphs: bool = False
    allow_ptx_jit: bool = Field(
        False,
        description="run a build that has only PTX for an older architecture "
        "than the GPU's (driver JIT), marked ptx_jit",
    )
    steps: dict[str, Step] = Field(
        {},
        description="framework token (as in frameworks: NAME or NAME@VERSION) -> "
        "how its jobs time the step (a study's, dlrepro.inputs.studies); "
        "none: the suite's",
    )

    @field_validator("frameworks", "variants", "batch_sizes", "threads", "gpus", "ranks")
    @classmethod
    def _no_repeats(cls, value):
        if isinstance(value, list) and len(set(value)) != len(value):
            raise ValueError(
                "lists %s more than once" % ", ".join(str(v) for v in sorted(set(value), key=str) if value.count(v) > 1)
            )
        return value

    @field_validator("frameworks")
    @classmethod
    def _tokens(cls, value):
        for text in value or []:
            Token.parse(text)  # NAME or NAME@VERSION, neither part empty
        return value

    def digest(self):
        """What is measured, not where: the executor and GPU indices are left out (and measurement
        options at their defaults and seeds when not given, so that configurations from before they existed keep
        their digest)."""
        body = self.model_dump(mode="json", exclude=WHERE)
        for name, default in dict(OPTION_DEFAULTS, seeds=None, test_batch_size=None, steps={}).items():
            if body.get(name) == default:
                del body[name]
        return hashlib.sha256(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()


def _items(option, text, convert, what):
    try:
        return split(text, convert)
    except ValueError:
        raise DlreproError("%s: expected %s (got %r)" % (option, what, text)) from None


def memory_bytes(text):
    """Bytes of a memory size as docker writes it: a number with an optional unit b, k, m or g (powers of 1024;
    "kib", "gb" and the like too). Raises DlreproError for anything else or less than the engine's 6 MiB."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmg])i?b?|b)?\s*", text.lower())
    value = float(match.group(1)) * {None: 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2)] if match else 0
    if value < 6 << 20:
        raise DlreproError("--memory: expected a size such as 512m or 8g, at least 6m (got %r)" % text)
    return int(value)


def _threads(text):
    if text.strip() == "sweep":
        return "sweep"
    return _items("--threads", text, int, "'sweep' or comma-separated thread counts")


def _ranks(text):
    if text.strip() == "spec":
        return "spec"
    return _items("--ranks", text, int, "'spec' or comma-separated rank (GPU) counts")


def _number(option, value):
    """The whole number of option ``option`` (its text, or an int), None when not given (UNSET); raises
    DlreproError naming the option for anything else. Its range is checked by RunOptions."""
    if value == UNSET or value is None:
        return None
    try:
        return int(str(value).strip())
    except ValueError:
        raise DlreproError("%s: expected a whole number (got %r)" % (option, value)) from None


def from_cli(
    framework="",
    device="cpu",
    executor="",
    variant="",
    mode="",
    batch_size="",
    warmup=UNSET,
    iterations=UNSET,
    repeats=UNSET,
    epochs=UNSET,
    threads="",
    gpu=0,
    quick=False,
    timeout=UNSET,
    gpus="",
    precision="fp32",
    layout="default",
    cudnn_autotune=True,
    compile=False,
    allow_ptx_jit=False,
    isolation="worker",
    ranks="",
    seeds=UNSET,
    test_batch_size=UNSET,
):
    """RunOptions from ``dlrepro run``'s option texts (lists comma-separated, UNSET for numbers not given).

    Raises DlreproError with one line per wrong option: ``--OPTION: what is expected (got ...)``."""
    values = dict(
        frameworks=split(framework),
        device=device,
        executor=executor or None,
        variants=split(variant),
        mode=mode or None,
        batch_sizes=_items("--batch-size", batch_size, int, "comma-separated numbers"),
        warmup=_number("--warmup", warmup),
        iterations=_number("--iterations", iterations),
        repeats=_number("--repeats", repeats),
        epochs=_number("--epochs", epochs),
        threads=_threads(threads),
        gpu=_number("--gpu", gpu),
        quick=quick,
        timeout_s=_number("--timeout", timeout),
        gpus=_items("--gpus", gpus, int, "comma-separated GPU indices"),
        precision=precision,
        layout=layout,
        cudnn_autotune=cudnn_autotune,
        compile=compile,
        allow_ptx_jit=allow_ptx_jit,
        isolation=isolation,
        ranks=_ranks(ranks),
        seeds=_number("--seeds", seeds),
        test_batch_size=_number("--test-batch-size", test_batch_size),
    )
    return checked(**values)


def checked(**values):
    """RunOptions of ``values`` (its fields, as typed values); raises DlreproError with one line per wrong option:
    ``--OPTION: what is expected (got ...)`` (``dlrepro run``'s and ``dlrepro study``'s checks alike)."""
    try:
        return RunOptions(**values)
    except ValidationError as exc:
        deepest = {}  # an option that may take several forms reports each; keep the most specific
        for e in sorted(exc.errors(), key=lambda e: -len(e["loc"])):
            deepest.setdefault(e["loc"][0], e)
        raise DlreproError(
            "\n".join(
                "%s: %s (got %r)"
                % (
                    OPTION_NAMES.get(name, "--" + str(name).replace("_", "-")),
                    e["msg"].removeprefix("Value error, "),
                    e["input"],
                )
                for name, e in deepest.items()
            ),
            "give each option a value in its range: `dlrepro --help run` lists them",
        ) from None


def slurm_option_problem(option):
    """Why ``option`` cannot be one ``#SBATCH`` line of a batch script (a text), or None. An option must be one
    sbatch option: text that starts with ``-`` and holds no newline or other control character (one would end
    the ``#SBATCH`` line and make the rest a command of the script)."""
    if not isinstance(option, str):
        return "expected an sbatch option as text (got %r)" % (option,)
    if not option.startswith("-"):
        return "expected an sbatch option, starting with - (got %r)" % option
    if any(ord(c) < 32 or ord(c) == 127 for c in option):
        return "an sbatch option holds no newline or other control character (got %r)" % option
    return None


def _slurm_options(options, where, remedy):
    """``options`` (a list of sbatch options), each checked (``slurm_option_problem``); raises DlreproError naming
    ``where`` the first bad one is and ``remedy``."""
    if not isinstance(options, list):
        raise DlreproError("%s: expected a list of sbatch options (got %r)" % (where, options), remedy)
    for option in options:
        problem = slurm_option_problem(option)
        if problem:
            raise DlreproError("%s: %s" % (where, problem), remedy)
    return list(options)


def slurm_settings(executor, partition="", options=None, max_parallel=UNSET, detach=False):
    """The slurm executor's settings from ``dlrepro run``'s --partition, --slurm-option (a list), --max-parallel
    (UNSET: not given) and --detach, or None when none is given (on a resume: the bundle's). Raises
    DlreproError for a --max-parallel below 1, a --slurm-option that is not one sbatch option
    (``slurm_option_problem``), or Slurm options without ``--executor slurm``."""
    given = bool(partition or options or max_parallel != UNSET or detach)
    if given and executor not in ("slurm", None):  # None: a resume's executor, checked once known (runs.run)
        raise DlreproError(
            "--partition, --slurm-option, --max-parallel and --detach go with --executor slurm (not %s)" % executor,
            "add --executor slurm, or leave them out",
        )
    max_parallel = _number("--max-parallel", max_parallel)
    if max_parallel is not None and max_parallel < 1:
        raise DlreproError(
            "--max-parallel: expected a number of tasks >= 1 (got %r)" % max_parallel,
            "give --max-parallel 1 or more, or leave it out (no cap)",
        )
    options = _slurm_options(
        list(options or []),
        "--slurm-option",
        "give each sbatch option as its own --slurm-option, e.g. --slurm-option=--account=lab",
    )
    if not given:
        return None
    return {"partition": partition or None, "options": options, "max_parallel": max_parallel, "detach": detach}


def recorded_slurm(executor, path):
    """The slurm executor's settings a bundle recorded (bundle.json ``executor``: partition, slurm_options,
    max_parallel), for its resume, checked as the command line's are: ``path`` (its bundle.json) is named in the
    error (DlreproError) when one was changed into something that is not an sbatch option."""
    remedy = "restore %s as the run wrote it, or give the Slurm options again (--slurm-option ...)" % path
    partition, limit = executor.get("partition"), executor.get("max_parallel")
    if partition is not None and (not isinstance(partition, str) or slurm_option_problem("-" + partition)):
        raise DlreproError("%s: executor.partition: expected a partition name (got %r)" % (path, partition), remedy)
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise DlreproError(
            "%s: executor.max_parallel: expected a number of tasks >= 1 (got %r)" % (path, limit), remedy
        )
    options = _slurm_options(executor.get("slurm_options") or [], "%s: executor.slurm_options" % path, remedy)
    return {"partition": partition, "options": options, "max_parallel": limit}
