"""Checks of the CNTK adapter's recurrent layers against numpy, run in the CNTK image:
``python tests/data/cntk_rnn_check.py OUT.json``. OUT.json: the largest absolute difference of each check.

- gru, lstm: one layer's outputs over a batch of 2 sequences of 5 steps against numpy's cuDNN/PyTorch cells (the
  GRU's reset gate after the recurrent product, two bias sets);
- carried: a stateful 2-layer LSTM fed 2 mini-batches of 5 steps, the second starting from the first's final state,
  against the same layer over the 10 steps at once (its last 5 outputs); not_carried: the second mini-batch from
  zero state against the same;
- clip_off, clip_on: one clipped_sgd step against numpy's SGD on the mean-loss gradient, with the clip above the
  gradient's global norm and below it (then the gradient is scaled to norm = clip);
- embedding: the lookup of ids in a 7 x 3 table against numpy's indexing;
- parameters: the parameter count of the spec's LSTM (Embedding 10000x256, 2 LSTM layers of 256) and GRU layers.
"""

import json
import sys

import cntk as C
import numpy as np

from runner.adapters import cntk_recurrent

RNG = np.random.RandomState(0)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def _set(node, values):
    by_name = dict((p.name, p) for p in node.parameters)
    for name, value in values.items():
        by_name[name].value = value.astype(np.float32)


def _weights(width, units, gates):
    return {
        "W_ih": RNG.uniform(-0.5, 0.5, (width, gates * units)),
        "W_hh": RNG.uniform(-0.5, 0.5, (units, gates * units)),
        "b_ih": RNG.uniform(-0.5, 0.5, gates * units),
        "b_hh": RNG.uniform(-0.5, 0.5, gates * units),
    }


def numpy_gru(x, w, units):
    h, out = np.zeros((x.shape[0], units)), []
    for t in range(x.shape[1]):
        gi, gh = x[:, t] @ w["W_ih"] + w["b_ih"], h @ w["W_hh"] + w["b_hh"]
        r, z = sigmoid(gi[:, :units] + gh[:, :units]), sigmoid(gi[:, units : 2 * units] + gh[:, units : 2 * units])
        n = np.tanh(gi[:, 2 * units :] + r * gh[:, 2 * units :])
        h = (1 - z) * n + z * h
        out.append(h)
    return np.stack(out, 1)


def numpy_lstm(x, w, units, h=None, c=None):
    h = np.zeros((x.shape[0], units)) if h is None else h
    c = np.zeros((x.shape[0], units)) if c is None else c
    out = []
    for t in range(x.shape[1]):
        g = x[:, t] @ w["W_ih"] + w["b_ih"] + h @ w["W_hh"] + w["b_hh"]
        i, f, gg, o = [g[:, k * units : (k + 1) * units] for k in range(4)]
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(gg)
        h = sigmoid(o) * np.tanh(c)
        out.append(h)
    return np.stack(out, 1)


def cell_check(kind):
    width, units = 3, 4
    x = RNG.uniform(-1, 1, (2, 5, width))
    w = _weights(width, units, 3 if kind == "gru" else 4)
    features = C.sequence.input_variable(width, np.float32)
    node = cntk_recurrent.recurrent(
        {"type": kind, "units": units}, features, width, C.glorot_uniform(), 0, cntk_recurrent.Carried()
    )
    _set(node, w)
    got = np.asarray(node.eval({features: x.astype(np.float32)}))
    want = (numpy_gru if kind == "gru" else numpy_lstm)(x, w, units)
    return float(np.abs(got - want).max())


def carried_check():
    width, units = 3, 4
    x = RNG.uniform(-1, 1, (2, 10, width)).astype(np.float32)
    features = C.sequence.input_variable(width, np.float32)
    carried = cntk_recurrent.Carried()
    node = cntk_recurrent.recurrent(
        {"type": "lstm", "units": units, "layers": 2, "stateful": True},
        features,
        width,
        C.uniform(0.5),
        C.uniform(0.5),
        carried,
    )
    model = C.combine([node] + carried.finals)
    halves = []
    for part in (x[:, :5], x[:, 5:]):
        found = model.eval(carried.feed({features: part}, 2))
        carried.keep(found)
        halves.append(np.asarray(found[node.output]))
    carried.reset()
    whole = np.asarray(model.eval(carried.feed({features: x}, 2))[node.output])
    fresh = np.asarray(model.eval(carried.feed({features: x[:, 5:]}, 2))[node.output])  # from zero state
    return float(np.abs(halves[1] - whole[:, 5:]).max()), float(np.abs(fresh - whole[:, 5:]).max())


def clip_check(clip):
    w0, x, t = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, (4, 3)), RNG.uniform(-1, 1, (4, 3))
    w = C.parameter(3, init=w0.astype(np.float32))
    features, targets = C.input_variable(3, np.float32), C.input_variable(3, np.float32)
    loss = C.reduce_sum(C.square(features * w - targets))
    trainer = C.Trainer(features * w, (loss, None), [cntk_recurrent.clipped_sgd([w], 0.1, clip, 4)])
    trainer.train_minibatch({features: x.astype(np.float32), targets: t.astype(np.float32)})
    grad = (2 * (x * w0 - t) * x).mean(axis=0)  # of the mean loss over the mini-batch
    want = w0 - 0.1 * grad * min(1.0, clip / np.linalg.norm(grad))
    return float(np.abs(w.value - want).max()), float(np.linalg.norm(grad))


def embedding_check():
    ids = C.sequence.input_variable(1, np.float32)
    looked = cntk_recurrent.embedding({"vocab": 7, "dim": 3}, C.uniform(1.0))(ids)
    table = looked.parameters[0].value
    x = np.array([[[3], [0], [6]], [[1], [1], [5]]], np.float32)
    return float(np.abs(np.asarray(looked.eval({ids: x})) - table[x[..., 0].astype(int)]).max())


def parameter_counts():
    tokens = C.sequence.input_variable(1, np.float32)
    embedded = cntk_recurrent.embedding({"vocab": 10000, "dim": 256}, C.uniform(0.1))(tokens)
    lstm = cntk_recurrent.recurrent(
        {"type": "lstm", "units": 256, "layers": 2, "stateful": True},
        embedded,
        256,
        C.uniform(0.1),
        C.uniform(0.1),
        cntk_recurrent.Carried(),
    )
    words = C.sequence.input_variable(125, np.float32)
    gru = cntk_recurrent.recurrent(
        {"type": "gru", "units": 100}, words, 125, C.glorot_uniform(), 0, cntk_recurrent.Carried()
    )
    return {
        "lstm_ptb_embedding_and_lstm": int(sum(p.value.size for p in lstm.parameters)),
        "gru_layer": int(sum(p.value.size for p in gru.parameters)),
    }


def main(out):
    C.cntk_py.set_fixed_random_seed(1)
    clip_off, norm = clip_check(100.0)
    clip_on, norm_on = clip_check(0.01)
    carried, fresh = carried_check()
    found_embedding = embedding_check()
    found = {
        "gru": cell_check("gru"),
        "lstm": cell_check("lstm"),
        "carried": carried,
        "not_carried": fresh,
        "embedding": found_embedding,
        "clip_off": clip_off,
        "clip_on": clip_on,
        "norms": [norm, norm_on],
        "cntk": C.__version__,
    }
    found.update(parameter_counts())
    with open(out, "w") as f:
        json.dump(found, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
