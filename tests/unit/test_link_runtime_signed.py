"""The board's line-link runtime (onboard.runtime.link_runtime) on a signed link whose counter mark cannot be
saved (flash full or failing): the line is refused with an ``X`` reply and counted, nothing changes, and the
runtime keeps answering; once the mark is saved again, lines are accepted."""
from onboard.comms import line_link as ll
from onboard.comms.signed_frame import FrameSigner, FrameVerifier
from onboard.runtime.ground_robot import GroundRobotRuntime
from onboard.runtime.link_runtime import LinkRuntime

KEY = bytes(range(16, 48))


class _Motors:
    def __init__(self):
        self.cmds = []

    def command(self, cmd):
        self.cmds.append(cmd)

    def stop(self, now_us):
        self.cmds.append(("stop", now_us))


def test_a_counter_mark_that_cannot_be_saved_refuses_the_line_and_the_runtime_goes_on():
    failing = [True]
    saved = []

    def persist(mark):
        if failing[0]:
            raise OSError(28, "no space left on device")
        saved.append(mark)

    link = LinkRuntime(GroundRobotRuntime([(1.0, 0.0)], _Motors()), verifier=FrameVerifier({0: KEY}, persist=persist))
    signer = FrameSigner(KEY)
    replies = link.handle_line(ll.sign_line(signer, ll.encode("T", ["0"])))
    assert len(replies) == 1 and ll.decode(replies[0])[0] == "X"
    assert link.auth_rejected == 1 and link.ticks == 0 and link.verifier.counts["accepted"] == 0
    failing[0] = False
    replies = link.handle_line(ll.sign_line(signer, ll.encode("T", ["0"])))
    assert ll.decode(replies[0])[0] == "S" and link.ticks == 1 and saved
