"""Leveling behaviours (pure): probabilistic Alg. 1-2, memetic Alg. 3-4, hill-sensing Alg. 6; run under
CPython (pytest) and inside MicroPython, with golden runs that must give the same numbers in both."""
from onboard.leveling import grid as G
from onboard.leveling import memetic as M
from onboard.leveling import probabilistic as P
from onboard.leveling.hill_sensing import CLIMB, CREST, SPIN, WANDER, HillSensing

STEPS = G.DIRECTION_STEPS


def _raises(exc, fn, *args):
    try:
        fn(*args)
    except exc:
        return
    raise AssertionError("%s not raised" % exc.__name__)


def _mini_world(agents, heights, rows, cols, cycles, rand, oracle=None):
    """A bare-bones grid world (the harness's rules, lists only): returns the heights after ``cycles``,
    and the pick-up and deposit counts."""
    n = len(agents)
    pos = [(3 * k + 1) % (rows * cols) for k in range(n)]
    carrying = [False] * n
    moved = [False] * n
    picks = 0
    deposits = 0
    for _ in range(cycles):
        for k in range(n):
            idx = pos[k]
            op, move = agents[k].step(heights[idx], carrying[k], moved[k], rand)
            if op == G.PICK_UP and not carrying[k] and heights[idx] > 0:
                heights[idx] -= 1
                carrying[k] = True
                picks += 1
            elif op == G.DEPOSIT and carrying[k]:
                heights[idx] += 1
                carrying[k] = False
                deposits += 1
            moved[k] = False
            if move != G.STAY:
                r, c = idx // cols + STEPS[move][0], idx % cols + STEPS[move][1]
                to = r * cols + c
                if 0 <= r < rows and 0 <= c < cols and to not in pos:
                    pos[k] = to
                    moved[k] = True
        if oracle is not None:
            oracle.after_cycle(agents, rand)
    return heights, picks, deposits, carrying


