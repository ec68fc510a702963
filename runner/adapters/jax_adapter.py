"""JAX adapter (plain jax + optax): the layer list as pure functions, one jitted training step.

Our addition beyond the studies. Each layer is an (init, apply) pair over explicit
parameters and state (batch-norm running statistics, carried recurrent state); the
whole training step (forward, backward, optax update) is one ``jax.jit``-compiled XLA
program, so XLA is on by construction (recorded). Images are NHWC with HWIO kernels on
the CPU, where XLA's convolutions run fastest so, and NCHW with OIHW kernels on GPUs
(recorded as the layout; job["layout"] "channels_last" asks for NHWC on GPUs too). Precision
"fp32" sets the default matmul precision to "highest" (true fp32: JAX's own default on GPUs
with TF32 is TF32-like); "tf32" sets "tensorfloat32". "bf16" is mixed precision as jmp's policy
(param_dtype float32, compute_dtype bfloat16, output_dtype float32) and flax's layers run it: the
master parameters, the optimizer state and the batch-norm running statistics stay float32; the
parameters and the floating inputs are cast to bfloat16 inside the compiled step for the forward
and backward pass (token ids stay integers); batch norm takes its statistics and normalises in
float32 and hands bfloat16 on; the logits are cast to float32 for the loss and its reduction; the
cast's gradient brings the gradients back in float32 for the optax update. Every matrix product and
convolution then has bfloat16 operands (float32 accumulation), so the matmul precision is left at
"default" (the flag decides how float32 operands are computed; none remain). Recorded as
environment compute_dtype and parameter_dtypes. fp16 is refused: it needs loss scaling, which optax
does not have. Layers follow PyTorch's definitions and default initialisation
(U(-1/sqrt(fan_in), 1/sqrt(fan_in)); LSTM/GRU with two bias vectors, gates i, f, g, o and
r, z, n), so the counts equal the spec's. Caffe's ceil pooling pads the bottom and right;
averages divide by the window's cells inside the symmetric padding.

Timed step (``train_step``): one host-side ``jax.random.split`` of the dropout key (a tiny dispatched op;
the studies ran no JAX, so nothing is missing against them) and the one compiled program (forward,
backward, optax update). The loss stays on the device.
"""
import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax import lax

from runner import shapes
from runner.adapters import UnsupportedError, base
from runner.adapters.base import Adapter as Base, batchnorm_targets, kernel_targets, test_metrics


def _uniform(key, shape, bound):
    return jax.random.uniform(key, shape, jnp.float32, -bound, bound)


