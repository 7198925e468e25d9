"""The sweep runner: every study's seeded jobs on one engine, results in job order.

A **job** is self-contained and seeded: a scenario name + settings overrides + seed
(:func:`harness.scenario_jobs.scenario_job`), or a module-level function + its arguments (:class:`Job`). Its result
depends on nothing but the job, so the results do not depend on the engine or the worker count.

Engines (``engine=``):

- ``"local"`` (default, nothing to set up): in this process for ``workers`` <= 1 (or a single job),
  else a pool of ``workers`` forked processes on this machine;
- ``"ray"``: a Ray runtime. Without an address it starts one on this machine (loopback only, no
  dashboard, ``num_cpus=workers``) and stops it at :meth:`Runner.close`; with ``address="HOST:PORT"``
  (or the ``RAY_ADDRESS`` environment variable) it joins that cluster, whose nodes run the same
  checkout of this project (docs/sweeps.md). Ray is an optional dependency (``make setup`` installs it).

At most ``workers`` jobs are in flight at a time on either engine. :meth:`Runner.run` keeps going
when a job raises: the failure (with the job's seed and settings, the exception and its traceback)
is reported, the other jobs' results are kept. With ``out_dir`` every finished job's result is
written as it arrives (``out_dir/jobs/<key>.json``, or ``.pkl`` for results JSON cannot hold), and
``resume=True`` takes those instead of running their jobs again. :meth:`Runner.map` is the strict
form for library callers: results in order, the first failure raised.

Wall-clock figures (they vary from machine to machine; a sweep writes them to its ``run.json``):
each job's own wall time (measured in the worker), the engine's overhead per job (the round trip
from dispatch to result minus that wall time), the engine's start-up and the sweep's wall time.
"""
import concurrent.futures
import contextlib
import hashlib
import ipaddress
import json
import math
import multiprocessing
import os
import pickle
import sys
import time
import traceback

from harness.config import ConfigError
from harness.report.run_report import write_whole

ENGINES = ("local", "ray")
RAY_PIN = "ray==2.60.0"           # the optional dependency's pin (pyproject.toml, requirements.lock)


class EngineError(ConfigError):
    """The engine cannot be used (Ray not installed, no cluster at the address); one line."""


class JobFailed(RuntimeError):
    """A job raised in a worker and its exception could not be sent back as itself (``map``)."""


class Job:
    """``fn(*args)`` as one job of a sweep. ``fn`` is a module-level function (workers import it by
    name); ``info`` (JSON) says what the job is in reports (its seed and settings); ``key`` names its
    stored result (default: a digest of ``fn`` and ``args``, see :func:`job_key`)."""

    __slots__ = ("fn", "args", "info", "key")

    def __init__(self, fn, args=(), info=None, key=None):
        self.fn = fn
        self.args = tuple(args)
        self.info = dict(info) if info else {}
        self.key = key or job_key(fn, self.args)

    def __repr__(self):
        return "Job(%s, key=%s, info=%s)" % (_fn_name(self.fn), self.key, json.dumps(self.info, sort_keys=True))


def _fn_name(fn):
    return "%s:%s" % (getattr(fn, "__module__", "?"), getattr(fn, "__qualname__", repr(fn)))


def job_key(fn, args):
    """A stable name of ``fn(*args)``: the digest of the function's name and the arguments (as JSON when
    they are JSON, else pickled), the same from run to run."""
    head = _fn_name(fn)
    try:
        body = json.dumps(args, sort_keys=True, separators=(",", ":"), allow_nan=True).encode()
    except (TypeError, ValueError):
        body = pickle.dumps(args, protocol=4)
    return hashlib.sha256(head.encode() + b"\0" + body).hexdigest()[:24]


# ---------------------------------------------------------------------------------------- in a worker

