"""The suite's frameworks as people name them: one record per framework with the code it has in specs, images and
bundles ("torch"), the one spelling a reader knows ("PyTorch"), the names the studies' tables give it, and its one
colour in every figure. What its adapter can do is the runner's record of it (runner.frameworks).

``study_names`` lists the names of a framework's rows in the studies' tables, the closest first: DLF
(ilkarman/DeepLearningFrameworks README.md @ 671e2a0) names its MXNet rows by API and the suite's MXNet adapter is
Gluon, so a "MXNet(Module API)" row (the symbolic API of DLF's RNN notebooks) is never set against it; DLBench (Shi et
al., arXiv 1608.07249 v7) spells TensorFlow "Tensorflow" in places. Lua Torch 7 (DLBench's "Torch") is not PyTorch:
it is the suite's torch7 (runner.adapters.torch7_adapter). Keras on a backend is a framework of its own
(keras-tensorflow, keras-jax, keras-torch: Keras 3,
runner.adapters.keras_adapter; keras-cntk, keras-theano and keras-tensorflow at 2.x: Keras 2.1,
runner.adapters.keras2_adapter): DLF's "Keras(TF)", "Keras(CNTK)" and "Keras(Theano)" rows are keras-tensorflow,
keras-cntk and keras-theano. Colours: matplotlib's tab10 (Chainer and Keras on PyTorch: tab20's light orange and
light blue; Keras on CNTK and on Theano its light green and light purple), fixed so that a framework has the same
colour in every figure of the project. Standard library only: input data, read by the answer layer and the views
alike.
"""

from dataclasses import dataclass

OTHER_COLOUR = "#7f7f7f"  # a framework outside the suite


@dataclass(frozen=True)
class Names:
    """How one framework is named and drawn: ``code`` ("torch"), ``display`` ("PyTorch"), ``study_names`` (its rows'
    names in the studies' tables, the closest first; () for none) and ``colour`` ("#rrggbb")."""

    code: str
    display: str
    study_names: tuple
    colour: str


FRAMEWORKS = {
    n.code: n
    for n in (
        Names("torch", "PyTorch", ("PyTorch",), "#d62728"),
        Names("tensorflow", "TensorFlow", ("TensorFlow", "Tensorflow"), "#ff7f0e"),
        Names("mxnet", "MXNet", ("MXNet(Gluon)", "MXNet"), "#1f77b4"),
        Names("jax", "JAX", (), "#9467bd"),
        Names("cntk", "CNTK", ("CNTK",), "#2ca02c"),
        Names("caffe2", "Caffe2", ("Caffe2",), "#8c564b"),
        Names("caffe", "Caffe", ("Caffe",), "#e377c2"),
        Names("chainer", "Chainer", ("Chainer",), "#ffbb78"),
        Names("keras-tensorflow", "Keras (TensorFlow)", ("Keras(TF)",), "#bcbd22"),
        Names("keras-jax", "Keras (JAX)", (), "#17becf"),
        Names("keras-torch", "Keras (PyTorch)", (), "#aec7e8"),
        Names("keras-cntk", "Keras (CNTK)", ("Keras(CNTK)",), "#98df8a"),
        Names("keras-theano", "Keras (Theano)", ("Keras(Theano)",), "#c5b0d5"),
        Names("torch7", "Torch 7 (Lua)", ("Torch",), "#ff9896"),
    )
}


def display(code):
    """The one spelling of a framework code ('torch' -> 'PyTorch'); an unknown code as given."""
    return FRAMEWORKS[code].display if code in FRAMEWORKS else code


def colour(code):
    """The framework's colour in every figure (OTHER_COLOUR, grey, for one outside the suite)."""
    return FRAMEWORKS[code].colour if code in FRAMEWORKS else OTHER_COLOUR


def study_names(code):
    """The names a study's rows give framework ``code`` (its record's ``study_names``; () for an unknown code)."""
    return FRAMEWORKS[code].study_names if code in FRAMEWORKS else ()


def in_study(code, published_name):
    """Whether a study's row named ``published_name`` is the suite's framework ``code`` (``study_names``)."""
    return published_name in study_names(code)


def of_study_name(published_name):
    """The codes of the suite's frameworks that a study's row named ``published_name`` is, in FRAMEWORKS's order."""
    return [code for code, names in FRAMEWORKS.items() if published_name in names.study_names]


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
