"""The fault matrix: every (app, fault) cell run on the app's simulated hardware, written to docs/results/faults.md.

Each row test runs its app's cells (tests/faults/*_rig.py, :func:`matrix.run_cell`; for an app that
commands nothing, the soil loader, :func:`matrix.run_input_cell`: its failsafe's detection time against the
bound) and fails when a cell shows the robot moving after the fault or stopping later than its promised
bound, unless the cell
is a listed finding (``FINDINGS``; then it fails once the finding is gone, so the list and the document
are brought up to date). It also compares its rows with the committed docs/results/faults.md, measured
times masked: the verdicts (motors off, within bound, recovered, log complete) and the cells' status
must match, so the document cannot go stale. The times are written but not compared: they came out
the same in repeated runs, but the AVR row crosses a pty to a simavr process and the Pi and boat rows
ptys to the simulated VESCs, so a comparison of them would test the machine's scheduling as much as the
app (times in the notes, written ``%.1f ms``, are masked too).

    FAULTS_WRITE=1 .venv/bin/python -m pytest tests/faults -q     # regenerate docs/results/faults.md
"""
import os
import re

import pytest

from tests.faults import matrix as M

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(REPO, "docs", "results", "faults.md")
WRITE = os.environ.get("FAULTS_WRITE") == "1"

PI = "ground robot, Pi + VESCs"
MP = "ground robot, MicroPython board"
AVR = "ground robot, AVR (simavr)"
SWARM = "swarm member (Crazyflie)"
BOAT = "boat (WAM-V)"
LOADER = "soil loader"
APPS = (PI, MP, AVR, SWARM, BOAT, LOADER)

ONE_SHOT = ("power cycle/reboot",)          # an event: driving again after the stop is the recovery

# cells that do not apply, or are not measured yet (why)
NOT_RUN = {
    (SWARM, "port vanishes and returns"): (M.NOT_MEASURED, "the member's Crazyflie driver (cflib radio) and the "
                                           "simulated Crazyflies are not wired into this matrix yet"),
    (SWARM, "power cycle/reboot"): (M.NOT_MEASURED, "as above: needs the simulated Crazyflie's own set-point "
                                    "timeouts"),
    (SWARM, "forged command"): (M.NA, "the member takes no commands: it decides onboard from UWB ranges; its "
                                "link to the Crazyflie is Bitcraze's CRTP radio, not a link of this runtime"),
    (SWARM, "replayed command"): (M.NA, "as for forged commands"),
}
NOT_RUN.update({
    (BOAT, "forged command"): (M.NA, "no command input: the boat follows the plan of its config (app setting "
                               "`plan`, the service's `mission.plan`); no link of this runtime commands it"),
    (BOAT, "replayed command"): (M.NA, "as for forged commands"),
    (LOADER, "link loss"): (M.NA, "the app has no link: its one input is the machine's sensor samples (see "
                            "sensor stale)"),
    (LOADER, "port vanishes and returns"): (M.NA, "the app opens no port: the machine's samples reach its entry "
                                            "point `on_machine` in process"),
    (LOADER, "forged command"): (M.NA, "the app takes no commands"),
    (LOADER, "replayed command"): (M.NA, "as for forged commands"),
})
# an app that commands no actuator: its cells measure the failsafe's detection, recovery and log
COMMANDS_NOTHING = {LOADER: "the app commands nothing (it maps and estimates; the machine's drive and blade "
                            "are the operator's)"}

