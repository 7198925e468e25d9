"""The UWB channel simulator's fast paths change nothing: short N = 20 runs (both protocol modes, plus a
run of each with loss, NLOS pairs, out-of-range pairs, a crash and a reboot) give exactly the range
samples, channel counters and protocol counters pinned here, on the fast channel (UwbNetwork) with every
available implementation (pure; cython: the protocol and the per-frame channel code compiled from the same
sources, when built) and on the plain reference path (ReferenceUwbNetwork); and they agree on runs driven
through set_state.

The expected digests were computed with the simulator and protocol code as they were before the fast
paths (every frame handed to every receiver through the general delivery path); each covers every range
sample (receiving node, true time, sample time, peer, ``repr`` of the range and of the peer velocity), the
channel's counters and every node's protocol report, so one changed bit anywhere changes it.
"""
import functools
import hashlib
import importlib

import pytest

from harness.scenarios.uwb_ranging import BouncingMotion
from harness.sim.clock import PRIORITY_DEFAULT, SimClock
from harness.sim.radio.uwb_channel import FRAME_MODULES, PROTOCOL_PACKAGES, SimRadio, UwbNetwork, truth_module
from harness.sim.radio.uwb_channel_reference import ReferenceUwbNetwork
from harness.sim.rng import RunRandom
from onboard.comms.uwb import frames as F
from onboard.core.samples import RangeSample
from onboard.impl import available

# implementations built here (the compiled one needs `make setup`; without it only pure runs)
IMPLS = [i for i in available({k: PROTOCOL_PACKAGES[k] + ".token_ring" for k in ("pure", "cython")})
         if i in available(FRAME_MODULES)]


def _digest(mode, n, end_us, seed, radio=None, crash=None, area_m=4.0, net_cls=UwbNetwork, clock_cls=SimClock,
            motion_cls=BouncingMotion, nets=None):
    """sha256 over every range sample, the channel's counters and each node's protocol report of one run.
    crash: None or (node id, crash time us, power-on time us). nets: None or a list the network is appended to."""
    random = RunRandom(seed)
    clock = clock_cls()
    state_fn = motion_cls(n, random.stream("uwb.motion.%d" % n), area_m, 1.0)
    net = net_cls(clock, range(n), random, protocol={"mode": mode}, radio=radio, state_fn=state_fn)
    if nets is not None:
        nets.append(net)
    h = hashlib.sha256()
    count = [0]

    def on_range(node_id, s, true_us):
        count[0] += 1
        h.update(("%d %d %d %d %r %r\n" % (node_id, true_us, s.time_us, s.peer_id, s.range_m,
                                           s.peer_vel_mps)).encode())

    net.keep_samples = False
    net.on_range.append(on_range)
    net.start()
    if crash is not None:
        node, t_crash, t_on = crash
        clock.call_at(t_crash, lambda now: net.crash(node))
        clock.call_at(t_on, lambda now: net.power_on(node))
    clock.advance_to(end_us)
    h.update(repr(sorted(net.stats.items())).encode())
    for i in range(n):
        node = net.protocol_node(i)
        h.update(repr(sorted(node.report().items())).encode())
    return count[0], h.hexdigest()


CASES = {
    "token_ring": (dict(mode="token_ring", n=20, end_us=400000, seed=3),
                   (226, "c4e5e44a8966c4724d6bd96009cf9c57818d3d0e311ca5e55858460912e7cec2")),
    "broadcast": (dict(mode="broadcast", n=20, end_us=900000, seed=4),
                  (7938, "169c67e94de2dbb6f366f1bd7ca3542b4e9dcd64b15a90e8031015aa11a091e4")),
    "token_ring_lossy": (dict(mode="token_ring", n=20, end_us=400000, seed=5, area_m=9.0,
                              radio={"loss_prob": 0.02, "nlos_pair_fraction": 0.3, "max_range_m": 8.0},
                              crash=(3, 150000, 250000)),
                         (198, "b9071f5cc75ebddb2574339fa950ae3b2b2df7c48773276ed63de8dd77053ce5")),
    "broadcast_lossy": (dict(mode="broadcast", n=20, end_us=900000, seed=6, area_m=9.0,
                             radio={"loss_prob": 0.02, "nlos_pair_fraction": 0.3, "max_range_m": 8.0},
                             crash=(5, 550000, 600000)),
                        (4564, "fb06394d5c18e9ace686b04e355d5994b3e0d6186aabc193655b034aa829799d")),
}


