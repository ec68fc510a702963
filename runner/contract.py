"""The two JSON contracts between host and runner, in one place.

job.json (host -> runner), schema ``dlrepro.job/1``:
  schema, id, spec {name, sha256}, variant, framework, device ("cpu" | "cuda"; a cuda job sees its one
  GPU as device 0), mode ("throughput" | "convergence" | "inference" | "parameters": the model built, its
  parameters counted and checked, nothing run),
  model {name, input_shape [C, H, W] | [F] | [T], input_kind ("dense" | "tokens"), target ("class" |
  "sequence" | "multilabel"), classes, layers (runner.shapes), init {scheme ("default" | "xavier" |
  "glorot_uniform" | "uniform"), scale}, parameters (expected count)},
  data {kind: "synthetic", seed} | {kind: "dataset", name, candidates, format, files {role: sha256}, scale,
  subtract_mean, options {vocab, maxlen}},
  weights (null | {name, format, files {role: sha256}, layout, top1}),
  optimizer (null for inference | {name: "sgd" | "adam", lr, momentum, nesterov, weight_decay, betas, eps,
  clip_norm}), loss {name: "softmax_cross_entropy" | "sigmoid_binary_cross_entropy", reduction: "mean" |
  "sum_over_time"}, batch_size, warmup, iterations, repeats (throughput), epochs,
  max_iterations_per_epoch, test_complete_batches, test_batch_size (convergence: the evaluation's mini-batch size,
  null or missing: batch_size; test_complete_batches still cuts the test set by batch_size), inference_batches,
  untimed_passes (inference), threads (null: the framework's choice), seed, timeout_s, and the measurement options
  (OPTION_DEFAULTS; a runner takes a missing one as its default):
    precision      "fp32" | "tf32" | "bf16" | "fp16". "fp32" is true fp32: TF32 off for matrix products
                   AND convolutions. The studies' GPUs (K80, P100, GTX 1080) had no TF32, so this is the
                   faithful default; note that frameworks' own defaults differ on TF32-capable GPUs
                   (Ampere and later): PyTorch lets cuDNN convolutions use TF32 by default
                   (torch.backends.cudnn.allow_tf32 = True) but not matmuls (cuda.matmul.allow_tf32 =
                   False); TensorFlow enables TF32 for both by default; JAX's default matmul precision
                   on GPUs is TF32-like. "tf32": TF32 on for both. "bf16" / "fp16": automatic mixed
                   precision (torch.autocast; fp16 with a gradient scaler), parameters and optimizer in
                   fp32, TF32 off for what stays fp32. JAX runs "bf16" (not "fp16") the same way:
                   parameters and inputs cast to bfloat16 in the step, loss and update in float32.
    cudnn_autotune true (default; DLF's lesson 3) | false: cuDNN picks algorithms by benchmarking.
    layout         "default" (the adapter's: NCHW in PyTorch; see each adapter) | "channels_last"
                   (NHWC memory layout of images and convolution weights).
    compile        false (default) | true: torch.compile the model (PyTorch only).
    cuda_graphs    false (default); no adapter captures CUDA graphs yet (true is refused).
    allow_ptx_jit  false (default) | true: run a CUDA job whose framework build has no kernels for the
                   GPU but PTX for an older architecture (the driver JIT-compiles it); marked ptx_jit.
    gradients      "pruned" (default) | "gate_op": "pruned" computes only the gradients the update reads
                   (tf.gradients); "gate_op" computes them as TensorFlow's optimizer.minimize() does by default
                   (gate_gradients=GATE_OP: each op's input gradients grouped, so the first layer's gradient
                   with respect to the mini-batch is computed too, unused), as DLBench's TensorFlow scripts did
                   (TensorFlow 1.x), or as Torch 7's nn backward does unless the first module's gradInput is nil,
                   as DLBench's Torch FCN scripts did (torch7).
    thread_pools   "all" (default) | "intra_op": how ``threads`` is applied. "all": every pool of the
                   framework and the BLAS/OpenMP variables get ``threads`` and the process is confined to that
                   many CPUs (runner.settings). "intra_op": only the intra-op pool and the BLAS/OpenMP
                   variables get it; TensorFlow's inter-op pool keeps its default and the process is not
                   confined, as DLBench's "N threads" were set (TensorFlow 1.x; torch7, whose one pool is
                   OpenMP's: the process not confined; cpu_usage says how many CPUs the job kept busy).
  cuda_archs (the image matrix's table of the architectures the build ships, for frameworks that
  cannot report it; [] = unknown), timer ("auto" | "device_events" | "pipelined_wall" | "host_sync"; see
  runner.measure).
  JOB_KEYS are the keys every runner needs; the others have defaults.

result.json (runner -> host), schema ``dlrepro.result/1``, rewritten after every repeat and epoch with
status "running" until the job ends:
  schema, job_id, status ("ok" | "failed" | "skipped" | "running"), reason, remedy, error {type, message,
  traceback},
  parameters {measured, expected}, weights {name, layers, values_loaded}, timing {quantity, timed_region,
  unit, samples_per_measurement, warmup_seconds, repeats [[seconds]], summary {n, median (the median of
  the repeat medians, point_estimate naming it; results without point_estimate: of every sample),
  pooled_median, point_estimate, q1, q3, iqr, mean, min, max, ci95, ci95_method, ci95_coverage, ci95_units,
  repeat_medians}: runner.stats, throughput, throughput_unit, ranks_joined (a data-parallel job's: the
  slowest rank per iteration, runner.rankjoin)}, loss {first, last},
  convergence {epochs [{epoch, iterations, seconds, cumulative_seconds, train_loss, loss_curve,
  test_accuracy | perplexity, ...}], total_seconds, test_batches, test_batch_size (the evaluation's mini-batch size),
  test_samples (the test samples each evaluation covers: rows of its mini-batches), final_test_accuracy,
  final_perplexity},
  inference {images, pass_seconds, seconds_per_1000_images, output_shape}, environment {..., prepared_data (a
  dataset job's: the SHA-256 of the host's prepared arrays it read, runner.data; null: it ran the loader itself),
  cpu {model, vendor, family, model_number, stepping, usable_cpus, usable_cores, flags, mhz}: runner.environment,
  process {variables, cpus, requested_threads, cpu_choice {rule, cpus [{cpu, package, core, node,
  siblings}]}}: runner.settings}, cpu_usage {wall_seconds, cpu_seconds, effective_parallelism, usable_cpus,
  excluded, method} and energy {status, joules, mean_w, seconds (the energy counters' window, s),
  measured_seconds (the measured window's, s; absent before issue 52, whose counters' window held the telemetry's
  own edge readings), method, note, excluded} over the measured window (runner.window; ``excluded``: what it
  left out), started, finished (UTC ISO 8601, milliseconds), phases {name: seconds since the
  job's process started: spawned, framework_imported, model_built, data_ready, warmup_done, measured_done,
  finished}, isolation ("process" | "worker": the job shared its process with the worker's earlier jobs),
  worker {id, jobs_before, held_bytes, started_for} (worker isolation: the worker that ran it, how many jobs
  it ran before, 0 in a fresh one, the memory it held as the job started, and why it was started:
  runner.worker, runner.supervise; None in a process of its own),
  attempt {number, host, executor} (written by the host when it takes the result).
  timing also has timer ("device_events" | "pipelined_wall" | "host_sync"), sample ("iteration": each value
  of repeats is one iteration; "repeat mean": one value per repeat, its wall time over its iterations,
  under "pipelined_wall"), iterations_per_repeat, lead_in {iterations, why} (the untimed iterations at each
  repeat's start) and repeat_wall_seconds (throughput; the lead-in included).
  options: the job's measurement options as above (precision, cudnn_autotune, layout, compile,
  cuda_graphs, allow_ptx_jit, gradients, thread_pools) plus ptx_jit (true: the GPU ran JIT-compiled PTX, not the build's
  own kernels). What each option did in the framework is in environment (tf32 {matmul, cudnn},
  autocast (torch), matmul_precision, compute_dtype, parameter_dtypes (jax), layout, cudnn_autotune, cuda_archs
  {archs, source, gpu, capability} of cuda jobs; gpu and capability "unknown", with a note, where the adapter cannot
  tell and nothing was checked).
  telemetry (runner.telemetry; cuda jobs): status "ok" | "unavailable", reason, window,
  interval_s, sampling (where the samples were read: a process of its own, or the window's edges only and
  why), device {nvml_index, name, uuid, pci_bus_id, driver, nvml_version, power_limit_w,
  max_sm_clock_mhz, max_memory_clock_mhz, persistence_mode}, samples {t_s, sm_clock_mhz,
  memory_clock_mhz, power_w, temperature_c, gpu_util_pct, memory_util_pct, reasons (NVML clock
  event bit masks)}, summary {field: {min, median, max}}, reasons_seen {name: samples},
  violation_s {power, thermal}, throttled (true: power cap, HW slowdown, SW/HW thermal or power
  brake held the clocks during the measured window; null when unavailable), throttle_reasons.
  A job that cannot run as asked here is "skipped" with reason and remedy (runner.archs.Refused).

The host writes results itself only for jobs that never reached a runner (skipped,
or a container that could not start) and uses ``new_result`` for that too.
"""

