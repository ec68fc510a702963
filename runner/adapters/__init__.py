"""Framework adapters: one module per framework, all behind the same interface.

The interface, every hook's arguments, shapes and defaults, is ``runner.adapters.base.Adapter``,
which each adapter subclasses. The module for framework ``name`` is
``runner.adapters.<name>_adapter`` (an era whose API is another program has its own, capabilities.ERAS) and is
imported only when a job asks for it, so importing the runner never imports a framework.
"""
import importlib
import os

SUFFIX = "_adapter.py"


class UnsupportedError(RuntimeError):
    """The framework adapter cannot express something the job asks for."""


def available():
    """Frameworks that have an adapter module here (its file found by name, no framework imported): the
    frameworks of runner.adapters.capabilities, Keras's backends sharing one module."""
    from runner.adapters import capabilities

    files = set(f[:-len(".py")] for f in os.listdir(os.path.dirname(__file__)) if f.endswith(SUFFIX))
    return sorted(f for f in capabilities.CAPABILITIES if capabilities.module_of(f) in files)


def module_name(job):
    """The adapter module of ``job``: the one its era names (runner.adapters.capabilities.ERAS: an era whose API is
    another program, not a few guarded calls), else <framework>_adapter."""
    from runner.adapters import capabilities

    return capabilities.era_of(capabilities.token(job)).get("module") or capabilities.module_of(job["framework"])


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

