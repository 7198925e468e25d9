// Run Python code in the real MicroPython 1.27 (WebAssembly port, npm package
// @micropython/micropython-webassembly-pyscript) under node.
//
// Input (JSON on stdin): {"files": {"/path/in/mp/fs.py": "source", ...},
//                         "code": "python source to run", "heapsize": bytes}
// Output: MicroPython's stdout on stdout. Exit status 0 when the code ran to the
// end, 1 when it raised (the traceback goes to stderr), 2 on a runner error.
// The package's own command line exits 0 even on exceptions, which is why the
// library API (loadMicroPython/runPython) is driven from here instead.
import { loadMicroPython } from "@micropython/micropython-webassembly-pyscript";

function readStdin() {
  return new Promise((resolve, reject) => {
    const chunks = [];
    process.stdin.on("data", (c) => chunks.push(c));
    process.stdin.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    process.stdin.on("error", reject);
  });
}

function mkdirs(FS, dir) {
  let cur = "";
  for (const part of dir.split("/").filter((p) => p.length > 0)) {
    cur += "/" + part;
    try { FS.mkdir(cur); } catch (e) { /* exists */ }
  }
}

async function main() {
  const spec = JSON.parse(await readStdin());
  const out = [];
  const mp = await loadMicroPython({
    heapsize: spec.heapsize || 8 * 1024 * 1024,
    stdout: (line) => process.stdout.write(line + "\n"),
    stderr: (line) => process.stderr.write(line + "\n"),
    linebuffer: true,
  });
  for (const [path, source] of Object.entries(spec.files || {})) {
    mkdirs(mp.FS, path.substring(0, path.lastIndexOf("/")));
    mp.FS.writeFile(path, source);
  }
  try {
    mp.runPython(spec.code);
  } catch (err) {
    process.stderr.write(String(err && err.message ? err.message : err) + "\n");
    process.exitCode = 1;
    return;
  }
  process.exitCode = 0;
}

main().catch((err) => {
  process.stderr.write("mp_exec runner error: " + String(err) + "\n");
  process.exitCode = 2;
});
