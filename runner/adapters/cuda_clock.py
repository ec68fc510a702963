"""A device clock for a framework that does not hand out its CUDA stream: CUDA events on a stream of the
runner's own, through the CUDA driver API (libcuda.so.1, ctypes), each recorded once that stream has been made
to wait, on the device, for one of the step's results.

Used by the JAX adapter (``device_clock``). XLA runs a step on a stream of its own that JAX does not expose, but
``jax.Array.__dlpack__(stream=S)`` (the DLPack protocol's stream argument) makes stream S wait for the array's
definition event (PJRT's WaitUntilBufferReadyOnStream: cuStreamWaitEvent, no wait on the host). An event recorded
on S right after it completes when the step that made the array has completed on the device, so two such events
span the device time between two steps' ends, as events recorded in the step's own stream would (runner.measure's
"device_events"). Nothing here runs on the device beyond the wait and the event records; the host's part is a
few driver calls per step (about 25-30 us on an H200: results/h200-timers-20261203/NOTES.md).
"""

import contextlib
import ctypes

CU_STREAM_NON_BLOCKING = 1  # the stream does not synchronise with the legacy default stream
CU_EVENT_DEFAULT = 0  # a timing event
VERSIONED = ("cuEventDestroy", "cuStreamDestroy", "cuDevicePrimaryCtxRelease", "cuCtxPushCurrent", "cuCtxPopCurrent")


class CudaError(RuntimeError):
    """A CUDA driver call failed (its name and error code in the message)."""


def _symbol(lib, *names):
    """The first driver entry point of ``names`` that ``lib`` exports (newer drivers version some as _v2)."""
    for name in names:
        found = getattr(lib, name, None)
        if found is not None:
            return found
    raise CudaError("the CUDA driver exports none of %s" % ", ".join(names))


class StreamClock(object):
    """Timing events on a non-blocking stream of the job's GPU, for runner.measure's ``device_events`` timer.

    ``ordinal``: the CUDA device index as this process sees it (CUDA_VISIBLE_DEVICES applied);
    ``wait_for(result, stream)``: makes the stream (a CUstream as an int) wait on the device for ``result``.
    Raises CudaError when libcuda cannot be loaded or a driver call fails.
    """

    def __init__(self, ordinal, wait_for):
        try:
            self._cu = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise CudaError("libcuda.so.1 cannot be loaded: %s" % exc)
        self._wait_for = wait_for
        self._call("cuInit", 0)
        device, self._context = ctypes.c_int(), ctypes.c_void_p()
        self._call("cuDeviceGet", ctypes.byref(device), int(ordinal))
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self._context), device)  # the framework's context too
        self._device, self._stream = device, ctypes.c_void_p()
        with self._current():
            self._call("cuStreamCreate", ctypes.byref(self._stream), CU_STREAM_NON_BLOCKING)
        self._record = _symbol(self._cu, "cuEventRecord")
        self._events = []

    def _call(self, name, *args):
        code = _symbol(self._cu, *((name + "_v2", name) if name in VERSIONED else (name,)))(*args)
        if code != 0:
            raise CudaError("%s failed with CUDA error %d" % (name, code))

    @contextlib.contextmanager
    def _current(self):
        """The block runs with the GPU's primary context current on this thread (as it was after)."""
        self._call("cuCtxPushCurrent", self._context)
        try:
            yield
        finally:
            self._call("cuCtxPopCurrent", ctypes.byref(ctypes.c_void_p()))

    def marks(self, count):
        """``count`` timing events, made now (before the timed iterations)."""
        made = []
        with self._current():
            for _ in range(count):
                event = ctypes.c_void_p()
                self._call("cuEventCreate", ctypes.byref(event), CU_EVENT_DEFAULT)
                made.append(event)
        self._events.extend(made)
        return made

    def record(self, event, result):
        """Record ``event`` on the stream once the device has made ``result``; no wait on the host."""
        self._wait_for(result, self._stream.value)
        code = self._record(event, self._stream)
        if code != 0:
            raise CudaError("cuEventRecord failed with CUDA error %d" % code)

    def wait(self, event):
        """Block the host until ``event`` has completed on the device."""
        self._call("cuEventSynchronize", event)

    def seconds(self, start, end):
        """Device seconds from ``start`` to ``end`` (two completed events of this clock)."""
        ms = ctypes.c_float()
        self._call("cuEventElapsedTime", ctypes.byref(ms), start, end)
        return ms.value / 1000.0

    def forget(self, events):
        """Destroy ``events`` (completed ones: after ``wait`` on the last)."""
        for event in events:
            self._call("cuEventDestroy", event)
        self._events = [e for e in self._events if all(e is not f for f in events)]

    def close(self):
        """Destroy the events, the stream, and this clock's hold on the primary context."""
        self.forget(list(self._events))
        if self._stream.value:
            self._call("cuStreamSynchronize", self._stream)
            self._call("cuStreamDestroy", self._stream)
            self._stream = ctypes.c_void_p()
            self._call("cuDevicePrimaryCtxRelease", self._device)
