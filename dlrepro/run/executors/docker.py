"""The docker executor: one container per image and group of jobs, through a Docker-compatible engine's API.

The runner and the dataset cache are mounted read-only, the jobs' staging folder read-only and the
scratch output read-write; the container has no network, runs as a non-root user with no new
privileges, every capability dropped, a read-only root file system and a process limit; with
``device="cuda"`` one GPU is passed in by a device request. All of it is one pure function,
``create_args``, which the bundle's isolation record (``isolation``) and the tests read.

An engine that goes away while a run talks to it (its connection refused, or broken while the host looks up or
builds an image, creates or starts a container, streams its output or waits for its end; a serving container
whose output ends without its plan done while the engine no longer answers) raises EngineLost naming the
engine (``engine_calls``); the container may live on without it (its shim keeps the job running), so a resume
first removes the run's containers by their run label (``remove_run``) before it takes what they left.
"""

import collections
import os
import shutil
import socket
import threading
import time

import docker

from dlrepro import REPO_ROOT, engine
from dlrepro.engine import ENGINE_ERRORS, client
from dlrepro.engine import answers as _answers
from dlrepro.engine import calls as engine_calls
from dlrepro.engine import gone as _gone
from dlrepro.engine import lost as engine_lost
from dlrepro.errors import CannotRunHere, ExecutorError
from dlrepro.images import build, feasibility
from dlrepro.plan import hostinfo
from dlrepro.run.executors.base import HOST_LABEL, PID_LABEL, RUN_LABEL, Executor, Served, follow, planned
from runner import settings

CONTAINER_ROOT = "/opt/dlrepro"
CONTAINER_UID = 1000
PIDS_LIMIT = 4096
ROLE_LABEL = "org.dlrepro.role"


# what a call to the engine raises when it fails, its connection included (refused, or broken mid-stream)
def create_args(
    tag,
    user,
    stage,
    scratch,
    data_root,
    gpu=None,
    memory=None,
    labels=None,
    runner_dir=REPO_ROOT / "runner",
    command=None,
    cpus=None,
):
    """Keyword arguments of the engine's container create for one group of jobs (docker SDK
    ``containers.create``): image ``tag``, ``user`` "UID:GID", the staging folder, scratch output and
    dataset cache (host paths), the host ``gpu`` index passed in (a list: a data-parallel job's GPUs; None: no
    GPU), the ``memory`` limit in
    bytes (swap included: none beyond it; None: no limit), the run's ``labels``, the supervisor's
    ``command`` (default: worker isolation) and the ``cpus`` the container may run on (a cpuset such as "0,2";
    None: every CPU of the host).

    The supervisor watches its standard input, which the host holds open (StdinOnce): when the host's run
    dies, the engine closes it, the supervisor ends its job and exits, and the engine removes the container
    (auto_remove), so a killed run leaves no container behind."""
    args = {
        "image": tag,
        "command": command
        or ["python", "-m", "runner.supervise", "--watch-stdin", "--isolation", "worker", "/jobs", "/out"],
        "user": user,
        "network_mode": "none",
        "read_only": True,
        "tmpfs": {"/tmp": "rw,exec"},
        "security_opt": ["no-new-privileges"],
        "cap_drop": ["ALL"],
        "pids_limit": PIDS_LIMIT,
        "device_requests": [
            docker.types.DeviceRequest(
                device_ids=[str(g) for g in (gpu if isinstance(gpu, list) else [gpu])], capabilities=[["gpu"]]
            )
        ]
        if gpu is not None
        else [],
        "environment": {"PYTHONPATH": CONTAINER_ROOT, "DLREPRO_DATA_ROOT": "/data"},
        "volumes": {
            str(runner_dir): {"bind": CONTAINER_ROOT + "/runner", "mode": "ro"},
            str(data_root): {"bind": "/data", "mode": "ro"},
            str(stage): {"bind": "/jobs", "mode": "ro"},
            str(scratch): {"bind": "/out", "mode": "rw"},
        },
        "labels": dict(labels or {}, **{ROLE_LABEL: "runner"}),
        "stdin_open": True,
        "detach": False,  # with stdin_open: StdinOnce, stdin closes when the host's attachment ends
        "auto_remove": True,
    }
    if memory is not None:
        args.update(mem_limit=int(memory), memswap_limit=int(memory))
    if cpus is not None:
        args["cpuset_cpus"] = cpus
    return args


