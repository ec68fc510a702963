"""The spec's initialisations as Keras initializer arguments, for the adapters that build Keras layers (the
TensorFlow adapter, whose layers are Keras 3's, and the Keras adapter on any backend). Imports keras only."""

import keras

from runner.adapters import UnsupportedError


def initializers(init, kind, adapter):
    """Keyword arguments of a Keras layer of spec type ``kind`` for the model's ``init`` ({"scheme", "scale"}):
    uniform U(-scale, scale) for every variable, Caffe's Xavier (U(-a, a), a = sqrt(3 / fan_in)) or Glorot
    uniform for conv and dense kernels with zero biases, {} for Keras's own defaults. Raises UnsupportedError
    (naming ``adapter``) for another scheme."""
    scheme = init["scheme"]
    if scheme == "uniform":
        u = keras.initializers.RandomUniform(-init["scale"], init["scale"])
        if kind == "embedding":
            return {"embeddings_initializer": u}
        if kind == "lstm":  # DLBench's TensorFlow LSTM: every variable U(-s, s), forget_bias=0.0 (not Keras's 1)
            return {
                "kernel_initializer": u,
                "recurrent_initializer": u,
                "bias_initializer": u,
                "unit_forget_bias": False,
            }
        if kind == "gru":
            return {"kernel_initializer": u, "recurrent_initializer": u, "bias_initializer": u}
        return {"kernel_initializer": u, "bias_initializer": u}
    if kind not in ("conv", "dense") or scheme == "default":
        return {}
    if scheme == "xavier":
        return {
            "kernel_initializer": keras.initializers.VarianceScaling(1.0, "fan_in", "uniform"),
            "bias_initializer": "zeros",
        }
    if scheme == "glorot_uniform":
        return {"kernel_initializer": "glorot_uniform", "bias_initializer": "zeros"}
    raise UnsupportedError("%s adapter has no initialisation %r" % (adapter, scheme))
