// The virtual board's serial line: a worker thread that owns the read side of the pty.
//
// MicroPython runs on vboard.mjs's main thread and may never return to the event loop
// (`while True: pass`). This thread keeps reading the line while it runs, as a board's
// USB/UART receive interrupt does:
//  - every byte goes into a ring buffer in shared memory that the main thread reads
//    (Atomics.wait, no polling), except
//  - the interrupt character (Ctrl-C, while MicroPython has set it with
//    mp_hal_set_interrupt_char, i.e. while code runs): then it does what
//    mp_sched_keyboard_interrupt() does, writing the pending KeyboardInterrupt and the
//    scheduler state straight into MicroPython's (shared) WebAssembly memory. The VM
//    raises it at its next pending-exception check (every backward jump), exactly as on
//    a board whose UART IRQ calls mp_sched_keyboard_interrupt().
//  - control requests on fd 0 ("stats\n") are answered on fd 1 with one
//    "STATS {json}" line (the counters), even while the interpreter is busy.
//
// Which words to write and where the interrupt character lives are found by the main
// thread after each (re)boot (vboard.mjs probeInterrupt) and sent here on `port`.
import fs from "fs";
import { workerData, receiveMessageOnPort } from "worker_threads";
import { CTL, counters, lock, unlock } from "./vboard_shared.mjs";

const { fd, ctlSab, dataSab, port, control } = workerData;
const ctl = new Int32Array(ctlSab);
const data = new Uint8Array(dataSab);
const RING = data.length;               // a power of two
let board = null;                       // {mem, kbdWrites: [[index, value]...], intrCharIdx}

function drainMessages() {
  let m;
  while ((m = receiveMessageOnPort(port))) board = m.message;
}

function lineGone() {
  Atomics.store(ctl, CTL.CLOSED, 1);
  Atomics.add(ctl, CTL.SEQ, 1);
  Atomics.notify(ctl, CTL.SEQ);
  // the interpreter may be spinning and never look at CLOSED: end the whole process
  setTimeout(() => process.kill(process.pid, "SIGTERM"), 2000).unref();
}

function interruptChar() {
  if (!board) return -1;
  return Atomics.load(new Int32Array(board.mem.buffer), board.intrCharIdx);
}

function scheduleKeyboardInterrupt() {
  // mp_sched_keyboard_interrupt(): the pending exception first, then the scheduler state
  const mem = new Int32Array(board.mem.buffer);
  for (const [idx, value] of board.kbdWrites) Atomics.store(mem, idx, value);
  Atomics.add(ctl, CTL.INTERRUPTS, 1);
}

function push(bytes) {
  let head = Atomics.load(ctl, CTL.HEAD);
  for (const b of bytes) {
    while (((head - Atomics.load(ctl, CTL.TAIL)) | 0) >= RING) {
      Atomics.store(ctl, CTL.HEAD, head);
      Atomics.add(ctl, CTL.SEQ, 1);
      Atomics.notify(ctl, CTL.SEQ);
      Atomics.wait(ctl, CTL.TAIL, Atomics.load(ctl, CTL.TAIL), 50);
    }
    data[head & (RING - 1)] = b;
    head = (head + 1) | 0;
  }
  Atomics.store(ctl, CTL.HEAD, head);
}

function handle(chunk) {
  drainMessages();
  Atomics.add(ctl, CTL.BYTES_IN, chunk.length);
  const keep = [];
  for (const b of chunk) {
    let interrupt = false;
    if (board) {
      lock(ctl);
      const ic = interruptChar();
      if (ic >= 0 && b === ic) { scheduleKeyboardInterrupt(); interrupt = true; }
      unlock(ctl);
    }
    if (interrupt) {
      if (keep.length) { push(keep); keep.length = 0; }
    } else {
      keep.push(b);
    }
  }
  if (keep.length) push(keep);
  Atomics.add(ctl, CTL.SEQ, 1);
  Atomics.notify(ctl, CTL.SEQ);
}

function readLine() {
  const buf = Buffer.alloc(4096);
  fs.read(fd, buf, 0, buf.length, null, (err, n) => {
    if (err) {
      if (err.code === "EAGAIN") { setTimeout(readLine, 2); return; }
      lineGone();                        // EIO: the pty went away
      return;
    }
    if (n === 0) { lineGone(); return; }
    handle(buf.subarray(0, n));
    readLine();
  });
}

function readControl() {
  let pending = "";
  const buf = Buffer.alloc(256);
  const next = () => fs.read(0, buf, 0, buf.length, null, (err, n) => {
    if (err || n === 0) { lineGone(); return; }   // the parent process went away
    pending += buf.subarray(0, n).toString("latin1");
    let nl;
    while ((nl = pending.indexOf("\n")) >= 0) {
      const cmd = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      if (cmd === "stats") fs.writeSync(1, "STATS " + JSON.stringify(counters(ctl)) + "\n");
    }
    next();
  });
  next();
}

readLine();
if (control) readControl();
