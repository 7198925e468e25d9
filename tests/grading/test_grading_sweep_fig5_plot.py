"""grading-sweep's fig5.png has a title on every panel (harness.report.plots.problems finds nothing to guess)."""
import matplotlib.pyplot as plt

from harness.report import plots
from harness.scenarios.grading.sweep import AGENTS, fig5_figure


def _cell(level_deg):
    return {"heading_sigma_deg": level_deg, "mean_episode_time_s": 100.0 + level_deg, "mean_uncleared_m3": 0.001,
            "rollout_successes": [3, 4], "rollout_decisions": [5, 5]}


def test_fig5_has_nothing_to_guess():
    fig = fig5_figure({agent: [_cell(0), _cell(10)] for agent in AGENTS})
    try:
        assert plots.problems(fig) == []
        assert [ax.get_title() for ax in fig.axes][:3] == ["mean episode time", "mean uncleared volume at the end",
                                                         "successful decisions (blade > 50 % full)"]
    finally:
        plt.close(fig)
