"""harness.sim.avr_bridge.AvrBridge when the bridge does not start as it should (no answer in time, a bad
ELF): FilError, and no avr_bridge process or pipe is left behind."""
import glob
import os

import pytest

from harness.sim.avr_bridge import AvrBridge, FilError

pytestmark = pytest.mark.fil


def _children():
    """PIDs of this process's child processes (a bridge started and not reaped is one of them)."""
    pids = set()
    for path in glob.glob("/proc/%d/task/*/children" % os.getpid()):
        with open(path) as f:
            pids.update(int(p) for p in f.read().split())
    return pids


def test_no_answer_in_time_leaves_no_bridge_running(fil_built):
    before = _children()
    with pytest.raises(FilError, match="did not answer"):
        AvrBridge("uno", reply_timeout_s=1e-9)
    assert _children() == before


def test_bad_elf_is_a_fil_error_and_leaves_no_bridge(fil_built, tmp_path):
    elf = tmp_path / "not_an.elf"
    elf.write_bytes(b"\x7fELF garbage")
    before = _children()
    with pytest.raises(FilError, match="bridge exited"):
        AvrBridge("uno", elf=str(elf))
    assert _children() == before
