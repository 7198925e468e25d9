"""Sections that a signal handler's exception must not cut in half (writing a batch of a log).

A program's SIGINT / SIGTERM handlers call :func:`deliver` with the exception class to raise
(KeyboardInterrupt, the harness's Terminated): outside a :func:`deferred` section it is raised at
once, inside one it is raised when the outermost section ends. Blocking the signals instead
(``pthread_sigmask``) would not do: the kernel hands a process signal to any thread that does not
block it, and Python then runs the handler in the main thread anyway.
"""
import contextlib

_state = {"depth": 0, "pending": None}


def deliver(exc_class):
    """Raise ``exc_class()`` now, or when the running :func:`deferred` section ends."""
    if _state["depth"]:
        if _state["pending"] is None:
            _state["pending"] = exc_class
        return
    raise exc_class()


@contextlib.contextmanager
def deferred():
    """Within the block a delivered signal waits; it is raised as the outermost block ends, also when the block
    itself raised (the signal's exception then carries the block's as its ``__context__``), so that it is
    neither lost nor raised at the end of some later, unrelated section."""
    _state["depth"] += 1
    try:
        yield
    finally:
        _state["depth"] -= 1
        if _state["depth"] == 0 and _state["pending"] is not None:
            exc_class, _state["pending"] = _state["pending"], None
            raise exc_class()
