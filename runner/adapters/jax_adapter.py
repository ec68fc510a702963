"""JAX adapter (plain jax + optax): the layer list as pure functions (runner.adapters.jax_layers), one jitted
training step.

Our addition beyond the studies. The whole training step (dropout key split, forward, backward, optax update) is
one ``jax.jit``-compiled XLA program, so XLA is on by construction (recorded). Images are NHWC with HWIO kernels on
the CPU, where XLA's convolutions run fastest so, and NCHW with OIHW kernels on GPUs (recorded as the layout;
job["layout"] "channels_last" asks for NHWC on GPUs too). Dense weights are (in, out), multiplied as ``x @ w``, as
flax keeps them (runner.adapters.jax_layers; the (out, in) layout with ``x @ w.T`` made FCN-S's step 7-8% slower on
an H100, and 7.6 times slower at batch 64, where XLA fused the last layer's weight gradient and update into one
Triton kernel: results/study-parity-20261206/jax-fcn-s.md). Precision "fp32" sets the default matmul precision to
"highest" (true fp32: JAX's own default on GPUs with TF32 is TF32-like); "tf32" sets "tensorfloat32". "bf16" is
mixed precision as jmp's policy (param_dtype float32, compute_dtype bfloat16, output_dtype float32) and flax's
layers run it: the master parameters, the optimizer state and the batch-norm running statistics stay float32; the
parameters and the floating inputs are cast to bfloat16 inside the compiled step for the forward and backward pass
(token ids stay integers); batch norm takes its statistics and normalises in float32 and hands bfloat16 on; the
logits are cast to float32 for the loss and its reduction; the cast's gradient brings the gradients back in float32
for the optax update. Every matrix product and convolution then has bfloat16 operands (float32 accumulation), so the
matmul precision is left at "default" (the flag decides how float32 operands are computed; none remain). Recorded
as environment compute_dtype and parameter_dtypes. fp16 is refused: it needs loss scaling, which optax does not
have.

Timed step (``train_step``): one call of the compiled program, as a plain JAX training loop makes it. The dropout
key is split inside the program and carried out of it (no host-side ``jax.random.split``, a dispatched
computation of its own between steps), and the parameters, state, optimizer state and key are donated to it
(``donate_argnums``: XLA writes the new values into the old buffers, so no buffer is allocated and freed per step).
The loss stays on the device. On a GPU the measured repeats are timed by CUDA events that wait for each step's loss
(``device_clock``; runner.adapters.cuda_clock).
"""

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from runner import shapes
from runner.adapters import UnsupportedError, base, cuda_clock
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets, test_metrics
from runner.adapters.jax_layers import Builder

DONATED = (0, 1, 2, 3)  # the step's parameters, state, optimizer state and key: each replaced by its output


def _loss(loss):
    """The job's loss on logits; see the torch adapter for the reductions."""
    if loss["name"] == "sigmoid_binary_cross_entropy":
        return lambda out, y: optax.sigmoid_binary_cross_entropy(out, y).mean()
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("jax adapter has no loss %r" % loss["name"])
    if loss.get("reduction", "mean") == "sum_over_time":
        return lambda out, y: optax.softmax_cross_entropy_with_integer_labels(out, y).sum() / y.shape[0]
    return lambda out, y: optax.softmax_cross_entropy_with_integer_labels(out, y).mean()


def _in_dtype(apply, dtype):
    """``apply`` computing in ``dtype``: the floating parameters and inputs cast to it on the way in (the cast's
    gradient casts back, so float32 parameters get float32 gradients); for float32, ``apply`` itself. The output
    comes back in ``dtype``."""
    if dtype == jnp.float32:
        return apply

    def cast(tree):
        return jax.tree_util.tree_map(lambda v: v.astype(dtype) if jnp.issubdtype(v.dtype, jnp.floating) else v, tree)

    return lambda params, state, x, train, rng: apply(cast(params), state, cast(x), train, rng)


