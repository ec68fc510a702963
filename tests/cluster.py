"""A real Slurm 22.05 for the tests, in a folder of its own: munged (when none answers), slurmctld and two slurmd
(``slurmd -N n1``, ``-N n2``, one host) with two fake GPUs each (character devices, as GRES needs), no
accounting daemon (job states: squeue/scontrol while known, then the jobcomp/filetxt file).

Where the host has cgroup v1 hierarchies for cpuset and devices (``cgroups()``), jobs run as on most clusters:
``TaskPlugin=task/cgroup`` and ``ProctrackType=proctrack/cgroup`` with ``ConstrainCores=yes`` and
``ConstrainDevices=yes`` (each task's cpuset is its CPUs, its devices cgroup denies the GPUs of other jobs,
and Slurm numbers its GPUs from 0). Elsewhere ``task/none`` and ``proctrack/linuxproc``: no binding at all.

``Cluster.start(folder)`` writes slurm.conf and gres.conf there, starts the daemons and waits until both nodes
are idle; ``stop()`` ends exactly the daemons it started, by the PIDs their pid files name. Needs root and
Debian's ``slurmctld slurmd slurm-client munge`` (the configuration verified in shared/research/cluster-here.md).
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

NODES = ("n1", "n2")
GPUS_PER_NODE = 2
FAKE_MAJOR = 240  # fake GPUs: character devices of a major number for local use (no driver), one minor each
DAEMONS = ("slurmctld", "slurmd", "munged", "sbatch")


CGROUP_CONF = """CgroupPlugin=cgroup/v1
CgroupAutomount=yes
ConstrainCores=yes
ConstrainDevices=yes
ConstrainRAMSpace=no
"""


def missing():
    """Why this machine cannot run the test cluster, or None."""
    absent = [name for name in DAEMONS if shutil.which(name) is None and not Path("/usr/sbin/" + name).exists()]
    if absent:
        return "no %s here: apt-get install slurmctld slurmd slurm-client munge" % ", ".join(absent)
    if os.geteuid() != 0:
        return "the test cluster's slurmd needs root"
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cgroups():
    """Whether Slurm's cgroup v1 plugin can constrain this host's jobs (cpuset and devices hierarchies mounted)."""
    return all(Path("/sys/fs/cgroup", name, "tasks").exists() for name in ("cpuset", "devices", "freezer"))


def config(folder, ctld_port, node_ports, cpus, constrain=True):
    """slurm.conf and gres.conf text of the test cluster under ``folder`` (``constrain``: with task/cgroup)."""
    nodes = "\n".join(
        "NodeName=%s NodeHostname=%s NodeAddr=127.0.0.1 Port=%d CPUs=%d RealMemory=4000 Gres=gpu:%d "
        "State=UNKNOWN" % (name, socket.gethostname(), port, cpus, GPUS_PER_NODE)
        for name, port in zip(NODES, node_ports)
    )
    slurm = """ClusterName=dlrepro-test
