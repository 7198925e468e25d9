"""The grading run's heightmap plot shows the sand above the target level (the ground): with the ground at
world.ground_level_m = -1 m every cell read below the colour scale's 0 and the piles vanished."""
import numpy as np

from harness.report.run_report import RunReport
from harness.scenarios import prepare
from harness.scenarios.grading.episode import GradingEpisode
from harness.scenarios.grading.mission import _plots
from harness.sim.rng import RunRandom


class _KeptImages(RunReport):
    """A run's report folder that keeps the image arrays and colour limits of each figure instead of its PNG."""

    def save_figure(self, fig, name):
        import matplotlib.pyplot as plt
        self.images = getattr(self, "images", {})
        self.images[name] = [(np.asarray(im.get_array()), im.get_clim()) for ax in fig.axes for im in ax.images]
        plt.close(fig)


def _heightmaps(tmp_path, ground_level_m):
    _, config = prepare("grading", {"world": {"ground_level_m": ground_level_m}}, reduced=True)
    episode = GradingEpisode(config, RunRandom(1))
    report = _KeptImages(str(tmp_path / ("run%g" % ground_level_m)), "grading", 1, config)
    try:
        _plots(report, episode)
    finally:
        episode.close()
        report.mcap.close()
    return report.images["heightmap"]


def test_piles_show_above_a_ground_below_zero(tmp_path):
    below = _heightmaps(tmp_path, -1.0)
    at_zero = _heightmaps(tmp_path, 0.0)
    for (data, clim), (data0, clim0) in zip(below, at_zero):
        assert np.allclose(clim, clim0) and clim[0] == 0.0 and clim[1] > 1.0   # cm above the ground
        assert np.allclose(data, data0)                                   # the same piles, whatever the ground
        assert float(np.max(data)) > 1.0
