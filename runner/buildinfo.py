"""What a framework's CUDA build ships, read inside its image without a GPU.

    python -m runner.buildinfo FRAMEWORK [--cuobjdump PATH]

prints one JSON object: the framework's version and what it reports of its own build (CUDA, cuDNN, NCCL,
compiled architectures), the CUDA runtime, cuDNN and NCCL libraries found in the image with the versions they
report (cudaRuntimeGetVersion, cudnnGetVersion, ncclGetVersion; CUDA 10's and 11's runtime answers only with a
driver, then the version is read from the library's file name), the CUDA wheels
installed, and for each of the framework's shared libraries that holds device code (an ELF ``.nv_fatbin``
section) its cubin ("sm_XY") and PTX ("compute_XY") architectures as ``cuobjdump --list-elf / --list-ptx``
lists them. ``main`` names the framework's library with the most device code (NVIDIA's bundled cuDNN,
cuBLAS, NCCL, ... are listed but never main), whose lists the pre-flight
(runner.archs) needs when the framework does not report its own; ``linked`` is that library's ``ldd``.
Every step that fails is recorded as an error string next to its field; nothing stops the report.
"""

import argparse
import ctypes
import glob
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import struct
import subprocess
import sys

# the framework's packages whose shared libraries are scanned (the top-level names in site-packages)
PACKAGES = {
    "torch": ["torch"],
    "caffe2": ["torch", "caffe2"],
    "tensorflow": ["tensorflow"],
    "mxnet": ["mxnet"],
    "jax": ["jaxlib", "jax_plugins", "jax_cuda13_plugin", "jax_cuda12_plugin"],
    "cntk": ["cntk"],
    "caffe": ["caffe"],
    "chainer": ["chainer", "cupy"],
}
# frameworks that are no Python package: the folders their shared libraries are installed in (Lua Torch 7 is
# compiled into /opt/torch7 by its images' recipes, images/matrix.yaml; cutorch's and cunn's under lib/lua/5.1)
TORCH7_PREFIX = "/opt/torch7"
LIBRARY_DIRS = {"torch7": [os.path.join(TORCH7_PREFIX, "lib")]}
TORCH7_SOURCES = os.path.join(TORCH7_PREFIX, "SOURCES")  # written by the image build: one line per source archive
# the libraries whose version functions are called, by file name
LIBRARIES = {
    "cuda_runtime": r"libcudart\.so(\.\d+)*$",
    "cudnn": r"libcudnn\.so(\.\d+)*$",
    "nccl": r"libnccl\.so(\.\d+)*$",
}
FATBIN_SECTIONS = (".nv_fatbin", "__nv_relfatbin")
FATBIN_MAGIC = 0xBA55ED50
FATBIN_HEADER = struct.Struct("<IHHQ")  # magic, version, header size, size of the entries
ENTRY_HEADER = struct.Struct("<HHIQIIHHI")  # kind, -, header size, payload size, -, -, minor, major, arch
# NVIDIA's own libraries that some wheels bundle (CNTK: cuDNN, cuBLAS, NCCL): never the framework's main library
NVIDIA_LIBRARY = re.compile(r"^lib(cu[a-z]|nccl|nvrtc|nvjitlink|nvToolsExt|nvshmem|nvblas)")
_ARCH = re.compile(r"\.(sm|compute)_(\d+)([a-z]?)\.(cubin|ptx)\b")


def _call(function):
    """function()'s value, or {"error": "Type: message"} when it raises."""
    try:
        return function()
    except Exception as exc:  # every failure is a fact of the image
        return {"error": "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")}


# ---------------------------------------------------------------- parsing (pure)


def arch_key(arch):
    """Sort key of "sm_86", "compute_90", "sm_90a": (major*10 + minor, suffix)."""
    match = re.match(r"^(?:sm|compute)_(\d+)([a-z]?)$", arch)
    return (int(match.group(1)), match.group(2)) if match else (10**6, arch)


def cuobjdump_archs(listing):
    """The architectures of ``cuobjdump --list-elf`` or ``--list-ptx`` output, sorted and unique: a cubin line
    ("ELF file    1: libx.1.sm_86.cubin") gives "sm_86", a PTX line ("PTX file    1: libx.1.sm_90.ptx") gives
    "compute_90" (PTX is named for the virtual architecture it targets)."""
    found = set()
    for match in _ARCH.finditer(listing):
        prefix = "sm" if match.group(4) == "cubin" else "compute"
        found.add("%s_%s%s" % (prefix, match.group(2), match.group(3)))
    return sorted(found, key=arch_key)