NETWORKS = {"fast-" + i: functools.partial(UwbNetwork, impl=i) for i in IMPLS}
NETWORKS["reference"] = functools.partial(ReferenceUwbNetwork, impl="pure")


@pytest.mark.parametrize("net", sorted(NETWORKS))
@pytest.mark.parametrize("name", sorted(CASES))
def test_n20_run_is_bit_identical_to_the_reference(name, net):
    kwargs, expected = CASES[name]
    count, digest = _digest(net_cls=NETWORKS[net], **kwargs)
    assert count > 100                       # the run ranged (a digest of nothing would pin nothing)
    assert (count, digest) == expected


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_channel_reading_its_own_motion_models_positions_gives_the_same_run(name, impl):
    """Where the state_fn is the BouncingMotion of the channel's own implementation (as in the uwb-ranging
    scenario), a frame's end reads the receivers' positions from the model's arrays (positions_at) instead of
    its state: the same digests."""
    kwargs, expected = CASES[name]
    nets = []
    got = _digest(net_cls=functools.partial(UwbNetwork, impl=impl), motion_cls=truth_module(impl).BouncingMotion,
                  nets=nets, **kwargs)
    assert nets[0]._motion is nets[0].state_fn is not None
    assert got == expected


class _CountingClock(SimClock):
    """A SimClock subclass that counts the calls of the methods the channel queues its events with: the channel
    must call them (its inline queueing is for the plain SimClock only)."""

    def __init__(self):
        SimClock.__init__(self)
        self.calls = 0

    def call_at(self, time_us, fn, priority=PRIORITY_DEFAULT):
        self.calls += 1
        SimClock.call_at(self, time_us, fn, priority)

    def call_reserved(self, key, fn):
        self.calls += 1
        SimClock.call_reserved(self, key, fn)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_clock_other_than_the_plain_simclock_gets_its_own_calls_and_the_same_run(impl):
    """On a plain SimClock the channel queues its events itself (the same entries); any other clock, here a
    subclass, gets call_at / call_reserved and the run is the same, digest for digest."""
    kwargs, expected = CASES["broadcast_lossy"]
    clocks = []

    def make_clock():
        clocks.append(_CountingClock())
        return clocks[-1]

    assert _digest(net_cls=functools.partial(UwbNetwork, impl=impl), clock_cls=make_clock, **kwargs) == expected
    assert clocks[0].calls > 1000
    plain = SimClock()
    assert UwbNetwork(plain, range(2), RunRandom(1), impl=impl)._clock_vars is plain.__dict__
    assert UwbNetwork(clocks[0], range(2), RunRandom(1), impl=impl)._clock_vars is None


def _trace(net_cls, mode, seed, radio, script):
    """Every sample (with its time and receiving node), the channel's counters and the protocol reports of a
    run driven by ``script(clock, net)`` (positions by set_state)."""
    clock = SimClock()
    net = net_cls(clock, range(5), RunRandom(seed), protocol={"mode": mode}, radio=radio)
    script(clock, net)
    out = [(i, t, s.peer_id, repr(s.range_m), repr(s.peer_vel_mps)) for i in net.samples for t, s in net.samples[i]]
    reports = [net.protocol_node(i).report() if net.protocol_node(i) else None for i in range(5)]
    return out, dict(net.stats), reports, net.air_log


def _moving_3d_script(clock, net):
    """3-D positions and velocities set between runs of the clock: zeros (either sign), a NaN (rejected and
    counted on every frame), a node crashed and rebooted, two frames forced to overlap."""
    pos = {0: (0.0, 0.0, 1.0), 1: (3.0, 0.5, 1.2), 2: (1.0, 2.0, 0.8), 3: (2.5, 3.5, 1.0), 4: (0.5, 3.0, 1.5)}
    for i in range(5):
        net.set_state(i, pos[i], (0.1 * i, -0.2))
    net.start()
    for step in range(12):
        clock.advance_to(clock.now_us() + 25000)
        for i in range(5):
            x, y, z = pos[i]
            pos[i] = (x + 0.01 * (i - 2), y - 0.005 * i, z)
            vel = [(0.0, 0.0), (-0.0, 0.3), (float("nan"), 0.1), (0.2 * step, -0.1), (0.3, 0.3)][(i + step) % 5]
            net.set_state(i, pos[i], vel)
        if step == 4:
            net.crash(2)
        if step == 7:
            net.power_on(2)
        if step == 9:
            frame = F.make(F.BCAST, 3, 255, 1, tx_prev=F.NO_TIMESTAMP).encode()
            SimRadio(net, 3).transmit(frame)
            SimRadio(net, 4).transmit(F.make(F.BCAST, 4, 255, 1, tx_prev=F.NO_TIMESTAMP).encode())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("mode", ["token_ring", "broadcast"])
