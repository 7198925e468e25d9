"""UDP server for simulated Crazyflies: one loopback UDP port per drone, one thread for all.

The server thread answers every request as soon as it arrives (cflib's UDP driver does
not resend and ``SyncCrazyflie.open_link`` waits without a timeout, so nothing may go
unanswered). Where simulated time comes from is explicit:

* ``realtime=True`` (the ``python -m harness crazyflies`` command, cflib scripts): time is
  the host's monotonic clock (``onboard.runtime.clock.MonotonicClock``); the thread also
  advances the physics and sends the log packets as they fall due.
* ``realtime=False`` with ``attach(sim_clock)`` (scenarios, lockstep tests): time is the
  SimClock's ``now_us``; a SimClock event every ``tick_us`` advances the physics and sends
  the due log packets, so the world moves only when the scenario advances the clock. The
  thread still answers requests at once, stamping them with the SimClock's current time.
  ``wait_until(predicate, timeout_s)`` lets a scenario wait (bounded) for packets in
  flight, which keeps the lockstep deterministic even though cflib runs its own threads.
  ``serve_in_caller(True)`` (lockstep only) hands the serving to the thread that waits: the server
  thread stops watching the drones' sockets, and ``wait_until`` (or ``serve_pending``) reads and
  answers what is queued on them in the caller's thread. Requests are answered in the order they
  arrived, at the SimClock's current time, as the server thread would; what cflib's own threads
  send meanwhile (link-statistics pings) waits in the socket until the caller next serves.

Sockets are bound to a loopback address only; anything else is refused.
"""
import ipaddress
import os
import select
import socket
import threading
import time

from harness.sim.clock import PRIORITY_PHYSICS
from harness.sim.crazyflie import crtp
from onboard.core.settings import ConfigError

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
RECV_BYTES = 64            # a CRTP datagram is at most 31 bytes; longer ones are malformed
MAX_IDLE_US = 20000        # realtime mode: advance the physics at least this often
LINGER_PERIOD_S = 0.01     # release_links(): a null packet to every client this often
MAX_CLIENTS = 4            # per drone, the client addresses release_links() keeps answering
MAX_UDP_PORT = 65535
CALLER_WAIT_S = 0.05       # serve_in_caller(): longest single wait on the sockets between checks


class SimServerError(RuntimeError):
    pass


class SimServerSettingError(SimServerError, ConfigError):
    """A host that is not a loopback address, or ports outside 0..65535: bad input (a ValueError)."""


def _check_loopback(host):
    if host == "localhost":
        return "127.0.0.1"
    try:
        if ipaddress.ip_address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise SimServerSettingError("simulated Crazyflies bind to loopback only, not %r" % (host,))


