# Types for onboard/comms/uwb/driver.py compiled as cython_ext.uwb.driver (the .py is the source).
cimport cython
from cython_ext.uwb.node_base cimport NodeBase

cdef class UwbDriver:
    cdef public NodeBase node
    cdef public object radio
    cpdef tuple on_event(self, event, now_us)
    cpdef tuple on_rx(self, data, raw_rx_ticks, now_us)
    @cython.locals(a=tuple, samples=list)
    cpdef list _execute(self, list acts)