def test_fast_paths_match_the_reference_on_3d_moves_odd_velocities_crashes_and_collisions(mode, impl):
    radio = {"loss_prob": 0.05, "nlos_pair_fraction": 0.4, "trace": True, "max_range_m": 3.5}
    a = _trace(functools.partial(UwbNetwork, impl=impl), mode, 11, radio, _moving_3d_script)
    b = _trace(functools.partial(ReferenceUwbNetwork, impl="pure"), mode, 11, radio, _moving_3d_script)
    assert len(a[0]) > 50 and a[1]["lost_range"] > 0 and a[1]["lost_random"] > 0
    assert any(r and r["bad_velocity"] > 0 for r in a[2])
    assert a == b


def test_the_cython_path_runs_the_compiled_protocol_and_channel():
    """impl="cython" runs extension types built from the same sources (not the pure classes under another
    name); skipped where cython_ext is not built."""
    if "cython" not in IMPLS:
        pytest.skip("cython_ext.uwb not built (make setup)")
    import cython_ext.uwb.token_ring as compiled
    import onboard.comms.uwb.token_ring as pure
    net = UwbNetwork(SimClock(), range(3), RunRandom(1), protocol={"mode": "token_ring"}, impl="cython")
    net.start()
    node = net.protocol_node(0)
    assert type(node) is compiled.TokenRingNode and not isinstance(node, pure.TokenRingNode)
    assert compiled.__file__.endswith((".so", ".pyd")) and not hasattr(node, "__dict__")   # slots, no dict
    assert type(net.nodes[0]).__module__ == "cython_ext.uwb_channel_frame"


# -- the protocol's fast paths, piece by piece, on every built implementation ---------------------------------
PROTOCOL_IMPLS = [i for i in ("pure", "cython") if i in available({k: PROTOCOL_PACKAGES[k] + ".broadcast"
                                                                   for k in ("pure", "cython")})]


def _protocol(impl, module):
    return importlib.import_module(PROTOCOL_PACKAGES[impl] + "." + module)


@pytest.mark.parametrize("impl", PROTOCOL_IMPLS)
def test_range_sample_is_the_constructors_sample(impl):
    """node_base.range_sample builds what RangeSample(...) builds: same type, same fields, same value types."""
    build = _protocol(impl, "node_base").range_sample
    for args in [(123456789, 3, 1.25, (0.5, -0.25), 0.2475), (0, 0, -0.0, (0.0, -0.0), 0.0),
                 (2 ** 40 + 7, 254, float("nan"), (32.767, -32.767), 1e-3)]:
        got, want = build(*args), RangeSample(*args)
        assert type(got) is RangeSample and got == want or args[2] != args[2]
        assert [(k, repr(v), type(v)) for k, v in vars(got).items()] == \
               [(k, repr(v), type(v)) for k, v in vars(want).items()]


@pytest.mark.parametrize("impl", PROTOCOL_IMPLS)
def test_broadcast_range_is_ds_twr_for_small_large_and_wrapped_intervals(impl):
    """The inline DS-TWR of BroadcastNode._range (C integers where compiled, below 2**31 ticks) gives exactly
    timestamps.ds_twr_tof_ticks, and intervals from 2**31 up to half a wrap take the Python-integer path."""
    B, Fm = _protocol(impl, "broadcast"), _protocol(impl, "frames")
    T = _protocol("pure", "timestamps")
    rng = RunRandom(21).stream("intervals")
    mask = T.MASK_TICKS
    checked = {"small": 0, "large": 0}
    for k in range(400):
        hi = [2 ** 27, 2 ** 31 - 1, 2 ** 33, 2 ** 39 - 1][k % 4]
        round1, reply1, round2, reply2 = (int(x) for x in rng.integers(1, hi, size=4))
        tq0 = int(rng.integers(0, T.WRAP_TICKS))
        rp = (tq0 + round1) & mask                 # node j's clock: Q0 sent, P received, Q sent
        tq = (rp + reply2) & mask
        rq0 = int(rng.integers(0, T.WRAP_TICKS))   # node i's clock: Q0 received, P sent, Q received
        tp = (rq0 + reply1) & mask
        rq = (tp + round2) & mask
        node = B.BroadcastNode(0, {"mode": "broadcast"})
        node._hist = {4: tq0, 5: tq}
        f = Fm.Frame(Fm.BCAST, 1, Fm.BROADCAST_ID, 9)
        f.tx_prev = tp
        acts = []
        node._range(1, f, B.Neighbour(8, rp, 4, rq0, 0), 5, rq, 1000, acts)
        want = T.ds_twr_tof_ticks(round1, reply1, round2, reply2) * T.METERS_PER_TICK
        assert len(acts) == 1 and repr(acts[0][1].range_m) == repr(want)
        checked["small" if max(round1, reply1, round2, reply2) < 2 ** 31 else "large"] += 1
    assert min(checked.values()) > 100


