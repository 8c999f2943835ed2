"""Runs: starting or attaching to one, logging into it, ending it; the active-run stack.

A `Run` is either *owned* (this process created it and ends it) or *attached* (it was created
by `cairn run`, which passes its id in CAIRN_RUN_ID / MLFLOW_RUN_ID and ends it from the
command's exit code; this process only logs into it). An attached run need not be on the
server yet: when the server was unreachable as `cairn run` started, the wrapper chose the id
itself and creates the run once the server is back, and until then what is logged waits in
the queue (see `start_run`). The module-level functions in
`cairn/__init__.py` act on the innermost active run and start one when there is none, as
MLflow's fluent API does.

At interpreter exit every run still active is flushed, and owned runs are ended: FINISHED,
or FAILED (KILLED for KeyboardInterrupt) when the program ended with an uncaught exception.
A forked child that exits normally only flushes what it logged; the parent ends the run.
"""

import atexit
import errno
import getpass
import mimetypes
import os
import sys
import threading
import time
import urllib.parse

from . import _data
from ._batch import Batcher
from ._http import CairnError, Transport

API = "/api/2.0/mlflow/"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts/"
DEFAULT_TRACKING_URI = "http://127.0.0.1:5000"
DEFAULT_EXPERIMENT_ID = "0"
END_STATUSES = ("FINISHED", "FAILED", "KILLED")

_stack = []                  # active runs, innermost last
_stack_lock = threading.RLock()
_transports = {}
_hooks_installed = False
_uncaught = None             # type of the exception that is ending the program, if any


def _now_ms():
    return int(time.time() * 1000)


def resolve_tracking_uri(tracking_uri=None):
    """The argument, else $CAIRN_TRACKING_URI, else $MLFLOW_TRACKING_URI, else the default."""
    return (tracking_uri or os.environ.get("CAIRN_TRACKING_URI")
            or os.environ.get("MLFLOW_TRACKING_URI") or DEFAULT_TRACKING_URI)


def _transport(tracking_uri):
    uri = resolve_tracking_uri(tracking_uri).rstrip("/")
    with _stack_lock:
        t = _transports.get(uri)
        if t is None:
            t = _transports[uri] = Transport(uri)
        return t


def _flush_interval():
    """Seconds between background sends: $CAIRN_FLUSH_INTERVAL, default 1."""
    raw = os.environ.get("CAIRN_FLUSH_INTERVAL", "").strip()
    try:
        value = float(raw) if raw else 1.0
        if not value > 0:
            raise ValueError
    except ValueError:
        raise CairnError("CAIRN_FLUSH_INTERVAL must be a positive number of seconds, got %r"
                         % raw, "INVALID_PARAMETER_VALUE")
    return value


MAX_KEY_LENGTH = 250
MAX_PARAM_VALUE_LENGTH = 6000
MAX_TAG_VALUE_LENGTH = 8000
_KEY_PUNCTUATION = frozenset("_-. :/")
_valid_keys = set()  # keys already checked (metric keys repeat on every call)


def _check_key(kind, key):
    """MLflow's rules for metric, param and tag names, checked before anything is queued."""
    if isinstance(key, str) and key in _valid_keys:
        return key

    def invalid(why):
        return CairnError("Invalid %s name: %r. %s" % (kind, key, why), "INVALID_PARAMETER_VALUE")

    if not isinstance(key, str) or not key:
        raise CairnError("%s name must be a non-empty string, got %r" % (kind, key),
                         "INVALID_PARAMETER_VALUE")
    if len(key) > MAX_KEY_LENGTH:
        raise invalid("Names may be at most %d characters long." % MAX_KEY_LENGTH)
    for c in key:
        if not (c in _KEY_PUNCTUATION or ord(c) >= 0x80 or (c.isascii() and c.isalnum())):
            raise invalid("Names may only contain alphanumerics, underscores (_), dashes (-), "
                          "periods (.), spaces ( ), colons (:) and slashes (/).")
    if any(seg in ("", ".", "..") for seg in key.split("/")):
        raise invalid("Names must not resolve to other names when treated as file paths.")
    if len(_valid_keys) < 100000:
        _valid_keys.add(key)
    return key


