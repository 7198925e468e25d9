// Virtual MicroPython board: the real MicroPython 1.27 (npm package
// @micropython/micropython-webassembly-pyscript) behind a serial line.
//
// Started by harness/sim/virtual_board/__init__.py with the master side of a pty as
// file descriptor `fd`; mpremote (unmodified) opens the slave path. MicroPython runs
// synchronously on this (main) thread; a running program reads its stdin (the serial
// link) with blocking reads, exactly like a board's USB-CDC stdin. The line itself is
// read by a worker thread (vboard_line.mjs) into a shared ring buffer, so Ctrl-C
// reaches the interpreter even while it never returns (`while True: pass`):
//  - the WebAssembly memory is made shared (the memory limits flag of the module is
//    patched at load time, nothing else changes), so the line thread can do what a
//    board's UART IRQ does: write MicroPython's pending KeyboardInterrupt and
//    scheduler state (found by probeInterrupt after every boot); the VM raises it
//    at its next backward jump; time.sleep() is cut short while it is pending (the
//    port's sleep spins on mp_js_ticks_ms, which then jumps by 2**31 ms);
//
// What it adds around MicroPython's own event-driven REPL (friendly + raw REPL,
// Ctrl-A/B/C/D, OK / output / \x04 error \x04 > framing come from pyexec.c):
//  - raw-paste mode (Ctrl-E A Ctrl-A in the raw REPL), which the port's event-driven
//    raw REPL lacks, as pyexec.c's do_reader_stdin and mp_reader_stdin do it on a board:
//    "R\x01", the flow-control window (MICROPY_REPL_STDIN_BUFFER_MAX / 2 = 128 bytes,
//    little-endian) and 0x01, then 0x01 per window of code taken; Ctrl-D ends the code
//    (answered 0x04), which then runs as the raw REPL runs it (output 0x04 error 0x04 >)
//    but without its "OK"; Ctrl-C ends it with a KeyboardInterrupt;
//  - soft reset (Ctrl-D on an empty line): a fresh MicroPython instance (new heap,
//    new sys.modules) with the flash filesystem carried over; boot.py runs, and
//    main.py in friendly-REPL mode, as on a board;
//  - flash: MicroPython's "/" is a VfsPosix rooted at the runtime's /flash folder, so
//    the root lists the board's files only (boot.py, lib, ...), never the wasm
//    runtime's tmp/home/dev/proc; it persists across soft resets, is limited to
//    `flash_bytes` (ENOSPC beyond), reported by os.statvfs, optionally mirrored to a
//    host folder (`fs_dir`); os.ilistdir gives (name, type, inode, size) like
//    littlefs/FAT boards (the port's VfsPosix gives no size);
//  - the simulated frozen modules (frozen/*.py, e.g. machine) are imported at boot
//    from a folder outside the flash, then unmounted, so they are in sys.modules
//    like a board's built-in or frozen modules and not on its filesystem;
//  - wasm errno numbers (ENOENT = 44, ...) in error output mapped to MicroPython's
//    (ENOENT = 2, ...), which is what mpremote parses;
//  - fault injection for tests: `fail_write_after_bytes` makes file writes fail
//    with EIO once that many bytes were written (a copy failing midway);
//  - counters (bytes in/out, soft resets, interrupts) answered on fd 1 when the
//    parent writes "stats\n" to fd 0 (with `control`; stdin EOF then ends the board).
//
// argv[2]: JSON config {fd, heapsize, flash_bytes, fs_dir, fail_write_after_bytes,
//                        control, frozen: {"name.py": source}}
import fs from "fs";
import path from "path";
import { Worker, MessageChannel } from "worker_threads";
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";
import { CTL, lock, unlock } from "./vboard_shared.mjs";

const cfg = JSON.parse(process.argv[2]);
const FD = cfg.fd;
const HEAP = cfg.heapsize || 256 * 1024;
const FLASH_BYTES = cfg.flash_bytes || 1441792;
const FLASH = "/flash";          // runtime folder holding the board's flash ("/" on the board)
const FROZEN = "/frozen";        // runtime folder of the simulated frozen modules
// wasm (WASI) errno -> MicroPython errno number and name (py/mperrno.h)
const ERRNO_MAP = {
  44: [2, "ENOENT"], 20: [17, "EEXIST"], 54: [20, "ENOTDIR"], 31: [21, "EISDIR"],
  51: [28, "ENOSPC"], 29: [5, "EIO"], 28: [22, "EINVAL"], 2: [13, "EACCES"],
  63: [1, "EPERM"], 8: [9, "EBADF"], 55: [39, "ENOTEMPTY"],
};
const BLOCK = 4096;
const RING_BYTES = 1 << 20;
const TICKS_JUMP_MS = 0x80000000;

