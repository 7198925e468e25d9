// Virtual MicroPython board: the real MicroPython 1.27 (npm package
// @micropython/micropython-webassembly-pyscript) behind a serial line.
//
// Started by harness/sim/virtual_board/__init__.py with the master side of a pty as
// file descriptor `fd`; mpremote (unmodified) opens the slave path. Everything
// here is synchronous (fs.readSync / fs.writeSync on the pty), because MicroPython
// runs synchronously inside this process and a running program reads its stdin
// (the serial link) with blocking reads, exactly like a board's USB-CDC stdin.
//
// What it adds around MicroPython's own event-driven REPL (friendly + raw REPL,
// Ctrl-A/B/C/D, OK / output / \x04 error \x04 > framing come from pyexec.c):
//  - raw-paste request (Ctrl-E A Ctrl-A) answered with "R\x00" (unsupported), so
//    mpremote falls back to plain raw REPL;
//  - soft reset (Ctrl-D on an empty line): a fresh MicroPython instance (new heap,
//    new sys.modules) with the flash filesystem carried over; boot.py runs, and
//    main.py in friendly-REPL mode, as on a board;
//  - flash: the files under / (minus the wasm runtime's own tmp/home/dev/proc and
//    the simulated frozen modules in /.frozen) persist across soft resets, are
//    limited to `flash_bytes` (ENOSPC beyond), reported by os.statvfs, and are
//    optionally mirrored to a host folder (`fs_dir`);
//  - wasm errno numbers (ENOENT = 44, ...) in error output mapped to MicroPython's
//    (ENOENT = 2, ...), which is what mpremote parses;
//  - fault injection for tests: `fail_write_after_bytes` makes file writes fail
//    with EIO once that many bytes were written (a copy failing midway);
//  - Ctrl-C while a program reads the serial link raises KeyboardInterrupt.
//
// argv[2]: JSON config {fd, heapsize, flash_bytes, fs_dir, fail_write_after_bytes,
//                        frozen: {"name.py": source}}
import fs from "fs";
import path from "path";
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";

const cfg = JSON.parse(process.argv[2]);
const FD = cfg.fd;
const HEAP = cfg.heapsize || 256 * 1024;
const FLASH_BYTES = cfg.flash_bytes || 1441792;
const SYSTEM_DIRS = new Set(["tmp", "home", "dev", "proc", ".frozen"]);
// wasm (WASI) errno -> MicroPython errno number and name (py/mperrno.h)
const ERRNO_MAP = {
  44: [2, "ENOENT"], 20: [17, "EEXIST"], 54: [20, "ENOTDIR"], 31: [21, "EISDIR"],
  51: [28, "ENOSPC"], 29: [5, "EIO"], 28: [22, "EINVAL"], 2: [13, "EACCES"],
  63: [1, "EPERM"], 8: [9, "EBADF"], 55: [39, "ENOTEMPTY"],
};
const BLOCK = 4096;

let writeBudget = (cfg.fail_write_after_bytes === undefined || cfg.fail_write_after_bytes === null)
  ? Infinity : cfg.fail_write_after_bytes;
let outBuf = [];
let mp = null;
let rawMode = false;
let pendingInput = [];
let dirty = false;

// ------------------------------------------------------------------ serial line
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
      buf = buf.subarray(n);
    } catch (e) {
      if (e.code === "EAGAIN") { sleepMs(1); continue; }
      if (e.code === "EIO") process.exit(0);   // the line went away
      throw e;
    }
  }
}

function emit(bytes) {
  for (const b of bytes) outBuf.push(b);
  if (outBuf.length > 4096) flush();
}

