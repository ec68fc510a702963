"""What renting a host for a study would cost, said before anything runs: the host's price per hour, the study's
time and cost there estimated from the passes the repository recorded, and what to fetch (images, datasets).

The estimate is per run of the study (studies/<name>.yaml): the jobs the run has on the host (counted as
``dlrepro study`` expands them: the run's GPU counts up to the host's, its thread counts up to the host's cores,
the spec's frameworks whose image runs on the device, dlrepro.run.jobs.count) times the seconds per job of one
recorded pass like the run's (``source``: the same spec, device and mode, the spec's lengths, a full pass or
--quick as asked; one that ran a variant of the run first, then one on the host's GPU model, then the newest): a
committed bundle's wall time over its attempts divided by the jobs it ran (ok or failed; a skipped job costs
nothing); the line of each run names the pass and the variants it ran. It is not scaled to the host's
speed (the recorded job's wall time stands as it is) and says so; a run with no recorded pass is left out of the
total, which then reads "at least".

  price     the devices' usd_per_device_hour (dlrepro/inputs/prices.yaml) times their count: the host's GPUs on a GPU
            host (a GPU row prices the instance's CPUs with it), its cores on a CPU host; a GPU model named
            without memory and form factor ("H100") takes the one row whose name starts with it
  images    the images the runs' frameworks run, with the size recorded when the CUDA images were built and
            looked inside (results/cuda-images-20261202/cuda-images.json); a CPU image's size is not recorded
  datasets  what the runs read, with the bytes dlrepro/inputs/datasets.yaml pins
"""

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from dlrepro import REPO_ROOT
from dlrepro.images import gpu_support
from dlrepro.inputs import prices as pricesmod
from dlrepro.inputs.peaks import normal

LENGTHS = ("epochs", "iterations", "repeats", "warmup", "seeds")  # options that change how long a job runs
BUNDLE_ID = re.compile(r"^(.+)-\d{8}T\d{6}Z-[0-9a-f]{8}$")  # a bundle's folder as a run names it
IMAGE_RECORD = REPO_ROOT / "results" / "cuda-images-20261202" / "cuda-images.json"


@dataclass(frozen=True)
class Pass:
    """One recorded bundle as the estimate reads it: its ``bundle`` id, ``spec``, the ``variants`` its jobs ran,
    ``mode`` (--mode, None: each variant's own), ``defaults`` (no --epochs, --iterations, --repeats, --warmup or
    --seeds: the lengths a study's jobs have), ``device`` ("cpu" or "cuda"), ``gpu`` (the first GPU's name, None on a
    CPU run), ``gpus`` and ``cpus`` of its host, ``quick`` (a --quick pass), ``jobs`` it ran (ok or failed),
    ``seconds`` of wall time over its attempts, ``created`` (ISO time)."""

    bundle: str
    spec: str
    variants: frozenset
    mode: str
    defaults: bool
    device: str
    gpu: str
    gpus: int
    cpus: int
    quick: bool
    jobs: int
    seconds: float
    created: str

    @property
    def per_job(self):
        """Seconds of wall time per job it ran."""
        return self.seconds / self.jobs

    def host(self):
        """'1 x NVIDIA H200' or '2 CPU cores'."""
        return "%d x %s" % (self.gpus, self.gpu) if self.device == "cuda" else "%d CPU cores" % self.cpus


def _seconds(start, end):
    def parse(text):
        return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S")

    return (parse(end) - parse(start)).total_seconds()


