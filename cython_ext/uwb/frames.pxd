# Types for onboard/comms/uwb/frames.py compiled as cython_ext.uwb.frames (the .py is the source).
cimport cython

cdef class Frame:
    cdef public object type, src, dst, seq, epoch, vel_mps
    cdef public object ts, pass_no, members, invite_first, invite_count, join_slot_us, tx_prev, _entries, _index
    # the entries' bytes read as C integers (a byte is 0..255, a timestamp 40 bits: exact in long long)
    @cython.locals(e=bytes, idx=dict, off=cython.Py_ssize_t, end=cython.Py_ssize_t, step=cython.Py_ssize_t,
                   i=cython.int, ts=cython.longlong)
    cpdef entry_for(self, node_id)
    @cython.locals(out=bytearray, off=cython.Py_ssize_t, step=cython.Py_ssize_t, ts=cython.longlong)
    cpdef set_entries(self, entries)
    cpdef bytes encode(self)

cpdef _vel_mmps(v_mps)
cpdef bytes _ts_bytes(ts)
