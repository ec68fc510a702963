"""Errors the suite reports to users: each names the file, the field and the fix."""


class DlreproError(Exception):
    """Base of the suite's user-facing errors; ``str(err)`` is the message to print."""


class SpecError(DlreproError):
    """A spec or matrix file is invalid. One line per problem: ``FILE:LINE: FIELD: what is expected``."""

    def __init__(self, path, problems):
        self.path = str(path)
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))


class ImageError(DlreproError):
    """An image cannot be rendered, based or built."""


class DatasetError(DlreproError):
    """A dataset cannot be fetched or fails its checksum; ``remedy`` says what the user can do."""

    def __init__(self, message, remedy=None):
        super().__init__(message)
        self.remedy = remedy


class ExecutorError(DlreproError):
    """An executor cannot start (no Docker engine, no GPU runtime, ...)."""


class BundleError(DlreproError):
    """A bundle cannot be read or combined; the message names the file (``invoke validate`` tells more)."""