def _objective(compute, loss_fn, state, x, y, rng):
    """f(params) -> (loss, new state) of one training forward pass, for jax.value_and_grad: the loss of the
    logits cast to float32 (a no-op for float32 jobs)."""

    def objective(params):
        out, new_state = compute(params, state, x, True, rng)
        return loss_fn(out.astype(jnp.float32), y), new_state

    return objective


def _optimizer(opt):
    chain = []
    if opt.get("clip_norm"):
        chain.append(optax.clip_by_global_norm(opt["clip_norm"]))
    if opt.get("weight_decay"):
        chain.append(optax.add_decayed_weights(opt["weight_decay"]))  # L2 on the gradients, as PyTorch's SGD
    if opt["name"] == "sgd":
        chain.append(optax.sgd(opt["lr"], momentum=opt.get("momentum") or None, nesterov=opt.get("nesterov", False)))
    elif opt["name"] == "adam":
        betas = opt.get("betas", (0.9, 0.999))
        chain.append(optax.adam(opt["lr"], b1=betas[0], b2=betas[1], eps=opt.get("eps", 1e-8)))
    else:
        raise UnsupportedError("jax adapter has no optimizer %r" % opt["name"])
    return optax.chain(*chain)


class Adapter(Base):
    name = "jax"
    dense_kernel_axes = base.IN_OUT  # dense weights (in, out), multiplied as x @ w (runner.adapters.jax_layers)

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        precision = job.get("precision", "fp32")
        # highest: no TF32 on GPUs; bf16: every product has bf16 operands, which "default" leaves as they are
        self.matmul_precision = {"tf32": "tensorfloat32", "bf16": "default"}.get(precision, "highest")
        self.compute_dtype = jnp.bfloat16 if precision == "bf16" else jnp.float32
        jax.config.update("jax_default_matmul_precision", self.matmul_precision)
        platform = "gpu" if job["device"] == "cuda" else "cpu"
        try:
            found = jax.devices(platform)
        except RuntimeError:
            raise UnsupportedError("the job asks for %s and JAX sees none" % platform)
        ranks = job.get("ranks")
        if ranks and len(found) < ranks:
            raise UnsupportedError("the job has %d ranks and JAX sees %d %s devices" % (ranks, len(found), platform))
        self.device, self.devices = found[0], found[:ranks] if ranks else None  # devices: the data-parallel ranks
        self.key = jax.device_put(jax.random.PRNGKey(job.get("seed", 0)), self.device)
        self.channels_last = platform == "cpu" or job.get("layout", "default") == "channels_last"
        self.conv_kernel_axes = base.HWIO if self.channels_last else base.OIHW  # the weights' layout, as the images'
        self.build_name = "jaxlib %s" % getattr(__import__("jaxlib"), "__version__", "?")
        self._clock = None

    def gpu_capability(self):
        """(GPU name, compute capability "X.Y") of the job's GPU; None on the CPU or when JAX does not say."""
        capability = getattr(self.device, "compute_capability", None)
        if self.device.platform != "gpu" or not capability:
            return None
        return getattr(self.device, "device_kind", "GPU"), str(capability)

    def environment(self):
        import jaxlib

        return {
            "framework": "jax",
            "framework_version": jax.__version__,
            "jaxlib": jaxlib.__version__,
            "optax": optax.__version__,
            "device": str(self.device),
            "platform": self.device.platform,
            "xla": True,
            "matmul_precision": self.matmul_precision,
            "compute_dtype": jnp.dtype(self.compute_dtype).name,
            "parameter_dtypes": sorted({v.dtype.name for v in jax.tree_util.tree_leaves(self.params)}),
            "layout": "NHWC" if self.channels_last else "NCHW",
            "threads": self.job.get("threads"),
            "xla_flags": os.environ.get("XLA_FLAGS"),
            "cudnn_autotune": "--xla_gpu_autotune_level=0" not in (os.environ.get("XLA_FLAGS") or "")
            if self.job["device"] == "cuda"
            else None,
            "cuda": None,
            "cudnn": None,
            "data_parallel": {
                "how": "shard_map over local devices, lax.pmean of the gradients",
                "world_size": len(self.devices),
                "devices": [str(d) for d in self.devices],
            }
            if self.devices
            else None,
        }

    def build(self):
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        self.builder = Builder(
            model.get("init", {"scheme": "default"}),
            self.job.get("rank_batch_size") or self.job["batch_size"],
            self.channels_last,
        )
        init, apply = self.builder.sequence(layers, tuple(model["input_shape"]), "net")
        self.key, key = jax.random.split(self.key)
        if self.job["mode"] == "parameters":  # the count only: the shapes and dtypes ``init`` gives, no value drawn
            self.params, self.state = jax.eval_shape(init, key)
            return _count(self.params)
        self.params, self.state = jax.device_put(init(key), self.device)
        self.compute = _in_dtype(apply, self.compute_dtype)  # (params, state, x, train, rng) -> (output, state)
        compute, loss_fn = self.compute, _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}))
        opt = self.job.get("optimizer")
        if opt:
            self.tx = _optimizer(opt)
            # committed to the device like everything else: an uncommitted array (Adam's step count)
            # would come back committed from the first step and make jit compile the step twice
            self.opt_state = jax.device_put(self.tx.init(self.params), self.device)

            def step(params, state, opt_state, key, x, y):
                key, rng = jax.random.split(key)
                objective = _objective(compute, loss_fn, state, x, y, rng)
                (loss, new_state), grads = jax.value_and_grad(objective, has_aux=True)(params)
                updates, opt_state = self.tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), new_state, opt_state, key, loss

            self._step = jax.jit(step, donate_argnums=DONATED)
            if self.devices:
                self._parallel(compute, loss_fn)

        def forward(params, state, x):
            out, state = compute(params, state, x, False, jax.random.PRNGKey(0))
            return out.astype(jnp.float32), state

        self._forward = jax.jit(forward)
        return _count(self.params)

    def _parallel(self, compute, loss_fn):
        """The data-parallel step: the parameters replicated on every device, the total mini-batch split along
        its first axis (one shard per device), the step run per shard with shard_map and the gradients (and
        batch-norm statistics, and the loss) averaged with lax.pmean, so every copy takes the same update."""
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        mesh = Mesh(np.array(self.devices), ("ranks",))
        self.replicated, self.split = NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("ranks"))

        def step(params, state, opt_state, key, x, y):
            key, rng = jax.random.split(key)  # the same on every rank; each folds its index into its dropout key
            objective = _objective(compute, loss_fn, state, x, y, jax.random.fold_in(rng, lax.axis_index("ranks")))
            (loss, new_state), grads = jax.value_and_grad(objective, has_aux=True)(params)
            grads, new_state = lax.pmean(grads, "ranks"), lax.pmean(new_state, "ranks")
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), new_state, opt_state, key, lax.pmean(loss, "ranks")

        whole, shard = PartitionSpec(), PartitionSpec("ranks")
        # check_vma off: each shard's gradient is its own (with it on, autodiff would already sum the shards'
        # gradients of the replicated parameters), and lax.pmean makes the mean that a whole mini-batch gives
        self._step = jax.jit(
            jax.shard_map(
                step,
                mesh=mesh,
                in_specs=(whole, whole, whole, whole, shard, shard),
                out_specs=(whole,) * 5,
                check_vma=False,
            ),
            donate_argnums=DONATED,
        )
        self.params, self.state, self.opt_state, self.key = jax.device_put(
            (self.params, self.state, self.opt_state, self.key), self.replicated
        )

    def shard(self, x, y):
        """The whole total mini-batch: one process drives every rank's device, and ``_put`` splits it."""
        return x, y

    def parameters(self):
        return [np.array(v) for v in jax.tree_util.tree_leaves(self.params)]

    def _input(self, x):
        if x.ndim == 4 and self.channels_last:
            x = np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        return self._put(x)

    def _put(self, array):
        """On the job's device; a data-parallel job's total mini-batch split along its first axis over the ranks'
        devices (rank r: rows r*b .. (r+1)*b, as runner.adapters.base ``shard``)."""
        return jax.device_put(array, self.split if self.devices else self.device)

    def to_device(self, x, y):
        return self._input(x), self._put(y)

    def release(self):
        """Drop the parameters, the device clock and XLA's compiled executables, which would serve the next job's
        step."""
        if self.__dict__.get("_clock") is not None:
            self._clock.close()
        super(Adapter, self).release()
        jax.clear_caches()

    def reset_state(self):
        """Carried recurrent state back to zeros (the tree keeps its shape, so nothing is recompiled)."""
        if self.devices:  # a data-parallel job's replicated state: its jobs time steps, they carry nothing across
            return

        def clear(tree):
            if isinstance(tree, dict):
                return {
                    k: (jax.tree_util.tree_map(jnp.zeros_like, v) if k == "carry" and v is not None else clear(v))
                    for k, v in tree.items()
                }
            return tree

        self.state = jax.device_put(clear(self.state), self.device)

    def train_step(self, x, y):
        self.params, self.state, self.opt_state, self.key, loss = self._step(
            self.params, self.state, self.opt_state, self.key, x, y
        )
        return loss

    def device_clock(self):
        """On a GPU, CUDA events on a stream of the runner's own made to wait for each step's loss
        (runner.adapters.cuda_clock); None on the CPU, for a data-parallel job (its step spans several devices),
        or where the CUDA driver cannot be reached (the reason goes to the job's log)."""
        if self.device.platform != "gpu" or self.devices:
            return None
        if self._clock is None:
            try:
                self._clock = cuda_clock.StreamClock(
                    self.device.local_hardware_id, lambda result, stream: result.__dlpack__(stream=stream)
                )
            except cuda_clock.CudaError as exc:
                sys.stderr.write("jax adapter: no device clock (%s); the repeats' pipelined wall time is taken\n" % exc)
                return None
        return self._clock

    def synchronize(self):
        jax.block_until_ready(self.params)

    def infer(self, x):
        return np.asarray(self._forward(self.params, self.state, self._input(x))[0])

    def evaluate(self, batches, target):
        correct = total = 0
        loss_sum = 0.0
        state = self.state
        for x, y in batches:
            out, state = self._forward(self.params, state, self._input(x))
            out = np.asarray(out)
            if target == "multilabel":
                loss_sum += float(optax.sigmoid_binary_cross_entropy(out, y).sum())
                total += y.size
                continue
            flat, labels = out.reshape(-1, out.shape[-1]), y.reshape(-1)
            loss_sum += float(optax.softmax_cross_entropy_with_integer_labels(flat, labels).sum())
            correct += int((flat.argmax(axis=1) == labels).sum())
            total += labels.size
        return test_metrics(target, loss_sum, correct, total)

    def _weight_layers(self):
        """Each named layer's parameter and state dicts, in host copies of the trees that _weights_loaded puts back."""
        self.params, self.state = jax.device_get(self.params), jax.device_get(self.state)
        return dict(
            (name, (_at(self.params, path), _at(self.state, path))) for name, path in self.builder.named.items()
        )

    def _weight_targets(self, layer):
        params, state = layer
        if "running_mean" in state:
            return batchnorm_targets(
                (params, "weight"), (params, "bias"), (state, "running_mean"), (state, "running_var")
            )
        return kernel_targets((params, "weight"), (params, "bias") if "bias" in params else None)

    def _weight_shape(self, target):
        tree, key = target
        return tree[key].shape

    def _set_weight(self, target, array):
        tree, key = target
        tree[key] = np.asarray(array)

    def _weights_loaded(self, layers):
        self.params, self.state = jax.device_put((self.params, self.state), self.device)


def _count(params):
    """The number of values in a parameter tree (of arrays, or of jax.ShapeDtypeStruct from jax.eval_shape)."""
    return int(sum(v.size for v in jax.tree_util.tree_leaves(params)))


def _at(tree, path):
    """The sub-dict of a parameter or state tree at a builder path ("net/4/body/0")."""
    for part in path.split("/")[1:]:
        tree = tree[part]
    return tree
