"""The JAX adapter's layers (runner.adapters.jax_adapter): the spec's layer list as pure functions.

Each layer is an (init, apply) pair over explicit parameters and state (batch-norm running statistics, carried
recurrent state): ``init(key)`` -> (params, state), ``apply(params, state, x, train, rng)`` -> (y, state). Images
are NHWC with HWIO kernels when the builder is ``channels_last``, else NCHW with OIHW kernels. Layers follow
PyTorch's definitions and default initialisation (U(-1/sqrt(fan_in), 1/sqrt(fan_in)); LSTM/GRU with two bias
vectors, gates i, f, g, o and r, z, n), so the parameter counts equal the spec's. Dense weights are kept (in, out)
and multiplied as ``x @ w``, holding the values of PyTorch's (out, in) draw transposed. Caffe's ceil pooling pads the
bottom and right; averages divide by the window's cells inside the symmetric padding. Batch norm takes its
statistics and normalises in float32 whatever the compute dtype.
"""

import math

import jax
import jax.numpy as jnp
from jax import lax

from runner import shapes
from runner.adapters import UnsupportedError


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
        parts = [
            self.layer(layer, in_shape, "%s/%d" % (path, i))
            for i, (layer, in_shape) in enumerate(shapes.inputs(layers, shape))
        ]

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

        def none(key):
            return {}, {}

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
            k, s, p, ceil = (
                layer["kernel"],
                layer.get("stride", layer["kernel"]),
                layer.get("pad", 0),
                layer.get("ceil", False),
            )
            _, h, w = shape
            extra = [max(0, (shapes.pool_output(n, k, s, p, ceil) - 1) * s + k - n - 2 * p) for n in (h, w)]
            pads = self.image((0, 0), (0, 0), (p, p + extra[0]), (p, p + extra[1]))
            window, strides = self.image(1, 1, k, k), self.image(1, 1, s, s)
            cells = jnp.pad(
                jnp.ones(self.image(1, 1, h + 2 * p, w + 2 * p)),
                self.image((0, 0), (0, 0), (0, extra[0]), (0, extra[1])),
            )

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
                return (
                    {"weight": jnp.ones((c,)), "bias": jnp.zeros((c,))},
                    {"running_mean": jnp.zeros((c,)), "running_var": jnp.ones((c,))},
                )

            def apply(params, state, x, train, rng):
                xf = x.astype(jnp.float32)  # statistics and normalisation in float32 (bf16 jobs: bf16 in and out)
                if train:
                    mean, var = xf.mean(axis=axes), xf.var(axis=axes)
                    n = x.size // c
                    state = {
                        "running_mean": (1 - momentum) * state["running_mean"] + momentum * mean,
                        "running_var": (1 - momentum) * state["running_var"] + momentum * var * n / (n - 1),
                    }
                else:
                    mean, var = state["running_mean"], state["running_var"]
                y = (xf - mean.reshape(bshape)) / jnp.sqrt(var.reshape(bshape) + eps)
                return (y * params["weight"].reshape(bshape) + params["bias"].reshape(bshape)).astype(x.dtype), state

            return init, apply, name
        if kind == "dense":
            fan_in, units, bias = shape[-1], layer["units"], layer.get("bias", True)
            wb, bb = self.weight_bound(fan_in, units, 1 / math.sqrt(fan_in)), self.bias_bound(1 / math.sqrt(fan_in))

            def init(key):  # drawn (out, in) as PyTorch draws it, kept (in, out): the same values either way
                kw, kb = jax.random.split(key)
                params = {"weight": _uniform(kw, (units, fan_in), wb).T}
                if bias:
                    params["bias"] = _uniform(kb, (units,), bb)
                return params, {}

            def apply(params, state, x, train, rng):
                y = x @ params["weight"]
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
                return (
                    {"body": parts[0][0], "shortcut": parts[1][0], "after": parts[2][0]},
                    {"body": parts[0][1], "shortcut": parts[1][1], "after": parts[2][1]},
                )

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
        wb = (
            self.weight_bound(units, units, 1 / math.sqrt(units))
            if self.init_spec["scheme"] == "uniform"
            else 1 / math.sqrt(units)
        )

        def zeros():
            return [
                tuple(jnp.zeros((self.batch_size, units)) for _ in range(2 if kind == "lstm" else 1))
                for _ in range(depth)
            ]

        def init(key):
            params = []
            for width, k in zip(widths, jax.random.split(key, depth)):
                k1, k2, k3, k4 = jax.random.split(k, 4)
                params.append(
                    {
                        "w_ih": _uniform(k1, (gates * units, width), wb),
                        "w_hh": _uniform(k2, (gates * units, units), wb),
                        "b_ih": _uniform(k3, (gates * units,), wb),
                        "b_hh": _uniform(k4, (gates * units,), wb),
                    }
                )
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
            carries = (
                [tuple(v.astype(x.dtype) for v in carry) for carry in state["carry"]]
                if stateful
                else [
                    tuple(jnp.zeros((batch, units), x.dtype) for _ in range(2 if kind == "lstm" else 1))
                    for _ in range(depth)
                ]
            )
            seq, finals = jnp.swapaxes(x, 0, 1), []
            for p, carry in zip(params, carries):
                carry, seq = lax.scan(lambda c, x_t, p=p: cell(p, c, x_t), carry, seq)
                finals.append(tuple(lax.stop_gradient(v).astype(jnp.float32) for v in carry))  # kept as stored
            return jnp.swapaxes(seq, 0, 1), {"carry": finals if stateful else None}

        return init, apply, name
