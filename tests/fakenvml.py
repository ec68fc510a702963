"""A stand-in for nvidia-ml-py's pynvml, for the telemetry tests: used directly in the test's process (the
window's edge readings) and, by import name (SOURCE), in the sampling process runner.sampling starts, which
reads its clock event reasons and whether NVML opens from the environment the test set (``sampler``)."""

import os
import sys
import types

from runner import telemetry

SOURCE = "tests.fakenvml:NVML"
REASONS = "DLREPRO_FAKE_NVML_REASONS"  # the sampling process's reasons, comma-separated bit masks
BROKEN = "DLREPRO_FAKE_NVML_BROKEN"  # set: its nvmlInit fails, as on a host without the NVIDIA driver
BANNER = "DLREPRO_FAKE_NVML_BANNER"  # set: it prints this line on standard output as it is imported
LOST = "DLREPRO_FAKE_NVML_LOST"  # set: its first power reading ends the process, as a lost GPU can


class FakeNvml(object):
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0

    def __init__(self, reasons, broken=False, lost=False):
        self.reasons, self.calls, self.broken, self.lost = list(reasons), 0, broken, lost

    def nvmlInit(self):
        if self.broken:
            raise RuntimeError("NVML Shared Library Not Found")

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, index):
        return "handle%d" % index

    def nvmlDeviceGetName(self, h):
        return "NVIDIA H200"

    def nvmlSystemGetDriverVersion(self):
        return "580.95.05"

    def nvmlDeviceGetEnforcedPowerLimit(self, h):
        return 700000

    def nvmlDeviceGetClockInfo(self, h, kind):
        return 1980 if kind == 0 else 3201

    def nvmlDeviceGetPowerUsage(self, h):
        if self.lost:
            sys.stderr.write("NVMLError_GpuIsLost: GPU is lost\n")
            sys.stderr.flush()
            os._exit(3)
        return 650000

    def nvmlDeviceGetTemperature(self, h, kind):
        return 55

    def nvmlDeviceGetUtilizationRates(self, h):
        return types.SimpleNamespace(gpu=100, memory=60)

    def nvmlDeviceGetCurrentClocksEventReasons(self, h):
        self.calls += 1
        return self.reasons[min(self.calls, len(self.reasons)) - 1]

    def nvmlDeviceGetViolationStatus(self, h, policy):
        raise RuntimeError("not supported")  # read as unknown, never fails the job


if BANNER in os.environ:
    print(os.environ[BANNER])
NVML = FakeNvml(
    [int(mask) for mask in os.environ.get(REASONS, "0").split(",")],
    broken=BROKEN in os.environ,
    lost=LOST in os.environ,
)


def sampler(nvml, interval_s=0.025, broken=False, banner=None, lost=False):
    """A telemetry.Sampler of one fake GPU: ``nvml`` (a FakeNvml) gives the edge readings, and the sampling
    process a FakeNvml with the same reasons (``broken``: one whose NVML does not open; ``banner``: a line it
    prints as it is imported; ``lost``: one that ends at its first reading). The environment it sets is put back
    after the test (tests/conftest.py)."""
    os.environ[REASONS] = ",".join(str(mask) for mask in nvml.reasons)
    for name, value in ((BROKEN, broken and "1"), (BANNER, banner), (LOST, lost and "1")):
        if value:
            os.environ[name] = value
    found = telemetry.Sampler(interval_s=interval_s, nvml=nvml, source=SOURCE)
    found.handle = "handle0"
    found.device = found._describe(0)
    return found
