"""How a harness command is cut short: SIGINT (Ctrl-C) raises KeyboardInterrupt, SIGTERM raises
:class:`Terminated` (while :func:`sigterm_raises` is in force), so every ``finally`` runs (simulated devices
and child processes stopped, logs closed) and the command exits 130 or 143 with one line."""
import contextlib
import signal
import threading

EXIT_INTERRUPTED = 130          # Ctrl-C (128 + SIGINT), as a shell reports it
EXIT_TERMINATED = 143           # SIGTERM (128 + 15)


class Terminated(BaseException):
    """SIGTERM arrived (raised in the main thread, like KeyboardInterrupt for SIGINT)."""


def _on_sigterm(_signum, _frame):
    raise Terminated()


@contextlib.contextmanager
def sigterm_raises():
    """SIGTERM raises :class:`Terminated` in the main thread inside the block (the previous handler after)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def how_it_ended(exc):
    """What a report says of a run cut short by ``exc``."""
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted by SIGINT"
    if isinstance(exc, Terminated):
        return "interrupted by SIGTERM"
    return "failed: %s" % type(exc).__name__