def version_text(library, code):
    """The dotted version of a library's version number: cudaRuntimeGetVersion (1000*major + 10*minor),
    cudnnGetVersion (1000*major + 100*minor + patch before cuDNN 9, 10000*major + 100*minor + patch from 9 on),
    ncclGetVersion (1000*major + 100*minor + patch before NCCL 2.9, 10000*major + 100*minor + patch from 2.9)."""
    if library == "cuda_runtime":
        return "%d.%d" % (code // 1000, code % 1000 // 10)
    wide = code >= 90000 if library == "cudnn" else code >= 20900
    scale = 10000 if wide else 1000
    return "%d.%d.%d" % (code // scale, code % scale // 100, code % 100)


def elf_sections(path):
    """{section name: (file offset, size in bytes)} of a 64-bit little-endian ELF file; {} for any other file."""
    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4:6] != b"\x02\x01":
                return {}
            shoff = struct.unpack_from("<Q", head, 0x28)[0]
            entsize, count, names_index = struct.unpack_from("<HHH", head, 0x3A)
            if not count or names_index >= count:
                return {}
            f.seek(shoff)
            table = f.read(entsize * count)
            entries = [struct.unpack_from("<IIQQQQ", table, i * entsize) for i in range(count)]
            f.seek(entries[names_index][4])
            names = f.read(entries[names_index][5])
    except (OSError, struct.error):
        return {}
    sections = {}
    for name_at, _, _, _, offset, size in entries:
        end = names.find(b"\0", name_at)
        sections[names[name_at : end if end >= 0 else None].decode("ascii", "replace")] = (offset, size)
    return sections


def fatbin_groups(path, regions):
    """The architecture sets of the fat binaries in ``regions`` [(file offset, size in bytes)] of the file at
    ``path``, read from their headers: [{"sass": cubin archs, "ptx": PTX archs, "fatbins": how many fat binaries
    carry exactly that set}], the most common first. No toolkit is needed, so this also reads libraries that a
    new cuobjdump refuses (sm_37 code). The most common set is the framework's own compilation units; a
    statically linked NVIDIA library (cuDNN, cuBLAS in torch 1.10.2) brings sets of its own.

    The layout (CUDA's fatbinary.h): a fat binary is a 16-byte header (magic 0xBA55ED50, version, its header's
    size, the size of its entries), then entries, each a header (kind 1 = PTX, 2 = cubin; the header's size; the
    payload's size; the architecture as 10*major + minor at byte 28) and its payload. A section holds many fat
    binaries with padding between them; an arch-specific cubin (sm_90a) is listed as its base (sm_90)."""
    counts = {}
    with open(path, "rb") as f:
        for offset, size in regions:
            at, end = offset, offset + size
            while at + FATBIN_HEADER.size <= end:
                f.seek(at)
                magic, _, header_size, fat_size = FATBIN_HEADER.unpack(f.read(FATBIN_HEADER.size))
                if magic != FATBIN_MAGIC:  # padding: on to the next magic number
                    f.seek(at + 1)
                    chunk = f.read(min(1 << 16, end - at - 1))
                    found = chunk.find(struct.pack("<I", FATBIN_MAGIC))
                    at = at + 1 + (found if found >= 0 else max(len(chunk) - 3, 1))
                    continue
                entry, stop, sass, ptx = at + header_size, at + header_size + fat_size, set(), set()
                while entry + ENTRY_HEADER.size <= stop:
                    f.seek(entry)
                    kind, _, entry_header, payload, _, _, _, _, arch = ENTRY_HEADER.unpack(f.read(ENTRY_HEADER.size))
                    if kind in (1, 2) and arch:
                        (ptx if kind == 1 else sass).add(("compute_%d" if kind == 1 else "sm_%d") % arch)
                    if not entry_header:
                        break
                    entry += entry_header + payload
                key = (tuple(sorted(sass, key=arch_key)), tuple(sorted(ptx, key=arch_key)))
                counts[key] = counts.get(key, 0) + 1
                at = max(stop, at + 1)
    groups = [{"sass": list(k[0]), "ptx": list(k[1]), "fatbins": n} for k, n in counts.items()]
    return sorted(groups, key=lambda g: (-g["fatbins"], g["sass"], g["ptx"]))


def ldd_lines(text):
    """{soname: resolved path, or None when "not found"} of ``ldd`` output."""
    linked = {}
    for line in text.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        if arrow:
            target = rest.split(" (")[0].strip()
            linked[name] = None if target == "not found" else target
    return linked


# ---------------------------------------------------------------- the image


def _run(command):
    proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True)
    return proc.returncode, proc.stdout


