"""CNTK's recurrent layers for the CNTK adapter: the spec's embedding, LSTM and GRU (runner.shapes), their state
carried across mini-batches, and SGD with the global-norm gradient clipping the LSTM's spec asks for.

- Tokens are a sequence of ids (each a (1,) float) and the embedding a ``C.gather`` from the (vocab x dim) table,
  whose gradient is dense. (CNTK's own idiom, a sparse one-hot input times the table, as DLF's CNTK_RNN notebook and
  DLBench's CNTK LSTM on GPUs fed them, gives the table a sparse gradient, on which the tensor ops of ``clipped_sgd``
  have no kernels: "Tensor operations are currently not supported for sparse matrices".)
- The cells are written in CNTK ops and run by ``C.layers.Recurrence`` over the sequence axis, with two bias vectors
  per gate set (PyTorch's and cuDNN's convention, the spec's parameter counts): the LSTM's gates i, f, g, o from
  x W_ih + b_ih + h W_hh + b_hh; cuDNN's GRU with its reset gate applied after the recurrent product,
  n = tanh(x W_in + b_in + r * (h W_hn + b_hn)), h' = (1 - z) n + z h. (CNTK's own ``C.layers.LSTM`` has one bias
  set and its ``GRU`` resets before the product; ``optimized_rnnstack``, which DLF's notebook ran on the GPU, is
  cuDNN's and has no CPU kernel and no initial state.)
- ``stateful``: a layer's initial state is an input (``C.layers.RecurrenceFrom``), fed each mini-batch with the
  final state of the previous one, without back-propagating into it (truncated back-propagation: DLBench's LSTM as
  its TensorFlow script feeds ``final_state`` back through ``feed_dict``); zeros after ``reset``.
- ``clipped_sgd``: plain SGD on the gradient of the mean loss with every gradient scaled by
  min(1, clip / global norm), as ``torch.nn.utils.clip_grad_norm_`` and ``tf.clip_by_global_norm``: a
  ``C.universal`` learner (CNTK's learners clip each parameter's gradient on its own, per sample).
"""

import functools

import cntk as C
import numpy as np


class Carried(object):
    """The state inputs of the stateful recurrent layers and their final-state outputs, in one order."""

    def __init__(self):
        self.inputs, self.finals, self.values = [], [], None

    def reset(self):
        self.values = None

    def feed(self, arguments, rows):
        """``arguments`` with every state input fed: the carried values, zeros (``rows`` x width) after a reset."""
        values = self.values or [np.zeros((rows,) + tuple(v.shape), np.float32) for v in self.inputs]
        arguments.update(zip(self.inputs, values))
        return arguments

    def keep(self, outputs):
        """Keep the final states from the {output: value} a step or an evaluation returned."""
        if self.finals:
            self.values = [np.ascontiguousarray(outputs[f], dtype=np.float32) for f in self.finals]


def embedding(layer, init):
    """The lookup of ``layer`` (vocab, dim): a function of a sequence of (1,) token ids, (dim,) per step."""
    table = C.parameter((layer["vocab"], layer["dim"]), init=init, name="E")

    def lookup(ids):
        return C.reshape(C.gather(table, ids), (layer["dim"],))

    return lookup


def recurrent(layer, x, width, weight_init, bias_init, carried):
    """``layer`` (lstm or gru, ``layers`` deep) applied to sequence node ``x`` of ``width`` features."""
    cell = _lstm if layer["type"] == "lstm" else _gru
    for _ in range(layer.get("layers", 1)):
        step = cell(layer["units"], width, weight_init, bias_init)
        if layer.get("stateful"):
            starts = [
                C.input_variable((layer["units"],), np.float32, name="carried")
                for _ in range(2 if layer["type"] == "lstm" else 1)
            ]
            states = list(C.layers.RecurrenceFrom(step, return_full_state=True)(*(starts + [x])).outputs)
            carried.inputs.extend(starts)
            carried.finals.extend(C.sequence.last(s).output for s in states)
            x = C.combine([states[0]])  # the outputs h as a Function, as Recurrence gives them
        else:
            x = C.layers.Recurrence(step)(x)
        width = layer["units"]
    return x


def _gates(units, width, count, weight_init, bias_init):
    return (
        C.parameter((width, count * units), init=weight_init, name="W_ih"),
        C.parameter((units, count * units), init=weight_init, name="W_hh"),
        C.parameter((count * units,), init=bias_init, name="b_ih"),
        C.parameter((count * units,), init=bias_init, name="b_hh"),
    )


def _lstm(units, width, weight_init, bias_init):
    w_ih, w_hh, b_ih, b_hh = _gates(units, width, 4, weight_init, bias_init)

    @C.Function
    def step(h, c, x):
        gates = C.times(x, w_ih) + b_ih + C.times(h, w_hh) + b_hh
        i, f, g, o = [C.slice(gates, 0, k * units, (k + 1) * units) for k in range(4)]
        cell = C.sigmoid(f) * c + C.sigmoid(i) * C.tanh(g)
        return C.sigmoid(o) * C.tanh(cell), cell

    return step


def _gru(units, width, weight_init, bias_init):
    w_ih, w_hh, b_ih, b_hh = _gates(units, width, 3, weight_init, bias_init)

    @C.Function
    def step(h, x):
        gi, gh = C.times(x, w_ih) + b_ih, C.times(h, w_hh) + b_hh

        def part(g, k):
            return C.slice(g, 0, k * units, (k + 1) * units)

        r, z = C.sigmoid(part(gi, 0) + part(gh, 0)), C.sigmoid(part(gi, 1) + part(gh, 1))
        n = C.tanh(part(gi, 2) + r * part(gh, 2))
        return (1 - z) * n + z * h

    return step


def clipped_sgd(parameters, lr, clip, batch_size):
    """Plain SGD on the gradient of the mean loss over a mini-batch of ``batch_size`` samples, every gradient scaled
    by min(1, ``clip`` / the global norm of all of them). CNTK hands a universal learner the gradients of the summed
    loss, hence the division by the batch size."""

    def update(params, grads):
        grads = [g / float(batch_size) for g in grads]
        norm = C.sqrt(
            functools.reduce(C.plus, [C.reduce_sum(C.square(g), axis=C.Axis.all_static_axes()) for g in grads])
        )
        scale = clip / C.element_max(norm, clip)
        return C.combine([C.assign(p, p - lr * scale * g) for p, g in zip(params, grads)])

    return C.universal(update, parameters)
