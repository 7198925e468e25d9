"""The Pi's external pose input (boards/rpi/app.py). An unsigned input is for a bridge on the robot itself
(``is_loopback``): a host *name* that merely starts with "127." (``127.0.0.1.nip.io``, ``127.evil.example``)
resolves through DNS to any address, so it is no loopback host; loopback addresses in any form ``bind()`` takes
still are. A signed input whose counter mark cannot be saved drops the frame and keeps running."""
import pytest

from boards.rpi.app import UdpPoseSource, UnsafeInputError, is_loopback
from boards.rpi.service import merged_config
from onboard.core.settings import ConfigError

NAMES = ["127.0.0.1.nip.io", "127.evil.example", "127.", "127.0.0.1 "]


@pytest.mark.parametrize("host", NAMES + ["0.0.0.0", "10.0.0.7", "", None, 127])
def test_names_and_other_addresses_are_not_loopback(host):
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "127.1", "localhost", "::1"])
def test_loopback_addresses_are(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", NAMES[:2])
def test_an_unsigned_pose_input_on_a_127_name_is_refused(host):
    with pytest.raises(UnsafeInputError, match="refusing an unsigned pose input"):
        UdpPoseSource(0, host=host)
    with pytest.raises(ConfigError, match="pose.host, pose.signing must be signed on a non-loopback host"):
        merged_config({"pose": {"host": host, "signing": "off"}})


def test_a_counter_mark_that_cannot_be_saved_drops_the_frame_and_the_input_runs_on(tmp_path):
    """The signed pose input's verifier saves its counter mark to a file; when that write fails (disk full, a
    read-only folder) the frame is dropped and counted, the poll does not raise (the service keeps running),
    and the next frame is accepted once the mark can be saved."""
    import json
    import socket

    from onboard.comms.signed_frame import FrameSigner, FrameVerifier
    key = bytes(range(16))
    mark = {"path": str(tmp_path / "missing-folder" / "pose.key.counter")}

    def persist(value):
        with open(mark["path"], "w") as fh:
            fh.write("%d\n" % value)
    src = UdpPoseSource(0, host="127.0.0.1", verifier=FrameVerifier({0: key}, persist=persist))
    signer = FrameSigner(key)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    msg = json.dumps({"pos_ned_m": [1.0, 2.0, 0.0], "euler_rad": [0.0, 0.0, 0.5]}).encode()
    try:
        tx.sendto(signer.frame(msg), ("127.0.0.1", src.port))
        assert _poll_until(src, 1) == []
        assert src.rejected == 1 and src.mark_errors == 1 and "No such file" in src.last_mark_error
        mark["path"] = str(tmp_path / "pose.key.counter")
        tx.sendto(signer.frame(msg), ("127.0.0.1", src.port))
        got = _poll_until(src, 2)
        assert len(got) == 1 and got[0].pos_ned_m[0] == 1.0 and src.received == 1
    finally:
        tx.close()
        src.close()


def _poll_until(src, handled):
    """Poll until ``handled`` datagrams were taken (received + rejected): loopback UDP arrives at once, but not
    necessarily before the first recv."""
    import select
    out = []
    while src.received + src.rejected < handled:
        select.select([src.sock], [], [], 5.0)
        out += src.poll(0)
    return out
