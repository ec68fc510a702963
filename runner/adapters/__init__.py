"""Framework adapters: one module per framework, all behind the same interface.

The interface, every hook's arguments, shapes and defaults, is ``runner.adapters.base.Adapter``,
which each adapter subclasses. The module for framework ``name`` is
``runner.adapters.<name>_adapter`` (an era whose API is another program has its own: runner.frameworks) and is
imported only when a job asks for it, so importing the runner never imports a framework.
"""

import importlib
import os

SUFFIX = "_adapter.py"


class UnsupportedError(RuntimeError):
    """The framework adapter cannot express something the job asks for."""


def available():
    """Frameworks that have an adapter module here (its file found by name in this package's folders, no framework
    imported): the frameworks of runner.frameworks, Keras's backends sharing one module."""
    from runner import frameworks

    files = set(f[: -len(".py")] for folder in __path__ for f in os.listdir(folder) if f.endswith(SUFFIX))
    return sorted(name for name, record in frameworks.FRAMEWORKS.items() if record.module in files)


def module_name(job):
    """The adapter module of ``job``: its framework record's at its version (runner.frameworks: an era whose API is
    another program, not a few guarded calls, has its own), else <framework>_adapter."""
    from runner import frameworks

    record = frameworks.of(frameworks.Token.of_job(job))
    return record.module if record else "%s_adapter" % job["framework"]


def load(job):
    """Construct the adapter for ``job["framework"]`` (and its version: ``module_name``); raises UnsupportedError for
    an unknown one."""
    name = "runner.adapters.%s" % module_name(job)
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        if getattr(exc, "name", None) == name:
            raise UnsupportedError("no runner adapter for framework %r" % job["framework"])
        raise
    return module.Adapter(job)
