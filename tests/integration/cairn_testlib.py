"""Shared harness for cairn's black-box integration tests (Python standard library only).

- CairnServer starts `<cairn> server --host 127.0.0.1 --port 0 --data-dir DIR`, waits for the
  `listening on http://HOST:PORT` line on stdout, and stops it with SIGTERM (or kills it with
  SIGKILL). It can be restarted on the same data dir and reports VmRSS/VmHWM from /proc.
- Client sends requests with http.client, so request targets go out byte for byte as written
  (no normalisation of `..`, `//` or percent escapes), and returns Response(status, body, headers)
  without raising on 4xx/5xx (module-level get/post/put/delete/patch do the same on the
  client set by use_server()). JSON bodies are parsed; bare NaN/Infinity tokens are not valid JSON
  and leave the body as bytes.
- KeepAliveClient keeps one connection open across requests (for concurrency tests).
- main()/run_suite() run unittest cases and close with a line like `mlflow_api: 57 passed, 0 failed`;
  the exit status is non-zero on any failure or error, or when no test passed.
"""

import argparse
import collections
import contextlib
import http.client
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import types
import unittest
import urllib.parse

# Filled in by main(): CONFIG.cairn is the absolute path of the binary, CONFIG.args the parsed CLI.
CONFIG = types.SimpleNamespace(cairn=None, args=None)

LISTEN_RE = re.compile(r"listening on (https?://(\[[^\]]*\]|[^\s:/]+):(\d+))")

# Output lines containing these (case-insensitive) are counted over the server's whole life,
# even when the kept log tail has rolled over: see CairnServer.output_count().
WATCHED_OUTPUT = ("database is locked",)

_DIAGNOSTICS = []


def add_diagnostic(fn):
    """Register a callable returning text that is printed when a suite has failures."""
    _DIAGNOSTICS.append(fn)


class ServerError(Exception):
    pass


# --------------------------------------------------------------------------------------------
# Server process
# --------------------------------------------------------------------------------------------


