"""What a host can test of a study, said before anything runs.

``plan(study, hardware, matrix, versions)`` is one pure function: for every claim and every published cell of the
study, on the hardware described (this host as detected, or one the user names: GPU model and count, CPU cores, the
datasets in the cache), whether it would get a verdict, and when not the exact reason, one of CAUSES. It is fed
values (Inputs: the study, its specs, the image matrix, the version set, the dataset catalogue; ``inputs`` loads
them once, before any loop): which models each adapter can express (plan.expressible.unsupported), and which
image each tool runs, the one its version set picks (dlrepro.inputs.eras: today's, or the published version's or the
nearest the matrix serves), whose ``cuda_archs`` are what each CUDA image was found to hold when it was built and looked
inside (results/cuda-images-20261202/; tests/images/test_cuda_images.py keeps the two equal): the pre-flight's own
decision per GPU (dlrepro.images.gpu_support.decide) says whether an image runs natively, only by PTX JIT (opt-in:
``allow_ptx_jit``) or not at all. Nothing is run and no GPU is needed.

The order of the checks, the first that fails being the reason (a tool's reasons apply to that tool only):

  untestable   the study says no host can test it (its own why)
  no gpu suffices  a GPU claim that no GPU model would make testable with the suite's images (on a host short of
               GPUs; a "gpu" or "gpus" reason names the models that would)
  gpu          a GPU run on a host without one
  gpus         more GPUs than the host has
  threads      a thread-scaling claim on fewer cores than it goes to
  tool         a tool the suite does not run (Lua Torch, Theano, ...)
  model        the framework's adapter cannot express the model (CNTK's LSTM): no hardware changes it, so it comes
               before what a GPU would change
  data-parallel  a multi-GPU run in a framework without a data-parallel path
  image        no image of the framework for the device
  arch         an image without kernels for the GPU's architecture, or with only PTX to JIT (``allow_ptx_jit``
               makes that one run)
  dataset      a dataset the run reads is not in the cache (with the command that fetches it)

A claim is testable when enough of its tools pass every check on one of its runs: two tools of different tiers
for an ordering, the subject and one other for a ratio, one tool for a band or a scaling claim. A claim some of
whose tools are blocked is counted under the cause that decides: one whose tools alone, were they runnable, would
make it testable (a tool the suite does not run last among those, as nothing the user does changes it), else the
commonest. A cell is judged when its run could run here on the published hardware, by the rule ``check`` applies
(inputs.hardware.same_hardware against the reference's hardware text); a card named without the memory size or
form factor its model comes in ("P100") is taken to be the published one ("Tesla P100-PCIE-16GB").
"""

import re
from dataclasses import dataclass, field, replace

from dlrepro.errors import DlreproError
from dlrepro.images import gpu_support
from dlrepro.inputs import claimkinds, eras, references
from dlrepro.inputs import spec as specmod
from dlrepro.plan import expressible
from runner.frameworks import Token

CAUSES = (
    "untestable",
    "no gpu suffices",
    "gpu",
    "gpus",
    "threads",
    "tool",
    "model",
    "data-parallel",
    "image",
    "arch",
    "dataset",
)
HOST_CAUSES = ("gpu", "gpus", "threads")  # what another host would change, whatever the tools
# each cause in a few words, for tables
SHORT = {
    "untestable": "untestable anywhere",
    "no gpu suffices": "no GPU would do",
    "gpu": "needs a GPU",
    "gpus": "needs more GPUs",
    "threads": "needs more cores",
    "tool": "a tool the suite does not run",
    "data-parallel": "no data-parallel path",
    "image": "no image for the device",
    "arch": "no kernels for this GPU",
    "model": "an adapter lacks the model",
    "dataset": "a dataset to fetch",
}
# a claim some of whose tools cannot run is counted under the commonest of their causes, in these words
TOOL_WORDS = {
    "tool": "a tool the suite does not run",
    "data-parallel": "no data-parallel path in its tools' adapters",
    "image": "no image of a tool for the device",
    "arch": "no kernels for this GPU in its tools' images",
    "model": "a tool's adapter lacks the model",
    "dataset": "a dataset missing",
}


