"""The frameworks with a GRU, that train seeds."""

GRU_FRAMEWORKS = (
    "torch",
    "tensorflow",
    "mxnet",
    "jax",
    "cntk",
    "chainer",
    "keras-tensorflow",
    "keras-jax",
    "keras-torch",
    "keras-cntk",
    "keras-theano",
)
