"""Broadcast-mode edge cases (onboard.comms.uwb.broadcast), pure: runs under CPython (pytest) and inside MicroPython."""
from onboard.comms.uwb import frames as F
from onboard.comms.uwb.broadcast import BroadcastNode


def test_a_tx_done_timestamp_that_is_no_40_bit_tick_count_is_counted_and_not_kept():
    """The radio's TX timestamp of our BCAST must be an integer in 0..2**40-1 (as the RX timestamps are): another
    value is counted in ``bad_timestamps`` and the next BCAST says "no previous TX time" (before: TypeError, or a
    wrapped value sent as the previous TX time)."""
    n = BroadcastNode(3)
    n.start(0)
    acts, _deadline = n.on_event(("timer",), 10 ** 6)          # alone after listening: first BCAST (seq 1)
    assert F.decode(acts[0][1]).seq == 1
    for raw in (2.5, None, -1, 1 << 40):
        n.on_event(("tx_done", raw), 10 ** 6 + 10)
    assert n.stats["bad_timestamps"] == 4 and n.stats["tx"] == 4
    acts, _deadline = n.on_event(("timer",), 2 * 10 ** 6)
    assert F.decode(acts[0][1]).tx_prev == F.NO_TIMESTAMP
    n.on_event(("tx_done", 12345), 2 * 10 ** 6 + 10)           # a good one is kept for the next BCAST
    acts, _deadline = n.on_event(("timer",), 3 * 10 ** 6)
    assert F.decode(acts[0][1]).tx_prev == 12345 + n.ant


def _bcast(src, seq):
    return F.Frame(F.BCAST, src, F.BROADCAST_ID, seq, 0, (0.0, 0.0)).encode()


def test_a_joining_node_keeps_trying_after_the_highest_id_went_silent():
    """Node 20 listened while 1, 5 and 9 sent; 9 then crashes. The join slot follows the highest id still heard
    (5 once 9 has timed out), so node 20 keeps attempting to join (before, it waited for 9 forever: no join
    attempt and no deadline)."""
    j = BroadcastNode(20)
    j.start(0)
    seqs = {1: 0, 5: 0, 9: 0}
    rx = [1000]
    attempts_after_crash = 0
    deadline = None
    for r in range(400):                               # rounds of 4 slots of 1 ms
        base = r * 4000
        alive = (1, 5, 9) if base < 600000 else (1, 5)  # the listen period ends at 530 ms; 9 crashes at 600 ms
        for k in range(len(alive)):
            i = alive[k]
            seqs[i] = (seqs[i] + 1) & 0xFF
            rx[0] += 10 ** 6
            _acts, deadline = j.on_rx(_bcast(i, seqs[i]), rx[0], base + k * 1000)
        while deadline is not None and deadline <= base + 3500:
            acts, deadline = j.on_event(("timer",), deadline)
            if base > 800000:
                attempts_after_crash += len([a for a in acts if a[0] == "tx"])
    assert not j.joined and attempts_after_crash >= 20
    assert j.active_ids(400 * 4000) == [1, 5]


def test_a_bcast_whose_tx_failed_is_sent_as_no_previous_time_also_after_the_seq_wrapped():
    """Seq 1's TX time stays kept when the tx_done of seq 9 (which drops it) never comes; 256 BCASTs later seq 1
    is used again and its TX fails: the next BCAST must say "no previous TX time", not the time seq 1 had
    256 BCASTs ago (a stale time the receivers would use as this BCAST's predecessor)."""
    n = BroadcastNode(3)
    n.start(0)
    now = 10 ** 6
    raw = 5000
    for k in range(1, 258):
        acts, deadline = n.on_event(("timer",), now)
        f = F.decode(acts[0][1])
        assert f.seq == k & 0xFF
        if k not in (9, 1 + 256):                      # seq 9's tx_done is lost; seq 1's TX fails the second time
            raw += 64000
            n.on_event(("tx_done", raw), now + 10)
        else:
            n.on_event(("tx_error", "late"), now + 10)
        now = deadline
    acts, _deadline = n.on_event(("timer",), now)
    f = F.decode(acts[0][1])
    assert f.seq == 2 and f.tx_prev == F.NO_TIMESTAMP


def test_joining_nodes_left_alone_start_a_round_and_find_each_other():
    """Nodes 10 and 11 listen while 1 and 2 send, then 1 and 2 go silent for good before either joined. Each
    starts a round alone once it has heard nobody for a while (its id staggering the start), so 11 hears 10 and
    joins it (before, both waited for a frame forever: no deadline, never a transmission)."""
    nodes = {10: BroadcastNode(10), 11: BroadcastNode(11)}
    deadlines = {}
    for i in nodes:
        deadlines[i] = nodes[i].start(0)[1]
    seq = [0]

    def deliver(src, data, t_us, skip=None):
        for i in nodes:
            if i != src and i != skip:
                deadlines[i] = nodes[i].on_rx(data, t_us * 64, t_us)[1]

    t = 0
    while t < 1000000:                                 # 1 and 2 send every 4 ms for 1 s: past both listen periods
        seq[0] = (seq[0] + 1) & 0xFF
        deliver(1, _bcast(1, seq[0]), t)
        deliver(2, _bcast(2, seq[0]), t + 1000)
        for i in nodes:                                # their join attempts are heard by nobody
            while deadlines[i] is not None and deadlines[i] <= t + 3999:
                nodes[i].on_event(("timer",), deadlines[i])
                deadlines[i] = nodes[i]._next_deadline()
        t += 4000
    assert not nodes[10].joined and not nodes[11].joined
    assert deadlines[10] is not None and deadlines[11] is not None     # each has something to do without a frame
    sent = {10: 0, 11: 0}
    for _ in range(400):                               # the two alone: earliest deadline first, an ideal channel
        i = min([k for k in nodes if deadlines[k] is not None], key=lambda k: deadlines[k])
        now = deadlines[i]
        acts, deadlines[i] = nodes[i].on_event(("timer",), now)
        for a in acts:
            if a[0] == "tx":
                sent[i] += 1
                nodes[i].on_event(("tx_done", now * 64), now)
                deliver(i, a[1], now + 1)
    assert nodes[10].joined and nodes[11].joined and sent[10] > 50 and sent[11] > 50
    assert nodes[10].active_ids(now) == [10, 11] and nodes[11].active_ids(now) == [10, 11]
    assert nodes[10].stats["ranges"] > 10 and nodes[11].stats["ranges"] > 10
