"""A Docker engine of the tests' own, to kill and start again: dockerd on a socket of its own, with its own data
root, exec root and pid file, a bridge of its own and no iptables rules (so it leaves the host's engine alone),
and the images it needs loaded from the host's engine (``docker save`` | ``docker load``).

Not ``--bridge=none``: a dockerd started so deletes the interface ``docker0`` on its way up (moby's
removeDefaultBridgeInterface), which is the host engine's, and every build on the host's engine then fails with
"could not find bridge docker0". Its own bridge (``BRIDGE``, with an address outside Docker's default pools) is
made before it starts and removed when it stops.

The socket, exec root, pid file and log are in the test's folder. The data root is kept between sessions under
the temporary folder, one per image ID (``data_root``): loading a framework image takes about two minutes on a
2-core machine, finding a kept one a second. ``kill()`` ends dockerd by its PID with SIGKILL (its containerd
ends with it; a running container's shim and job live on, as after a crash of the engine); ``start()`` starts
it again on the same roots; ``stop()`` ends it and undoes its bind mounts of the data root.
"""

import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import docker

from tests import helpers

BRIDGE, BRIDGE_ADDRESS = "dlrtest0", "10.213.77.1/24"


def data_root(image_id):
    """The kept data root of an engine holding image ``image_id`` ("sha256:...")."""
    return Path(tempfile.gettempdir()) / "dlrepro-test-engine" / image_id.split(":")[-1][:12]


class Dockerd:
    """One dockerd of the tests (see the module's text); ``url`` is its DOCKER_HOST."""

    def __init__(self, folder, root):
        self.folder, self.root, self.proc = Path(folder), Path(root), None
        self.url = "unix://%s" % (self.folder / "docker.sock")

    def start(self, timeout=120):
        """Start dockerd and wait until it answers; returns the seconds that took."""
        self.root.mkdir(parents=True, exist_ok=True)
        began = time.time()
        if subprocess.run(["ip", "link", "show", BRIDGE], capture_output=True).returncode != 0:
            subprocess.run(["ip", "link", "add", BRIDGE, "type", "bridge"], check=True)
            subprocess.run(["ip", "addr", "add", BRIDGE_ADDRESS, "dev", BRIDGE], check=True)
            subprocess.run(["ip", "link", "set", BRIDGE, "up"], check=True)
        self.proc = subprocess.Popen(
            [
                "dockerd",
                "--host",
                self.url,
                "--data-root",
                str(self.root),
                "--exec-root",
                str(self.folder / "exec"),
                "--pidfile",
                str(self.folder / "docker.pid"),
                "--bridge",
                BRIDGE,
                "--iptables=false",
                "--ip-masq=false",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "dockerd.log", "a"),
            start_new_session=True,
        )
        while time.time() < began + timeout:
            if self.proc.poll() is not None:
                raise RuntimeError(
                    "dockerd exited with status %d: see %s" % (self.proc.returncode, self.folder / "dockerd.log")
                )
            try:
                docker.DockerClient(base_url=self.url, timeout=5).ping()
                return time.time() - began
            except docker.errors.DockerException:
                time.sleep(0.2)
        raise RuntimeError("dockerd did not answer within %d s: see %s" % (timeout, self.folder / "dockerd.log"))

    def client(self):
        return docker.DockerClient(base_url=self.url, timeout=120)

    def containers_left(self, within=60):
        """The names of this engine's containers still there after up to ``within`` seconds (tests.helpers)."""
        return helpers.containers_left(self.client(), within)

    def load(self, tag):
        """Load image ``tag`` from the host's engine unless this engine has it; returns the seconds that took."""
        began = time.time()
        try:
            self.client().images.get(tag)
            return 0.0
        except docker.errors.ImageNotFound:
            pass
        save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
        subprocess.run(
            ["docker", "-H", self.url, "load", "--quiet"], stdin=save.stdout, check=True, stdout=subprocess.DEVNULL
        )
        save.stdout.close()
        if save.wait() != 0:
            raise RuntimeError("docker save %s failed (status %d)" % (tag, save.returncode))
        return time.time() - began

    def kill(self, timeout=60):
        """SIGKILL dockerd (by its PID), reap it, and wait until its containerd has ended too (a dockerd started
        while it lives gives up on it: "containerd is still running")."""
        pidfile = self.folder / "exec" / "containerd" / "containerd.pid"
        containerd = int(pidfile.read_text()) if pidfile.is_file() else None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        deadline = time.time() + timeout
        while containerd is not None and time.time() < deadline:
            try:
                os.kill(containerd, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)

    def _mounted(self):
        """Whether the data root is a mount point (a bind mount of the same file system, which os.path.ismount
        cannot see)."""
        with open("/proc/mounts") as mounts:
            return any(line.split()[1] == str(self.root) for line in mounts)

    def stop(self):
        """End dockerd (SIGTERM, by its PID) and undo the bind mount it leaves on its data root; a killed one is
        started again first, so that it removes the containers it left running."""
        if self.proc is not None and self.proc.poll() is not None:
            self.start()
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.kill()
        while self._mounted():  # one per start: a killed dockerd leaves its own
            if subprocess.run(["umount", str(self.root)], check=False).returncode != 0:
                break
        subprocess.run(["ip", "link", "delete", BRIDGE], check=False, capture_output=True)