def _models():
    """{lower-case card name: compute capability} of gpu_support.GPUS, with the Maxwell Titan X's GeForce name ("GTX
    Titan X"); a bare "Titan X" is no one card (Maxwell or Pascal: dlrepro.inputs.hardware)."""
    out = {name.lower(): capability for capability, names in gpu_support.GPUS for name in names.split(", ")}
    out["gtx titan x"] = out["titan x (maxwell)"]
    return out


GPU_MODELS = _models()


@dataclass(frozen=True)
class Hardware:
    """A host: ``gpu`` a card name of GPU_MODELS (e.g. "H100") or None, ``gpus`` how many, ``cpus`` CPU cores,
    ``datasets`` the names in the dataset cache, ``allow_ptx_jit`` whether a PTX-only image counts as runnable."""

    gpu: str = None
    gpus: int = 0
    cpus: int = 1
    datasets: frozenset = frozenset()
    allow_ptx_jit: bool = False
    gpu_capability: str = None  # as NVML reports it, for a detected card GPU_MODELS need not know
    cpu_model: str = None  # as the host reports it (None: unknown, never the published CPU)

    @property
    def capability(self):
        """The GPU's compute capability ("9.0"); None without a GPU. Raises ValueError for a card GPU_MODELS lacks."""
        if not self.gpu:
            return None
        if self.gpu_capability:
            return self.gpu_capability
        name = " ".join(w for w in self.gpu.lower().split() if w not in ("nvidia", "tesla", "geforce"))
        known = [m for m in GPU_MODELS if name == m or name.startswith(m + " ") or name.startswith(m + "-")]
        if not known:  # nvidia-smi adds the memory and form factor: "H100 80GB HBM3", "Tesla P100-PCIE-16GB"
            raise ValueError(
                "unknown GPU %r; known: %s, GTX Titan X" % (self.gpu, ", ".join(n for _, n in gpu_support.GPUS))
            )
        return GPU_MODELS[max(known, key=len)]

    def describe(self):
        """'4 x H100, 16 CPU cores' or '1 CPU core, no GPU'."""
        cores = "%d CPU core%s" % (self.cpus, "" if self.cpus == 1 else "s")
        return "%d x %s, %s" % (self.gpus, self.gpu, cores) if self.gpu and self.gpus else "%s, no GPU" % cores


def this_host(allow_ptx_jit=False):
    """The Hardware of this host: NVML's GPUs (the first one's model and capability, their count), the CPUs this
    process may use, and the datasets whose files are all in the cache."""
    from dlrepro.inputs import datasets
    from dlrepro.plan import hostinfo
    from runner.environment import cpu_model, usable_cpus

    found = hostinfo.gpus()
    cached = frozenset(name for name in datasets.names() if not datasets.missing(name))
    return Hardware(
        found[0]["name"] if found else None,
        len(found),
        usable_cpus() or 1,
        cached,
        allow_ptx_jit,
        found[0]["capability"] if found else None,
        cpu_model(),
    )


def of_host(host):
    """The Hardware of a bundle's host record (dlrepro.plan.hostinfo.describe), with every dataset (what a run of it
    skipped for want of one, its bundle says)."""
    gpus, cpu = host.get("gpus") or [], host.get("cpu") or {}
    return Hardware(
        gpus[0]["name"] if gpus else None,
        len(gpus),
        cpu.get("usable_cpus") or cpu.get("logical_cpus") or 1,
        every_dataset(),
        False,
        gpus[0].get("capability") if gpus else None,
        cpu.get("model"),
    )


def every_dataset():
    """The names of every dataset of the catalogue that runs read (a host that has fetched them all)."""
    from dlrepro.inputs import datasets

    return datasets.names()


@dataclass
class Outcome:
    """One claim or published cell on a Hardware: ``testable``, else ``cause`` (one of CAUSES) and ``reason``
    (the one line a report folds it under); ``tools`` {tool: reason} for the tools that cannot take part."""

    what: str
    testable: bool
    cause: str = None
    reason: str = None
    tools: dict = field(default_factory=dict)
    other_hardware: bool = False  # a cell measured here on other hardware than the published: shown, never judged
    caveat: str = None  # testable, but resting on a job whose image's numbers are not the study's setup's

    @property
    def headline(self):
        """The line a report counts it under: the reason for a host's cause (without the GPU models that would do),
        the study's, or a dataset; "no GPU makes it testable with the suite's images"; "too few of its tools can run
        here: <TOOL_WORDS>" for a claim held back by some of its tools."""
        if self.cause == "no gpu suffices":
            return "no GPU makes it testable with the suite's images"
        if self.cause in ("gpu", "gpus"):
            return self.reason.split(" (one of: ")[0]
        if self.cause in TOOL_WORDS and self.reason.startswith("too few"):
            return "too few of its tools can run here: %s" % TOOL_WORDS[self.cause]
        return self.reason


