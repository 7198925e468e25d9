# Types for onboard/comms/uwb/node_base.py compiled as cython_ext.uwb.node_base (the .py is the source).
cimport cython
from cython_ext.uwb.frames cimport Frame

cdef list _memo
cdef object _new
cdef type RangeSample      # RangeSample.__new__(RangeSample): the type's tp_new, no Python-level call
cdef bint _CLASS_NEW

cpdef range_sample(time_us, peer_id, range_m, peer_vel_mps, range_std_m)

cdef class NodeBase:
    cdef public object id, cfg, vel_mps, _range_std_m
    cdef public long long ant               # antenna delay (ticks)
    cdef public dict _stats, decode_error_kinds
    cdef public long long _rx, _ranges      # counters read through the stats property
    cpdef tuple on_event(self, event, now_us)
    cpdef tuple on_rx(self, data, raw_rx_ticks, now_us)
    @cython.locals(m=tuple)
    cpdef Frame _decode(self, data)
    cpdef tuple _sample(self, now_us, peer_id, range_m, Frame frame)
