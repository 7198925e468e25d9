// Layout of the control block shared by vboard.mjs (the interpreter thread) and
// vboard_line.mjs (the serial-line thread): an Int32Array over a SharedArrayBuffer.
export const CTL = {
  HEAD: 0,          // bytes written into the ring by the line thread (wrapping int32)
  TAIL: 1,          // bytes taken out of the ring by the interpreter thread
  SEQ: 2,           // bumped on every line event; the interpreter thread waits on it
  CLOSED: 3,        // 1 once the line (or the controlling parent) went away
  BYTES_IN: 4,      // bytes received on the serial line
  BYTES_OUT: 5,     // bytes sent on the serial line
  SOFT_RESETS: 6,   // soft resets (Ctrl-D at an empty REPL line, machine.soft_reset)
  INTERRUPTS: 7,    // Ctrl-C received while code ran: KeyboardInterrupt scheduled
  BOOTS: 8,         // interpreter instances started (1 + soft resets)
  LOCK: 9,          // 1 while a thread reads/writes the interrupt state (lock below)
  STALE: 10,        // Ctrl-C that arrived as the code ended: dropped at the idle REPL
  SIZE: 16,
};

// A spin lock around "interrupt character is set -> schedule KeyboardInterrupt" (line
// thread) and "REPL idle -> drop a KeyboardInterrupt still pending" (interpreter
// thread), so a Ctrl-C racing the end of a program cannot stay pending at the prompt
// and hit the next command. Both sections are a few memory accesses.
export function lock(ctl) {
  while (Atomics.compareExchange(ctl, CTL.LOCK, 0, 1) !== 0) { /* spin */ }
}

export function unlock(ctl) {
  Atomics.store(ctl, CTL.LOCK, 0);
}

export function counters(ctl) {
  return {
    bytes_in: Atomics.load(ctl, CTL.BYTES_IN) >>> 0,
    bytes_out: Atomics.load(ctl, CTL.BYTES_OUT) >>> 0,
    soft_resets: Atomics.load(ctl, CTL.SOFT_RESETS),
    interrupts: Atomics.load(ctl, CTL.INTERRUPTS),
    boots: Atomics.load(ctl, CTL.BOOTS),
    interrupts_dropped_at_idle: Atomics.load(ctl, CTL.STALE),
  };
}
