"""The suite's frameworks as people name them: the code each has in specs, images and bundles ("torch"), the one
spelling a reader knows ("PyTorch"), and the names the studies' tables give it.

STUDY_NAMES lists, per framework, the names of its rows in the studies' tables, the closest first: DLF
(ilkarman/DeepLearningFrameworks README.md @ 671e2a0) names its MXNet rows by API and the suite's MXNet adapter is
Gluon, so a "MXNet(Module API)" row (the symbolic API of DLF's RNN notebooks) is never set against it; DLBench (Shi et
al., arXiv 1608.07249 v7) spells TensorFlow "Tensorflow" in places. Lua Torch (DLBench's "Torch") is not PyTorch, so it
maps to none. Keras on a backend is a framework of its own (keras-tensorflow, keras-jax, keras-torch: Keras 3,
runner.adapters.keras_adapter; keras-cntk, keras-theano and keras-tensorflow at 2.x: Keras 2.1,
runner.adapters.keras2_adapter): DLF's "Keras(TF)", "Keras(CNTK)" and "Keras(Theano)" rows are keras-tensorflow,
keras-cntk and keras-theano. Standard library only: input data, read by the answer layer and the views alike.
"""
DISPLAY = {"torch": "PyTorch", "tensorflow": "TensorFlow", "mxnet": "MXNet", "jax": "JAX", "cntk": "CNTK",
           "caffe2": "Caffe2", "caffe": "Caffe", "chainer": "Chainer", "keras-tensorflow": "Keras (TensorFlow)", "keras-jax": "Keras (JAX)",
           "keras-torch": "Keras (PyTorch)", "keras-cntk": "Keras (CNTK)",
           "keras-theano": "Keras (Theano)"}
STUDY_NAMES = {
    "torch": ("PyTorch",), "tensorflow": ("TensorFlow", "Tensorflow"),
    "mxnet": ("MXNet(Gluon)", "MXNet"),
    "cntk": ("CNTK",), "caffe2": ("Caffe2",), "caffe": ("Caffe",), "jax": (),
    "chainer": ("Chainer",), "keras-tensorflow": ("Keras(TF)",), "keras-jax": (), "keras-torch": (),
    "keras-cntk": ("Keras(CNTK)",), "keras-theano": ("Keras(Theano)",),
}


def display(code):
    """The one spelling of a framework code ('torch' -> 'PyTorch'); an unknown code as given."""
    return DISPLAY.get(code, code)


def in_study(code, published_name):
    """Whether a study's row named ``published_name`` is the suite's framework ``code`` (STUDY_NAMES)."""
    return published_name in STUDY_NAMES.get(code, ())


def token(text):
    """(name, version) of a --framework token: "tensorflow" -> ("tensorflow", None), "tensorflow@1.4.0" ->
    ("tensorflow", "1.4.0"). Raises ValueError naming the token when the name, or the version after an @, is
    empty ("tensorflow@", "@1.4.0")."""
    name, at, version = text.partition("@")
    if not name:
        raise ValueError("%r has no framework name before the @" % text)
    if at and not version:
        raise ValueError("%r has no version after the @ (NAME@VERSION, or NAME alone for the newest)" % text)
    return name, version or None


def nearest(version, versions):
    """The one of ``versions`` (version texts, e.g. "1.4.0") nearest ``version``: the most leading dotted parts in
    common, then the smallest step at the first part that differs ("1.4" -> "1.4.0"; "0.3.1" -> "1.0.0" before
    "2.13.0"); None when ``versions`` is empty."""
    def distance(other):
        mine, theirs = ([int(p) if p.isdigit() else p for p in text.split(".")] for text in (version, other))
        common = 0
        while common < min(len(mine), len(theirs)) and mine[common] == theirs[common]:
            common += 1
        a, b = (x[common] if common < len(x) else 0 for x in (mine, theirs))
        return -common, abs(a - b) if isinstance(a, int) and isinstance(b, int) else float("inf")

    return min(versions, key=distance) if versions else None
