# Types for onboard/comms/uwb/token_ring.py compiled as cython_ext.uwb.token_ring (the .py is the source).
cimport cython
from cython_ext.uwb.frames cimport Frame
from cython_ext.uwb.node_base cimport NodeBase

cdef int _POLL, _RESPONSE, _FINAL, _REPORT, _TOKEN, _DISCOVER, _JOIN

cdef class TokenRingNode(NodeBase):
    cdef public bint holder
    cdef public object bit, reply_ticks, _silence_us, epoch, members, state, deadline_us
    cdef public object silence_deadline_us, pass_no, seq, _targets, _ti, _attempt, _peer, _ex_seq
    cdef public object _tx_poll, _rx_resp, _tx_final, _tx_kind, _missed, _responder, _last_token
    cdef public object _pass_to, _pass_tries, _invite_block, _discovers, _left
    cpdef tuple on_event(self, event, now_us)
    cpdef tuple on_rx(self, data, raw_rx_ticks, now_us)
    cpdef _adopt_members(self, members)
    cpdef _next_deadline(self)
    cpdef _on_tx_done(self, raw_tx, now_us, list acts)
    @cython.locals(f=Frame, t=cython.int)
    cpdef _on_rx(self, data, raw_rx, now_us, list acts)
    cpdef bint _expecting(self, Frame f, state)
