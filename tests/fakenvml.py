"""A stand-in for nvidia-ml-py's pynvml, for the telemetry tests: used directly in the test's process (the
window's edge readings) and, by import name (SOURCE), in the sampling process runner.telemetry starts, which
reads its clock event reasons and whether NVML opens from the environment the test set (``sampler``)."""
import os
import types

from runner import telemetry

SOURCE = "tests.fakenvml:NVML"
REASONS = "DLREPRO_FAKE_NVML_REASONS"  # the sampling process's reasons, comma-separated bit masks
BROKEN = "DLREPRO_FAKE_NVML_BROKEN"  # set: its nvmlInit fails, as on a host without the NVIDIA driver


class FakeNvml(object):
    NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 0, 2, 0

    def __init__(self, reasons, broken=False):
        self.reasons, self.calls, self.broken = list(reasons), 0, broken

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


NVML = FakeNvml([int(mask) for mask in os.environ.get(REASONS, "0").split(",")], broken=BROKEN in os.environ)


def sampler(nvml, interval_s=0.025, broken=False):
    """A telemetry.Sampler of one fake GPU: ``nvml`` (a FakeNvml) gives the edge readings, and the sampling
    process a FakeNvml with the same reasons (``broken``: one whose NVML does not open). The environment it sets
    is put back after the test (tests/conftest.py)."""
    os.environ[REASONS] = ",".join(str(mask) for mask in nvml.reasons)
    if broken:
        os.environ[BROKEN] = "1"
    found = telemetry.Sampler(interval_s=interval_s, nvml=nvml, source=SOURCE)
    found.handle = "handle0"
    found.device = found._describe(0)
    return found
