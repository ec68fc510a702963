"""The CUDA images looked inside (issue 27): runner.buildinfo's parsing, the pre-flight table from the recorded
facts (runner.archs's own rule), and the matrix against what the images hold. No image is needed: the record
is results/cuda-images-20261202/ (made by benchmarks/cuda_images.py)."""

import json
import struct
import sys

import pytest

from dlrepro import REPO_ROOT
from dlrepro.images import gpu_support
from dlrepro.run import probe
from runner import buildinfo

RECORD_DIR = REPO_ROOT / "results" / "cuda-images-20261202"


@pytest.fixture(scope="module")
def records():
    return json.loads((RECORD_DIR / "cuda-images.json").read_text())


# ---------------------------------------------------------------- runner.buildinfo


def test_cuobjdump_listings_give_cubin_and_ptx_architectures():
    elf = (
        "ELF file    1: libtorch_cuda.1.sm_90.cubin\nELF file    2: libtorch_cuda.2.sm_75.cubin\n"
        "ELF file    3: libtorch_cuda.3.sm_90a.cubin\nELF file    4: libtorch_cuda.4.sm_90.cubin\n"
    )
    ptx = "PTX file    1: libmxnet.1.sm_86.ptx\nPTX file    2: libmxnet.2.sm_120.ptx\n"
    assert buildinfo.cuobjdump_archs(elf) == ["sm_75", "sm_90", "sm_90a"]
    assert buildinfo.cuobjdump_archs(ptx) == ["compute_86", "compute_120"]
    assert buildinfo.cuobjdump_archs("cuobjdump info    : File 'x.so' does not contain device code\n") == []


def test_library_version_numbers_become_dotted_versions():
    assert buildinfo.version_text("cuda_runtime", 11070) == "11.7"
    assert buildinfo.version_text("cuda_runtime", 13000) == "13.0"
    assert buildinfo.version_text("cudnn", 7605) == "7.6.5"  # cuDNN 7-8: 1000*major + 100*minor + patch
    assert buildinfo.version_text("cudnn", 8500) == "8.5.0"
    assert buildinfo.version_text("cudnn", 92000) == "9.20.0"  # cuDNN 9: 10000*major + 100*minor + patch
    assert buildinfo.version_text("nccl", 2708) == "2.7.8"  # NCCL < 2.9: 1000*major + ...
    assert buildinfo.version_text("nccl", 22907) == "2.29.7"  # NCCL >= 2.9: 10000*major + ...


def test_elf_sections_are_read_from_the_header_and_other_files_have_none(tmp_path):
    sections = buildinfo.elf_sections(sys.executable)
    assert ".text" in sections and sections[".text"][0] > 0 and sections[".text"][1] > 0
    assert ".nv_fatbin" not in sections
    text = tmp_path / "notes.so"
    text.write_text("not an ELF file")
    assert buildinfo.elf_sections(str(text)) == {}


