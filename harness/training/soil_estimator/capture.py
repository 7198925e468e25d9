"""What the learned soil estimator reads from an episode (``harness.scenarios.soil.soil_episode``): the
closed cuts the blind-mapping part hands on, and the operator's commands (the action history), captured
through the episode's ``on_app`` and ``log`` hooks without changing the app.

:class:`Capture`: ``on_app(app, grid)`` makes the mapping part hand every closed cut to it as well (to the
estimation part too when there is one); ``log(topic, time_us, msg)`` keeps the commands of
``/loader/cmd`` and passes every message on to the run's log. :func:`cut_inputs` turns a cut into the
estimator's inputs on the force path: the ``CutWindow`` (the classical estimator's window: valid sweeps,
moving samples), the kinematics and the actions at its samples; :func:`cut_controller` the controller
model's extra channels (acceleration, the track speed loop's command) at the same samples.
"""
from harness.sim.soil_loader_world import COMMAND_TOPIC
from onboard.soil import learned_estimator as le
from onboard.soil import loader_app


class Capture:
    """Collects ``cuts`` (``loader_app.Cut``) and ``commands`` ({time_us: command dict}) of one episode;
    ``log``: the run's log to pass messages on to (None: none)."""

    def __init__(self, log=None):
        self.cuts = []
        self.commands = {}
        self.app_config = None
        self._log = log

    def log(self, topic, time_us, msg):
        if topic == COMMAND_TOPIC:
            self.commands[int(time_us)] = msg
        if self._log is not None:
            self._log(topic, time_us, msg)

    def on_app(self, app, grid):
        mapping = app.part("mapping")
        self.app_config = mapping.config
        downstream = mapping.estimation
        capture = self

        class _Tee:
            def submit(self, cut):
                capture.cuts.append(cut)
                if downstream is not None:
                    downstream.submit(cut)
        mapping.estimation = _Tee()


def cut_inputs(app_config, cut, commands, path="force"):
    """(window, kinematics (n, 5), actions (n, 5)) of a closed cut on sensor path ``path`` (the window
    of ``loader_app.CutEstimation.window``: valid sweeps, samples moving at least ``min_speed_mps``)."""
    part = loader_app.CutEstimation(app_config, None)
    window = part.window(cut, path)
    kin = le.kinematics_from_samples(cut.samples, window.time_us) if len(window) else None
    act = le.actions_from_commands(commands, window.time_us) if len(window) else None
    return window, kin, act


def cut_controller(cut, commands, window):
    """(n, 2) ``learned_estimator.CONTROLLER_CHANNELS`` at the window's samples (the acceleration from all of
    the cut's samples, the track loop's command from ``commands``); raises CutEstimateError."""
    return le.controller_channels(cut.samples, commands, window.time_us)


def learned_rows(episode, cap, estimator, path="force", min_samples=60):
    """The learned ``estimator``'s rows of an episode's captured cuts (the layout of the classical rows of
    ``loader_app.CutEstimation.estimate``, ``CutEstimate.as_dict`` and ``estimator`` "learned", with the
    cut's ``truth``; "skipped" with the reason for a window too short or with bad inputs)."""
    from harness.scenarios.soil.soil_episode import cut_truth
    from onboard.soil.cut_estimator import CutEstimateError
    rows = []
    for cut in cap.cuts:
        window, kin, act = cut_inputs(cap.app_config, cut, cap.commands, path)
        row = {"lane": list(cut.lane), "path": path, "estimator": "learned", "samples": len(window),
               "t0_us": cut.samples[0].time_us if cut.samples else 0,
               "t1_us": cut.samples[-1].time_us if cut.samples else 0}
        if len(window) < min_samples:
            row["skipped"] = "too few samples (%d < %d)" % (len(window), min_samples)
        else:
            try:
                ctl = cut_controller(cut, cap.commands, window) if estimator.inputs == "controller" else None
                est = estimator.estimate(window, kin, act, ctl)
            except CutEstimateError as exc:
                row["skipped"] = str(exc)
            else:
                row.update(est.as_dict())
                row["sigma_epistemic"] = dict(zip(le.THETA_U_NAMES, (float(v) ** 0.5 for v in est.var_epistemic)))
        row["truth"] = cut_truth(episode.world, row)
        rows.append(row)
    return rows
