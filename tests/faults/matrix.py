"""The fault matrix's machinery: one cell = one app, one fault, run on its simulated hardware.

A rig (``pi_rig``, ``mp_rig``, ``avr_rig``, ``swarm_rig``, ``boat_rig``) drives an app in lockstep on
simulated time (integer us) and exposes:

- ``advance(until_us, watch)``: run, calling ``watch(t_us)`` after every step;
- ``driven()``: whether the actuator is driven at this instant, read at the simulated hardware (VESC
  mode and set-point, PWM duty registers, the firmware's PWM compare registers; for the swarm member
  its velocity command, since its motors are the Crazyflie's own);
- ``inject(fault, t_us)`` / ``clear(fault, t_us)``: the fault switched on and off;
- ``bound_us(fault)`` -> (promised bound in us, where the promise comes from);
- ``log_complete()`` -> (bool, what was compared), ``extra(fault)`` -> a short note of counters.

:func:`run_cell` measures one cell: warm-up (the robot must be moving, the control that lets the cell
fail), fault, observe, clear, recover. Times are simulated; nothing sleeps.

An app that commands no actuator (``loader_rig``: the soil loader's mapping app) has no *motors off* to
measure: :func:`run_input_cell` measures instead the time from the fault to its failsafe engaging (the
stale input detected, against the promised bound), its recovery and its log; its rig exposes
``healthy()`` (running normally), ``detected()`` (failsafe engaged) and ``progress()`` (a count that grows
while the app works) in place of ``driven()``.
"""

MEASURED = "measured"
NA = "n/a"
NOT_MEASURED = "not measured"

FAULTS = ("link loss", "sensor stale", "NaN/garbage input", "port vanishes and returns",
          "power cycle/reboot", "forged command", "replayed command", "clock jump")


class Cell:
    """One (app, fault) result. ``status``: MEASURED, NA or NOT_MEASURED (``reason`` says why)."""

    def __init__(self, app, fault, status, reason="", promised_us=None, promise_src="", off_after_us=None,
                 moved_during_fault=None, recovered=None, log_complete=None, note="", actuator=None,
                 detected_after_us=None):
        self.app = app
        self.fault = fault
        self.status = status
        self.reason = reason
        self.promised_us = promised_us
        self.promise_src = promise_src
        self.off_after_us = off_after_us
        self.moved_during_fault = moved_during_fault
        self.recovered = recovered
        self.log_complete = log_complete
        self.note = note
        self.actuator = actuator                    # why there are no motors to read (the app commands none)
        self.detected_after_us = detected_after_us  # such an app: fault -> failsafe engaged (us)

    @property
    def motors_off(self):
        if self.actuator:
            return None
        return self.off_after_us is not None and not self.moved_during_fault

    @property
    def within_bound(self):
        if self.actuator:
            return None
        return self.motors_off and self.promised_us is not None and self.off_after_us <= self.promised_us

    @property
    def detected_in_bound(self):
        """An app that commands nothing: its failsafe engaged within the promised bound."""
        return (self.detected_after_us is not None and self.promised_us is not None
                and self.detected_after_us <= self.promised_us)

    def failures(self):
        """What makes this cell fail the matrix (empty: it passes)."""
        if self.status != MEASURED:
            return []
        out = []
        if self.actuator:
            if self.promised_us is not None and not self.detected_in_bound:
                out.append("fault not detected within the promised %.1f ms" % (self.promised_us / 1e3))
            if self.log_complete is False:
                out.append("log incomplete")
            return out
        if not self.motors_off:
            out.append("robot kept moving after the fault")
        elif not self.within_bound:
            out.append("motors off after %.1f ms > promised %.1f ms" % (self.off_after_us / 1e3,
                                                                       self.promised_us / 1e3))
        if self.log_complete is False:
            out.append("log incomplete")
        return out

    def row(self, times=True):
        """The markdown row; ``times`` False masks the measured time (the committed-file comparison)."""
        if self.status != MEASURED:
            text = "%s: %s" % (self.status, self.reason)
            return "| %s | %s | %s | | | | | | |" % (self.app, self.fault, text)
        if self.promised_us is None:
            promised = "n/a (%s)" % (self.promise_src,)
        else:
            promised = "%.0f ms (%s)" % (self.promised_us / 1e3, self.promise_src)
        if self.actuator:
            return "| %s | %s | %s | n/a: %s | n/a | n/a | %s | %s | %s |" % (
                self.app, self.fault, promised, self.actuator, _yn(self.recovered), _yn(self.log_complete),
                self.note)
        measured = ("%.1f ms" % (self.off_after_us / 1e3) if self.off_after_us is not None else "never")
        if not times:
            measured = "(time)"
        return "| %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            self.app, self.fault, promised, measured, _yn(self.motors_off), _yn(self.within_bound),
            _yn(self.recovered), _yn(self.log_complete), self.note)