def package_dirs(framework):
    """The folders of the framework's packages that are installed (find_spec, nothing imported); for a framework
    that is no Python package, those of LIBRARY_DIRS that exist."""
    if framework in LIBRARY_DIRS:
        return [d for d in LIBRARY_DIRS[framework] if os.path.isdir(d)]
    dirs = []
    for name in PACKAGES[framework]:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        for location in (spec.submodule_search_locations or []) if spec else []:
            if os.path.isdir(location) and location not in dirs:
                dirs.append(location)
    return dirs


def _site_dirs():
    return [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]


def _shared_libraries(dirs):
    """The shared libraries under ``dirs``, each file once (a symbolic link to one already found, or a folder
    walked twice, adds nothing)."""
    found, seen = [], set()
    for top in dirs:
        for root, _, files in os.walk(top):
            for name in sorted(files):
                path = os.path.join(root, name)
                if re.search(r"\.so(\.\d+)*$", name) and os.path.realpath(path) not in seen:
                    seen.add(os.path.realpath(path))
                    found.append(path)
    return found


def file_version(path):
    """The version a shared library's file name carries: "11.0" of libcudart.so.11.0, "11.8.89" of
    libcudart.so.11.8.89; None without one."""
    named = re.search(r"\.so\.(\d+(\.\d+)*)$", os.path.basename(path))
    return named.group(1) if named else None


def device_code(dirs, cuobjdump):
    """[{path, fatbin_bytes, groups, sass, ptx}] of the shared libraries under ``dirs`` with device code: groups
    are the architecture sets of its fat binaries (fatbin_groups), sass and ptx cuobjdump's lists of every cubin
    and PTX in it (or an {"error"} when it failed, as cuobjdump 13 does for a library with sm_37 code), absent
    without ``cuobjdump``."""
    libraries = []
    for path in _shared_libraries(dirs):
        sections = elf_sections(path)
        found = [sections[name] for name in FATBIN_SECTIONS if name in sections and sections[name][1]]
        if not found:
            continue
        entry = {
            "path": path,
            "fatbin_bytes": sum(size for _, size in found),
            "groups": _call(lambda: fatbin_groups(path, found)),
        }
        if cuobjdump:
            for key, flag in (("sass", "--list-elf"), ("ptx", "--list-ptx")):
                code, out = _run([cuobjdump, flag, path])
                archs = cuobjdump_archs(out)
                entry[key] = (
                    archs
                    if code == 0 or archs
                    else {"error": "cuobjdump %s exited %d: %s" % (flag, code, out.strip()[-300:])}
                )
        libraries.append(entry)
    return libraries


def own_library_dirs(dirs, framework):
    """The folders outside ``dirs`` of the framework's own libraries (lib<framework>.so*) that the shared libraries
    under ``dirs`` link, by ldd: a build compiled into a prefix keeps them there (caffe's _caffe.so links
    /opt/caffe/lib/libcaffe.so.1.0.0)."""
    found = []
    for path in _shared_libraries(dirs):
        code, out = _run(["ldd", path])
        for name, target in ldd_lines(out).items() if code == 0 else ():
            folder = os.path.dirname(target or "")
            if name.startswith("lib%s.so" % framework) and folder and folder not in dirs + found:
                found.append(folder)
    return found


def main_library(found):
    """The path of the framework's own library with the most device code among ``found`` (device_code's list;
    NVIDIA's bundled libraries left out); None when there is none."""
    own = [e for e in found if not NVIDIA_LIBRARY.match(os.path.basename(e["path"]))]
    return max(own, key=lambda e: e["fatbin_bytes"])["path"] if own else None


