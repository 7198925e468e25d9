# Types for onboard/comms/uwb/driver.py compiled as cython_ext.uwb.driver (the .py is the source).
from cython_ext.uwb.node_base cimport NodeBase

cdef class UwbDriver:
    cdef public NodeBase node
    cdef public object radio
    cpdef tuple on_event(self, event, now_us)
    cpdef list _execute(self, acts)
