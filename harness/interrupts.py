"""How a harness command is cut short: SIGINT (Ctrl-C) raises KeyboardInterrupt, SIGTERM raises
:class:`Terminated` (while :func:`signals_raise` is in force), so every ``finally`` runs (simulated devices
and child processes stopped, logs closed) and the command exits 130 or 143 with one line. Both go through
:func:`onboard.runtime.signal_guard.deliver`: a log writing a batch finishes it first."""
import contextlib
import signal
import threading

from onboard.runtime import signal_guard

EXIT_INTERRUPTED = 130          # Ctrl-C (128 + SIGINT), as a shell reports it
EXIT_TERMINATED = 143           # SIGTERM (128 + 15)


class Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread, like KeyboardInterrupt for SIGINT)."""


def _on_sigterm(_signum, _frame):
    signal_guard.deliver(Terminated)


def _on_sigint(_signum, _frame):
    signal_guard.deliver(KeyboardInterrupt)


@contextlib.contextmanager
def signals_raise():
    """SIGTERM raises :class:`Terminated` and SIGINT KeyboardInterrupt in the main thread inside the block (the
    previous handlers after); a SIGINT that Python was started with ignored stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old_term = signal.signal(signal.SIGTERM, _on_sigterm)
    old_int = signal.getsignal(signal.SIGINT)
    if old_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old_term)
        if old_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, old_int)


def how_it_ended(exc):
    """What a report says of a run cut short by ``exc``."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT"
    if isinstance(exc, Terminated):
        return "interrupted by SIGTERM"
    return "failed: %s" % type(exc).__name__
