"""Progress display for long runs (tqdm on stderr), in simulated seconds (or another unit)."""
import math
import sys

from tqdm import tqdm


class Progress:
    """``update_to(sim_s)`` as the run advances; silent when ``enabled`` is False. A ``total_s`` that is no
    finite number >= 0 (an open-ended run) shows the count alone, without a bar or a percentage."""

    def __init__(self, total_s, desc, enabled=True, unit="sim s"):
        n, total = ("{n:.1f}", "{total:.1f}") if unit == "sim s" else ("{n:.0f}", "{total:.0f}")
        try:
            known = math.isfinite(total_s) and total_s >= 0
        except (TypeError, OverflowError):          # None, or an int beyond the floats (no total to show)
            known = False
        if known:
            fmt = "{desc}: {percentage:3.0f}%|{bar:30}| " + n + "/" + total + " " + unit + " [{elapsed}<{remaining}]"
        else:
            fmt = "{desc}: " + n + " " + unit + " [{elapsed}]"
        self._total = round(total_s, 1) if known else None
        self._bar = tqdm(total=self._total, desc=desc, unit=unit, file=sys.stderr,
                         mininterval=0.5, disable=not enabled, leave=False, bar_format=fmt)
        self._last = 0.0

    def update_to(self, sim_s):
        step = round((sim_s if self._total is None else min(sim_s, self._total)) - self._last, 1)
        if step > 0:
            self._bar.update(step)
            self._last += step

    def stage(self, desc):
        """Change the bar's label (a run's next stage)."""
        self._bar.set_description_str(desc)

    def close(self):
        self._bar.close()


def close_all():
    """Close every progress bar still shown (a run cut short by Ctrl-C leaves its bars open), so the next line
    printed starts on a clean line."""
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