def _execute(fn, args, in_process=False):
    """Run one job: ``("ok", result, wall_s)`` or ``("error", exception or None, type name, message,
    traceback text, wall_s)`` for an Exception or a SystemExit; the exception object only when it survives
    pickling (always ``in_process``)."""
    t0 = time.perf_counter()
    try:
        value = fn(*args)
    except (Exception, SystemExit) as exc:
        # reported with the job, also a job that calls sys.exit (a pool worker would hand its SystemExit to the
        # parent, which would end the sweep; on Ray the task fails): KeyboardInterrupt and kin stop the sweep
        wall = time.perf_counter() - t0
        text = traceback.format_exc()
        sent = exc
        if not in_process:
            try:
                pickle.loads(pickle.dumps(exc))
            except Exception:
                sent = None
        return ("error", sent, type(exc).__name__, str(exc), text, wall)
    return ("ok", value, time.perf_counter() - t0)


class Outcome:
    """What came back for one job: ``ok``, ``value`` or the error (``error_type``, ``message``,
    ``traceback``, ``exception``), ``wall_s`` (in the worker), ``overhead_s`` (round trip - wall),
    ``resumed`` (taken from the stored results)."""

    __slots__ = ("ok", "value", "exception", "error_type", "message", "traceback", "wall_s", "overhead_s",
                 "resumed")

    def __init__(self, raw, round_trip_s=None, resumed=False):
        self.resumed = resumed
        self.exception = self.error_type = self.message = self.traceback = None
        self.value = None
        if raw[0] == "ok":
            self.ok, self.value, self.wall_s = True, raw[1], raw[2]
        else:
            self.ok = False
            self.exception, self.error_type, self.message, self.traceback, self.wall_s = raw[1:]
        self.overhead_s = max(0.0, round_trip_s - self.wall_s) if round_trip_s is not None else 0.0


# ----------------------------------------------------------------------------------------------- engines

def _fork_context():
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else "spawn")


class InlineEngine:
    """Jobs one after the other in this process."""

    name = "local"

    def __init__(self):
        self.workers = 1
        self.startup_s = 0.0

    def outcomes(self, indexed_jobs):
        for index, job in indexed_jobs:
            t0 = time.perf_counter()
            raw = _execute(job.fn, job.args, in_process=True)
            yield index, Outcome(raw, time.perf_counter() - t0)

    def close(self):
        pass


class PoolEngine:
    """Up to ``workers`` jobs at a time in forked worker processes (one pool per call).

    A worker that dies (killed, out of memory, a crash in C) breaks the whole pool, and every job then in
    flight with it: the pool is replaced, the jobs that were in flight run again one at a time (in job
    order), and only a job that breaks the pool while alone is reported failed (``BrokenProcessPool``), so
    which jobs fail does not depend on the worker count."""

    name = "local"

    def __init__(self, workers):
        self.workers = int(workers)
        self.startup_s = 0.0

    def _pool(self, jobs):
        t0 = time.perf_counter()
        pool = concurrent.futures.ProcessPoolExecutor(max_workers=max(1, min(self.workers, jobs)),
                                                      mp_context=_fork_context(), initializer=_worker_signals)
        self.startup_s += time.perf_counter() - t0
        return pool

    def outcomes(self, indexed_jobs):
        pending = list(indexed_jobs)
        pool = self._pool(len(pending))
        in_flight = {}                 # future -> (index, job, dispatch time, alone)
        suspects = []                  # (index, job) in flight when a worker died: each runs again alone
        broken = False
        pending.reverse()
        clean = False
        try:
            while pending or in_flight or suspects:
                if broken and not in_flight:               # every future of the broken pool is back
                    pool.shutdown(wait=True, cancel_futures=True)
                    pool = self._pool(len(pending) + len(suspects))
                    broken = False
                while not broken and (suspects or pending):
                    alone = bool(suspects)
                    if len(in_flight) >= (1 if alone else self.workers):
                        break
                    index, job = suspects.pop(0) if alone else pending.pop()
                    try:
                        future = pool.submit(_execute, job.fn, job.args)
                    except concurrent.futures.process.BrokenProcessPool:     # broke before its future said so
                        broken = True
                        if alone:
                            suspects.insert(0, (index, job))
                        else:
                            pending.append((index, job))
                        break
                    in_flight[future] = (index, job, time.perf_counter(), alone)
                done, _ = concurrent.futures.wait(in_flight, return_when=concurrent.futures.FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: in_flight[f][0]):
                    index, job, sent, alone = in_flight.pop(future)
                    try:
                        raw = future.result()
                    except concurrent.futures.process.BrokenProcessPool as exc:
                        broken = True
                        if not alone:                      # it or another job in flight killed the pool
                            suspects.append((index, job))
                            continue
                        raw = ("error", None, "BrokenProcessPool", "a worker process died (killed, out of "
                               "memory or crashed): %s" % exc, "", 0.0)
                    except Exception as exc:             # the result could not come back (not picklable)
                        raw = ("error", None, type(exc).__name__, str(exc), traceback.format_exc(), 0.0)
                    yield index, Outcome(raw, time.perf_counter() - sent)
                suspects.sort(key=_first_item)
            clean = True
        finally:
            if not clean:                          # stopped early (an error in strict mode, Ctrl-C, a kill)
                _stop_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)

    def close(self):
        pass