let writeBudget = (cfg.fail_write_after_bytes === undefined || cfg.fail_write_after_bytes === null)
  ? Infinity : cfg.fail_write_after_bytes;
let outBuf = [];
let mp = null;
let board = null;            // {mem, kbdWrites, pendingIdx, intrCharIdx} of the running instance
let wasmMemory = null;       // memory of the instance being loaded
let ticksSkewMs = 0;
let rawMode = false;
let pendingInput = [];
let muted = false;
let replEcho = null;         // output of the REPL character being processed (first bytes)
let dirty = false;
let swallow = [];            // bytes the REPL is about to print that the host must not see
// raw-paste mode: MICROPY_REPL_STDIN_BUFFER_MAX (256) / 2, the window mp_reader_new_stdin announces
const PASTE_WINDOW = 128;

// ------------------------------------------------------------------ shared WebAssembly memory
// Mark the module's memory shared (limits flag 0x01 "has max" -> 0x03 "shared, has max").
function shareMemory(bytes) {
  const b = new Uint8Array(bytes);
  const leb = (i) => { let r = 0, s = 0, x; do { x = b[i++]; r += (x & 0x7f) * 2 ** s; s += 7; } while (x & 0x80); return [r, i]; };
  let i = 8;
  while (i < b.length) {
    const id = b[i];
    const [size, start] = leb(i + 1);
    if (id === 5) {                        // memory section: count, then limits
      const [count, at] = leb(start);
      if (count === 1 && b[at] === 0x01) { const out = b.slice(); out[at] = 0x03; return out; }
      return null;
    }
    i = start + size;
  }
  return null;
}

const origInstantiate = WebAssembly.instantiate;
WebAssembly.instantiate = function (source, imports) {
  if (!(source instanceof ArrayBuffer || ArrayBuffer.isView(source))) return origInstantiate.call(WebAssembly, source, imports);
  const shared = shareMemory(source);
  if (!shared) process.stderr.write("vboard: cannot share the wasm memory; Ctrl-C only reaches code reading stdin\n");
  const env = imports && imports.env;
  if (env && env.mp_js_ticks_ms) {
    const ticks = env.mp_js_ticks_ms;
    env.mp_js_ticks_ms = () => {
      if (interruptPending()) ticksSkewMs = (ticksSkewMs + TICKS_JUMP_MS) % 0x100000000;
      return ticks() + ticksSkewMs;
    };
  }
  return origInstantiate.call(WebAssembly, shared || source, imports).then((r) => {
    wasmMemory = r.instance.exports.memory;
    return r;
  });
};

// The runtime decodes strings straight from its heap; TextDecoder refuses shared views.
const origDecode = TextDecoder.prototype.decode;
TextDecoder.prototype.decode = function (view, options) {
  if (view && view.buffer instanceof SharedArrayBuffer) view = view.slice();
  return origDecode.call(this, view, options);
};

