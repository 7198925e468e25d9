"""``python -m harness sweep SCENARIO``: a scenario over seeds and a grid of settings, on the sweep runner.

Every cell of the grid (one value of each ``--set KEY=V1,V2,...``) runs once per seed of ``--seeds``; each
run is one job of :mod:`harness.sweep_runner` (local processes, or Ray), so the numbers do not depend on
the engine or ``--workers``. The folder (``--out``, default ``reports/sweep-SCENARIO``) gets:

- ``table.json``, ``table.csv``, ``table.md``: every metric of every cell, its mean and 95 % interval over
  the seeds (:mod:`harness.sweep_table`);
- ``results.json``: every job's metrics (or its error) in job order: identical for identical seeds;
- ``run.json``: the engine, each job's wall time and the engine's overhead, the failed jobs' tracebacks;
- ``jobs/``: each job's result as it finishes; ``--resume DIR`` after an interruption runs only the jobs
  whose results are not there.

A job that raises (e.g. a setting that is invalid in one cell) is reported with its seed and settings;
the others complete. Exit 0 when every job ran, 3 when some failed, 2 on bad input, 130 on Ctrl-C.
"""
import argparse
import itertools
import json
import os
import platform
import sys
import time

from harness import scenarios
from harness.config import ConfigError, RepeatedKey, load_file, nested, object_without_repeats, overlay
from harness.interrupts import how_it_ended
from harness.report.run_report import write_whole
from harness.scenario_jobs import scenario_job
from harness.sweep_runner import Job, Runner, add_engine_arguments
from harness.sweep_table import build_table, cell_label, write_table

EXIT_JOBS_FAILED = 3
# what a sweep writes at its end (run.json also when it is interrupted): removed when a sweep starts in the folder
SUMMARY_FILES = ("table.json", "table.csv", "table.md", "results.json", "run.json")

EXAMPLES = """examples:
  python -m harness sweep waypoints --seeds 1-8 --reduced          # 8 quick runs, one cell
  python -m harness sweep waypoints --seeds 1-20 --set aiding.pos_sigma_m=0.02,0.05,0.2 --workers 2
  python -m harness sweep waypoints --seeds 1-8 --engine ray --workers 2                # a local Ray runtime
  python -m harness sweep waypoints --seeds 1-50 --engine ray --address 10.0.0.5:6379   # a Ray cluster
  python -m harness sweep waypoints --seeds 1-50 --resume reports/sweep-waypoints      # after an interruption
"""


MAX_SEEDS = 100000          # runs of one sweep: far beyond any study, short of a list that fills the memory


def seed_list(text):
    """``1-50``, ``3``, ``1,4,10-12`` -> the seeds (integers >= 0, each once, in order; at most MAX_SEEDS)."""
    seeds = []
    try:
        for part in text.split(","):
            part = part.strip()
            if "-" in part[1:]:
                first, last = part.split("-", 1)
                first, last = int(first), int(last)
                if last < first:
                    raise ValueError
                more = range(first, last + 1)
                count = last - first + 1          # len() of a range beyond sys.maxsize raises OverflowError
            else:
                more = (int(part),)
                count = 1
            if len(seeds) + count > MAX_SEEDS:        # counted before the list holds them
                raise argparse.ArgumentTypeError("at most %d seeds in one sweep, got %d"
                                                 % (MAX_SEEDS, len(seeds) + count))
            seeds.extend(more)
    except ValueError:
        raise argparse.ArgumentTypeError("expected seeds like 1-50 or 1,4,10-12 (integers >= 0), got %r" % text)
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        raise argparse.ArgumentTypeError("expected distinct seeds >= 0 like 1-50 or 1,4,10-12, got %r" % text)
    return seeds


def split_values(text):
    """``0.1,0.2`` -> [0.1, 0.2]; commas inside brackets, braces or quotes do not split (``[1,2],[3]`` is two
    values; a quote opens where a value starts, or a JSON string inside brackets, and ends at its unescaped
    match: ``it's,b`` is two values, ``"a\\"b",c`` two; a stray ``]`` does not stop later commas from splitting);
    each value is JSON, else a string (``NaN`` and ``Infinity`` too: not JSON, the sweep's files could
    not hold them, and the cell is reported as failed). ConfigError for a JSON object with a key given twice
    (refused, as in a settings file), a number of more than 4300 digits or lists nested thousands deep."""
    parts, depth, quote, current, escaped = [], 0, None, "", False
    for ch in text:
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
        elif ch == '"' and (depth > 0 or not current.strip()) or ch == "'" and depth == 0 and not current.strip():
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        current += ch
    parts.append(current)
    values = []
    for part in parts:
        try:
            values.append(json.loads(part, parse_constant=_not_json_constant, object_pairs_hook=object_without_repeats))
        except RepeatedKey as exc:
            raise ConfigError("value %s: %s" % (part, exc))
        except (json.JSONDecodeError, _NotJson):
            values.append(part)
        except (ValueError, RecursionError) as exc:    # a number of more than 4300 digits, lists thousands deep
            raise ConfigError("value not usable: %s" % str(exc).splitlines()[0].split(";")[0])
    return values


