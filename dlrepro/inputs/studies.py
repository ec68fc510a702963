"""Study manifests: one YAML file per published study under studies/, validated on load like specs.

A study names what produces each of its published tables and figures (``runs``: spec variants on a
device, with batch sizes, thread counts and GPU counts), each table in the paper's own layout (rows
are the study's tools, columns are its published cells: a variant, batch size, metric and the
published hardware, matched to the references the spec carries), and each stated conclusion as a
claim the suite can test: an ordering of tools, a ratio band between tools, a value band, a scaling
statement over threads or GPUs, or one that no run here can test (with the reason); and the version of each
tool it published with (``versions``; dlrepro.inputs.eras picks the image that stands for it), and how a tool's scripts
timed a step where the suite's default differs (``steps``: gradients, thread semantics; dlrepro.run.study).
Every table, claim and version gives its source (paper + version + table, or repository + commit + file).
"""

from pathlib import Path
from typing import Literal, Optional, Union

from pydantic import Field, PositiveInt, field_validator, model_validator

from dlrepro import folders, names
from dlrepro.errors import SpecError
from dlrepro.inputs import claimkinds, yamlfile
from dlrepro.inputs import spec as specmod
from dlrepro.inputs.yamlfile import Strict
from runner import adapters
from runner.contract import GRADIENTS, OPTION_DEFAULTS, THREAD_POOLS

STUDIES_DIR = folders.STUDIES_DIR


class Run(Strict):
    """One set of jobs of the study: spec variants on a device, expanded as ``dlrepro run`` would."""

    spec: str
    variants: list[str] = Field(min_length=1)
    device: Literal["cpu", "cuda"]
    mode: Optional[Literal["throughput", "convergence", "inference"]] = None
    batch_sizes: Optional[list[PositiveInt]] = Field(
        None, min_length=1, description="default: the spec's for the device"
    )
    threads: Union[Literal["sweep"], list[PositiveInt], None] = Field(
        None, description="CPU thread counts, 'sweep' for the spec's sweep; None: the framework's choice"
    )
    gpus: list[PositiveInt] = Field([1], min_length=1, description="GPU counts per job (data-parallel beyond 1)")
    scaling: Optional[Literal["strong", "weak"]] = Field(None, description="how a multi-GPU job splits its batch")
    why: str = Field(description="what of the study this run reproduces")

    def thread_counts(self, spec, quick, cpus, notes):
        """The CPU thread counts this run's jobs take on a host of ``cpus`` usable CPUs (None: a GPU run, or the
        framework's choice): its own or, for "sweep", those of its variants in ``spec`` (a Spec), less the counts
        above ``cpus`` (an oversubscribed count measures contention, not scaling), and with ``quick`` only the
        smallest and the largest; what was cut is said in ``notes`` (a list, appended to)."""
        if self.device != "cpu" or self.threads is None:
            return None
        asked = (
            sorted({t for v in self.variants for t in spec.variants[v].threads})
            if self.threads == "sweep"
            else list(self.threads)
        )
        kept = [t for t in asked if t <= cpus]
        if len(kept) < len(asked):
            notes.append(
                "thread counts %s left out: more than this host's %d CPUs"
                % (", ".join(str(t) for t in asked if t > cpus), cpus)
            )
        if quick and len(kept) > 2:
            notes.append("--quick: thread counts %s and %s of %s" % (kept[0], kept[-1], kept))
            kept = [kept[0], kept[-1]]
        return kept or None


class Column(Strict):
    """One published column (or cell family) of a table: the measured variant and the references it meets."""

    label: str = Field(description="the column's heading as published")
    runs: list[str] = Field(min_length=1, description="the runs that measure it, in order of preference")
    variant: str
    reference_variant: Optional[str] = Field(
        None, description="the references' variant, when it is not the measured one"
    )
    batch_size: Optional[PositiveInt] = Field(None, description="default: the reference's batch size")
    metric: str
    hardware: Optional[str] = Field(None, description="text of the published column's hardware (reference.hardware)")
    kind: str = Field("published", description="reference kind: published, third_party_rerun, notebook_measured, ...")
    source: Optional[str] = Field(
        None, description="text of the references' source (e.g. a commit), when several match"
    )
    threads: Optional[PositiveInt] = Field(None, description="CPU jobs: the thread count measured for this column")
    gpus: PositiveInt = Field(1, description="the GPU count (data-parallel ranks) of its jobs; 1: one-device jobs")


