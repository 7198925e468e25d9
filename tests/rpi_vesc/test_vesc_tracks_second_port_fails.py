"""The two-UART simulated tracks close the first VESC's pty when the second one cannot open (a system out of
ptys): nothing is left open and the temporary folder is gone."""
import os

import pytest

from harness.sim import vesc_tracks


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_a_second_port_that_cannot_open_releases_the_first(monkeypatch):
    opened = []
    real = vesc_tracks.SimVescPort

    def second_fails(*args, **kwargs):
        if opened:
            raise OSError("out of pseudo-terminals")      # injected: the second pty cannot be opened
        port = real(*args, **kwargs)
        opened.append(port)
        return port

    monkeypatch.setattr(vesc_tracks, "SimVescPort", second_fails)
    before = set(os.listdir("/proc/self/fd"))
    made = []
    monkeypatch.setattr(vesc_tracks.SimVescTracks, "close",
                        lambda self, _close=vesc_tracks.SimVescTracks.close: (made.append(self), _close(self)))
    with pytest.raises(OSError, match="pseudo-terminals"):
        vesc_tracks.SimVescTracks(vesc_tracks.TRACK_VESC, "two_uarts", 100.0, 20.0, 2.0)
    assert len(opened) == 1 and made and not os.path.exists(made[0].tmpdir)
    assert set(os.listdir("/proc/self/fd")) - before == set()
