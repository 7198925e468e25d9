"""Lockstep between a SimClock-driven fleet and cflib clients that run their own threads.

cflib talks to the simulated drones over real UDP sockets from its own threads, so a
scenario that wants reproducible runs must not let simulated time run ahead of packets
still in flight. ``Lockstep.advance(dt_us)`` does three things, each a bounded wait:

1. uplink barrier: every packet each client has sent so far has been served by its drone
   (``drone.session_received_packets() >= client.packets_sent``: what the drone received from the
   clients whose session is open, see 3.);
2. ``clock.advance(dt_us)``: physics steps and log packets that fall due (SimClock events); the
   fleet's server holds the log packets during the advance and sends them together at its end
   (``SimCrazyflieServer.hold_sends``: the client threads wake once the caller is about to wait);
3. downlink barrier: each client has received every log packet its drone sent to the clients whose
   log session is open (``client.wait_log_count(drone.session_log_packets())``: a client that reconnected
   from a new address reset the log, which drops the old address's session), skipped for silent drones.

``Lockstep(..., serve_in_caller=True)`` has the caller's thread answer the uplink itself in step 1
(``SimCrazyflieServer.serve_in_caller``): the requests are the same, answered in the same order at the
same simulated time, without waking the server thread for each one. Use it where one thread drives the
lockstep and nothing else waits for an answer between advances (cflib's link-statistics pings then wait
in the socket until the next advance); ``fleet.release_links()`` gives the serving back to the server
thread for closing.

Make the Lockstep once its clients are connected (cflib's connect resets the log, which closes the
sessions of a drone's earlier clients). A client is anything with ``packets_sent`` and
``wait_log_count(n, timeout_s)``, e.g.
``boards.crazyflie.driver.CrazyflieDriver`` or ``CflibCounter`` below around a bare
cflib ``Crazyflie``. A barrier that times out raises ``LockstepTimeout`` (a packet was
lost or a client hung) rather than silently letting the run diverge.
"""
import threading


class LockstepTimeout(RuntimeError):
    pass


class CflibCounter:
    """Counts what a bare cflib ``Crazyflie`` sends and the log packets it receives. Attach it before the link
    opens: the lockstep compares its count with every packet the drone received, so packets sent before it
    (connecting, TOC) would let the uplink barrier pass without waiting."""

    LOG_PORT = 5
    LOG_DATA_CHANNEL = 2

    def __init__(self, cf):
        self.packets_sent = 0
        self.log_packets_received = 0
        self._cond = threading.Condition()
        cf.packet_sent.add_callback(self._sent)
        cf.packet_received.add_callback(self._received)

    def _sent(self, _pk):
        self.packets_sent += 1

    def _received(self, pk):
        if pk.port == self.LOG_PORT and pk.channel == self.LOG_DATA_CHANNEL:
            with self._cond:
                self.log_packets_received += 1
                self._cond.notify_all()

    def wait_log_count(self, count, timeout_s):
        with self._cond:
            return self._cond.wait_for(lambda: self.log_packets_received >= count, timeout_s)


class Lockstep:
    def __init__(self, clock, fleet, clients, timeout_s=2.0, serve_in_caller=False):
        if len(clients) > len(fleet.drones):
            raise ValueError("%d clients for %d drones" % (len(clients), len(fleet.drones)))
        self.clock = clock
        self.fleet = fleet
        self.clients = list(clients)
        self.timeout_s = timeout_s
        self.steps = 0
        if serve_in_caller:
            fleet.server.serve_in_caller(True)

    def sync_uplink(self):
        pairs = list(zip(self.fleet.drones, self.clients))
        ok = self.fleet.wait_until(
            lambda: all(d.session_received_packets() >= c.packets_sent for d, c in pairs), self.timeout_s)
        if not ok:
            lag = [(d.name, c.packets_sent - d.session_received_packets()) for d, c in pairs]
            raise LockstepTimeout("uplink packets not served within %.1f s: %s" % (self.timeout_s, lag))

    def sync_downlink(self):
        for d, c in zip(self.fleet.drones, self.clients):
            if d.silent:
                continue
            sent = d.session_log_packets()
            if not c.wait_log_count(sent, self.timeout_s):
                raise LockstepTimeout("%s: log packets not received within %.1f s (%d sent)"
                                      % (d.name, self.timeout_s, sent))

    def advance(self, dt_us):
        self.sync_uplink()
        server = self.fleet.server
        server.hold_sends()
        try:
            self.clock.advance(dt_us)
        finally:
            server.send_held()
        self.sync_downlink()
        self.steps += 1
        return self.clock.now_us()
