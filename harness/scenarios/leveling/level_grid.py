"""Scenario `level-grid`: N agents level a voxel terrain with the thesis's grid algorithms (Cook thesis
4.2: Alg. 1-2 probabilistic, Alg. 3 MA1, Alg. 4 MA2) in :class:`harness.sim.leveling_grid.LevelingGrid`.

Heights are whole *units* (one block of one cell); time is counted in *cycles* (one pass of Alg. 1's
outer loop: every agent one step). The run ends at the level condition (``level.condition``, default
max - min <= 1 unit) or at ``max_cycles``; ``success`` is the level condition reached with the volume
conserved exactly (``volume_error == 0``: terrain units + carried units - initial units). Settings under
which a run could never level (``NEVER_LEVELS``: MA1 with one agent, rho_sense = 0, random_move = 0, const
rho = 0; and an agent on every cell) are refused before the run, one line.

Terrain: the seeded generator (``terrain.kind`` mounds | ridges | pits, ``terrain.rows``/``cols``,
``features``, ``radius_cells``, ``min_units``/``max_units``) or a user's file, ``terrain.file=PATH`` (a
grayscale PNG, white = ``max_units`` unless ``terrain.height_scale`` units per intensity 1.0, or a ``.npy``
array of heights, units unless ``height_scale``); the file sets the grid's size. A missing, empty or
malformed file is a ConfigError (one line; the CLI exits 2).

Metrics: ``level_reached``, ``cycles_to_level``, ``units_moved`` (pick-ups), ``units_relocated`` (units
laid into another cell than they were taken from: the material moved), ``agent_actions``,
``volume_error`` (an int, 0), initial/final roughness (range, rms, max gradient, units).
Plots: ``roughness`` (rms height and range vs cycles, and the largest 4-neighbour step under
``level.condition`` grad; the level threshold drawn on the panel of the quantity the condition tests),
``terrain`` (heights before and after).
Log (``log.mcap``; simulated time = cycles x ``record.cycle_us``, a nominal period only for the
timeline): ``/level/terrain`` (roughness, counters) and ``/level/agents`` (each agent's cell, carrying,
alpha) every ``record.every_cycles``; ``/level/heights`` (the whole grid) every ``record.heights_every``
records.

Implementation: ``impl`` (pure | cython, null: ``$ONBOARD_IMPL``) picks the probabilistic inner loop
(:mod:`harness.sim.leveling_grid`); the metrics do not depend on it.
"""
from harness.sim.leveling_grid import DEFAULTS as GRID_DEFAULTS, SETTING_RANGES as GRID_RANGES, LevelingGrid
from harness.config import ConfigError
from onboard.core.settings import int_at_least

DESCRIPTION = "swarm of grid agents levels a voxel terrain (thesis Alg. 1-4: probabilistic, MA1, MA2)"

DEFAULTS = dict(GRID_DEFAULTS)
DEFAULTS["record"] = {
    "every_cycles": 1000,             # cycles between roughness samples and /level/terrain, /level/agents
    "heights_every": 20,              # records between /level/heights snapshots (the whole grid)
    "cycle_us": 1000,                 # nominal simulated time of one cycle on the log's timeline (us)
}

# a run of a few seconds: a 12x12 terrain, 4 agents, sampled more often
REDUCED = {"agents": 4, "terrain": {"rows": 12, "cols": 12, "features": 6, "max_units": 6},
           "max_cycles": 200000, "record": {"every_cycles": 200}}

SETTING_RANGES = dict(GRID_RANGES)
SETTING_RANGES.update({"record.every_cycles": int_at_least(1), "record.heights_every": int_at_least(1),
                       "record.cycle_us": int_at_least(1)})
# settings under which a run can never level (it would only burn max_cycles): refused before the run
NEVER_LEVELS = {
    # MA1's oracle keeps the fittest agent's chromosome and replaces the others' (Alg. 3): a lone agent keeps
    # its first random chromosome forever, walks one fixed pattern into a corner and never levels
    ("algorithm", "agents"): ("at least 2 agents for ma1 (its oracle only replaces the chromosomes of agents "
                              "other than the fittest)", lambda alg, agents: alg != "ma1" or agents >= 2),
    # no sample ever enters the FIFO: alpha stays unknown and no agent ever picks up or deposits
    ("algorithm", "probabilistic.rho_sense"): ("rho_sense > 0 for the probabilistic agent (its FIFO never fills "
                                               "otherwise)", lambda alg, v: alg != "probabilistic" or v > 0),
    ("algorithm", "memetic.rho_sense"): ("rho_sense > 0 for ma1/ma2 (their FIFO never fills otherwise)",
                                         lambda alg, v: alg == "probabilistic" or v > 0),
    # Alg. 2 with no random move: the agent goes forward to the grid's edge and stays there
    ("algorithm", "probabilistic.random_move"): ("random_move > 0 for the probabilistic agent (it never turns "
                                                 "otherwise)", lambda alg, v: alg != "probabilistic" or v > 0),
    ("algorithm", "probabilistic.rho_mode", "probabilistic.rho"): (
        "rho > 0 for the probabilistic agent with rho_mode const (it never picks up otherwise)",
        lambda alg, mode, rho: alg != "probabilistic" or mode != "const" or rho > 0),
}
SETTING_RANGES.update(NEVER_LEVELS)


def _grid_config(config):
    return {k: v for k, v in config.items() if k != "record"}


