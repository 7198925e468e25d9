"""The report folder of one run: metrics.json, plots (PNG), log.mcap, run.json.

``metrics.json`` holds only outcome metrics (identical seeds give identical files);
``run.json`` holds the run's identity (scenario, seed, config, Python version) and its wall-clock figures
(``wall_time_s`` of the whole run, ``timing``: what the scenario reported with ``ctx.timing``).
JSON files are written whole (a temporary file renamed). A run in a folder that holds an earlier run's report
first removes that run's outcome files (``metrics.json``, ``run.json`` and the plots its run.json lists), so
nothing of the earlier run passes for this one's.
"""
import json
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
        a run cut short while it saves leaves no half PNG)."""
        import io

        import matplotlib.pyplot as plt
        path = self.path(name + ".png")
        buf = io.BytesIO()
        try:
            fig.savefig(buf, dpi=110, bbox_inches="tight", format="png")
        finally:
            plt.close(fig)
        write_whole(path, buf.getvalue())
        self.plots.append(os.path.basename(path))
        return path

    def write_json(self, name, data):
        path = self.path(name)
        write_whole(path, json.dumps(data, indent=2, sort_keys=True, allow_nan=False) + "\n")   # NaN: ValueError
        return path

    def add_timing(self, **figures):
        """Wall-clock figures of the run (s, ratios): they vary from machine to machine, so they go to
        run.json, never to metrics.json."""
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
        """Close the log and write metrics.json and run.json; returns the metrics path."""
        self.mcap.close()
        self._write_run("finished")
        return self.write_json("metrics.json", metrics)

    def _write_run(self, ended):
        self.write_json("run.json", {
            "scenario": self.scenario, "seed": self.seed, "config": self.config, "ended": ended,
            "plots": self.plots, "mcap": "log.mcap", "mcap_messages": self.mcap.messages,
            "wall_time_s": round(time.perf_counter() - self._t0, 3), "timing": self.timing,
            "python": platform.python_version(),
        })
