"""UWB protocol state machines on a tiny ideal air model (pure, no numpy): CPython and MicroPython.

``MiniAir`` is an exact integer model of a few DW1000 radios (picosecond true time, integer
ppm clock drift, fixed 200 us frames, no noise/loss/collisions) so the same protocol run gives
bit-identical timestamps in both interpreters. The full channel model is harness/sim/radio.
"""
from onboard.comms.uwb import timestamps as T
from onboard.comms.uwb.driver import UwbDriver
from onboard.comms.uwb.node import make_node

PS_PER_US = 1000000
AIR_PS = 200 * PS_PER_US
SHR_PS = 138 * PS_PER_US
C_M_PER_PS = 299702547.0e-12


class _Radio:
    def __init__(self, air, node_id):
        self.air = air
        self.id = node_id

    def transmit(self, frame, dx):
        self.air.transmit(self.id, frame, dx)


class MiniAir:
    def __init__(self, ids, config, ppm, pos_m):
        self.now_ps = 0
        self.queue = []
        self.seq = 0
        self.ppm = ppm
        self.pos = pos_m
        self.drivers = {}
        self.deadline = {}
        self.ranges = []
        self.tx_log = []
        config = dict(config)
        config["antenna_delay_ticks"] = 0          # MiniAir has ideal antennas
        self.config = config
        for i in ids:
            self.drivers[i] = UwbDriver(make_node(i, config), _Radio(self, i))
        for i in ids:
            self._handle(i, self.drivers[i].start(self.local_us(i)))

    def ticks(self, i, t_ps):
        return (t_ps * 638976 * (1000000 + self.ppm[i]) // 10000000000000) % T.WRAP_TICKS

    def local_us(self, i):
        return self.now_ps * (1000000 + self.ppm[i]) // 1000000000000

    def push(self, t_ps, item):
        self.seq += 1
        entry = (t_ps, self.seq, item)
        k = len(self.queue)
        while k > 0 and self.queue[k - 1][:2] > entry[:2]:
            k -= 1
        self.queue.insert(k, entry)

    def transmit(self, i, frame, dx):
        if dx is None:
            rm = self.now_ps + SHR_PS
            raw = self.ticks(i, rm)
        else:
            raw = dx & T.DELAYED_TX_MASK
            ahead = (raw - self.ticks(i, self.now_ps)) % T.WRAP_TICKS
            rm = self.now_ps + ahead * 10000000000000 // (638976 * (1000000 + self.ppm[i]))
        start = rm - SHR_PS
        self.tx_log.append((i, start, start + AIR_PS))
        self.push(start + AIR_PS, ("end", i, frame, rm, raw))

    def dist_m(self, a, b):
        (xa, ya), (xb, yb) = self.pos[a], self.pos[b]
        return ((xa - xb) ** 2 + (ya - yb) ** 2) ** 0.5

    def _handle(self, i, result):
        samples, deadline = result
        for s in samples:
            self.ranges.append((i, s.peer_id, s.range_m))
        self.deadline[i] = deadline
        if deadline is not None:
            t = deadline * 1000000000000 // (1000000 + self.ppm[i])
            while t * (1000000 + self.ppm[i]) // 1000000000000 < deadline:
                t += 1
            self.push(max(t, self.now_ps), ("timer", i, deadline))

    def run(self, until_us):
        end = until_us * PS_PER_US
        while self.queue and self.queue[0][0] <= end:
            t, _, item = self.queue.pop(0)
            self.now_ps = t
            if item[0] == "timer":
                i = item[1]
                if self.deadline.get(i) == item[2]:
                    self.deadline[i] = None
                    self._handle(i, self.drivers[i].on_event(("timer",), self.local_us(i)))
                continue
            _, s, frame, rm, raw = item
            self._handle(s, self.drivers[s].on_event(("tx_done", raw), self.local_us(s)))
            for r in sorted(self.drivers):
                if r == s:
                    continue
                prop_ps = int(self.dist_m(s, r) / C_M_PER_PS)
                rx = self.ticks(r, rm + prop_ps)
                self._handle(r, self.drivers[r].on_event(("rx", frame, rx), self.local_us(r)))

    def overlaps(self):
        log = sorted(self.tx_log, key=lambda x: x[1])
        n = 0
        for k in range(1, len(log)):
            if log[k][1] < log[k - 1][2]:
                n += 1
        return n


POS3 = {0: (0.0, 0.0), 1: (3.0, 0.0), 2: (1.0, 2.5)}
PPM3 = {0: 20, 1: -20, 2: 7}


def _errors(air):
    return [r - air.dist_m(i, j) for i, j, r in air.ranges]


def test_token_ring_ds_twr_is_drift_free():
    air = MiniAir([0, 1, 2], {"mode": "token_ring"}, PPM3, POS3)
    air.run(150000)
    pairs = set([(i, j) for i, j, _ in air.ranges])
    assert pairs == set([(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)])
    assert max([abs(e) for e in _errors(air)]) < 0.01     # +-20 ppm, no noise: < 1 cm
    assert air.overlaps() == 0


def test_token_ring_ss_twr_shows_drift_error():
    air = MiniAir([0, 1], {"mode": "token_ring", "twr": "ss"}, {0: 20, 1: -20}, POS3)
    air.run(100000)
    assert air.ranges
    for i, j, r in air.ranges:
        # error ~ reply * (e_initiator - e_responder) / 2 (timestamps.py)
        expected = 1000e-6 * (PPM3[i] - PPM3[j]) * 1e-6 / 2 * 299702547.0
        err = r - air.dist_m(i, j)
        assert abs(err - expected) < 0.05 * abs(expected), (err, expected)


def test_broadcast_ranges_every_pair_once_per_round():
    air = MiniAir([0, 1, 2], {"mode": "broadcast"}, PPM3, POS3)
    air.run(300000)
    assert air.overlaps() == 0
    late = [x for x in air.ranges]
    assert len(late) > 100
    assert max([abs(e) for e in _errors(air)]) < 0.01
    n0 = air.drivers[0].node
    assert n0.joined and n0.active_ids(air.local_us(0)) == [0, 1, 2]


def test_token_ring_recovers_from_holder_crash_and_rejoin():
    air = MiniAir([0, 1, 2], {"mode": "token_ring"}, PPM3, POS3)
    air.run(60000)
    # crash node 1 (drop it from the air model), run, then bring it back with fresh state
    d1 = air.drivers.pop(1)
    air.deadline[1] = None
    n_before = len(air.ranges)
    air.run(160000)
    after = air.ranges[n_before:]
    assert set([(i, j) for i, j, _ in after if i != 1 and j != 1]) == set([(0, 2), (2, 0)])
    assert air.drivers[0].node.members & 2 == 0        # dropped from the ring
    air.drivers[1] = UwbDriver(make_node(1, air.config), _Radio(air, 1))
    air._handle(1, air.drivers[1].start(air.local_us(1)))
    n_before = len(air.ranges)
    air.run(300000)
    again = set([(i, j) for i, j, _ in air.ranges[n_before:]])
    assert (1, 0) in again and (0, 1) in again and (2, 1) in again
    assert d1 is not air.drivers[1]


def golden_token_ring():
    air = MiniAir([0, 1, 2], {"mode": "token_ring"}, PPM3, POS3)
    air.run(60000)
    out = []
    for i, j, r in air.ranges[:24]:
        out.extend([i, j, r])
    return out


def golden_broadcast():
    air = MiniAir([0, 1, 2], {"mode": "broadcast"}, PPM3, POS3)
    air.run(120000)
    out = []
    for i, j, r in air.ranges[:24]:
        out.extend([i, j, r])
    return out