SlurmctldHost=%(host)s(127.0.0.1)
SlurmctldPort=%(ctld)d
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=%(dir)s/state
SlurmdSpoolDir=%(dir)s/spool-%%n
SlurmctldPidFile=%(dir)s/slurmctld.pid
SlurmdPidFile=%(dir)s/slurmd-%%n.pid
SlurmctldLogFile=%(dir)s/log/slurmctld.log
SlurmdLogFile=%(dir)s/log/slurmd-%%n.log
ProctrackType=%(proctrack)s
TaskPlugin=%(task)s
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=%(dir)s/log/jobcomp.txt
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
KillWait=10
MinJobAge=2
GresTypes=gpu
%(nodes)s
PartitionName=debug Nodes=%(names)s Default=YES MaxTime=INFINITE State=UP
""" % {
        "host": socket.gethostname(),
        "ctld": ctld_port,
        "dir": folder,
        "nodes": nodes,
        "names": ",".join(NODES),
        "proctrack": "proctrack/cgroup" if constrain else "proctrack/linuxproc",
        "task": "task/cgroup" if constrain else "task/none",
    }
    gres = (
        "\n".join("NodeName=%s Name=gpu File=%s/fakegpu[0-%d]" % (name, folder, GPUS_PER_NODE - 1) for name in NODES)
        + "\n"
    )
    return slurm, gres


def _munge_answers():
    try:
        encoded = subprocess.run(["munge", "-n"], capture_output=True, timeout=10)
        return (
            encoded.returncode == 0
            and subprocess.run(["unmunge"], input=encoded.stdout, capture_output=True, timeout=10).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _pid(path, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            return int(Path(path).read_text().strip())
        except (OSError, ValueError):
            time.sleep(0.1)
    raise RuntimeError("no pid file %s after %d s" % (path, timeout))


class Cluster:
    """The running test cluster: its folder, SLURM_CONF path, node names, jobcomp file, whether its jobs run in
    cgroups (``cgroups``); ``stop()`` ends it."""

    def __init__(self, folder):
        self.folder = Path(folder)
        self.conf = self.folder / "slurm.conf"
        self.jobcomp = self.folder / "log" / "jobcomp.txt"
        self.pids = {}  # daemon name -> pid, only those this cluster started
        self.started_s = None
        self.cgroups = cgroups()

    def env(self):
        return dict(os.environ, SLURM_CONF=str(self.conf))

    def start(self):
        began = time.time()
        for sub in ("state", "log"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        for i in range(GPUS_PER_NODE):
            device = self.folder / ("fakegpu%d" % i)
            if not device.exists():
                os.mknod(device, 0o666 | 0o020000, os.makedev(FAKE_MAJOR, i))
        slurm, gres = config(
            self.folder, _free_port(), [_free_port() for _ in NODES], os.cpu_count() or 2, self.cgroups
        )
        self.conf.write_text(slurm)
        (self.folder / "gres.conf").write_text(gres)
        (self.folder / "cgroup.conf").write_text(CGROUP_CONF)
        if not _munge_answers():
            Path("/run/munge").mkdir(exist_ok=True)
            shutil.chown("/run/munge", "munge", "munge")
            subprocess.run(["su", "-s", "/bin/sh", "munge", "-c", "/usr/sbin/munged"], check=True)
            self.pids["munged"] = _pid("/run/munge/munged.pid")
        env = self.env()
        subprocess.run(["slurmctld", "-f", str(self.conf)], check=True, env=env)
        self.pids["slurmctld"] = _pid(self.folder / "slurmctld.pid")
        for name in NODES:
            subprocess.run(["slurmd", "-f", str(self.conf), "-N", name], check=True, env=env)
            self.pids["slurmd-" + name] = _pid(self.folder / ("slurmd-%s.pid" % name))
        deadline = time.time() + 60
        states = ""
        while time.time() < deadline:
            states = subprocess.run(
                ["sinfo", "-h", "-N", "-o", "%N %t"], capture_output=True, text=True, env=env
            ).stdout
            if sorted(states.split()) == sorted([n for n in NODES] + ["idle"] * len(NODES)):
                self.started_s = time.time() - began
                return self
            time.sleep(0.5)
        self.stop()
        raise RuntimeError("the test cluster's nodes are not idle after 60 s: %r; logs in %s" % (states, self.folder))

    def stop(self):
        """End the jobs still known (a suspended one resumed first: its frozen cgroup, named by node and job id,
        would freeze the same job id of the next test cluster), then the daemons this cluster started (slurmd,
        slurmctld, then munged), each by its PID."""
        env = self.env()
        jobs = subprocess.run(
            ["squeue", "-h", "-t", "SUSPENDED", "-o", "%i"], capture_output=True, text=True, env=env
        ).stdout.split()
        for job in jobs:
            subprocess.run(["scontrol", "resume", job], capture_output=True, env=env)
        subprocess.run(["scancel", "--full", "--user", str(os.geteuid())], capture_output=True, env=env)
        deadline = time.time() + 30
        while (
            time.time() < deadline
            and subprocess.run(["squeue", "-h"], capture_output=True, text=True, env=env).stdout.strip()
        ):
            time.sleep(0.5)
        for name in sorted(self.pids, key=lambda n: ("slurmd" not in n, n == "munged")):
            pid = self.pids.pop(name)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.time() + 20
            while time.time() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                os.kill(pid, signal.SIGKILL)
