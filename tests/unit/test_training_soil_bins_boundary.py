"""The soil estimator's validation metrics (train.evaluate): a cut at exactly I_d = 60 % counts in the last
acceptance bin (40-60 %) as it counts in ``force_mae_pct_id_le_60``. Before, the bins ended below 60 %, so such
a cut was in the I_d <= 60 % figure but in no bin (and never in the worst bin)."""
import numpy as np

from harness.training.soil_estimator import train as tr
from onboard.soil import learned_estimator as le

HORIZON = 4


def test_a_cut_at_sixty_percent_is_in_the_last_bin():
    rng = np.random.default_rng(5)
    n, width = 4, 5
    data = {"x_raw": rng.normal(size=(n, width)), "whole_cut": np.ones(n, dtype=bool),
            "geometry": rng.normal(size=(n, HORIZON, len(le.GEOMETRY_CHANNELS))),
            "force_n": rng.normal(1000.0, 100.0, size=(n, HORIZON, 2)),
            "truth": np.abs(rng.normal(1.0, 0.1, size=(n, 5))),
            "relative_density_pct": np.array([10.0, 45.0, 60.0, 80.0]), "soil": np.zeros(n, dtype=int)}
    layers = [(rng.normal(0.0, 0.1, (le.output_size(HORIZON), width)), np.zeros(le.output_size(HORIZON)))]
    lo, hi = tr.preset_bounds()
    m = tr.evaluate(data, np.ones(n, dtype=bool), np.zeros(width), np.ones(width), lo, hi, HORIZON, [layers])
    bins = m["force_mae_pct_bins_id_le_60"]
    assert bins["clay 40-60"]["cuts"] == 2 and bins["clay 0-20"]["cuts"] == 1
    assert sum(b["cuts"] for b in bins.values()) == 3             # every cut at I_d <= 60 %, none above
