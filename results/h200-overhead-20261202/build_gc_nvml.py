"""The script behind build-gc-nvml.txt, run from the repository root on the H200 on 2026-12-02: FCN-S built on
the device and on the host, a full garbage collection before and after gc.freeze, NVML's set-up. See NOTES.md."""
import os, sys, time, gc
sys.path.insert(0, os.getcwd())
import torch
from benchmarks.overhead import make_job
from runner import adapters, telemetry
from runner.adapters import torch_adapter as ta
job = make_job("fcn", "fcn-s", 32, "fp32", "default", "cuda", 1, 2, 1)
for trial in range(3):
    for on_device in (True, False):
        if not on_device:
            saved = ta._made_on; ta._made_on = lambda d: ta._nothing()
        a = adapters.load(job); torch.cuda.synchronize(); t = time.perf_counter(); n = a.build(); torch.cuda.synchronize(); b = time.perf_counter() - t
        t = time.perf_counter(); a.release(); r = time.perf_counter() - t
        if not on_device: ta._made_on = saved
        print("FCN-S build on %s: %.3f s (%d parameters); release %.3f s" % ("device" if on_device else "host", b, n, r))
t = time.perf_counter(); gc.collect(); print("gc.collect %.3f s with %d objects" % (time.perf_counter() - t, len(gc.get_objects())))
gc.freeze(); t = time.perf_counter(); gc.collect(); print("gc.collect after freeze %.4f s" % (time.perf_counter() - t))
for i in range(4):
    t = time.perf_counter(); s = telemetry.Sampler.for_job({"device": "cuda"}); t1 = time.perf_counter(); s.start(); s.stop(); t2 = time.perf_counter(); s.close(); t3 = time.perf_counter()
    print("sampler for_job %.4f s, start+stop %.4f s, close %.4f s" % (t1 - t, t2 - t1, t3 - t2))
