"""LOG_START with period 0 is the firmware's single-shot run (crazyflie-firmware log.c ``logStartBlock``:
``period > 0`` starts the block's timer, else ``workerSchedule(logRunBlock, ...)`` sends the block once),
answered 0; a running block keeps its period."""
from harness.sim.crazyflie import crtp
from harness.sim.crazyflie.sim_drone import SimCrazyflie

CLIENT = ("127.0.0.1", 40000)


def _settings(drone, body, now_us=0):
    return drone.handle(crtp.packet(crtp.PORT_LOG, crtp.LOG_CH_SETTINGS, bytes(body)), now_us, CLIENT)


def _data_packets(out, block_id):
    return [dg for _c, dg in out if dg[0] == crtp.header(crtp.PORT_LOG, crtp.LOG_CH_DATA) and dg[1] == block_id]


def test_start_with_period_zero_sends_the_block_once():
    d = SimCrazyflie()
    assert _settings(d, (crtp.LOG_CREATE, 4, 0x07, 0)) == [crtp.packet(crtp.PORT_LOG, 1, bytes((0, 4, 0)))]
    assert _settings(d, (crtp.LOG_START, 4, 0), 20000) == [crtp.packet(crtp.PORT_LOG, 1, bytes((3, 4, 0)))]
    out = d.advance(30000)
    assert len(_data_packets(out, 4)) == 1
    assert len(_data_packets(d.advance(200000), 4)) == 0          # once, not periodic
    assert d.stats["malformed"] == 0


def test_single_shot_of_a_running_block_keeps_its_period():
    d = SimCrazyflie()
    _settings(d, (crtp.LOG_CREATE, 2, 0x07, 0))
    _settings(d, (crtp.LOG_START, 2, 10))                          # every 100 ms
    _settings(d, (crtp.LOG_START, 2, 0), 0)                        # one extra packet now
    sent = []
    for k in range(1, 101):                                        # 1 s in 10 ms advances
        sent += _data_packets(d.advance(k * 10000), 2)
    assert len(sent) == 11                                         # 10 periodic + 1 single shot
