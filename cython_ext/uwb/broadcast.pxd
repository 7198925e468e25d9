# Types for onboard/comms/uwb/broadcast.py compiled as cython_ext.uwb.broadcast (the .py is the source).
# 40-bit timestamps and their intervals as C long long (exact: below 2**40); DS-TWR's products only where the
# intervals are below _PRODUCT_SAFE (2**31), otherwise timestamps.ds_twr_tof_ticks on Python integers.
cimport cython
from cython_ext.uwb.frames cimport Frame, _pack_int_entry
from cython_ext.uwb.node_base cimport NodeBase

cdef long long _MASK, _HALF, _NO_TIMESTAMP, _PRODUCT_SAFE
cdef double _METERS_PER_TICK
cdef int _BCAST
cdef Py_ssize_t _ENTRY_LEN

cdef class Neighbour:
    cdef public long long seq, rx_ts, mine_seq, mine_rx_ts    # seq bytes (or -1), 40-bit timestamps
    cdef public object heard_us

cdef class BroadcastNode(NodeBase):
    cdef public bint joined
    cdef public object seq, started_us, tx_deadline_us, listen_deadline_us
    cdef public dict _hist, _nbr, _slot_of
    cdef public Py_ssize_t _own_slot
    cdef public object _active, _join_wait, _join_attempted, _lcg, _slot_us, _timeout_us, _max_entries
    cpdef tuple on_event(self, event, now_us)
    cpdef tuple on_rx(self, data, raw_rx_ticks, now_us)
    cpdef _next_deadline(self)
    cpdef active_ids(self, now_us)
    cpdef _set_active(self, ids)
    cpdef _on_timer(self, now_us, list acts)
    @cython.locals(nbr=dict, entries=bytearray, n_max=cython.Py_ssize_t, off=cython.Py_ssize_t, ids=list, rec=Neighbour,
                   f=Frame)
    cpdef _transmit(self, now_us, list acts)
    # raw_rx a Python object, checked (an integer within 40 bits) before its conversion to raw
    @cython.locals(f=Frame, prev=Neighbour, raw=cython.longlong, rx=cython.longlong, seq=cython.longlong,
                   at=cython.Py_ssize_t, q=cython.longlong, rq=cython.longlong)
    cpdef _on_rx(self, data, raw_rx, now_us, list acts)
    @cython.locals(q0=cython.longlong, rq0=cython.longlong,
                   tq0=cython.longlong, tq=cython.longlong, rp=cython.longlong, tp=cython.longlong,
                   round1=cython.longlong, reply1=cython.longlong, round2=cython.longlong,
                   reply2=cython.longlong, tof=cython.double)
    cpdef _range(self, i, Frame f, Neighbour prev, long long q, long long rq, now_us, list acts)
    @cython.locals(slot=cython.longlong, n=cython.Py_ssize_t, d=cython.longlong, mine=cython.longlong,
                   theirs=cython.longlong, slot_of=dict, ids=list)
    cpdef _schedule_after(self, k, now_us)
