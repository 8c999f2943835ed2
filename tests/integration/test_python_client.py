#!/usr/bin/env python3
"""The stdlib-only Python client (python/cairn) against a real server: run status from the
context manager; params, tags, metrics with steps, NaN and infinities as the REST API returns
them; batching (counted by a small proxy that also checks every request against MLflow's
log-batch limits, and injects 5xx answers, dropped connections and a lost experiment lookup);
deferred server errors; the flush at interpreter exit; attaching to a `cairn run` run, also
before the server has it (unreachable, or the run not created yet); artifact upload streamed
from disk; and the package installed offline into a fresh venv from the
in-tree build backend (wheel, sdist, editable). On a second server with authentication on:
credentials from CAIRN_TOKEN, MLflow's variables and the credentials file (which `cairn login`
writes), a credentials file others may read refused, a refused token failing at once, a token
revoked during a run, and a user who may only read refused a write.

Usage: test_python_client.py --cairn build/release/cairn
"""
import base64
import configparser
import csv
import hashlib
import http.client
import http.server
import io
import json
import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import unittest
import urllib.parse
import zipfile
from unittest import mock

sys.dont_write_bytecode = True  # keep __pycache__ out of python/
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
sys.path.insert(0, PYTHON_DIR)
import cairn_testlib as tl  # noqa: E402
import cairn  # noqa: E402
import cairn_build  # noqa: E402

API = "/api/2.0/mlflow/"

# This process must not attach to a run of its own caller (say, when the suite runs under
# `cairn run`), nor pick up the caller's server or experiment.
ENV_NAMES = ("CAIRN_RUN_ID", "MLFLOW_RUN_ID", "CAIRN_TRACKING_URI", "MLFLOW_TRACKING_URI",
             "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME", "CAIRN_FLUSH_INTERVAL",
             "CAIRN_HTTP_MAX_RETRIES", "CAIRN_HTTP_BACKOFF", "CAIRN_HTTP_TIMEOUT",
             "MLFLOW_TRACKING_TOKEN", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_PASSWORD",
             "CAIRN_TOKEN")
for _name in ENV_NAMES:
    os.environ.pop(_name, None)
# Nor the caller's credentials file (~/.config/cairn/credentials): a directory that cannot exist.
os.environ["XDG_CONFIG_HOME"] = os.path.join(os.devnull, "no-config")


# ---------------------------------------------------------------------------------------------
# A counting proxy
# ---------------------------------------------------------------------------------------------


class CountingProxy:
    """HTTP/1.1 keep-alive proxy in front of the server. Records every request (method, path,
    status), the size of every log-batch, and the client connections opened. `inject(suffix,
    action)` makes the next request whose path ends with `suffix` get `action` instead of
    being forwarded: an HTTP status (answered with an MLflow error body) or "drop" (the
    connection is closed without an answer)."""

    def __init__(self, upstream_url):
        up = urllib.parse.urlsplit(upstream_url)
        self.upstream = (up.hostname, up.port)
        self.lock = threading.Lock()
        self.requests = []
        self.batches = []
        self.connections = 0
        self.faults = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                super().setup()
                with proxy.lock:
                    proxy.connections += 1

            def log_message(self, *args):
                pass

            def handle_request(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                action = proxy._take_fault(path)
                if action == "drop":
                    proxy._record(self.command, path, None, body)
                    self.close_connection = True
                    return
                if action is not None:
                    code = "RESOURCE_DOES_NOT_EXIST" if action == 404 else "TEMPORARILY_UNAVAILABLE"
                    status, ctype = action, "application/json"
                    data = json.dumps({"error_code": code, "message": "injected by the proxy"}
                                      ).encode()
                else:
                    status, ctype, data = proxy._forward(self.command, self.path, self.headers,
                                                         body)
                proxy._record(self.command, path, status, body)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_request

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def inject(self, path_suffix, *actions):
        with self.lock:
            self.faults.extend((path_suffix, a) for a in actions)

    def _take_fault(self, path):
        with self.lock:
            for i, (suffix, action) in enumerate(self.faults):
                if path.endswith(suffix):
                    del self.faults[i]
                    return action
        return None

    def _forward(self, method, target, headers, body):
        conn = http.client.HTTPConnection(*self.upstream, timeout=60)
        try:
            fwd = {}
            for name in ("Content-Type", "Authorization"):
                if headers.get(name):
                    fwd[name] = headers[name]
            conn.request(method, target, body=body if method not in ("GET",) else None,
                         headers=fwd)
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type", "application/json"), resp.read()
        finally:
            conn.close()

    def _record(self, method, path, status, body):
        with self.lock:
            self.requests.append((method, path, status))
            if path.endswith("/runs/log-batch"):
                doc = json.loads(body)
                self.batches.append({"metrics": len(doc.get("metrics", [])),
                                     "params": len(doc.get("params", [])),
                                     "tags": len(doc.get("tags", [])),
                                     "bytes": len(body), "status": status,
                                     "run_id": doc.get("run_id")})

    def count(self, path_suffix, status="any"):
        with self.lock:
            return sum(1 for _, p, s in self.requests
                       if p.endswith(path_suffix) and (status == "any" or s == status))

    def batches_for(self, run_id):
        with self.lock:
            return [b for b in self.batches if b["run_id"] == run_id]


# ---------------------------------------------------------------------------------------------
# Scripts run in child processes
# ---------------------------------------------------------------------------------------------

# Logs, makes sure 11 items are still queued (the background interval is set to 60 s), and
# leaves without ending the run: only the atexit hook can deliver them and end the run.
ATEXIT_CHILD = r"""
import cairn
run = cairn.start_run(experiment="py-atexit", params={"n": 3500})
for i in range(3500):
    cairn.log_metric("loss", 1.0 / (i + 1), step=i)
run.flush()
for i in range(3500, 3510):
    cairn.log_metric("loss", 1.0 / (i + 1), step=i)
cairn.set_tag("last", "yes")
print(run.run_id, run._batcher.pending(), flush=True)
"""

# The first log call starts a run ($MLFLOW_EXPERIMENT_NAME); an uncaught exception ends it.
CRASH_CHILD = r"""
import cairn
cairn.log_metric("before_crash", 1.0)
print(cairn.active_run().run_id, flush=True)
raise RuntimeError("boom")
"""

# Inside a run someone else owns (CAIRN_RUN_ID and friends are set by the test).
ATTACH_CHILD = r"""
import os, cairn
with cairn.start_run(experiment="py-never-created", params={"lr": 0.1},
                     tags={"phase": "train"}) as run:
    assert run.attached and run.run_id == os.environ["CAIRN_RUN_ID"], run
    for s in range(20):
        cairn.log_metric("loss", 1.0 / (s + 1), step=s)
cairn.log_metric("after_block", 1.0)  # attaches again
cairn.end_run()
print("attached", run.run_id, run.status, flush=True)
"""

# Attached to a run the server does not have yet, as under `cairn run` when the server was
# unreachable at its start. Logs for a while; the test creates the run meanwhile and then
# writes the file $READY names. With $EARLY_ARTIFACT set it first tries an artifact upload,
# which cannot work before the run exists.
PENDING_CHILD = r"""
import os, time, cairn
start = time.monotonic()
run = cairn.start_run(name="named-by-client", params={"lr": 0.1}, tags={"phase": "train"})
print("started", run.attached, repr(run.artifact_uri), round(time.monotonic() - start, 3),
      flush=True)
weights = os.environ["READY"] + ".weights"
with open(weights, "w") as f:
    f.write("w 3")
if os.environ.get("EARLY_ARTIFACT"):
    try:
        run.log_artifact(weights, "model")
    except cairn.CairnError as e:
        print("artifact-refused", e.retryable, e.error_code, flush=True)
        assert "not on the tracking server yet" in e.message, e.message
step = 0
while not os.path.exists(os.environ["READY"]) or step < 30:
    cairn.log_metric("loss", 1.0 / (step + 1), step=step)
    if step == 5:
        cairn.log_param("late", "yes")
        cairn.set_tag("half", "done")
    step += 1
    time.sleep(0.1)
    assert step < 600, "the test never created the run"
run.log_artifact(weights, "model")
cairn.end_run()
print("logged", step, flush=True)
"""

# Ends an attached run that the server does not have yet: ending waits for it to appear.
PENDING_END_CHILD = r"""
import cairn
cairn.start_run(params={"p": 1})
cairn.log_metric("m", 1.0)
print("ending", flush=True)
cairn.end_run()
print("ended", flush=True)
"""

WRAPPED_CHILD = r"""
import sys, cairn
with cairn.start_run(name="renamed-by-client", params={"epochs": 2}) as run:
    cairn.log_metric("acc", 0.5, step=1)
    print("RUN", run.run_id, run.attached, flush=True)
sys.exit(3)
"""

VENV_CHILD = r"""
import sys, cairn
assert cairn.__file__.startswith(sys.prefix), cairn.__file__
with cairn.start_run(experiment="py-venv", params={"installed": cairn.__version__}) as run:
    cairn.log_metric("m", 1.0)
print(run.run_id, flush=True)
"""

# Logs a small run into $EXPERIMENT with whatever credentials the environment gives it, and
# prints one JSON line: the run, or the error a user would see and how long it took to come.
AUTH_CHILD = r"""
import json, os, sys, time, cairn
start = time.monotonic()
try:
    with cairn.start_run(experiment=os.environ["EXPERIMENT"], params={"lr": 0.01},
                         tags={"via": os.environ["VIA"]}) as run:
        for step in range(3):
            cairn.log_metric("loss", 1.0 / (step + 1), step=step)
except cairn.CairnError as e:
    print(json.dumps({"error_code": e.error_code, "status": e.status, "retryable": e.retryable,
                      "message": e.message, "seconds": time.monotonic() - start}), flush=True)
    sys.exit(3)
print(json.dumps({"run_id": run.run_id, "status": run.status}), flush=True)
"""

# Logs with $CAIRN_TOKEN, waits for a line on stdin (the test revokes the token meanwhile),
# then logs again and flushes; then, given a new token on stdin, sets it as a notebook would
# and flushes again, and ends the run.
REVOKED_CHILD = r"""
import json, os, sys, time, cairn
run = cairn.start_run(experiment=os.environ["EXPERIMENT"])
cairn.log_metric("loss", 1.0, step=0)
run.flush()
print(run.run_id, flush=True)
sys.stdin.readline()
cairn.log_metric("loss", 0.5, step=1)
start = time.monotonic()
try:
    run.flush()
    print(json.dumps({"flush": "ok"}), flush=True)
except cairn.CairnError as e:
    print(json.dumps({"flush": e.error_code, "seconds": time.monotonic() - start}), flush=True)
os.environ["CAIRN_TOKEN"] = sys.stdin.readline().strip()
try:
    run.flush()
    print(json.dumps({"flush": "ok"}), flush=True)
except cairn.CairnError as e:
    print(json.dumps({"flush": e.error_code}), flush=True)
try:
    run.end_run()
    print(json.dumps({"end": "ok"}), flush=True)
except cairn.CairnError as e:
    print(json.dumps({"end": e.error_code}), flush=True)
"""


def end_active_runs():
    while cairn.active_run() is not None:
        try:
            cairn.end_run("KILLED")
        except cairn.CairnError:
            pass


def child_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ENV_NAMES}
    env["PYTHONPATH"] = PYTHON_DIR
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