@dataclass
class Inputs:
    """What the planner reads, as values (it loads nothing in its loops): ``study`` (studies.Study), ``specs``
    {spec name: Spec} of its runs, ``matrix`` (images.matrix.Matrix), ``versions`` the version set whose images run
    ("today" or "published": inputs.eras.per_tool), ``catalogue`` every dataset name (what a GPU would do is judged
    with every dataset fetched). What it derives (each tool's image, what an adapter cannot express) is kept."""

    study: object
    specs: dict
    matrix: object
    versions: str = "today"
    catalogue: frozenset = frozenset()
    memo: dict = field(default_factory=dict, repr=False, compare=False)

    def chosen(self, tool, device):
        """The eras.Chosen of ``tool`` on ``device`` in this version set (its token None: no image), None for a
        tool the suite does not run."""
        if device not in self.memo:
            self.memo[device] = eras.per_tool(self.study, self.matrix, device, self.versions)
        return self.memo[device].get(tool)

    def unsupported(self, spec, variant, token):
        """Why ``token``'s adapter cannot express ``variant`` of spec ``spec`` (expressible.unsupported), or None."""
        key = (spec, variant, token)
        if key not in self.memo:
            self.memo[key] = expressible.unsupported(self.specs[spec], variant, token)
        return self.memo[key]


def inputs(study, matrix, versions="today", specs=None, catalogue=None):
    """The Inputs of ``study`` for version set ``versions`` ("today" or "published"), loading its specs (unless
    ``specs`` {name: Spec} is given) and the dataset catalogue (``catalogue``) once. Raises DlreproError for another
    version set."""
    if eras.checked(versions) == "both":
        raise DlreproError(
            "a plan is of one version set: published or today (got both)",
            "plan each set: dlrepro plan STUDY --versions both does",
        )
    specs = dict(specs) if specs is not None else {}
    for run in study.runs.values():
        if run.spec not in specs:
            specs[run.spec] = specmod.load(run.spec)
    return Inputs(study, specs, matrix, versions, every_dataset() if catalogue is None else frozenset(catalogue))


def _given(study, matrix, versions):
    """``study`` itself when it is an Inputs already, else the Inputs of the study (the public functions take
    either)."""
    return study if isinstance(study, Inputs) else inputs(study, matrix, versions)


def _gpus_here(hardware):
    return hardware.gpus if hardware.gpu else 0


def _needs_gpus(wanted, hardware):
    """(cause, reason) when ``hardware`` has fewer than ``wanted`` GPUs, else None."""
    if wanted <= _gpus_here(hardware):
        return None
    if wanted == 1:
        return "gpu", "needs an NVIDIA GPU"
    return "gpus", "needs %d GPUs (this host has %d)" % (wanted, _gpus_here(hardware))


def gpus_needed(study, claim):
    """The GPU count a claim needs: the count a GPU scaling claim goes ``to`` (its runs' largest for "max"), else
    the largest GPU count of its runs (1 for one-device runs)."""
    largest = max(max(study.runs[r].gpus) for r in claim.runs) if claim.runs else 1
    return claim.to if claim.over == "gpus" and isinstance(claim.to, int) else largest


def _run_blocker(study, run_id, hardware):
    """(cause, reason) of what keeps run ``run_id`` off ``hardware`` whatever the tool (a GPU run on a host without
    one), or None; GPU counts are the claim's or the cell's to check."""
    return _needs_gpus(1, hardware) if study.runs[run_id].device == "cuda" else None


def data_needed(spec, variant):
    """The datasets a variant reads: [(name, fallbacks)] for its data and its pretrained weights."""
    v = spec.variants[variant]
    out = []
    if getattr(v.data, "kind", None) == "dataset":
        out.append((v.data.name, list(v.data.fallback)))
    if v.weights:
        out.append((v.weights.dataset, []))
    return out


