"""The report folder of one run: metrics.json, plots (PNG), log.mcap, run.json.

``metrics.json`` holds only outcome metrics (identical seeds give identical files; a NaN, an infinity or a value
JSON cannot hold is refused with ValueError or TypeError before anything is written);
``run.json`` holds the run's identity (scenario, seed, config, Python version) and its wall-clock figures
(``wall_time_s`` of the whole run, ``timing``: what the scenario reported with ``ctx.timing``; a timing figure
that is no finite number is written as null, a NumPy scalar as its number, any other value JSON cannot hold as
its text, so run.json is written also then).
JSON files are written whole (a temporary file renamed). A run in a folder that holds an earlier run's report
first removes that run's outcome files (``metrics.json``, ``run.json`` and the plots its run.json lists), so
nothing of the earlier run passes for this one's.
"""
import json
import math
import os
import platform
import time

from onboard.runtime.mcap_log import McapLog


def report_folder(out_dir, what="report folder"):
    """Create ``out_dir`` (and its parents) for a tool's report or output (``what`` names it in the message),
    before the tool does its work; ConfigError (one line) when it cannot be written (a file of that name, no
    permission)."""
    from onboard.core.settings import ConfigError
    try:
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise FileExistsError(17, "a file is there, not a folder", out_dir)
        os.makedirs(out_dir, exist_ok=True)
    except OSError as exc:
        raise ConfigError("cannot write the %s %s: %s" % (what, out_dir, exc.strerror or exc))
    return out_dir


def write_whole(path, data):
    """Write ``data`` (text, or bytes) to ``path`` whole or not at all: into a temporary file beside it, then
    renamed over it (an interruption or a write error leaves the previous file, never half of one). Written as
    given (no newline translation)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, ".%s.%d.tmp" % (name, os.getpid()))
    try:
        with (open(tmp, "wb") if isinstance(data, bytes) else open(tmp, "w", newline="")) as fh:
            fh.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _remove_earlier_report(out_dir):
    """Remove what an earlier run's report left in ``out_dir``: its metrics.json, run.json and the plots its
    run.json lists (only those: other files in the folder are not the report's)."""
    run_json = os.path.join(out_dir, "run.json")
    plots = []
    try:
        with open(run_json) as fh:
            listed = json.load(fh).get("plots")
        if isinstance(listed, list):
            plots = [p for p in listed if isinstance(p, str) and p.endswith(".png") and os.path.basename(p) == p]
    except (OSError, ValueError, AttributeError):
        pass
    for name in ["metrics.json"] + plots + ["run.json"]:
        try:
            os.remove(os.path.join(out_dir, name))
        except FileNotFoundError:
            pass


class RunReport:
    """Creates ``out_dir`` (and its parents, :func:`report_folder`: ConfigError when it cannot) and opens its
    ``log.mcap`` (OSError when it cannot)."""

    def __init__(self, out_dir, scenario, seed, config):
        self.out_dir = report_folder(out_dir)
        _remove_earlier_report(self.out_dir)
        self.scenario = scenario
        self.seed = seed
        self.config = config
        self.mcap = McapLog(os.path.join(out_dir, "log.mcap"))
        self.plots = []
        self.timing = {}
        self._t0 = time.perf_counter()

    def log(self, topic, time_us, message):
        self.mcap.log(topic, time_us, message)

    def path(self, name):
        return os.path.join(self.out_dir, name)

    def save_figure(self, fig, name):
        """Save a matplotlib figure as ``<name>.png`` in the report folder, written whole (:func:`write_whole`:
        a run cut short while it saves leaves no half PNG); a name saved again replaces its PNG and is listed once
        in run.json's ``plots``."""
        import io

        import matplotlib.pyplot as plt
        path = self.path(name + ".png")
        buf = io.BytesIO()
        try:
            fig.savefig(buf, dpi=110, bbox_inches="tight", format="png")
        finally:
            plt.close(fig)
        write_whole(path, buf.getvalue())
        if os.path.basename(path) not in self.plots:
            self.plots.append(os.path.basename(path))
        return path

    def write_json(self, name, data):
        path = self.path(name)
        write_whole(path, json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")   # NaN: ValueError
        return path

    def add_timing(self, **figures):
        """Wall-clock figures of the run (s, ratios): they vary from machine to machine, so they go to
        run.json, never to metrics.json (a NaN or an infinity as null: :func:`_json_figures`)."""
        self.timing.update(figures)

    def abandon(self, ended):
        """The run did not finish: close the log (everything recorded so far stays readable) and write run.json
        saying how it ended (``ended``: e.g. "interrupted by SIGINT", "failed: ValueError") and after how many
        wall-clock seconds; no metrics.json (a run cut short has no outcomes: one that :meth:`finish` wrote
        before the run was cut short is removed)."""
        try:
            self.mcap.close()
        finally:                   # run.json says how the run ended also when its log could not be finished
            try:
                os.remove(self.path("metrics.json"))
            except FileNotFoundError:
                pass
            self._write_run(ended)

    def finish(self, metrics):
        """Close the log and write metrics.json and run.json; returns the metrics path. Metrics JSON cannot
        hold (NaN, infinity: ValueError; other types, keys of mixed types: TypeError) raise before run.json or
        metrics.json is written, so no run.json says "finished" without its metrics."""
        self.mcap.close()
        text = json.dumps(metrics, indent=2, sort_keys=True, allow_nan=False) + "\n"
        self._write_run("finished")
        path = self.path("metrics.json")
        write_whole(path, text)
        return path

    def _write_run(self, ended):
        self.write_json("run.json", {
            "scenario": self.scenario, "seed": self.seed, "config": self.config, "ended": ended,
            "plots": self.plots, "mcap": "log.mcap", "mcap_messages": self.mcap.messages,
            "wall_time_s": round(time.perf_counter() - self._t0, 3), "timing": _json_figures(self.timing),
            "python": platform.python_version(),
        })


def _json_figures(value):
    """``value`` (wall-clock figures: numbers in nested tables and lists) as JSON holds it: a float that is no
    finite number becomes None, a NumPy scalar its Python number, a tuple a list, a table's keys text, and any
    other value JSON cannot hold its ``str``."""
    def one(item):
        if item is None or isinstance(item, (bool, str)):
            return item, None
        if isinstance(item, (int, float)):
            return (item if math.isfinite(item) else None) if isinstance(item, float) else int(item), None
        if hasattr(item, "item") and hasattr(item, "dtype") and getattr(item, "shape", None) == ():
            return one(item.item())                     # a NumPy scalar
        if isinstance(item, dict):
            return {}, [(_json_key(k), v) for k, v in item.items()]
        if isinstance(item, (list, tuple)):
            return [], list(enumerate(item))
        return str(item), None

    root, children = one(value)
    todo = [(root, children)] if children is not None else []
    while todo:
        node, items = todo.pop()
        for key, item in items:
            converted, below = one(item)
            if isinstance(node, list):
                node.append(converted)
            else:
                node[key] = converted
            if below is not None:
                todo.append((converted, below))
    return root


def _json_key(key):
    """A table key as ``json.dumps`` writes it (text as it is, true/false/null, numbers as JSON), any other
    key as its ``str``."""
    if isinstance(key, str):
        return key
    if isinstance(key, (bool, int, float)) or key is None:
        return json.dumps(key)
    return str(key)