def cuda_wheels():
    """{distribution: version} of the installed nvidia-*, cuda-* and jax-cuda* distributions (dist-info names)."""
    wheels = {}
    for site in _site_dirs():
        for info in glob.glob(os.path.join(site, "*.dist-info")):
            name, _, version = os.path.basename(info)[: -len(".dist-info")].partition("-")
            if re.match(r"^(nvidia|cuda|jax_cuda)", name.lower()):
                wheels[name.lower().replace("_", "-")] = version
    return dict(sorted(wheels.items()))


def library_version(kind, path):
    """The dotted version the library at ``path`` reports (``kind``: cuda_runtime, cudnn or nccl). Raises OSError
    when it cannot be loaded, AttributeError when it lacks the function, RuntimeError when the call returns an
    error status (cudaRuntimeGetVersion without a driver: 35)."""
    lib = ctypes.CDLL(path)
    if kind == "cudnn":
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        return version_text(kind, lib.cudnnGetVersion())
    value = ctypes.c_int()
    function = lib.cudaRuntimeGetVersion if kind == "cuda_runtime" else lib.ncclGetVersion
    status = function(ctypes.byref(value))
    if status != 0:
        raise RuntimeError("returned status %d" % status)
    return version_text(kind, value.value)


def _child_version(kind, path):
    """library_version in a child process: cuDNN 8's cudnnGetVersion loads its sub-libraries, which need the
    driver's libcuda.so.1, and crashes the process without it; {"error"} then, with the child's last line."""
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from runner import buildinfo; print(buildinfo.library_version(sys.argv[1], sys.argv[2]))",
            kind,
            path,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    if proc.returncode == 0 and proc.stdout.strip():
        return proc.stdout.strip().splitlines()[-1]
    tail = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    return {"error": "exited with status %d: %s" % (proc.returncode, tail[-300:])}


def libraries(dirs):
    """{cuda_runtime | cudnn | nccl: [{path, version, soname_version}]}: each such library under ``dirs`` or
    LD_LIBRARY_PATH, with the version it reports (or {"error"}: CUDA 10's cudaRuntimeGetVersion wants a driver)
    and the version its file name carries ("10.0" of libcudart.so.10.0)."""
    search = list(dirs) + [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(":") if os.path.isdir(d)]
    found = {kind: [] for kind in LIBRARIES}
    seen = set()
    for path in _shared_libraries(search):
        real = os.path.realpath(path)
        for kind, pattern in LIBRARIES.items():
            if re.match(pattern, os.path.basename(path)) and real not in seen:
                seen.add(real)
                found[kind].append(
                    {"path": path, "version": _child_version(kind, path), "soname_version": file_version(path)}
                )
    return found


# ---------------------------------------------------------------- what each framework says


def _nccl_text(value):
    if isinstance(value, (tuple, list)):
        return ".".join(str(v) for v in value)
    return version_text("nccl", value) if isinstance(value, int) else value


def _cudnn_text(value):
    return version_text("cudnn", value) if isinstance(value, int) else value


def _torch():
    import torch

    return {
        "framework_version": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": _call(lambda: _cudnn_text(torch.backends.cudnn.version())),
        "nccl": _call(lambda: _nccl_text(torch.cuda.nccl.version())),
        # the list torch.cuda.get_arch_list() returns once a GPU is there (it is [] without one)
        "archs": _call(lambda: torch._C._cuda_getArchFlags().split()),
        "archs_source": "torch._C._cuda_getArchFlags() (torch.cuda.get_arch_list() on a GPU)",
    }


def _caffe2():
    said = _torch()
    from caffe2.python import workspace

    # has_gpu_support is False whenever the GPU module does not load (without a driver it cannot): say why
    said.update(
        has_gpu_support=bool(workspace.has_gpu_support),
        gpu_module=_call(lambda: importlib.import_module("caffe2.python.caffe2_pybind11_state_gpu").__name__),
        caffe2_cudnn=_call(lambda: _cudnn_text(workspace.GetCuDNNVersion())),
    )
    return said