def caller_cpus():
    """The CPUs this process may run on as a cpuset ("1", "0,2"), where that is fewer than the host's (a run started
    under ``taskset`` or in a cgroup's cpuset); None where it may run on every CPU. A run's containers take it
    (``cpuset_cpus``), as the jobs of the local executor inherit it and an sbatch task's containers take its
    Slurm allocation (``sbatch.script``): a confined run does not spill its jobs onto the CPUs around it."""
    allowed = settings.allowed_cpus()
    return None if len(allowed) >= (os.cpu_count() or 1) else ",".join(str(c) for c in allowed)


def gpu_flags(engine_name, ids):
    """The ``run`` command-line flags of ``engine_name`` ("docker" | "podman") that pass the GPUs ``ids`` (host
    indices as text, or one shell expansion such as ``${CUDA_VISIBLE_DEVICES}``) into a container: Docker's
    NVIDIA runtime (``--gpus device=IDS``), Podman's CDI devices (``--device nvidia.com/gpu=ID``)."""
    if engine_name == "podman":
        return [word for i in ids for word in ("--device", "nvidia.com/gpu=%s" % i)]
    return ["--gpus", '"device=%s"' % ",".join(ids)]  # quoted: Docker reads --gpus as CSV, and ids hold commas


def run_command(args, engine_name="docker", name=None):
    """The ``docker run`` (or ``podman run``) command line, as a list of words, that creates and runs the container
    of ``args`` (``create_args``) exactly as the SDK does, named ``name``: the same isolation, mounts, labels,
    attached standard input (StdinOnce) and removal on exit. Raises ValueError for an argument it has no flag
    for, so that no setting of ``create_args`` can be left out of a command line."""
    words = [engine_name, "run"] + (["--name", name] if name else [])
    flags = {
        "user": lambda v: ["--user", v],
        "network_mode": lambda v: ["--network", v],
        "read_only": lambda v: ["--read-only"] if v else [],
        "tmpfs": lambda v: [w for path, opts in v.items() for w in ("--tmpfs", "%s:%s" % (path, opts))],
        "security_opt": lambda v: [w for opt in v for w in ("--security-opt", opt)],
        "cap_drop": lambda v: [w for cap in v for w in ("--cap-drop", cap)],
        "pids_limit": lambda v: ["--pids-limit", str(v)],
        "device_requests": lambda v: [w for r in v for w in gpu_flags(engine_name, r["DeviceIDs"])],
        "environment": lambda v: [w for k, val in v.items() for w in ("--env", "%s=%s" % (k, val))],
        "volumes": lambda v: [
            w for host, m in v.items() for w in ("--volume", "%s:%s:%s" % (host, m["bind"], m["mode"]))
        ],
        "labels": lambda v: [w for k, val in v.items() for w in ("--label", "%s=%s" % (k, val))],
        "stdin_open": lambda v: ["--interactive"] if v else [],
        "detach": lambda v: ["--detach"] if v else [],
        "auto_remove": lambda v: ["--rm"] if v else [],
        "mem_limit": lambda v: ["--memory", str(v)],
        "memswap_limit": lambda v: ["--memory-swap", str(v)],
        "cpuset_cpus": lambda v: ["--cpuset-cpus", v],
    }
    unknown = sorted(set(args) - set(flags) - {"image", "command"})
    if unknown:
        raise ValueError("no %s run flag for container argument(s) %s" % (engine_name, ", ".join(unknown)))
    for key, to_flags in flags.items():
        if key in args:
            words += to_flags(args[key])
    return words + [args["image"]] + list(args["command"])