@pytest.mark.parametrize("impl", PROTOCOL_IMPLS)
def test_broadcast_entries_encode_and_index_as_the_pure_codec(impl):
    """BCAST entries (set_entries, entry_for; C integers where compiled) give the pure codec's bytes and values,
    high bytes and the 40-bit limits included; bad entries raise FrameError on every implementation."""
    Fm, P = _protocol(impl, "frames"), _protocol("pure", "frames")
    rng = RunRandom(22).stream("entries")
    for k in range(60):
        count = int(rng.integers(0, 30))
        ids = [int(i) for i in rng.choice(255, size=count, replace=False)]
        entries = [(i, int(rng.integers(0, 256)), int(rng.integers(0, 2 ** 40))) for i in ids]
        if entries:
            entries[0] = (entries[0][0], 255, 2 ** 40 - 1)
        f, g = Fm.Frame(Fm.BCAST, 3, 255, 7), P.Frame(P.BCAST, 3, 255, 7)
        f.set_entries(tuple(entries) if k % 2 else entries)
        g.set_entries(entries)
        data = f.encode()
        assert data == g.encode()
        d = Fm.decode(bytes(data))
        for i, seq, ts in entries:
            assert d.entry_for(i) == (seq, ts)
        assert d.entry_for(255) is None and d.entries() == entries
    for bad in [[(255, 0, 0)], [(1, 256, 0)], [(1, 0, 2 ** 40)], [(1, 0, -1)], [(-1, 0, 0)], [(2 ** 70, 0, 0)],
                [(1, 0, 2 ** 64)]]:
        with pytest.raises(Fm.FrameError):
            Fm.Frame(Fm.BCAST, 3, 255, 7).set_entries(bad)


@pytest.mark.parametrize("impl", PROTOCOL_IMPLS)
def test_velocity_rounding_is_pythons_round_half_to_even_clamped(impl):
    """frames._vel_mmps (exact double operations, C integers where compiled) gives int(round(v * 1000.0)) clamped
    to +-32767 for every finite v: halves (ties to even), both signs of zero, the clamp edges."""
    vel = _protocol(impl, "frames")._vel_mmps
    rng = RunRandom(23).stream("velocities")
    values = [float(v) for v in rng.uniform(-40.0, 40.0, size=3000)] + [0.0, -0.0, 1e-300, -1e-300, 40.0, -40.0]
    values += [(k + 0.5) / 1000.0 for k in range(-2000, 2000)] + [(k + 0.5) * 0.001 for k in range(-2000, 2000)]
    values += [32.7665, 32.7675, 32.7685, -32.7665, -32.7675, -32.7685, 32.767, -32.767, 1e300, -1e300]
    for v in values:
        assert vel(v) == max(-32767, min(32767, int(round(v * 1000.0)))), v
    for bad in (float("nan"), float("inf"), -float("inf")):
        with pytest.raises(ValueError):
            vel(bad)


def _fields(f):
    return (f.type, f.src, f.dst, f.seq, f.epoch, repr(f.vel_mps), f.ts, f.pass_no, f.members, f.invite_first,
            f.invite_count, f.join_slot_us, f.tx_prev, bytes(f._entries), f.entries(),
            [type(x) for x in (f.type, f.src, f.dst, f.seq, f.epoch, f.tx_prev, f.pass_no, f.members)])


