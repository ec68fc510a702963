"""Data-parallel training in the TensorFlow 2 adapter: ``tf.distribute.MirroredStrategy`` over the job's R devices
(``job["ranks"]``, runner.ranks), one process driving them all, as DLBench's TensorFlow scripts drove their GPUs'
towers from one process.

The devices: GPUs 0..R-1, or the one CPU split into R logical CPU devices (``configure``, before TensorFlow's runtime
starts; their ops share the process's intra-op pool, which the adapter sizes threads x R, as the process is confined
to threads x R CPUs: runner.settings). The model's and the optimizer's variables are created under the strategy's
scope: mirrored on every device, initialised once. A step (``step``): each replica runs forward and backward on its
shard of the total mini-batch (rank r: rows r*b .. (r+1)*b, b = job["rank_batch_size"]) with its mean loss divided by
R; the replicas' gradients are summed by the Keras optimizer's one all-reduce (NCCL on GPUs, a reduction to one device
and a broadcast back on the CPU), which is the whole mini-batch's mean-loss gradient, and it updates every device's
copy with that sum: PyTorch DistributedDataParallel's step, and the towers' (DLBench's TensorFlow scripts averaged
their towers' gradients before one update). Weight decay (L2, added to the gradients as in the one-device step) is
split evenly over the replicas' parts, so that their sum has it once; global-norm clipping needs the sum's norm before
the update, so a clipped step all-reduces the gradients once more to get it and scales every replica's part by the
factor ``tf.clip_by_global_norm`` would give the sum.
"""

import tensorflow as tf

from runner.adapters import UnsupportedError

SUM, MEAN = tf.distribute.ReduceOp.SUM, tf.distribute.ReduceOp.MEAN
ALL_REDUCE = {"cuda": "NcclAllReduce", "cpu": "ReductionToOneDevice"}  # tf.distribute's, by the job's device


def configure(job):
    """The job's R devices' names, before TensorFlow's runtime starts: GPUs "/GPU:0".. for a CUDA job, the CPU as R
    logical devices "/CPU:0".. for a CPU job. Raises UnsupportedError when a CUDA job has fewer GPUs than ranks, or
    when the process's runtime has already started with another number of CPU devices (an earlier job's)."""
    ranks = job["ranks"]
    if job["device"] == "cuda":
        found = len(tf.config.list_physical_devices("GPU"))
        if found < ranks:
            raise UnsupportedError("the job has %d ranks and TensorFlow sees %d GPUs" % (ranks, found))
        return ["/GPU:%d" % i for i in range(ranks)]
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * ranks)
    except RuntimeError:  # the runtime has started (an earlier job of this process): its devices stay as they are
        found = len(tf.config.list_logical_devices("CPU"))
        if found != ranks:
            raise UnsupportedError(
                "this process's TensorFlow runtime has %d CPU devices and the job %d ranks" % (found, ranks)
            )
    return ["/CPU:%d" % i for i in range(ranks)]


def strategy(devices, device):
    """The MirroredStrategy over ``devices`` (``configure``'s); its all-reduce: NCCL on GPUs (``device`` "cuda"),
    a reduction to one device and a broadcast back on the CPU."""
    return tf.distribute.MirroredStrategy(devices, cross_device_ops=getattr(tf.distribute, ALL_REDUCE[device])())


def distribute(mirrored, x, y):
    """Tensors ``x``, ``y`` of a total mini-batch (first axis R x b) as per-replica shards: replica r gets rows
    r*b .. (r+1)*b, on its device."""
    b = int(x.shape[0]) // mirrored.num_replicas_in_sync

    def shards(whole):
        def shard(context):
            r = context.replica_id_in_sync_group
            return tf.identity(whole[r * b : (r + 1) * b])

        return mirrored.experimental_distribute_values_from_function(shard)

    return shards(x), shards(y)


def step(mirrored, net, loss_fn, optimizer, decay, clip):
    """The data-parallel training step (module docstring): a function of per-replica (x, y) (``distribute``'s)
    that returns the total mini-batch's mean loss (a scalar tensor; the mean of the replicas' equal shards' mean
    losses). ``decay``: L2 weight decay (0: none), the sum's decay x parameter split evenly over the replicas;
    ``clip``: the global-norm bound of the summed gradients (None: none)."""
    ranks = mirrored.num_replicas_in_sync
    variables = net.trainable_variables

    def replica(x, y):
        with tf.GradientTape() as tape:  # the division too: the tape records only what runs inside it
            loss = loss_fn(net(x, training=True), y)
            share = loss / ranks
        grads = tape.gradient(share, variables)
        if decay:
            grads = [g + (decay / ranks) * v for g, v in zip(grads, variables)]
        if clip:  # the factor tf.clip_by_global_norm gives the sum, applied to each replica's part of it
            norm = tf.linalg.global_norm(tf.distribute.get_replica_context().all_reduce(SUM, grads))
            grads = [g * (clip / tf.maximum(norm, clip)) for g in grads]
        optimizer.apply_gradients(zip(grads, variables))  # in a replica: Keras sums them (one all-reduce)
        return loss

    @tf.function(jit_compile=False)
    def run(x, y):
        return mirrored.reduce(MEAN, mirrored.run(replica, args=(x, y)), axis=None)

    return run
