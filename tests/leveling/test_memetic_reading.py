"""The memetic variants' readings of the thesis (4.2.3): uniformly random valid chromosomes, the sensing
stage before each gene, the cell and unit gates, and the sweep's verdict on units moved."""
import itertools
import math

import pytest
from hypothesis import given, settings, strategies as st

from harness.sim.leveling_grid import LevelingGrid
from onboard.leveling import grid as G
from onboard.leveling import memetic as M


@pytest.mark.parametrize("genes", [4, 5, 6])
def test_pair_weights_count_the_valid_chromosomes(genes):
    """Enumerate all 10^genes gene strings: the valid ones with m pairs are in the ratio pair_weights."""
    counts = [0] * (genes // 2 + 1)
    ops = (G.PICK_UP, G.DEPOSIT)
    # a string is valid iff its pick-ups/deposits alternate P D P D ...; count them by their op pattern:
    # every subset of positions holding ops, times 8 moves elsewhere
    for mask in itertools.product((0, 1), repeat=genes):
        k = sum(mask)
        if k % 2 == 0:
            seq = [ops[i % 2] for i in range(k)]
            gen = iter(seq)
            chromosome = [next(gen) if bit else 0 for bit in mask]
            assert M.is_valid(chromosome, genes)
            counts[k // 2] += 8 ** (genes - k)
    if genes == 5:                                                   # brute force over all 10^5 strings
        brute = [0] * 3
        for c in itertools.product(range(10), repeat=genes):
            if M.is_valid(list(c), genes):
                brute[c.count(G.PICK_UP)] += 1
        assert brute == counts
    w = M.pair_weights(genes, genes // 2)
    for m in range(len(counts)):
        assert math.isclose(w[m] / w[0], counts[m] / counts[0], rel_tol=1e-12)


def test_uniform_chromosomes_follow_the_weights():
    rand = G.XorShift32(17)
    n = 8000
    seen = [0] * 11
    moves = [0] * 8
    for _ in range(n):
        c = M.random_chromosome(rand, 20, 10, "uniform")
        assert M.is_valid(c)
        seen[c.count(G.PICK_UP)] += 1
        for g in c:
            if g < 8:
                moves[g] += 1
    w = M.pair_weights(20, 10)
    total = sum(w)
    for m in range(11):
        p = w[m] / total
        assert abs(seen[m] / n - p) < 4.5 * math.sqrt(p * (1 - p) / n) + 1e-9, (m, seen[m], p)
    assert seen[0] > 0 and abs(sum(m * seen[m] for m in range(11)) / n - 1.09) < 0.04
    assert max(moves) / min(moves) < 1.06                            # directions uniform


@settings(max_examples=50)
@given(seed=st.integers(0, 2 ** 32 - 1), genes=st.integers(2, 40), data=st.data())
def test_uniform_chromosomes_are_never_invalid(seed, genes, data):
    max_pairs = data.draw(st.integers(1, genes // 2))
    c = M.random_chromosome(G.XorShift32(seed), genes, max_pairs, "uniform")
    assert M.chromosome_problem(c, genes) is None and c.count(G.PICK_UP) <= max_pairs


def test_sense_phase_adds_a_sensing_step_before_each_gene():
    """The same draws and heights give the same genes; with sense_phase every other step only senses."""
    pool = [[0, 8, 2, 9, 4] + [6] * 15]
    heights = [(3 * k) % 7 for k in range(400)]
    out = {}
    for phase in (False, True):
        a = M.MemeticAgent({"executions": 2, "rho_sense": 0.4, "sense_phase": phase}, pool=pool)
        rand = G.XorShift32(21)
        carrying = False
        ops = []
        steps = 2 * len(heights) if phase else len(heights)
        for k in range(steps):
            h = heights[k // 2] if phase else heights[k]
            op, move = a.step(h, carrying, True, rand)
            if phase and k % 2 == 0:
                assert (op, move) == G.IDLE
                continue
            ops.append((op, move))
            carrying = (carrying or op == G.PICK_UP) and op != G.DEPOSIT
        out[phase] = (ops, a.samples, a.positives, a.attempts, a.round_fitness)
    assert out[True] == out[False] and out[True][1] > 10
    assert sum(1 for op, _ in out[True][0] if op != G.NO_OP) > 5


@pytest.mark.parametrize("phase,first", [(True, 200), (False, 100)])
def test_world_spends_two_cycles_per_gene_with_the_sensing_stage(phase, first):
    """MA1, 20 genes x 5 executions: the first evaluation comes after 100 genes = 200 cycles (100 without
    the sensing stage)."""
    cfg = {"algorithm": "ma1", "agents": 3, "terrain": {"rows": 8, "cols": 8, "features": 3, "max_units": 6},
           "memetic": {"sense_phase": phase}}
    w = LevelingGrid(cfg, seed=4)
    assert w.cfg["memetic"]["sense_phase"] is phase
    for _ in range(first - 1):
        w.cycle()
    assert w.oracle.evaluations == 0
    w.cycle()
    assert w.oracle.evaluations == 1 and w.replaced == 2


def test_world_default_keeps_the_sensing_stage():
    assert LevelingGrid({"algorithm": "ma2", "terrain": {"rows": 6, "cols": 6}}).cfg["memetic"]["sense_phase"]
    assert M.DEFAULTS["sense_phase"] is False and M.DEFAULTS["pairs"] == "uniform"


def _gates(gate, values, h):
    a = M.MemeticAgent({"gate": gate}, pool=[[0] * 20])
    for v in values:
        a.memory.push(v)
    return a._above(h), a._below(h - 1)


def test_unit_gate_never_puts_a_unit_back():
    """cell gate: with alpha in (h - 1, h) a unit taken from h may be laid back on the h - 1 left; unit
    gate: never (taken needs h - 1 >= alpha, laid on h - 1 needs h <= alpha)."""
    put_backs = {"cell": 0, "unit": 0}
    for values in itertools.product(range(5), repeat=3):
        for h in range(1, 7):
            for gate in put_backs:
                take, lay_back = _gates(gate, values, h)
                put_backs[gate] += take and lay_back
    assert put_backs["unit"] == 0 and put_backs["cell"] > 0
    assert _gates("unit", [4, 5], 6) == (True, False)                # bottom 5 >= 4.5
    assert _gates("unit", [5, 5], 6) == (True, False)                # bottom 5 >= 5 (on alpha counts)
    assert _gates("unit", [5, 6], 6)[0] is False                     # bottom 5 < 5.5
    a = M.MemeticAgent({"gate": "unit"}, pool=[[0] * 20])
    a.memory.push(5)
    assert a._below(4) and not a._below(5)                           # top 5 <= 5; top 6 > 5