# ---------------------------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------------------------


class PythonClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, data_dir = tl.make_temp_root("cairn-pyclient-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (python client)")
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.c = cls.server.client()
        cls.url = cls.server.url
        cls.proxy = CountingProxy(cls.url)
        os.environ["CAIRN_TRACKING_URI"] = cls.url

    @classmethod
    def tearDownClass(cls):
        os.environ.pop("CAIRN_TRACKING_URI", None)
        cls.proxy.close()
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def tearDown(self):
        # Never leave a run open: this process's own atexit hook would try to end it against a
        # stopped server.
        end_active_runs()

    # -- helpers ------------------------------------------------------------------------------

    def get_run(self, run_id):
        r = self.c.get(API + "runs/get", {"run_id": run_id})
        self.assertEqual(r.status, 200, repr(r))
        self.assertIsInstance(r.body, dict, "not strict JSON (bare NaN?): %r" % (r,))
        return r.body["run"]

    def history(self, run_id, key):
        r = self.c.get(API + "metrics/get-history",
                       {"run_id": run_id, "metric_key": key, "max_results": 25000})
        self.assertEqual(r.status, 200, repr(r))
        self.assertIsInstance(r.body, dict, "not strict JSON (bare NaN?): %r" % (r,))
        return r.body.get("metrics", [])

    @staticmethod
    def params(run):
        return {p["key"]: p["value"] for p in run["data"].get("params", [])}

    @staticmethod
    def tags(run):
        return {t["key"]: t["value"] for t in run["data"].get("tags", [])}

    def python(self, script, env=None, timeout=60):
        return subprocess.run([sys.executable, "-c", script], env=env or child_env(),
                              cwd=self.root, capture_output=True, text=True, timeout=timeout)

    def artifact_root(self, run):
        return run["info"]["artifact_uri"].split("mlflow-artifacts:/", 1)[1]

    # -- run status ---------------------------------------------------------------------------

    def test_context_manager_ends_the_run_finished(self):
        with cairn.start_run(experiment="py-ctx", name="ok", params={"lr": 0.01, "layers": 3},
                             tags={"team": "vision"}, tracking_uri=self.url) as run:
            self.assertIs(cairn.active_run(), run)
            self.assertFalse(run.attached)
            cairn.log_param("optimizer", "adam")
            cairn.set_tag("stage", "train")
            cairn.set_tags({"stage": "eval", "owner": "me"})  # the later value wins
        self.assertIsNone(cairn.active_run())
        self.assertEqual(run.status, "FINISHED")
        got = self.get_run(run.run_id)
        self.assertEqual(got["info"]["status"], "FINISHED")
        self.assertIn("end_time", got["info"])
        self.assertEqual(got["info"]["run_name"], "ok")
        self.assertEqual(self.params(got), {"lr": "0.01", "layers": "3", "optimizer": "adam"})
        tags = self.tags(got)
        self.assertEqual(tags["team"], "vision")
        self.assertEqual(tags["stage"], "eval")
        self.assertEqual(tags["owner"], "me")
        self.assertEqual(tags["mlflow.runName"], "ok")
        self.assertEqual(tags["mlflow.source.type"], "LOCAL")
        self.assertTrue(tags["mlflow.user"])
        exp = self.c.get(API + "experiments/get-by-name", {"experiment_name": "py-ctx"})
        self.assertEqual(exp.status, 200, repr(exp))
        self.assertEqual(got["info"]["experiment_id"], exp.body["experiment"]["experiment_id"])
        # The same name again finds the experiment instead of creating another one.
        with cairn.start_run(experiment="py-ctx") as again:
            pass
        self.assertEqual(again.experiment_id, got["info"]["experiment_id"])

    def test_default_experiment_and_tracking_uri_from_the_environment(self):
        with cairn.start_run() as run:  # CAIRN_TRACKING_URI was set by setUpClass
            pass
        self.assertEqual(run.experiment_id, "0")
        self.assertEqual(run.tracking_uri, self.url)
        saved = dict(os.environ)
        try:
            os.environ["CAIRN_TRACKING_URI"] = "http://cairn.example:1"
            os.environ["MLFLOW_TRACKING_URI"] = "http://mlflow.example:2"
            self.assertEqual(cairn.resolve_tracking_uri("http://arg.example:3"),
                             "http://arg.example:3")
            self.assertEqual(cairn.resolve_tracking_uri(), "http://cairn.example:1")
            del os.environ["CAIRN_TRACKING_URI"]
            self.assertEqual(cairn.resolve_tracking_uri(), "http://mlflow.example:2")
            del os.environ["MLFLOW_TRACKING_URI"]
            self.assertEqual(cairn.resolve_tracking_uri(), "http://127.0.0.1:5000")
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_exception_fails_the_run_and_propagates(self):
        with self.assertRaisesRegex(ValueError, "diverged"):
            with cairn.start_run(experiment="py-status") as run:
                cairn.log_metric("loss", 1.0)
                raise ValueError("diverged")
        got = self.get_run(run.run_id)
        self.assertEqual(got["info"]["status"], "FAILED")
        self.assertEqual(len(self.history(run.run_id, "loss")), 1)  # flushed before ending

    def test_keyboard_interrupt_kills_the_run(self):
        with self.assertRaises(KeyboardInterrupt):
            with cairn.start_run(experiment="py-status") as run:
                raise KeyboardInterrupt()
        self.assertEqual(self.get_run(run.run_id)["info"]["status"], "KILLED")

    def test_explicit_end_run_and_nested_runs(self):
        parent = cairn.start_run(experiment="py-nested")
        with self.assertRaisesRegex(cairn.CairnError, "already active"):
            cairn.start_run(experiment="py-nested")
        child = cairn.start_run(nested=True)
        self.assertIs(cairn.active_run(), child)
        cairn.end_run()  # the innermost first
        self.assertIs(cairn.active_run(), parent)
        cairn.end_run("FAILED")
        self.assertIsNone(cairn.active_run())
        got_child = self.get_run(child.run_id)
        self.assertEqual(self.tags(got_child)["mlflow.parentRunId"], parent.run_id)
        self.assertEqual(got_child["info"]["experiment_id"], parent.experiment_id)
        self.assertEqual(got_child["info"]["status"], "FINISHED")
        self.assertEqual(self.get_run(parent.run_id)["info"]["status"], "FAILED")
        with self.assertRaises(cairn.CairnError):
            parent.end_run("DONE")  # not a status

    # -- what arrives -------------------------------------------------------------------------

    def test_metrics_with_steps_nan_and_infinities(self):
        with cairn.start_run(experiment="py-metrics") as run:
            for step in range(5):
                cairn.log_metric("loss", 1.0 / (step + 1), step=step)
            cairn.log_metric("odd", math.nan, step=0)
            cairn.log_metric("odd", math.inf, step=1)
            cairn.log_metric("odd", -math.inf, step=2)
            cairn.log_metric("default_step", 7)
            cairn.log_metric("stamped", 2.5, step=3, timestamp=1234567)
            run.log_metrics({"a": 1, "b": 2.5}, step=9)
            with self.assertRaises(cairn.CairnError):
                cairn.log_metric("text", "1.5")
        hist = self.history(run.run_id, "loss")
        self.assertEqual([(m["step"], m["value"]) for m in hist],
                         [(s, 1.0 / (s + 1)) for s in range(5)])
        odd = sorted(self.history(run.run_id, "odd"), key=lambda m: m["step"])
        self.assertEqual([m["value"] for m in odd], ["NaN", "Infinity", "-Infinity"])
        default = self.history(run.run_id, "default_step")
        self.assertEqual([(m["step"], m["value"]) for m in default], [(0, 7)])
        self.assertLess(abs(default[0]["timestamp"] - tl.now_ms()), 60000)
        self.assertEqual([(m["step"], m["timestamp"]) for m in self.history(run.run_id, "stamped")],
                         [(3, 1234567)])
        self.assertEqual([(m["step"], m["value"]) for m in self.history(run.run_id, "b")],
                         [(9, 2.5)])

    def test_batching_sends_few_requests_within_mlflow_limits(self):
        run = cairn.start_run(experiment="py-batch", tracking_uri=self.proxy.url)
        connections_before = self.proxy.connections
        for i in range(5000):
            cairn.log_metric("loss" if i % 2 else "acc", i * 0.5, step=i // 2)
        for i in range(250):
            cairn.log_param("p%03d" % i, i)
        for i in range(150):
            cairn.set_tag("t%03d" % i, "v" * 2000)  # 300 KB of tags: the body limit matters too
        cairn.end_run()
        batches = self.proxy.batches_for(run.run_id)
        sent = sum(b["metrics"] + b["params"] + b["tags"] for b in batches)
        self.assertEqual(sent, 5400, batches)
        self.assertGreaterEqual(len(batches), 6)  # 5400 items cannot fit in fewer
        self.assertLessEqual(len(batches), 40, "batching should need far fewer requests than "
                             "5400 calls; got %d" % len(batches))
        for b in batches:
            self.assertEqual(b["status"], 200, b)
            self.assertLessEqual(b["metrics"], 1000, b)
            self.assertLessEqual(b["params"], 100, b)
            self.assertLessEqual(b["tags"], 100, b)
            self.assertLessEqual(b["metrics"] + b["params"] + b["tags"], 1000, b)
            self.assertLessEqual(b["bytes"], 1000000, b)
        # Persistent connections: one for the caller, one for the sender thread.
        self.assertLessEqual(self.proxy.connections - connections_before, 2)
        got = self.get_run(run.run_id)
        self.assertEqual(len(self.params(got)), 250)
        self.assertEqual(sum(1 for k in self.tags(got) if k.startswith("t")), 150)
        for key, first in (("acc", 0.0), ("loss", 0.5)):
            hist = self.history(run.run_id, key)
            self.assertEqual(len(hist), 2500)
            self.assertEqual([m["step"] for m in hist], list(range(2500)))
            self.assertEqual([m["value"] for m in hist], [first + s for s in range(2500)])

    def test_background_thread_sends_without_flush_or_end(self):
        run = cairn.start_run(experiment="py-periodic")
        cairn.log_metric("tick", 1.0)
        arrived = tl.wait_until(lambda: self.history(run.run_id, "tick"), timeout=5.0)
        self.assertTrue(arrived, "a queued metric was not sent within 5 s (interval is ~1 s)")
        self.assertEqual(self.get_run(run.run_id)["info"]["status"], "RUNNING")
        cairn.end_run()

    # -- errors -------------------------------------------------------------------------------

    def test_server_rejection_is_raised_by_the_next_call(self):
        run = cairn.start_run(experiment="py-errors", tracking_uri=self.proxy.url)
        # Someone else logged these params; only the server knows.
        r = self.c.post(API + "runs/log-batch", {"run_id": run.run_id, "params": [
            {"key": "lr", "value": "0.1"}, {"key": "seed", "value": "1"}]})
        self.assertEqual(r.status, 200, repr(r))
        rejected_before = self.proxy.count("/runs/log-batch", 400)
        cairn.log_metric("good", 1.0)
        cairn.log_param("lr", 0.2)
        cairn.set_tag("good", "yes")
        # The background thread sends the batch; the server refuses it; the client sends halves
        # (the bad param first, then the tag and metric).
        self.assertTrue(tl.wait_until(lambda: self.history(run.run_id, "good"), timeout=5.0),
                        "the good items of the rejected batch did not arrive")
        self.assertGreaterEqual(self.proxy.count("/runs/log-batch", 400) - rejected_before, 2)
        with self.assertRaises(cairn.CairnError) as caught:
            cairn.log_metric("good", 2.0, step=1)  # the next call after the rejection
        self.assertEqual(caught.exception.error_code, "INVALID_PARAMETER_VALUE")
        self.assertIn("Changing param values", caught.exception.message)
        cairn.log_metric("good", 2.0, step=1)  # raised once; logging goes on
        cairn.flush()
        cairn.log_param("seed", 2)
        with self.assertRaises(cairn.CairnError) as caught:
            cairn.flush()
        self.assertEqual(caught.exception.error_code, "INVALID_PARAMETER_VALUE")
        self.assertIn("Changing param values", caught.exception.message)
        cairn.end_run()
        got = self.get_run(run.run_id)
        self.assertEqual(self.params(got), {"lr": "0.1", "seed": "1"})
        self.assertEqual(self.tags(got)["good"], "yes")  # sent in the rejected batch, still here
        self.assertEqual([m["value"] for m in self.history(run.run_id, "good")], [1.0, 2.0])

    def test_bad_names_and_values_are_refused_at_the_call(self):
        with cairn.start_run(experiment="py-errors") as run:
            for bad in ("", "a/../b", "/abs", "semi;colon", "x" * 251):
                with self.assertRaises(cairn.CairnError, msg=bad):
                    cairn.log_metric(bad, 1.0)
            with self.assertRaisesRegex(cairn.CairnError, "8000"):
                cairn.set_tag("long", "x" * 8001)
            with self.assertRaisesRegex(cairn.CairnError, "6000"):
                cairn.log_param("long", "x" * 6001)
            with self.assertRaises(cairn.CairnError):
                cairn.log_metric("step", 1.0, step="three")
            cairn.log_metric("ok/name with-dots.and:colons", 1.0)
        got = self.get_run(run.run_id)
        self.assertEqual([m["key"] for m in got["data"]["metrics"]],
                         ["ok/name with-dots.and:colons"])

    def test_changing_a_param_is_refused_at_once(self):
        with cairn.start_run(experiment="py-errors") as run:
            cairn.log_param("lr", 0.1)
            cairn.log_param("lr", 0.1)  # the same value again is fine
            with self.assertRaisesRegex(cairn.CairnError, "Changing param values"):
                cairn.log_param("lr", 0.2)
        self.assertEqual(self.params(self.get_run(run.run_id)), {"lr": "0.1"})

    def quiet_run(self, experiment, tracking_uri, **env):
        """A run whose background thread stays idle (60 s interval): only flush sends."""
        saved = dict(os.environ)
        os.environ.update(env, CAIRN_FLUSH_INTERVAL="60")
        try:
            return cairn.start_run(experiment=experiment, tracking_uri=tracking_uri)
        finally:
            os.environ.clear()
            os.environ.update(saved)

    def test_5xx_and_dropped_connections_are_retried(self):
        run = self.quiet_run("py-retry", self.proxy.url)
        cairn.flush()
        attempts_before = self.proxy.count("/runs/log-batch")
        self.proxy.inject("/runs/log-batch", 503, 500, "drop", "drop")
        for s in range(10):
            cairn.log_metric("m", float(s), step=s)
        cairn.flush()
        self.assertEqual(self.proxy.count("/runs/log-batch") - attempts_before, 5)
        self.assertEqual([m["step"] for m in self.history(run.run_id, "m")], list(range(10)))
        self.proxy.inject("/runs/update", 502)
        cairn.end_run()
        self.assertEqual(self.get_run(run.run_id)["info"]["status"], "FINISHED")

    def test_undelivered_data_stays_queued_until_delivered(self):
        # A transport of its own (URIs are cached per spelling) with no retries.
        uri = self.proxy.url.replace("127.0.0.1", "localhost")
        run = self.quiet_run("py-retry", uri, CAIRN_HTTP_MAX_RETRIES="0")
        self.proxy.inject("/runs/log-batch", 503)
        cairn.log_metric("kept", 1.0)
        with self.assertRaises(cairn.CairnError) as caught:
            cairn.flush()
        self.assertTrue(caught.exception.retryable)
        self.assertEqual(caught.exception.status, 503)
        cairn.flush()  # the server is back: the same point goes out, once
        cairn.end_run()
        self.assertEqual([m["value"] for m in self.history(run.run_id, "kept")], [1.0])

    def test_experiment_created_by_someone_else_meanwhile(self):
        made = self.c.post(API + "experiments/create", {"name": "py-race"})
        self.assertEqual(made.status, 200, repr(made))
        # Our lookup says "missing", as if the other process had not created it yet.
        self.proxy.inject("/experiments/get-by-name", 404)
        creates_before = self.proxy.count("/experiments/create", 400)
        with cairn.start_run(experiment="py-race", tracking_uri=self.proxy.url) as run:
            pass
        self.assertEqual(self.proxy.count("/experiments/create", 400) - creates_before, 1)
        self.assertEqual(run.experiment_id, made.body["experiment_id"])

    # -- interpreter exit ---------------------------------------------------------------------

    def test_exit_without_end_run_flushes_and_finishes(self):
        p = self.python(ATEXIT_CHILD, child_env(CAIRN_TRACKING_URI=self.url,
                                                CAIRN_FLUSH_INTERVAL="60"))
        self.assertEqual(p.returncode, 0, p.stderr)
        run_id, pending = p.stdout.split()
        self.assertEqual(int(pending), 11, "the last points must still be queued at exit")
        got = self.get_run(run_id)
        self.assertEqual(got["info"]["status"], "FINISHED")
        self.assertEqual(self.tags(got)["last"], "yes")
        self.assertEqual(self.params(got), {"n": "3500"})
        self.assertEqual([m["step"] for m in self.history(run_id, "loss")], list(range(3510)))

    def test_uncaught_exception_at_exit_fails_the_run(self):
        p = self.python(CRASH_CHILD, child_env(CAIRN_TRACKING_URI=self.url,
                                               MLFLOW_EXPERIMENT_NAME="py-crash",
                                               CAIRN_FLUSH_INTERVAL="60"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("RuntimeError: boom", p.stderr)
        got = self.get_run(p.stdout.strip())
        self.assertEqual(got["info"]["status"], "FAILED")
        exp = self.c.get(API + "experiments/get-by-name", {"experiment_name": "py-crash"})
        self.assertEqual(got["info"]["experiment_id"], exp.body["experiment"]["experiment_id"])
        self.assertEqual(len(self.history(got["info"]["run_id"], "before_crash")), 1)

    # -- cairn run ----------------------------------------------------------------------------

    def test_attaches_to_the_run_named_by_the_environment(self):
        made = self.c.post(API + "runs/create", {"experiment_id": "0", "start_time": tl.now_ms()})
        self.assertEqual(made.status, 200, repr(made))
        run_id = made.body["run"]["info"]["run_id"]
        env = child_env(CAIRN_RUN_ID=run_id, MLFLOW_RUN_ID=run_id, CAIRN_TRACKING_URI=self.url,
                        MLFLOW_TRACKING_URI=self.url, MLFLOW_EXPERIMENT_ID="0")
        p = self.python(ATTACH_CHILD, env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["attached", run_id, "RUNNING"])
        got = self.get_run(run_id)
        self.assertEqual(got["info"]["status"], "RUNNING")  # the owner ends it, not the client
        self.assertNotIn("end_time", got["info"])
        self.assertEqual(self.params(got), {"lr": "0.1"})
        self.assertEqual(self.tags(got)["phase"], "train")
        self.assertEqual(len(self.history(run_id, "loss")), 20)
        self.assertEqual(len(self.history(run_id, "after_block")), 1)
        missing = self.c.get(API + "experiments/get-by-name",
                             {"experiment_name": "py-never-created"})
        self.assertEqual(missing.status, 404, "attaching must not create an experiment")

    def pending_child(self, tracking_uri, run_id, ready, **env):
        """PENDING_CHILD attached to `run_id`, which does not exist yet; returns the process
        once it printed its first line, and that line."""
        p = subprocess.Popen([sys.executable, "-c", PENDING_CHILD], cwd=self.root,
                             env=child_env(CAIRN_RUN_ID=run_id, MLFLOW_RUN_ID=run_id,
                                           CAIRN_TRACKING_URI=tracking_uri,
                                           MLFLOW_TRACKING_URI=tracking_uri,
                                           CAIRN_FLUSH_INTERVAL="0.2", READY=ready, **env),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        return p, p.stdout.readline().split()

    def finish_pending_child(self, p, client, run_id, exp_name, ready):
        """Creates the run as the wrapper would, lets the child finish, and checks that all it
        logged arrived."""
        # The wrapper's idempotent create-with-id, as its journal sends it (docs/api/cairn.md).
        made = client.post("/api/cairn/v1/runs", {
            "run_id": run_id, "experiment_name": exp_name, "run_name": "named-by-wrapper",
            "start_time": tl.now_ms(), "tags": [{"key": "cairn.command", "value": "train"}]})
        self.assertEqual(made.status, 200, repr(made))
        with open(ready, "w"):
            pass
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        steps = int(out.split("logged", 1)[1].split()[0])
        r = client.get(API + "runs/get", {"run_id": run_id})
        self.assertEqual(r.status, 200, repr(r))
        got = r.body["run"]
        self.assertEqual(got["info"]["status"], "RUNNING")  # the wrapper ends it
        self.assertEqual(got["info"]["experiment_id"], made.body["experiment_id"])
        self.assertEqual(got["info"]["run_name"], "named-by-client")  # the client's name wins
        self.assertEqual(self.params(got), {"lr": "0.1", "late": "yes"})
        tags = self.tags(got)
        self.assertEqual((tags["phase"], tags["half"], tags["cairn.command"]),
                         ("train", "done", "train"))
        self.assertEqual(tags["mlflow.runName"], "named-by-client")
        hist = client.get(API + "metrics/get-history",
                          {"run_id": run_id, "metric_key": "loss", "max_results": 25000})
        self.assertEqual([(m["step"], m["value"]) for m in hist.body.get("metrics", [])],
                         [(s, 1.0 / (s + 1)) for s in range(steps)])
        listing = client.get(API + "artifacts/list", {"run_id": run_id, "path": "model"})
        self.assertEqual([f["path"] for f in listing.body.get("files", [])],
                         ["model/" + os.path.basename(ready) + ".weights"])
        return got

    def test_attaches_to_a_run_the_server_does_not_have_yet(self):
        run_id = os.urandom(16).hex()
        ready = os.path.join(self.root, "ready-" + run_id)
        not_found_before = self.proxy.count("/runs/log-batch", 404)
        p, first = self.pending_child(self.proxy.url, run_id, ready, EARLY_ARTIFACT="1")
        self.assertEqual(first[:3], ["started", "True", "''"], p.stderr.read() if not first else "")
        self.assertLess(float(first[3]), 5.0, "start_run waited for the server")
        self.assertEqual(p.stdout.readline().split(),
                         ["artifact-refused", "True", "RESOURCE_DOES_NOT_EXIST"])
        time.sleep(2)  # the child logs into the missing run meanwhile
        self.assertGreater(self.proxy.count("/runs/log-batch", 404) - not_found_before, 0,
                           "the child should have tried to send into the missing run")
        self.finish_pending_child(p, self.c, run_id, "py-pending", ready)

    def test_attaches_while_the_server_is_unreachable(self):
        with socket.socket() as s:  # a port nothing listens on, for the server started later
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = "http://127.0.0.1:%d" % port
        run_id = os.urandom(16).hex()
        ready = os.path.join(self.root, "ready-" + run_id)
        p, first = self.pending_child(url, run_id, ready, CAIRN_HTTP_BACKOFF="0.05")
        self.assertEqual(first[:3], ["started", "True", "''"], p.stderr.read() if not first else "")
        self.assertLess(float(first[3]), 5.0, "start_run waited for the server")
        time.sleep(1.5)  # the child logs while nothing answers
        data_dir = tempfile.mkdtemp(dir=self.root)
        late = tl.CairnServer(tl.CONFIG.cairn, data_dir, port=port, name="cairn (late)")
        tl.add_diagnostic(late.log_tail)
        late.start()
        try:
            self.finish_pending_child(p, late.client(), run_id, "py-unreachable", ready)
        finally:
            late.stop()

    def test_ending_waits_for_the_run_to_appear(self):
        run_id = os.urandom(16).hex()
        p = subprocess.Popen([sys.executable, "-c", PENDING_END_CHILD], cwd=self.root,
                             env=child_env(CAIRN_RUN_ID=run_id, CAIRN_TRACKING_URI=self.url,
                                           CAIRN_FLUSH_INTERVAL="0.2"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        self.assertEqual(p.stdout.readline().strip(), "ending")
        time.sleep(1)
        self.assertIsNone(p.poll(), "end_run gave up on the run before it appeared")
        made = self.c.post("/api/cairn/v1/runs", {"run_id": run_id, "start_time": tl.now_ms()})
        self.assertEqual(made.status, 200, repr(made))
        out, err = p.communicate(timeout=60)
        self.assertEqual((p.returncode, out.strip()), (0, "ended"), err)
        self.assertEqual(self.params(self.get_run(run_id)), {"p": "1"})
        self.assertEqual([m["value"] for m in self.history(run_id, "m")], [1.0])

    def test_under_cairn_run_the_wrapper_ends_the_run(self):
        script = os.path.join(self.root, "train.py")
        with open(script, "w") as f:
            f.write(WRAPPED_CHILD)
        p = subprocess.run([tl.CONFIG.cairn, "run", "--experiment", "py-wrapped", "--",
                            sys.executable, script],
                           env=child_env(CAIRN_TRACKING_URI=self.url), cwd=self.root,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 3, p.stderr)
        wrapper_run = [line.split()[2] for line in p.stderr.splitlines()
                       if line.startswith("cairn: run ") and " in experiment " in line]
        self.assertEqual(len(wrapper_run), 1, p.stderr)
        self.assertIn("RUN %s True" % wrapper_run[0], p.stdout)
        got = self.get_run(wrapper_run[0])
        self.assertEqual(got["info"]["status"], "FAILED")  # from exit code 3
        self.assertEqual(got["info"]["run_name"], "renamed-by-client")
        self.assertEqual(self.params(got)["epochs"], "2")
        self.assertEqual([m["value"] for m in self.history(wrapper_run[0], "acc")], [0.5])
        exp_id = got["info"]["experiment_id"]
        runs = self.c.post(API + "runs/search", {"experiment_ids": [exp_id]})
        self.assertEqual(len(runs.body.get("runs", [])), 1, "the client created a second run")

    def test_params_come_from_cairn_run_over_the_defaults(self):
        script = os.path.join(self.root, "params.py")
        with open(script, "w") as f:
            f.write("import json, os, cairn\n"
                    "p = cairn.params({'lr': 0.01, 'epochs': 3, 'fast': False, 'name': 'x'})\n"
                    "print(json.dumps(p, sort_keys=True), os.environ['CAIRN_PARAM_BATCH_SIZE'])\n")
        p = subprocess.run([tl.CONFIG.cairn, "run", "--experiment", "py-params", "-p", "lr=0.5",
                            "-p", "epochs=7", "-p", "fast=yes", "-p", "batch-size=32", "--",
                            sys.executable, script],
                           env=child_env(CAIRN_TRACKING_URI=self.url), cwd=self.root,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(),
                         '{"batch-size": "32", "epochs": 7, "fast": true, "lr": 0.5, '
                         '"name": "x"} 32')
        # Outside cairn run: the defaults; a value that cannot be converted: ValueError.
        self.assertEqual(cairn.params({"lr": 0.01}), {"lr": 0.01})
        with mock.patch.dict(os.environ, {"CAIRN_PARAMS": '{"epochs": "many"}'}):
            with self.assertRaisesRegex(ValueError, "'epochs' is 'many', which is not an integer"):
                cairn.params({"epochs": 3})

    # -- artifacts ----------------------------------------------------------------------------

    def test_log_artifact_round_trip(self):
        src = os.path.join(self.root, "art")
        os.makedirs(os.path.join(src, "tree", "sub"), exist_ok=True)
        payload = os.urandom(1 << 20) + b"end"
        with open(os.path.join(src, "weights v1.bin"), "wb") as f:
            f.write(payload)
        with open(os.path.join(src, "tree", "a.txt"), "w") as f:
            f.write("alpha")
        with open(os.path.join(src, "tree", "sub", "b.json"), "w") as f:
            f.write('{"b": 1}')
        with cairn.start_run(experiment="py-artifacts") as run:
            cairn.log_artifact(os.path.join(src, "weights v1.bin"), "ckpt/epoch1")
            cairn.log_artifact(os.path.join(src, "tree", "a.txt"))
            run.log_artifacts(os.path.join(src, "tree"), "copy")
            # Refused before the server read the body: the next request must not suffer.
            refused = os.path.join(self.root, "refused.bin")
            with open(refused, "wb") as f:
                f.truncate(8 << 20)
            with self.assertRaises(cairn.CairnError) as caught:
                cairn.log_artifact(refused, "a/../b")
            self.assertEqual(caught.exception.error_code, "INVALID_PARAMETER_VALUE")
            os.remove(refused)
            with self.assertRaises(FileNotFoundError):
                cairn.log_artifact(os.path.join(self.root, "no-such-file"))
            with self.assertRaises(IsADirectoryError):
                cairn.log_artifact(src)
        got = self.get_run(run.run_id)
        root = self.artifact_root(got)
        r = self.c.get("/api/2.0/mlflow-artifacts/artifacts/%s/ckpt/epoch1/weights%%20v1.bin"
                       % root)
        self.assertEqual(r.status, 200, repr(r))
        self.assertEqual(hashlib.sha256(r.raw).hexdigest(), hashlib.sha256(payload).hexdigest())
        listing = self.c.get(API + "artifacts/list", {"run_id": run.run_id, "path": "ckpt/epoch1"})
        self.assertEqual(listing.body["files"], [
            {"path": "ckpt/epoch1/weights v1.bin", "is_dir": False, "file_size": len(payload)}])
        for path, body in (("a.txt", b"alpha"), ("copy/a.txt", b"alpha"),
                           ("copy/sub/b.json", b'{"b": 1}')):
            r = self.c.get("/api/2.0/mlflow-artifacts/artifacts/%s/%s" % (root, path))
            self.assertEqual((r.status, r.raw), (200, body), path)

    def test_use_dataset_and_log_input(self):
        src = os.path.join(self.root, "dataset-src")
        os.makedirs(os.path.join(src, "sub"), exist_ok=True)
        files = {"a.csv": b"1,2\n", "sub/b.bin": os.urandom(300000)}
        for path, content in files.items():
            with open(os.path.join(src, path), "wb") as f:
                f.write(content)
        env = dict(os.environ, CAIRN_DATA_CACHE=os.path.join(self.root, "dcache"))
        p = subprocess.run([tl.CONFIG.cairn, "data", "add", "pyds", src], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(src, "c.txt"), "w") as f:
            f.write("third")
        p = subprocess.run([tl.CONFIG.cairn, "data", "add", "pyds", src], env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        out = os.path.join(self.root, "pyds-out")
        with cairn.start_run(experiment="py-data") as run:
            got = cairn.use_dataset("pyds", version=1, dir=out, context="training")
            self.assertEqual(got, out)
            v = cairn.log_input("pyds", context="evaluation")
            self.assertEqual(v["version"], 2)
        for path, content in files.items():
            with open(os.path.join(out, path), "rb") as f:
                self.assertEqual(f.read(), content)
        self.assertFalse(os.path.exists(os.path.join(out, "c.txt")), "version 1 has no c.txt")

        inputs = self.get_run(run.run_id)["inputs"]["dataset_inputs"]
        by_context = {i["tags"][0]["value"]: i["dataset"] for i in inputs}
        self.assertEqual(json.loads(by_context["training"]["source"])["version"], 1)
        self.assertEqual(json.loads(by_context["evaluation"]["source"])["version"], 2)
        self.assertEqual(by_context["evaluation"]["digest"], v["digest"][:32])

        # A damaged file is fetched again; one that is right is not.
        with open(os.path.join(out, "a.csv"), "wb") as f:
            f.write(b"bad")
        transport = cairn._run._transport(None)
        fetched, _ = cairn._data.materialise(transport,
                                             cairn._data.get_version(transport, "pyds", 1), out)
        self.assertEqual(fetched, 1)
        with open(os.path.join(out, "a.csv"), "rb") as f:
            self.assertEqual(f.read(), files["a.csv"])
        with self.assertRaises(cairn.CairnError) as caught:
            cairn.use_dataset("no-such-dataset", dir=out)
        self.assertEqual(caught.exception.error_code, "RESOURCE_DOES_NOT_EXIST")

    def test_log_artifact_streams_from_disk(self):
        path = os.path.join(self.root, "big.bin")
        size = 32 << 20
        with open(path, "wb") as f:
            f.truncate(size)
        with cairn.start_run(experiment="py-artifacts") as run:
            tracemalloc.start()
            try:
                cairn.log_artifact(path)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
        self.assertLess(peak, 4 << 20, "uploading 32 MiB allocated %d bytes at peak" % peak)
        listing = self.c.get(API + "artifacts/list", {"run_id": run.run_id})
        self.assertEqual([(f["path"], f["file_size"]) for f in listing.body["files"]],
                         [("big.bin", size)])
        os.remove(path)

    # -- packaging ----------------------------------------------------------------------------

    def test_wheel_is_well_formed_and_reproducible(self):
        out1, out2 = (tempfile.mkdtemp(dir=self.root) for _ in range(2))
        name = cairn_build.build_wheel(out1)
        self.assertEqual(name, "cairn-%s-py3-none-any.whl" % cairn.__version__)
        self.assertEqual(cairn_build.build_wheel(out2), name)
        with open(os.path.join(out1, name), "rb") as a, open(os.path.join(out2, name), "rb") as b:
            self.assertEqual(a.read(), b.read(), "two builds differ")
        dist_info = "cairn-%s.dist-info/" % cairn.__version__
        with zipfile.ZipFile(os.path.join(out1, name)) as zf:
            names = zf.namelist()
            record = list(csv.reader(io.StringIO(zf.read(dist_info + "RECORD").decode())))
            for row in record:
                if row[0] == dist_info + "RECORD":
                    self.assertEqual(row[1:], ["", ""])
                    continue
                data = zf.read(row[0])
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
                self.assertEqual(row[1], "sha256=" + digest.decode(), row[0])
                self.assertEqual(int(row[2]), len(data), row[0])
            self.assertEqual(sorted(r[0] for r in record), sorted(names))
            for module in ("__init__", "_batch", "_http", "_run", "_version"):
                self.assertIn("cairn/%s.py" % module, names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])
            metadata = zf.read(dist_info + "METADATA").decode()
            self.assertIn("\nName: cairn\n", metadata)
            self.assertIn("\nVersion: %s\n" % cairn.__version__, metadata)
            wheel = zf.read(dist_info + "WHEEL").decode()
            self.assertIn("Root-Is-Purelib: true", wheel)
            self.assertIn("Tag: py3-none-any", wheel)
        self.assertEqual(cairn_build.get_requires_for_build_wheel(), [])
        self.assertEqual(cairn_build.get_requires_for_build_sdist(), [])
        # The fallback reader for Pythons without tomllib agrees with tomllib.
        import tomllib
        with open(os.path.join(PYTHON_DIR, "pyproject.toml"), "rb") as f:
            raw = f.read()
        self.assertEqual(cairn_build._parse_simple_table(raw.decode(), "project"),
                         tomllib.loads(raw.decode())["project"])

    def test_offline_install_into_a_venv(self):
        venv = os.path.join(self.root, "venv")
        made = subprocess.run([sys.executable, "-m", "venv", venv], capture_output=True,
                              text=True, timeout=120)
        if made.returncode != 0 and "ensurepip" in (made.stdout + made.stderr):
            self.skipTest("python3 -m venv cannot install pip: ensurepip is missing (Debian "
                          "package python3-venv); output: " + made.stdout + made.stderr)
        self.assertEqual(made.returncode, 0, made.stdout + made.stderr)
        vpy = os.path.join(venv, "bin", "python")
        tree_before = sorted(self._tree(PYTHON_DIR))
        pip = [vpy, "-m", "pip", "install", "--no-index", "--no-cache-dir",
               "--disable-pip-version-check", "--quiet"]
        env = child_env()
        del env["PYTHONPATH"]
        # Nothing may come from the network: an unreachable proxy makes any attempt fail.
        env.update(http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9")

        def pip_install(*args):
            p = subprocess.run(pip + list(args), env=env, cwd=self.root, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        pip_install(PYTHON_DIR)
        p = subprocess.run([vpy, "-c", VENV_CHILD], env=dict(env, CAIRN_TRACKING_URI=self.url),
                           cwd=self.root, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        got = self.get_run(p.stdout.strip())
        self.assertEqual(got["info"]["status"], "FINISHED")
        self.assertEqual(self.params(got), {"installed": cairn.__version__})
        self.assertEqual(sorted(self._tree(PYTHON_DIR)), tree_before,
                         "building must not write into the source tree")

        def where():
            p = subprocess.run([vpy, "-c", "import cairn, importlib.metadata as m; "
                                "print(m.version('cairn'), cairn.__file__)"],
                               env=env, cwd=self.root, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            return p.stdout.split()

        sdist_dir = tempfile.mkdtemp(dir=self.root)
        sdist = os.path.join(sdist_dir, cairn_build.build_sdist(sdist_dir))
        pip_install("--force-reinstall", sdist)
        version, path = where()
        self.assertEqual(version, cairn.__version__)
        self.assertTrue(path.startswith(venv), path)

        pip_install("--force-reinstall", "--editable", PYTHON_DIR)
        version, path = where()
        self.assertEqual(version, cairn.__version__)
        self.assertEqual(path, os.path.join(PYTHON_DIR, "cairn", "__init__.py"))

    @staticmethod
    def _tree(top):
        for root, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                yield os.path.relpath(os.path.join(root, name), top)


def basic_auth(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class AuthTest(unittest.TestCase):
    """A server with `--auth on`: where the client finds credentials, and what a user sees when
    they are missing, wrong, revoked or not enough. Credentials go to child processes (a fresh
    program each, as a user's script would be) through their environment and their own
    XDG_CONFIG_HOME; this process's environment is only changed inside `mock.patch.dict`."""

    ADMIN_PASSWORD = "admin-secret-1"
    WRITER_PASSWORD = "writer-secret-1"
    READER_PASSWORD = "reader-secret-1"

    @classmethod
    def setUpClass(cls):
        cls.root, data_dir = tl.make_temp_root("cairn-pyauth-")
        password_file = cls.secret_file("admin-password", cls.ADMIN_PASSWORD + "\n")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (auth on)",
                                    extra_args=["--auth", "on", "--init-admin", "admin",
                                                "--password-file", password_file])
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.addClassCleanup(cls.server.stop)
        cls.url = cls.server.url
        cls.c = cls.server.client()
        cls.admin = basic_auth("admin", cls.ADMIN_PASSWORD)
        for user, password in (("writer", cls.WRITER_PASSWORD), ("reader", cls.READER_PASSWORD)):
            r = cls.c.post(API + "users/create", {"username": user, "password": password},
                           headers={"Authorization": cls.admin})
            if r.status != 200:
                raise AssertionError("users/create %s: %r" % (user, r))
        cls.writer = basic_auth("writer", cls.WRITER_PASSWORD)
        cls.writer_token, _ = cls.make_token(cls.writer, "py-tests")
        cls.proxy = CountingProxy(cls.url)
        cls.addClassCleanup(cls.proxy.close)

    @classmethod
    def tearDownClass(cls):
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def tearDown(self):
        # A run started here by mistake must not stay active for the tests that follow.
        end_active_runs()

    # -- helpers ------------------------------------------------------------------------------

    @classmethod
    def secret_file(cls, name, text, mode=0o600):
        path = os.path.join(cls.root, name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as f:
            f.write(text)
        os.chmod(path, mode)
        return path

    @classmethod
    def make_token(cls, authorization, name):
        r = cls.c.post("/api/cairn/v1/tokens", {"name": name, "scopes": ["write"]},
                       headers={"Authorization": authorization})
        if r.status != 200 or not r.body["value"].startswith("cairn_"):
            raise AssertionError("tokens: %r" % (r,))
        return r.body["value"], r.body["token"]["id"]

    def as_admin(self, method, path, body=None, params=None):
        return self.c.request(method, path, body=body, params=params,
                              headers={"Authorization": self.admin})

    def config_home(self, credentials, mode=0o600):
        """A fresh XDG_CONFIG_HOME whose cairn/credentials holds `credentials`."""
        home = tempfile.mkdtemp(dir=self.root)
        os.mkdir(os.path.join(home, "cairn"))
        path = os.path.join(home, "cairn", "credentials")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(credentials)
        os.chmod(path, mode)
        return home

    def log_run(self, via, experiment=None, url=None, **env):
        """Runs AUTH_CHILD with `env` on top of a clean environment (no credentials file unless
        XDG_CONFIG_HOME is passed); returns its JSON line."""
        p = subprocess.run([sys.executable, "-c", AUTH_CHILD], cwd=self.root,
                           env=child_env(CAIRN_TRACKING_URI=url or self.url, VIA=via,
                                         EXPERIMENT=experiment or "py-auth-" + via, **env),
                           capture_output=True, text=True, timeout=60)
        lines = p.stdout.strip().splitlines()
        self.assertTrue(lines, "no output (status %d): %s" % (p.returncode, p.stderr))
        result = json.loads(lines[-1])
        self.assertEqual(p.returncode, 3 if "error_code" in result else 0, p.stderr)
        return result

    def assert_logged(self, result, via):
        self.assertIn("run_id", result, "the run was not logged: %r" % (result,))
        r = self.as_admin("GET", API + "runs/get", params={"run_id": result["run_id"]})
        self.assertEqual(r.status, 200, repr(r))
        run = r.body["run"]
        self.assertEqual(run["info"]["status"], "FINISHED")
        self.assertEqual(PythonClientTest.params(run), {"lr": "0.01"})
        self.assertEqual(PythonClientTest.tags(run)["via"], via)
        h = self.as_admin("GET", API + "metrics/get-history",
                          params={"run_id": result["run_id"], "metric_key": "loss"})
        self.assertEqual(h.status, 200, repr(h))
        self.assertEqual(sorted((m["step"], m["value"]) for m in h.body["metrics"]),
                         [(0, 1.0), (1, 0.5), (2, 1.0 / 3)])

    def assert_refused(self, result, error_code, status):
        self.assertEqual((result.get("error_code"), result.get("status")), (error_code, status),
                         result)
        self.assertFalse(result["retryable"], result)
        if status == 401:
            # The message says what to do about it.
            self.assertIn("CAIRN_TOKEN", result["message"])
            self.assertIn("cairn login", result["message"])

    # -- environment --------------------------------------------------------------------------

    def test_cairn_token_logs_a_run(self):
        self.assert_refused(self.log_run("nothing"), "UNAUTHENTICATED", 401)
        self.assert_logged(self.log_run("cairn-token", CAIRN_TOKEN=self.writer_token),
                           "cairn-token")
        # CAIRN_TOKEN comes first: wrong MLflow credentials and a wrong file do not matter.
        home = self.config_home("[default]\ntoken = cairn_0000\n")
        self.assert_logged(self.log_run("token-first", CAIRN_TOKEN=self.writer_token,
                                        MLFLOW_TRACKING_USERNAME="writer",
                                        MLFLOW_TRACKING_PASSWORD="wrong-password",
                                        XDG_CONFIG_HOME=home), "token-first")

    def test_mlflow_username_and_password(self):
        self.assert_logged(self.log_run("basic", MLFLOW_TRACKING_USERNAME="writer",
                                        MLFLOW_TRACKING_PASSWORD=self.WRITER_PASSWORD), "basic")
        self.assert_refused(self.log_run("basic-wrong", MLFLOW_TRACKING_USERNAME="writer",
                                         MLFLOW_TRACKING_PASSWORD="wrong-password"),
                            "UNAUTHENTICATED", 401)
        self.assert_logged(self.log_run("mlflow-token", MLFLOW_TRACKING_TOKEN=self.writer_token),
                           "mlflow-token")

    def test_refused_token_fails_at_once(self):
        before = len(self.proxy.requests)
        result = self.log_run("wrong-token", url=self.proxy.url, CAIRN_TOKEN="cairn_" + "0" * 40)
        self.assert_refused(result, "UNAUTHENTICATED", 401)
        # Retrying would take about a minute (7 retries from 0.5 s, doubling); a 401 is final.
        self.assertLess(result["seconds"], 2.0, result)
        with self.proxy.lock:
            sent = self.proxy.requests[before:]
        self.assertEqual([status for _, _, status in sent], [401], sent)

    # -- the credentials file -----------------------------------------------------------------

    def test_credentials_file_section_for_the_tracking_uri(self):
        # A trailing '/' on either side does not matter; the server's section beats [default].
        home = self.config_home("[default]\ntoken = cairn_0000\n\n[%s/]\ntoken = %s\n"
                                % (self.url, self.writer_token))
        self.assert_logged(self.log_run("file-section", XDG_CONFIG_HOME=home), "file-section")
        home = self.config_home("[%s]\ntoken = %s\n" % (self.url, self.writer_token))
        self.assert_logged(self.log_run("file-slash", url=self.url + "/", XDG_CONFIG_HOME=home),
                           "file-slash")
        # The section for this server is the one used, even when [default] would have worked.
        home = self.config_home("[%s]\ntoken = cairn_0000\n\n[default]\ntoken = %s\n"
                                % (self.url, self.writer_token))
        self.assert_refused(self.log_run("file-wrong", XDG_CONFIG_HOME=home),
                            "UNAUTHENTICATED", 401)

    def test_credentials_file_default_section(self):
        other = "http://127.0.0.1:9"
        home = self.config_home("[%s]\ntoken = cairn_0000\n\n[default]\nusername = writer\n"
                                "password = %s\n" % (other, self.WRITER_PASSWORD))
        self.assert_logged(self.log_run("file-default", XDG_CONFIG_HOME=home), "file-default")
        # Another server's section is not used for this one.
        home = self.config_home("[%s]\ntoken = %s\n" % (other, self.writer_token))
        self.assert_refused(self.log_run("file-other", XDG_CONFIG_HOME=home),
                            "UNAUTHENTICATED", 401)

    def test_credentials_file_others_may_read_is_refused(self):
        for mode in (0o644, 0o640):
            home = self.config_home("[default]\ntoken = %s\n" % self.writer_token, mode)
            path = os.path.join(home, "cairn", "credentials")
            with mock.patch.dict(os.environ, {"XDG_CONFIG_HOME": home}):
                with self.assertRaises(cairn.CairnError) as caught:
                    cairn.start_run(experiment="py-auth-readable", tracking_uri=self.url)
            self.assertEqual(caught.exception.error_code, "PERMISSION_DENIED")
            self.assertIn(path, caught.exception.message)
            self.assertIn("chmod 600", caught.exception.message)
            self.assertIsNone(cairn.active_run())
            got = self.as_admin("GET", API + "experiments/get-by-name",
                                params={"experiment_name": "py-auth-readable"})
            self.assertEqual(got.status, 404, "nothing should reach the server: %r" % (got,))
        os.chmod(path, 0o600)  # the same file, private now, is used
        self.assert_logged(self.log_run("file-private", XDG_CONFIG_HOME=home), "file-private")

    def test_cairn_login_writes_the_credentials_file(self):
        home = tempfile.mkdtemp(dir=self.root)
        path = os.path.join(home, "cairn", "credentials")
        env = child_env(XDG_CONFIG_HOME=home, HOME=home)

        def login(password):
            password_file = self.secret_file("login-password", password + "\n")
            return subprocess.run([tl.CONFIG.cairn, "login", "-u", "writer", "--password-file",
                                   password_file, "--tracking-uri", self.url],
                                  env=env, cwd=self.root, capture_output=True, text=True,
                                  timeout=60)

        p = login(self.WRITER_PASSWORD)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn(path, p.stdout + p.stderr)
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        with open(path) as f:
            text = f.read()
        self.assertNotIn(self.WRITER_PASSWORD, text)
        saved = configparser.ConfigParser(interpolation=None)
        saved.read_string(text)
        self.assertEqual(saved.sections(), [self.url])
        self.assertTrue(saved[self.url]["token"].startswith("cairn_"), text)
        # The client finds it with no credentials in the environment.
        self.assert_logged(self.log_run("login", XDG_CONFIG_HOME=home), "login")
        # A wrong password says so and leaves the file alone.
        p = login("wrong-password")
        self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("refused", p.stderr)
        with open(path) as f:
            self.assertEqual(f.read(), text)

    # -- permissions and revocation -----------------------------------------------------------

    def test_read_only_user_is_refused_a_write(self):
        made = self.as_admin("POST", API + "experiments/create", {"name": "py-auth-shared"})
        self.assertEqual(made.status, 200, repr(made))
        exp_id = made.body["experiment_id"]
        reader = {"MLFLOW_TRACKING_USERNAME": "reader",
                  "MLFLOW_TRACKING_PASSWORD": self.READER_PASSWORD}
        # Reading is the default; writing into someone else's experiment is not.
        seen = self.c.get(API + "experiments/get", {"experiment_id": exp_id},
                          headers={"Authorization": basic_auth("reader", self.READER_PASSWORD)})
        self.assertEqual((seen.status, seen.body["experiment"]["name"]), (200, "py-auth-shared"))
        self.assert_refused(self.log_run("reader", experiment="py-auth-shared", **reader),
                            "PERMISSION_DENIED", 403)
        runs = self.as_admin("POST", API + "runs/search", {"experiment_ids": [exp_id]})
        self.assertEqual(runs.body.get("runs", []), [])
        granted = self.as_admin("POST", API + "experiments/permissions/create", {
            "experiment_id": exp_id, "username": "reader", "permission": "EDIT"})
        self.assertEqual(granted.status, 200, repr(granted))
        self.assert_logged(self.log_run("reader", experiment="py-auth-shared", **reader),
                           "reader")

    def test_token_revoked_during_a_run(self):
        token, token_id = self.make_token(self.writer, "py-revoked")
        p = subprocess.Popen([sys.executable, "-c", REVOKED_CHILD], cwd=self.root,
                             env=child_env(CAIRN_TRACKING_URI=self.url, CAIRN_TOKEN=token,
                                           EXPERIMENT="py-auth-revoked"),
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        run_id = p.stdout.readline().strip()
        self.assertTrue(run_id, p.stderr.read() if p.poll() is not None else "")
        revoked = self.c.post("/api/cairn/v1/tokens/revoke", {"token": token_id},
                              headers={"Authorization": self.writer})
        self.assertEqual(revoked.status, 200, repr(revoked))
        fresh, _ = self.make_token(self.writer, "py-fresh")
        out, err = p.communicate("go\n%s\n" % fresh, timeout=60)
        self.assertEqual(p.returncode, 0, err)
        refused, again, end = (json.loads(line) for line in out.splitlines())
        self.assertEqual(refused["flush"], "UNAUTHENTICATED", out)
        self.assertLess(refused["seconds"], 2.0, out)
        # What was logged meanwhile was kept, and goes with the new token.
        self.assertEqual(again, {"flush": "ok"}, out)
        self.assertEqual(end, {"end": "ok"}, out)
        h = self.as_admin("GET", API + "metrics/get-history",
                          params={"run_id": run_id, "metric_key": "loss"})
        self.assertEqual([(m["step"], m["value"]) for m in h.body["metrics"]],
                         [(0, 1.0), (1, 0.5)])


if __name__ == "__main__":
    sys.exit(tl.main("python_client", sys.modules[__name__]))
