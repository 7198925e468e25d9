"""The VESC driver (boards/rpi/vesc_motors.py) given CRC-valid GetValues replies that lack fields it needs.

A GetValuesSelective reply carries only the fields of its mask (codec.decode_values leaves the rest None).
The driver never asks for one, but one can arrive (another host's request answered on a shared line, or line
noise that passes the CRC): it must be counted as a bad reply, not raise out of ``poll`` (a TypeError from
``float(None)`` used to stop the whole runtime), and never become a sample with a made-up wheel speed of 0
(a reply without ``rpm_erpm`` used to). The next good reply is taken as usual.
In-memory transport (``loop://`` pair); no pty needed.
"""
from boards.rpi.vesc_motors import VescDiffDrive
from onboard.comms.transport import LoopTransport
from onboard.comms.vesc import codec

BIT = {name: bit for bit, name, _code, _scale in codec.GET_VALUES_LAYOUT}


def _rig():
    host, vesc = LoopTransport.pair()
    motors = [{"name": "left", "link": "uart", "controller_id": 1, "direction": 1},
              {"name": "right", "link": "uart", "can_id": 2, "controller_id": 2, "direction": -1}]
    drv = VescDiffDrive({"uart": lambda: host}, motors)
    return drv, vesc


def _full(controller_id, erpm):
    return codec.VescValues(temp_fet_degc=30.0, temp_motor_degc=31.0, avg_motor_current_a=1.0,
                            avg_input_current_a=0.5, avg_id_a=0.0, avg_iq_a=1.0, duty=0.1, rpm_erpm=erpm,
                            v_in_v=24.0, amp_hours_ah=0.0, amp_hours_charged_ah=0.0, watt_hours_wh=0.0,
                            watt_hours_charged_wh=0.0, tachometer_ticks=10, tachometer_abs_ticks=10, fault_code=0,
                            pid_pos_deg=0.0, controller_id=controller_id, status=0)


def test_selective_replies_missing_fields_are_counted_not_raised_nor_made_up():
    drv, vesc = _rig()
    drv.start(0)
    drv.poll(1000)                                          # GetValues to both motors: replies awaited
    temps_only = (1 << BIT["temp_fet_degc"])
    no_rpm = 0
    for name in codec.GET_VALUES_FIELDS:
        if name != "rpm_erpm":
            no_rpm |= 1 << BIT[name]
    vesc.write(codec.encode_frame(codec.encode_values(_full(1, 3000.0), mask=temps_only)))
    vesc.write(codec.encode_frame(codec.encode_values(_full(1, 3000.0), mask=no_rpm)))
    samples = drv.poll(2000)                                # must not raise
    assert samples == []
    assert drv.bad_replies == 2
    assert drv.motors["left"].telemetry is None and drv.motors["left"].telemetry_count == 0
    vesc.write(codec.encode_frame(codec.encode_values(_full(1, 3000.0))))       # a good reply after them
    samples = drv.poll(3000)
    assert [(s.motor, s.erpm) for s in samples] == [("left", 3000.0)]
    assert drv.bad_replies == 2


def test_a_command_that_reaches_one_side_only_stops_the_other():
    """Left and right on UARTs of their own; the right port vanishes while a wheel command goes out. The left
    VESC had already been told to drive: it must get the safe stop at once, not keep driving one-sided
    (spinning the robot) until the next control tick notices the fault."""
    hl, vl = LoopTransport.pair()
    hr, vr = LoopTransport.pair()
    motors = [{"name": "left", "link": "l", "controller_id": 1, "direction": 1},
              {"name": "right", "link": "r", "controller_id": 2, "direction": -1}]
    drv = VescDiffDrive({"l": lambda: hl, "r": lambda: hr}, motors)
    drv.start(0)
    from onboard.core.samples import WheelCmd
    drv.command(WheelCmd(1000, 5.0, 5.0))
    dec = codec.FrameDecoder()
    assert [codec.decode_command(p)[0] for p in dec.feed(vl.read())] == [codec.COMM_SET_RPM]
    vr.close()                                              # the right adapter is unplugged
    drv.command(WheelCmd(21000, 6.0, 6.0))
    got = [codec.decode_command(p) for p in dec.feed(vl.read())]
    assert got[0][0] == codec.COMM_SET_RPM                  # went out before the right write failed
    assert got[-1] == (codec.COMM_SET_CURRENT_BRAKE, drv.cfg["stop_brake_current_a"]), got
    assert "link_down:r" in drv.faults()
