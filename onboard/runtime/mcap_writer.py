"""The MCAP writer process of ``McapLog(path, writer_process=True)`` (CPython, Linux hosts).

``python -m onboard.runtime.mcap_writer PATH LIBRARY`` writes the MCAP file at ``PATH`` with an
inline :class:`onboard.runtime.mcap_log.McapLog`, from what the recording process sends on its
standard input: frames of a 4-byte little-endian length, a kind byte and a list of items in the order
they were logged, each ``(topic, time_us, message)`` (:meth:`McapLog.log`) or ``(topic, time_us,
schema_name, message)`` (:meth:`McapLog.log_view`). Kind ``M``: the list marshalled, a sample given as
``(topic, time_us, class number, field values)`` after its class's ``(number, (name, fields))`` (the
sample rebuilt here as a stand-in of that name and fields: the same JSON and schema); kind ``P``:
pickled. At the end of its input it closes the file, prints the CPU time (s) it spent on the file
(its start-up apart) on standard output and exits 0; a frame it cannot read or a message it cannot
write: one line on standard error, the file closed with what came before, exit 2.

So the recording process only captures and marshals (doubles as 8 bytes, no text) while the JSON
encoding, the zstd compression and the writes run on another core.
"""
import marshal
import pickle
import struct
import sys
import time

FRAME_HEAD_FMT = "<I"
FRAME_HEAD_BYTES = 4


def _read_exact(stream, n):
    """``n`` bytes from ``stream``; fewer only at the end of the input."""
    parts = []
    left = n
    while left > 0:
        chunk = stream.read(left)
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def frames(stream):
    """The item lists sent on ``stream`` (marshalled ones as sent); ValueError for a frame cut short."""
    while True:
        head = _read_exact(stream, FRAME_HEAD_BYTES)
        if not head:
            return
        if len(head) < FRAME_HEAD_BYTES:
            raise ValueError("input cut inside a frame header")
        n = struct.unpack(FRAME_HEAD_FMT, head)[0]
        body = _read_exact(stream, n)
        if len(body) < n:
            raise ValueError("input cut inside a frame (%d of %d bytes)" % (len(body), n))
        kind, body = body[:1], body[1:]
        if kind == b"M":
            yield marshal.loads(body)
        elif kind == b"P":
            yield pickle.loads(body)
        else:
            raise ValueError("unknown frame kind %r" % (kind,))


class StandIn:
    """A sample rebuilt from its class's name and fields (``FIELDS``, ``as_dict`` as in
    ``onboard.core.samples``), with the class's name, so that McapLog writes it as the original."""
    FIELDS = ()

    def as_dict(self):
        out = {}
        for name in self.FIELDS:
            v = getattr(self, name)
            out[name] = list(v) if isinstance(v, tuple) else v
        return out


def unmarshal(items, classes):
    """The items of a marshalled frame as McapLog takes them (``classes``: number -> stand-in class,
    filled from the class definitions met)."""
    out = []
    for item in items:
        if len(item) == 2:
            name, fields = item[1]
            classes[item[0]] = type(name, (StandIn,), {"FIELDS": tuple(fields)})
        elif len(item) == 4 and type(item[2]) is int:
            cls = classes[item[2]]
            msg = cls.__new__(cls)
            msg.__dict__.update(zip(cls.FIELDS, item[3]))
            out.append((item[0], item[1], msg))
        else:
            out.append(item)
    return out


def write(log, stream):
    """Write every item of the frames on ``stream`` into ``log``; returns the items written."""
    count = 0
    classes = {}
    for items in frames(stream):
        if items and type(items[0]) is not tuple:
            raise ValueError("a frame that is not a list of items")
        for item in unmarshal(items, classes):
            if len(item) == 3:
                log.log(item[0], item[1], item[2])
            else:
                log.log_view(item[0], item[1], item[2], item[3])
            count += 1
    return count


def main(argv=None):
    from onboard.runtime.mcap_log import McapLog
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m onboard.runtime.mcap_writer PATH LIBRARY", file=sys.stderr)
        return 2
    log = McapLog(args[0], library=args[1])
    started_s = time.process_time()
    try:
        write(log, sys.stdin.buffer)
        log.close()
    except Exception as exc:      # one line for the recording process; close() finished the file
        print("mcap writer: %s: %s" % (type(exc).__name__, exc), file=sys.stderr)
        try:
            log.close()
        except Exception:         # noqa: BLE001 - the line above already says what went wrong
            pass
        return 2
    print("%.6f" % (time.process_time() - started_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())