def check_settings(config):
    """Build the terrain once so a bad terrain file or too many agents fail before the run (one line)."""
    t = LevelingGrid(_grid_config(config), seed=0).terrain
    if config["agents"] >= t.n:
        # every cell occupied: no agent can ever move, and one that only senses its own cell never finds it
        # above alpha, so nothing is ever picked up
        raise ConfigError("level-grid setting agents: at most %d (one cell of the %dx%d terrain left free, or no "
                          "agent can ever move), got %d" % (t.n - 1, t.rows, t.cols, config["agents"]))


def _log_state(ctx, grid, time_us, with_heights):
    t = grid.terrain
    ctx.log("/level/terrain", time_us, {
        "cycle": grid.cycles, "rms_units": t.rms_units(), "range_units": t.range_units(),
        "volume_units": t.volume, "carried_units": grid.carried_units, "units_moved": grid.pickups,
        "deposits": grid.deposits, "moves": grid.moves})
    cols = t.cols
    agents = []
    for k, a in enumerate(grid.agents):
        alpha = a.memory.mean()
        agents.append({"id": k, "row": grid.pos[k] // cols, "col": grid.pos[k] % cols,
                       "carrying": grid.carrying[k], "alpha_units": alpha if alpha is not None else -1.0})
    ctx.log("/level/agents", time_us, {"cycle": grid.cycles, "agents": agents})
    if with_heights:
        ctx.log("/level/heights", time_us, {"cycle": grid.cycles, "rows": t.rows, "cols": cols,
                                            "heights_units": list(t.h)})


def run(config, ctx):
    rec = config["record"]
    every = rec["every_cycles"]
    cycle_us = rec["cycle_us"]
    grid = LevelingGrid(_grid_config(config), seed=ctx.seed)
    t = grid.terrain
    before = t.as_array()
    limit = config["max_cycles"]
    trace = {"cycle": [0], "rms_units": [t.rms_units()], "range_units": [t.range_units()]}
    # the grad condition's quantity (O(cells) a sample, so only when the condition uses it)
    with_gradient = t.condition == "grad"
    if with_gradient:
        trace["max_gradient_units"] = [t.max_gradient_units()]
    n_records = 0
    _log_state(ctx, grid, 0, True)
    bar = ctx.progress(limit, "level-grid", unit="cycles")
    level = grid.cycles_to_level is not None
    while not level and grid.cycles < limit:
        # to the next record: a multiple of every_cycles, the limit or the level condition
        level = grid.advance(min(limit, (grid.cycles // every + 1) * every))
        n_records += 1
        trace["cycle"].append(grid.cycles)
        trace["rms_units"].append(t.rms_units())
        trace["range_units"].append(t.range_units())
        if with_gradient:
            trace["max_gradient_units"].append(t.max_gradient_units())
        _log_state(ctx, grid, grid.cycles * cycle_us, level or n_records % rec["heights_every"] == 0)
        bar.update_to(grid.cycles)
    bar.close()
    m = grid.metrics()
    metrics = {"success": bool(m["level_reached"] and m["volume_error"] == 0)}
    metrics.update(m)
    metrics["terrain_source"] = config["terrain"]["file"] or config["terrain"]["kind"]
    metrics["roughness_trace"] = {"samples": len(trace["cycle"]), "every_cycles": every}
    if ctx.report is not None:
        _plots(ctx.report, trace, before, t.as_array(), m)
    return metrics


def _plots(report, trace, before, after, m):
    from harness.report.plots import figure, label
    fig, ax = figure(1, 2, title="level-grid: %s, %d agents, %dx%d" % (m["algorithm"], m["agents"], m["rows"],
                                                                         m["cols"]))
    condition, eps = m["level_condition"], m["epsilon_units"]
    ax[0].plot(trace["cycle"], trace["rms_units"], color="C0", label="rms height")
    ax[1].plot(trace["cycle"], trace["range_units"], color="C1", label="range max - min")
    # the threshold on the panel of the quantity the level condition tests, labelled with that test
    if condition == "rms":
        ax[0].axhline(eps, color="C3", linestyle="--", label="level threshold: rms <= %g units" % eps)
        range_title = "height range"
    elif condition == "grad":
        ax[1].plot(trace["cycle"], trace["max_gradient_units"], color="C2",
                   label="largest 4-neighbour step |dh|")
        ax[1].axhline(eps, color="C3", linestyle="--",
                      label="level threshold: every 4-neighbour |dh| <= %g units" % eps)
        range_title = "height range and largest 4-neighbour step"
    else:
        ax[1].axhline(eps, color="C3", linestyle="--", label="level threshold: range <= %g units" % eps)
        range_title = "height range"
    label(ax[0], "rms height (std of the heights)", "cycles", "rms (units)")
    label(ax[1], range_title, "cycles", "height difference (units)")
    report.save_figure(fig, "roughness")

    fig, ax = figure(1, 2, title="terrain heights before and after (units)")
    lo = min(int(before.min()), int(after.min()))
    hi = max(int(before.max()), int(after.max()), lo + 1)
    for a, grid, name in ((ax[0], before, "before"), (ax[1], after, "after %d cycles" % m["cycles"])):
        im = a.imshow(grid, origin="lower", vmin=lo, vmax=hi, cmap="terrain")
        cb = a.figure.colorbar(im, ax=a)
        cb.set_label("height (units)")
        label(a, name, "column east (cells)", "row north (cells)", legend=False)
    report.save_figure(fig, "terrain")
