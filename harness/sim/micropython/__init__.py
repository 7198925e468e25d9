"""Run code in the real MicroPython interpreter (WebAssembly build under node).

``run_micropython(code, files)`` copies files into MicroPython's filesystem and
runs ``code``; it raises :class:`MicroPythonError` when the code raised inside
MicroPython. ``onboard_files()`` collects the runtime's pure modules so tests and
benchmarks can import ``onboard.*`` inside MicroPython exactly as on CPython.
"""
import json
import os
import shutil
import subprocess

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MP_EXEC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mp_exec.mjs")
MP_PACKAGE_DIR = os.path.join(REPO_ROOT, "node_modules", "@micropython",
                              "micropython-webassembly-pyscript")
MP_LIB_DIR = "/lib"       # on MicroPython's sys.path by default


class MicroPythonError(RuntimeError):
    """Code raised inside MicroPython, or the interpreter could not be started."""


def available():
    """True when node and the MicroPython npm package are installed (``make setup``)."""
    return shutil.which("node") is not None and os.path.isdir(MP_PACKAGE_DIR)


def collect_files(rel_dirs, dest_root=MP_LIB_DIR, repo_root=REPO_ROOT):
    """Map every ``.py`` under the given repo-relative directories to its path in MicroPython's FS."""
    files = {}
    for rel in rel_dirs:
        base = os.path.join(repo_root, rel)
        if os.path.isfile(base):
            with open(base) as fh:
                files[dest_root + "/" + rel] = fh.read()
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for fn in sorted(filenames):
                if fn.endswith(".py"):
                    full = os.path.join(dirpath, fn)
                    relpath = os.path.relpath(full, repo_root).replace(os.sep, "/")
                    with open(full) as fh:
                        files[dest_root + "/" + relpath] = fh.read()
    return files


def onboard_files():
    """All of ``onboard`` (modules needing numpy are simply never imported there)."""
    return collect_files(["onboard"])


def run_micropython(code, files=None, heapsize=16 * 1024 * 1024, timeout_s=300):
    """Run ``code`` in MicroPython; returns its stdout (str). Raises MicroPythonError on failure (also when it
    runs past ``timeout_s``)."""
    if not available():
        raise MicroPythonError("MicroPython is not installed: run `make setup` (needs node and npm)")
    spec = json.dumps({"files": files or {}, "code": code, "heapsize": heapsize})
    try:
        proc = subprocess.run(["node", MP_EXEC], input=spec, capture_output=True, text=True,
                              cwd=REPO_ROOT, timeout=timeout_s)
    except subprocess.TimeoutExpired:       # the interpreter is killed by then
        raise MicroPythonError("MicroPython run did not end within %g s" % timeout_s) from None
    if proc.returncode != 0:
        raise MicroPythonError("MicroPython run failed (exit %d):\n%s%s"
                               % (proc.returncode, proc.stdout[-4000:], proc.stderr[-4000:]))
    return proc.stdout