import datetime
import json
import os
import tempfile

JOB_SCHEMA = "dlrepro.job/1"
RESULT_SCHEMA = "dlrepro.result/1"
OPTION_DEFAULTS = {
    "precision": "fp32",
    "cudnn_autotune": True,
    "layout": "default",
    "compile": False,
    "cuda_graphs": False,
    "allow_ptx_jit": False,
    "gradients": "pruned",
    "thread_pools": "all",
}
GRADIENTS = ("pruned", "gate_op")
THREAD_POOLS = ("all", "intra_op")
PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
LAYOUTS = ("default", "channels_last")
JOB_KEYS = (
    "schema",
    "id",
    "framework",
    "device",
    "mode",
    "model",
    "data",
    "optimizer",
    "batch_size",
    "warmup",
    "iterations",
    "repeats",
    "epochs",
    "threads",
    "precision",
    "seed",
)


class ContractError(ValueError):
    """A job file does not follow the job contract."""


def utc_now(precise=False):
    """Current UTC time as ISO 8601 with a Z suffix, to the second (``precise``: to the millisecond)."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if not precise:
        return now.replace(microsecond=0).isoformat() + "Z"
    return now.isoformat(timespec="milliseconds") + "Z"


def check_job(job):
    """Raise ContractError unless ``job`` carries the schema version and keys this runner reads."""
    if job.get("schema") != JOB_SCHEMA:
        raise ContractError(
            "job schema %r is not %r: host and runner versions differ" % (job.get("schema"), JOB_SCHEMA)
        )
    missing = [k for k in JOB_KEYS if k not in job]
    if missing:
        raise ContractError("job %s lacks %s" % (job.get("id"), ", ".join(missing)))


def job_options(job):
    """The measurement options of ``job``, defaults filled in, plus ptx_jit (decided when the job runs); on the CPU
    cudnn_autotune is None: cuDNN takes no part."""
    options = dict((k, job.get(k, v)) for k, v in OPTION_DEFAULTS.items())
    options["ptx_jit"] = False
    if job.get("device") != "cuda":
        options["cudnn_autotune"] = None
    return options


def new_result(job_id, status, reason=None, remedy=None, error=None):
    """A result.json body with every top-level key present."""
    return {
        "schema": RESULT_SCHEMA,
        "job_id": job_id,
        "status": status,
        "reason": reason,
        "remedy": remedy,
        "error": error,
        "parameters": None,
        "timing": None,
        "loss": None,
        "convergence": None,
        "inference": None,
        "weights": None,
        "environment": {},
        "options": None,
        "telemetry": None,
        "cpu_usage": None,
        "energy": None,
        "started": None,
        "finished": None,
        "phases": {},
        "worker": None,
    }


def write_json(path, body):
    """Write ``body`` as JSON via a temporary file of this writer's own (``<name>.<random>.tmp`` beside it) and a
    rename, so readers never see half a file, even with several writers (processes, hosts) at once."""
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=os.path.dirname(path) or ".")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(body, f, indent=1, sort_keys=True)
            f.write("\n")
        os.chmod(tmp, 0o644)  # as open() would make it (mkstemp's file is the owner's only)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