def _fatbin(entries):
    """A fat binary of (kind, arch, payload bytes) entries, laid out as runner.buildinfo.fatbin_archs reads it."""
    body = b"".join(
        struct.pack("<HHIQIIHHI", kind, 0, 64, len(payload), 0, 0, arch % 10, arch // 10, arch) + b"\0" * 32 + payload
        for kind, arch, payload in entries
    )
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + body


def test_fat_binary_headers_give_each_sets_architectures_most_common_first(tmp_path):
    own = _fatbin([(2, 37, b"k" * 40), (2, 50, b"k" * 8), (1, 50, b"ptx text")])
    vendor = _fatbin([(2, 35, b"k" * 16), (2, 61, b"k" * 16)])
    lib = tmp_path / "libfake.so"
    lib.write_bytes(b"E" * 100 + own + b"\0" * 5 + vendor + own + b"\0" * 3)
    region = (100, 2 * len(own) + len(vendor) + 8)
    assert buildinfo.fatbin_groups(str(lib), [region]) == [
        {"sass": ["sm_37", "sm_50"], "ptx": ["compute_50"], "fatbins": 2},
        {"sass": ["sm_35", "sm_61"], "ptx": [], "fatbins": 1},
    ]
    assert buildinfo.fatbin_groups(str(lib), [(100, len(own))]) == [
        {"sass": ["sm_37", "sm_50"], "ptx": ["compute_50"], "fatbins": 1}
    ]


def test_ldd_output_maps_sonames_to_paths_or_none():
    text = (
        "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibcudart.so.11.0 => /opt/venv/nvidia/cuda_runtime/lib/libcudart.so.11.0"
        " (0x00007f01)\n\tlibcuda.so.1 => not found\n"
    )
    assert buildinfo.ldd_lines(text) == {
        "libcudart.so.11.0": "/opt/venv/nvidia/cuda_runtime/lib/libcudart.so.11.0",
        "libcuda.so.1": None,
    }


def test_the_main_library_is_the_frameworks_own_with_the_most_device_code():
    found = [
        {"path": "/v/cntk/libs/libcudnn.so.7", "fatbin_bytes": 300},
        {"path": "/v/cntk/libs/libCntk.Math-2.7.so", "fatbin_bytes": 120},
        {"path": "/v/cntk/libs/libnccl.so.2", "fatbin_bytes": 70},
        {"path": "/v/cntk/libs/Cntk.Composite-2.7.so", "fatbin_bytes": 5},
    ]
    assert buildinfo.main_library(found) == "/v/cntk/libs/libCntk.Math-2.7.so"
    assert buildinfo.main_library(found[:1]) is None


def test_a_cpu_build_reports_its_version_and_no_device_code():
    torch = pytest.importorskip("torch")
    facts = buildinfo.describe("torch")
    assert facts["reported"]["framework_version"] == torch.__version__
    assert facts["reported"]["cuda"] == torch.version.cuda
    assert facts["device_code"] == [] and facts["main"] is None


# ---------------------------------------------------------------- the pre-flight per GPU


def test_each_gpu_gets_runner_archs_decision_with_its_reason():
    maxwell_ptx = ["sm_50", "compute_50"]
    k80 = gpu_support.decide("cntk-gpu", "3.7", "K80", maxwell_ptx)
    assert (k80["verdict"], k80["arch"]) == ("none", None)
    assert k80["reason"] == (
        "cntk-gpu has no kernels for K80 (sm_37, compute capability 3.7); its build ships sm_50, compute_50"
    )
    hopper = gpu_support.decide("cntk-gpu", "9.0", "H100, H200", maxwell_ptx)
    assert (hopper["verdict"], hopper["arch"]) == ("ptx", "compute_50")
    assert "only PTX for an older architecture (compute_50)" in hopper["reason"]
    gtx980 = gpu_support.decide("cntk-gpu", "5.2", "GTX 980", maxwell_ptx)
    assert gtx980 == {"capability": "5.2", "gpus": "GTX 980", "verdict": "native", "arch": "sm_50", "reason": None}
    own_ptx = gpu_support.decide("tf", "9.0", "H100, H200", ["sm_80", "sm_89", "compute_90"])
    assert (own_ptx["verdict"], own_ptx["arch"], own_ptx["reason"]) == ("native", "compute_90", None)
    assert [d["capability"] for d in gpu_support.verdicts("x", ["sm_80"])] == [c for c, _ in gpu_support.GPUS]


def test_the_preflight_uses_the_frameworks_list_else_the_main_librarys_own_kernels():
    groups = [
        {"sass": ["sm_50", "sm_60"], "ptx": ["compute_60"], "fatbins": 90},
        {"sass": ["sm_35", "sm_61"], "ptx": [], "fatbins": 10},
    ]
    lib = {
        "path": "/v/libmxnet.so",
        "fatbin_bytes": 10,
        "groups": groups,
        "sass": ["sm_35", "sm_50", "sm_60", "sm_61"],
        "ptx": ["compute_60"],
    }
    facts = {"reported": {"archs": None}, "device_code": [lib], "main": "/v/libmxnet.so"}
    own = "the architectures of 90 of the 100 fat binaries of /v/libmxnet.so"
    assert gpu_support.device_archs(facts) == (["sm_50", "sm_60"], ["compute_60"], own)
    assert gpu_support.preflight_archs(facts) == (["sm_50", "sm_60", "compute_60"], own)
    assert gpu_support.all_archs(facts) == (
        ["sm_35", "sm_50", "sm_60", "sm_61"],
        ["compute_60"],
        "cuobjdump --list-elf/--list-ptx",
    )
    facts["reported"] = {"archs": ["sm_75", "sm_90"], "archs_source": "torch._C._cuda_getArchFlags()"}
    assert gpu_support.preflight_archs(facts) == (["sm_75", "sm_90"], "framework: torch._C._cuda_getArchFlags()")
    refused = {"error": "cuobjdump --list-elf exited 1: Support for 'sm_37' has been removed"}
    lib.update(sass=refused, ptx=refused)
    assert gpu_support.all_archs(facts) == (
        ["sm_35", "sm_50", "sm_60", "sm_61"],
        ["compute_60"],
        "the fat binary headers",
    )


def test_library_versions_keep_the_frameworks_word_and_the_librarys():
    facts = {
        "reported": {"cuda": "12.5.1", "cudnn": "9", "nccl": {"error": "AttributeError: no"}},
        "libraries": {
            "cuda_runtime": [{"path": "a", "version": "12.9"}],
            "cudnn": [{"path": "b", "version": "9.28.0"}, {"path": "c", "version": {"error": "x"}}],
            "nccl": [{"path": "d", "version": "2.32.3"}],
        },
    }
    cuda = gpu_support.library_versions(facts, "cuda_runtime")
    assert cuda == {"reported": "12.5.1", "library": "12.9"}
    assert gpu_support.version_text(cuda) == "12.5.1 (library 12.9)"
    assert gpu_support.version_text(gpu_support.library_versions(facts, "cudnn")) == "9 (library 9.28.0)"
    assert gpu_support.version_text(gpu_support.library_versions(facts, "nccl")) == "2.32.3"
    assert gpu_support.version_text({"reported": "11.7", "library": "11.7"}) == "11.7"
    old = {
        "reported": {"error": "ImportError: libnvidia-ml.so.1"},
        "libraries": {
            "cuda_runtime": [
                {
                    "path": "libcudart.so.10.0",
                    "version": {"error": "RuntimeError: returned status 35"},
                    "soname_version": "10.0",
                }
            ]
        },
    }
    assert gpu_support.library_versions(old, "cuda_runtime") == {"reported": None, "library": "10.0 (file name)"}
    old["wheels"] = {"nvidia-cuda-runtime-cu11": "11.7.99", "nvidia-cudnn-cu11": "8.5.0.96"}
    assert gpu_support.library_versions(old, "cuda_runtime")["library"] == "11.7.99 (wheel nvidia-cuda-runtime-cu11)"
    none = gpu_support.library_versions({"reported": {"error": "ImportError: x"}, "libraries": {}}, "cudnn")
    assert none == {"reported": None, "library": None} and gpu_support.version_text(none) is None


def test_matrix_problems_name_the_field_and_both_values(matrix):
    image = matrix.entry("mxnet-1.9.1-cuda")
    record = {
        "versions": {
            "cuda_runtime": {"reported": None, "library": image.cuda + ".99"},
            "cudnn": {"reported": None, "library": image.cudnn + ".0"},
        },
        "sass": list(image.cuda_archs),
        "ptx": [],
    }
    assert probe.matrix_problems(image, record) == []
    record.update(sass=["sm_50"], ptx=["compute_50"])
    record["versions"]["cudnn"] = {"reported": "8", "library": "8.9.2"}
    assert probe.matrix_problems(image, record) == [
        "cudnn: matrix %s, image 8.9.2" % image.cudnn,
        "cuda_archs: matrix %s, image sm_50 compute_50" % " ".join(image.cuda_archs),
    ]


# ---------------------------------------------------------------- the committed record


def test_every_cuda_image_of_the_matrix_has_a_record(records, matrix):
    assert [r["name"] for r in records] == [i.name for i in matrix.images if i.device == "cuda"]
    for r in records:
        assert r["built"] or (r["reason"] and r["instead"]), r["name"]


def test_the_committed_table_is_runner_archs_decision_over_the_recorded_facts(records, matrix):
    for r in [r for r in records if r["built"]]:
        assert {k: r[k] for k in probe.derive(matrix.entry(r["name"]), r["facts"])} == probe.derive(
            matrix.entry(r["name"]), r["facts"]
        ), r["name"]
        shipped, source = gpu_support.preflight_archs(r["facts"])
        assert (shipped, source) == (r["preflight_archs"], r["preflight_source"]), r["name"]
        assert gpu_support.device_archs(r["facts"]) == (r["sass"], r["ptx"], r["archs_source"]), r["name"]
        assert gpu_support.all_archs(r["facts"]) == (r["all_sass"], r["all_ptx"], r["all_source"]), r["name"]
        assert gpu_support.verdicts(r["name"], shipped) == r["verdicts"], r["name"]
    table = gpu_support.markdown(records)
    assert (RECORD_DIR / "table.md").read_text() == table
    assert table in (REPO_ROOT / "docs" / "gpu.md").read_text()


def test_the_matrix_agrees_with_what_the_built_images_hold(records, matrix):
    for r in [r for r in records if r["built"]]:
        assert probe.matrix_problems(matrix.entry(r["name"]), r) == [], r["name"]


def test_the_fat_binary_headers_list_what_cuobjdump_lists_where_it_reads_the_library(records):
    agree, differ = 0, []
    for r in [r for r in records if r["built"]]:
        for lib in r["facts"]["device_code"]:
            if isinstance(lib.get("sass"), list) and isinstance(lib.get("ptx"), list):
                # the headers list an arch-specific cubin (sm_90a) as its base architecture
                if all(
                    {a for g in lib["groups"] for a in g[key]} == {a.rstrip("a") for a in lib[key]}
                    for key in ("sass", "ptx")
                ):
                    agree += 1
                else:
                    differ.append(lib["path"].split("/")[-1])
    # torch, TensorFlow, MXNet and JAX libraries, and Lua Torch 7's libTHC and libTHCUNN (sm_60 cubins only; cuobjdump
    # 13 refuses CNTK's and torch 1.10.2's); nvshmem's
    # library also holds relocatable device code (an __nv_relfatbin section, with an sm_89 cubin and compute_120
    # PTX), which the headers read and cuobjdump --list-elf/--list-ptx leave out
    assert (agree, differ) == (13, ["libtorch_nvshmem.so"])
