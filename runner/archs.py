"""Can a framework build run natively on a GPU? One pure function, used by the host and by the runner.

A build ships machine code (cubins, "sm_XY") for some architectures and possibly PTX
("compute_XY") that the driver can JIT-compile for newer GPUs. CUDA's rules:
a cubin for sm_XY runs on a GPU of compute capability X.Z with Z >= Y (same major, not
an older minor; "sm_90a"-style arch-specific cubins only on exactly 9.0); PTX for
compute_XY can be JIT-compiled for any GPU of capability >= X.Y. PTX of the GPU's own
architecture (TensorFlow ships compute_90 and no sm_90 cubin) compiles to the same machine
code as a cubin would, once, at start: counted as native. PTX of an older architecture
lacks the newer one's instructions and is not what a study measured, so such a build runs
only when asked (``--allow-ptx-jit``) and the result says so.
"""


class Refused(RuntimeError):
    """The job cannot run as asked on this machine: recorded as skipped with the reason and the remedy."""

    def __init__(self, reason, remedy=None):
        RuntimeError.__init__(self, reason)
        self.reason, self.remedy = reason, remedy


def _parse(arch):
    """("sm" | "compute", major, minor, arch_specific) from "sm_86", "compute_90", "sm_90a"; None if unreadable."""
    kind, _, digits = arch.partition("_")
    suffix = ""
    while digits and not digits[-1].isdigit():
        suffix, digits = digits[-1] + suffix, digits[:-1]
    if kind not in ("sm", "compute") or len(digits) < 2 or not digits.isdigit():
        return None
    return kind, int(digits[:-1]), int(digits[-1]), bool(suffix)


def judge(capability, archs):
    """How a build shipping ``archs`` runs on a GPU of ``capability`` ("9.0").

    Returns ("native", the cubin arch used) | ("ptx", the PTX arch JIT-compiled) | ("none", None);
    ("unknown", None) when ``archs`` is empty (the build's list is not known).
    """
    if not archs:
        return "unknown", None
    major, minor = (int(p) for p in capability.split(".")[:2])
    best_sm, best_ptx = None, None
    for arch in archs:
        parsed = _parse(arch)
        if parsed is None:
            continue
        kind, a_major, a_minor, specific = parsed
        if kind == "sm" and a_major == major and (a_minor == minor if specific else a_minor <= minor):
            if best_sm is None or (a_minor, not specific) > best_sm[0]:
                best_sm = ((a_minor, not specific), arch)
        elif kind == "compute" and (a_major, a_minor) == (major, minor) and best_sm is None:
            best_sm = ((a_minor, False), arch)  # the GPU's own PTX: native code after one JIT compile
        elif kind == "compute" and (a_major, a_minor) < (major, minor):
            if best_ptx is None or (a_major, a_minor) > best_ptx[0]:
                best_ptx = ((a_major, a_minor), arch)
    if best_sm:
        return "native", best_sm[1]
    if best_ptx:
        return "ptx", best_ptx[1]
    return "none", None


def check(what, gpu_name, capability, archs, allow_ptx_jit):
    """None when ``what`` (a build's name) runs natively; "ptx" when only by PTX JIT and allowed;
    raises Refused with the reason otherwise. ``archs`` empty: not known, nothing refused."""
    verdict, used = judge(capability, archs)
    arch = "sm_" + capability.replace(".", "")
    if verdict in ("native", "unknown"):
        return None
    shipped = ", ".join(archs)
    if verdict == "ptx":
        if allow_ptx_jit:
            return "ptx"
        raise Refused(
            "%s has no kernels for %s (%s, compute capability %s), only PTX for an older architecture "
            "(%s) that the driver would JIT-compile; its build ships %s"
            % (what, gpu_name, arch, capability, used, shipped),
            "run with --allow-ptx-jit to measure the JIT-compiled build anyway (the result is marked "
            "ptx_jit), run on a GPU the build supports, or choose another version of the framework "
            "(--framework NAME@VERSION; images/matrix.yaml)",
        )
    raise Refused(
        "%s has no kernels for %s (%s, compute capability %s); its build ships %s"
        % (what, gpu_name, arch, capability, shipped),
        "run on a GPU the build supports, or choose another version of the framework "
        "(--framework NAME@VERSION; images/matrix.yaml)",
    )
