"""Faults of `onboard deploy` on the virtual MicroPython board: a copy that arrives damaged without mpremote
noticing must not be switched to, the boot stub (/main.py) included."""
import pytest

from harness.sim import virtual_board
from harness.sim.virtual_board import VirtualBoard
from onboard.deploy import deployer
from onboard.deploy import device as dev

pytestmark = [pytest.mark.skipif(not virtual_board.available(), reason="needs node + MicroPython npm package"),
              pytest.mark.timeout(240)]


def _probe(port):
    return dev.Device(port, timeout_s=20).exec_json(dev.PROBE_SCRIPT)


@pytest.mark.slow
def test_a_damaged_boot_stub_is_not_renamed_over_main_py(monkeypatch):
    real_copy = deployer._copy

    def copy_then_damage_the_stub(device, plan, built, stub_bytes):
        real_copy(device, plan, built, stub_bytes)
        assert plan.stub
        device.run(["exec", "f = open('/main.new', 'w')\nf.write('# damaged\\n')\nf.close()"])

    monkeypatch.setattr(deployer, "_copy", copy_then_damage_the_stub)
    with VirtualBoard() as board:
        with pytest.raises(dev.CopyFailed, match="main.py"):
            deployer.deploy("pico_rp2040", board.port, timeout_s=20, log=lambda m: None)
        after = _probe(board.port)
        assert after["stub"] is None and after["active"] is None        # nothing switched, no damaged main.py