def _tensorflow():
    import tensorflow as tf

    info = {k: v for k, v in dict(tf.sysconfig.get_build_info()).items() if isinstance(v, (str, bool, list, int))}
    return {
        "framework_version": tf.__version__,
        "cuda": info.get("cuda_version"),
        "cudnn": info.get("cudnn_version"),
        "nccl": None,
        "archs": list(info.get("cuda_compute_capabilities") or []),
        "archs_source": "tf.sysconfig.get_build_info()['cuda_compute_capabilities']",
        "build_info": info,
    }


def _mxnet():
    import mxnet as mx

    features = mx.runtime.Features()
    return {
        "framework_version": mx.__version__,
        "cuda": None,
        "cudnn": None,
        "nccl": None,
        "archs": None,
        "features": sorted(name for name, feature in features.items() if feature.enabled),
    }


def _jax():
    import jax
    import jaxlib

    said = {
        "framework_version": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "cuda": None,
        "cudnn": None,
        "nccl": None,
        "archs": None,
    }
    plugins = [m.name for m in pkgutil.iter_modules() if re.match(r"^jax_cuda\d+_plugin$", m.name)]
    for plugin in plugins:
        versions = importlib.import_module(plugin + "._versions")
        said[plugin] = {
            name: _call(getattr(versions, name))
            for name in sorted(dir(versions))
            if name.endswith("_version") and callable(getattr(versions, name))
        }
        for key, kind, function in (
            ("cuda", "cuda_runtime", "cuda_runtime_get_version"),
            ("cudnn", "cudnn", "cudnn_get_version"),
        ):
            if isinstance(said[plugin].get(function), int):  # the versions the plugin loaded, as it checks them
                said[key] = version_text(kind, said[plugin][function])
    return said


def mapped_library(prefix, maps="/proc/self/maps"):
    """The path of the first shared library this process has mapped whose file name starts with ``prefix``
    (e.g. "libcudart.so"); None when none is."""
    try:
        with open(maps) as f:
            for line in f:
                path = line.split()[-1]
                if os.path.basename(path).startswith(prefix):
                    return path
    except (IOError, OSError):
        pass
    return None


def cuda_runtime(path):
    """The dotted version of the CUDA runtime library at ``path`` (cudaRuntimeGetVersion: "11.8"), None when it
    cannot be loaded or does not answer (CUDA 10 and 11 answer only with a driver)."""
    try:
        return library_version("cuda_runtime", path)
    except (OSError, AttributeError, RuntimeError):
        return None


def linked_runtime(cudart):
    """The CUDA version of the runtime library at ``cudart`` as text: what cudaRuntimeGetVersion answers ("11.8"),
    else its file name's, which CUDA 10 and 11 need without a driver ("11.8 (libcudart 11.8.89, file name)"); None
    without a path, or where neither says."""
    cuda = cuda_runtime(cudart) if cudart else None
    full = file_version(os.path.realpath(cudart)) if cudart and cuda is None else None
    if full:
        cuda = "%s (libcudart %s, file name)" % (".".join(full.split(".")[:2]), full)
    return cuda


def _caffe():
    import caffe

    return {
        "framework_version": caffe.__version__,
        # pycaffe cannot say its build: the libraries it loaded can
        "cuda": linked_runtime(mapped_library("libcudart.so")),
        "cudnn": "not linked",
        "nccl": "not linked",
        "archs": None,
        "library": mapped_library("libcaffe.so"),
    }


def _cntk():
    import cntk

    return {"framework_version": cntk.__version__, "cuda": None, "cudnn": None, "nccl": None, "archs": None}


def _chainer():
    import chainer

    return {"framework_version": chainer.__version__, "cuda": None, "cudnn": None, "nccl": None, "archs": None}


def torch7_sources(path=TORCH7_SOURCES):
    """{repository: "commit sha256"} of the Torch 7 sources the image was built from ({} where the file is absent)."""
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return dict(line.split(None, 1) for line in f.read().splitlines() if line.strip())


def torch7_version(built_from):
    """Torch 7's version as LuaRocks names a build of its repository (its rockspec is "torch scm-1"; no module
    reports one): "scm-" and the torch7 commit the image was built from (``torch7_sources``), None where that is
    unknown."""
    torch7 = built_from.get("torch7")
    return "scm-" + torch7.split()[0][:7] if torch7 else None


