"""What the Slurm tests share: a shell to run the batch script under, a fake tool on the PATH."""

import os
import subprocess

import pytest

BASH42 = os.environ.get("DLREPRO_BASH42")  # a bash 4.2 (RHEL/CentOS 7's), built from bash-4.2's source


def _shell(which):
    """The bash to run the script's lines with: this host's ("bash"), or a bash 4.2 ("4.2", from DLREPRO_BASH42)."""
    if which == "bash":
        return "bash"
    if not BASH42:
        pytest.skip("no bash 4.2 here: set DLREPRO_BASH42 to one built from bash-4.2's source (configure && make)")
    version = subprocess.run([BASH42, "-c", "echo $BASH_VERSION"], capture_output=True, text=True).stdout
    assert version.startswith("4.2."), version
    return BASH42


def _tool(bin_dir, name, text):
    (bin_dir / name).write_text("#!/bin/sh\n" + text)
    (bin_dir / name).chmod(0o755)
