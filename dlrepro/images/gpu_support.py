"""Which GPUs each CUDA image can run on, from the facts recorded inside it (runner.buildinfo).

A record is one image's facts as ``dlrepro.run.probe.inspect`` writes them: its tag, image ID, size, the
framework's report and the libraries' versions, and the cubin (SASS) and PTX architectures of its main
library. The pre-flight decision per GPU is runner.archs's own (``judge`` for the verdict, ``check`` for the
reason), over the list the pre-flight uses: the framework's own when it reports one (PyTorch, TensorFlow),
else the main library's cuobjdump lists, which ``cuda_archs`` in images/matrix.yaml must equal.
"""

from runner import archs, buildinfo

# the GPUs of the table: (compute capability, the cards of that architecture the studies or users have)
GPUS = (
    ("3.7", "K80"),
    ("5.2", "GTX 980, Titan X (Maxwell)"),
    ("6.0", "P100"),
    ("6.1", "GTX 1080"),
    ("7.0", "V100"),
    ("8.0", "A100"),
    ("8.9", "L4, RTX 4090"),
    ("9.0", "H100, H200"),
)
WHEELS = {"cuda_runtime": "nvidia-cuda-runtime", "cudnn": "nvidia-cudnn", "nccl": "nvidia-nccl"}
CELL = {"native": "native", "ptx": "PTX JIT only", "none": "cannot run", "unknown": "unknown"}


def _text(value):
    """A version as text; None for a missing one or an {"error"} (the error stays in the facts)."""
    return value if isinstance(value, str) and value else None


def _main(facts):
    return next((lib for lib in facts.get("device_code", []) if lib["path"] == facts.get("main")), None)


def device_archs(facts):
    """(SASS list, PTX list, source) of the framework's own kernels in its main library: the architecture set that
    most of the library's fat binaries carry (a statically linked cuDNN or cuBLAS brings other sets, which
    ``all_archs`` includes); ([], [], None) when the library was not read."""
    main = _main(facts)
    if main is None or not isinstance(main.get("groups"), list) or not main["groups"]:
        return [], [], None
    top = main["groups"][0]
    return (
        top["sass"],
        top["ptx"],
        "the architectures of %d of the %d fat binaries of %s"
        % (top["fatbins"], sum(g["fatbins"] for g in main["groups"]), main["path"]),
    )


def all_archs(facts):
    """(SASS list, PTX list, source) of every cubin and PTX in the main library: cuobjdump's lists where it read
    the library, else the union of the fat binary headers' sets (cuobjdump 13 refuses sm_37 code)."""
    main = _main(facts)
    if main is None:
        return [], [], None
    if isinstance(main.get("sass"), list) and isinstance(main.get("ptx"), list):
        return main["sass"], main["ptx"], "cuobjdump --list-elf/--list-ptx"
    groups = main.get("groups") if isinstance(main.get("groups"), list) else []
    union = [sorted({a for g in groups for a in g[key]}, key=buildinfo.arch_key) for key in ("sass", "ptx")]
    return union[0], union[1], "the fat binary headers"


def preflight_archs(facts):
    """(architectures, source) the pre-flight judges this build by: the framework's own list when it reports one
    (runner.job._check_archs does the same), else the main library's SASS + PTX."""
    said = facts.get("reported") or {}
    if isinstance(said.get("archs"), list) and said["archs"]:
        return list(said["archs"]), "framework: %s" % said.get("archs_source")
    sass, ptx, source = device_archs(facts)
    return sass + ptx, source


def _fallback(facts, kind, lib):
    """A library's version when it cannot say (no driver): its wheel's version, else its file name's."""
    wheels = [(n, v) for n, v in sorted(facts.get("wheels", {}).items()) if n.startswith(WHEELS[kind])]
    if wheels:
        return "%s (wheel %s)" % (wheels[0][1], wheels[0][0])
    return "%s (file name)" % lib["soname_version"] if lib.get("soname_version") else None


def library_versions(facts, kind):
    """{"reported": what the framework says of a library kind ("cuda_runtime" | "cudnn" | "nccl"), "library": the
    versions the image's copies of it report, else (without a driver CUDA 10-11's runtime and cuDNN 8 cannot
    say) the version of the nvidia-* wheel that installed it or the one its file name carries, ", "-joined when
    several}; None where either says nothing."""
    said = facts.get("reported") or {}
    found = sorted(
        {_text(lib["version"]) or _fallback(facts, kind, lib) for lib in facts.get("libraries", {}).get(kind, [])}
        - {None}
    )
    return {"reported": _text(said.get({"cuda_runtime": "cuda"}.get(kind, kind))), "library": ", ".join(found) or None}


def version_text(versions):
    """One cell of library_versions: the framework's report, with the library's own version beside it when that
    says more ("9 (library 9.28.0)"); None when neither says."""
    reported, library = versions["reported"], versions["library"]
    if reported and library and library != reported:
        return "%s (library %s)" % (reported, library)
    return reported or library


def decide(name, capability, gpus, shipped):
    """runner.archs's pre-flight for a build ``name`` shipping ``shipped`` on a GPU of ``capability``: {capability,
    gpus, verdict (native | ptx | none | unknown), arch (the cubin or PTX used), reason (why it is refused without
    --allow-ptx-jit; None when it runs)}."""
    verdict, used = archs.judge(capability, shipped)
    try:
        archs.check(name, gpus, capability, shipped, allow_ptx_jit=False)
        reason = None
    except archs.Refused as exc:
        reason = exc.reason
    return {"capability": capability, "gpus": gpus, "verdict": verdict, "arch": used, "reason": reason}


def verdicts(name, shipped):
    """``decide`` for every GPU of GPUS, in that order."""
    return [decide(name, capability, gpus, shipped) for capability, gpus in GPUS]


def _cell(decision):
    text = CELL[decision["verdict"]]
    return "%s (%s)" % (text, decision["arch"]) if decision["arch"] else text


def markdown(records):
    """The Markdown of the records: one table of facts and one of pre-flight verdicts per GPU (an image that was
    not built gets its reason instead, and its verdicts where the matrix lists the archs of its wheel or compile
    flags); the text docs/gpu.md and the README show."""
    lines = [
        "| image | size | framework | CUDA | cuDNN | NCCL | SASS (cubins) | PTX |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        if not r.get("built"):
            lines.append("| %s | not built: %s | | | | | | |" % (r["name"], r["reason"]))
            continue
        lines.append(
            "| %s | %.2f GB | %s | %s | %s | %s | %s | %s |"
            % (
                r["name"],
                r["size_bytes"] / 1e9,
                r["framework_version"],
                r["cuda"] or "?",
                r["cudnn"] or "?",
                r["nccl"] or "?",
                " ".join(r["sass"]) or "none",
                " ".join(r["ptx"]) or "none",
            )
        )
    lines += [
        "",
        "| image | " + " | ".join("sm_%s %s" % (c.replace(".", ""), g) for c, g in GPUS) + " |",
        "| --- |" + " --- |" * len(GPUS),
    ]
    for r in records:
        if r.get("verdicts"):
            name = r["name"]
            if not r.get("built"):  # records from before ``archs_of`` are of wheels
                name += " (not built here: the archs of %s)" % r.get("archs_of", "its wheel")
            lines.append("| %s | %s |" % (name, " | ".join(_cell(d) for d in r["verdicts"])))
    return "\n".join(lines) + "\n"