def tool_blocker(study, run_id, variant, tool, hardware, matrix=None, versions="today"):
    """(cause, reason) of what keeps ``tool`` from run ``run_id``'s ``variant`` on ``hardware``, or None; ``study``
    a studies.Study (with ``matrix`` and ``versions``) or an Inputs."""
    given = _given(study, matrix, versions)
    run = given.study.runs[run_id]
    framework = given.study.framework(tool)
    if framework is None:
        return "tool", "the suite does not run %s" % given.study.not_run_text([tool])
    chosen = given.chosen(tool, run.device)
    token = chosen.token or framework
    why = given.unsupported(run.spec, variant, token)
    if why:
        return "model", "%s: %s" % (tool, why)
    if max(run.gpus) > 1:
        from runner.adapters import capabilities

        why = capabilities.unsupported_parallel(token, "throughput")
        if why:
            return "data-parallel", "%s: %s" % (tool, why)
    if chosen.token is None:
        why = given.matrix.no_cuda(framework) if run.device == "cuda" else None
        return "image", "%s has no %s image%s" % (
            tool,
            "CUDA" if run.device == "cuda" else "CPU",
            " (%s)" % why if why else "",
        )
    if run.device == "cuda":
        image = given.matrix.find(framework, "cuda", chosen.runs)
        decided = gpu_support.decide(image.name, hardware.capability, hardware.gpu, list(image.cuda_archs))
        if not runnable(decided, hardware):
            other = _other_version(given, framework, image, hardware, run, variant)
            return "arch", "%s: %s%s" % (
                tool,
                _arch_words(image, hardware, decided),
                other or ("; " + image.newer_builds if image.newer_builds else ""),
            )
    for name, fallback in data_needed(given.specs[run.spec], variant):
        if not ({name, *fallback} & hardware.datasets):
            return "dataset", "needs dataset %s (`dlrepro datasets.fetch %s`)" % (name, name)
    return None


def runnable(decided, hardware):
    """Whether an image gpu_support.decide judged runs on ``hardware``: natively, or by PTX JIT where allowed."""
    return decided["verdict"] == "native" or (decided["verdict"] == "ptx" and hardware.allow_ptx_jit)


def _other_version(given, framework, chosen, hardware, run, variant):
    """'; torch-1.0.0-cuda runs there natively (--framework torch@1.0.0)' where another CUDA image of the framework
    than ``chosen`` runs on the GPU and its adapter expresses the run's variant (data-parallel too, for a run of
    several GPUs), else ''."""
    from runner.adapters import capabilities

    for image in given.matrix.images:
        if image.version_of(framework) is not None and image.device == "cuda" and image.name != chosen.name:
            today = given.matrix.versions(framework, "cuda")[-1] == image.version_of(framework)
            token = Token(framework, None if today else image.version_of(framework)).text
            decided = gpu_support.decide(image.name, hardware.capability, hardware.gpu, list(image.cuda_archs))
            if given.unsupported(run.spec, variant, token) or (
                max(run.gpus) > 1 and capabilities.unsupported_parallel(token, "throughput")
            ):
                continue
            if runnable(decided, hardware):
                return "; %s runs there %s (--framework %s%s)" % (
                    image.name,
                    "natively" if decided["verdict"] == "native" else "by PTX JIT",
                    token,
                    "; with the vendor image %s loaded" % image.vendor.image if image.vendor else "",
                )
    return ""


def _arch_words(image, hardware, decided):
    sm = "sm_%s" % hardware.capability.replace(".", "")
    shipped = " ".join(image.cuda_archs) or "an unknown list"
    if decided["verdict"] == "ptx":
        return "%s runs on %s (%s) only by JIT of its %s PTX (--allow-ptx-jit)" % (
            image.name,
            hardware.gpu,
            sm,
            decided["arch"],
        )
    return "%s has no kernels for %s (%s): it ships %s" % (image.name, hardware.gpu, sm, shipped)