def _yn(value):
    return "n/a" if value is None else ("yes" if value else "**NO**")


HEADER = ("| app | fault | bound promised (source) | motors off after | motors off | within bound | state recovered "
          "| log complete | notes |\n|---|---|---|---|---|---|---|---|---|")


def run_cell(app, fault, rig, warm_us=1000000, observe_us=None, recover_us=1000000, note=None, one_shot=False):
    """Measure ``fault`` on ``rig``: ``warm_us`` of normal running (the robot must be driven at its end),
    the fault for ``observe_us`` (default: twice the promised bound + 0.5 s), then cleared and ``recover_us``
    to be driven again. ``one_shot``: the fault is an event (a clock jump), not a condition that lasts, so
    driving again after the stop is its recovery, not motion during the fault. Returns a :class:`Cell`."""
    promised_us, src = rig.bound_us(fault)
    rig.advance(rig.t_us + warm_us)
    if not rig.driven():
        raise AssertionError("%s / %s: not moving before the fault (the cell could not fail)" % (app, fault))
    t_f = rig.t_us
    rig.inject(fault, t_f)
    state = {"off": None, "moved": False}

    def watch(t):
        if rig.driven():
            if state["off"] is not None and not one_shot:
                state["moved"] = True
        elif state["off"] is None:
            state["off"] = t

    if observe_us is None:
        observe_us = 2 * promised_us + 500000
    rig.advance(t_f + observe_us, watch)
    off = state["off"]
    moved = state["moved"] or off is None
    rig.clear(fault, rig.t_us)
    t_c = rig.t_us
    rec = {"t": None}

    def watch_rec(t):
        if rec["t"] is None and rig.driven():
            rec["t"] = t

    rig.advance(t_c + recover_us, watch_rec)
    ok, _what = rig.log_complete()
    return Cell(app, fault, MEASURED, promised_us=promised_us, promise_src=src,
                off_after_us=None if off is None else off - t_f, moved_during_fault=moved,
                recovered=rec["t"] is not None, log_complete=ok, note=note if note is not None else rig.extra(fault))


def run_input_cell(app, fault, rig, actuator, warm_us=1000000, observe_us=None, recover_us=1000000):
    """Measure ``fault`` on the rig of an app that commands nothing (``actuator``: why): ``warm_us`` of normal
    running (``rig.healthy()`` at its end, else the cell could not fail), the fault for ``observe_us``
    (default: twice the promised bound + 0.5 s), watching for the failsafe to engage (when a bound is
    promised), then cleared and ``recover_us`` to run normally again with its work going on (``progress``
    grows). Returns a :class:`Cell` whose note starts with the detection time."""
    promised_us, src = rig.bound_us(fault)
    rig.advance(rig.t_us + warm_us)
    if not rig.healthy():
        raise AssertionError("%s / %s: not running normally before the fault (the cell could not fail)"
                             % (app, fault))
    t_f = rig.t_us
    rig.inject(fault, t_f)
    state = {"at": None}

    def watch(t):
        if state["at"] is None and rig.detected():
            state["at"] = t

    if observe_us is None:
        observe_us = 2 * (promised_us or 0) + 500000
    rig.advance(t_f + observe_us, watch)
    rig.clear(fault, rig.t_us)
    t_c = rig.t_us
    before = rig.progress()
    rig.advance(t_c + recover_us)
    recovered = rig.healthy() and rig.progress() > before
    ok, _what = rig.log_complete()
    detected = None if state["at"] is None else state["at"] - t_f
    note = rig.extra(fault)
    if promised_us is not None:
        if detected is None:
            note = "failsafe never engaged; " + note
        else:
            note = "failsafe engaged after %.1f ms (%s the bound); %s" % (
                detected / 1e3, "within" if detected <= promised_us else "**over**", note)
    return Cell(app, fault, MEASURED, promised_us=promised_us, promise_src=src, recovered=recovered,
                log_complete=ok, note=note, actuator=actuator, detected_after_us=detected)


def table(cells, times=True):
    return HEADER + "\n" + "\n".join(c.row(times) for c in cells) + "\n"
