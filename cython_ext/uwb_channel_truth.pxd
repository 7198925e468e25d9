# Types for harness/sim/radio/uwb_channel_truth.py compiled as cython_ext.uwb_channel_truth (the .py is the
# source). Doubles where the source computes with Python floats; Cython's default (Python) semantics for % on
# doubles: the sign of the divisor, a zero result +0.0 for the positive period, as Python's float modulo.
cimport cython

cdef object _hypot

cdef class BouncingMotion:
    cdef public list _start, _vels
    cdef public bint _fresh_vels
    cdef public double _area_m, _period_m
    cdef public object _last_us, _pos_us
    cdef public dict _last
    cdef public Py_ssize_t _n
    # start positions and velocities, and the positions at _pos_us (the channel reads _x, _y, _k in C)
    cdef double[::1] _p0x, _p0y, _v0x, _v0y, _x, _y
    cdef int[::1] _k
    @cython.locals(t=cython.double, period=cython.double, area=cython.double, x=cython.double, y=cython.double,
                   k=cython.int, i=cython.Py_ssize_t)
    cpdef positions_at(self, now_us)
    @cython.locals(i=cython.Py_ssize_t, out=dict, vels=list, fresh=cython.bint)
    cpdef dict state(self, now_us)
    @cython.locals(period=cython.double, area=cython.double, x=cython.double, y=cython.double, k=cython.int)
    cdef (double, double, int) _fold(self, Py_ssize_t i, double t)
    @cython.locals(x=cython.double, y=cython.double, k=cython.int, j=cython.Py_ssize_t)
    cpdef node_state(self, i, now_us)
    @cython.locals(t=cython.double, ax=cython.double, ay=cython.double, bx=cython.double, by=cython.double,
                   ka=cython.int, kb=cython.int)
    cpdef range_m(self, Py_ssize_t a, Py_ssize_t b, now_us)

cdef class RangeTruth:
    cdef public BouncingMotion motion
    cdef public Py_ssize_t n
    cdef public object from_us, last_true_m
    cdef public list counts, errors
    @cython.locals(peer=cython.Py_ssize_t, k=cython.Py_ssize_t)
    cpdef score(self, Py_ssize_t node_id, sample, true_us)
