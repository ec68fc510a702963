"""The script behind lstm-parts-2.json (lstm-parts-1.json: the same without the lazy-event side and the
record-cost lines), run from the repository root on the H200 on 2026-12-02: the LSTM b128's parts in paired
blocks (benchmarks/overhead.py's design), with more sides than its --parts. See NOTES.md."""
import json, os, statistics, subprocess, sys, threading, time
sys.path.insert(0, os.getcwd())
import torch
from benchmarks import overhead as ov
from runner import adapters

ROUNDS = int(os.environ.get("ROUNDS", "80"))
job = ov.make_job("lstm", "lstm-synthetic", 128, "fp32", "default", "cuda", 3, 20, 1)
a = adapters.load(job); a.build(); ov.bare(a, dict(job, warmup=10, repeats=0))
CHILD = r'''
import sys, time, select, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); rows = []; go = False; interval = float(sys.argv[1])
while True:
    r, _, _ = select.select([sys.stdin], [], [], interval if go else None)
    if r:
        line = sys.stdin.readline()
        if not line: break
        if line.startswith("go"): go = True
        elif line.startswith("stop"):
            go = False; sys.stdout.write("%d\n" % len(rows)); sys.stdout.flush(); rows = []
        continue
    rows.append((time.monotonic(), pynvml.nvmlDeviceGetClockInfo(h, 0), pynvml.nvmlDeviceGetClockInfo(h, 2),
                 pynvml.nvmlDeviceGetPowerUsage(h), pynvml.nvmlDeviceGetTemperature(h, 0),
                 pynvml.nvmlDeviceGetUtilizationRates(h).gpu, pynvml.nvmlDeviceGetCurrentClocksEventReasons(h)))
'''
child = subprocess.Popen([sys.executable, "-c", CHILD, "0.025"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         universal_newlines=True, bufsize=1)
counts = []
def with_child():
    child.stdin.write("go\n"); child.stdin.flush()
    v = ov.bare(a, job)
    child.stdin.write("stop\n"); child.stdin.flush(); counts.append(int(child.stdout.readline()))
    return v
def with_sleeper():
    stop = threading.Event()
    def run():
        while not stop.wait(0.025):
            sum(range(50))
    t = threading.Thread(target=run); t.start()
    try: return ov.bare(a, job)
    finally: stop.set(); t.join()
def lazy_events():  # the timer before this change: each event made by its first record, inside the loop
    from runner import data as datamod
    x, y = a.to_device(*datamod.synthetic_batch(job["model"], job["batch_size"], job["data"]["seed"]))
    def step():
        a.optimizer.zero_grad(set_to_none=True)
        loss = a.loss_fn(a.model(x), y); loss.backward()
        torch.nn.utils.clip_grad_norm_(a.model.parameters(), 5.0); a.optimizer.step()
    for _ in range(job["warmup"]): step()
    torch.cuda.synchronize()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(job["iterations"])]
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); s.synchronize()
    e.record(); e.synchronize()
    s.record()
    for i in range(job["iterations"]):
        step(); marks[i].record()
    e.record(); e.synchronize()
    return s.elapsed_time(e) / 1e3 / job["iterations"]
def record_cost():
    out = []
    for lazy in (True, False):
        evs = [torch.cuda.Event(enable_timing=True) for _ in range(2000)]
        if not lazy:
            for ev in evs: ev.record()
            torch.cuda.synchronize()
        t = time.perf_counter()
        for ev in evs: ev.record()
        out.append((time.perf_counter() - t) / 2000 * 1e6)
        torch.cuda.synchronize()
    return out
print("host microseconds per event record: first record (creates) %.2f, later record %.2f" % tuple(record_cost()))
print("again: %.2f, %.2f" % tuple(record_cost()))
sides = {"bare+events-lazy": lazy_events, "bare": lambda: ov.bare(a, job), "suite": lambda: ov.suite(a, job)[0],
         "bare+events": lambda: ov.bare(a, job, events=True), "bare+telemetry": lambda: ov.bare(a, job, telemetry=True),
         "bare+child": with_child, "bare+sleeper": with_sleeper, "suite-nowindow": lambda: ov.suite(a, job, False)[0]}
found = dict((k, []) for k in sides); order = list(sides); probes = []
t0 = time.time()
for r in range(ROUNDS):
    probes.append(ov.host_probe())
    for k in (order if r % 2 == 0 else order[::-1]):
        found[k].append(sides[k]())
print("%d rounds, %.0f s; child samples per block %s; host probe %.1f-%.1f ms" % (ROUNDS, time.time() - t0, sorted(counts)[len(counts)//2], sorted(probes)[ROUNDS//10]*1e3, sorted(probes)[ROUNDS*9//10]*1e3))
for k in order:
    p = ov.paired(found[k], found["bare"])
    print("%-16s %7.3f ms  ratio %.4f %s" % (k, statistics.median(found[k]) * 1e3, p["ratio"], ov._interval(p)))
json.dump(dict(found, probes=probes), open(os.path.join(os.environ.get("OUT", "/tmp"), "parts.json"), "w"))
child.stdin.close(); child.wait()