class Table(Strict):
    """A table of the study in its own layout: one row per tool (``rows``, as published), the columns."""

    title: str
    source: str
    status: Literal["published", "not retrieved"] = "published"
    rows: list[str] = Field(min_length=1, description="the tools' names as the table prints them, in its order")
    columns: list[Column] = Field(min_length=1)
    note: Optional[str] = None


class Claim(Strict):
    """A stated conclusion of the study, encoded so that the suite can test it on the hardware at hand.

    ``kind``: a kind of dlrepro.inputs.claimkinds (the fields each needs, how it is judged): ordering (``order``: tiers
    of tools, best first), ratio (the others' metric / ``subject``'s lies in ``band``), band (each named tool's
    metric lies in ``band``), scaling (each tool's speedup from ``at`` to ``to`` lies in ``band``), untestable
    (``why`` no run here can test it).

    ``device``: the device class the study states it for ("cpu" or "cuda"; "any" only for a test accuracy,
    which carries across devices); default: the device of its runs, which must then all be of one class. It is
    judged only from rows of that class (dlrepro.answers.claims). ``hardware``: the hardware it was
    stated on, where the study says.
    """

    text: str = Field(description="the conclusion as the study states it (paraphrase), with the tools it names")
    source: str
    kind: str = Field(
        description="its kind, one of dlrepro.inputs.claimkinds.KINDS: ordering, ratio, band, scaling, untestable"
    )
    runs: list[str] = Field([], description="the runs that can test it, in order of preference, all of its device")
    device: Optional[Literal["cpu", "cuda", "any"]] = Field(
        None, description="the device class it is stated for; default: its runs' (they must agree)"
    )
    hardware: Optional[str] = Field(None, description="the hardware it was stated on, where the study says")
    variant: Optional[str] = None
    metric: str = "seconds_per_minibatch"
    order: list[list[str]] = []
    subject: Optional[str] = None
    tools: list[str] = Field([], description="ratio: the others; band and scaling: the tools it is stated for")
    band: Optional[list[float]] = Field(None, min_length=2, max_length=2)
    over: Optional[Literal["threads", "gpus"]] = None
    at: Optional[PositiveInt] = None
    to: Optional[Union[PositiveInt, Literal["max"]]] = None
    batch_size: Optional[PositiveInt] = None
    why: Optional[str] = None

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value):
        if value not in claimkinds.KINDS:
            raise ValueError("unknown claim kind %r; the kinds are: %s" % (value, ", ".join(claimkinds.KINDS)))
        return value

    @model_validator(mode="after")
    def _complete(self):
        missing = [name for name in claimkinds.of(self).needs if not getattr(self, name)]
        if missing:
            raise ValueError("a %s claim needs %s" % (self.kind, ", ".join(missing)))
        if self.device == "any" and self.metric != "test_accuracy":
            raise ValueError("device any: only a test accuracy carries across devices; give cpu or cuda")
        if self.band and not 0 < self.band[0] <= self.band[1]:
            raise ValueError("band: expected [low, high] with 0 < low <= high (got %s)" % self.band)
        return self


class Published(Strict):
    """The version of a tool that the study published with (dlrepro.inputs.eras picks the image that stands for it)."""

    version: str = Field(pattern=r"^[0-9][0-9A-Za-z.+-]*$", description="as the study printed it, e.g. 0.3.1")
    source: str = Field(description="where the study says so (paper + table, or repository + commit + file)")


class StudyStep(Strict):
    """How the study's own scripts for one tool timed a training step, where that differs from the suite's default
    (runner.contract: ``gradients``, ``thread_pools``); its jobs are built the same way where the adapter can
    (dlrepro.run.study). What else the study's step did that the suite's does not is named in ``differs``."""

    gradients: Literal[GRADIENTS] = OPTION_DEFAULTS["gradients"]
    thread_pools: Literal[THREAD_POOLS] = OPTION_DEFAULTS["thread_pools"]
    differs: list[str] = Field(
        [],
        description="work the study's timed step did that the suite's does not "
        "reproduce, each named with what it measured (benchmarks/study_parity.py); the study "
        "report shows it beside every cell of these runs",
    )
    runs: list[str] = Field(min_length=1, description="the study's runs whose scripts did so (each one read)")
    source: str = Field(description="repository + commit + files that show it")