def _check_value(kind, key, value, limit):
    value = str(value)
    if len(value) > limit:
        raise CairnError("%s value %r... for key %r had length %d, which exceeded length limit "
                         "of %d" % (kind, value[:40], key, len(value), limit),
                         "INVALID_PARAMETER_VALUE")
    return value


def _metric_value(key, value):
    if isinstance(value, (str, bytes)):
        raise CairnError("metric %r: value %r is not a number" % (key, value),
                         "INVALID_PARAMETER_VALUE")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise CairnError("metric %r: value %r is not a number" % (key, value),
                         "INVALID_PARAMETER_VALUE")


def _int(what, value):
    try:
        if isinstance(value, float) and not value.is_integer():
            raise ValueError
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise CairnError("%s must be an integer, got %r" % (what, value), "INVALID_PARAMETER_VALUE")


class Run:
    """One tracking run. Also a context manager: leaving the block ends an owned run FINISHED,
    FAILED when an exception escapes it (KILLED for KeyboardInterrupt); the exception
    propagates. An attached run is only flushed.

    Attributes: run_id, experiment_id, artifact_uri, tracking_uri, attached (bool),
    info (the run_info dict the server returned), status. An attached run that was not on the
    server at start has only what the environment tells (no artifact_uri) until an artifact
    upload fetches the rest.
    """

    def __init__(self, transport, info, attached, flush_interval=1.0):
        self._transport = transport
        self.info = info
        self.run_id = info["run_id"]
        self.experiment_id = info.get("experiment_id")
        self.artifact_uri = info.get("artifact_uri", "")
        self.tracking_uri = transport.uri
        self.attached = attached
        self.status = info.get("status", "RUNNING")
        self._batcher = Batcher(transport, self.run_id, flush_interval,
                                run_may_be_missing=attached)
        self._params = {}
        self._lock = threading.Lock()
        self._ended = False
        self._pid = os.getpid()

    def __repr__(self):
        return "<cairn.Run %s %s%s>" % (self.run_id, self.status,
                                       " attached" if self.attached else "")

    # -- logging ------------------------------------------------------------------------------

    def log_metric(self, key, value, step=None, timestamp=None):
        """Queue one metric point (step defaults to 0, timestamp to now in ms)."""
        _check_key("metric", key)
        point = (key, _metric_value(key, value),
                 _now_ms() if timestamp is None else _int("timestamp", timestamp),
                 0 if step is None else _int("step", step))
        self._add(metrics=(point,))

    def log_metrics(self, metrics, step=None, timestamp=None):
        """Queue several metrics sharing one step and timestamp."""
        ts = _now_ms() if timestamp is None else _int("timestamp", timestamp)
        st = 0 if step is None else _int("step", step)
        points = [(_check_key("metric", k), _metric_value(k, v), ts, st)
                  for k, v in dict(metrics).items()]
        self._add(metrics=points)

    def log_param(self, key, value):
        self.log_params({key: value})

    def log_params(self, params):
        """Queue params (values become strings). Logging a key again with the same value does
        nothing; with a different value raises CairnError, as the server would."""
        new = []
        with self._lock:
            for k, v in dict(params).items():
                _check_key("param", k)
                v = _check_value("Param", k, v, MAX_PARAM_VALUE_LENGTH)
                old = self._params.get(k)
                if old is None:
                    new.append((k, v))
                elif old != v:
                    raise CairnError(
                        "Changing param values is not allowed. Param with key=%r was already "
                        "logged with value=%r for run ID=%r. Attempted logging new value %r."
                        % (k, old, self.run_id, v), "INVALID_PARAMETER_VALUE")
            for k, v in new:
                self._params[k] = v
        if new:
            self._add(params=new)

    def set_tag(self, key, value):
        self.set_tags({key: value})

    def set_tags(self, tags):
        """Queue tags (values become strings); a later value for a key replaces an earlier one."""
        self._add(tags=[(_check_key("tag", k), _check_value("Tag", k, v, MAX_TAG_VALUE_LENGTH))
                        for k, v in dict(tags).items()])

    def _add(self, metrics=(), params=(), tags=()):
        self._batcher.add(metrics, params, tags)
        if self._ended:
            self._batcher.flush()  # no sender thread after the end: deliver right away

    def flush(self):
        """Send everything queued for this run and wait for the server to acknowledge it."""
        self._batcher.flush()

    # -- artifacts ----------------------------------------------------------------------------

    def _artifact_root(self):
        if not self.artifact_uri:
            self._fetch_info()  # attached to a run that was not on the server yet
        parts = urllib.parse.urlsplit(self.artifact_uri)
        if parts.scheme != "mlflow-artifacts":
            raise CairnError("run %s stores artifacts at %r, which is not served through the "
                             "tracking server's mlflow-artifacts proxy" % (self.run_id,
                                                                          self.artifact_uri),
                             "INVALID_PARAMETER_VALUE")
        return parts.path.strip("/")

    def _fetch_info(self):
        try:
            info = self._transport.call("GET", API + "runs/get",
                                        query={"run_id": self.run_id})["run"]["info"]
        except CairnError as e:
            if e.error_code != "RESOURCE_DOES_NOT_EXIST":
                raise
            raise CairnError("run %s is not on the tracking server yet: its wrapper creates it "
                             "once the server is reachable" % self.run_id, e.error_code,
                             e.status, True)
        self.info = info
        self.experiment_id = info.get("experiment_id", self.experiment_id)
        self.artifact_uri = info.get("artifact_uri", "")

    def log_artifact(self, local_path, artifact_path=None):
        """Upload one file to <artifact_path>/<its basename> in the run's artifacts, streamed
        from disk. A missing file or a directory raises OSError; the server's errors CairnError
        (retryable, RESOURCE_DOES_NOT_EXIST, when an attached run is not on the server yet)."""
        if os.path.isdir(local_path):
            raise IsADirectoryError(errno.EISDIR, "use log_artifacts for a directory", local_path)
        name = os.path.basename(local_path)
        dest = "/".join(p for p in (self._artifact_root(), (artifact_path or "").strip("/"),
                                    name) if p)
        ctype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        self._transport.upload(ARTIFACTS_API + urllib.parse.quote(dest, safe="/"), local_path,
                               ctype)

    def log_artifacts(self, local_dir, artifact_path=None):
        """Upload every file under `local_dir`, keeping the layout, under `artifact_path`."""
        base = (artifact_path or "").strip("/")
        for root, dirs, files in os.walk(local_dir):
            dirs.sort()
            rel = os.path.relpath(root, local_dir)
            sub = "" if rel == "." else rel.replace(os.sep, "/")
            for name in sorted(files):
                self.log_artifact(os.path.join(root, name),
                                  "/".join(p for p in (base, sub) if p) or None)

    def log_input(self, dataset_name, version=None, context=None):
        """Record that this run used version `version` of dataset `dataset_name` (the latest
        when None; the exact number is what is recorded), as `cairn run --data` does. `context`
        ("training", "evaluation", ...) becomes the input's mlflow.data.context tag. Returns
        the version record."""
        v = _data.get_version(self._transport, dataset_name, version)
        self._transport.call("POST", API + "runs/log-inputs",
                             {"run_id": self.run_id, "datasets": [_data.input_record(v, context)]})
        return v

    # -- ending -------------------------------------------------------------------------------

    def end_run(self, status="FINISHED"):
        """Flush, then end the run with `status` (an attached run is flushed, not ended: its
        wrapper ends it). Ending twice does nothing. Raises CairnError for data the server
        rejected or that could not be delivered (after trying to end the run)."""
        if status not in END_STATUSES:
            raise CairnError("status must be one of %s, got %r" % (", ".join(END_STATUSES),
                                                                   status),
                             "INVALID_PARAMETER_VALUE")
        with self._lock:
            if self._ended:
                return
            self._ended = True
        with _stack_lock:
            if self in _stack:
                _stack.remove(self)
        error = None
        try:
            self._batcher.close()
        except CairnError as e:
            error = e
        if not self.attached:
            reply = self._transport.call("POST", API + "runs/update", {
                "run_id": self.run_id, "run_uuid": self.run_id, "status": status,
                "end_time": _now_ms()})
            self.status = status
            self.info = reply.get("run_info", self.info)
        if error is not None:
            raise error

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            status = "FINISHED"
        elif issubclass(exc_type, KeyboardInterrupt):
            status = "KILLED"
        elif issubclass(exc_type, SystemExit) and exc.code in (None, 0):
            status = "FINISHED"
        else:
            status = "FAILED"
        if exc_type is None:
            self.end_run(status)
            return False
        try:
            self.end_run(status)
        except Exception as e:  # do not hide the exception that is already propagating
            print("cairn: while ending run %s: %s" % (self.run_id, e), file=sys.stderr)
        return False