# known findings: (app, fault) -> what the cell shows; the row test asserts each is still there
FINDINGS = {}
# a sender whose clock jumps ahead: Watchdog.check counts a feed stamped ahead of the node's now_us as fed at
# now_us (a sample cannot have arrived later than the tick that sees it), so silence after it trips in time
FIXED = ("Clock jumps: an input fed with a stamp ahead of the node's clock (the MicroPython P lines, the AVR "
         "host's pose input, the swarm member's ranges) counts as fed at the node's `now_us` "
         "(`onboard.runtime.watchdog.Watchdog.check`); before, a 5 s jump kept the robot moving ~5.6-6.2 s after "
         "the input was lost. The Pi row stamps inputs on receipt and was not affected.",
         "MicroPython board, sensor stale: an I2C error on the IMU read ended the board app (the motors stopped, "
         "but it stayed stopped until a reset). `BoardIo` now counts a failed read (`imu_errors`, `imu_outages` "
         "in the node's report), reports each outage once on the link (`X,imu read failed: ...`), gives no "
         "sample that tick so the watched IMU input goes stale and the failsafe stops the motors within its "
         "bound, and drives again when the IMU answers (tests/mp_board/test_board_io.py, in MicroPython and "
         "CPython).")
# measured behaviour that is safe but worth knowing (not failures)
NOTES = {
    (BOAT, "port vanishes and returns"): "an outboard whose serial link is gone can only be stopped by its own "
                                         "VESC command timeout (1 s, the firmware default; nothing reaches it); "
                                         "the app stops the other outboard once the lost one's telemetry is stale",
    (LOADER, "power cycle/reboot"): "the loader app keeps its map in memory only: a reboot starts it again from "
                                    "the surface it is given, and the sweeps mapped before are lost",
}


def _avr_cell_status(fault):
    from tests.faults import avr_rig
    if fault in ("forged command", "replayed command") and not avr_rig.signing_landed():
        return M.NOT_MEASURED, "signing in progress (the AVR link is being signed by another change)"
    if fault == "port vanishes and returns":
        return M.NOT_MEASURED, ("the rig cannot take the board's pty away and back while simavr runs "
                                "(AvrBridge.kill ends simavr); host-side detection: "
                                "tests/firmware/test_avr_fil.py::test_vanished_port_is_reported_not_raised")
    return None


def _rig(app, tmp_path):
    if app == PI:
        from tests.faults.pi_rig import PiRig
        return PiRig(tmp_path)
    if app == MP:
        from tests.faults.mp_rig import MpRig
        return MpRig(tmp_path)
    if app == AVR:
        from tests.faults.avr_rig import AvrRig
        return AvrRig(tmp_path)
    if app == SWARM:
        from tests.faults.swarm_rig import SwarmRig
        return SwarmRig(tmp_path)
    if app == BOAT:
        from tests.faults.boat_rig import BoatRig
        return BoatRig(tmp_path)
    if app == LOADER:
        from tests.faults.loader_rig import LoaderRig
        return LoaderRig(tmp_path)
    raise KeyError(app)


CLOCK_JUMP_US = 5000000          # the rigs' jump (tests/faults/*_rig.py CLOCK_JUMP_US)


def _observe_us(rig, fault):
    """How long a fault is watched: the default (twice the bound + 0.5 s), plus the jump for a clock jump
    (long enough to see where the robot stops when the jump holds its watchdog off)."""
    if fault == "clock jump":
        return 2 * rig.bound_us(fault)[0] + 500000 + CLOCK_JUMP_US
    return None


_ROWS = {}


def row_cells(app, tmp_path_factory):
    """The app's cells, each run on a fresh rig (cached for the module)."""
    if app in _ROWS:
        return _ROWS[app]
    cells = []
    for fault in M.FAULTS:
        skip = NOT_RUN.get((app, fault))
        if skip is None and app == AVR:
            skip = _avr_cell_status(fault)
        if skip is not None:
            cells.append(M.Cell(app, fault, skip[0], skip[1]))
            continue
        if app == AVR:
            from harness.sim.avr_bridge import ensure_built
            ensure_built()
        rig = _rig(app, tmp_path_factory.mktemp("fault"))
        try:
            if app in COMMANDS_NOTHING:
                cells.append(M.run_input_cell(app, fault, rig, COMMANDS_NOTHING[app],
                                              observe_us=_observe_us(rig, fault)))
            else:
                cells.append(M.run_cell(app, fault, rig, observe_us=_observe_us(rig, fault),
                                        one_shot=fault in ONE_SHOT))
        finally:
            rig.close()
    _ROWS[app] = cells
    return cells


