# Types for harness/sim/radio/uwb_channel_truth.py compiled as cython_ext.uwb_channel_truth (the .py is the
# source). Doubles where the source computes with Python floats; Cython's default (Python) semantics for % on
# doubles: the sign of the divisor, a zero result +0.0 for the positive period, as Python's float modulo.
cimport cython

cdef object _hypot

cdef class BouncingMotion:
    cdef public list _start, _vels
    cdef public bint _fresh_vels
    cdef public double _area_m, _period_m
    cdef public object _last_us
    cdef public dict _last
    @cython.locals(t=cython.double, period=cython.double, area=cython.double, px=cython.double,
                   py=cython.double, vx=cython.double, vy=cython.double, x=cython.double, y=cython.double,
                   k=cython.int, i=cython.int, out=dict, vels=list, fresh=cython.bint, st=tuple)
    cpdef dict state(self, now_us)
    @cython.locals(t=cython.double, period=cython.double, area=cython.double, px=cython.double,
                   py=cython.double, vx=cython.double, vy=cython.double, x=cython.double, y=cython.double,
                   k=cython.int)
    cpdef node_state(self, i, now_us)
    @cython.locals(t=cython.double, period=cython.double, area=cython.double, ax=cython.double,
                   ay=cython.double, avx=cython.double, avy=cython.double, bx=cython.double, by=cython.double,
                   bvx=cython.double, bvy=cython.double, last=dict, pa=tuple, pb=tuple)
    cpdef range_m(self, a, b, now_us)

cdef class RangeTruth:
    cdef public BouncingMotion motion
    cdef public Py_ssize_t n
    cdef public object from_us, last_true_m
    cdef public list counts, errors
    @cython.locals(peer=cython.Py_ssize_t, k=cython.Py_ssize_t)
    cpdef score(self, Py_ssize_t node_id, sample, true_us)