# -- starting -----------------------------------------------------------------------------------


def _experiment_id(transport, name):
    """Id of the experiment called `name`, created when missing."""
    def lookup():
        try:
            exp = transport.call("GET", API + "experiments/get-by-name",
                                 query={"experiment_name": name})["experiment"]
        except CairnError as e:
            if e.error_code == "RESOURCE_DOES_NOT_EXIST":
                return None
            raise
        if exp.get("lifecycle_stage") == "deleted":
            raise CairnError("experiment %r is deleted; restore it or use another name" % name,
                             "INVALID_PARAMETER_VALUE")
        return exp["experiment_id"]

    found = lookup()
    if found is not None:
        return found
    try:
        return transport.call("POST", API + "experiments/create", {"name": name})["experiment_id"]
    except CairnError as e:
        if e.error_code != "RESOURCE_ALREADY_EXISTS":
            raise
    found = lookup()  # another process created it between our lookup and create
    if found is None:
        raise CairnError("experiment %r exists but cannot be found by name" % name,
                         "RESOURCE_DOES_NOT_EXIST")
    return found


def _wrapper_run_info(transport, run_id):
    """run_info of the run `cairn run` passed on; None when the server cannot be reached or
    does not have the run yet. One attempt: the command must not wait for the server."""
    try:
        return transport.call("GET", API + "runs/get", query={"run_id": run_id},
                              retries=0)["run"]["info"]
    except CairnError as e:
        if e.retryable or e.error_code == "RESOURCE_DOES_NOT_EXIST":
            print("cairn: run %s cannot be found on the tracking server yet (%s); attaching "
                  "to it anyway: what is logged waits in the queue until the run is there"
                  % (run_id, e), file=sys.stderr)
            return None
        raise