def _mound(rows, cols):
    out = []
    for r in range(rows):
        for c in range(cols):
            d = abs(r - rows // 2) + abs(c - cols // 2)
            out.append(max(0, 6 - d))
    return out


# ------------------------------------------------------------------ probabilistic
def test_rho_curves():
    assert P.rho_pickup_k(0, 6.0) == 0.0
    assert P.rho_deposit_k(0, 6.0) == 1.0
    assert abs(P.rho_pickup_k(6, 6.0) - 0.25) < 1e-15
    assert abs(P.rho_deposit_k(6, 6.0) - 0.25) < 1e-15
    assert P.rho_pickup_k(12, 6.0) > P.rho_pickup_k(3, 6.0)
    assert P.rho_deposit_k(12, 6.0) < P.rho_deposit_k(3, 6.0)


def test_fifo_keeps_the_last_eight():
    m = G.HeightMemory(8)
    assert m.mean() is None and not m.above(5) and not m.below(0)
    for h in range(12):
        m.push(h)
    assert m.count == 8 and m.total == sum(range(4, 12)) and m.mean() == 7.5
    assert m.above(8) and not m.above(7) and m.below(7) and not m.below(8)


def test_sense_then_act_alternate():
    a = P.ProbabilisticAgent({"rho_sense": 1.0, "rho": 1.0, "random_move": 0.0})
    rand = G.XorShift32(1)
    assert a.step(4, False, False, rand) == G.IDLE          # SENSE: stores 4
    assert a.alpha == 4
    op, move = a.step(4, False, False, rand)                 # ACT: 4 is not above 4
    assert op == G.NO_OP and move == G.NORTH                 # forward = initial heading
    a.step(6, False, True, rand)                             # SENSE on a 6: alpha 5
    op, move = a.step(6, False, False, rand)
    assert op == G.PICK_UP                                   # 6 > alpha = 5
    a.step(2, True, False, rand)                             # alpha (4 + 6 + 2) / 3 = 4
    op, move = a.step(2, True, False, rand)
    assert op == G.DEPOSIT


def test_no_operation_before_the_first_sample():
    a = P.ProbabilisticAgent({"rho_sense": 0.0, "rho": 1.0})
    rand = G.XorShift32(2)
    for _ in range(20):
        op, _move = a.step(9, False, False, rand)
        assert op == G.NO_OP


def test_heading_follows_the_last_move_that_happened():
    a = P.ProbabilisticAgent({"random_move": 1.0}, heading=G.EAST)
    rand = G.XorShift32(3)
    a.step(1, False, False, rand)
    _op, move = a.step(1, False, False, rand)
    a.step(1, False, False, rand)                            # told the move was blocked
    assert a.heading == G.EAST
    _op, move = a.step(1, False, False, rand)
    a.step(1, False, True, rand)                             # told it happened
    assert a.heading == move


def test_random_moves_three_quarters_of_the_time():
    a = P.ProbabilisticAgent({"rho_sense": 0.0}, heading=G.SOUTH)
    rand = G.XorShift32(4)
    forward = 0
    n = 4000
    for _ in range(n):
        a.step(1, False, False, rand)
        _op, move = a.step(1, False, False, rand)
        if move == G.SOUTH:
            forward += 1
    # forward: 0.25 + 0.75 / 8 = 0.34375 of the moves
    assert abs(forward / n - 0.34375) < 0.03


def test_bad_height_counted_and_skipped():
    a = P.ProbabilisticAgent()
    rand = G.XorShift32(5)
    state = rand.state
    for bad in (float("nan"), float("inf"), -1, None, "3", True):
        assert a.step(bad, False, False, rand) == G.IDLE
    assert a.bad_inputs == 6 and a.steps == 0 and a.phase == P.SENSE and rand.state == state


def test_settings_checked():
    from onboard.core.settings import ConfigError
    _raises(ConfigError, P.ProbabilisticAgent, {"rho": 1.5})
    _raises(ConfigError, P.ProbabilisticAgent, {"rho_mode": "linear"})
    _raises(ConfigError, P.ProbabilisticAgent, {"k": 0})
    _raises(ConfigError, P.ProbabilisticAgent, {"memmory": 8})
    _raises(ValueError, P.ProbabilisticAgent, None, 8)


# ------------------------------------------------------------------ memetic
def test_chromosome_rules():
    good = [8, 0, 9, 1, 8, 9] + [2] * 14
    assert M.is_valid(good)
    assert M.is_valid([3] * 20)
    assert not M.is_valid([9, 8] + [0] * 18)                 # deposit before its pick-up
    assert not M.is_valid([8, 8, 9, 9] + [0] * 16)           # two pick-ups in a row
    assert not M.is_valid([8] + [0] * 19)                    # unmatched pick-up
    assert not M.is_valid([0] * 19)
    assert not M.is_valid([10] + [0] * 19)
    _raises(M.ChromosomeError, M.MemeticAgent, None, None, [[9] + [0] * 19])


def test_generated_chromosomes_are_valid():
    rand = G.XorShift32(6)
    pairs = 0
    for _ in range(300):
        c = M.random_chromosome(rand)
        assert M.is_valid(c)
        n = c.count(G.PICK_UP)
        assert 1 <= n <= 10 and n == c.count(G.DEPOSIT)
        pairs += n
    assert 4.5 < pairs / 300 < 6.5                            # m uniform in 1..10: mean 5.5


def test_fitness_of_a_hand_built_run():
    # pick-up on a 5 above alpha 3 (positive), deposit on a 1 below alpha (|2 - 4| > 1: positive),
    # a pick-up on a 1 (not above alpha: fails), a deposit while empty (fails)
    c = [0, 8, 0, 9, 0, 8, 0, 9] + [0] * 12
    a = M.MemeticAgent({"executions": 1, "rho_sense": 1.0}, pool=[c])
    rand = G.XorShift32(7)
    a.memory.push(3)
    heights = [3, 5, 3, 1, 3, 1, 3, 1]
    carrying = False
    ops = []
    for i in range(8):
        op, _move = a.step(heights[i], carrying, True, rand)
        ops.append(op)
        if op == G.PICK_UP:
            carrying = True
        elif op == G.DEPOSIT:
            carrying = False
    assert ops[1] == G.PICK_UP and ops[3] == G.DEPOSIT and ops[5] == G.NO_OP and ops[7] == G.NO_OP
    assert a.positives == 2 and a.attempts == 4
    assert M.fitness(a.positives, a.attempts) == 0.5
    assert M.fitness(0, 0) == 0.0


def test_deposit_next_to_the_pickup_height_is_not_positive():
    c = [8, 9] + [0] * 18
    a = M.MemeticAgent({"executions": 1, "rho_sense": 0.0}, pool=[c])
    a.memory.push(5)
    rand = G.XorShift32(8)
    assert a.step(6, False, False, rand)[0] == G.PICK_UP     # 6 -> 5 after the pick-up
    assert a.step(4, True, False, rand)[0] == G.DEPOSIT      # 4 -> 5: |5 - 5| = 0, not positive
    assert a.positives == 1 and a.attempts == 2


def test_ma1_keeps_the_fittest_and_replaces_the_others():
    rand = G.XorShift32(9)
    cfg = {"variant": "ma1", "executions": 1}
    agents = [M.MemeticAgent(cfg, rand) for _ in range(3)]
    kept = [list(a.chromosome) for a in agents]
    chosen = []

    def pick_second(fits):
        chosen.append(list(fits))
        return 1
    oracle = M.Ma1Oracle(cfg, select=pick_second)
    for _ in range(19):
        for a in agents:
            a.step(3, False, False, rand)
        assert oracle.after_cycle(agents, rand) == 0
    for a in agents:
        a.step(3, False, False, rand)
    assert oracle.after_cycle(agents, rand) == 2
    assert len(chosen) == 1 and oracle.evaluations == 1
    assert agents[1].chromosome == kept[1]
    assert agents[0].replaced == 1 and agents[2].replaced == 1 and agents[1].replaced == 0
    assert M.fittest_index([0.2, 0.7, 0.7, 0.1]) == 1


def test_make_oracle_refuses_a_selection_it_would_not_use():
    """MA2 has no selection: an injected ``select`` must not be silently dropped; MA1 uses it."""
    def pick_last(fits):
        return len(fits) - 1
    _raises(ValueError, M.make_oracle, {"variant": "ma2"}, pick_last)
    assert M.make_oracle({"variant": "ma1"}, pick_last).select is pick_last


def test_ma2_replaces_chromosomes_under_the_threshold():
    rand = G.XorShift32(10)
    cfg = {"variant": "ma2", "pool": 2}
    a = M.MemeticAgent(cfg, rand)
    oracle = M.Ma2Oracle(cfg)
    for _ in range(40):
        a.step(3, False, False, rand)                         # alpha never known: every P/D fails
        oracle.after_cycle([a], rand)
    assert oracle.evaluations == 1 and oracle.replaced == 2 and a.replaced == 2
    assert a.slot == 0 and a.gene == 0


# ------------------------------------------------------------------ hill sensing
def test_alg6_charges_up_slopes_and_wanders_otherwise():
    hs = HillSensing({"wander_hold_s": 0.5})
    rand = G.XorShift32(11)
    cmd = hs.step(0.2, 0, rand)
    assert hs.mode == CLIMB and cmd.speed_body_mps == 0.25 and cmd.yaw_rate_radps == 0.0
    cmd = hs.step(0.0, 10000, rand)
    assert hs.mode == WANDER and 0.05 <= cmd.speed_body_mps <= 0.15 and abs(cmd.yaw_rate_radps) <= 1.0
    same = hs.step(-0.3, 20000, rand)                         # held: the same random command
    assert (same.speed_body_mps, same.yaw_rate_radps) == (cmd.speed_body_mps, cmd.yaw_rate_radps)
    new = hs.step(0.0, 510000, rand)
    assert hs.draws == 2 and new.speed_body_mps != cmd.speed_body_mps


def test_spin_variant_spins_after_the_crest():
    hs = HillSensing({"variant": "spin", "spin_s": 1.0, "crest_timeout_s": 0.5})
    rand = G.XorShift32(12)
    hs.step(0.2, 0, rand)
    cmd = hs.step(0.0, 100000, rand)                          # on the crest: straight on
    assert hs.mode == CREST and cmd.speed_body_mps == 0.25
    cmd = hs.step(-0.2, 200000, rand)                         # decline: spin in place
    assert hs.mode == SPIN and cmd.speed_body_mps == 0.0 and cmd.yaw_rate_radps == 2.0
    hs.step(0.3, 900000, rand)                                # still spinning whatever the pitch
    assert hs.mode == SPIN
    hs.step(0.0, 1200000, rand)
    assert hs.mode == WANDER and hs.spins == 1
    hs.step(0.2, 1300000, rand)
    hs.step(0.0, 1400000, rand)
    hs.step(0.0, 2000000, rand)                               # plateau: crest timeout
    assert hs.mode == WANDER


def test_hill_sensing_bad_pitch_stops():
    hs = HillSensing()
    rand = G.XorShift32(13)
    hs.step(0.3, 0, rand)
    cmd = hs.step(float("nan"), 10000, rand)
    assert cmd.speed_body_mps == 0.0 and hs.bad_inputs == 1 and hs.mode == CLIMB


# ------------------------------------------------------------------ golden runs
def golden_xorshift():
    rand = G.XorShift32(2024)
    return [rand.random() for _ in range(8)]


def golden_probabilistic_world():
    rand = G.XorShift32(31)
    agents = [P.ProbabilisticAgent({"rho_sense": 0.3}, heading=k) for k in range(3)]
    heights, picks, deposits, carrying = _mini_world(agents, _mound(7, 7), 7, 7, 400, rand)
    return heights + [picks, deposits, sum(1 for c in carrying if c)] + [a.heading for a in agents]


def golden_probabilistic_k_world():
    rand = G.XorShift32(32)
    agents = [P.ProbabilisticAgent({"rho_mode": "k", "k": 3.0, "sense": "literal"}, heading=k) for k in range(2)]
    heights, picks, deposits, _c = _mini_world(agents, _mound(6, 6), 6, 6, 400, rand)
    return heights + [picks, deposits]


def golden_memetic_worlds():
    out = []
    for variant in ("ma1", "ma2"):
        rand = G.XorShift32(33)
        cfg = {"variant": variant, "rho_sense": 0.5}
        agents = [M.MemeticAgent(cfg, rand, heading=k) for k in range(3)]
        oracle = M.make_oracle(cfg)
        heights, picks, deposits, _c = _mini_world(agents, _mound(7, 7), 7, 7, 300, rand, oracle)
        out.extend(heights + [picks, deposits, oracle.replaced])
        for a in agents:
            out.extend(a.chromosome)
            out.extend(a.round_fitness)
    return out


def golden_hill_sensing():
    out = []
    for variant in ("alg6", "spin"):
        hs = HillSensing({"variant": variant, "wander_hold_s": 0.3, "spin_s": 0.4})
        rand = G.XorShift32(34)
        for k in range(60):
            pitch = 0.3 * ((k % 17) - 8) / 8.0
            cmd = hs.step(pitch, k * 50000, rand)
            out.extend([cmd.speed_body_mps, cmd.yaw_rate_radps, hs.mode])
    return out


def test_positive_deposit_with_heights_before_the_operations():
    c = [8, 9] + [0] * 18
    a = M.MemeticAgent({"executions": 1, "rho_sense": 0.0, "deposit_heights": "before"}, pool=[c])
    a.memory.push(5)
    rand = G.XorShift32(14)
    a.step(6, False, False, rand)
    a.step(4, True, False, rand)                             # |4 - 6| = 2 > 1: positive
    assert a.positives == 2 and a.attempts == 2