def debian_cuda_release(path):
    """The CUDA release that the Debian package holding the library at ``path`` comes from, as text: "11.8 (Debian's
    libcublas11 11.11.3.6~11.8.0-5~deb12u1)" (Debian versions a CUDA library as its own version, "~", the toolkit's);
    None where dpkg knows no package of it or its version names no release."""
    code, out = _run(["dpkg-query", "-S", os.path.realpath(path)])
    package = out.split(":")[0].strip() if code == 0 and ":" in out else None
    code, version = _run(["dpkg-query", "-W", "-f", "${Version}", package]) if package else (1, "")
    release = re.search(r"~(\d+\.\d+)\.\d+-", version) if code == 0 else None
    return "%s (Debian's %s %s)" % (release.group(1), package, version.strip()) if release else None


def _torch7():
    """Lua Torch 7 reports no version: its build is named by the torch7 commit it was built from
    (torch7_version). cutorch cannot be loaded without a GPU, so CUDA is read from what its
    libTHC.so links (ldd): a shared libcudart's version, or, where nvcc linked the runtime statically (its default, and
    cutorch's build here), the CUDA release of the CUDA libraries it links (cuBLAS: debian_cuda_release). cunn's
    convolutions link no cuDNN and cutorch no NCCL. A CPU image has no libTHC.so: CUDA None."""
    library = (sorted(glob.glob(os.path.join(TORCH7_PREFIX, "lib", "libTHC.so*"))) or [None])[0]
    cuda = None
    if library:
        code, out = _run(["ldd", library])
        linked = ldd_lines(out) if code == 0 else {}
        cudart = sorted(t for n, t in linked.items() if n.startswith("libcudart.so") and t)
        cublas = sorted(t for n, t in linked.items() if n.startswith("libcublas.so") and t)
        if cudart:
            cuda = linked_runtime(cudart[0])
        elif cublas:
            release = debian_cuda_release(cublas[0])
            cuda = "%s, runtime linked statically" % release if release else None
    return {
        "framework_version": torch7_version(torch7_sources()),
        "cuda": cuda,
        "cudnn": "not linked",
        "nccl": "not linked",
        "archs": None,
        "library": library,
    }


REPORTERS = {
    "torch": _torch,
    "caffe2": _caffe2,
    "tensorflow": _tensorflow,
    "mxnet": _mxnet,
    "jax": _jax,
    "cntk": _cntk,
    "caffe": _caffe,
    "chainer": _chainer,
    "torch7": _torch7,
}


def reported(framework):
    """What the framework says of its build, from a child process that imports it (an import that crashes the
    interpreter, or loads libraries that clash with the version probes, stays out of this one); {"error"} when
    the child fails."""
    proc = subprocess.run(
        [sys.executable, "-m", "runner.buildinfo", framework, "--reported-only"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        universal_newlines=True,
    )
    lines = proc.stdout.strip().splitlines()
    try:
        said = json.loads(lines[-1]) if proc.returncode == 0 and lines else None
    except ValueError:
        said = None
    if said is None:
        tail = (proc.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        return {"error": "importing %s exited with status %d: %s" % (framework, proc.returncode, tail[-300:])}
    return said


def describe(framework, cuobjdump=None):
    """The JSON-ready facts of the framework's build in this image (see the module docstring)."""
    dirs = package_dirs(framework)
    dirs += own_library_dirs(dirs, framework)
    facts = {
        "framework": framework,
        "python": sys.version.split()[0],
        "package_dirs": dirs,
        "reported": reported(framework),
    }
    facts["libraries"] = libraries(dirs + [os.path.join(s, "nvidia") for s in _site_dirs()])
    facts["wheels"] = cuda_wheels()
    facts["device_code"] = device_code(dirs, cuobjdump)
    facts["main"] = main_library(facts["device_code"])
    if facts["main"]:
        code, out = _run(["ldd", facts["main"]])
        facts["linked"] = ldd_lines(out) if code == 0 else {"error": out.strip()[-300:]}
    return facts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=sorted(REPORTERS))
    parser.add_argument("--cuobjdump", help="the cuobjdump program (default: no cubin/PTX lists)")
    parser.add_argument("--reported-only", action="store_true", help="only what the framework says (reported())")
    args = parser.parse_args(argv)
    facts = _call(REPORTERS[args.framework]) if args.reported_only else describe(args.framework, args.cuobjdump)
    sys.stdout.write("\n" + json.dumps(facts, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
