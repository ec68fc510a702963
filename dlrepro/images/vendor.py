"""Vendor images: the libraries an era GPU build links without bundling them (matrix.Vendor), found before a build.

The studies' GPU builds (tensorflow-gpu 1.4.0, mxnet-cu80 0.12.0) link NVIDIA's CUDA 8 runtime and cuDNN 6, which no
package registry reachable here and no Debian suite serves. Their images copy those libraries from a vendor image
the user supplies; ``ensure`` finds it (here, or pulled by its tag) or says exactly what is missing.
"""

import docker

from dlrepro.engine import client
from dlrepro.errors import ImageError


class VendorRef:
    """A vendor image found here: ``ref`` (its tag), ``image_id`` (the pin written into the Dockerfile)."""

    def __init__(self, ref, image_id):
        self.ref, self.image_id = ref, image_id

    @property
    def record(self):
        return {"ref": self.ref, "image_id": self.image_id}


def missing(image):
    """(reason, remedy) of matrix entry ``image`` whose vendor image is not here."""
    vendor = image.vendor
    return (
        "%s needs %s from the vendor image %s, which is not here and no registry answered (no Debian suite or "
        "Python registry reachable here serves them)" % (image.name, vendor.provides, vendor.image),
        "pull %s where a registry is reachable, then `docker save %s | docker load` here"
        % (vendor.image, vendor.image),
    )


def ensure(image, pull=True, log=print):
    """The VendorRef of ``image``'s vendor image (None when it has none): here, else pulled by tag when ``pull``.
    Raises ImageError (reason and remedy of ``missing``) when neither works."""
    if image.vendor is None:
        return None
    ref = image.vendor.image
    try:
        found = client().images.get(ref)
    except docker.errors.ImageNotFound:
        if not pull:
            raise ImageError(*missing(image)) from None
        try:
            found = client().images.pull(ref)
        except docker.errors.APIError:
            raise ImageError(*missing(image)) from None
        log("%s: pulled the vendor image %s (%s)" % (image.name, ref, found.id))
    return VendorRef(ref, found.id)
