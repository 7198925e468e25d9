# Types for onboard/comms/uwb/broadcast.py compiled as cython_ext.uwb.broadcast (the .py is the source).
cimport cython
from cython_ext.uwb.frames cimport Frame
from cython_ext.uwb.node_base cimport NodeBase

cdef class BroadcastNode(NodeBase):
    cdef public object seq, joined, started_us, tx_deadline_us, listen_deadline_us
    cdef public dict _hist, _nbr, _slot_of
    cdef public object _active, _join_wait, _join_attempted, _lcg
    cpdef tuple on_event(self, event, now_us)
    cpdef _next_deadline(self)
    cpdef active_ids(self, now_us)
    cpdef _set_active(self, ids)
    @cython.locals(f=Frame)
    cpdef _on_rx(self, data, raw_rx, now_us, list acts)
    cpdef _range(self, i, Frame f, prev, mine, now_us, list acts)
    cpdef _schedule_after(self, k, now_us)