class _NotJson(ValueError):
    """NaN, Infinity or -Infinity in a sweep value: kept as text."""


def _not_json_constant(name):
    raise _NotJson("%s is not JSON" % name)


def sweep_axes(items):
    """``["a.b=1,2", "c=x"]`` -> {"a.b": [1, 2], "c": ["x"]} (each key once, each of its values once)."""
    axes = {}
    for item in items:
        if "=" not in item:
            raise ConfigError("--set expects KEY=VALUE[,VALUE...], got %r" % item)
        key, text = item.split("=", 1)
        if "" in key.split(".") or key in axes:
            raise ConfigError("--set %s: %s" % (key, "given twice: list its values in one --set" if key in axes else
                                                "a key is missing" if not key else "an empty part in the key"))
        try:
            axes[key] = split_values(text)
        except ConfigError as exc:
            raise ConfigError("--set %s: %s" % (key, exc))
        seen = set()
        for value in axes[key]:
            same = json.dumps(value, sort_keys=True)
            if same in seen:            # two cells of the same settings: the same jobs twice
                raise ConfigError("--set %s: value %s given twice" % (key, same))
            seen.add(same)
    return axes


def grid(axes):
    """The cells: one {key: value} per combination of the axes' values (the first axis varies slowest)."""
    keys = list(axes)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(axes[k] for k in keys))]


def check_cells(name, base, cells, reduced):
    """The problem of each cell's settings (None when fine), checked as a run checks them; ConfigError when
    every cell is wrong (nothing would run)."""
    problems = []
    for settings in cells:
        try:
            scenarios.prepare(name, base, nested(settings), reduced=reduced)
            problems.append(None)
        except ConfigError as exc:
            problems.append(str(exc))
    if all(problems):
        raise ConfigError(problems[0] + (" (and in every other cell)" if len(cells) > 1 else ""))
    return problems


def run_sweep(name, seeds, axes=None, out_dir=None, base=None, reduced=False, runner=None, resume=False,
              show_progress=False):
    """Run scenario ``name`` for every seed in every cell of ``axes`` on ``runner`` (default: the local
    engine, one process) and write the folder; returns ``(table, rows, sweep result)``."""
    axes = axes or {}
    scenarios.load(name)
    base = base or {}
    cells = grid(axes)
    problems = check_cells(name, base, cells, reduced)
    for settings, problem in zip(cells, problems):
        if problem:
            print("warning: cell %s: %s (its jobs will be reported as failed)" % (cell_label(settings), problem),
                  file=sys.stderr)
    out_dir = out_dir or os.path.join("reports", "sweep-" + name)
    jobs, where = [], []
    for c, settings in enumerate(cells):
        try:
            overrides = overlay(base, nested(settings))       # checked in the job (a bad cell fails there)
        except ConfigError as exc:                            # no settings tree at all (a.b below a=3)
            overrides = None
            problem = str(exc)
        for seed in seeds:
            if overrides is None:
                jobs.append(Job(refused_cell, (problem,), info={"scenario": name, "settings": settings,
                                                                "seed": int(seed)}, key="refused-%d-%d" % (c, seed)))
            else:
                jobs.append(scenario_job(name, overrides, seed, reduced))
            where.append((c, seed))
    first_cell = {}
    for job, (c, _seed) in zip(jobs, where):
        other = first_cell.setdefault(job.key, c)
        if other != c:                  # e.g. a={"b":1},{"b":2} with a.b=5: both cells are a.b=5
            raise ConfigError("cells %s and %s are the same settings (the same jobs twice)"
                              % (cell_label(cells[other]), cell_label(cells[c])))
    own = runner is None
    runner = runner or Runner()
    try:
        _write_json(out_dir, "sweep.json", {"scenario": name, "seeds": seeds, "axes": axes, "config": base,
                                            "reduced": reduced}, create=True)
        for stale in SUMMARY_FILES:      # an earlier sweep's summary must not pass for this one's (jobs/ stays)
            try:
                os.remove(os.path.join(out_dir, stale))
            except FileNotFoundError:
                pass
        t0 = time.perf_counter()
        try:
            result = runner.run(jobs, out_dir=out_dir, resume=resume, show_progress=show_progress,
                                desc="sweep %s" % name)
        except BaseException as exc:
            # Ctrl-C / SIGTERM / a crash of the runner itself: the finished jobs are in jobs/ already; say so
            done = _stored(out_dir, jobs)
            _write_json(out_dir, "run.json", {
                "scenario": name, "seeds": seeds, "axes": axes, "config": base, "reduced": reduced,
                "ended": how_it_ended(exc), "wall_time_s": round(time.perf_counter() - t0, 3),
                "jobs": len(jobs), "jobs_stored": done, "resume": "run the same command with --resume %s" % out_dir,
                "python": platform.python_version()})
            raise
    finally:
        if own:
            runner.close()
    rows = []
    for (c, seed), outcome in zip(where, result.outcomes):
        row = {"cell": c, "settings": cells[c], "seed": seed}
        if outcome is not None and outcome.ok:
            row["metrics"] = outcome.value
        else:
            row["error"] = outcome.error_type if outcome else "NotRun"
            row["message"] = outcome.message if outcome else "the job did not run"
        rows.append(row)
    table = build_table(name, seeds, axes, cells, rows, reduced)
    write_table(out_dir, table)
    _write_json(out_dir, "results.json", rows)
    _write_json(out_dir, "run.json", {"scenario": name, "seeds": seeds, "axes": axes, "config": base,
                                      "reduced": reduced, "ended": "finished", "timing": result.timing,
                                      "failures": result.failures,
                                      "python": platform.python_version()})
    return table, rows, result