def _first_item(pair):
    return pair[0]


def _worker_signals():
    """In a pool worker: SIGTERM ends it at once (not the parent's handler inherited through the fork) and
    Ctrl-C, which a terminal sends to the whole process group, is left to the parent (it stops the workers)."""
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _stop_workers(pool):
    """Terminate a process pool's workers now. A worker terminated while it wrote its result leaves half a
    message in the result pipe, and the pool's manager thread would wait for the rest for ever (its read never
    sees EOF while this process holds the pipe's write end): once every worker is gone, close that end too."""
    processes = list(getattr(pool, "_processes", {}).values())
    for process in processes:
        process.terminate()
    for process in processes:
        process.join(timeout=10.0)
        if process.is_alive():
            process.kill()
            process.join(timeout=10.0)
    writer = getattr(getattr(pool, "_result_queue", None), "_writer", None)
    if writer is not None:
        writer.close()


def _ray_address(address):
    return address or os.environ.get("RAY_ADDRESS") or None


class RayEngine:
    """Jobs as Ray tasks (one CPU each), at most ``workers`` in flight. Starts a local runtime on the
    loopback interface (``num_cpus=workers``) unless ``address`` (or ``RAY_ADDRESS``) names a cluster, or
    Ray is already initialised in this process (then it is used as it is and left running)."""

    name = "ray"

    def __init__(self, workers=None, address=None):
        try:
            import ray
        except ImportError:
            raise EngineError("the ray engine needs Ray: .venv/bin/pip install %s (`make setup` installs it)"
                              % RAY_PIN)
        self.ray = ray
        self.address = _ray_address(address)
        self.started = False
        t0 = time.perf_counter()
        if not ray.is_initialized():
            if self.address:
                loopback = _is_loopback(self.address)
                if self.address != "auto":             # "auto": the runtime `ray start` left on this machine
                    _check_reachable(self.address)
                if loopback:
                    _token_auth_if_token()
                try:
                    with _loopback(loopback):
                        ray.init(address=self.address)
                except Exception as exc:
                    hint = "" if loopback or "RAY_AUTH_MODE" in os.environ else (
                        " (a cluster with token authentication needs RAY_AUTH_MODE=token and its token in "
                        "~/.ray/auth_token or RAY_AUTH_TOKEN: docs/sweeps.md)")
                    raise EngineError("cannot join the Ray cluster at %s: %s%s" % (
                        self.address, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__,
                        hint))
            else:
                start_local_ray(workers or os.cpu_count() or 1)
            self.started = True
        elif self.address and self.address != "auto" and self.address.split("://")[-1] != self.where:
            raise EngineError("Ray is already running in this process on %s, not %s" % (self.where, self.address))
        self.startup_s = time.perf_counter() - t0
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = int(workers) if workers else max(1, cpus)
        # a job's own exception comes back as its result; Ray retries (3 times) only a task whose worker or
        # node died, which the job's seeding makes safe
        self._task = ray.remote(num_cpus=1)(_execute)

    @property
    def where(self):
        """The cluster's GCS address (``127.0.0.1:PORT`` for the local runtime)."""
        return self.ray.get_runtime_context().gcs_address

    def outcomes(self, indexed_jobs):
        ray = self.ray
        pending = list(indexed_jobs)
        pending.reverse()
        in_flight = {}
        clean = False
        try:
            while pending or in_flight:
                while pending and len(in_flight) < self.workers:
                    index, job = pending.pop()
                    in_flight[self._task.remote(job.fn, job.args)] = (index, time.perf_counter())
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    index, sent = in_flight.pop(ref)
                    try:
                        raw = ray.get(ref)
                    except Exception as exc:          # the task itself died (worker killed, node lost)
                        raw = ("error", None, type(exc).__name__, str(exc).strip().splitlines()[0]
                               if str(exc).strip() else "the Ray task failed", str(exc), 0.0)
                    yield index, Outcome(raw, time.perf_counter() - sent)
            clean = True
        finally:
            if not clean:
                for ref in in_flight:
                    try:
                        ray.cancel(ref, force=True)
                    except Exception:
                        pass

    def close(self):
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self.started = False