class SimCrazyflieServer:
    """Serves ``drones`` (SimCrazyflie objects) on consecutive or ephemeral loopback ports."""

    def __init__(self, drones, host="127.0.0.1", base_port=0, realtime=True, clock=None):
        self.drones = list(drones)
        self.host = _check_loopback(host)
        self.base_port = int(base_port)
        last_port = self.base_port + max(0, len(self.drones) - 1)
        if self.base_port < 0 or last_port > MAX_UDP_PORT:
            raise SimServerSettingError("ports %d..%d (base port + one per drone) must lie in 0..%d (base port 0 picks "
                                 "free ones)" % (self.base_port, last_port, MAX_UDP_PORT))
        self.realtime = bool(realtime)
        if clock is None:
            from onboard.runtime.clock import MonotonicClock
            clock = MonotonicClock()
        self.clock = clock
        self._socks = []
        self.ports = []
        self._thread = None
        self._stop = threading.Event()
        self._wake_r, self._wake_w = None, None
        self._cond = threading.Condition()
        self.errors = 0
        self.last_error = None
        self.started = False
        self._clients = {}         # socket index -> {client address: None}, the last MAX_CLIENTS new clients
        self._linger = False
        self._held = None          # hold_sends(): [(socket index, [(client, datagram), ...]), ...] not sent yet
        self._caller_serves = False  # serve_in_caller(): the waiting thread reads the sockets, not _run
        self._serve_lock = threading.Lock()   # one reader of the sockets at a time: requests keep their order

    # ---------------------------------------------------------------- life cycle
    @property
    def uris(self):
        return ["udp://%s:%d" % (self.host, p) for p in self.ports]

    def start(self):
        """Bind the ports and start the server thread; a started server is left as it is."""
        if self.started:
            return self
        self.ports = []
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        try:
            for i, _drone in enumerate(self.drones):
                s = socket.socket(family, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
                port = self.base_port + i if self.base_port else 0
                try:
                    s.bind((self.host, port))
                except OSError as exc:
                    s.close()
                    raise SimServerError("cannot bind %s:%d for %s: %s"
                                         % (self.host, port, self.drones[i].name, exc))
                s.setblocking(False)
                self._socks.append(s)
                self.ports.append(s.getsockname()[1])
        except SimServerError:
            self.close()
            raise
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="sim-crazyflie-server", daemon=True)
        self._thread.start()
        self.started = True
        return self

    def release_links(self):
        """Clients are about to close their links: until :meth:`close`, send a null packet to every
        client every ``LINGER_PERIOD_S`` of host time, whatever the clock.

        cflib's UDP driver closes by joining a receive thread that blocks up to 1 s in ``recv``;
        a real Crazyflie's radio link never goes quiet (every packet is acknowledged, cflib polls
        with null packets), but a lockstep server only sends when the SimClock advances. Null
        packets are what a Crazyflie answers a null probe with and cflib drops them."""
        self._linger = True
        self._caller_serves = False
        self._wake()

    def _wake(self):
        if self._wake_w is not None:
            try:
                os.write(self._wake_w, b"x")
            except OSError:
                pass

    def close(self, timeout_s=2.0):
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        for s in self._socks:
            s.close()
        self._socks = []
        for fd in (self._wake_r, self._wake_w):
            if fd is not None:
                os.close(fd)
        self._wake_r = self._wake_w = None
        self.started = False
        self._linger = False

    def __enter__(self):
        if not self.started:
            self.start()
        return self

    def __exit__(self, *exc):
        self.close()

    # ---------------------------------------------------------------- lockstep
    def attach(self, sim_clock, tick_us=10000):
        """Lockstep: advance physics and send logs on ``sim_clock`` every ``tick_us``."""
        if self.realtime:
            raise SimServerError("attach() is for realtime=False servers")
        self.clock = sim_clock
        sim_clock.call_every(int(tick_us), self.tick, priority=PRIORITY_PHYSICS)

    def tick(self, now_us):
        """Advance every drone to ``now_us`` and send its due log packets (or hold them, see hold_sends)."""
        held = self._held
        for i, drone in enumerate(self.drones):
            out = drone.advance(now_us)
            if out:                      # most ticks send no log packet
                if held is not None:
                    held.append((i, out))
                else:
                    self._send_all(i, out)

    def hold_sends(self):
        """Lockstep: keep the log packets that ``tick`` makes until :meth:`send_held`.

        Each datagram wakes a client's receive thread, which then waits for the interpreter lock while
        the caller goes on integrating; sent together at the end of a clock advance, they wake the
        clients once the caller is about to wait for them. Contents, per-drone order and the clients'
        view at the end of the advance are the same as with immediate sends."""
        if self._held is None:
            self._held = []

    def send_held(self):
        """Send what was held since :meth:`hold_sends` (in the order it was made) and stop holding."""
        held, self._held = self._held, None
        for i, out in held or ():
            self._send_all(i, out)

    def serve_in_caller(self, on=True):
        """Lockstep: ``on`` makes the threads that call :meth:`wait_until` / :meth:`serve_pending` read and
        answer the drones' sockets, and the server thread leave them alone (one thread wake-up less per
        request); off (and :meth:`release_links`) gives them back to the server thread."""
        if on and self.realtime:
            raise SimServerError("serve_in_caller() is for realtime=False servers")
        self._caller_serves = bool(on)
        self._wake()

    def serve_pending(self):
        """Read and answer every request queued on the drones' sockets now, in this thread; the count."""
        served = 0
        with self._serve_lock:
            for index in range(len(self._socks)):
                served += self._serve(index)
        if served:
            self.notify()
        return served

    def wait_until(self, predicate, timeout_s=2.0):
        """Wait (bounded) until ``predicate()`` holds; re-checked after every packet served (with
        :meth:`serve_in_caller`: served here, waiting on the sockets between checks)."""
        if not self._caller_serves:
            with self._cond:
                return self._cond.wait_for(predicate, timeout_s)
        deadline = None
        while True:
            self.serve_pending()
            if predicate():
                return True
            if deadline is None:
                deadline = time.monotonic() + timeout_s
            left = deadline - time.monotonic()
            if left <= 0.0:
                return False
            try:
                select.select(list(self._socks), [], [], min(left, CALLER_WAIT_S))
            except (OSError, ValueError):
                return predicate()

    def notify(self):
        with self._cond:
            self._cond.notify_all()

    # ---------------------------------------------------------------- thread
    def _send_all(self, index, out):
        sock = self._socks[index] if index < len(self._socks) else None
        if sock is None:
            return
        for client, datagram in out:
            try:
                sock.sendto(datagram, client)
            except (OSError, TypeError) as exc:
                self.errors += 1
                self.last_error = "send to %r: %s" % (client, exc)

    def _serve(self, index):
        sock = self._socks[index]
        drone = self.drones[index]
        served = 0
        while True:
            try:
                data, addr = sock.recvfrom(RECV_BYTES)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self.errors += 1
                self.last_error = "recv: %s" % exc
                break
            now_us = self.clock.now_us()
            if self.realtime:
                # keep the physics current before a setpoint lands
                self._send_all(index, drone.advance(now_us))
            clients = self._clients.setdefault(index, {})
            if addr not in clients:
                clients[addr] = None
                if len(clients) > MAX_CLIENTS:
                    del clients[next(iter(clients))]
            replies = drone.handle(data, now_us, addr)
            for r in replies:
                try:
                    sock.sendto(r, addr)
                except OSError as exc:
                    self.errors += 1
                    self.last_error = "reply to %r: %s" % (addr, exc)
            served += 1
        return served

    def _run(self):
        fds = {s.fileno(): i for i, s in enumerate(self._socks)}
        rlist_all = list(self._socks) + [self._wake_r]
        while not self._stop.is_set():
            rlist = [self._wake_r] if self._caller_serves else rlist_all
            timeout = None
            if self.realtime:
                now = self.clock.now_us()
                wake = now + MAX_IDLE_US
                for d in self.drones:
                    due = d.next_log_due_us()
                    if due is not None and due < wake:
                        wake = due
                timeout = max(0.0, (wake - now) * 1e-6)
            if self._linger:
                timeout = LINGER_PERIOD_S if timeout is None else min(timeout, LINGER_PERIOD_S)
            try:
                ready, _w, _x = select.select(rlist, [], [], timeout)
            except (OSError, ValueError):
                if self._stop.is_set():
                    break
                raise
            served = 0
            for r in ready:
                if r is self._wake_r:
                    try:
                        os.read(self._wake_r, 64)
                    except OSError:
                        pass
                    continue
                if self._caller_serves:
                    continue             # serve_in_caller(): left to the waiting thread
                with self._serve_lock:
                    served += self._serve(fds[r.fileno()])
            if self.realtime:
                now = self.clock.now_us()
                for i, d in enumerate(self.drones):
                    self._send_all(i, d.advance(now))
            if self._linger:
                for i, clients in self._clients.items():
                    self._send_all(i, [(addr, crtp.NULL_PACKET) for addr in clients])
            if served:
                self.notify()
