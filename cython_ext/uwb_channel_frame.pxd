# Types for harness/sim/radio/uwb_channel_frame.py compiled as cython_ext.uwb_channel_frame (the .py is the
# source). Doubles where the source computes with Python floats: the same IEEE operations in the same order.
cimport cython
from cython_ext.uwb.driver cimport UwbDriver
from cython_ext.uwb.node_base cimport NodeBase
from cython_ext.uwb_channel_truth cimport BouncingMotion

cdef class _Clock:
    cdef public double rate, drift_ppm
    cdef public long long offset_us, offset_ticks
    # integer microseconds as C integers (below 2**63), the products in doubles as Python's int * float
    cpdef long long local_us(self, long long true_us) except? -1
    @cython.locals(t=cython.longlong)
    cpdef long long true_us_for(self, long long local_us) except? -1
    cpdef double ticks_f(self, double true_s)

cdef class _Tx:
    cdef public object sender, frame, pos, raw_tx
    cdef public double commit_s, start_s, rmarker_s, end_s

cdef class _Node:
    cdef public UwbDriver driver
    cdef public NodeBase proto
    cdef public object id, arm_seq, arm_now_us, deadline_local, watch, watch_dl, pending, vel
    cdef public object timer_key
    cdef public _Clock clock
    cdef public double ant_true_s, busy_until_s
    cdef public bint alive, armed
    cdef public list tx_intervals

cdef class _Wake:
    cdef object net, key
    cdef _Node n

cdef class _Deliver:
    cdef object net, event
    cdef _Node n

cdef class _FrameEnd:
    cdef object net
    cdef _Tx tx

cdef class Radio:
    cdef object net
    cdef _Node n

@cython.locals(motion=BouncingMotion)
cpdef node_state(net, node_id, now_us)
cpdef set_velocity(net, _Node n, now_us)
cpdef handle(net, _Node n, samples, deadline_local, now_us)
@cython.locals(cv=dict)
cpdef arm(net, _Node n, deadline_local, now_us)
cpdef armed_time_us(_Node n)
@cython.locals(cv=dict)
cpdef queue_wake(net, _Node n, key)
@cython.locals(cv=dict)
cpdef call_at(net, time_us, fn)
cpdef deliver_event(net, _Node n, event, now_us)
cpdef wake(net, _Node n, key, now_us)
@cython.locals(cv=dict, c=_Clock, now_s=cython.double, start_s=cython.double, rmarker_s=cython.double,
               end_s=cython.double, cur=cython.double)
cpdef submit_tx(net, _Node n, frame, dx_ticks)
@cython.locals(s=_Node)
cpdef frame_end(net, _Tx tx, now_us)

@cython.locals(rn=_Node, c=_Clock, d=cython.double, prop_s=cython.double, a0=cython.double, a1=cython.double,
               px=cython.double, py=cython.double, pz=cython.double, start_s=cython.double, end_s=cython.double,
               base_s=cython.double, t_rx_s=cython.double, ticks=cython.double, noise_std=cython.double,
               bias_ticks=cython.double, max_range_m=cython.double, loss_prob=cython.double, extra_m=cython.double,
               c_mps=cython.double, tick_hz=cython.double, far_s=cython.double, c0=cython.double, c1=cython.double,
               p3=cython.bint, collisions=cython.bint, deaf=cython.bint, states=dict, stats=dict,
               now_f=cython.double, mask=cython.longlong, noise_buf=list, loss_buf=list,
               keep_samples=cython.bint, deliveries=cython.longlong, u=cython.double, z=cython.double, air=list,
               cv=dict, motion=BouncingMotion, n_motion=cython.Py_ssize_t, mx=cython.double[::1], my=cython.double[::1],
               mk=cython.int[::1], mvels=list, qx=cython.double, qy=cython.double)
cpdef deliver_frame(net, _Tx tx, _Node s, now_us)

@cython.locals(i=cython.longlong)
cdef long long _floor_int(double x)

@cython.locals(n=_Node, o=_Tx)
cpdef prune(net, double before_s)

@cython.locals(o=_Tx, p=cython.double)
cdef bint _collides(others, r, pos_r, double a0, double a1)
