"""Simulated Crazyflies that the official cflib connects to over UDP (CRTP, protocol version 10).

``SimCrazyflie`` routes CRTP ports to the firmware's services (link, log, param, commander, supervisor,
memory; one module each) around a ``harness.sim.vehicles.drone2d.Drone2D``;
``SimCrazyflieServer`` serves drones on loopback UDP ports; ``SimCrazyflieFleet`` builds N
of them with UWB peer ranging, in realtime or in lockstep with a ``harness.sim.clock.SimClock``.
Imports are lazy so that ``import harness.sim.crazyflie`` stays cheap.
"""


def __getattr__(name):
    if name == "SimCrazyflie":
        from harness.sim.crazyflie.sim_drone import SimCrazyflie
        return SimCrazyflie
    if name == "SimCrazyflieServer":
        from harness.sim.crazyflie.server import SimCrazyflieServer
        return SimCrazyflieServer
    if name == "SimCrazyflieFleet":
        from harness.sim.crazyflie.fleet import SimCrazyflieFleet
        return SimCrazyflieFleet
    raise AttributeError(name)
