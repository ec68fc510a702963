"""TensorFlow 1.x adapter: a static graph run by ``tf.Session``, as DLBench's and DeepLearningFrameworks'
TensorFlow scripts ran their models (hclhkbu/dlbench tools/tensorflow/*.py @ v7; ilkarman/DeepLearningFrameworks
notebooks/Tensorflow_CNN.ipynb @ 671e2a0: ``tf.layers`` on placeholders, ``tf.train.MomentumOptimizer``,
``sess.run`` per mini-batch).

runner.adapters.load picks this module for a TensorFlow job whose image is of major version 1 (the studies'
1.0-1.15); TensorFlow 2 runs tensorflow_adapter. Idioms as there: channels-last (NHWC) on the CPU, whose
convolutions in TensorFlow 1.x support no other layout, channels-first (NCHW) on GPUs; "same" padding where
it pads symmetrically (stride 1, kernel 2p+1), an explicit ``tf.pad`` otherwise; Caffe-rounded pooling windows
padded at the bottom and right (averages divided by the cells inside the symmetric padding); weight decay added
to the gradients (L2).

The mini-batch lives in two non-trainable variables of the job's batch shape: ``to_device`` assigns a numpy
mini-batch into them (the copy to the device), ``train_step`` runs the update on what they hold, with no feed,
so that a synthetic mini-batch stays resident on the device as in the other adapters (the studies' scripts fed
``feed_dict`` each step; that copy is in the real-data timed region here, as everywhere). ``sess.run`` returns
when the step is done: ``synchronize`` has nothing to wait for.

Two options time the step as DLBench's TensorFlow scripts did (runner.contract): ``gradients`` "gate_op" builds
the update from ``optimizer.compute_gradients(gate_gradients=GATE_OP)``, what their ``minimize()`` ran, which also
computes the first layer's gradient with respect to the resident mini-batch (unused; about 7 of FCN-S's 45 GFLOP a
step), where ``tf.gradients`` ("pruned", the default) leaves it out; ``thread_pools`` "intra_op" sets only
``intra_op_parallelism_threads``, the inter-op pool at TensorFlow's default (0: its own choice), as their
``ConfigProto(intra_op_parallelism_threads=OMP_NUM_THREADS)``.

Recurrent layers as the studies' TensorFlow scripts built them: DLBench's LSTM (tools/tensorflow/rnn/lstm/lstm.py
@ 978b034) as ``BasicLSTMCell(forget_bias=0.0)`` cells unrolled over the time steps (``static_rnn``), with the final
state of a mini-batch carried into the next in variables; DLF's GRU (notebooks/Tensorflow_RNN.ipynb @ 671e2a0) ran
cuDNN's GRU (``CudnnGRU``, GPU only): here ``CudnnCompatibleGRUCell``, the same equations on any device, under
``dynamic_rnn``. Embeddings are ``embedding_lookup`` on a variable (``tf.get_variable``'s Glorot uniform unless
the spec initialises). Parameter counts: both cells keep one bias vector where cuDNN and PyTorch keep two
(``conventions``).
"""

import numpy as np
import tensorflow as tf

from runner import shapes
from runner.adapters import UnsupportedError, base
from runner.adapters.base import Adapter as Base
from runner.adapters.base import batchnorm_targets, kernel_targets

_ACTIVATIONS = {"relu": tf.nn.relu, "sigmoid": tf.nn.sigmoid, "tanh": tf.nn.tanh}