def start_local_ray(num_cpus, **kwargs):
    """Start a Ray runtime on this machine for ``num_cpus`` parallel jobs: every Ray process listens on
    the loopback interface only (127.0.0.1: the node is registered at that address, which Ray's servers
    then bind to), no dashboard, and its workers import this checkout (its root on their PYTHONPATH).
    ``kwargs`` go to ``ray.init``. Returns the GCS address."""
    import ray

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    saved_path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([root] + ([saved_path] if saved_path else []))
    try:
        with _loopback(True):
            # "local": a new runtime, even where `ray start` left one running on this machine
            ray.init(address="local", num_cpus=int(num_cpus), include_dashboard=False, _node_ip_address="127.0.0.1",
                     **kwargs)
    finally:
        if saved_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved_path
    return ray.get_runtime_context().gcs_address


def _check_reachable(address, timeout_s=10.0):
    """EngineError (one line) unless something listens at ``HOST:PORT`` (Ray itself retries for minutes); a PORT
    that is no integer in 1..65535 is refused as no address."""
    import socket
    host, _, port = address.split("://")[-1].rpartition(":")
    try:
        port = int(port)
        if not 1 <= port <= 65535:
            raise ValueError(port)
    except ValueError:
        raise EngineError("--address expects HOST:PORT (the head node's GCS port, 6379 by default), got %r"
                          % address)
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", port), timeout=timeout_s).close()
    except OSError as exc:
        raise EngineError("no Ray cluster at %s: %s (is `ray start --head` running there?)"
                          % (address, exc.strerror or exc))


