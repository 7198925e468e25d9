"""The Cython leveling kernel (cython_ext/leveling.pyx) checks everything its loop indexes with before it
builds: a memory of 0 heights (a C modulo by zero: SIGFPE), a negative or too tall height (histogram written
outside its allocation), an agent off the grid, an order that is no permutation, a heading off 0..7, or fewer
per-agent values than agents (reads past the arrays: segfault) are a ValueError naming the field, and a
re-initialisation that fails part-way leaves a kernel without agents. Run in a child interpreter, since each of
these crashed it. A state LevelingGrid builds is taken as before."""
import subprocess
import sys

import pytest

from harness.sim.leveling_grid import KERNEL_MODULES, LevelingGrid
from onboard.impl import available

pytestmark = pytest.mark.skipif("cython" not in available(KERNEL_MODULES),
                                reason="cython_ext.leveling not built (make setup)")

CHILD = """
import numpy as np
from cython_ext.leveling import ProbabilisticKernel as K
st = np.random.default_rng(0).bit_generator.state["state"]
s = (st["state"], st["inc"])
P = {"const_rho": True, "rho": 0.3, "k": 6.0, "rho_sense": 1.0, "always_read": True, "random_move": 0.75,
     "memory": 8, "fixed_order": False, "condition": "range", "epsilon_units": 0.0}
def ag(**kw):
    a = {"phase": 0, "h": None, "memory": [], "heading": 0, "last_move": -1, "steps": 0, "samples": 0}
    a.update(kw)
    return a
H = [0, 5, 1, 1]
cases = {
    "memory": lambda: K(H, 2, 2, [0], [False], [False], [-1], [0], [ag()], dict(P, memory=0), s, s),
    "negative": lambda: K([0, -5, 1, 1], 2, 2, [0], [False], [False], [-1], [0], [ag()], P, s, s),
    "tall": lambda: K([0, 2 ** 62, 1, 1], 2, 2, [0], [False], [False], [-1], [0], [ag()], P, s, s),
    "empty": lambda: K([], 0, 0, [], [], [], [], [], [], P, s, s),
    "pos": lambda: K(H, 2, 2, [-3], [False], [False], [-1], [0], [ag()], P, s, s),
    "same_cell": lambda: K(H, 2, 2, [1, 1], [False] * 2, [False] * 2, [-1] * 2, [0, 1], [ag(), ag()], P, s, s),
    "order": lambda: K(H, 2, 2, [0], [False], [False], [-1], [5], [ag()], P, s, s),
    "heading": lambda: K(H, 2, 2, [0], [False], [False], [-1], [0], [ag(heading=100, phase=1, h=1)],
                         dict(P, random_move=0.0), s, s),
    "last_move": lambda: K(H, 2, 2, [0], [False], [True], [-1], [0], [ag(last_move=9)], P, s, s),
    "agents": lambda: K(H, 2, 2, [0, 1], [False], [False], [-1], [0, 1], [ag()], P, s, s),
    "carrying": lambda: K(H, 2, 2, [0, 1], [False], [False] * 2, [-1] * 2, [0, 1], [ag(), ag()], P, s, s),
}
for name, build in cases.items():
    try:
        k = build()
        k.advance(50)
    except ValueError as exc:
        print("refused", name)
    else:
        print("built", name)
# a kernel whose re-initialisation fails part-way (an unknown condition, after the sizes were taken) indexes
# nothing afterwards: it kept the new agent count with the old arrays and read past them
k = K(H, 2, 2, [0], [False], [False], [-1], [0], [ag()], P, s, s)
try:
    k.__init__([0, 9] * 200, 400, 1, list(range(0, 400, 2)), [False] * 200, [False] * 200, [-1] * 200,
               list(range(200)), [ag() for _ in range(200)], dict(P, condition="nope"), s, s)
except ValueError:
    print("refused reinit")
k.advance(100)
print("advanced", k.cycles)
"""


def test_bad_kernel_input_is_a_value_error_in_a_child():
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr[-2000:]
    names = ["memory", "negative", "tall", "empty", "pos", "same_cell", "order", "heading", "last_move", "agents",
             "carrying"]
    assert out.stdout.split() == [w for n in names for w in ("refused", n)] + ["refused", "reinit", "advanced", "100"]


def test_a_full_grid_runs_as_the_pure_path():
    # two cells, two agents: every move is blocked, every draw still made; 9 units never split evenly
    out = []
    for impl in ("pure", "cython"):
        g = LevelingGrid({"agents": 2, "impl": impl, "probabilistic": {"rho_sense": 0.5},
                          "level": {"condition": "range", "epsilon_units": 0.0}}, 3, heights=[[0, 9]])
        out.append((g.run(60), list(g.terrain.h), list(g.pos), list(g.carrying),
                    [(a.steps, a.samples, list(a.memory.values)) for a in g.agents]))
    assert out[0] == out[1]
    assert out[0][0]["cycles"] == 60 and out[0][0]["moves"] == 0 and out[0][0]["blocked_moves"] > 0
