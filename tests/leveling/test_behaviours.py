"""Leveling behaviours under CPython: any ``random()`` source drives them, chromosome generation over many
seeds, oracles and settings errors. (Their pure-Python cases, also run inside MicroPython, are in
tests/micropython/cases/test_leveling.py.)"""
import random

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from onboard.core.settings import ConfigError
from onboard.leveling import grid as G
from onboard.leveling import memetic as M
from onboard.leveling import probabilistic as P
from onboard.leveling.hill_sensing import CLIMB, HillSensing


@pytest.mark.parametrize("source", [random.Random(3), np.random.default_rng(3), G.XorShift32(3)])
def test_any_random_source_drives_the_agents(source):
    a = P.ProbabilisticAgent({"rho_sense": 0.5})
    m = M.MemeticAgent({"variant": "ma2"}, source)
    hs = HillSensing()
    for k in range(200):
        op, move = a.step(k % 5, k % 3 == 0, k % 2 == 0, source)
        assert op in (G.NO_OP, G.PICK_UP, G.DEPOSIT) and (move == G.STAY or 0 <= move < 8)
        op, move = m.step(k % 5, k % 3 == 0, True, source)
        assert op in (G.NO_OP, G.PICK_UP, G.DEPOSIT) and (move == G.STAY or 0 <= move < 8)
        hs.step(0.01 * (k % 20 - 10), k * 10000, source)
    assert a.samples > 0 and m.steps == 200 and hs.climbs > 0


def test_same_draws_same_decisions():
    def run(seed):
        rand = G.XorShift32(seed)
        a = P.ProbabilisticAgent({"rho_mode": "k", "rho_sense": 0.3})
        return [a.step(k % 7, k % 4 == 0, k % 3 == 0, rand) for k in range(300)]
    assert run(1) == run(1) and run(1) != run(2)


@settings(max_examples=200)
@given(seed=st.integers(0, 2 ** 32 - 1), genes=st.integers(2, 40), data=st.data())
def test_random_chromosomes_are_never_invalid(seed, genes, data):
    max_pairs = data.draw(st.integers(1, genes // 2))
    c = M.random_chromosome(G.XorShift32(seed), genes, max_pairs)
    assert M.chromosome_problem(c, genes) is None
    assert 1 <= c.count(G.PICK_UP) <= max_pairs


def test_chromosome_problems_are_named():
    assert "deposit before its pick-up" in M.chromosome_problem([9, 8] + [0] * 18)
    assert "gene 3 must be an integer 0..9" in M.chromosome_problem([0, 0, 0, True] + [0] * 16)
    assert "list of 20 genes" in M.chromosome_problem("8989")
    with pytest.raises(M.ChromosomeError, match="holds 5 chromosome"):
        M.MemeticAgent({"variant": "ma2"}, pool=[[0] * 20])
    with pytest.raises(ValueError, match="needs its chromosomes or a random source"):
        M.MemeticAgent()


def test_bad_selection_refused():
    rand = G.XorShift32(1)
    agents = [M.MemeticAgent({"executions": 1}, rand) for _ in range(2)]
    oracle = M.Ma1Oracle({"executions": 1}, select=lambda fits: 5)
    for _ in range(20):
        for a in agents:
            a.step(1, False, False, rand)
    with pytest.raises(ValueError, match="not an agent index"):
        oracle.after_cycle(agents, rand)


def test_ma2_keeps_fit_chromosomes():
    # a pick-up on a cell above alpha and a deposit on a pit far below: fitness 1.0, kept
    c = [8, 9] + [0] * 18
    a = M.MemeticAgent({"variant": "ma2", "pool": 1, "rho_sense": 0.0}, pool=[c])
    a.memory.push(5)
    oracle = M.Ma2Oracle({"pool": 1})
    rand = G.XorShift32(2)
    a.step(9, False, False, rand)
    a.step(1, True, False, rand)
    for _ in range(18):
        a.step(5, False, False, rand)
    assert a.round_ready and a.round_fitness == [1.0]
    assert oracle.after_cycle([a], rand) == 0 and a.chromosome == c


@pytest.mark.parametrize("heights", ["after", "before"])
def test_positive_deposit_rule_refuses_put_backs(heights):
    """deposit_rule = positive: a deposit gene deposits only a positive deposit (below alpha and
    |h_deposit - h_pickup| > 1); the put-back into the pick-up's cell fails silently and the unit stays
    carried to a later deposit gene; deposit_rule = alpha puts it back (and counts no positive)."""
    c = [8, 9] + [0] * 18
    rand = G.XorShift32(5)
    ops = {}
    for rule in ("alpha", "positive"):
        a = M.MemeticAgent({"executions": 2, "rho_sense": 0.0, "deposit_rule": rule, "deposit_heights": heights},
                           pool=[c])
        a.memory.push(5)
        a.memory.push(6)                                              # alpha 5.5
        carrying = False
        seen = []
        # execution 1: pick up on a 6, the deposit gene on the same cell (now 5); execution 2: the pick-up
        # gene on a 9, the deposit gene over a pit of 1
        for h in [6, 5] + [5] * 18 + [9, 1]:
            op = a.step(h, carrying, False, rand)[0]
            seen.append(op)
            carrying = (carrying or op == G.PICK_UP) and op != G.DEPOSIT
        ops[rule] = (seen[1], seen[20], seen[21], a.positives, a.attempts)
    assert ops["alpha"] == (G.DEPOSIT, G.PICK_UP, G.DEPOSIT, 3, 4)
    assert ops["positive"] == (G.NO_OP, G.NO_OP, G.DEPOSIT, 2, 4)


@pytest.mark.parametrize("cls,cfg,needle", [
    (P.ProbabilisticAgent, {"rho_sense": -0.1}, "ProbabilisticAgent setting rho_sense must be a number in [0, 1]"),
    (P.ProbabilisticAgent, {"rho_mod": "k"}, "did you mean 'rho_mode'"),
    (HillSensing, {"wander_speed_mps": [0.2, 0.1]}, "HillSensing setting wander_speed_mps must be"),
    (HillSensing, {"variant": "spiral"}, "HillSensing setting variant must be one of 'alg6', 'spin'"),
    (M.Ma2Oracle, {"keep_threshold": 2.0}, "keep_threshold must be a number in [0, 1]"),
])
def test_settings_errors_name_the_setting(cls, cfg, needle):
    with pytest.raises(ConfigError) as info:
        cls(cfg)
    assert needle in str(info.value)


def test_literal_alg6_redraws_every_step():
    hs = HillSensing({"wander_hold_s": 0.0})
    rand = G.XorShift32(4)
    cmds = [hs.step(0.0, k * 10000, rand) for k in range(5)]
    assert hs.draws == 5 and len({c.speed_body_mps for c in cmds}) == 5
    hs.step(0.5, 60000, rand)
    assert hs.mode == CLIMB and hs.climbs == 1