def _token_auth_if_token():
    """A driver joining a runtime on this machine sends Ray's authentication token when it has one
    (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH`` or ``~/.ray/auth_token``, the token a local runtime writes)
    and ``RAY_AUTH_MODE`` is not set, as Ray does for a runtime it finds by itself. Ray never sends it to an
    explicit remote address unasked: for a cluster, set ``RAY_AUTH_MODE=token`` (docs/sweeps.md)."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available)
    except ImportError:
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _is_loopback(address):
    """Whether a Ray address (``host:port``, ``ray://host:port``, ``[::1]:port``) names this machine's loopback:
    ``localhost`` or a loopback IP address; a host *name* beginning with "127." (``127.0.0.1.nip.io``) can
    resolve anywhere, so it is not."""
    rest = address.split("://")[-1]
    host = rest[1:rest.index("]")] if rest.startswith("[") and "]" in rest else rest.rsplit(":", 1)[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def _loopback(active):
    """While ``active``: Ray keeps 127.0.0.1 as this node's address (on Linux, where clusters are enabled,
    it resolves the loopback address to the machine's outward one), for a runtime that is one machine's
    own and for a driver joining it."""
    if not active:
        yield
        return
    from ray._private import ray_constants
    saved = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved


# ------------------------------------------------------------------------------------------------ store

def _stored_wall(record):
    """A stored record's ``wall_s`` (s), or None where it holds no finite number >= 0."""
    wall = record.get("wall_s")
    if isinstance(wall, (int, float)) and not isinstance(wall, bool) and math.isfinite(wall) and wall >= 0:
        return float(wall)
    return None


class ResultStore:
    """Finished jobs' results under ``out_dir/jobs/``: ``<key>.json`` ({key, info, result, wall_s}) or,
    for a result JSON cannot hold, ``<key>.pkl``; each written whole (a temporary file renamed), so a
    sweep killed at any moment leaves only complete results."""

    def __init__(self, out_dir):
        self.dir = os.path.join(out_dir, "jobs")
        try:
            os.makedirs(self.dir, exist_ok=True)
        except OSError as exc:
            raise ConfigError("cannot write the sweep folder %s: %s" % (out_dir, exc.strerror or exc))

    def load(self, key):
        """``(True, result, wall_s)`` of a stored job, else ``(False, None, None)``: a file that holds no stored
        job (not a record table with its ``result``; not readable, e.g. edited by hand) counts as none, so the
        job runs again. ``wall_s`` is None where the record gives no number."""
        path = os.path.join(self.dir, key + ".json")
        try:
            with open(path) as fh:
                record = json.load(fh)
            if isinstance(record, dict) and "result" in record:
                return True, record["result"], _stored_wall(record)
        except (OSError, ValueError, RecursionError):
            pass
        try:
            with open(os.path.join(self.dir, key + ".pkl"), "rb") as fh:
                record = pickle.load(fh)
        except Exception:             # noqa: BLE001 - a damaged pickle raises nearly anything
            return False, None, None
        if isinstance(record, dict) and "result" in record:
            return True, record["result"], _stored_wall(record)
        return False, None, None

    def save(self, job, value, wall_s):
        """Store a finished job's result; returns the value as a resumed sweep reads it back (JSON's
        lists for tuples), so a resumed and an uninterrupted sweep give identical results. A result with a NaN
        or an infinity (no JSON number) is pickled, so every ``.json`` record is standard JSON."""
        record = {"key": job.key, "info": job.info, "result": value, "wall_s": round(wall_s, 6)}
        try:
            text = json.dumps(record, allow_nan=False)
            value = json.loads(text)["result"]
            name, data = job.key + ".json", text + "\n"
        except (TypeError, ValueError):
            try:
                name, data = job.key + ".pkl", pickle.dumps(record, protocol=4)
            except Exception:                # neither JSON nor picklable: kept in memory only
                return value
        write_whole(os.path.join(self.dir, name), data)
        return value


# ----------------------------------------------------------------------------------------------- runner

class SweepResult:
    """``results`` in job order (None for a failed job), ``failures`` (dicts: index, key, info, error,
    message, traceback), ``outcomes`` (:class:`Outcome` per job) and ``timing`` (run.json)."""

    def __init__(self, jobs, outcomes, timing):
        self.jobs = jobs
        self.outcomes = outcomes
        self.results = [o.value if o is not None and o.ok else None for o in outcomes]
        self.failures = [failure_record(i, job, o) for i, (job, o) in enumerate(zip(jobs, outcomes))
                         if o is not None and not o.ok]
        self.timing = timing

    @property
    def ok(self):
        return not self.failures and all(o is not None for o in self.outcomes)


def failure_record(index, job, outcome):
    """What a failed job reports: its place, key, seed and settings (``info``) and the error."""
    return {"index": index, "key": job.key, "info": job.info, "error": outcome.error_type,
            "message": outcome.message, "traceback": outcome.traceback}


def describe_failure(record):
    """One line: ``seed 3, settings {...}: ConfigError: ...``."""
    info = dict(record["info"])
    seed = info.pop("seed", None)
    what = ("seed %s, " % seed if seed is not None else "") + ", ".join(
        "%s %s" % (k, json.dumps(v, sort_keys=True)) for k, v in sorted(info.items()))
    return "job %d (%s): %s: %s" % (record["index"], what or record["key"], record["error"], record["message"])


def _progress(total, desc, enabled, initial=0):
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=desc, unit="job", file=sys.stderr, disable=not enabled,
                mininterval=0.5, leave=False, dynamic_ncols=True,
                bar_format="{desc}: {percentage:3.0f}%|{bar:30}| {n_fmt}/{total_fmt} jobs done{postfix} "
                           "[{elapsed}<{remaining}]")