def _user():
    try:
        return getpass.getuser()
    except Exception:  # no user name in the environment or the password database
        return "unknown"


def _source_name():
    main = sys.argv[0] if sys.argv else ""
    if main in ("", "-c"):
        return "<console>"
    return os.path.abspath(main)


def start_run(experiment=None, name=None, params=None, tags=None, tracking_uri=None,
              experiment_id=None, nested=False):
    """Start a run (or attach to the one `cairn run` passes on) and make it the active run.

    experiment: an experiment name, created when missing (default: $MLFLOW_EXPERIMENT_ID,
        $MLFLOW_EXPERIMENT_NAME, else experiment "0"); experiment_id picks one by id.
    name: the run name (the server makes one up when omitted).
    params, tags: dicts logged before this returns; their errors are raised here.
    tracking_uri: the server; default $CAIRN_TRACKING_URI, $MLFLOW_TRACKING_URI, then
        http://127.0.0.1:5000.
    nested: start a child run (tag mlflow.parentRunId) while another run is active;
        otherwise an active run is an error.
    With CAIRN_RUN_ID (or MLFLOW_RUN_ID) set and no active run, the run with that id is
    attached: params and tags are logged into it, a name renames it, experiment is ignored,
    and ending it only flushes (its owner ends it). The run is looked up once, without
    retries: when the server cannot be reached or does not have the run yet (`cairn run`
    creates it once the server is reachable), the run is attached all the same, with what the
    environment tells (experiment_id from $MLFLOW_EXPERIMENT_ID, no artifact_uri). Its params,
    tags and name (the mlflow.runName tag) are then queued instead of sent before this
    returns, metrics wait in the queue until the run exists, and ending it waits up to 30 s
    for the run to appear. Returns the Run, a context manager.
    """
    # Check what the caller passed before anything is created on the server.
    tags = {_check_key("tag", k): _check_value("Tag", k, v, MAX_TAG_VALUE_LENGTH)
            for k, v in dict(tags or {}).items()}
    params = {_check_key("param", k): _check_value("Param", k, v, MAX_PARAM_VALUE_LENGTH)
              for k, v in dict(params or {}).items()}
    with _stack_lock:
        parent = _stack[-1] if _stack else None
        if parent is not None and not nested:
            raise CairnError("run %s is already active: end it first, or pass nested=True to "
                             "start a child run" % parent.run_id, "BAD_REQUEST")
        transport = _transport(tracking_uri)
        interval = _flush_interval()
        attach_id = os.environ.get("CAIRN_RUN_ID") or os.environ.get("MLFLOW_RUN_ID")
        pending = False  # attached to a run the server does not have yet
        if attach_id and parent is None:
            info = _wrapper_run_info(transport, attach_id)
            pending = info is None
            if pending:
                info = {"run_id": attach_id, "run_uuid": attach_id, "status": "RUNNING"}
                if os.environ.get("MLFLOW_EXPERIMENT_ID"):
                    info["experiment_id"] = os.environ["MLFLOW_EXPERIMENT_ID"]
            elif name:
                info = transport.call("POST", API + "runs/update", {
                    "run_id": attach_id, "run_uuid": attach_id,
                    "run_name": str(name)}).get("run_info", info)
            run = Run(transport, info, True, interval)
            if pending and name:
                # The server sets the run's name from this tag, as runs/update would.
                run.set_tags({"mlflow.runName": str(name)})
            if tags:
                run.set_tags(tags)
        else:
            if experiment_id is not None:
                exp_id = str(experiment_id)
            elif experiment is not None:
                exp_id = _experiment_id(transport, str(experiment))
            elif parent is not None:
                exp_id = parent.experiment_id
            elif os.environ.get("MLFLOW_EXPERIMENT_ID"):
                exp_id = os.environ["MLFLOW_EXPERIMENT_ID"]
            elif os.environ.get("MLFLOW_EXPERIMENT_NAME"):
                exp_id = _experiment_id(transport, os.environ["MLFLOW_EXPERIMENT_NAME"])
            else:
                exp_id = DEFAULT_EXPERIMENT_ID
            user = _user()
            all_tags = {"mlflow.user": user, "mlflow.source.name": _source_name(),
                        "mlflow.source.type": "LOCAL"}
            if name:
                all_tags["mlflow.runName"] = str(name)
            if parent is not None:
                all_tags["mlflow.parentRunId"] = parent.run_id
            all_tags.update(tags)
            body = {"experiment_id": exp_id, "user_id": user, "start_time": _now_ms(),
                    "tags": [{"key": k, "value": v} for k, v in all_tags.items()]}
            if name:
                body["run_name"] = str(name)
            info = transport.call("POST", API + "runs/create", body)["run"]["info"]
            run = Run(transport, info, False, interval)
        _stack.append(run)
        _install_exit_hooks()
    try:
        if params:
            run.log_params(params)
        if not pending:
            # Parameters and tags arrive, or their error surfaces, before work starts. For a
            # run not on the server yet they wait in the queue: work must not wait for it.
            run.flush()
    except BaseException:
        try:
            run.end_run("FAILED")  # an attached run is only flushed
        except Exception:
            pass  # the first error is the one to report
        raise
    return run


def active_run():
    with _stack_lock:
        return _stack[-1] if _stack else None


def active_or_start():
    with _stack_lock:
        if _stack:
            return _stack[-1]
        return start_run()


# -- interpreter exit -----------------------------------------------------------------------------


def _install_exit_hooks():
    global _hooks_installed
    if _hooks_installed:
        return
    _hooks_installed = True
    atexit.register(_at_exit)
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        global _uncaught
        _uncaught = exc_type
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook


def _at_exit():
    if _uncaught is None:
        status = "FINISHED"
    elif issubclass(_uncaught, KeyboardInterrupt):
        status = "KILLED"
    else:
        status = "FAILED"
    with _stack_lock:
        runs = list(reversed(_stack))
    for run in runs:
        try:
            if run._pid != os.getpid():
                run.flush()  # a forked child: the run belongs to the parent, which ends it
            else:
                run.end_run(status)
        except Exception as e:  # exit must go on; say what was lost
            print("cairn: at exit, run %s: %s" % (run.run_id, e), file=sys.stderr)
