"""One switch picks the implementation of an algorithm: pure Python, Cython or NumPy.

``ONBOARD_IMPL`` (environment) or an explicit ``impl=`` argument selects it:
``pure`` (default; the MicroPython-compatible path), ``cython`` (cython_ext, built by
``make setup``) or ``numpy``. Asking for an implementation that is not available
raises :class:`ImplUnavailable` rather than silently falling back, so a benchmark
or test never measures a different path than it names.
"""
import importlib
import os

ENV_VAR = "ONBOARD_IMPL"
IMPLEMENTATIONS = ("pure", "cython", "numpy")


class ImplUnavailable(ImportError):
    pass


def selected(impl=None):
    """The implementation name to use: the argument, else $ONBOARD_IMPL, else 'pure'."""
    name = impl or os.environ.get(ENV_VAR, "pure")
    if name not in IMPLEMENTATIONS:
        raise ValueError("unknown implementation %r (choose from %s; set by %s)"
                         % (name, ", ".join(IMPLEMENTATIONS), ENV_VAR))
    return name


def load(modules, impl=None):
    """Import the module that implements the selected path.

    modules: dict implementation name -> module path, e.g.
    ``{"pure": "onboard.estimators.eskf", "cython": "cython_ext.eskf"}``.
    """
    name = selected(impl)
    path = modules.get(name)
    if path is None:
        raise ImplUnavailable("no %s implementation (available: %s)" % (name, ", ".join(sorted(modules))))
    try:
        return importlib.import_module(path)
    except ImportError as exc:
        hint = " (run `make setup` to build cython_ext)" if name == "cython" else ""
        raise ImplUnavailable("%s implementation %s cannot be imported: %s%s" % (name, path, exc, hint))


def available(modules):
    """Implementation names in ``modules`` that import here (for parametrised tests and benchmarks)."""
    out = []
    for name in IMPLEMENTATIONS:
        if name in modules:
            try:
                importlib.import_module(modules[name])
            except ImportError:
                continue
            out.append(name)
    return out
