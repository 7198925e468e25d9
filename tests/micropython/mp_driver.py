# Runs inside MicroPython (and nothing else): imports each case module named in
# CASE_MODULES (set by the caller), runs its test_* functions and golden_*
# functions, and prints one line "MPRESULT <json>" per module.
import json
import sys

sys.path.append("/cases")


def _flatten(value, out):
    if isinstance(value, (list, tuple)):
        for v in value:
            _flatten(v, out)
    elif isinstance(value, bool):
        out.append(1.0 if value else 0.0)
    else:
        out.append(float(value))
    return out


def _describe(exc):
    try:
        import io
        buf = io.StringIO()
        sys.print_exception(exc, buf)
        return buf.getvalue()
    except Exception:
        return "%s: %s" % (type(exc).__name__, exc)


for _name in CASE_MODULES:  # noqa: F821 (defined by the caller)
    _result = {"module": _name, "tests": {}, "golden": {}, "import_error": None}
    try:
        _mod = __import__(_name)
    except Exception as _exc:
        _result["import_error"] = _describe(_exc)
        print("MPRESULT " + json.dumps(_result))
        continue
    for _attr in sorted(dir(_mod)):
        _fn = getattr(_mod, _attr)
        if _attr.startswith("test_"):
            try:
                _fn()
                _result["tests"][_attr] = "ok"
            except Exception as _exc:
                _result["tests"][_attr] = _describe(_exc)
        elif _attr.startswith("golden_"):
            try:
                _result["golden"][_attr] = [repr(v) for v in _flatten(_fn(), [])]
            except Exception as _exc:
                _result["golden"][_attr] = "error: " + _describe(_exc)
    print("MPRESULT " + json.dumps(_result))
