"""The CPU record a job's result keeps (runner.environment): the /proc/cpuinfo fields dlrepro.inputs.peaks looks a CPU's
FLOPs a cycle up by, read from a constructed cpuinfo and from this host's."""

import shutil
import subprocess

import pytest

from runner import environment

# two processors as Linux lists them; only the first one is read
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9B14 96-Core Processor
stepping\t: 1
cpu MHz\t\t: 2596.148
flags\t\t: fpu sse avx fma avx2 avx512f avx512_bf16 hypervisor

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
"""


def test_the_first_processors_vendor_family_model_and_stepping_are_recorded(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    assert environment.cpu_identity(str(path)) == {
        "vendor": "AuthenticAMD",
        "family": 25,
        "model_number": 17,
        "stepping": 1,
    }
    assert environment.cpu_model(str(path)) == "AMD EPYC 9B14 96-Core Processor"
    assert environment.cpu_flags(str(path)) == ["avx", "avx2", "fma", "avx512f", "avx512_bf16"]
    assert environment.cpu_identity(str(tmp_path / "absent")) == {
        "vendor": None,
        "family": None,
        "model_number": None,
        "stepping": None,
    }


@pytest.mark.skipif(shutil.which("lscpu") is None, reason="needs lscpu to compare with")
def test_this_hosts_record_agrees_with_lscpu():
    shown = dict(
        line.split(":", 1)
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, env={"LC_ALL": "C"}).stdout.splitlines()
        if ":" in line
    )
    shown = {key.strip(): value.strip() for key, value in shown.items()}
    found = environment.describe()["cpu"]
    assert (found["vendor"], found["family"], found["model_number"]) == (
        shown["Vendor ID"],
        int(shown["CPU family"]),
        int(shown["Model"]),
    )
    if found["usable_cpus"] == int(shown["CPU(s)"]):  # every CPU usable: every core
        assert found["usable_cores"] == int(shown["Core(s) per socket"]) * int(shown["Socket(s)"])
    else:
        assert found["usable_cores"] * int(shown["Thread(s) per core"]) >= found["usable_cpus"] >= found["usable_cores"]