// After a boot: where mp_sched_keyboard_interrupt() writes (diff of the memory around one
// call, undone at once) and where the interrupt character lives (the word that makes
// mp_hal_get_interrupt_char() return a probe value).
function probeInterrupt() {
  if (!wasmMemory || !(wasmMemory.buffer instanceof SharedArrayBuffer)) return null;
  const M = mp._module;
  // one interrupt raised and caught first, so the exception carries a traceback that
  // the probed call then clears (mp_sched_keyboard_interrupt resets traceback_data)
  M._mp_sched_keyboard_interrupt();
  runQuiet("_vb = 0\ntry:\n for _vb in (1, 2):\n  pass\nexcept KeyboardInterrupt:\n pass\ndel _vb");
  const before = new Int32Array(wasmMemory.buffer).slice();
  M._mp_sched_keyboard_interrupt();
  const now = new Int32Array(wasmMemory.buffer);
  const writes = [];
  for (let i = 0; i < before.length; i++) if (before[i] !== now[i]) writes.push([i, now[i], before[i]]);
  for (const [i, , old] of writes) now[i] = old;
  const pending = writes.find(([, v, old]) => old === 0 && v !== 0);
  if (!pending) return null;
  // mp_sched_keyboard_interrupt's order: the exception's own words (its traceback),
  // then the pending exception, then the scheduler state
  const inException = (w) => w[0] * 4 >= pending[1] && w[0] * 4 < pending[1] + 16;
  const kbdWrites = writes.filter(inException).concat([pending])
    .concat(writes.filter((w) => w !== pending && !inException(w))).map(([i, v]) => [i, v]);
  const PROBE = 0x5a5a5a;
  mp.runPython("import micropython\nmicropython.kbd_intr(" + PROBE + ")");
  const mem = new Int32Array(wasmMemory.buffer);
  let intrCharIdx = -1;
  for (let i = 0; i < mem.length && intrCharIdx < 0; i++) {
    if (mem[i] !== PROBE) continue;
    mem[i] = 0x1234;
    if (M._mp_hal_get_interrupt_char() === 0x1234) intrCharIdx = i;
    mem[i] = PROBE;
  }
  mp.runPython("micropython.kbd_intr(-1)\ndel micropython");
  if (intrCharIdx < 0) return null;
  return { mem: wasmMemory, kbdWrites, pendingIdx: pending[0], intrCharIdx };
}

// The interrupt character as pyexec sets it around code it runs (mp_hal_set_interrupt_char).
function setInterruptChar(c) {
  if (board === null) { runQuiet("import micropython\nmicropython.kbd_intr(" + c + ")\ndel micropython"); return; }
  lock(ctl);
  Atomics.store(new Int32Array(board.mem.buffer), board.intrCharIdx, c);
  unlock(ctl);
}

// With no code running (interrupt character off) a KeyboardInterrupt still pending is
// a Ctrl-C that raced the end of the program: drop it rather than let it hit the
// next command (a board's pyexec raises it within the ending program instead).
function dropStaleInterrupt() {
  if (board === null) return;
  const mem = new Int32Array(board.mem.buffer);
  lock(ctl);
  if (Atomics.load(mem, board.intrCharIdx) < 0 && Atomics.load(mem, board.pendingIdx) !== 0) {
    Atomics.store(mem, board.pendingIdx, 0);
    Atomics.add(ctl, CTL.STALE, 1);
  }
  unlock(ctl);
}

function interruptPending() {
  return board !== null && Atomics.load(new Int32Array(board.mem.buffer), board.pendingIdx) !== 0;
}

// ------------------------------------------------------------------ serial line
const ctl = new Int32Array(new SharedArrayBuffer(CTL.SIZE * 4));
const ring = new Uint8Array(new SharedArrayBuffer(RING_BYTES));
const channel = new MessageChannel();
const lineThread = new Worker(new URL("./vboard_line.mjs", import.meta.url), {
  workerData: { fd: FD, ctlSab: ctl.buffer, dataSab: ring.buffer, port: channel.port2, control: !!cfg.control },
  transferList: [channel.port2],
});
lineThread.on("error", (err) => {
  process.stderr.write("vboard line thread: " + (err && err.stack ? err.stack : String(err)) + "\n");
  process.exit(2);
});

function flush() {
  if (!outBuf.length) return;
  let text = Buffer.from(outBuf).toString("latin1");
  outBuf = [];
  text = text.replace(/OSError: (\d+)(\r?\n)/g, (m, n, eol) => {
    const e = ERRNO_MAP[parseInt(n, 10)];
    return e ? "OSError: [Errno " + e[0] + "] " + e[1] + eol : m;
  });
  let buf = Buffer.from(text, "latin1");
  while (buf.length) {
    try {
      const n = fs.writeSync(FD, buf);
      Atomics.add(ctl, CTL.BYTES_OUT, n);
      buf = buf.subarray(n);
    } catch (e) {
      if (e.code === "EAGAIN") { sleepMs(1); continue; }
      if (e.code === "EIO") process.exit(0);   // the line went away
      throw e;
    }
  }
}