class Runner:
    """One engine for a study's calls (a Ray runtime starts once and stops at :meth:`close`; use as a
    context manager). ``workers``: jobs at a time (default: 1 locally, every CPU of a Ray cluster);
    ``engine``: ``"local"`` or ``"ray"``; ``address``: the Ray cluster to join (default
    ``$RAY_ADDRESS``; none: a local Ray runtime)."""

    def __init__(self, engine="local", workers=None, address=None):
        if engine not in ENGINES:
            raise EngineError("unknown engine %r (one of %s)" % (engine, ", ".join(ENGINES)))
        if engine == "local" and address:
            raise EngineError("--address names a Ray cluster: use it with --engine ray")
        if workers is not None and int(workers) < 1:
            raise EngineError("workers must be >= 1, got %r" % (workers,))
        self.engine_name = engine
        self.address = address
        self.workers = workers
        self._ray = None

    def _engine(self, n_jobs):
        if self.engine_name == "ray":
            if self._ray is None:
                self._ray = RayEngine(self.workers, self.address)
            return self._ray
        workers = int(self.workers or 1)
        return InlineEngine() if workers <= 1 or n_jobs <= 1 else PoolEngine(workers)

    def close(self):
        if self._ray is not None:
            self._ray.close()
            self._ray = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def worker_count(self):
        """Jobs at a time: ``workers``, or every CPU of the Ray cluster (starts the engine)."""
        if self.engine_name == "ray":
            return self._engine(0).workers
        return int(self.workers or 1)

    def describe(self):
        """``{"engine", "workers", "address"}`` of this runner (``address``: the Ray cluster's GCS address,
        ``127.0.0.1:PORT`` for a local runtime; None for the local engine)."""
        if self.engine_name == "ray":
            engine = self._engine(0)
            return {"engine": "ray", "workers": engine.workers, "address": engine.where}
        return {"engine": "local", "workers": int(self.workers or 1), "address": None}

    def map(self, fn, arg_tuples):
        """Yield ``fn(*args)`` for each of ``arg_tuples`` in their order (strict: the first job that raises
        stops the others and its exception is raised here, as from a plain loop)."""
        jobs = [Job(fn, args, key="%d" % i) for i, args in enumerate(arg_tuples)]
        engine = self._engine(len(jobs))
        ready = {}
        next_index = 0
        outcomes = engine.outcomes(list(enumerate(jobs)))
        try:
            for index, outcome in outcomes:
                ready[index] = outcome
                while next_index in ready:
                    outcome = ready.pop(next_index)
                    if not outcome.ok:
                        raise _as_exception(jobs[next_index], outcome)
                    yield outcome.value
                    next_index += 1
        finally:
            outcomes.close()
            if engine is not self._ray:
                engine.close()

    def run(self, jobs, out_dir=None, resume=False, show_progress=False, desc="sweep", on_outcome=None):
        """Run every job (a failure does not stop the others); returns a :class:`SweepResult`.

        ``out_dir``: each finished job's result is stored there as it arrives (:class:`ResultStore`);
        ``resume``: jobs whose results are stored there are not run again. ``on_outcome(index, job,
        outcome)`` is called as each job finishes (in completion order)."""
        jobs = list(jobs)
        keys = [job.key for job in jobs]
        if len(set(keys)) != len(keys):
            raise ValueError("two jobs of the sweep have the same key (the same job twice?)")
        t0 = time.perf_counter()
        store = ResultStore(out_dir) if out_dir else None
        outcomes = [None] * len(jobs)
        todo = []
        for index, job in enumerate(jobs):
            found, value, wall_s = store.load(job.key) if (store and resume) else (False, None, None)
            if found:
                outcomes[index] = Outcome(("ok", value, wall_s or 0.0), resumed=True)
            else:
                todo.append((index, job))
        resumed = len(jobs) - len(todo)
        engine = self._engine(len(todo)) if todo else None
        bar = _progress(len(jobs), desc, show_progress, initial=resumed)
        failed = 0
        try:
            if engine is not None:
                stream = engine.outcomes(todo)
                try:
                    for index, outcome in stream:
                        job = jobs[index]
                        if outcome.ok and store is not None:
                            outcome.value = store.save(job, outcome.value, outcome.wall_s)
                        outcomes[index] = outcome
                        if not outcome.ok:
                            failed += 1
                            bar.set_postfix_str("%d failed" % failed, refresh=False)     # shown as ", N failed"
                        bar.update(1)
                        if on_outcome is not None:
                            on_outcome(index, job, outcome)
                finally:
                    stream.close()
        finally:
            bar.close()
            if engine is not None and engine is not self._ray:
                engine.close()
        timing = self._timing(jobs, outcomes, engine, time.perf_counter() - t0)
        return SweepResult(jobs, outcomes, timing)

    def _timing(self, jobs, outcomes, engine, wall_s):
        ran = [o for o in outcomes if o is not None and not o.resumed]
        walls = [o.wall_s for o in ran]
        overheads = [o.overhead_s for o in ran]
        info = self.describe() if (engine is not None or self.engine_name == "local") else {
            "engine": "ray", "workers": self.workers, "address": self.address}
        total_wall = sum(walls)
        return dict(info, jobs=len(jobs), ran=len(ran), resumed=sum(1 for o in outcomes if o is not None and o.resumed),
                    failed=sum(1 for o in ran if not o.ok),
                    startup_s=round(engine.startup_s, 4) if engine is not None else 0.0,
                    wall_s=round(wall_s, 4),
                    job_wall_s=_stats(walls), overhead_s=_stats(overheads),
                    overhead_fraction=round(sum(overheads) / total_wall, 5) if total_wall > 0 else None,
                    per_job=[{"index": i, "key": job.key, "seed": job.info.get("seed"),
                              "status": ("resumed" if o.resumed else "ok" if o.ok else "failed") if o else "not run",
                              "wall_s": round(o.wall_s, 4) if o else None,
                              "overhead_s": round(o.overhead_s, 4) if o and not o.resumed else None}
                             for i, (job, o) in enumerate(zip(jobs, outcomes))])