function sleepMs(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function readBlocking() {
  // returns a Buffer with at least one byte; exits when the line is gone
  const buf = Buffer.alloc(4096);
  for (;;) {
    let n;
    try {
      n = fs.readSync(FD, buf, 0, buf.length, null);
    } catch (e) {
      if (e.code === "EAGAIN") { sleepMs(2); continue; }
      if (e.code === "EIO" || e.code === "EBADF") process.exit(0);
      throw e;
    }
    if (n === 0) process.exit(0);
    return buf.subarray(0, n);
  }
}

// stdin of a running program (sys.stdin): one byte at a time from the line.
function programStdin() {
  if (!pendingInput.length) {
    flush();
    for (const b of readBlocking()) pendingInput.push(b);
  }
  const c = pendingInput.shift();
  if (c === 3 && mp._module._mp_hal_get_interrupt_char() === 3) {
    mp._module._mp_sched_keyboard_interrupt();
    return null;
  }
  return c;
}

// ------------------------------------------------------------------ flash filesystem
function walk(FS, dir, out) {
  for (const name of FS.readdir(dir)) {
    if (name === "." || name === "..") continue;
    if (dir === "/" && SYSTEM_DIRS.has(name)) continue;
    const p = (dir === "/" ? "" : dir) + "/" + name;
    const st = FS.stat(p);
    if (FS.isDir(st.mode)) { out.dirs.push(p); walk(FS, p, out); }
    else if (FS.isFile(st.mode)) out.files.push([p, st.size]);
  }
  return out;
}

function flashUsedBytes(FS) {
  const t = walk(FS, "/", { dirs: [], files: [] });
  let used = t.dirs.length * BLOCK;
  for (const [, size] of t.files) used += Math.max(1, Math.ceil(size / BLOCK)) * BLOCK;
  return used;
}

function isFlashPath(p) {
  if (!p || p[0] !== "/") return false;
  const top = p.split("/")[1];
  return !SYSTEM_DIRS.has(top);
}

function snapshot(FS) {
  const t = walk(FS, "/", { dirs: [], files: [] });
  return { dirs: t.dirs, files: t.files.map(([p]) => [p, FS.readFile(p)]) };
}

function restore(FS, snap) {
  for (const d of snap.dirs) { try { FS.mkdir(d); } catch (e) { /* exists */ } }
  for (const [p, data] of snap.files) FS.writeFile(p, data);
}

function hostLoad() {
  if (!cfg.fs_dir || !fs.existsSync(cfg.fs_dir)) return { dirs: [], files: [] };
  const snap = { dirs: [], files: [] };
  const rec = (hostDir, mpDir) => {
    for (const ent of fs.readdirSync(hostDir, { withFileTypes: true }).sort((a, b) => a.name < b.name ? -1 : 1)) {
      const hp = path.join(hostDir, ent.name);
      const mpPath = mpDir + "/" + ent.name;
      if (ent.isDirectory()) { snap.dirs.push(mpPath); rec(hp, mpPath); }
      else if (ent.isFile()) snap.files.push([mpPath, fs.readFileSync(hp)]);
    }
  };
  rec(cfg.fs_dir, "");
  return snap;
}

function hostSync() {
  if (!cfg.fs_dir || !dirty) return;
  dirty = false;
  const snap = snapshot(mp.FS);
  fs.rmSync(cfg.fs_dir, { recursive: true, force: true });
  fs.mkdirSync(cfg.fs_dir, { recursive: true });
  for (const d of snap.dirs) fs.mkdirSync(path.join(cfg.fs_dir, d), { recursive: true });
  for (const [p, data] of snap.files) fs.writeFileSync(path.join(cfg.fs_dir, p), data);
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

async function boot(snap, runMain) {
  mp = await loadMicroPython({
    heapsize: HEAP, linebuffer: false, stdin: programStdin,
    stdout: (b) => emit(b), stderr: (b) => emit(b),
  });
  const FS = mp.FS;
  FS.mkdir("/.frozen");
  for (const [name, src] of Object.entries(cfg.frozen || {})) FS.writeFile("/.frozen/" + name, src);
  restore(FS, snap);
  patchFs(FS);
  dirty = false;
  mp.runPython("import os, sys\nos.chdir('/')\nsys.path.append('/.frozen')");
  const exists = (p) => { try { FS.stat(p); return true; } catch (e) { return false; } };
  const runFile = (name) => runQuiet(
    "import sys\ntry:\n exec(compile(open('" + name + "').read(),'" + name + "','exec'),{'__name__':'__main__'})\n" +
    "except BaseException as e:\n sys.print_exception(e)\n");
  runQuiet("import micropython\nmicropython.kbd_intr(3)");
  if (exists("/boot.py")) runFile("boot.py");
  if (runMain && exists("/main.py")) runFile("main.py");
  const before = outBuf.length;
  mp.replInit();
  if (!runMain) outBuf.length = before;    // raw mode: no friendly banner
  hostSync();
}

async function softReset() {
  const snap = snapshot(mp.FS);
  const wasRaw = rawMode;
  emit(Buffer.from("MPY: soft reboot\r\n", "latin1"));
  await boot(snap, !wasRaw);
  if (wasRaw) mp.replProcessChar(1);   // stay in the raw REPL, as pyexec does
  flush();
}

// ------------------------------------------------------------------ main loop
async function main() {
  await boot(hostLoad(), true);
  flush();
  let paste = 0;   // progress through the raw-paste request \x05 A \x01
  for (;;) {
    // bytes a program read ahead but left (e.g. after its Ctrl-C) go to the REPL first
    const data = pendingInput.length ? Buffer.from(pendingInput.splice(0)) : readBlocking();
    for (let i = 0; i < data.length; i++) {
      const c = data[i];
      if (rawMode) {
        if (paste === 0 && c === 5) { paste = 1; continue; }
        if (paste === 1 && c === 0x41) { paste = 2; continue; }
        if (paste === 2 && c === 1) { paste = 0; emit([0x52, 0x00]); flush(); continue; }
        if (paste) { for (const b of [5, 0x41].slice(0, paste)) mp.replProcessChar(b); paste = 0; }
      }
      const before = outBuf.length;
      const ret = mp.replProcessChar(c);
      const text = Buffer.from(outBuf.slice(before)).toString("latin1");
      if (text.includes("raw REPL; CTRL-B to exit")) rawMode = true;
      if (c === 2 && rawMode) rawMode = false;
      if (ret) {
        flush();
        await softReset();
      }
      if (c === 4) hostSync();
    }
    flush();
  }
}

main().catch((err) => {
  process.stderr.write("vboard error: " + (err && err.stack ? err.stack : String(err)) + "\n");
  process.exit(2);
});