def of_bundle(body):
    """The Pass of a bundle.json body, None for one that ran no job or never finished."""
    counts = body.get("counts") or {}
    ran = counts.get("ok", 0) + counts.get("failed", 0)
    attempts = [a for a in body.get("attempts") or [] if a.get("started") and a.get("finished")]
    if not ran or not (attempts or body.get("finished")):
        return None
    seconds = (
        sum(_seconds(a["started"], a["finished"]) for a in attempts)
        if attempts
        else _seconds(body["created"], body["finished"])
    )
    host, options = body.get("host") or {}, body.get("options") or {}
    gpus, cpu = host.get("gpus") or [], host.get("cpu") or {}
    device = (body.get("executor") or {}).get("device") or ("cuda" if gpus else "cpu")
    variants = frozenset(j["variant"] for j in body.get("jobs") or [] if j.get("status") in ("ok", "failed"))
    return Pass(
        body["id"],
        body["spec"]["name"],
        variants,
        options.get("mode"),
        all(options.get(k) is None for k in LENGTHS),
        device,
        gpus[0]["name"] if gpus and device == "cuda" else None,
        len(gpus),
        cpu.get("usable_cpus") or cpu.get("logical_cpus") or 1,
        bool(options.get("quick")),
        ran,
        seconds,
        body["created"],
    )


def passes(results_dir=REPO_ROOT / "results", specs=None):
    """The Pass of every bundle under ``results_dir`` (its <id>/bundle.json; default: the repository's committed
    results) that ran a job; with ``specs`` (names), only those of these specs (a folder named as a bundle id,
    <spec>-<UTC>-<digest>, of another spec is not read)."""
    found = []
    for path in sorted(Path(results_dir).glob("*/bundle.json")):
        named = BUNDLE_ID.match(path.parent.name)
        if specs is not None and named and named.group(1) not in specs:
            continue
        recorded = of_bundle(json.loads(path.read_text()))
        if recorded and (specs is None or recorded.spec in specs):
            found.append(recorded)
    return found


def _model(name):
    """A GPU's name without vendor and line words: "k80" of "Tesla K80", "h100 80gb hbm3" of "NVIDIA H100 80GB HBM3"."""
    return " ".join(w for w in normal(name).split() if w not in ("tesla", "geforce"))


def same_model(name, given):
    """Whether the GPU ``name`` (as CUDA names it) is of the model ``given`` (as a user names it, maybe without memory
    and form factor): "Tesla K80" is a "K80", "NVIDIA H100 80GB HBM3" an "H100", "Tesla P100-PCIE-16GB" a "P100"."""
    full, short = _model(name), _model(given)
    return full == short or full.startswith(short + " ") or full.startswith(short + "-")


def price(hardware, table=None):
    """The prices.Price of ``hardware`` (a coverage.Hardware) for an hour: its GPUs on a GPU host, its cores on a
    CPU host; None when no row of ``table`` (default: dlrepro/inputs/prices.yaml) prices them, or when a model named
    without memory and form factor matches several rows."""
    table = table or pricesmod.load()
    if not (hardware.gpu and hardware.gpus):
        return pricesmod.of("cpu", None, hardware.cpus, table)
    rows = [r for r in table.rows if any(_model(n) == _model(hardware.gpu) for n in r.names)] or [
        r for r in table.rows if any(same_model(n, hardware.gpu) for n in r.names)
    ]
    return (
        pricesmod.Price(rows[0].usd_per_device_hour * hardware.gpus, hardware.gpus, rows[0]) if len(rows) == 1 else None
    )


def source(recorded, run, quick, gpu=None):
    """The Pass the seconds per job of study run ``run`` (a studies.Run) come from: one of its spec, on its device,
    in its mode, at the spec's lengths, a --quick pass or not as ``quick``; of those, one that ran a variant of the
    run before one that did not, then one on the GPU model ``gpu`` (its name as given, "H100", matches "NVIDIA H100
    80GB HBM3"), then the newest; None without one."""
    same = [
        p
        for p in recorded
        if p.spec == run.spec and p.device == run.device and p.mode == run.mode and p.defaults and p.quick == quick
    ]
    return max(
        same,
        key=lambda p: (bool(p.variants & set(run.variants)), bool(gpu and p.gpu and same_model(p.gpu, gpu)), p.created),
        default=None,
    )


