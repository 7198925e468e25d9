"""A second process for the fit's two-way splits (``split_runs``): one forked process that runs a function
the parent gave it when it started, once per :meth:`Helper.call`, while the parent works on its own half.

With ``workers`` 1, where ``fork`` is not available, or inside a daemonic process (which may not start
children), the same calls run in this process when their result is asked for: the arithmetic, and so the
results, do not depend on where they ran. The function and its data reach the child through the fork (no
pickling); arguments and results go through a pipe. The child ignores Ctrl-C (the parent stops it) and
ends when the parent closes the helper or goes away.
"""
import multiprocessing
import signal
import time
import traceback


class HelperError(RuntimeError):
    """The second process failed (an exception there, or it died)."""


def can_fork():
    """True where this process may fork a helper (``fork`` available, this process not daemonic)."""
    return "fork" in multiprocessing.get_all_start_methods() and not multiprocessing.current_process().daemon


def _serve(conn, fn):
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    while True:
        try:
            args = conn.recv()
        except (EOFError, OSError):
            return
        if args is None:
            return
        try:
            out = ("ok", fn(*args))
        except BaseException as exc:                      # reported to the parent, which raises it
            out = ("error", "%s: %s\n%s" % (type(exc).__name__, exc, traceback.format_exc()))
        try:
            conn.send(out + (time.process_time(),))
        except Exception as exc:                          # the result could not be sent (not picklable)
            conn.send(("error", "%s: %s" % (type(exc).__name__, exc), time.process_time()))


class Helper:
    """``fn`` run in a second process (module docstring): :meth:`call` ``(*args)`` starts ``fn(*args)``
    there, :meth:`get` waits for its result (one call in flight at a time). ``cpu_s``: the child's CPU
    seconds so far (0 when inline). A context manager: leaving it stops the child."""

    def __init__(self, fn, workers=2):
        self.fn = fn
        self.cpu_s = 0.0
        self.proc = None
        self._pending = None
        if workers > 1 and can_fork():
            ctx = multiprocessing.get_context("fork")
            self.conn, child = ctx.Pipe()
            self.proc = ctx.Process(target=_serve, args=(child, fn), daemon=True)
            self.proc.start()
            child.close()

    @property
    def forked(self):
        return self.proc is not None

    def call(self, *args):
        if self.proc is None:
            self._pending = args
        else:
            self.conn.send(args)

    def get(self):
        if self.proc is None:
            args, self._pending = self._pending, None
            return self.fn(*args)
        try:
            status, value, cpu_s = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(timeout=5.0)
            raise HelperError("the fit's second process died (exit code %s)" % self.proc.exitcode)
        self.cpu_s = cpu_s
        if status != "ok":
            raise HelperError("in the fit's second process: %s" % value)
        return value

    def close(self, abort=False):
        """Stop the child: asked to end, or terminated at once with ``abort`` (a call may be in flight)."""
        if self.proc is None:
            return
        if not abort:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                pass
            self.proc.join(timeout=5.0)
        if self.proc.is_alive():
            self.proc.terminate()
            self.proc.join(timeout=5.0)
        self.conn.close()
        self.proc = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        self.close(abort=exc_type is not None)
        return False
