"""Errors the suite reports to users, and the problems its checks find.

Every error has one shape: a message that names the file, the field or the option, and
(where there is one) a remedy; every task prints them the same way (``error: ...``, then
``remedy: ...``; dlrepro.cli.console.user_errors) and exits with the error's ``exit_code``.

Exit statuses (docs/usage.md), as diff and grep use them: 0 the command did what was asked and nothing failed;
1 it did, and the answer is "failed" (a regression under --fail-on, a job failed or none ran, a bundle or an
archive fails its checks, a study report written without bundles its record names); 2 it could not do what was
asked: bad input or usage (an unknown spec, bundle, option value or file), or an error that stopped it, which
is every DlreproError but MissingBundles; 130 interrupted.
"""

from typing import NamedTuple


class DlreproError(Exception):
    """Base of the suite's user-facing errors: ``str(err)`` is the message, ``err.remedy`` the fix or None,
    ``exit_code`` the command's exit status (2: it could not do what was asked)."""

    exit_code = 2

    def __init__(self, message, remedy=None):
        super().__init__(message)
        self.remedy = remedy


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


class ExecutorError(DlreproError):
    """An executor cannot start (no Docker engine, no GPU runtime, ...)."""


class EngineLost(ExecutorError):
    """The container engine went away while jobs ran (its process died, its socket closed): the run stops without
    publishing, its bundle stays partial, and the jobs it lost are recorded "interrupted"; a plain ``--resume``
    runs them again once the engine is back. ``running``: the ids of the jobs that were running."""

    def __init__(self, message, remedy=None, running=()):
        super().__init__(message, remedy)
        self.running = list(running)


class CannotRunHere(DlreproError):
    """Jobs cannot run on this host as asked (an image it cannot run, a missing GPU): they are recorded as
    skipped with this message as the reason and the remedy."""


class SourcesMissing(ImageError, CannotRunHere):
    """An image built from source archives (Lua Torch 7's) cannot be built: an archive is neither in the cache nor
    supplied by its mirror. `dlrepro build` reports it as an image not built; a run skips that image's jobs with
    this reason and remedy, as it skips a job whose dataset is missing."""


class BundleError(DlreproError):
    """A bundle cannot be read or combined; the message names the file (``dlrepro validate`` tells more)."""


class ResultsUnwritable(DlreproError):
    """The results folder cannot be written (full, read-only): the run stops; what was measured stays in the
    partial bundle, resumable once the folder can be written."""


class ArchiveError(DlreproError):
    """An archive cannot be written or read; the message names the file and the fix."""


class RunBroken(DlreproError):
    """An unexpected error stopped the run; the bundle with what finished was still published."""


class Problem(NamedTuple):
    """One failed check of a bundle or an archive: which check, which file (relative to the bundle or
    the archive's top folder), what is wrong. Printed as ``CHECK FILE: MESSAGE``; equal to the tuple
    (check, file, message)."""

    check: str
    file: str
    message: str

    def __str__(self):
        return "%s %s: %s" % (self.check, self.file, self.message)