@dataclass
class RunEstimate:
    """One run of the study on the host: ``jobs`` it has there, the Pass its seconds per job come from (None: no
    recorded pass), the ``datasets`` it reads and the ``images`` it runs."""

    run: str
    device: str
    jobs: int
    source: Pass = None
    datasets: list = field(default_factory=list)
    images: list = field(default_factory=list)

    @property
    def seconds(self):
        """Estimated wall seconds: jobs x the source's seconds per job; None without a source."""
        return self.jobs * self.source.per_job if self.source else None


def _tokens(given, spec, device):
    """The framework tokens a study run of ``spec`` takes on ``device`` at the plan's version set: each study
    tool's (dlrepro.inputs.eras, through the plan's Inputs ``given``), the spec's other frameworks as they are."""
    out = []
    for framework in spec.frameworks:
        tools = [t for t, f in given.study.tools.items() if f == framework]
        chosen = [given.chosen(t, device) for t in tools]
        out += [c.token for c in chosen if c.token] if tools else [framework]
    return list(dict.fromkeys(out))


def _image(given, token, device, hardware):
    """The image ``token`` runs on ``device`` when it runs on ``hardware`` (its kernels, or PTX JIT where
    allowed), else None."""
    from dlrepro.errors import ImageError
    from dlrepro.plan import coverage

    name, _, version = token.partition("@")
    try:
        image = given.matrix.find(name, device, version or None)
    except ImageError:
        return None
    if device == "cuda" and not coverage.runnable(
        gpu_support.decide(image.name, hardware.capability, hardware.gpu, list(image.cuda_archs)), hardware
    ):
        return None
    return image


def runs(given, hardware, recorded, quick=False):
    """A RunEstimate for each run of the study (``given``: the plan's coverage.Inputs) that has a job on
    ``hardware`` (a coverage.Hardware), with its source among ``recorded`` (Passes)."""
    from dlrepro.plan import coverage
    from dlrepro.run import jobs as jobsmod
    from dlrepro.run.options import RunOptions

    gpus = hardware.gpus if hardware.gpu else 0
    out = []
    for run_id, run in given.study.runs.items():
        counts = [g for g in run.gpus if g <= max(gpus, 1)]
        if (run.device == "cuda" and not gpus) or not counts:
            continue
        spec = given.specs[run.spec]
        images = {t: _image(given, t, run.device, hardware) for t in _tokens(given, spec, run.device)}
        tokens = [t for t, image in images.items() if image]
        if not tokens:
            continue
        options = RunOptions(
            frameworks=tokens,
            device=run.device,
            variants=run.variants,
            mode=run.mode,
            batch_sizes=run.batch_sizes,
            threads=run.thread_counts(spec, quick, hardware.cpus, []),
            quick=quick,
            ranks=counts if run.gpus != [1] else None,
        )
        jobs = jobsmod.count(spec, options, lambda _, variant, token: given.unsupported(run.spec, variant, token))
        if jobs:
            data = [name for v in run.variants for name, _ in coverage.data_needed(spec, v)]
            out.append(
                RunEstimate(
                    run_id,
                    run.device,
                    jobs,
                    source(recorded, run, quick, hardware.gpu),
                    list(dict.fromkeys(data)),
                    sorted({images[t].name for t in tokens}),
                )
            )
    return out


def image_sizes(path=IMAGE_RECORD):
    """{image name: bytes} of the images the CUDA image record (benchmarks/cuda_images.py) built and measured."""
    return {r["name"]: r["size_bytes"] for r in json.loads(Path(path).read_text()) if r.get("size_bytes")}


def dataset_bytes(name):
    """The bytes of dataset ``name``'s files as dlrepro/inputs/datasets.yaml pins them (None where a file's are not)."""
    from dlrepro.inputs import datasets

    sizes = [f.bytes for f in datasets.catalogue().datasets[name].files.values()]
    return None if None in sizes else sum(sizes)
