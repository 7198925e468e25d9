"""Draw the architecture picture of the README (docs/architecture.png).

Three blocks: ``onboard`` (the runtime), ``boards`` (one app per board, built from onboard's parts) and
``harness`` (simulated hardware and worlds, missions, training). Arrows say what imports or feeds what:
boards import onboard; the harness's simulated sensors and devices feed the same onboard apps through the
entry points the real drivers call (and speak the real wire protocols to the board drivers); onboard
imports neither. Training exports int8 models that onboard's policy loader reads.

Run from the repository root (no Makefile needed):

    .venv/bin/python scripts/draw_architecture.py                  # -> docs/architecture.png
    .venv/bin/python scripts/draw_architecture.py --out /tmp/a.png

The picture is drawn with matplotlib's Agg backend only; a test runs this script to a temporary file.
"""
import argparse
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OUT = os.path.join(REPO, "docs", "architecture.png")

# colours per block: (face, edge)
ONBOARD = ("#e8f1fb", "#2f6db5")
BOARDS = ("#eaf6ea", "#3a8a3a")
HARNESS = ("#fdf1e4", "#c0732a")
MODELS = ("#f3eefa", "#7a55b0")
ARROW = "#333333"

# (x, y, w, h) in figure units on a 16 x 10 canvas; (columns of the block's grid)
BLOCKS = {
    "boards": (3.6, 7.1, 7.2, 2.6, 2),
    "hardware": (11.8, 7.1, 3.9, 2.6, 1),
    "onboard": (3.6, 3.7, 7.2, 2.8, 2),
    "harness": (3.6, 0.3, 7.2, 2.8, 2),
    "models": (11.8, 0.3, 3.9, 2.8, 1),
}

CONTENTS = {
    "onboard": ("onboard/  the runtime", ONBOARD, [
        ("core", "linear algebra, rotations, units, samples, settings"),
        ("estimators", "INS + ES-EKF, planar EKF, particle filter"),
        ("control", "PID, diff drive, way-point follower"),
        ("policy", "int8 TFLite: LiteRT + pure kernel"),
        ("comms", "transports, UWB, VESC, line link"),
        ("runtime", "Node: scheduler, watchdog, log, recording"),
        ("deploy", "mpremote deploy to MicroPython boards"),
        ("swarm", "swarm member: PF + learned bearing + DQN"),
    ]),
    "boards": ("boards/  one app (a recipe on a Node) per board", BOARDS, [
        ("rpi", "Raspberry Pi: VESCs, MPU-6050, service"),
        ("crazyflie", "cflib driver, swarm member"),
        ("pico_rp2040, nano_esp32", "MicroPython (mp_common)"),
        ("arduino", "host driver of the AVR firmware"),
    ]),
    "harness": ("harness/  simulation, missions, training", HARNESS, [
        ("sim/", "clock, rng, vehicles, sensors, radio, worlds"),
        ("sim/ devices", "VESC, I2C, AVR (simavr), Crazyflies, MP board"),
        ("scenarios/", "missions: python -m harness run NAME"),
        ("training/", "grading_policy, swarm_policy, int8 export"),
        ("replay, conformance", "re-run a recorded app"),
        ("report/", "metrics.json, plots, log.mcap"),
    ]),
    "models": ("models/  int8 .tflite + cards", MODELS, [
        ("grading/", "ag2u agent1, agent2"),
        ("swarm/", "pocket-drone DQN, GRU"),
    ]),
    "hardware": ("real hardware", ("#f4f4f4", "#777777"), [
        ("sensors, radios", "IMU, UWB, pose source"),
        ("devices", "VESCs, AVR board, Crazyflies, MP boards"),
    ]),
}