// Output leaves at once a line is complete (a program's print reaches the host while
// it keeps running) and at the raw REPL's "OK" (sent before the code runs).
function emit(bytes) {
  if (muted) return;
  let eol = false;
  for (const b of bytes) {
    if (swallow.length && b === swallow[0]) { swallow.shift(); continue; }
    swallow = [];
    outBuf.push(b);
    if (b === 10) eol = true;
  }
  if (replEcho !== null && replEcho.length < 64) for (const b of bytes) replEcho.push(b);
  const n = outBuf.length;
  if (eol || n > 4096 || (rawMode && n >= 2 && outBuf[n - 2] === 0x4f && outBuf[n - 1] === 0x4b)) flush();
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function ringTake() {
  const head = Atomics.load(ctl, CTL.HEAD);
  const tail = Atomics.load(ctl, CTL.TAIL);
  const n = (head - tail) | 0;
  if (n <= 0) return null;
  const out = Buffer.alloc(n);
  for (let k = 0; k < n; k++) out[k] = ring[(tail + k) & (RING_BYTES - 1)];
  Atomics.store(ctl, CTL.TAIL, (tail + n) | 0);
  Atomics.notify(ctl, CTL.TAIL);
  return out;
}

function readBlocking() {
  // returns a Buffer with at least one byte; exits when the line is gone
  for (;;) {
    const seq = Atomics.load(ctl, CTL.SEQ);
    const got = ringTake();
    if (got) return got;
    if (Atomics.load(ctl, CTL.CLOSED)) process.exit(0);
    Atomics.wait(ctl, CTL.SEQ, seq);
  }
}

// stdin of a running program (sys.stdin): one byte at a time from the line; null (no
// byte) once a KeyboardInterrupt is pending, so the read returns and the VM raises it. The
// pending interrupt is looked at first: the bytes that came after the Ctrl-C (the host's
// raw-REPL request) stay buffered for the REPL, as on a board, instead of being read by the
// program (which a Ctrl-C during select.poll() would otherwise let happen).
function programStdin() {
  if (interruptPending()) return null;
  if (!pendingInput.length) {
    flush();
    for (;;) {
      const seq = Atomics.load(ctl, CTL.SEQ);
      const got = ringTake();
      if (got) { for (const b of got) pendingInput.push(b); break; }
      if (interruptPending()) return null;
      if (Atomics.load(ctl, CTL.CLOSED)) process.exit(0);
      Atomics.wait(ctl, CTL.SEQ, seq);
    }
  }
  const c = pendingInput.shift();
  if (c === 3 && mp._module._mp_hal_get_interrupt_char() === 3) {
    // a Ctrl-C the line thread passed on before the program enabled interrupts
    mp._module._mp_sched_keyboard_interrupt();
    return null;
  }
  return c;
}

// ------------------------------------------------------------------ flash filesystem
// Paths in snapshots are the board's ("/lib/x.py"); the runtime holds them under FLASH.
function walk(FS, rel, out) {
  for (const name of FS.readdir(FLASH + rel)) {
    if (name === "." || name === "..") continue;
    const p = rel + "/" + name;
    const st = FS.stat(FLASH + p);
    if (FS.isDir(st.mode)) { out.dirs.push(p); walk(FS, p, out); }
    else if (FS.isFile(st.mode)) out.files.push([p, st.size]);
  }
  return out;
}

function flashUsedBytes(FS) {
  const t = walk(FS, "", { dirs: [], files: [] });
  let used = t.dirs.length * BLOCK;
  for (const [, size] of t.files) used += Math.max(1, Math.ceil(size / BLOCK)) * BLOCK;
  return used;
}

function isFlashPath(p) {
  return !!p && p.startsWith(FLASH + "/");
}

function snapshot(FS) {
  const t = walk(FS, "", { dirs: [], files: [] });
  return { dirs: t.dirs, files: t.files.map(([p]) => [p, FS.readFile(FLASH + p)]) };
}

function restore(FS, snap) {
  for (const d of snap.dirs) { try { FS.mkdir(FLASH + d); } catch (e) { /* exists */ } }
  for (const [p, data] of snap.files) FS.writeFile(FLASH + p, data);
}

function hostLoad() {
  if (!cfg.fs_dir || !fs.existsSync(cfg.fs_dir)) return { dirs: [], files: [] };
  const snap = { dirs: [], files: [] };
  const rec = (hostDir, mpDir) => {
    for (const ent of fs.readdirSync(hostDir, { withFileTypes: true }).sort((a, b) => a.name < b.name ? -1 : 1)) {
      const hp = path.join(hostDir, ent.name);
      const mpPath = mpDir + "/" + ent.name;
      if (ent.isDirectory()) { snap.dirs.push(mpPath); rec(hp, mpPath); }
      else if (ent.isFile() && !ent.name.endsWith(SYNC_TMP)) snap.files.push([mpPath, fs.readFileSync(hp)]);
    }
  };
  rec(cfg.fs_dir, "");
  hostFiles = new Map(snap.files);
  return snap;
}

// The host folder follows the flash file by file: entries no longer on the flash are removed, a file is
// rewritten only when its content changed, through a temporary file renamed over it. A board stopped in
// the middle of a sync (SIGTERM, a pulled cable in a test) leaves every file whole, old or new, as a
// board's flash filesystem does when power fails; files the change did not touch are never at risk.
const SYNC_TMP = ".vbsync~";
let hostFiles = new Map();      // path on the flash -> the content the host folder holds (as last loaded or written)

function hostPrune(hostDir, mpDir, files, dirs) {
  for (const ent of fs.readdirSync(hostDir, { withFileTypes: true })) {
    const hp = path.join(hostDir, ent.name);
    const p = mpDir + "/" + ent.name;
    if (ent.isDirectory() && dirs.has(p)) hostPrune(hp, p, files, dirs);
    else if (!(ent.isFile() && files.has(p))) {
      for (const k of hostFiles.keys()) if (k === p || k.startsWith(p + "/")) hostFiles.delete(k);
      fs.rmSync(hp, { recursive: true, force: true });
    }
  }
}

function hostSync() {
  if (!cfg.fs_dir || !dirty) return;
  dirty = false;
  const snap = snapshot(mp.FS);
  fs.mkdirSync(cfg.fs_dir, { recursive: true });
  hostPrune(cfg.fs_dir, "", new Set(snap.files.map(([p]) => p)), new Set(snap.dirs));
  for (const d of snap.dirs) fs.mkdirSync(path.join(cfg.fs_dir, d), { recursive: true });
  for (const [p, data] of snap.files) {
    const held = hostFiles.get(p);
    if (held !== undefined && Buffer.from(data).equals(held)) continue;
    const hp = path.join(cfg.fs_dir, p);
    fs.writeFileSync(hp + SYNC_TMP, data);
    fs.renameSync(hp + SYNC_TMP, hp);
    hostFiles.set(p, Buffer.from(data));
  }
}

function patchFs(FS) {
  const origWrite = FS.write;
  FS.write = function (stream, buffer, offset, length, position, canOwn) {
    if (FS.isFile(stream.node.mode) && isFlashPath(stream.path)) {
      dirty = true;
      if (length > writeBudget) {
        writeBudget = 0;
        throw new FS.ErrnoError(29);        // EIO: simulated flash/link failure
      }
      writeBudget -= length;
      const pos = (position === undefined || position === null) ? stream.position : position;
      const oldSize = stream.node.usedBytes || 0;
      const newSize = Math.max(oldSize, pos + length);
      const grow = Math.ceil(newSize / BLOCK) - Math.ceil(oldSize / BLOCK);
      if (grow > 0 && flashUsedBytes(FS) + grow * BLOCK > FLASH_BYTES) throw new FS.ErrnoError(51);
    }
    return origWrite.call(FS, stream, buffer, offset, length, position, canOwn);
  };
  for (const op of ["mkdir", "rmdir", "unlink", "rename"]) {
    const orig = FS[op];
    FS[op] = function (...args) { dirty = true; return orig.apply(FS, args); };
  }
  FS.statfsNode = function () {
    const blocks = Math.floor(FLASH_BYTES / BLOCK);
    const free = Math.max(0, blocks - Math.ceil(flashUsedBytes(FS) / BLOCK));
    return { bsize: BLOCK, frsize: BLOCK, blocks: blocks, bfree: free, bavail: free, files: 0,
             ffree: 0, fsid: 42, flags: 0, namelen: 255 };
  };
}

// ------------------------------------------------------------------ boot / soft reset
function runQuiet(code) {
  try { mp.runPython(code); } catch (e) { emit(Buffer.from(String(e.message || e) + "\r\n", "latin1")); }
}

// MicroPython side of a boot: the flash as "/", the frozen modules imported then hidden,
// os.ilistdir with sizes. Names start with "_vb" and are deleted afterwards.
const BOARD_SETUP = String.raw`
import vfs, os, sys
vfs.umount('/')
vfs.mount(vfs.VfsPosix('${FLASH}'), '/')
os.chdir('/')
vfs.mount(vfs.VfsPosix('${FROZEN}'), '/.frozen')
sys.path.insert(0, '/.frozen')
_vb = None
for _vb in %FROZEN%:
    __import__(_vb)
sys.path.pop(0)
vfs.umount('/.frozen')
def _vb_ilistdir(path='.', _ild=os.ilistdir, _stat=os.stat):
    sep = '/' if isinstance(path, str) else b'/'
    base = path if path.endswith(sep) else path + sep
    for e in _ild(path):
        size = 0
        if e[1] == 0x8000:
            try:
                size = _stat(base + e[0])[6]
            except OSError:
                pass
        yield (e[0], e[1], e[2], size)
os.ilistdir = _vb_ilistdir
def _vb_abs(p, _cwd=os.getcwd):
    if isinstance(p, bytes):
        p = p.decode()
    if not p.startswith('/'):
        p = _cwd().rstrip('/') + '/' + p
    parts = []
    for s in p.split('/'):
        if s == '..':
            if parts:
                parts.pop()
        elif s and s != '.':
            parts.append(s)
    return '/' + '/'.join(parts)
# VfsPosix with a root builds both paths of rename() in one buffer (the second
# overwrites the first); rename through an unrooted VfsPosix on the runtime's paths
def _vb_rename(old, new, _raw=vfs.VfsPosix(), _abs=_vb_abs):
    _raw.rename('${FLASH}' + _abs(old), '${FLASH}' + _abs(new))
os.rename = _vb_rename
# the port's input() reads no serial line (it spins in C, deaf to Ctrl-C): a readline
# on sys.stdin with echo and backspace, as a board's REPL input() behaves
def _vb_input(prompt=None, _read=sys.stdin.read, _write=sys.stdout.write):
    if prompt is not None:
        _write(str(prompt))
    line = ''
    while True:
        c = _read(1)
        if c == '\r' or c == '\n':
            _write('\r\n')
            return line
        if c == '\x7f' or c == '\x08':
            if line:
                line = line[:-1]
                _write('\x08 \x08')
        elif c == '\x04' and not line:
            raise EOFError
        elif c and c >= ' ':
            line += c
            _write(c)
import builtins
builtins.input = _vb_input
del _vb, _vb_ilistdir, _vb_abs, _vb_rename, _vb_input, builtins, vfs
`;

async function boot(snap, runMain) {
  board = null;
  mp = await loadMicroPython({
    heapsize: HEAP, linebuffer: false, stdin: programStdin,
    stdout: (b) => emit(b), stderr: (b) => emit(b),
  });
  Atomics.add(ctl, CTL.BOOTS, 1);
  board = probeInterrupt();
  channel.port1.postMessage(board);
  const FS = mp.FS;
  FS.mkdir(FLASH);
  FS.mkdir(FROZEN);
  const frozen = Object.keys(cfg.frozen || {}).sort();
  for (const name of frozen) FS.writeFile(FROZEN + "/" + name, cfg.frozen[name]);
  restore(FS, snap);
  patchFs(FS);
  dirty = false;
  const names = frozen.filter((n) => n.endsWith(".py")).map((n) => n.slice(0, -3));
  mp.runPython(BOARD_SETUP.replace("%FROZEN%", JSON.stringify(names)));
  const exists = (p) => { try { FS.stat(FLASH + p); return true; } catch (e) { return false; } };
  const runFile = (name) => runQuiet(
    "import sys\ntry:\n exec(compile(open('" + name + "').read(),'" + name + "','exec'),{'__name__':'__main__'})\n" +
    "except BaseException as e:\n sys.print_exception(e)\n");
  // boot.py / main.py run with Ctrl-C enabled, as pyexec_file does on a board
  setInterruptChar(3);
  if (exists("/boot.py")) runFile("boot.py");
  if (runMain && exists("/main.py")) runFile("main.py");
  setInterruptChar(-1);
  dropStaleInterrupt();
  muted = !runMain;                        // raw mode: no friendly banner
  mp.replInit();
  muted = false;
  hostSync();
}

async function softReset() {
  const snap = snapshot(mp.FS);
  const wasRaw = rawMode;
  Atomics.add(ctl, CTL.SOFT_RESETS, 1);
  emit(Buffer.from("MPY: soft reboot\r\n", "latin1"));
  await boot(snap, !wasRaw);
  if (wasRaw) mp.replProcessChar(1);   // stay in the raw REPL, as pyexec does
  flush();
}

// ------------------------------------------------------------------ main loop
// One byte to MicroPython's REPL, and what the board does around it.
async function replChar(c) {
  replEcho = [];
  const ret = mp.replProcessChar(c);
  dropStaleInterrupt();
  const text = Buffer.from(replEcho).toString("latin1");
  replEcho = null;
  if (text.includes("raw REPL; CTRL-B to exit")) rawMode = true;
  if (c === 2 && rawMode) rawMode = false;
  if (ret) {
    flush();
    await softReset();
  }
  if (c === 4) hostSync();
}

// The end of a raw-paste program (Ctrl-D, or Ctrl-C: mp_reader_stdin_readbyte): 0x04 to the host, then the
// program runs in the raw REPL, whose "OK" (the acknowledgement of a plain raw-REPL program) is not sent.
async function endPaste(code, c) {
  emit([4]);
  flush();                                 // the host has it before the program runs, as on a board
  if (c === 3) {
    emit(Buffer.from("\x04KeyboardInterrupt: \r\n\x04>", "latin1"));
  } else if (code.length === 0) {
    emit([4, 4, 0x3e]);                    // nothing to run (an empty raw-REPL line would be a soft reset)
  } else if (code.includes(1) || code.includes(2)) {
    // the raw REPL's line takes any byte but these two (reset, leave): refused, not run in part
    emit(Buffer.from("\x04ValueError: the virtual board cannot run pasted code holding a raw 0x01 or 0x02 " +
                     "byte\r\n\x04>", "latin1"));
  } else {
    for (const b of code) mp.replProcessChar(b);     // into the raw REPL's line: no echo
    swallow = [0x4f, 0x4b];
    await replChar(4);
  }
  flush();
}

async function main() {
  await boot(hostLoad(), true);
  flush();
  let paste = 0;        // progress through the raw-paste request \x05 A \x01
  let pasteCode = null; // the program of a raw paste being received, null outside one
  let windowRemain = 0;
  for (;;) {
    // bytes a program read ahead but left (e.g. after its Ctrl-C) go to the REPL first
    const data = pendingInput.length ? Buffer.from(pendingInput.splice(0)) : readBlocking();
    for (let i = 0; i < data.length; i++) {
      const c = data[i];
      if (pasteCode !== null) {
        if (c === 3 || c === 4) {
          const code = pasteCode;
          pasteCode = null;
          await endPaste(code, c);
          continue;
        }
        pasteCode.push(c);
        if (--windowRemain === 0) { emit([1]); flush(); windowRemain = PASTE_WINDOW; }
        continue;
      }
      if (rawMode) {
        if (paste === 0 && c === 5) { paste = 1; continue; }
        if (paste === 1 && c === 0x41) { paste = 2; continue; }
        if (paste === 2 && c === 1) {
          paste = 0;
          // "R\x01", the window, and 0x01: two windows free (mp_reader_new_stdin)
          emit([0x52, 0x01, PASTE_WINDOW & 0xff, PASTE_WINDOW >> 8, 0x01]);
          flush();
          pasteCode = [];
          windowRemain = PASTE_WINDOW;
          continue;
        }
        if (paste) { for (const b of [5, 0x41].slice(0, paste)) mp.replProcessChar(b); paste = 0; }
      }
      await replChar(c);
    }
    flush();
  }
}

main().catch((err) => {
  process.stderr.write("vboard error: " + (err && err.stack ? err.stack : String(err)) + "\n");
  process.exit(2);
});
