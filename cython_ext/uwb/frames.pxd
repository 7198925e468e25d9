# Types for onboard/comms/uwb/frames.py compiled as cython_ext.uwb.frames (the .py is the source).
cimport cython

cdef long long _TS_MAX, _MAX_ID, _VERSION_BITS, _VEL_MAX_MMPS
cdef double _INF

cdef class Frame:
    cdef public object type, src, dst, seq, epoch, vel_mps
    cdef public object ts, pass_no, members, invite_first, invite_count, join_slot_us, tx_prev, _entries, _index
    # the entries' bytes read as C integers (a byte is 0..255, a timestamp 40 bits: exact in long long)
    @cython.locals(off=cython.Py_ssize_t)
    cpdef entry_for(self, node_id)
    @cython.locals(e=bytes, idx=bytearray, off=cython.Py_ssize_t, end=cython.Py_ssize_t, i=cython.Py_ssize_t,
                   k=cython.Py_ssize_t)
    cpdef Py_ssize_t entry_offset(self, node_id) except? -2
    @cython.locals(e=bytes)
    cpdef int entry_seq_at(self, Py_ssize_t off) except? -1
    @cython.locals(e=bytes, ts=cython.longlong)
    cpdef long long entry_ts_at(self, Py_ssize_t off) except? -1
    @cython.locals(out=bytearray, off=cython.Py_ssize_t, step=cython.Py_ssize_t)
    cpdef set_entries(self, entries)
    @cython.locals(n=cython.Py_ssize_t)
    cpdef set_entry_bytes(self, data)
    # the velocity in C integers (int16 after the clamp) and doubles (mm * 0.001: the same double as decode's)
    @cython.locals(out=bytearray, g=Frame, vx=cython.longlong, vy=cython.longlong, n=cython.Py_ssize_t,
                   c=cython.long, e=bytes, tss=list, plen=cython.Py_ssize_t, k=cython.Py_ssize_t)
    cpdef bytes encode(self)

# exact double operations and C integers (|x| < 32767.5 before the conversion)
@cython.locals(v=cython.double, x=cython.double, mm=cython.longlong, frac=cython.double)
cpdef long long _vel_mmps(v_mps) except? -1
# C integers (a 40-bit timestamp, bytes 0..255) written by index into the caller's bytearray; pack_entry takes
# Python objects and converts them (calling _pack_int_entry) only once checked to be integers in range (no float
# truncation); _pack_int_entry's callers pass integers (the broadcast node: C integers, cimported, a C call)
cpdef pack_entry(bytearray out, Py_ssize_t off, node_id, seq, rx_ts)
cpdef _pack_int_entry(bytearray out, Py_ssize_t off, long long node_id, long long seq, long long rx_ts)
# (their callers pass values checked to be integers in range: encode, _pack_int_entry)
cpdef _put_ts(bytearray out, Py_ssize_t off, long long ts)
cpdef _put_header(bytearray out, long long t, long long src, long long dst, long long seq, long long epoch,
                  long long vx, long long vy)
cpdef _checked_ts(ts)