def isolation(args):
    """The bundle's isolation record of container create arguments ``args`` (``create_args``)."""
    return {
        "network": args["network_mode"],
        "read_only_root": args["read_only"],
        "user": "root" if args["user"].split(":")[0] == "0" else "non-root",
        "no_new_privileges": "no-new-privileges" in args["security_opt"],
        "cap_drop": ",".join(args["cap_drop"]),
        "pids_limit": args["pids_limit"],
        "memory_bytes": args.get("mem_limit"),
        "cpus": args.get("cpuset_cpus"),
    }


def default_memory(total=None):
    """The default memory limit of a job container (bytes): the host's memory less headroom for the host itself
    (the larger of 2 GiB and 10%)."""
    total = total or hostinfo.memory_bytes()
    return max(total // 2, total - max(2 << 30, total // 10))


def _remove(container):
    """Remove ``container`` (killing it); one the engine removed already, or an engine that went away, is no error
    (a restarted engine removes its auto_remove containers itself; a resume makes sure: ``remove_run``)."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except ENGINE_ERRORS as exc:
        if not _gone(exc):
            raise


def _listed(labels):
    """The containers (all states) with every one of ``labels`` ("key=value"); one removed while the engine lists
    them (an engine just restarted removes its auto_remove containers, on a busy machine for more than 10 s) is left
    out (the SDK's ``ignore_removed``: its inspection's 404 is no error)."""
    return client().containers.list(all=True, filters={"label": labels}, ignore_removed=True)


def _host_alive(container):
    """Whether the host process that started ``container`` (its HOST_LABEL and PID_LABEL) lives on this host."""
    return hostinfo.alive({"host": container.labels.get(HOST_LABEL), "pid": container.labels.get(PID_LABEL)})


def remove_run(run_id, timeout=60, dead_only=False):
    """Make sure that no container of run ``run_id`` (its RUN_LABEL) is left: remove each (killing it) and wait
    until the engine lists none; returns one line per container removed. ``dead_only``: leave those whose host
    process still lives on this host (a study's worker pool serving another run). Raises EngineLost when the
    engine went away, ExecutorError when it fails, or when one is still listed after ``timeout`` seconds."""

    def listed():
        with engine_calls():
            return [c for c in _listed(["%s=%s" % (RUN_LABEL, run_id)]) if not (dead_only and _host_alive(c))]

    found = listed()
    for container in found:
        with engine_calls():
            _remove_once(container)
    deadline = time.time() + timeout
    while listed():
        if time.time() > deadline:
            raise ExecutorError(
                "the container of an earlier attempt of %s is still there after %d s" % (run_id, timeout),
                "remove it (`docker rm -f $(docker ps -aq --filter label=%s=%s)`), then resume again"
                % (RUN_LABEL, run_id),
            )
        time.sleep(0.5)
    return ["removed container %s of an earlier attempt of %s" % (c.short_id, run_id) for c in found]


def _remove_once(container):
    """Remove ``container`` (killing it); one whose removal is under way already (409) is no error."""
    try:
        container.remove(force=True)
    except docker.errors.NotFound:
        pass
    except docker.errors.APIError as exc:
        if exc.status_code != 409:
            raise


def _lines(chunks):
    """Text lines of a stream of byte chunks (the engine's attach stream splits lines anywhere)."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", "replace") + "\n"
    if pending:
        yield pending.decode("utf-8", "replace")


class _Started:
    """A runner container created from ``args`` (``create_args``), attached and started: ``lines`` its output,
    ``send`` writes to its standard input, ``wait`` gives its exit status once it ended and was removed, ``stop``
    ends it (``kill``, or its input closed: a serving supervisor ends once idle) and removes it. Listed in
    ``owner._active`` (an executor that may cancel it) while it lives. Raises ExecutorError when it cannot start."""

    def __init__(self, args, owner=None):
        engine = client()
        self.container, self.owner = engine.containers.create(**args), owner
        if owner is not None:
            with owner._lock:
                owner._active.add(self.container)
        # attached before the start, so that no output is missed and the exit status outlives auto_remove
        self.stdin = self.container.attach_socket(params={"stdin": 1, "stream": 1})
        output = engine.api.attach(self.container.id, stdout=True, stderr=True, stream=True, logs=True)
        self.status = {}
        self.waiter = threading.Thread(target=self._wait, name="dlrepro-wait", daemon=True)
        self.waiter.start()
        self.tail = collections.deque(maxlen=20)
        try:
            self.container.start()
        except docker.errors.APIError as exc:
            self.stop(kill=True)
            raise ExecutorError(
                "the container for %s could not start: %s" % (args["image"], exc.explanation or exc)
            ) from None
        self.lines = (self.tail.append(line) or line for line in _lines(output))

    def _wait(self):
        try:
            self.status.update(self.container.wait(condition="removed"))
        except ENGINE_ERRORS as exc:  # handed to the caller's thread
            self.status["error"] = exc

    def send(self, text):
        self.stdin._sock.sendall(text.encode("utf-8"))

    def wait(self, timeout=None):
        """Its exit status (-1 when the engine did not say), once it ended; raises the engine's error."""
        self.waiter.join(timeout)
        if "error" in self.status:
            raise self.status["error"]
        return self.status.get("StatusCode", -1)

    def lost(self):
        """Whether its engine went away: waiting for its end broke off as the engine does when it goes, or the
        engine no longer answers."""
        error = self.status.get("error")
        return (error is not None and _gone(error)) or not _answers()

    def stop(self, kill=False, timeout=60):
        """Kill it (or close its input and give it ``timeout`` s to end), remove it; returns its exit status (-1
        when the engine did not say)."""
        try:
            if not kill:
                self.stdin._sock.shutdown(socket.SHUT_WR)
                self.waiter.join(timeout)
        except OSError:  # its attachment broke (the engine went away): removed below
            pass
        finally:
            if self.owner is not None:
                with self.owner._lock:
                    self.owner._active.discard(self.container)
            self.stdin.close()
            _remove(self.container)
        return self.status.get("StatusCode", -1)


class DockerExecutor(Executor):
    name = "docker"
    in_images = True

    @classmethod
    def create(cls, device, gpu, python=None, memory=None, isolation="worker", slurm=None):
        """The executor; raises ExecutorError where the engine is missing or its limits are too low."""
        from dlrepro import engine

        executor = cls._made(device, gpu, memory, isolation, slurm)
        engine.check_limits()
        return executor

    @classmethod
    def _made(cls, device, gpu, memory, isolation, slurm):
        return cls(device, gpu, memory, isolation)

    def __init__(self, device="cpu", gpu=0, memory=None, isolation="worker"):
        """``memory``: the limit of each job container in bytes (None: ``default_memory()``)."""
        super().__init__(device, gpu, isolation)
        self.memory = memory or default_memory()
        self.cpus = caller_cpus()

    def preflight(self):
        problem = super().preflight()
        if problem is None and self.device == "cuda":
            with engine_calls():
                runtimes = client().info().get("Runtimes") or {}
            if "nvidia" not in runtimes and shutil.which("nvidia-container-runtime-hook") is None:
                return (
                    "the Docker engine has no NVIDIA runtime, so it cannot pass GPUs into containers",
                    "install the NVIDIA Container Toolkit (nvidia-ctk runtime configure --runtime=docker), "
                    "or run without containers: --executor local",
                )
        return problem

    def prepare(self, matrix, framework, version, build_options, log, allow_ptx_jit=False):
        """The matrix's image of (framework, version) on this device, checked against this host before it is
        built (dlrepro.images.feasibility), then built or found by its tag (dlrepro.images.build). Raises
        EngineLost when the engine goes away meanwhile (a build that failed as it went, too)."""
        image = matrix.find(framework, self.device, version)
        problem = feasibility.check(image, self.device, self.gpus, hostinfo.facts(), allow_ptx_jit=allow_ptx_jit)
        if problem is not None:
            raise CannotRunHere(*problem)
        return build.ensure(matrix, image, build_options, log)

    def _user(self, scratch):
        if os.geteuid() != 0:
            return "%d:%d" % (os.geteuid(), os.getegid())
        os.chown(scratch, CONTAINER_UID, CONTAINER_UID)
        return "%d:%d" % (CONTAINER_UID, CONTAINER_UID)

    def _release(self, scratch):
        if os.geteuid() == 0:
            for path in [scratch] + list(scratch.rglob("*")):
                os.chown(path, 0, 0)

    def cancel(self):
        with self._lock:
            active = list(self._active)
        for container in active:
            try:
                container.kill()
            except ENGINE_ERRORS:
                pass

    def serve_key(self, image, gpu):
        return super().serve_key(image, gpu) + (self.memory,)

    def run(self, image, jobs, out, data_root, on_event):
        with engine_calls():
            super().run(image, jobs, out, data_root, on_event)

    def _launch(self, image, stage, scratch, data_root, sink, on_event, gpu):
        with engine_calls():
            self._container(image, stage, scratch, data_root, sink, on_event, gpu)

    def _serve_plan(self, image, stage, scratch, data_root, sink, on_event, gpu):
        self._user(scratch)  # as root: the container's user writes it
        with engine_calls():
            super()._serve_plan(image, stage, scratch, data_root, sink, on_event, gpu)

    def serve_args(self, tag, pool, data_root, gpu):
        """The create arguments (``create_args``) of the pool's container for image ``tag`` on ``gpu``: the same
        isolation as a run's, its staging root mounted read-only, its output root read-write, the serving
        supervisor, labelled with the pool's id as its run."""
        return create_args(
            tag,
            self._user(pool.out),
            pool.jobs,
            pool.out,
            data_root,
            gpu if self.device == "cuda" else None,
            self.memory,
            dict(self.run_labels(), **{RUN_LABEL: pool.id}),
            command=self.supervisor("python", "/jobs", "/out", serve=True),
            cpus=self.cpus,
        )

    def serve(self, image, pool, data_root, gpu):
        started = _Started(self.serve_args(image.tag, pool, data_root, gpu))

        def stop(kill):
            with engine_calls():
                return started.stop(kill)

        return Served(
            started.lines,
            started.send,
            stop,
            started.waiter.is_alive,
            "the container of %s" % image.tag,
            started.tail,
            lost=lambda: engine_lost(started.status.get("error")) if started.lost() else None,
        )

    def _container(self, image, stage, scratch, data_root, sink, on_event, gpu):
        args = create_args(
            image.tag,
            self._user(scratch),
            stage,
            scratch,
            data_root,
            gpu if self.device == "cuda" else None,
            self.memory,
            self.run_labels(),
            command=self.supervisor("python", "/jobs", "/out"),
            cpus=self.cpus,
        )
        started = _Started(args, self)
        try:
            follow(started.lines, scratch, sink, on_event, planned(stage))
            code = started.wait()
            if code != 0:
                raise ExecutorError(
                    "the container of %s exited with status %d: %s" % (image.tag, code, "".join(started.tail))
                )
        finally:
            started.stop(kill=True)

    def reap(self):
        """Remove the job containers of dead runs on this host (their host process is gone: killed, or its machine
        rebooted); returns one line per container removed. Raises EngineLost when the engine went away."""
        with engine_calls():
            found = _listed(["%s=runner" % ROLE_LABEL, "%s=%s" % (HOST_LABEL, socket.gethostname())])
        removed = []
        for container in found:
            labels = container.labels
            if _host_alive(container):
                continue
            with engine_calls():
                _remove_once(container)
            removed.append(
                "removed container %s of the dead run %s (host process %s is gone)"
                % (container.short_id, labels.get(RUN_LABEL), labels.get(PID_LABEL))
            )
        return removed

    def describe(self):
        """The executor's record, with the engine's and the containers' isolation (``isolation``); in a study's
        worker pool, ``isolation.shared_output`` says what the read-write output mount shares."""
        with engine_calls():
            found = engine.record()
        record = isolation(
            create_args("", "%d:%d" % (CONTAINER_UID, CONTAINER_UID), "", "", "", memory=self.memory, cpus=self.cpus)
        )
        if self.pool is not None:
            record["shared_output"] = (
                "/out is the output root of study worker pool %s, read-write, shared by "
                "the containers of every run of the study (each run's jobs write under "
                "<bundle id>/attempt-<n>/ there)" % self.pool.id
            )
        return dict(super().describe(), engine=found, isolation=record)