@pytest.mark.parametrize("impl", PROTOCOL_IMPLS)
def test_the_frame_encode_keeps_for_decode_is_the_frame_decode_builds(impl):
    """Frame.encode builds the Frame that decode gives for the returned bytes (decode hands it out instead of
    decoding: one frame, every receiver): field for field what decoding the bytes gives, every frame type;
    bytes as the pure codec's."""
    Fm, P = _protocol(impl, "frames"), _protocol("pure", "frames")
    W = 1 << 40
    for mod in (Fm, P):
        frames = [
            mod.make(mod.POLL, 1, 2, 7, 3, (0.25, -1.5)),
            mod.make(mod.RESPONSE, 2, 1, 7, 3, (0.0, -0.0)),
            mod.make(mod.RESPONSE, 2, 1, 7, 3, (0.0005, 0.0015), ts=[W - 1, 12345]),
            mod.make(mod.FINAL, 1, 2, 7, 3, (0.1, 0.2), ts=(1, W - 2, 1 << 39)),
            mod.make(mod.REPORT, 254, 1, 255, 255, (40.0, -40.0), ts=(5, 6, 7)),
            mod.make(mod.TOKEN, 1, 4, 9, 200, (0.0, 0.0), pass_no=65537, members=(1 << 33) | 0x13),
            mod.make(mod.DISCOVER, 0, 255, 1, 1, (0.0, 0.0), invite_first=8, invite_count=True, join_slot_us=400,
                     members=0x7),
            mod.make(mod.JOIN, 9, 0, 1, 1, (0.0, 0.0)),
            mod.make(mod.BCAST, 3, 255, 250, 0, (-0.5, 0.75), tx_prev=W - 7, entries=[(1, 4, 99), (2, 255, W - 1),
                                                                                   (1, 5, 6)]),
            mod.make(mod.BCAST, 3, 255, 0, 0, (0.0, 0.0), tx_prev=mod.NO_TIMESTAMP, entries=[]),
        ]
        for f in frames:
            data = f.encode()
            kept = mod.decode(data)
            assert mod._encoded[0] == (data, kept) and kept is mod._encoded[0][1] and mod.decode(data) is kept
            assert _fields(kept) == _fields(mod._decode(bytes(data)))
            assert data == _pure_copy(P, f).encode()


def _pure_copy(P, f):
    g = P.Frame(f.type, f.src, f.dst, f.seq, f.epoch, f.vel_mps)
    for k in ("ts", "pass_no", "members", "invite_first", "invite_count", "join_slot_us", "tx_prev", "_entries"):
        setattr(g, k, getattr(f, k))
    return g


@pytest.mark.parametrize("impl", PROTOCOL_IMPLS)
def test_broadcast_entry_lookup_takes_the_first_entry_of_an_id(impl):
    """entry_for / entry_offset on entries with repeated ids (the first counts), id 255, ids outside a byte."""
    Fm = _protocol(impl, "frames")
    f = Fm.Frame(Fm.BCAST, 3, 255, 7)
    f.set_entries([(9, 1, 100), (255 - 1, 2, 200), (9, 3, 300), (0, 4, (1 << 40) - 1)])
    d = Fm.decode(bytes(f.encode()))
    assert d.entry_for(9) == (1, 100) and d.entry_for(254) == (2, 200) and d.entry_for(0) == (4, (1 << 40) - 1)
    assert d.entry_offset(9) == 0 and d.entry_offset(0) == 21 and d.entry_offset(8) == -1
    for missing in (1, 255, 256, -1, 10 ** 6):
        assert d.entry_for(missing) is None and d.entry_offset(missing) == -1
    raw = bytearray(f._entries) + bytes([255, 7, 0, 0, 0, 0, 9])         # id 255 (decode does not refuse it)
    g = Fm.Frame(Fm.BCAST, 3, 255, 7)
    g.set_entry_bytes(bytes(raw))
    assert g.entry_for(255) == (7, 9) and g.entries()[-1] == (255, 7, 9)


def _plain_state_fn(*args):
    """A BouncingMotion behind a plain function: no node_state, so the channel refreshes the whole state dict."""
    motion = BouncingMotion(*args)
    return lambda now_us: motion(now_us)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name", ["token_ring_lossy", "broadcast"])
def test_a_state_fn_without_node_state_gives_the_same_run(name, impl):
    """The channel's node_state (the velocity handed to a node, a sender's position) from a state_fn that has no
    node_state of its own (the state dict worked out and kept per time): the same digests."""
    kwargs, expected = CASES[name]
    nets = []
    assert _digest(net_cls=functools.partial(UwbNetwork, impl=impl), motion_cls=_plain_state_fn, nets=nets,
                   **kwargs) == expected
    assert nets[0]._node_state is None and nets[0]._motion is None
