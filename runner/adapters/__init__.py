"""Framework adapters: one module per framework, all behind the same interface.

The interface, every hook's arguments, shapes and defaults, is ``runner.adapters.base.Adapter``,
which each adapter subclasses. The module for framework ``name`` is
``runner.adapters.<name>_adapter`` and is imported only when a job asks for it, so importing
the runner never imports a framework.
"""
import importlib
import os

SUFFIX = "_adapter.py"


class UnsupportedError(RuntimeError):
    """The framework adapter cannot express something the job asks for."""


def available():
    """Frameworks that have an adapter module here (found by file name, nothing imported)."""
    return sorted(f[:-len(SUFFIX)] for f in os.listdir(os.path.dirname(__file__)) if f.endswith(SUFFIX))


def load(job):
    """Construct the adapter for ``job["framework"]``; raises UnsupportedError for an unknown one."""
    name = job["framework"]
    try:
        module = importlib.import_module("runner.adapters.%s_adapter" % name)
    except ImportError as exc:
        if getattr(exc, "name", None) == "runner.adapters.%s_adapter" % name:
            raise UnsupportedError("no runner adapter for framework %r" % name)
        raise
    return module.Adapter(job)

