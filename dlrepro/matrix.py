"""The image matrix (images/matrix.yaml): which image runs which framework version on which device."""
from pathlib import Path
from typing import Literal, Optional

from pydantic import Field, field_validator

from dlrepro import REPO_ROOT, yamlfile
from dlrepro.errors import ImageError
from dlrepro.yamlfile import Strict

IMAGES_DIR = REPO_ROOT / "images"
MATRIX_FILE = IMAGES_DIR / "matrix.yaml"
LOCKS_DIR = IMAGES_DIR / "locks"


class Bootstrap(Strict):
    suite: str = Field(description="Debian suite given to debootstrap, e.g. bookworm")
    variant: Literal["minbase", "buildd"] = "minbase"


class Base(Strict):
    description: str
    registry: str = Field(pattern=r"^[^@\s]+@sha256:[0-9a-f]{64}$",
                          description="image reference pinned by digest: NAME[:TAG]@sha256:HEX")
    bootstrap: Bootstrap


class Image(Strict):
    framework: str
    version: str
    device: Literal["cpu", "cuda"]
    python: str = Field(pattern=r"^3\.\d+$")
    base: str
    system_packages: list[str] = Field(min_length=1)
    cuda: Optional[str] = None
    cudnn: Optional[str] = None
    min_driver: Optional[str] = None
    env: dict[str, str] = Field({}, description="environment variables of the image (e.g. LD_LIBRARY_PATH)")
    notes: Optional[str] = None

    _known_base = field_validator("base")(yamlfile.reference("bases", "base"))

    @property
    def name(self):
        return "%s-%s-%s" % (self.framework, self.version, self.device)

    @property
    def lock_input(self) -> Path:
        return LOCKS_DIR / ("%s.in" % self.name)

    @property
    def lock(self) -> Path:
        return LOCKS_DIR / ("%s.txt" % self.name)


class Matrix(Strict):
    bases: dict[str, Base]
    default_frameworks: list[str] = Field(min_length=1)
    images: list[Image] = Field(min_length=1)

    def find(self, framework, device, version=None):
        """The image for (framework, device[, version]), the last one listed when no version is given.

        Raises ImageError naming the matrix file and the entries that exist.
        """
        found = [i for i in self.images if i.framework == framework and i.device == device
                 and version in (None, i.version)]
        if not found:
            have = ", ".join(i.name for i in self.images)
            raise ImageError("%s: no image for framework %r%s on device %r; the matrix has: %s"
                             % (MATRIX_FILE, framework, " version %s" % version if version else "", device, have))
        return found[-1]

    def base_of(self, image):
        return self.bases[image.base]


def load(path=MATRIX_FILE):
    """Load and validate the image matrix; raises SpecError naming file, line and field."""
    return yamlfile.load(path, Matrix, names_of=("bases",))