# ------------------------------------------------------------------ the document
def document(rows):
    cells = [c for app in APPS for c in rows[app]]
    out = ["# Fault matrix", "",
           "Generated by `tests/faults/test_fault_matrix.py` (do not edit by hand). Regenerate:", "",
           "    FAULTS_WRITE=1 .venv/bin/python -m pytest tests/faults -q", "",
           "Check (the normal suite does this; the AVR row and the whole-document check are marked `fil`):", "",
           "    .venv/bin/python -m pytest tests/faults -q", "",
           "The check fails when a cell shows the robot moving after a fault or stopping later than its "
           "promised bound (unless it is listed under Findings, and then it fails once the finding is gone), "
           "or when this file differs from what was measured in anything but the measured times (the AVR "
           "row crosses a pty to simavr, the Pi and boat rows ptys to the simulated VESCs; the times are "
           "deterministic in lockstep, but they are written, not compared).", "",
           "Every measured cell runs the app on its simulated hardware in lockstep (simulated time, seeded, "
           "no sleeps): 1 s of normal driving (the robot must be moving, else the cell errors), the fault, "
           "observation until twice the promised bound + 0.5 s (+ 5 s for a clock jump), then the fault "
           "cleared and 1 s to drive again. *Motors off after* is the simulated time from the fault to the "
           "first instant the actuator is no longer driven, read at the simulated hardware: the VESCs' "
           "mode and set-point (Pi), the PWM duty registers (MicroPython board), the PWM compare registers "
           "the firmware writes (AVR), the velocity set-point sent to the Crazyflie (swarm member: hover is "
           "its stop), the outboard VESCs' mode and set-point (boat: released by SetCurrent 0 or by their own "
           "command timeout). *Motors off* is **NO** when they were never off or were driven again while the "
           "fault lasted. *Log complete*: the app's own recording (`Node.record`) holds a `/app/step` per tick "
           "run, every accepted aiding sample and an output per drive command or stop, in every boot. The soil "
           "loader's app commands no actuator (it maps and estimates from the machine's samples; the operator "
           "drives): its cells say so, measure the time from the fault to its failsafe engaging (the stale "
           "input detected) against the promised bound, in the notes, and count what it refused; *state "
           "recovered* there means it takes samples and maps again.", "",
           "Faults, as injected: **link loss** the command/aiding link goes silent (Pi: UDP pose; MicroPython: "
           "signed P lines; AVR: host->firmware wheel commands; swarm: UWB ranges; boat: the GNSS receiver's "
           "NMEA stream, its aiding link). **sensor stale** the IMU stops answering (I2C errors; AVR: the "
           "MPU-6050 removed from the firmware's bus; swarm: own velocity samples stop; boat: the heading and "
           "yaw-rate samples stop; loader: the machine's samples stop). **NaN/garbage input** the link's "
           "frames become NaN values or bytes that are not frames (validly signed where the link is signed, so "
           "the decoder is what refuses them; boat: NMEA sentences with a wrong checksum, bytes that are no "
           "sentence, a NaN latitude under a correct checksum; loader: machine samples with a NaN force, an "
           "infinite speed, a NaN lift pressure). "
           "**port vanishes and returns** Pi: the left VESC's USB serial unplugged and plugged back; "
           "MicroPython: the board's USB serial goes silent and returns; boat: the left outboard VESC's serial "
           "link unplugged and plugged back. **power cycle/reboot** Pi: the Pi "
           "dies (ports and socket closed, nothing sent) and boots again with its persisted counter mark; "
           "MicroPython: power cut and boot (key and mark from flash files); AVR: watchdog reset of the "
           "firmware (the host keeps sending); Pi and MicroPython: the last 10 genuine pre-reboot frames are "
           "replayed to the new boot; boat: the boat computer dies (ports closed, nothing sent; the VESCs stop "
           "on their own timeout) and a new app boots on the same simulated hardware; loader: the app stops "
           "and a new one boots. **forged command** frames signed with a wrong key. **replayed command** "
           "the last 10 genuine frames sent again, in a loop. "
           "**clock jump** the clock that stamps the input (the sender's / the pose source's; boat: the UTC "
           "of the GNSS sentences; loader: the machine samples' stamps) steps 5 s "
           "ahead of the app's node, and one input period later that input is lost: the bound is the "
           "link-loss bound + that period.", "",
           M.table(cells)]
    na = [c for c in cells if c.status != M.MEASURED]
    out.append("## Not measured / not applicable (%d cells)" % len(na))
    out.append("")
    for c in na:
        out.append("- %s / %s: %s: %s" % (c.app, c.fault, c.status, c.reason))
    out.append("")
    out.append("## Findings (cells over their bound; the test lists them and fails once they are fixed)")
    out.append("")
    for (app, fault), text in sorted(FINDINGS.items()):
        out.append("- %s / %s: %s" % (app, fault, text))
    out.append("")
    for text in FIXED:
        out.append(text)
        out.append("")
    out.append("## Notes")
    out.append("")
    for (app, fault), text in sorted(NOTES.items()):
        out.append("- %s / %s: %s" % (app, fault, text))
    out.append("")
    return "\n".join(out)


