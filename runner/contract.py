"""The two JSON contracts between host and runner, in one place.

job.json (host -> runner), schema ``dlrepro.job/1``:
  schema, id, spec {name, sha256}, variant, framework, device ("cpu" | "cuda"; a cuda job sees its one
  GPU as device 0), mode ("throughput" | "convergence" | "inference"),
  model {name, input_shape [C, H, W] | [F] | [T], input_kind ("dense" | "tokens"), target ("class" |
  "sequence" | "multilabel"), classes, layers (runner.shapes), init {scheme ("default" | "xavier" |
  "glorot_uniform" | "uniform"), scale}, parameters (expected count)},
  data {kind: "synthetic", seed} | {kind: "dataset", name, candidates, format, files {role: sha256}, scale,
  subtract_mean, options {vocab, maxlen}},
  weights (null | {name, format, files {role: sha256}, layout, top1}),
  optimizer (null for inference | {name: "sgd" | "adam", lr, momentum, nesterov, weight_decay, betas, eps,
  clip_norm}), loss {name: "softmax_cross_entropy" | "sigmoid_binary_cross_entropy", reduction: "mean" |
  "sum_over_time"}, batch_size, warmup, iterations, repeats (throughput), epochs,
  max_iterations_per_epoch, test_complete_batches (convergence), inference_batches, untimed_passes
  (inference), threads (null: the framework's choice), precision ("fp32"), cudnn_autotune, seed, timeout_s.
  JOB_KEYS are the keys every runner needs; the others have defaults.

result.json (runner -> host), schema ``dlrepro.result/1``:
  schema, job_id, status ("ok" | "failed" | "skipped"), reason, remedy, error {type, message, traceback},
  parameters {measured, expected}, weights {name, layers, values_loaded}, timing {quantity, timed_region,
  unit, samples_per_measurement, warmup_seconds, repeats [[seconds]], summary {n, median, q1, q3, iqr,
  mean, min, max, ci95, repeat_medians}, throughput, throughput_unit}, loss {first, last},
  convergence {epochs [{epoch, iterations, seconds, cumulative_seconds, train_loss, loss_curve,
  test_accuracy | perplexity, ...}], total_seconds, test_batches, final_test_accuracy, final_perplexity},
  inference {images, pass_seconds, seconds_per_1000_images, output_shape}, environment {...},
  started, finished (UTC ISO 8601).

The host writes results itself only for jobs that never reached a runner (skipped,
or a container that could not start) and uses ``new_result`` for that too.
"""
import datetime
import json
import os

JOB_SCHEMA = "dlrepro.job/1"
RESULT_SCHEMA = "dlrepro.result/1"
JOB_KEYS = ("schema", "id", "framework", "device", "mode", "model", "data", "optimizer", "batch_size",
            "warmup", "iterations", "repeats", "epochs", "threads", "precision", "seed")


class ContractError(ValueError):
    """A job file does not follow the job contract."""


def utc_now():
    """Current UTC time as ISO 8601 with a Z suffix, to the second."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0, tzinfo=None)
    return now.isoformat() + "Z"


def check_job(job):
    """Raise ContractError unless ``job`` carries the schema version and keys this runner reads."""
    if job.get("schema") != JOB_SCHEMA:
        raise ContractError("job schema %r is not %r: host and runner versions differ"
                            % (job.get("schema"), JOB_SCHEMA))
    missing = [k for k in JOB_KEYS if k not in job]
    if missing:
        raise ContractError("job %s lacks %s" % (job.get("id"), ", ".join(missing)))


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
        "started": None,
        "finished": None,
    }


def write_json(path, body):
    """Write ``body`` as JSON via a temporary file and a rename, so readers never see half a file."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(body, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
