"""Token-ring edge cases (onboard.comms.uwb.token_ring), pure: runs under CPython (pytest) and inside MicroPython.

Each test drives one ``TokenRingNode`` with hand-made frames: a passer's TOKEN retry reaching the node already
holding that token, two holders whose token epochs are 128 apart (neither newer), a membership bitmap without
the node adopted while it passes the token, and raw timestamps that are no 40-bit tick count."""
from onboard.comms.uwb import frames as F
from onboard.comms.uwb.token_ring import TokenRingNode


def _token(src, dst, seq, epoch, pass_no, members):
    return F.make(F.TOKEN, src, dst, seq, epoch=epoch, pass_no=pass_no, members=members).encode()


def test_a_retried_token_does_not_stop_the_hold_it_started():
    """The passer (id 1) did not hear the new holder (id 2) and sends the same TOKEN again: the holder keeps
    holding (it counts a duplicate), it does not give the token up as if a second token with a lower id were
    on the air (which left the ring without a holder until the passer dropped id 2)."""
    b = TokenRingNode(2)
    b.start(0)
    b.on_event(("rx", _token(1, 2, 7, 3, 5, 0b111), 1000), 100)
    assert b.holder and b.state == "gap"
    acts, deadline = b.on_event(("rx", _token(1, 2, 8, 3, 5, 0b111), 5000), 150)
    assert b.holder and b.state == "gap" and deadline == 200 and acts == []
    assert b.stats["token_duplicates"] == 1 and b.stats["token_conflicts_lost"] == 0


def test_two_holders_with_epochs_128_apart_leave_one_token():
    """Neither epoch is newer 128 apart: the lower id keeps its token, the higher id gives it up (before, each
    kept its own and the two tokens never merged)."""
    low = TokenRingNode(1)
    high = TokenRingNode(5)
    for node, epoch in ((low, 4), (high, 132)):
        node.start(0)
        node.epoch = epoch - 1
        node.on_event(("timer",), 10 ** 6)            # silence: regenerates the token with epoch + 1
        assert node.holder and node.epoch == epoch
    low.on_event(("rx", F.make(F.POLL, 5, 9, 1, epoch=132).encode(), 10), 10 ** 6 + 10)
    high.on_event(("rx", F.make(F.POLL, 1, 9, 1, epoch=4).encode(), 10), 10 ** 6 + 10)
    assert low.holder and not high.holder
    assert low.stats["token_conflicts_won"] == 1 and high.stats["token_conflicts_lost"] == 1


def test_a_passer_that_adopted_a_bitmap_without_itself_holds_again_as_a_member():
    """Id 1 passes to id 4 and meanwhile hears a TOKEN between others whose bitmap is empty; id 4 never answers.
    After the retries id 1 drops id 4 and holds the token itself, as a member (before: IndexError)."""
    a = TokenRingNode(1)
    a.start(0)
    a.on_event(("rx", _token(0, 1, 1, 1, 1, 0b10010), 1000), 10)     # the token; ring {1, 4}
    now = 10
    for _ in range(200):                                             # its hold: exchanges with id 4 time out
        if a.state == "pass_sent":
            break
        now += 500
        a.on_event(("timer",), now)
    assert a.state == "pass_sent" and a._pass_to == 4
    a.on_event(("rx", _token(7, 9, 1, a.epoch, 9, 0), 2000), now + 1)
    assert a.members == 0
    for _ in range(10):
        now += 2000
        a.on_event(("timer",), now)
    assert a.holder and a.is_member() and a.member_ids() == [1]


def test_raw_timestamps_that_are_no_40_bit_tick_count_are_counted_not_raised():
    b = TokenRingNode(2)
    b.start(0)
    poll = F.make(F.POLL, 1, 2, 9, epoch=0).encode()
    for raw in (1.5, None, -1, 1 << 40, "12"):
        acts, _deadline = b.on_event(("rx", poll, raw), 100)
        assert acts == []
    assert b.stats["bad_timestamps"] == 5
    acts, _deadline = b.on_event(("rx", poll, 5000), 100)         # a good one is answered
    assert len(acts) == 1 and F.decode(acts[0][1]).type == F.RESPONSE
    b.on_event(("tx_done", 2.5), 200)
    assert b.stats["bad_timestamps"] == 6

