"""run_micropython reports a run past its timeout as MicroPythonError (what its callers catch, e.g.
`harness conformance`'s one-line error), not as subprocess.TimeoutExpired. No node needed."""
import subprocess

import pytest

import harness.sim.micropython as mpy


def test_timeout_is_a_micropython_error(monkeypatch):
    monkeypatch.setattr(mpy, "available", lambda: True)

    def too_slow(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    monkeypatch.setattr(subprocess, "run", too_slow)
    with pytest.raises(mpy.MicroPythonError, match="did not end within 7 s"):
        mpy.run_micropython("while True: pass", timeout_s=7)