def _caveats(given, run_id, variant, tools):
    """'Caffe: its GPU convolutions are ...' for each of ``tools`` whose image for the run's device (its version
    set's) has a caveat about a layer the variant's model has (matrix ``caveat``, ``caveat_layers``); None for
    none."""
    from runner import shapes

    run = given.study.runs[run_id]
    spec = given.specs[run.spec]
    model = spec.models[spec.variants[variant].model]
    kinds = {layer["type"] for layer in shapes.expand(model.layer_dicts(), model.input_shape)}
    said = []
    for tool in tools:
        image = given.matrix.find(given.study.framework(tool), run.device, given.chosen(tool, run.device).runs)
        if image.caveat and (not image.caveat_layers or kinds & set(image.caveat_layers)):
            said.append("%s: %s" % (tool, image.caveat))
    return "; ".join(said) or None


def claim_outcome(study, name, hardware, matrix=None, versions="today"):
    """The Outcome of claim ``name`` on ``hardware`` (module docstring); ``study`` a studies.Study (with ``matrix``
    and ``versions``) or an Inputs."""
    given = _given(study, matrix, versions)
    claim = given.study.claims[name]
    kind = claimkinds.of(claim)
    if not kind.testable:
        return Outcome(name, False, "untestable", claim.why)
    if claim.over == "threads" and isinstance(claim.to, int) and hardware.cpus < claim.to:
        return Outcome(
            name, False, "threads", "needs %d CPU threads (this host has %d cores)" % (claim.to, hardware.cpus)
        )
    if given.study.device_of(name) == "cuda":
        wanted = gpus_needed(given.study, claim)
        short = _needs_gpus(wanted, hardware)
        if short:
            return _on_cards(given, name, wanted, hardware, short)
    best = None
    for run_id in claim.runs:
        blocked = _run_blocker(given.study, run_id, hardware)
        if blocked:
            best = best or Outcome(name, False, *blocked)
            continue
        tools = {t: tool_blocker(given, run_id, claim.variant, t, hardware) for t in kind.tools(claim)}
        available = {t for t, why in tools.items() if why is None}
        if kind.enough(claim, available):
            return Outcome(name, True, caveat=_caveats(given, run_id, claim.variant, sorted(available)))
        blocked_tools = {t: why for t, why in tools.items() if why}
        if best is None or best.cause in HOST_CAUSES:
            best = Outcome(
                name,
                False,
                _cause(claim, available, blocked_tools),
                _reason(claim, available, blocked_tools),
                {t: why[1] for t, why in blocked_tools.items()},
            )
    return best or Outcome(name, False, "untestable", "no run of the study measures it")


def _on_cards(given, name, wanted, hardware, short):
    """The Outcome of a GPU claim on a host short of GPUs, saying which GPU models (one per architecture of
    gpu_support.GPUS, ``wanted`` of them) would make it testable, or that none would and why not on the one that
    comes closest (the most of its tools able to run)."""
    cause, reason = short
    tried = []
    for _, cards in gpu_support.GPUS:  # every dataset fetched: what a GPU would do; the host's own lack said after
        card = cards.split(", ")[0]
        tried.append(
            (
                card,
                claim_outcome(
                    given, name, replace(hardware, gpu=card, gpus=wanted, gpu_capability=None, datasets=given.catalogue)
                ),
            )
        )
    fetch = _datasets_missing(given, given.study.claims[name], hardware)
    good = [card for card, o in tried if o.testable]
    if good:
        return Outcome(name, False, cause, "%s (one of: %s)%s" % (reason, ", ".join(good), fetch))
    card, closest = max(tried, key=lambda t: -len(t[1].tools))
    where = "on every GPU model" if len({o.reason for _, o in tried}) == 1 else "on a %s" % card
    return Outcome(
        name,
        False,
        "no gpu suffices",
        "no GPU makes it testable with %s; %s: %s%s" % (IMAGES_OF[given.versions], where, closest.reason, fetch),
        closest.tools,
    )


IMAGES_OF = {"today": "the suite's images", "published": "the published versions' images"}


def _datasets_missing(given, claim, hardware):
    """'; and needs dataset X (`dlrepro datasets.fetch X`)' for each dataset the claim's first run reads that the host
    lacks, else ''."""
    if not claim.runs:
        return ""
    spec = given.specs[given.study.runs[claim.runs[0]].spec]
    return "".join(
        "; and needs dataset %s (`dlrepro datasets.fetch %s`)" % (n, n)
        for n, fallback in data_needed(spec, claim.variant)
        if not ({n, *fallback} & hardware.datasets)
    )


