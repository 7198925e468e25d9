# Types for onboard/comms/uwb/frames.py compiled as cython_ext.uwb.frames (the .py is the source).
cdef class Frame:
    cdef public object type, src, dst, seq, epoch, vel_mps
    cdef public object ts, pass_no, members, invite_first, invite_count, join_slot_us, tx_prev, _entries, _index
    cpdef entry_for(self, node_id)
