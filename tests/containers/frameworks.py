"""The frameworks the container tests run, as framework tokens: each framework's newest image, Keras 3 and 2.1 on their
backends, and DeepLearningFrameworks' other rows."""

PLAIN = ("torch", "tensorflow", "mxnet", "jax", "cntk", "caffe2", "caffe")


KERAS = ("keras-tensorflow", "keras-jax", "keras-torch")  # Keras 3, each in its backend's image


KERAS2 = ("keras-cntk", "keras-theano", "keras-tensorflow@2.1.5")  # Keras 2.1 (DLF's): in the CNTK 2.5.1 image, its


# own Theano 1.0.1 image and the TensorFlow 1.4.0 image
DLF_ROWS = ("chainer",) + KERAS + KERAS2  # DeepLearningFrameworks' other rows: on DLF's specs only


FRAMEWORKS = PLAIN + DLF_ROWS