def refused_cell(problem):
    """The job of a cell whose settings make no settings tree (``a=3`` with ``a.b=1``): raises its ConfigError,
    so the cell is reported failed like any other cell with a bad setting."""
    raise ConfigError(problem)


def _stored(out_dir, jobs):
    """How many of ``jobs`` have their result in ``out_dir/jobs/`` (not another sweep's, not a temporary file)."""
    keys = {job.key for job in jobs}
    try:
        names = os.listdir(os.path.join(out_dir, "jobs"))
    except OSError:
        return 0
    return len({os.path.splitext(n)[0] for n in names if n.endswith((".json", ".pkl"))} & keys)


def _write_json(out_dir, name, data, create=False):
    if create:
        try:
            os.makedirs(out_dir, exist_ok=True)
        except OSError as exc:
            raise ConfigError("cannot write the sweep folder %s: %s" % (out_dir, exc.strerror or exc))
    write_whole(os.path.join(out_dir, name), json.dumps(data, indent=2, allow_nan=False) + "\n")   # NaN: ValueError


def add_parser(sub):
    p = sub.add_parser("sweep", help="a scenario over seeds and a grid of settings: one table of every metric",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    p.add_argument("scenario", help="scenario name (see `list`)")
    p.add_argument("--seeds", type=seed_list, default=seed_list("1-10"),
                   help="run seeds: 1-50, or 1,4,10-12 (default 1-10); the same seeds in every cell")
    p.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a setting's values, one cell each (VALUE is JSON, else a string; commas inside [] "
                        "do not split); several --set make a grid; `settings SCENARIO` lists every KEY")
    p.add_argument("--config", metavar="FILE", help="settings overrides for every cell (.toml or .json)")
    p.add_argument("--reduced", action="store_true", help="every run in the scenario's quick REDUCED settings")
    p.add_argument("--out", metavar="DIR", help="the sweep's folder (default: reports/sweep-SCENARIO)")
    p.add_argument("--resume", metavar="DIR",
                   help="finish the interrupted sweep in DIR (same arguments): jobs whose results are there "
                        "are not run again")
    add_engine_arguments(p, workers_help="jobs at a time (default: 1 locally, every CPU of a Ray cluster)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no table echo")
    p.set_defaults(func=_cmd)


def _cmd(args):
    out_dir = args.out
    if args.resume:
        if args.out and os.path.abspath(args.out) != os.path.abspath(args.resume):
            raise ConfigError("--resume %s and --out %s name different folders" % (args.resume, args.out))
        if not os.path.isdir(os.path.join(args.resume, "jobs")):
            raise ConfigError("nothing to resume in %s (no jobs/ folder of a sweep there)" % args.resume)
        out_dir = args.resume
    out_dir = out_dir or os.path.join("reports", "sweep-" + args.scenario)
    axes = sweep_axes(args.set)
    base = load_file(args.config) if args.config else {}
    runner = Runner(args.engine, args.workers, args.address)
    try:
        table, rows, result = run_sweep(args.scenario, args.seeds, axes, out_dir, base, args.reduced, runner,
                                        resume=bool(args.resume), show_progress=not args.quiet)
    except KeyboardInterrupt:
        print("interrupted: the finished jobs are in %s/jobs; resume with --resume %s" % (out_dir, out_dir),
              file=sys.stderr)
        raise
    finally:
        runner.close()
    for row in rows:
        if "error" in row:
            print("failed: cell %s, seed %d: %s: %s" % (cell_label(row["settings"]), row["seed"], row["error"],
                                                      row["message"]), file=sys.stderr)
    t = result.timing
    if not args.quiet:
        with open(os.path.join(out_dir, "table.md")) as fh:
            print(fh.read())
    print("sweep: %d jobs on %s, workers %d: %d ran, %d resumed, %d failed; report: %s (table.md, table.csv, "
          "table.json, results.json, run.json)" % (t["jobs"], t["engine"], t["workers"] or 0, t["ran"], t["resumed"],
                                                    t["failed"], out_dir))
    return EXIT_JOBS_FAILED if result.failures else 0