# (from, to, label, from side, to side); a third point routes the arrow around a block
ARROWS = [
    ("boards", "onboard", "import parts, build a Node", "bottom", "top", None),
    ("harness", "onboard", "simulated sensors call the same entry points as the drivers",
     "top", "bottom", None),
    ("harness", "boards", "simulated devices speak the\nreal wire protocols to\nthe board drivers",
     "left", "left", 1.6),
    ("harness", "models", "train, export int8", "right", "left", None),
    ("models", "onboard", "load_policy", "top", "right_low", None),
    ("hardware", "boards", "serial, I2C, radio", "left", "right", None),
]


def _anchor(name, side):
    x, y, w, h, _ = BLOCKS[name]
    return {
        "left": (x, y + h * 0.5),
        "right": (x + w, y + h * 0.5),
        "right_low": (x + w, y + h * 0.25),
        "top": (x + w * 0.5, y + h),
        "bottom": (x + w * 0.5, y),
    }[side]


def draw(out_path):
    """Write the picture to ``out_path`` (PNG, or SVG when the name ends in .svg); returns the path."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    fig = plt.figure(figsize=(16, 10), dpi=80)
    ax = fig.add_axes([0, 0, 1, 1])
    ax.set_xlim(0, 16)
    ax.set_ylim(0, 10)
    ax.axis("off")

    for name, (x, y, w, h, cols) in BLOCKS.items():
        title, (face, edge), rows = CONTENTS[name]
        ax.add_patch(FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.02,rounding_size=0.15",
                                    facecolor=face, edgecolor=edge, linewidth=2))
        ax.text(x + 0.15, y + h - 0.12, title, ha="left", va="top", fontsize=13, weight="bold", color=edge)
        n_rows = (len(rows) + cols - 1) // cols
        cell_w, cell_h = w / cols, (h - 0.55) / n_rows
        for i, (key, text) in enumerate(rows):
            cx = x + (i % cols) * cell_w + 0.2
            cy = y + h - 0.55 - (i // cols + 0.5) * cell_h
            ax.text(cx, cy + 0.13, key, ha="left", va="center", fontsize=10.5, weight="bold", family="monospace")
            ax.text(cx, cy - 0.17, text, ha="left", va="center", fontsize=9)

    for src, dst, label, s_side, d_side, via_x in ARROWS:
        p0, p1 = _anchor(src, s_side), _anchor(dst, d_side)
        style = dict(arrowstyle="-|>", mutation_scale=22, linewidth=2, color=ARROW, shrinkA=2, shrinkB=2)
        if via_x is None:
            ax.add_patch(FancyArrowPatch(p0, p1, **style))
            mx, my = (p0[0] + p1[0]) / 2, (p0[1] + p1[1]) / 2
        else:   # out to the left, up, back in
            ax.plot([p0[0], via_x, via_x], [p0[1], p0[1], p1[1]], color=ARROW, linewidth=2)
            ax.add_patch(FancyArrowPatch((via_x, p1[1]), p1, **style))
            mx, my = via_x, (p0[1] + p1[1]) / 2
        ax.text(mx, my, label, ha="center", va="center", fontsize=9.5, style="italic",
                bbox=dict(boxstyle="round,pad=0.25", facecolor="white", edgecolor="none", alpha=0.95))

    ax.text(11.8, 6.4, "onboard imports neither boards nor harness:\n"
                       "the same onboard code runs on the robot,\n"
                       "in the harness and in CI. onboard/core and\n"
                       "every pure module also run on MicroPython.",
            ha="left", va="top", fontsize=10)
    ax.text(11.8, 4.8, "firmware/: AVR sketch + simavr bridge\n"
                       "cython_ext/: compiled kernels, one switch:\nONBOARD_IMPL=pure|cython|numpy",
            ha="left", va="top", fontsize=9.5, color="#444444")

    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    fig.savefig(out_path)
    plt.close(fig)
    return out_path


def main(argv=None):
    parser = argparse.ArgumentParser(description="Draw docs/architecture.png (the README's picture).")
    parser.add_argument("--out", default=DEFAULT_OUT, help="output file (.png or .svg); default docs/architecture.png")
    args = parser.parse_args(argv)
    print(draw(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