class Study(Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    source: str
    hardware: str = Field(description="the study's hardware and software, as far as it is known")
    tools: dict[str, Optional[str]] = Field(
        description="the study's tool names -> the suite's framework (null: a tool the suite does not run, e.g. "
        "Lua Torch, Theano, Keras)"
    )
    not_run: dict[str, str] = Field(
        {},
        description="each tool mapped to null -> why the suite does not run it, one "
        "line: what it would need (e.g. 'needs Julia's package registry, not reachable')",
    )
    versions: dict[str, Published] = Field({}, description="the study's tools -> the version it published with")
    runs: dict[str, Run] = Field(min_length=1)
    steps: dict[str, StudyStep] = Field(
        {}, description="the study's tools -> how its scripts timed a step, where that differs from the suite's"
    )
    tables: dict[str, Table] = {}
    claims: dict[str, Claim] = {}
    notes: Optional[str] = None

    @model_validator(mode="after")
    def _references_exist(self):
        """Runs name specs and variants that exist, tables and claims name runs of the study and its tools."""
        problems = []
        for name, run in self.runs.items():
            try:
                spec = specmod.load(run.spec)
            except SpecError:
                problems.append(yamlfile.at("runs.%s.spec" % name, "no spec %r under specs/" % run.spec))
                continue
            for variant in run.variants:
                if variant not in spec.variants:
                    problems.append(
                        yamlfile.at(
                            "runs.%s.variants" % name,
                            "spec %s has no variant %r; it has: %s" % (run.spec, variant, ", ".join(spec.variants)),
                        )
                    )
                elif run.scaling and spec.variants[variant].scaling != run.scaling:
                    problems.append(
                        yamlfile.at(
                            "runs.%s.scaling" % name,
                            "%s, but spec %s's variant %s scales %s: "
                            "make them agree"
                            % (run.scaling, run.spec, variant, spec.variants[variant].scaling or "not at all"),
                        )
                    )
        places = [
            ("tables.%s.columns.%d" % (t, i), c.runs, ())
            for t, table in self.tables.items()
            for i, c in enumerate(table.columns)
        ]
        places += [("steps.%s" % tool, step.runs, ()) for tool, step in self.steps.items()]
        places += [
            ("claims.%s" % n, c.runs, [t for tier in c.order for t in tier] + c.tools + [c.subject])
            for n, c in self.claims.items()
            if claimkinds.of(c).testable
        ]
        for where, runs, tools in places:
            for run in runs:
                if run not in self.runs:
                    problems.append(
                        yamlfile.at(where + ".runs", "unknown run %r; the study has: %s" % (run, ", ".join(self.runs)))
                    )
            unknown = [t for t in tools if t and t not in self.tools]
            if unknown:
                problems.append(
                    yamlfile.at(
                        where,
                        "unknown tool %s; the study's tools: %s"
                        % (", ".join(map(repr, unknown)), ", ".join(self.tools)),
                    )
                )
        for name, claim in self.claims.items():
            devices = {self.runs[r].device for r in claim.runs if r in self.runs}
            if not claimkinds.of(claim).testable or claim.device == "any":
                continue
            if claim.device is None and len(devices) > 1:
                problems.append(
                    yamlfile.at(
                        "claims.%s.runs" % name,
                        "runs on cpu and cuda: give the claim's device "
                        "(the one the study states it for) and list only its runs",
                    )
                )
            elif claim.device is not None and devices - {claim.device}:
                problems.append(
                    yamlfile.at(
                        "claims.%s.runs" % name,
                        "a %s claim lists runs on %s: drop them, or "
                        "make a separate claim where the study states it for that device"
                        % (claim.device, ", ".join(sorted(devices - {claim.device}))),
                    )
                )
        for tool, framework in self.tools.items():
            if framework is not None and framework not in adapters.available():
                problems.append(
                    yamlfile.at(
                        "tools.%s" % tool,
                        "unknown framework %s; runner/adapters has: %s "
                        "(null: a tool the suite does not run)"
                        % (names.unknown(framework, adapters.available()), ", ".join(adapters.available())),
                    )
                )
        extra = [t for t in self.not_run if self.tools.get(t, "") is not None]
        if extra:
            problems.append(
                yamlfile.at(
                    "not_run",
                    "%s: not a tool mapped to null; drop it, or map the tool to null" % ", ".join(map(repr, extra)),
                )
            )
        unknown = [t for t in self.steps if self.tools.get(t) is None]
        if unknown:
            problems.append(
                yamlfile.at(
                    "steps",
                    "%s: not a tool the suite runs; the study's are: %s"
                    % (", ".join(map(repr, unknown)), ", ".join(t for t, f in self.tools.items() if f)),
                )
            )
        unknown = [t for t in self.versions if self.tools.get(t) is None]
        if unknown:
            problems.append(
                yamlfile.at(
                    "versions",
                    "%s: not a tool the suite runs; the study's are: %s"
                    % (", ".join(map(repr, unknown)), ", ".join(t for t, f in self.tools.items() if f)),
                )
            )
        for name, table in self.tables.items():
            unknown = [t for t in table.rows if t not in self.tools]
            if unknown:
                problems.append(
                    yamlfile.at(
                        "tables.%s.rows" % name,
                        "unknown tool %s; the study's tools: %s"
                        % (", ".join(map(repr, unknown)), ", ".join(self.tools)),
                    )
                )
        if problems:
            raise ValueError("\n".join(problems))
        return self

    def device_of(self, name):
        """The device class claim ``name`` is stated for: its ``device``, else its runs' ("cpu", "cuda", "any");
        None for an untestable claim."""
        claim = self.claims[name]
        if claim.device or not claimkinds.of(claim).testable:
            return claim.device
        return self.runs[claim.runs[0]].device

    def framework(self, tool):
        """The suite's framework for one of the study's tools, or None when the suite does not run it."""
        return self.tools.get(tool)

    def unretrieved(self):
        """The one line a reader needs before judging a study whose own tables are not in the suite: "DLBench's own
        tables are not in the suite (their published values were not retrieved): Table 7 (GPU, Tesla K80), Table 8; so
        none of their cells can be judged, on their hardware or any other; the published cells here are a third-party
        rerun's (GTX Titan X: guolinke/deep-learning-benchmarks README)." None when every table was retrieved."""
        missing = [t.title.split(" - ")[0] for t in self.tables.values() if t.status == "not retrieved"]
        if not missing:
            return None
        name = self.title.split(" - ")[0].strip()
        reruns = sorted(
            {
                "%s: %s" % (c.hardware, t.source.split(" @ ")[0])
                for t in self.tables.values()
                if t.status != "not retrieved"
                for c in t.columns
                if c.kind == "third_party_rerun"
            }
        )
        return (
            "%s own tables are not in the suite (their published values were not retrieved): %s; so none of their "
            "cells can be judged, on their hardware or any other%s."
            % (
                name + ("'" if name.endswith("s") else "'s"),
                ", ".join(missing),
                "; the published cells here are a third-party rerun's (%s)" % "; ".join(reruns) if reruns else "",
            )
        )

    def not_run_text(self, tools):
        """'Keras(TF), Chainer: no adapter yet; Julia-Knet: needs ...': the tools the suite does not run among
        ``tools``, grouped by their reason (not_run), in their order; a tool without one (a manifest recorded
        before not_run existed) by its name alone; '' for none."""
        groups = {}
        for tool in tools:
            if self.framework(tool) is None:
                groups.setdefault(self.not_run.get(tool), []).append(tool)
        return "; ".join(", ".join(names) + (": %s" % why if why else "") for why, names in groups.items())


def path_of(name):
    """Path of study ``name``: a file path as given, else studies/<name>.yaml."""
    path = Path(name)
    return path if path.suffix in (".yaml", ".yml") else STUDIES_DIR / ("%s.yaml" % name)


def available():
    """Names of the studies under studies/."""
    return folders.names(STUDIES_DIR)


def load(name):
    """Load and validate a study by name or path; raises SpecError naming file, line and field."""
    path = path_of(name)
    if not path.is_file():
        raise SpecError(
            path,
            [
                "%s: no such study%s; available: %s"
                % (path, names.near_miss(str(name), available()), ", ".join(available()))
            ],
        )
    return yamlfile.load(path, Study)