class Builder(object):
    """Turns layers into (init, apply) functions; remembers named layers' parameter paths."""

    def __init__(self, init, batch_size, channels_last):
        self.init_spec, self.batch_size, self.named, self.cl = init, batch_size, {}, channels_last

    def image(self, n, c, h, w):
        """A 4-tuple in the builder's image layout from its N, C, H, W parts."""
        return (n, h, w, c) if self.cl else (n, c, h, w)

    def weight_bound(self, fan_in, fan_out, default):
        scheme = self.init_spec["scheme"]
        if scheme == "xavier":
            return math.sqrt(3.0 / fan_in)
        if scheme == "glorot_uniform":
            return math.sqrt(6.0 / (fan_in + fan_out))
        if scheme == "uniform":
            return self.init_spec["scale"]
        return default

    def bias_bound(self, default):
        scheme = self.init_spec["scheme"]
        return {"xavier": 0.0, "glorot_uniform": 0.0, "uniform": self.init_spec.get("scale")}.get(scheme, default)

    def sequence(self, layers, shape, path):
        parts = [self.layer(layer, in_shape, "%s/%d" % (path, i))
                 for i, (layer, in_shape) in enumerate(shapes.inputs(layers, shape))]

        def init(key):  # parameters and state keyed by the layer's index in the list
            keys = jax.random.split(key, max(1, len(parts)))
            params, state = {}, {}
            for i, (k, (p_init, _, _)) in enumerate(zip(keys, parts)):
                params[str(i)], state[str(i)] = p_init(k)
            return params, state

        def apply(params, state, x, train, rng):
            new_state = {}
            for i, (_, p_apply, _) in enumerate(parts):
                x, new_state[str(i)] = p_apply(params[str(i)], state[str(i)], x, train, jax.random.fold_in(rng, i))
            return x, new_state
        return init, apply

    def layer(self, layer, shape, name):
        kind = layer["type"]
        if layer.get("name"):
            self.named[layer["name"]] = name
        none = lambda key: ({}, {})
        if kind == "conv":
            c, k, f = shape[0], layer["kernel"], layer["filters"]
            s, p, bias = layer.get("stride", 1), layer.get("pad", 0), layer.get("bias", True)
            fan_in = c * k * k
            wb, bb = self.weight_bound(fan_in, f * k * k, 1 / math.sqrt(fan_in)), self.bias_bound(1 / math.sqrt(fan_in))

            kernel_shape = (k, k, c, f) if self.cl else (f, c, k, k)
            numbers = ("NHWC", "HWIO", "NHWC") if self.cl else ("NCHW", "OIHW", "NCHW")
            bias_shape = self.image(1, f, 1, 1)

            def init(key):
                kw, kb = jax.random.split(key)
                params = {"weight": _uniform(kw, kernel_shape, wb)}
                if bias:
                    params["bias"] = _uniform(kb, (f,), bb)
                return params, {}

            def apply(params, state, x, train, rng):
                y = lax.conv_general_dilated(x, params["weight"], (s, s), [(p, p), (p, p)], dimension_numbers=numbers)
                return (y + params["bias"].reshape(bias_shape) if bias else y), state
            return init, apply, name
        if kind in ("maxpool", "avgpool"):
            k, s, p, ceil = layer["kernel"], layer.get("stride", layer["kernel"]), layer.get("pad", 0), layer.get("ceil", False)
            _, h, w = shape
            extra = [max(0, (shapes.pool_output(n, k, s, p, ceil) - 1) * s + k - n - 2 * p) for n in (h, w)]
            pads = self.image((0, 0), (0, 0), (p, p + extra[0]), (p, p + extra[1]))
            window, strides = self.image(1, 1, k, k), self.image(1, 1, s, s)
            cells = jnp.pad(jnp.ones(self.image(1, 1, h + 2 * p, w + 2 * p)),
                            self.image((0, 0), (0, 0), (0, extra[0]), (0, extra[1])))

            def apply(params, state, x, train, rng):
                if kind == "maxpool":
                    return lax.reduce_window(x, -jnp.inf, lax.max, window, strides, pads), state
                total = lax.reduce_window(x, 0.0, lax.add, window, strides, pads)
                counts = lax.reduce_window(cells, 0.0, lax.add, window, strides, "VALID")
                return total / counts.astype(x.dtype), state
            return none, apply, name
        if kind == "global_avgpool":
            axes = (1, 2) if self.cl else (2, 3)
            return none, lambda params, state, x, train, rng: (x.mean(axis=axes), state), name
        if kind == "batchnorm":
            c, eps, momentum = shape[0], layer.get("eps", 1e-5), layer.get("momentum", 0.1)
            axes = ((0, 1, 2) if self.cl else (0, 2, 3)) if len(shape) == 3 else (0,)
            bshape = self.image(1, c, 1, 1) if len(shape) == 3 else (1, c)

            def init(key):
                return ({"weight": jnp.ones((c,)), "bias": jnp.zeros((c,))},
                        {"running_mean": jnp.zeros((c,)), "running_var": jnp.ones((c,))})

            def apply(params, state, x, train, rng):
                xf = x.astype(jnp.float32)  # statistics and normalisation in float32 (bf16 jobs: bf16 in and out)
                if train:
                    mean, var = xf.mean(axis=axes), xf.var(axis=axes)
                    n = x.size // c
                    state = {"running_mean": (1 - momentum) * state["running_mean"] + momentum * mean,
                             "running_var": (1 - momentum) * state["running_var"] + momentum * var * n / (n - 1)}
                else:
                    mean, var = state["running_mean"], state["running_var"]
                y = (xf - mean.reshape(bshape)) / jnp.sqrt(var.reshape(bshape) + eps)
                return (y * params["weight"].reshape(bshape) + params["bias"].reshape(bshape)).astype(x.dtype), state
            return init, apply, name
        if kind == "dense":
            fan_in, units, bias = shape[-1], layer["units"], layer.get("bias", True)
            wb, bb = self.weight_bound(fan_in, units, 1 / math.sqrt(fan_in)), self.bias_bound(1 / math.sqrt(fan_in))

            def init(key):
                kw, kb = jax.random.split(key)
                params = {"weight": _uniform(kw, (units, fan_in), wb)}
                if bias:
                    params["bias"] = _uniform(kb, (units,), bb)
                return params, {}

            def apply(params, state, x, train, rng):
                y = x @ params["weight"].T
                return (y + params["bias"] if bias else y), state
            return init, apply, name
        if kind == "dropout":
            rate = layer["rate"]

            def apply(params, state, x, train, rng):
                if not train:
                    return x, state
                keep = jax.random.bernoulli(rng, 1.0 - rate, x.shape)
                return jnp.where(keep, x / (1.0 - rate), 0.0), state
            return none, apply, name
        if kind == "flatten":
            return none, lambda params, state, x, train, rng: (x.reshape((x.shape[0], -1)), state), name
        if kind in ("relu", "sigmoid", "tanh"):
            fn = {"relu": jax.nn.relu, "sigmoid": jax.nn.sigmoid, "tanh": jnp.tanh}[kind]
            return none, lambda params, state, x, train, rng: (fn(x), state), name
        if kind == "pad_channels":
            pads = self.image((0, 0), (0, layer["filters"] - shape[0]), (0, 0), (0, 0))
            return none, lambda params, state, x, train, rng: (jnp.pad(x, pads), state), name
        if kind == "residual":
            inner = shapes.apply_all(layer["body"], shape)[0]
            body = self.sequence(layer["body"], shape, name + "/body")
            short = self.sequence(layer.get("shortcut", []), shape, name + "/shortcut")
            after = self.sequence(layer.get("after", []), inner, name + "/after")

            def init(key):
                kb, ks, ka = jax.random.split(key, 3)
                parts = [f(k) for f, k in ((body[0], kb), (short[0], ks), (after[0], ka))]
                return ({"body": parts[0][0], "shortcut": parts[1][0], "after": parts[2][0]},
                        {"body": parts[0][1], "shortcut": parts[1][1], "after": parts[2][1]})

            def apply(params, state, x, train, rng):
                rb, rs, ra = jax.random.split(rng, 3)
                yb, sb = body[1](params["body"], state["body"], x, train, rb)
                ys, ss = short[1](params["shortcut"], state["shortcut"], x, train, rs)
                y, sa = after[1](params["after"], state["after"], yb + ys, train, ra)
                return y, {"body": sb, "shortcut": ss, "after": sa}
            return init, apply, name
        if kind == "concat":
            body = self.sequence(layer["body"], shape, name + "/body")

            def init(key):
                params, state = body[0](key)
                return {"body": params}, {"body": state}

            axis = -1 if self.cl else 1

            def apply(params, state, x, train, rng):
                y, s = body[1](params["body"], state["body"], x, train, rng)
                return jnp.concatenate([x, y], axis=axis), {"body": s}
            return init, apply, name
        if kind == "embedding":
            vocab, dim = layer["vocab"], layer["dim"]
            bound = self.init_spec["scale"] if self.init_spec["scheme"] == "uniform" else None

            def init(key):  # PyTorch's default: N(0, 1)
                table = _uniform(key, (vocab, dim), bound) if bound else jax.random.normal(key, (vocab, dim))
                return {"weight": table}, {}
            return init, lambda params, state, x, train, rng: (params["weight"][x], state), name
        if kind in ("lstm", "gru"):
            return self.recurrent_layer(kind, layer, shape, name)
        if kind == "last_step":
            return none, lambda params, state, x, train, rng: (x[:, -1], state), name
        raise UnsupportedError("jax adapter has no layer type %r" % kind)

    def recurrent_layer(self, kind, layer, shape, name):
        units, depth, stateful = layer["units"], layer.get("layers", 1), layer.get("stateful", False)
        gates = 4 if kind == "lstm" else 3
        widths = [shape[-1]] + [units] * (depth - 1)
        wb = self.weight_bound(units, units, 1 / math.sqrt(units)) if self.init_spec["scheme"] == "uniform" \
            else 1 / math.sqrt(units)
        zeros = lambda: [tuple(jnp.zeros((self.batch_size, units)) for _ in range(2 if kind == "lstm" else 1))
                         for _ in range(depth)]

        def init(key):
            params = []
            for width, k in zip(widths, jax.random.split(key, depth)):
                k1, k2, k3, k4 = jax.random.split(k, 4)
                params.append({"w_ih": _uniform(k1, (gates * units, width), wb), "w_hh": _uniform(k2, (gates * units, units), wb),
                               "b_ih": _uniform(k3, (gates * units,), wb), "b_hh": _uniform(k4, (gates * units,), wb)})
            return params, {"carry": zeros() if stateful else None}

        def cell(p, carry, x_t):
            if kind == "lstm":
                h, c = carry
                z = x_t @ p["w_ih"].T + p["b_ih"] + h @ p["w_hh"].T + p["b_hh"]
                i, f, g, o = jnp.split(z, 4, axis=-1)
                c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
                h = jax.nn.sigmoid(o) * jnp.tanh(c)
                return (h, c), h
            (h,) = carry
            xi, hh = x_t @ p["w_ih"].T + p["b_ih"], h @ p["w_hh"].T + p["b_hh"]
            xr, xz, xn = jnp.split(xi, 3, axis=-1)
            hr, hz, hn = jnp.split(hh, 3, axis=-1)
            r, z = jax.nn.sigmoid(xr + hr), jax.nn.sigmoid(xz + hz)
            n = jnp.tanh(xn + r * hn)
            h = (1 - z) * n + z * h
            return (h,), h

        def apply(params, state, x, train, rng):
            batch = x.shape[0]
            carries = [tuple(v.astype(x.dtype) for v in carry) for carry in state["carry"]] if stateful else \
                [tuple(jnp.zeros((batch, units), x.dtype) for _ in range(2 if kind == "lstm" else 1)) for _ in range(depth)]
            seq, finals = jnp.swapaxes(x, 0, 1), []
            for p, carry in zip(params, carries):
                carry, seq = lax.scan(lambda c, x_t, p=p: cell(p, c, x_t), carry, seq)
                finals.append(tuple(lax.stop_gradient(v).astype(jnp.float32) for v in carry))  # kept as stored
            return jnp.swapaxes(seq, 0, 1), {"carry": finals if stateful else None}
        return init, apply, name


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

    def gpu_capability(self):
        """(GPU name, compute capability "X.Y") of the job's GPU; None on the CPU or when JAX does not say."""
        capability = getattr(self.device, "compute_capability", None)
        if self.device.platform != "gpu" or not capability:
            return None
        return getattr(self.device, "device_kind", "GPU"), str(capability)

    def environment(self):
        import jaxlib

        return {"framework": "jax", "framework_version": jax.__version__, "jaxlib": jaxlib.__version__,
                "optax": optax.__version__, "device": str(self.device), "platform": self.device.platform,
                "xla": True, "matmul_precision": self.matmul_precision,
                "compute_dtype": jnp.dtype(self.compute_dtype).name,
                "parameter_dtypes": sorted({v.dtype.name for v in jax.tree_util.tree_leaves(self.params)}), "layout": "NHWC" if self.channels_last else "NCHW",
                "threads": self.job.get("threads"), "xla_flags": os.environ.get("XLA_FLAGS"),
                "cudnn_autotune": "--xla_gpu_autotune_level=0" not in (os.environ.get("XLA_FLAGS") or "")
                if self.job["device"] == "cuda" else None, "cuda": None, "cudnn": None,
                "data_parallel": {"how": "shard_map over local devices, lax.pmean of the gradients", "world_size":
                                  len(self.devices), "devices": [str(d) for d in self.devices]} if self.devices else None}

    def build(self):
        model = self.job["model"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        self.builder = Builder(model.get("init", {"scheme": "default"}),
                               self.job.get("rank_batch_size") or self.job["batch_size"], self.channels_last)
        init, apply = self.builder.sequence(layers, tuple(model["input_shape"]), "net")
        self.key, key = jax.random.split(self.key)
        self.params, self.state = jax.device_put(init(key), self.device)
        self.compute = _in_dtype(apply, self.compute_dtype)  # (params, state, x, train, rng) -> (output, state)
        compute, loss_fn = self.compute, _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}))
        opt = self.job.get("optimizer")
        if opt:
            self.tx = _optimizer(opt)
            # committed to the device like everything else: an uncommitted array (Adam's step count)
            # would come back committed from the first step and make jit compile the step twice
            self.opt_state = jax.device_put(self.tx.init(self.params), self.device)

            def step(params, state, opt_state, rng, x, y):
                objective = _objective(compute, loss_fn, state, x, y, rng)
                (loss, new_state), grads = jax.value_and_grad(objective, has_aux=True)(params)
                updates, opt_state = self.tx.update(grads, opt_state, params)
                return optax.apply_updates(params, updates), new_state, opt_state, loss
            self._step = jax.jit(step)
            if self.devices:
                self._parallel(compute, loss_fn)

        def forward(params, state, x):
            out, state = compute(params, state, x, False, jax.random.PRNGKey(0))
            return out.astype(jnp.float32), state
        self._forward = jax.jit(forward)
        return int(sum(v.size for v in jax.tree_util.tree_leaves(self.params)))

    def _parallel(self, compute, loss_fn):
        """The data-parallel step: the parameters replicated on every device, the total mini-batch split along
        its first axis (one shard per device), the step run per shard with shard_map and the gradients (and
        batch-norm statistics, and the loss) averaged with lax.pmean, so every copy takes the same update."""
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        mesh = Mesh(np.array(self.devices), ("ranks",))
        self.replicated, self.split = NamedSharding(mesh, PartitionSpec()), NamedSharding(mesh, PartitionSpec("ranks"))

        def step(params, state, opt_state, rng, x, y):
            objective = _objective(compute, loss_fn, state, x, y, rng[0])
            (loss, new_state), grads = jax.value_and_grad(objective, has_aux=True)(params)
            grads, new_state = lax.pmean(grads, "ranks"), lax.pmean(new_state, "ranks")
            updates, opt_state = self.tx.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), new_state, opt_state, lax.pmean(loss, "ranks")
        whole, shard = PartitionSpec(), PartitionSpec("ranks")
        # check_vma off: each shard's gradient is its own (with it on, autodiff would already sum the shards'
        # gradients of the replicated parameters), and lax.pmean makes the mean that a whole mini-batch gives
        self._step = jax.jit(jax.shard_map(step, mesh=mesh, in_specs=(whole, whole, whole, shard, shard, shard),
                                           out_specs=(whole, whole, whole, whole), check_vma=False))
        self.params, self.state, self.opt_state = jax.device_put((self.params, self.state, self.opt_state),
                                                                 self.replicated)

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
        """Drop the parameters and XLA's compiled executables, which would serve the next job's step."""
        super(Adapter, self).release()
        jax.clear_caches()

    def reset_state(self):
        """Carried recurrent state back to zeros (the tree keeps its shape, so nothing is recompiled)."""
        if self.devices:  # a data-parallel job's replicated state: its jobs time steps, they carry nothing across
            return

        def clear(tree):
            if isinstance(tree, dict):
                return {k: (jax.tree_util.tree_map(jnp.zeros_like, v) if k == "carry" and v is not None else clear(v))
                        for k, v in tree.items()}
            return tree
        self.state = jax.device_put(clear(self.state), self.device)

    def train_step(self, x, y):
        self.key, rng = jax.random.split(self.key)
        if self.devices:  # one key per device (dropout masks differ across ranks, as in any data-parallel run)
            rng = jax.device_put(jax.random.split(rng, len(self.devices)), self.split)
        self.params, self.state, self.opt_state, loss = self._step(self.params, self.state, self.opt_state, rng, x, y)
        return loss

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
        return dict((name, (_at(self.params, path), _at(self.state, path))) for name, path in self.builder.named.items())

    def _weight_targets(self, layer):
        params, state = layer
        if "running_mean" in state:
            return batchnorm_targets((params, "weight"), (params, "bias"), (state, "running_mean"),
                                     (state, "running_var"))
        return kernel_targets((params, "weight"), (params, "bias") if "bias" in params else None)

    def _weight_shape(self, target):
        tree, key = target
        return tree[key].shape

    def _set_weight(self, target, array):
        tree, key = target
        tree[key] = np.asarray(array)

    def _weights_loaded(self, layers):
        self.params, self.state = jax.device_put((self.params, self.state), self.device)


def _at(tree, path):
    """The sub-dict of a parameter or state tree at a builder path ("net/4/body/0")."""
    for part in path.split("/")[1:]:
        tree = tree[part]
    return tree
