"""Leveling behaviours (pure) at their edges: time going backwards and malformed times in hill sensing, the
FIFO of sensed heights holding floats, memetic pair weights beyond the float range, the MA1 selection's
return; run under CPython (pytest) and inside MicroPython."""
from onboard.leveling import grid as G
from onboard.leveling import memetic as M
from onboard.leveling.hill_sensing import SPIN, WANDER, HillSensing
from test_leveling import _raises


def test_hill_sensing_time_going_backwards_is_a_counted_stop():
    hs = HillSensing({"variant": "spin", "spin_s": 1.0})
    rand = G.XorShift32(5)
    hs.step(0.2, 10000000, rand)
    hs.step(-0.2, 10100000, rand)                             # past the crest: spin until 11.1 s
    assert hs.mode == SPIN
    cmd = hs.step(0.0, 100000, rand)                          # the clock went back ~10 s
    assert cmd.speed_body_mps == 0.0 and cmd.yaw_rate_radps == 0.0
    assert hs.bad_inputs == 1 and hs.mode == SPIN and hs.steps == 2
    cmd = hs.step(0.0, 11200000, rand)                        # the spin ended on the steps' own clock
    assert hs.mode == WANDER and hs.steps == 3 and cmd.speed_body_mps > 0.0


def test_hill_sensing_wander_hold_is_not_stretched_by_a_clock_going_back():
    hs = HillSensing({"wander_hold_s": 1.0})
    rand = G.XorShift32(6)
    first = hs.step(0.0, 5000000, rand)
    cmd = hs.step(0.0, 0, rand)
    assert (cmd.speed_body_mps, cmd.yaw_rate_radps) == (0.0, 0.0) and hs.bad_inputs == 1 and hs.draws == 1
    same = hs.step(0.0, 5000000, rand)                        # the same time again is fine: held command
    assert (same.speed_body_mps, same.yaw_rate_radps) == (first.speed_body_mps, first.yaw_rate_radps)
    hs.step(0.0, 6000000, rand)
    assert hs.draws == 2 and hs.bad_inputs == 1


def test_hill_sensing_malformed_time_raises_and_changes_nothing():
    hs = HillSensing({"variant": "spin"})
    rand = G.XorShift32(7)
    hs.step(0.2, 0, rand)
    hs.step(-0.2, 1000, rand)
    for bad in (None, "5", 1.5, True, float("nan"), float("inf")):
        _raises(ValueError, hs.step, 0.0, bad, rand)
    assert hs.steps == 2 and hs.mode == SPIN and hs.bad_inputs == 0


def test_height_memory_mean_is_exact_after_a_float_leaves():
    m = G.HeightMemory(8)
    m.push(1e16)
    for _ in range(8):
        m.push(1)
    assert m.values == [1] * 8 and m.mean() == 1 and not m.above(1) and not m.below(1)
    m = G.HeightMemory(2)
    for v in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7) * 10:
        m.push(v)
    assert m.total == 0.6 + 0.7
    m = G.HeightMemory(3)
    for v in (5, 7, 9, 11):
        m.push(v)
    assert m.total == 27 and type(m.total) is int


def test_pair_weights_beyond_the_float_range():
    w = M.pair_weights(400, 200)                              # 64 ** 171 is no float
    assert len(w) == 201 and w[0] == 1.0 and max(w) > 1e18
    big = M.pair_weights(8000, 600)                           # C(8000, 888) / 64 ** 444 ~ 1e407: rescaled
    assert all(v == v and 0.0 <= v < 2.0 ** 1000 for v in big) and big[0] > 0.0
    assert max(big) == big[444] and big[-1] > big[0]
    rand = G.XorShift32(9)
    c = M.random_chromosome(rand, 400, 200, "uniform")
    assert M.is_valid(c, 400) and 5 <= c.count(G.PICK_UP) <= 45
    a = M.MemeticAgent({"genes": 400, "max_pairs": 200}, rand)
    assert M.is_valid(a.chromosome, 400)


def test_pair_weights_unchanged_in_the_float_range():
    w = M.pair_weights(20, 10)
    c = 1.0
    for m in range(11):
        if m > 0:
            k = 2 * m
            c = c * (20 - k + 2) * (20 - k + 1) / ((k - 1) * k)
        assert w[m] == c / 64.0 ** m


def _ready_ma1(rand):
    agents = [M.MemeticAgent({"executions": 1}, rand) for _ in range(2)]
    for _ in range(20):
        for a in agents:
            a.step(1, False, False, rand)
    return agents


def test_ma1_selection_must_be_an_index_not_a_bool():
    rand = G.XorShift32(10)
    agents = _ready_ma1(rand)
    for bad in (True, 1.0, -1, 2, None):
        oracle = M.Ma1Oracle({"executions": 1}, select=lambda fits: bad)
        _raises(ValueError, oracle.after_cycle, agents, rand)
        assert oracle.evaluations == 0 and agents[0].round_ready and agents[1].round_ready
    oracle = M.Ma1Oracle({"executions": 1}, select=lambda fits: 1)
    assert oracle.after_cycle(agents, rand) == 1 and oracle.evaluations == 1


def test_a_move_reported_with_a_bad_height_still_sets_the_heading():
    from onboard.leveling import probabilistic as P
    a = P.ProbabilisticAgent({"random_move": 1.0, "rho_sense": 0.0}, heading=G.EAST)
    rand = G.XorShift32(1)
    a.step(1, False, False, rand)                            # SENSE
    _op, move = a.step(1, False, False, rand)                # ACT: a random move
    assert move != G.EAST
    assert a.step(float("nan"), False, True, rand) == G.IDLE  # told the move happened, with a bad height
    a.step(1, False, False, rand)                            # the IDLE step moved nowhere
    assert a.heading == move and a.bad_inputs == 1
    m = M.MemeticAgent({"executions": 1, "rho_sense": 0.0}, pool=[[2] * 20], heading=G.NORTH)
    m.step(1, False, False, rand)
    assert m.step(None, False, True, rand) == G.IDLE
    m.step(1, False, False, rand)
    assert m.heading == G.EAST and m.bad_inputs == 1


def test_replacing_a_slot_that_is_no_index_changes_nothing():
    rand = G.XorShift32(12)
    a = M.MemeticAgent({"variant": "ma2", "pool": 3, "rho_sense": 0.0}, rand)
    for _ in range(2 * 20 + 5):                              # into the third chromosome
        a.step(1, False, False, rand)
    assert a.slot == 2 and a.gene == 5
    pool = [list(c) for c in a.pool]
    new = [8, 9] + [0] * 18
    for bad in (-1, 3, True, 1.0, None):
        _raises(ValueError, a.replace, bad, new)
        assert a.pool == pool and a.slot == 2 and a.gene == 5 and a.replaced == 0
    a.replace(2, new)
    assert a.pool[2] == new and a.gene == 0 and a.replaced == 1


def test_rho_curves_at_an_empty_cell_and_k_zero():
    from onboard.leveling import probabilistic as P
    assert P.rho_pickup_k(0, 0.0) == 0.0 and P.rho_deposit_k(0, 0.0) == 1.0
    assert P.rho_pickup_k(0, 6.0) == 0.0 and P.rho_deposit_k(0, 6.0) == 1.0
    assert P.rho_pickup_k(3, 0.0) == 1.0 and P.rho_deposit_k(3, 0.0) == 0.0
    assert P.rho_pickup_k(6, 6.0) == 0.25 and P.rho_deposit_k(6, 6.0) == 0.25