class Adapter(Base):
    name = "tensorflow"
    conv_kernel_axes, dense_kernel_axes = base.HWIO, base.IN_OUT  # tf.layers keeps Keras's layouts

    def __init__(self, job):
        super(Adapter, self).__init__(job)
        self.graph = tf.Graph()
        threads = job.get("threads") or 0  # 0: TensorFlow's own choice
        inter = threads if job.get("thread_pools", "all") == "all" else 0
        self.config = tf.ConfigProto(
            intra_op_parallelism_threads=threads, inter_op_parallelism_threads=inter, allow_soft_placement=False
        )
        self.gate = job.get("gradients", "pruned") == "gate_op"
        self.channels_first = job["device"] == "cuda"
        self.device = "/gpu:0" if self.channels_first else "/cpu:0"
        self.build_name = "tensorflow %s" % tf.__version__
        self.named, self.ops, self.recurrent = {}, {}, []
        self.held, self.reset = [], []  # stateful layers: (state variable, final state), ops that zero the variables

    def environment(self):
        return {
            "framework": "tensorflow",
            "framework_version": tf.__version__,
            "api": "graph (tf.Session)",
            "cuda": None,
            "cudnn": None,
            "threads": self.config.intra_op_parallelism_threads or None,
            "inter_op_threads": self.config.inter_op_parallelism_threads or None,
            "layout": "NCHW" if self.channels_first else "NHWC",
            "ops": self.ops,
            "xla": False,
            "gradients": "optimizer.compute_gradients(gate_gradients=GATE_OP), as minimize()"
            if self.gate
            else "tf.gradients (only what the update reads)",
        }

    # ------------------------------------------------------------------ building

    def _initializers(self, kind):
        init = self.job["model"].get("init", {"scheme": "default"})
        scheme = init["scheme"]
        if kind not in ("conv", "dense"):
            return {}
        if scheme == "uniform":
            u = tf.random_uniform_initializer(-init["scale"], init["scale"])
            return {"kernel_initializer": u, "bias_initializer": u}
        if scheme == "default":  # tf.layers' own: Glorot-uniform kernels, zero biases
            return {}
        if scheme == "xavier":  # Caffe XavierFiller: U(-a, a), a = sqrt(3 / fan_in)
            return {
                "kernel_initializer": tf.variance_scaling_initializer(1.0, "fan_in", "uniform"),
                "bias_initializer": tf.zeros_initializer(),
            }
        if scheme == "glorot_uniform":
            return {"kernel_initializer": tf.glorot_uniform_initializer(), "bias_initializer": tf.zeros_initializer()}
        raise UnsupportedError("the TensorFlow 1.x graph adapter has no initialisation %r" % scheme)

    def _count(self, what):
        self.ops[what] = self.ops.get(what, 0) + 1

    def _spatial_pad(self, x, before, after, value=0.0):
        spatial = [[before, after[0]], [before, after[1]]]
        return tf.pad(
            x,
            [[0, 0], [0, 0]] + spatial if self.channels_first else [[0, 0]] + spatial + [[0, 0]],
            constant_values=value,
        )

    def _layer(self, layer, shape, x):
        """The output tensor of ``layer`` (its input shape (C, H, W) or (F,): ``shape``) on tensor ``x``."""
        kind, cf = layer["type"], self.channels_first
        fmt = "channels_first" if cf else "channels_last"
        if kind == "conv":
            stride, pad = layer.get("stride", 1), layer.get("pad", 0)
            same = pad and stride == 1 and layer["kernel"] == 2 * pad + 1
            if pad and not same:
                x = self._spatial_pad(x, pad, (pad, pad))
            self._count("conv, padding 'same'" if same else "conv, explicit zero padding" if pad else "conv")
            conv = tf.layers.Conv2D(
                layer["filters"],
                layer["kernel"],
                strides=stride,
                padding="same" if same else "valid",
                use_bias=layer.get("bias", True),
                data_format=fmt,
                **self._initializers(kind),
            )
            return self._name(layer, conv, conv.apply(x))
        if kind in ("maxpool", "avgpool"):
            return self._pool(kind, layer, shape, x)
        if kind == "global_avgpool":
            return tf.reduce_mean(x, axis=[2, 3] if cf else [1, 2])
        if kind == "batchnorm":
            bn = tf.layers.BatchNormalization(
                axis=1 if cf and len(shape) == 3 else -1,
                momentum=1.0 - layer.get("momentum", 0.1),
                epsilon=layer.get("eps", 1e-5),
            )
            return self._name(layer, bn, bn.apply(x, training=self.training))
        if kind == "dense":
            dense = tf.layers.Dense(layer["units"], use_bias=layer.get("bias", True), **self._initializers(kind))
            return self._name(layer, dense, dense.apply(x))
        if kind == "dropout":
            return tf.layers.dropout(x, layer["rate"], training=self.training)
        if kind == "flatten":  # in Keras's (H, W, C) order on either layout, as pretrained dense weights expect
            if cf and len(shape) == 3:
                x = tf.transpose(x, [0, 2, 3, 1])
            return tf.reshape(x, [-1, int(np.prod(x.shape.as_list()[1:]))])
        if kind in _ACTIVATIONS:
            return _ACTIVATIONS[kind](x)
        if kind == "pad_channels":
            extra = layer["filters"] - shape[0]
            return tf.pad(x, [[0, 0], [0, extra], [0, 0], [0, 0]] if cf else [[0, 0], [0, 0], [0, 0], [0, extra]])
        if kind == "residual":
            inner = shapes.apply_all(layer["body"], shape)[0]
            added = self._layers(layer["body"], shape, x) + self._layers(layer.get("shortcut", []), shape, x)
            return self._layers(layer.get("after", []), inner, added)
        if kind == "concat":
            return tf.concat([x, self._layers(layer["body"], shape, x)], axis=1 if cf else -1)
        if kind == "embedding":
            with tf.variable_scope(None, default_name="embedding"):
                table = tf.get_variable("table", [layer["vocab"], layer["dim"]], initializer=self._uniform())
            self._count("embedding")
            return tf.nn.embedding_lookup(table, x)
        if kind in ("lstm", "gru"):
            return self._recurrent(kind, layer, x)
        if kind == "last_step":
            return x[:, -1]
        raise UnsupportedError("the TensorFlow 1.x graph adapter has no layer type %r" % kind)

    def _uniform(self):
        init = self.job["model"].get("init", {"scheme": "default"})
        return tf.random_uniform_initializer(-init["scale"], init["scale"]) if init["scheme"] == "uniform" else None

    def _recurrent(self, kind, layer, x):
        """(N, T, F) -> (N, T, units) through layer["layers"] stacked cells; see the module's docstring."""
        units, depth, n = layer["units"], layer.get("layers", 1), self.job["batch_size"]
        self.recurrent.append((kind, units, depth))
        self._count(
            "%s, %s" % (kind, "BasicLSTMCell, static_rnn" if kind == "lstm" else "CudnnCompatibleGRUCell, dynamic_rnn")
        )
        with tf.variable_scope(None, default_name=kind, initializer=self._uniform()):
            if kind == "lstm":
                cells = [tf.nn.rnn_cell.BasicLSTMCell(units, forget_bias=0.0) for _ in range(depth)]
            else:
                cells = [tf.contrib.cudnn_rnn.CudnnCompatibleGRUCell(units) for _ in range(depth)]
            cell = tf.nn.rnn_cell.MultiRNNCell(cells) if depth > 1 else cells[0]
            initial = None
            if layer.get("stateful"):
                held = [
                    tf.Variable(tf.zeros([n, units]), trainable=False)
                    for _ in range(2 * depth if kind == "lstm" else depth)
                ]
                self.reset.extend(tf.assign(v, tf.zeros_like(v)) for v in held)
                initial = [
                    tf.nn.rnn_cell.LSTMStateTuple(held[2 * i], held[2 * i + 1]) if kind == "lstm" else held[i]
                    for i in range(depth)
                ]
                initial = tuple(initial) if depth > 1 else initial[0]
            if kind == "lstm":
                out, final = tf.nn.static_rnn(cell, tf.unstack(x, axis=1), initial_state=initial, dtype=tf.float32)
                out = tf.stack(out, axis=1)
            else:
                out, final = tf.nn.dynamic_rnn(cell, x, initial_state=initial, dtype=tf.float32)
            if initial is not None:
                self.held.extend(zip(held, tf.contrib.framework.nest.flatten(final)))
        return out

    def conventions(self):
        """One bias vector per gate set in BasicLSTMCell (4 x units per layer) and one for the GRU's reset and
        update gates in CudnnCompatibleGRUCell (2 x units per layer), where the spec counts cuDNN's and PyTorch's
        two."""
        out = []
        for kind, units, depth in self.recurrent:
            per = 4 if kind == "lstm" else 2
            out.append(
                {
                    "name": "tf1-%s-single-bias" % kind,
                    "difference": per * units * depth,
                    "reason": "TensorFlow 1.x's %s keeps one bias vector for %s (%d x %d per layer, %d layers) "
                    "where cuDNN and PyTorch keep two"
                    % (
                        "BasicLSTMCell" if kind == "lstm" else "CudnnCompatibleGRUCell",
                        "each gate set" if kind == "lstm" else "the reset and update gates",
                        per,
                        units,
                        depth,
                    ),
                }
            )
        return out

    def _pool(self, kind, layer, shape, x):
        stride, pad, ceil = layer.get("stride", layer["kernel"]), layer.get("pad", 0), layer.get("ceil", False)
        window, strides = [1, 1] + [layer["kernel"]] * 2, [1, 1] + [stride] * 2
        if not self.channels_first:
            window, strides = [1] + window[2:] + [1], [1] + strides[2:] + [1]
        fmt = "NCHW" if self.channels_first else "NHWC"
        op = tf.nn.max_pool if kind == "maxpool" else tf.nn.avg_pool
        if pad == 0 and all(
            shapes.pool_output(n, layer["kernel"], stride, 0, ceil)
            == shapes.pool_output(n, layer["kernel"], stride, 0, False)
            for n in shape[1:]
        ):
            self._count("%s, native" % kind)
            return op(x, window, strides, "VALID", data_format=fmt)
        self._count("%s, padded for Caffe's windows" % kind)
        extra = [
            max(
                0,
                (shapes.pool_output(n, layer["kernel"], stride, pad, ceil) - 1) * stride
                + layer["kernel"]
                - n
                - 2 * pad,
            )
            for n in shape[1:]
        ]
        after = [pad + e for e in extra]
        if kind == "maxpool":
            return op(self._spatial_pad(x, pad, after, float("-inf")), window, strides, "VALID", data_format=fmt)
        total = op(self._spatial_pad(x, pad, after), window, strides, "VALID", data_format=fmt)
        size = [n + 2 * pad for n in shape[1:]]
        ones = tf.ones([1, 1] + size if self.channels_first else [1] + size + [1])
        return total / op(self._spatial_pad(ones, 0, extra), window, strides, "VALID", data_format=fmt)

    def _name(self, layer, made, out):
        if layer.get("name"):
            self.named[layer["name"]] = made
        return out

    def _layers(self, layers, shape, x):
        for layer, in_shape in shapes.inputs(layers, shape):
            x = self._layer(layer, in_shape, x)
        return x

    def build(self):
        model, n = self.job["model"], self.job["batch_size"]
        layers = shapes.expand(model["layers"], model["input_shape"])
        in_shape = tuple(model["input_shape"])
        x_shape = [n] + list(in_shape if len(in_shape) != 3 or self.channels_first else in_shape[1:] + in_shape[:1])
        target = model.get("target", "class")
        y_dtype, y_shape = (tf.float32, [n, model["classes"]]) if target == "multilabel" else (tf.int64, [n])
        x_dtype = tf.int64 if model.get("input_kind") == "tokens" else tf.float32
        if target == "sequence":
            y_shape = [n] + list(in_shape)
        with self.graph.as_default(), tf.device(self.device):
            tf.set_random_seed(self.job.get("seed", 0))
            self.training = tf.placeholder_with_default(False, [], name="training")
            self.x_in = tf.placeholder(x_dtype, x_shape, name="x_in")
            self.x = tf.Variable(tf.zeros(x_shape, dtype=x_dtype), trainable=False, name="x_batch")
            self.y_in = tf.placeholder(y_dtype, y_shape, name="y_in")
            self.y = tf.Variable(tf.zeros(y_shape, dtype=y_dtype), trainable=False, name="y_batch")
            self.load_batch = [tf.assign(self.x, self.x_in), tf.assign(self.y, self.y_in)]
            # the net reads the resident mini-batch; ``infer`` feeds a batch of any size in its place
            self.net_in = tf.placeholder_with_default(self.x, [None] + x_shape[1:], name="net_in")
            self.out = self._layers(layers, in_shape, self.net_in)
            variables = self.variables = tf.trainable_variables()
            if self.job["mode"] == "parameters":  # the count only: no gradients built, no session, nothing initialised
                return _count(variables)
            self.loss = _loss(self.job.get("loss", {"name": "softmax_cross_entropy"}), self.out, self.y)
            self.train_op = self._optimizer(self.loss, variables)
            with tf.control_dependencies([self.train_op] if self.train_op is not None else []):
                self.carry = [tf.assign(v, final) for v, final in self.held]  # after the step has read the state
            self.session = tf.Session(graph=self.graph, config=self.config)
            self.session.run(tf.global_variables_initializer())
        return _count(variables)

    def _optimizer(self, loss, variables):
        opt = self.job.get("optimizer")
        if opt is None:
            return None
        if opt["name"] == "sgd":
            optimizer = tf.train.MomentumOptimizer(
                opt["lr"], opt.get("momentum", 0.0), use_nesterov=opt.get("nesterov", False)
            )
        elif opt["name"] == "adam":
            betas = opt.get("betas", (0.9, 0.999))
            optimizer = tf.train.AdamOptimizer(opt["lr"], betas[0], betas[1], opt.get("eps", 1e-8))
        else:
            raise UnsupportedError("the TensorFlow 1.x graph adapter has no optimizer %r" % opt["name"])
        if self.gate:
            grads = [
                g for g, _ in optimizer.compute_gradients(loss, variables, gate_gradients=tf.train.Optimizer.GATE_OP)
            ]
        else:
            grads = tf.gradients(loss, variables)
        if opt.get("weight_decay"):
            grads = [g + opt["weight_decay"] * v for g, v in zip(grads, variables)]
        if opt.get("clip_norm"):
            grads, _ = tf.clip_by_global_norm(grads, opt["clip_norm"])
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):  # batch norm's moving averages
            return optimizer.apply_gradients(list(zip(grads, variables)))

    # ------------------------------------------------------------------ running

    def _input(self, x):
        if x.ndim == 4 and not self.channels_first:
            return np.ascontiguousarray(x.transpose(0, 2, 3, 1))
        return x

    def to_device(self, x, y):
        self.session.run(self.load_batch, {self.x_in: self._input(x), self.y_in: y})
        return None, None

    def train_step(self, x, y):
        return self.session.run([self.train_op, self.loss, self.carry], {self.training: True})[1]

    def reset_state(self):
        self.session.run(self.reset)

    def losses(self, handles):
        return [float(h) for h in handles]

    def infer(self, x):
        return self.session.run(self.out, {self.net_in: self._input(x)})

    def parameters(self):
        return self.session.run(self.variables)

    def release(self):
        """Close the session (a parameters-mode job has none) and drop the graph."""
        if self.__dict__.get("session") is not None:
            self.session.close()
        super(Adapter, self).release()

    def _weight_targets(self, layer):
        if isinstance(layer, tf.layers.BatchNormalization):
            return batchnorm_targets(layer.gamma, layer.beta, layer.moving_mean, layer.moving_variance)
        return kernel_targets(layer.kernel, layer.bias)

    def _weight_shape(self, target):
        return tuple(target.shape.as_list())

    def _set_weight(self, variable, array):
        variable.load(array, self.session)


def _count(variables):
    """The number of values in ``variables``, from their static shapes."""
    return int(sum(np.prod(v.shape.as_list()) for v in variables))


def _loss(loss, out, y):
    """The job's loss on logits ``out`` and targets ``y``; see the torch adapter for the reductions."""
    if loss["name"] == "sigmoid_binary_cross_entropy":
        return tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=out))
    if loss["name"] != "softmax_cross_entropy":
        raise UnsupportedError("the TensorFlow 1.x graph adapter has no loss %r" % loss["name"])
    per = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=out)
    if loss.get("reduction", "mean") == "sum_over_time":
        return tf.reduce_sum(per) / tf.cast(tf.shape(y)[0], per.dtype)
    return tf.reduce_mean(per)