def _stats(values):
    if not values:
        return {"total": 0.0, "mean": None, "min": None, "max": None}
    return {"total": round(sum(values), 4), "mean": round(sum(values) / len(values), 5),
            "min": round(min(values), 5), "max": round(max(values), 5)}


def _as_exception(job, outcome):
    """The job's own exception (with the worker's traceback as a note), or :class:`JobFailed`."""
    exc = outcome.exception
    if exc is None:
        return JobFailed("%s: %s: %s\n%s" % (job, outcome.error_type, outcome.message, outcome.traceback or ""))
    if outcome.traceback and getattr(exc, "__traceback__", None) is None and hasattr(exc, "add_note"):
        exc.add_note("in the worker:\n" + outcome.traceback.rstrip())
    return exc


def map_ordered(fn, arg_tuples, workers=1, engine="local", address=None, runner=None):
    """Yield ``fn(*args)`` for each of ``arg_tuples`` in order, on ``runner`` (a :class:`Runner`, kept
    open) or on a runner of ``engine``/``workers``/``address`` made for this call."""
    if runner is not None:
        yield from runner.map(fn, arg_tuples)
        return
    with Runner(engine, workers, address) as own:
        yield from own.map(fn, arg_tuples)


# ------------------------------------------------------------------------------------ command-line bits

def add_engine_arguments(parser, workers_help=None):
    """``--engine``, ``--address`` (and ``--workers`` when ``workers_help`` is given) for a study's parser."""
    from harness.config import positive_int
    if workers_help is not None:
        parser.add_argument("--workers", type=positive_int, default=None, help=workers_help)
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="local: this machine's processes (default); ray: a Ray runtime (a local one, or "
                             "the cluster at --address / $RAY_ADDRESS); the results do not depend on it")
    parser.add_argument("--address", metavar="HOST:PORT", default=None,
                        help="with --engine ray: join the Ray cluster there (default: $RAY_ADDRESS, else "
                             "start a local runtime)")


def runner_from_args(args):
    """The :class:`Runner` of a study's ``--engine``, ``--workers`` and ``--address``."""
    return Runner(getattr(args, "engine", "local"), getattr(args, "workers", None), getattr(args, "address", None))
