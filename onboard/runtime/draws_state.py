"""A part that makes an app's random draws an input of its recording (pure; runs on MicroPython).

:class:`DrawsState`: io group ``random_state`` at the rate of the part that draws (so it runs before that
part in the same tick), while the node records: the state of the draws (``draws.get_state()``, when the
draws have it) through the entry point ``random_state`` (``onboard.core.samples.RandomState``, the state as
JSON), whose handler sets it (``draws.set_state``; live it is the state they are in). Recorded, a replayed
app draws the same numbers as the app did, whoever else drew from the same generator in between (the swarm's
members share one). Used by the swarm member (``onboard.swarm.member``), the hill leveler
(``onboard.leveling.hill_app``) and the AVR leveler's host app (``boards.arduino.leveler_app``).
"""
import json

from onboard.core.samples import RandomState


class DrawsState:
    """Part: io group ``random_state`` at ``rate_hz`` - while the node records, the state of ``draws`` at the
    start of each tick of that rate through the entry point ``random_state`` (see the module docstring).
    Draws without ``get_state``/``set_state`` are not recorded (a replay of such an app may draw other
    numbers)."""

    def __init__(self, draws, rate_hz):
        self.draws = draws
        self.rate_hz = rate_hz
        self.states_recorded = 0
        self.states_set = 0
        self._node = None

    def attach(self, node):
        self._node = node
        node.every("random_state", self.rate_hz, self._poll, io=True)
        self.entry = node.entry("random_state", self._set)

    def _poll(self, now_us):
        get_state = getattr(self.draws, "get_state", None)
        if get_state is None or not self._node.recording:
            return
        self.states_recorded += 1
        self.entry(RandomState(now_us, _dumps(get_state())))

    def _set(self, sample):
        set_state = getattr(self.draws, "set_state", None)
        if set_state is not None:
            set_state(json.loads(sample.state_json))
            self.states_set += 1

    def report(self):
        return {"states_recorded": self.states_recorded, "states_set": self.states_set}


def _dumps(state):
    """``state`` as JSON, keys sorted where the interpreter can (the same bytes for the same state in CPython;
    MicroPython's ``json.dumps`` takes no ``sort_keys``, and the order does not change what is read back)."""
    try:
        return json.dumps(state, sort_keys=True)
    except TypeError:
        return json.dumps(state)
