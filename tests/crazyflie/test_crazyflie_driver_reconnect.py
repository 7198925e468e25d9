"""The runtime's Crazyflie driver connecting again after its link was closed or lost (real cflib, simulated
drones in lockstep), and refusing to while its link is open."""
import logging

import pytest

from boards.crazyflie.board import CrazyflieConfigError
from boards.crazyflie.driver import CLOSED, IDLE, LINK_LOST, CrazyflieDriver, CrazyflieLinkError, CrazyflieSwarm
from harness.sim.clock import SimClock
from harness.sim.crazyflie.fleet import SimCrazyflieFleet
from harness.sim.crazyflie.lockstep import Lockstep

pytestmark = [pytest.mark.fil, pytest.mark.timeout(60)]

CONFIG = {"connect_timeout_s": 5.0, "log_blocks": {
    "state": {"period_ms": 10, "variables": ["stateEstimate.x", "stateEstimate.y", "stateEstimate.z"]}}}


@pytest.fixture
def fleet():
    logging.getLogger("cflib").setLevel(logging.CRITICAL + 1)
    clock = SimClock()
    f = SimCrazyflieFleet(1, clock=clock).start()
    # null packets to the clients from the start: a closing cflib link's receive thread wakes at once
    f.release_links()
    f.test_clock = clock
    drivers = []
    f.test_drivers = drivers
    yield f
    for d in drivers:
        d.close()
    f.close()


def _advance(fleet, drv, ticks):
    step = Lockstep(fleet.test_clock, fleet, [drv])
    for _ in range(ticks):
        step.advance(10000)


def test_a_closed_driver_connects_again_and_the_lockstep_runs_on(fleet):
    drv = CrazyflieDriver(fleet.uris[0], CONFIG)
    fleet.test_drivers.append(drv)
    drv.connect()
    _advance(fleet, drv, 5)
    assert drv.log_packets_received == 5
    drv.close()
    assert drv.state == CLOSED
    drv.connect()
    assert drv.state == IDLE and drv.params_read_back["commander.enHighLevel"] == 1.0
    _advance(fleet, drv, 5)
    assert drv.log_packets_received == 5, "this link's packets"
    assert len(drv.poll(fleet.test_clock.now_us())) == 5


def test_a_lost_link_connects_again_and_an_open_one_refuses(fleet):
    drv = CrazyflieDriver(fleet.uris[0], CONFIG)
    fleet.test_drivers.append(drv)
    drv.connect()
    with pytest.raises(CrazyflieLinkError, match="close"):
        drv.connect()
    with pytest.raises(CrazyflieLinkError, match="close"):
        _SwarmOf(drv).connect()
    assert drv.state == IDLE
    _advance(fleet, drv, 2)
    drv.step(fleet.test_clock.now_us())
    fleet.drones[0].silent = True
    _advance(fleet, drv, 40)
    assert [f.reason for f in drv.step(fleet.test_clock.now_us())] == ["link_lost"] and drv.state == LINK_LOST
    fleet.drones[0].silent = False
    drv.connect()
    assert drv.state == IDLE
    _advance(fleet, drv, 3)
    assert drv.log_packets_received == 3 and drv.step(fleet.test_clock.now_us()) == []


class _SwarmOf(CrazyflieSwarm):
    """A swarm around drivers that exist already."""

    def __init__(self, *drivers):
        self.drivers = list(drivers)


@pytest.mark.parametrize("height", [True, "0.5", float("nan"), float("inf"), -1.0, 0])
def test_take_off_refuses_a_height_that_is_not_a_positive_number(fleet, height):
    drv = CrazyflieDriver(fleet.uris[0], CONFIG)
    fleet.test_drivers.append(drv)
    drv.connect()
    assert drv.take_off(fleet.test_clock.now_us(), height) is False
    assert drv.stats["rejected_commands"] == 1 and drv.state == IDLE and drv.cfg["flight_height_m"] == 0.5


@pytest.mark.parametrize("value", [300, -1])
def test_a_param_value_outside_its_type_is_a_config_error_and_the_link_closes(fleet, value):
    drv = CrazyflieDriver(fleet.uris[0], dict(CONFIG, params={"commander.enHighLevel": 1,
                                                               "stabilizer.estimator": value}))
    fleet.test_drivers.append(drv)
    with pytest.raises(CrazyflieConfigError, match="estimator = %d does not fit the drone's uint8_t" % value):
        drv.connect()
    assert drv.state == CLOSED
