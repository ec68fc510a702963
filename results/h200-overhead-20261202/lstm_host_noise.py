"""The script behind lstm-host-noise.json, run from the repository root on the H200 on 2026-12-02 (before
benchmarks/overhead.py's paired blocks): rounds of one repeat per side in random order, a pure-Python probe
of the host's speed beside them. See NOTES.md."""
import json, os, random, statistics, subprocess, sys, threading, time
sys.path.insert(0, os.getcwd())
import torch
from benchmarks.overhead import make_job
from runner import adapters, measure, telemetry, window as windowmod, data as datamod

ITER = int(os.environ.get("ITER", "60")); ROUNDS = int(os.environ.get("ROUNDS", "30"))
job = make_job("lstm", "lstm-synthetic", int(os.environ.get("BATCH", "128")), "fp32", "default", "cuda", 5, ITER, 1)
a = adapters.load(job); a.build()
x, y = datamod.synthetic_batch(job["model"], job["batch_size"], job["data"]["seed"]); x, y = a.to_device(x, y)
model, opt, loss_fn, clip = a.model, a.optimizer, a.loss_fn, 5.0

def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()

def bare_loop(events=False):
    for _ in range(5): step()
    torch.cuda.synchronize()
    marks = [torch.cuda.Event(enable_timing=True) for _ in range(ITER)] if events else None
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for i in range(ITER):
        step()
        if marks: marks[i].record()
    e.record(); e.synchronize()
    return s.elapsed_time(e) / 1e3 / ITER

CHILD = r'''
import sys, time, select, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0); rows = []
go = False; interval = float(sys.argv[1])
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

def with_child():
    child.stdin.write("go\n"); child.stdin.flush()
    v = bare_loop()
    child.stdin.write("stop\n"); child.stdin.flush(); n = int(child.stdout.readline())
    return v

def with_thread():
    s = telemetry.Sampler.for_job(job); s.start()
    try: return bare_loop()
    finally: s.close()

def with_sleeper():  # a thread that wakes at 40 Hz and does a little Python, no NVML
    stop = threading.Event()
    def run():
        while not stop.wait(0.025):
            sum(range(50))
    t = threading.Thread(target=run); t.start()
    try: return bare_loop()
    finally: stop.set(); t.join()

def with_thread_1hz():
    s = telemetry.Sampler.for_job(job, interval_s=1.0); s.start()
    try: return bare_loop()
    finally: s.close()

def suite(window=True):
    j = dict(job, warmup=5, iterations=ITER, repeats=1)
    w = windowmod.Window.for_job(j) if window else None
    try:
        timing, _ = measure.throughput(a, j, None, w)
    finally:
        if w: w.close()
    return statistics.fmean(timing["repeats"][0])

def pyloop():  # host CPU speed, no GPU
    t = time.perf_counter(); s = 0
    for i in range(300000): s += i * i
    return time.perf_counter() - t

SIDES = {"bare": bare_loop, "bare+events": lambda: bare_loop(True), "bare+thread40Hz": with_thread,
         "bare+thread1Hz": with_thread_1hz, "bare+sleeper40Hz": with_sleeper, "bare+child40Hz": with_child,
         "suite": suite, "suite-nowindow": lambda: suite(False), "python-loop": pyloop}
for _ in range(3): bare_loop()
found = dict((k, []) for k in SIDES)
rng = random.Random(7)
t0 = time.time()
for r in range(ROUNDS):
    order = list(SIDES); rng.shuffle(order)
    for k in order: found[k].append(SIDES[k]())
print("cpus %s loadavg %s, %.0f s, %d rounds of %d iterations, batch %d" % (len(os.sched_getaffinity(0)), os.getloadavg(), time.time() - t0, ROUNDS, ITER, job["batch_size"]))
b = found["bare"]
for k, v in found.items():
    ratios = sorted(s / q for s, q in zip(v, b))
    n = len(ratios)
    print("%-18s median %8.3f ms  p10 %8.3f p90 %8.3f  ratio-to-bare median %.4f  [q25 %.4f, q75 %.4f]" % (
        k, statistics.median(v) * 1e3, sorted(v)[n // 10] * 1e3, sorted(v)[n * 9 // 10] * 1e3,
        statistics.median(ratios), ratios[n // 4], ratios[3 * n // 4]))
out = os.environ.get("OUT", "/tmp")
json.dump(found, open(os.path.join(out, "lstm_gap_b%d.json" % job["batch_size"]), "w"))
child.stdin.close(); child.wait()
