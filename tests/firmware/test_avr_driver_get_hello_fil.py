"""The driver's ``get_hello`` on the real firmware (uno build in simavr, lockstep, simulated time only): the
firmware's answer to GET_HELLO is recognised as an answer, not a reboot, and the IMU integration and sample
times run on across it; a RESET afterwards still counts as a reboot."""
from boards.arduino import protocol as P


def test_get_hello_answer_on_the_firmware_is_not_a_reboot(fil_built):
    from harness.sim.avr_bridge import FilRig
    rig = FilRig("uno", seed=1)
    imu = []
    with rig:
        rig.link.on_imu = imu.append
        rig.run_for(60000)
        assert rig.link.boots == 1 and rig.link.telemetry_frames > 2
        gaps, offset = rig.link.imu_gaps, rig.link._offset_us
        assert rig.link.get_hello(rig.t_us) is not None
        assert rig.run_until(lambda r: r.link.hello_replies == 1, 100000)
        n = len(imu)
        rig.run_for(30000)
        assert rig.link.boots == 1 and rig.link.imu_gaps == gaps and rig.link.rx_seq_gaps == 0
        assert rig.link.hello.version == P.PROTOCOL_VERSION
        assert len(imu) > n and all(b.time_us > a.time_us for a, b in zip(imu, imu[1:]))
        assert rig.link._offset_us <= offset and rig.link._fw_high == 0
        rig.link.reset_board(rig.t_us)                       # a real restart is still one
        assert rig.run_until(lambda r: r.link.boots == 2, 400000)
        assert rig.link.hello_replies == 1


def test_get_hello_answer_on_the_leveler_firmware_brings_imu_id_and_no_reboot(fil_built):
    from harness.sim.fil_leveler_world import LevelerRig
    rig = LevelerRig(seed=1)
    with rig:
        rig.run_for(60000)
        assert rig.link.boots == 1 and rig.link.imu_id is not None
        rig.link.imu_id = None
        assert rig.link.get_hello(rig.t_us) is not None
        assert rig.run_until(lambda r: r.link.hello_replies == 1 and r.link.imu_id is not None, 300000)
        assert rig.link.boots == 1