def _cause(claim, available, blocked):
    """The cause a claim is counted under: the one that decides (its tools alone, were they runnable, would make
    the claim testable; a tool the suite does not run last), else the commonest among its blocked tools; on a tie
    the first in CAUSES."""
    causes = [why[0] for why in blocked.values()]

    def decides(cause):
        return claimkinds.of(claim).enough(claim, available | {t for t, why in blocked.items() if why[0] == cause})

    return (
        min(set(causes), key=lambda c: (not decides(c), c == "tool", -causes.count(c), CAUSES.index(c)))
        if causes
        else "untestable"
    )


def _reason(claim, available, blocked):
    """One blocking reason shared by every blocked tool (a dataset) as it is, else what can run and why the others
    cannot."""
    reasons = sorted({why[1] for why in blocked.values()})
    if len(reasons) == 1 and not available:
        return reasons[0]
    return "too few of its tools can run here (can: %s): %s" % (
        ", ".join(sorted(available)) or "none",
        "; ".join(reasons),
    )


OPEN_VARIANTS = re.compile(r" (?:\d+gb|pcie|sxm\d?|nvl)\b")  # what a bare model name leaves open


def _judged(ref, device, name, gpus):
    """Whether a job on the device ``name`` would be judged against reference ``ref`` by check's rule
    (inputs.hardware.same_hardware), a card named without the memory size or form factor its model comes in
    ("P100") taken as the published one; False without a reference."""
    from dlrepro.inputs.hardware import model_key, model_keys, same_hardware

    if ref is None or not name:
        return False
    key = model_key(name) if device == "cuda" else None
    if key and not OPEN_VARIANTS.search(key):
        name = next((k.split(":", 1)[1] for k in model_keys(ref.hardware) if OPEN_VARIANTS.sub("", k) == key), name)
    return same_hardware(ref.hardware, device, name, ref.gpus, gpus if device == "cuda" and gpus > 1 else None)


def cell_outcome(study, table, column, tool, hardware, matrix=None, versions="today"):
    """The Outcome of one published cell (a table's row ``tool`` in ``column``, a studies.Column); ``study`` a
    studies.Study (with ``matrix`` and ``versions``) or an Inputs."""
    given = _given(study, matrix, versions)
    what = "%s / %s / %s" % (table, column.label, tool)
    if column.threads and hardware.cpus < column.threads:
        return Outcome(
            what, False, "threads", "needs %d CPU threads (this host has %d cores)" % (column.threads, hardware.cpus)
        )
    best = None
    for run_id in column.runs:
        run = given.study.runs[run_id]
        blocked = (
            _run_blocker(given.study, run_id, hardware)
            or (_needs_gpus(column.gpus, hardware) if run.device == "cuda" else None)
            or tool_blocker(given, run_id, column.variant, tool, hardware)
        )
        if blocked is None:
            ref = references.of_column(given.specs[run.spec].references, column, tool)
            name = hardware.gpu if run.device == "cuda" else hardware.cpu_model
            return Outcome(what, True, other_hardware=not _judged(ref, run.device, name, column.gpus))
        best = best or Outcome(what, False, *blocked)
    return best


def plan(study, hardware, matrix=None, versions="today"):
    """{"claims": [Outcome per claim, the study's order], "cells": [Outcome per cell of each table whose values
    were retrieved]} on ``hardware`` for version set ``versions`` ("today" or "published"); ``study`` a
    studies.Study (with ``matrix``) or an Inputs."""
    given = _given(study, matrix, versions)
    claims = [claim_outcome(given, name, hardware) for name in given.study.claims]
    cells = []
    for table_id, table in given.study.tables.items():
        if table.status != "published":
            continue
        for column in table.columns:
            for tool in table.rows:
                cells.append(cell_outcome(given, table_id, column, tool, hardware))
    return {"claims": claims, "cells": cells}


def counts(outcomes):
    """(testable, {cause: how many}) of a list of Outcomes, causes in CAUSES order; a cell on other hardware is
    counted under "other hardware", not as testable."""
    causes = {}
    for o in outcomes:
        if not o.testable or o.other_hardware:
            cause = o.cause if not o.testable else "other hardware"
            causes[cause] = causes.get(cause, 0) + 1
    order = CAUSES + ("other hardware",)
    return sum(o.testable and not o.other_hardware for o in outcomes), {c: causes[c] for c in order if c in causes}
