"""harness.report.plots.problems: a twin axes (``ax.twinx()``: a second y scale on the same panel) is explained by
its panel's title; asking it for one of its own would draw a second title over the first. Other panels still need
their own title."""
from harness.report.plots import figure, label, problems


def test_a_twin_axes_shares_its_panels_title():
    fig, ax = figure()
    ax.plot([0.0, 1.0], [0.0, 1.0])
    label(ax, "speed and position", "time (s)", "x (m)")
    twin = ax.twinx()
    twin.plot([0.0, 1.0], [1.0, 0.0], "C1")
    twin.set_ylabel("speed (m/s)")
    assert problems(fig) == []


def test_a_twin_still_needs_its_y_label_and_an_untitled_panel_its_title():
    fig, ax = figure()
    ax.plot([0.0, 1.0], [0.0, 1.0])
    ax.set_xlabel("time (s)")
    ax.set_ylabel("x (m)")
    twin = ax.twinx()
    twin.plot([0.0, 1.0], [1.0, 0.0], "C1")
    assert problems(fig) == ["panel 1 (untitled) has no title", "panel 2 (untitled) has no title",
                             "panel 2 (untitled) has no y label"]


def test_two_panels_side_by_side_each_need_a_title():
    fig, axes = figure(1, 2)
    for ax in axes:
        ax.plot([0.0, 1.0], [0.0, 1.0])
    label(axes[0], "left", "time (s)", "x (m)")
    axes[1].set_xlabel("time (s)")
    axes[1].set_ylabel("y (m)")
    assert problems(fig) == ["panel 2 (untitled) has no title"]