class CairnServer:
    """One cairn server process bound to a data directory."""

    def __init__(self, binary, data_dir, host="127.0.0.1", port=0, extra_args=(),
                 startup_timeout=30.0, name="cairn", cwd=None, env=None):
        self.binary = binary
        self.cwd = cwd
        self.env = env
        self.data_dir = data_dir
        self.host = host
        self.requested_port = port
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.name = name
        self.proc = None
        self.url = None
        self.port = None
        self.starts = 0
        self._log = collections.deque(maxlen=4000)
        self._watched = collections.Counter()
        self._log_lock = threading.Lock()
        self._readers = []
        self._ready = threading.Event()

    # -- lifecycle ----------------------------------------------------------------------------

    def command(self):
        return [self.binary, "server", "--host", self.host, "--port", str(self.requested_port),
                "--data-dir", self.data_dir] + self.extra_args

    def start(self):
        if self.running():
            raise ServerError("server already running (pid %d)" % self.proc.pid)
        self.url = None
        self.port = None
        self._ready.clear()
        self.starts += 1
        cmd = self.command()
        self._append("harness", "start #%d: %s" % (self.starts, " ".join(cmd)))
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, cwd=self.cwd, env=self.env)
        self._readers = [
            threading.Thread(target=self._read, args=(self.proc.stdout, "stdout", True), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, "stderr", False), daemon=True),
        ]
        for t in self._readers:
            t.start()
        deadline = time.monotonic() + self.startup_timeout
        while not self._ready.is_set():
            if self.proc.poll() is not None:
                self._join_readers()
                raise ServerError("cairn exited with status %s before announcing its URL\n%s"
                                  % (self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                self.kill()
                raise ServerError("cairn did not print 'listening on http://...' within %.0f s\n%s"
                                  % (self.startup_timeout, self.log_tail()))
            self._ready.wait(0.05)
        return self

    def stop(self, timeout=30.0):
        """SIGTERM and wait; returns the exit status (SIGKILLs and raises if it hangs)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self._join_readers()
                raise ServerError("cairn did not exit within %.0f s of SIGTERM\n%s"
                                  % (timeout, self.log_tail()))
        self._join_readers()
        self._append("harness", "exited with status %s" % self.proc.returncode)
        return self.proc.returncode

    def interrupt(self, timeout=30.0):
        """SIGINT and wait; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise ServerError("cairn did not exit within %.0f s of SIGINT" % timeout)
        self._join_readers()
        return self.proc.returncode

    def kill(self):
        """SIGKILL (no chance to flush anything) and reap."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self._join_readers()
        self._append("harness", "killed (status %s)" % self.proc.returncode)
        return self.proc.returncode

    def restart(self):
        """Graceful stop, then start on the same data dir (the port may change)."""
        rc = self.stop()
        self.start()
        return rc

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def __enter__(self):
        if not self.running():
            self.start()
        return self

    def __exit__(self, *exc):
        if self.running():
            self.stop()

    # -- observation --------------------------------------------------------------------------

    def memory_kib(self):
        """{'VmRSS': kib, 'VmHWM': kib} of the live process (read from /proc/<pid>/status)."""
        return read_proc_memory_kib(self.proc.pid)

    def log_tail(self, lines=120):
        with self._log_lock:
            tail = list(self._log)[-lines:]
        return "--- %s output (last %d lines) ---\n%s\n--- end ---" % (self.name, len(tail), "\n".join(tail))

    def log_text(self):
        with self._log_lock:
            return "\n".join(self._log)

    def output_count(self, pattern):
        """How many output lines so far contained `pattern` (one of WATCHED_OUTPUT)."""
        with self._log_lock:
            return self._watched[pattern.lower()]

    def client(self, timeout=60.0):
        return Client(self, timeout=timeout)

    # -- internals ----------------------------------------------------------------------------

    def _append(self, stream, line):
        with self._log_lock:
            self._log.append("[%s] %s" % (stream, line))

    def _read(self, pipe, stream, watch_for_url):
        for raw in iter(pipe.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            self._append(stream, line)
            lowered = line.lower()
            for pattern in WATCHED_OUTPUT:
                if pattern in lowered:
                    with self._log_lock:
                        self._watched[pattern] += 1
            if not self._ready.is_set():
                m = LISTEN_RE.search(line)
                if m:
                    self.url = m.group(1)
                    self.port = int(m.group(3))
                    self._ready.set()
        pipe.close()

    def _join_readers(self):
        for t in self._readers:
            t.join(5)
        self._readers = []


def read_proc_memory_kib(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0])
    return out


# --------------------------------------------------------------------------------------------
# HTTP
# --------------------------------------------------------------------------------------------


def _reject_constant(name):
    raise ValueError("bare %s is not valid JSON" % name)


def parse_json(raw):
    """Strict JSON: bare NaN/Infinity tokens are rejected (MLflow sends them as strings)."""
    return json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)


class Response(tuple):
    """(status, body, headers); body is the parsed JSON value, or bytes when not JSON.

    Also has .status, .body, .headers, .raw (the bytes) and .text.
    """

    def __new__(cls, status, body, headers, raw):
        self = super().__new__(cls, (status, body, headers))
        self.raw = raw
        return self

    status = property(lambda self: self[0])
    body = property(lambda self: self[1])
    headers = property(lambda self: self[2])

    @property
    def text(self):
        return self.raw.decode("utf-8", "replace")

    def header(self, name, default=None):
        return self.headers.get(name, default)

    def __repr__(self):
        raw = self.raw if len(self.raw) <= 600 else self.raw[:600] + b"..."
        return "<HTTP %d %r>" % (self.status, raw)

    __str__ = __repr__


def _split_base(base):
    parts = urllib.parse.urlsplit(base)
    return parts.hostname, parts.port or 80


def build_target(path, params=None):
    """path plus an encoded query; params is a dict or a list of pairs (repeat a key for lists)."""
    if not params:
        return path
    if isinstance(params, dict):
        pairs = []
        for k, v in params.items():
            if isinstance(v, (list, tuple)):
                pairs.extend((k, x) for x in v)
            elif v is not None:
                pairs.append((k, v))
    else:
        pairs = list(params)
    query = urllib.parse.urlencode([(k, _qs_value(v)) for k, v in pairs])
    return path + ("&" if "?" in path else "?") + query


def _qs_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _encode_body(body, headers):
    if body is None:
        return None
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    if isinstance(body, str):  # pre-serialised (possibly malformed) JSON text
        headers.setdefault("Content-Type", "application/json")
        return body.encode("utf-8")
    headers.setdefault("Content-Type", "application/json")
    return json.dumps(body).encode("utf-8")


def _to_response(resp, raw_mode):
    raw = resp.read()
    body = raw
    if not raw_mode and raw:
        ctype = resp.getheader("Content-Type", "") or ""
        if "json" in ctype or raw[:1] in (b"{", b"["):
            try:
                body = parse_json(raw)
            except ValueError:
                body = raw
    return Response(resp.status, body, resp.headers, raw)


class Client:
    """Per-request connections to a server (a base URL string or anything with a .url)."""

    def __init__(self, base, timeout=60.0):
        self.base = base
        self.timeout = timeout

    def base_url(self):
        return self.base if isinstance(self.base, str) else self.base.url

    def request(self, method, path, body=None, params=None, headers=None, raw=False, timeout=None):
        """Send one request. `path` goes out verbatim (plus the encoded params)."""
        host, port = _split_base(self.base_url())
        hdrs = dict(headers or {})
        data = _encode_body(body, hdrs)
        conn = http.client.HTTPConnection(host, port, timeout=timeout or self.timeout)
        try:
            conn.request(method, build_target(path, params), body=data, headers=hdrs)
            return _to_response(conn.getresponse(), raw)
        finally:
            conn.close()

    def get(self, path, params=None, **kw):
        return self.request("GET", path, params=params, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body={} if body is None else body, **kw)

    def put(self, path, data=b"", content_type="application/octet-stream", **kw):
        headers = dict(kw.pop("headers", None) or {})
        headers.setdefault("Content-Type", content_type)
        return self.request("PUT", path, body=data, headers=headers, **kw)

    def delete(self, path, body=None, **kw):
        return self.request("DELETE", path, body=body, **kw)

    def patch(self, path, body=None, **kw):
        return self.request("PATCH", path, body={} if body is None else body, **kw)


class KeepAliveClient:
    """One persistent HTTP/1.1 connection, reused across requests.

    If the server closes an idle connection (legal HTTP), the next request reconnects; a request
    that fails on a reused connection before any byte of the response arrived is sent once more
    on a fresh connection (counted in .reconnects). Anything else propagates.
    """

    def __init__(self, base, timeout=60.0):
        self.base = base
        self.timeout = timeout
        self.conn = None
        self.requests_on_conn = 0
        self.reconnects = 0

    def _connect(self):
        base = self.base if isinstance(self.base, str) else self.base.url
        host, port = _split_base(base)
        self.conn = http.client.HTTPConnection(host, port, timeout=self.timeout)
        self.requests_on_conn = 0

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, params=None, headers=None, raw=False):
        hdrs = dict(headers or {})
        data = _encode_body(body, hdrs)
        target = build_target(path, params)
        for attempt in (1, 2):
            if self.conn is None:
                self._connect()
            reused = self.requests_on_conn > 0
            try:
                self.conn.request(method, target, body=data, headers=hdrs)
                resp = self.conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if reused and attempt == 1:
                    self.reconnects += 1
                    continue
                raise
            self.requests_on_conn += 1
            out = _to_response(resp, raw)
            if resp.will_close:
                self.close()
            return out
        raise AssertionError("unreachable")

    def get(self, path, params=None, **kw):
        return self.request("GET", path, params=params, **kw)

    def post(self, path, body=None, **kw):
        return self.request("POST", path, body={} if body is None else body, **kw)


# Module-level shortcuts on a default client: use_server(server) once, then get(...)/post(...).
_default_client = None


def use_server(server_or_url, timeout=60.0):
    global _default_client
    _default_client = Client(server_or_url, timeout=timeout)
    return _default_client


def _client():
    if _default_client is None:
        raise RuntimeError("call cairn_testlib.use_server(...) first")
    return _default_client


def get(path, params=None, **kw):
    return _client().get(path, params, **kw)


def post(path, body=None, **kw):
    return _client().post(path, body, **kw)


def put(path, data=b"", **kw):
    return _client().put(path, data, **kw)


def delete(path, body=None, **kw):
    return _client().delete(path, body, **kw)


def patch(path, body=None, **kw):
    return _client().patch(path, body, **kw)


def wait_until(predicate, timeout=10.0, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            return value
        time.sleep(interval)


def now_ms():
    return int(time.time() * 1000)


def pipeline_states(output):
    """{step: state} from the progress lines of `cairn pipeline run`/`resume` ("  done  train
    1.2 s"); the lines of a failed step's log, indented further, are not steps."""
    out = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 2 and line[:2] == "  " and line[2] != " " and parts[0] != "started":
            out[parts[1]] = parts[0]
    return out


def make_temp_root(prefix):
    """A fresh private directory; its child 'data' is meant as the server's --data-dir."""
    base = getattr(CONFIG.args, "tmp_dir", None) if CONFIG.args is not None else None
    root = tempfile.mkdtemp(prefix=prefix, dir=base)
    data = os.path.join(root, "data")
    os.mkdir(data)
    return root, data


class BlobStore:
    """The local content store in `directory` (a server's <data-dir>/artifacts), as
    docs/formats/content-store.md lays it out: a blob of at most 64 KiB is a row of small.db,
    a larger one a file named by its digest. For tests that look at or damage what the server
    keeps behind its back."""

    SMALL = 64 << 10

    def __init__(self, directory):
        self.dir = directory

    def _db(self):
        import sqlite3
        db = sqlite3.connect(os.path.join(self.dir, "small.db"), timeout=30)
        db.execute("PRAGMA busy_timeout = 30000")
        return db

    def path(self, digest):
        return os.path.join(self.dir, digest[:2], digest[2:])

    def blobs(self):
        """{digest: size} of every blob, in the database and in files."""
        out = {}
        if os.path.exists(os.path.join(self.dir, "small.db")):
            with contextlib.closing(self._db()) as db:
                out.update(db.execute("SELECT digest, size FROM blobs"))
        for dirpath, _, names in os.walk(self.dir):
            for n in names:
                if len(n) == 62 and len(os.path.basename(dirpath)) == 2:
                    out[os.path.basename(dirpath) + n] = os.path.getsize(os.path.join(dirpath, n))
        return out

    def has(self, digest):
        return digest in self.blobs()

    def read(self, digest):
        with contextlib.closing(self._db()) as db:
            row = db.execute("SELECT c.bytes FROM blobs b JOIN contents c ON c.id = b.content "
                             "WHERE b.digest = ?", (digest,)).fetchone()
        if row is not None:
            return bytes(row[0])
        with open(self.path(digest), "rb") as f:
            return f.read()

    def overwrite(self, digest, offset, byte):
        """Puts `byte` (an int) at `offset` of the blob's bytes (negative counts from the end)."""
        data = bytearray(self.read(digest))
        data[offset] = byte
        with contextlib.closing(self._db()) as db, db:
            n = db.execute("UPDATE contents SET bytes = ? WHERE id = "
                           "(SELECT content FROM blobs WHERE digest = ?)",
                           (bytes(data), digest)).rowcount
        if n == 0:
            os.chmod(self.path(digest), 0o644)
            with open(self.path(digest), "r+b") as f:
                f.seek(offset % len(data))
                f.write(bytes([byte]))

    def remove(self, digest):
        with contextlib.closing(self._db()) as db, db:
            row = db.execute("DELETE FROM blobs WHERE digest = ? RETURNING content",
                             (digest,)).fetchone()
            if row is not None:
                db.execute("DELETE FROM contents WHERE id = ?", (row[0],))
                return
        os.remove(self.path(digest))

    def plant(self, content, age_seconds=0):
        """Stores `content` as the server would, written `age_seconds` ago; returns its digest."""
        import hashlib
        digest = hashlib.sha256(content).hexdigest()
        then = time.time() - age_seconds
        if len(content) <= self.SMALL:
            with contextlib.closing(self._db()) as db, db:
                content_id = int(digest[:15], 16)
                while db.execute("SELECT 1 FROM contents WHERE id = ?", (content_id,)).fetchone():
                    content_id += 1
                db.execute("INSERT INTO contents (id, bytes) VALUES (?, ?)", (content_id, content))
                db.execute("INSERT INTO blobs (digest, size, modified_ms, content) "
                           "VALUES (?, ?, ?, ?)", (digest, len(content), int(then * 1000),
                                                   content_id))
            return digest
        os.makedirs(os.path.dirname(self.path(digest)), exist_ok=True)
        with open(self.path(digest), "wb") as f:
            f.write(content)
        os.utime(self.path(digest), (then, then))
        return digest


def keep_data():
    return bool(CONFIG.args is not None and getattr(CONFIG.args, "keep_data", False))


# --------------------------------------------------------------------------------------------
# Runner
# --------------------------------------------------------------------------------------------


class _CountingResult(unittest.TextTestResult):
    """Remembers one outcome per test id (the worst one seen, so a test whose subtests failed,
    or whose tearDown errored after it passed, counts once as failed). Module and class fixture
    errors arrive under their own ids and count as failures too."""

    _RANK = {"pass": 0, "skip": 1, "xfail": 1, "fail": 2, "error": 2, "xpass": 2}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.outcomes = collections.OrderedDict()

    def _mark(self, test, outcome):
        key = test.id()
        old = self.outcomes.get(key)
        if old is None or self._RANK[outcome] >= self._RANK[old]:
            self.outcomes[key] = outcome

    def addSuccess(self, test):
        super().addSuccess(test)
        self._mark(test, "pass")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._mark(test, "fail")

    def addError(self, test, err):
        super().addError(test, err)
        self._mark(test, "error")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._mark(test, "skip")

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._mark(test, "xfail")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._mark(test, "xpass")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            failed = issubclass(err[0], test.failureException)
            self._mark(test, "fail" if failed else "error")

    def counts(self):
        c = collections.Counter(self.outcomes.values())
        passed = c["pass"]
        failed = c["fail"] + c["error"] + c["xpass"]
        skipped = c["skip"] + c["xfail"]
        return passed, failed, skipped


def run_suite(name, suite, verbosity=2):
    """Run a unittest suite and print the closing line; returns the process exit status."""
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=verbosity,
                                     resultclass=_CountingResult)
    result = runner.run(suite)
    passed, failed, skipped = result.counts()
    if failed:
        for fn in _DIAGNOSTICS:
            try:
                print(fn())
            except Exception as e:  # diagnostics must never mask the verdict
                print("(diagnostic failed: %r)" % (e,))
        bad = [k for k, v in result.outcomes.items() if v in ("fail", "error", "xpass")]
        print("failed: " + ", ".join(bad))
    line = "%s: %d passed, %d failed" % (name, passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    sys.stdout.flush()
    if failed or passed == 0:
        return 1
    return 0


def main(name, module, add_arguments=None, argv=None):
    """CLI entry shared by the test scripts: --cairn PATH [-k PATTERN]... [-q] [--keep-data]."""
    parser = argparse.ArgumentParser(description="cairn integration tests: " + name)
    parser.add_argument("--cairn", default=os.environ.get("CAIRN_BIN"),
                        help="path of the cairn binary (default: $CAIRN_BIN)")
    parser.add_argument("-k", dest="patterns", action="append", default=[],
                        help="only run tests whose id contains this substring (repeatable)")
    parser.add_argument("-q", "--quiet", action="store_true", help="less verbose unittest output")
    parser.add_argument("--keep-data", action="store_true", help="keep temporary data dirs")
    parser.add_argument("--tmp-dir", default=None, help="where to create temporary data dirs")
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args(argv)
    CONFIG.args = args
    if not args.cairn or not os.path.isfile(args.cairn) or not os.access(args.cairn, os.X_OK):
        print("error: --cairn must name an executable cairn binary (got %r)" % (args.cairn,))
        print("%s: 0 passed, 1 failed" % name)
        sys.stdout.flush()
        return 2
    CONFIG.cairn = os.path.abspath(args.cairn)
    loader = unittest.TestLoader()
    if args.patterns:
        loader.testNamePatterns = ["*%s*" % p for p in args.patterns]
    suite = loader.loadTestsFromModule(module)
    return run_suite(name, suite, verbosity=1 if args.quiet else 2)