def _committed_rows(app):
    if not os.path.exists(DOC):
        return None
    with open(DOC) as fh:
        lines = [ln for ln in fh.read().splitlines() if ln.startswith("| %s |" % app)]
    return [_mask(ln) for ln in lines]


def _mask(row):
    """A table row with its measured times masked: column 4, and a time measured in the notes (written
    ``%.1f ms``; the promised bounds are whole ms)."""
    cols = row.split(" | ")
    if row.startswith("| ") and len(cols) > 3 and (cols[3].endswith(" ms") or cols[3] == "never"):
        cols[3] = "(time)"
    return re.sub(r"\d+\.\d ms", "(time)", " | ".join(cols))


@pytest.mark.parametrize("app", [PI, MP, pytest.param(AVR, marks=pytest.mark.fil), SWARM, BOAT, LOADER])
def test_fault_row(app, tmp_path_factory):
    cells = row_cells(app, tmp_path_factory)
    problems = []
    for c in cells:
        fails = c.failures()
        listed = (c.app, c.fault) in FINDINGS
        if fails and not listed:
            problems.append("%s / %s: %s (%s)" % (c.app, c.fault, "; ".join(fails), c.note))
        if listed and not fails:
            problems.append("%s / %s: the listed finding is gone: remove it from FINDINGS and regenerate "
                            "docs/results/faults.md" % (c.app, c.fault))
    assert not problems, "\n".join(problems)
    measured = [c for c in cells if c.status == M.MEASURED]
    assert measured, "a row with nothing measured"
    if not WRITE:
        committed = _committed_rows(app)
        assert committed is not None, "docs/results/faults.md is missing: run with FAULTS_WRITE=1"
        assert committed == [_mask(c.row()) for c in cells], (
            "docs/results/faults.md differs from what was measured (verdicts or cells): regenerate it with "
            "FAULTS_WRITE=1 .venv/bin/python -m pytest tests/faults -q")


@pytest.mark.fil
def test_document(tmp_path_factory):
    """The whole document as generated now (written with FAULTS_WRITE=1), else its every line but the
    measured times equals the committed one."""
    rows = {app: row_cells(app, tmp_path_factory) for app in APPS}
    text = document(rows)
    if WRITE:
        with open(DOC, "w") as fh:
            fh.write(text)
    with open(DOC) as fh:
        committed = fh.read()
    assert [_mask(ln) for ln in committed.splitlines()] == [_mask(ln) for ln in text.splitlines()]
