"""UWB protocol properties (hypothesis, derandomised): medium access, crash recovery, rejoin, fuzzing."""
import pytest
from hypothesis import given, settings, strategies as st

from harness.sim.clock import SimClock
from harness.sim.radio.uwb_channel import UwbNetwork
from harness.sim.rng import RunRandom
from onboard.comms.uwb import frames as F
from onboard.comms.uwb.node import make_node
from onboard.comms.uwb.token_ring import recovery_bound_us


def _network(n, drifts, loss, mode="token_ring", seed=1, trace=False):
    clock = SimClock()
    radio = {"clock_drifts_ppm": dict(enumerate(drifts)), "loss_prob": loss, "trace": trace}
    net = UwbNetwork(clock, range(n), RunRandom(seed), protocol={"mode": mode}, radio=radio)
    for i in range(n):
        net.set_state(i, ((i % 4) * 1.1, (i // 4) * 1.3))
    return clock, net


def _overlaps(air_log):
    log = sorted(air_log, key=lambda x: x[1])
    return [(a, b) for a, b in zip(log, log[1:]) if b[1] < a[2]]


def _first_range_after(net, t_us):
    """{(i, j): first time (us) node i got a range to j at or after t_us}."""
    out = {}
    for i, lst in net.samples.items():
        for t, s in lst:
            if t >= t_us and (i, s.peer_id) not in out:
                out[(i, s.peer_id)] = t
    return out


drift_lists = st.lists(st.floats(-20.0, 20.0), min_size=8, max_size=8)


@settings(max_examples=25)
@given(n=st.integers(2, 8), drifts=drift_lists, seed=st.integers(0, 1000))
def test_lossless_token_ring_never_has_two_transmitters(n, drifts, seed):
    clock, net = _network(n, drifts[:n], 0.0, seed=seed, trace=True)
    net.start()
    clock.advance_to(400000)
    assert _overlaps(net.air_log) == []
    assert net.stats["lost_collision"] == 0
    got = _first_range_after(net, 0)
    assert len(got) == n * (n - 1)          # every ordered pair ranged


@settings(max_examples=15)
@given(n=st.integers(2, 10), drifts=drift_lists, seed=st.integers(0, 1000))
def test_lossless_broadcast_never_has_two_transmitters(n, drifts, seed):
    drifts = (drifts + drifts)[:n]
    clock, net = _network(n, drifts, 0.0, mode="broadcast", seed=seed, trace=True)
    net.start()
    clock.advance_to(30000 + 25000 * n + 200000)
    assert _overlaps(net.air_log) == []
    got = _first_range_after(net, 30000 + 25000 * n + 100000)
    assert len(got) == n * (n - 1)


@settings(max_examples=25)
@given(n=st.integers(3, 6), drifts=drift_lists, loss=st.sampled_from([0.0, 0.0, 0.01, 0.03]),
       crash_frac=st.floats(0.0, 1.0), victim_frac=st.floats(0.0, 0.999), seed=st.integers(0, 1000))
def test_after_a_crash_survivors_resume_within_the_bound_and_the_node_rejoins(n, drifts, loss, crash_frac,
                                                                             victim_frac, seed):
    clock, net = _network(n, drifts[:n], loss, seed=seed)
    net.start()
    t_crash = 150000 + int(crash_frac * 250000)
    victim = int(victim_frac * n)
    clock.advance_to(t_crash)
    net.crash(victim)
    bound = recovery_bound_us({}, n, max_id=n - 1)
    clock.advance_to(t_crash + bound)
    got = _first_range_after(net, t_crash)
    survivors = [i for i in range(n) if i != victim]
    missing = [(i, j) for i in survivors for j in survivors if i != j and (i, j) not in got]
    assert missing == [], "pairs not ranged within %d us of the crash: %r" % (bound, missing)
    # the node comes back with fresh state and is ranged again within the same bound
    t_back = clock.now_us()
    net.power_on(victim)
    clock.advance_to(t_back + bound)
    got = _first_range_after(net, t_back)
    for j in survivors:
        assert (j, victim) in got and (victim, j) in got



def test_the_leader_invites_the_block_of_a_member_that_left_every_other_discover():
    """token_ring._choose_invite: DISCOVERs alternate between the block of the lowest id that left the ring
    (else the lowest block with free ids) and a rotation over every block with free ids."""
    node = make_node(0, {"mode": "token_ring"})
    node.members = 0b101111 | (1 << 9) | (1 << 12)         # ids 0-3, 5, 9 and 12
    node._drop_member(12)                                   # 12 stopped answering
    firsts = [node._choose_invite() for _ in range(8)]
    assert firsts[0::2] == [8] * 4                          # id 12's block (ids 8-15) every other time
    assert firsts[1::2] == [0, 8, 16, 24]                   # the rotation still reaches every block
    node.members |= 1 << 12                                 # 12 is back: the lowest block with free ids
    assert [node._choose_invite() for _ in range(4)][0::2] == [0, 0]
    node.members = (1 << 32) - 1
    assert node._choose_invite() is None


@pytest.mark.parametrize("loss", [0.0, 0.01, 0.03])
def test_a_restarted_member_rejoins_within_half_the_recovery_bound(loss):
    """The example the rejoin property found (6 nodes, zero drift, seed 253, node 4 off for the recovery
    bound): with the DISCOVER invitations rotating over all four 8-id blocks the restarted node waited for
    its block, ranged again 604-684 ms after power-on at 3 % frame loss (bound 658 ms), 396-466 ms at 1 %;
    with its block invited every other DISCOVER 145-224 ms and 248-325 ms (loss 0: 71-143 ms both ways)."""
    n, victim, seed = 6, 4, 253
    clock, net = _network(n, [0.0] * n, loss, seed=seed)
    net.start()
    t_crash = 150000 + int(0.375 * 250000)
    clock.advance_to(t_crash)
    net.crash(victim)
    bound = recovery_bound_us({}, n, max_id=n - 1)
    clock.advance_to(t_crash + bound)
    t_back = clock.now_us()
    net.power_on(victim)
    clock.advance_to(t_back + bound // 2)
    got = _first_range_after(net, t_back)
    assert all((j, victim) in got and (victim, j) in got for j in range(n) if j != victim), sorted(got)

@given(st.binary(max_size=300))
def test_decoder_fuzz_only_frame_errors(data):
    try:
        f = F.decode(data)
    except F.FrameError as exc:
        assert exc.kind in ("short", "long", "crc", "version", "type", "length", "field")
    else:
        assert f.type in F.TYPE_NAMES


@given(st.binary(min_size=0, max_size=60), st.sampled_from([0, 1, 2, 5, 9, 17]))
def test_decoder_fuzz_with_valid_crc(body, flip):
    # garbage behind a correct CRC reaches the field checks
    from onboard.comms.crc import crc16_ccitt_false
    c = crc16_ccitt_false(body)
    try:
        F.decode(body + bytes([c >> 8, c & 0xFF]))
    except F.FrameError:
        pass


@given(st.lists(st.binary(max_size=80), max_size=30), st.sampled_from(["token_ring", "broadcast"]))
def test_random_frames_never_break_a_node(blobs, mode):
    node = make_node(1, {"mode": mode})
    acts, deadline = node.start(0)
    t = 0
    for k, b in enumerate(blobs):
        t += 700
        acts, deadline = node.on_event(("rx", b, (k * 123456789) & ((1 << 40) - 1)), t)
        assert all(a[0] in ("tx", "range") for a in acts)
    assert node.stats["decode_errors"] + node.stats["rx"] == len(blobs)


@given(ftype=st.sampled_from(sorted(F.TYPE_NAMES)), src=st.integers(0, 254), dst=st.integers(0, 255),
       seq=st.integers(0, 255), epoch=st.integers(0, 255), vx=st.floats(-30, 30), vy=st.floats(-30, 30),
       ts=st.lists(st.integers(0, (1 << 40) - 1), min_size=3, max_size=3),
       entries=st.lists(st.tuples(st.integers(0, 254), st.integers(0, 255), st.integers(0, (1 << 40) - 1)),
                        max_size=20))
def test_codec_round_trip(ftype, src, dst, seq, epoch, vx, vy, ts, entries):
    f = F.make(ftype, src, dst, seq, epoch, (vx, vy), ts=tuple(ts) if ftype in (F.FINAL, F.REPORT) else (),
               pass_no=seq * 7, members=ts[0] & 0xFFFFFFFF, tx_prev=ts[1], invite_first=seq, invite_count=8,
               join_slot_us=400)
    if ftype == F.BCAST:
        f.set_entries(entries)
    g = F.decode(bytes(bytearray(f.encode())))
    assert (g.type, g.src, g.dst, g.seq, g.epoch, g.ts) == (ftype, src, dst, seq, epoch, f.ts)
    assert abs(g.vel_mps[0] - vx) <= 0.0005 + 1e-12 and abs(g.vel_mps[1] - vy) <= 0.0005 + 1e-12
    if ftype == F.BCAST:
        assert g.entries() == list(entries) and g.tx_prev == ts[1]
