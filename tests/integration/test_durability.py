#!/usr/bin/env python3
"""Durability and concurrency of cairn's tracking store.

    python3 tests/integration/test_durability.py --cairn build/cairn [--writers 8 --requests 300]

- Eight writers, each on its own keep-alive connection, log-batch concurrently to separate runs:
  no reply may be an error and none may mention "database is locked"; every point is stored.
- SIGKILL during concurrent ingest: every log-batch that was acknowledged (HTTP 200) before the
  kill is found intact after a restart on the same data dir (two kill/restart rounds).
- SIGTERM stops the server with status 0 and the data is there after a restart; an idle
  keep-alive client does not hold up shutdown.
- The memory: backend, a sqlite URI with ?synchronous=full, and a clear error for an
  unsupported store URI.
Each test starts its own server on its own fresh data dir.
"""

import os
import shutil
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
LOCKED = "database is locked"


def add_arguments(parser):
    parser.add_argument("--writers", type=int, default=8, help="concurrent writers (default 8)")
    parser.add_argument("--requests", type=int, default=300, help="log-batch requests per writer (default 300)")
    parser.add_argument("--metrics-per-request", type=int, default=10)
    parser.add_argument("--kill-after", type=float, default=1.0, help="seconds of ingest before SIGKILL")


def opt(name, default):
    args = tl.CONFIG.args
    return getattr(args, name, default) if args is not None else default


class ServerTestCase(unittest.TestCase):
    """Starts a server on a fresh data dir for each test."""

    def setUp(self):
        self.root, self.data_dir = tl.make_temp_root("cairn-durability-")
        if not tl.keep_data():
            self.addCleanup(shutil.rmtree, self.root, True)
        self.server = tl.CairnServer(tl.CONFIG.cairn, self.data_dir, name="cairn (%s)" % self._testMethodName)
        tl.add_diagnostic(self.server.log_tail)
        self.addCleanup(self.stop_server)
        self.server.start()
        self.c = self.server.client()

    def stop_server(self):
        if self.server.running():
            self.server.stop()

    def ok(self, resp):
        self.assertEqual(resp.status, 200, repr(resp))
        self.assertIsInstance(resp.body, dict, repr(resp))
        return resp.body

    def new_experiment(self):
        return self.ok(self.c.post(API + "experiments/create",
                                   {"name": "dur-%d-%s" % (os.getpid(), time.monotonic_ns())}))["experiment_id"]

    def new_run(self, exp_id, name):
        body = {"experiment_id": exp_id, "run_name": name, "start_time": tl.now_ms()}
        return self.ok(self.c.post(API + "runs/create", body))["run"]["info"]["run_id"]

    def history(self, run_id, key):
        out, token = [], None
        for _ in range(10000):
            params = {"run_id": run_id, "metric_key": key, "max_results": 25000}
            if token:
                params["page_token"] = token
            body = self.ok(self.c.get(API + "metrics/get-history", params))
            out.extend(body.get("metrics", []))
            token = body.get("next_page_token")
            if not token:
                return out
        self.fail("get-history pagination does not end")

    def assertNoLockErrorsInLog(self):
        self.assertEqual(self.server.output_count(LOCKED), 0, "the server logged '%s'" % LOCKED)


def batch(seq, width, value_base=0.0):
    """One log-batch body worth of unique points: keys k0..k{width-1} at step `seq`."""
    return [{"key": "k%d" % j, "value": value_base + seq + j / 100.0, "timestamp": 1_000_000 + seq, "step": seq}
            for j in range(width)]


class ConcurrentWritersTest(ServerTestCase):

    def test_eight_keepalive_writers_never_see_errors_or_database_is_locked(self):
        writers, requests, width = opt("writers", 8), opt("requests", 300), opt("metrics_per_request", 10)
        exp_id = self.new_experiment()
        run_ids = [self.new_run(exp_id, "writer-%d" % i) for i in range(writers)]
        errors, lock = [], threading.Lock()
        reconnects = [0] * writers
        start_gate = threading.Barrier(writers)

        def writer(i):
            client = tl.KeepAliveClient(self.server, timeout=120)
            try:
                start_gate.wait()
                for seq in range(requests):
                    body = {"run_id": run_ids[i], "metrics": batch(seq, width)}
                    if seq % 50 == 0:  # mix in params and tags, which touch other tables
                        body["params"] = [{"key": "p%d" % seq, "value": str(seq)}]
                        body["tags"] = [{"key": "progress", "value": str(seq)}]
                    try:
                        resp = client.post(API + "runs/log-batch", body)
                    except Exception as e:  # a dropped connection is a failure too
                        with lock:
                            errors.append("writer %d request %d: %r" % (i, seq, e))
                        return
                    if resp.status != 200 or LOCKED in resp.text.lower():
                        with lock:
                            errors.append("writer %d request %d: %r" % (i, seq, resp))
            finally:
                reconnects[i] = client.reconnects
                client.close()

        t0 = time.monotonic()
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
            self.assertFalse(t.is_alive(), "a writer hung")
        elapsed = time.monotonic() - t0
        total = writers * requests
        print("\n  %d log-batch requests (%d points) from %d writers in %.2f s: %.0f req/s, %.0f points/s;"
              " stale keep-alive retries: %d" % (total, total * width, writers, elapsed, total / elapsed,
                                                 total * width / elapsed, sum(reconnects)))
        self.assertEqual(errors[:20], [], "%d failed requests" % len(errors))
        self.assertNoLockErrorsInLog()
        for i, run_id in enumerate(run_ids):
            for j in (0, width - 1):
                hist = self.history(run_id, "k%d" % j)
                self.assertEqual(sorted(h["step"] for h in hist), list(range(requests)),
                                 "writer %d key k%d lost or duplicated points" % (i, j))
            run = self.ok(self.c.get(API + "runs/get", {"run_id": run_id}))["run"]
            latest = {m["key"]: m for m in run["data"]["metrics"]}
            self.assertEqual(latest["k0"]["step"], requests - 1)
            self.assertEqual(len(run["data"]["params"]), len(range(0, requests, 50)))

    def test_concurrent_readers_and_writers(self):
        """Searches and gets interleaved with writes never fail."""
        exp_id = self.new_experiment()
        run_ids = [self.new_run(exp_id, "rw-%d" % i) for i in range(4)]
        errors, lock, stop = [], threading.Lock(), threading.Event()

        def record(msg):
            with lock:
                errors.append(msg)

        def writer(i):
            client = tl.KeepAliveClient(self.server)
            try:
                for seq in range(150):
                    resp = client.post(API + "runs/log-batch", {"run_id": run_ids[i], "metrics": batch(seq, 5)})
                    if resp.status != 200:
                        record("writer %d: %r" % (i, resp))
            except Exception as e:
                record("writer %d: %r" % (i, e))
            finally:
                client.close()

        def reader(i):
            client = tl.KeepAliveClient(self.server)
            try:
                while not stop.is_set():
                    for resp in (client.post(API + "runs/search", {"experiment_ids": [exp_id],
                                                                   "filter": "metrics.k0 >= 0",
                                                                   "order_by": ["metrics.k1 DESC"]}),
                                 client.get(API + "runs/get", {"run_id": run_ids[i % 4]}),
                                 client.get(API + "metrics/get-history", {"run_id": run_ids[i % 4], "metric_key": "k0"})):
                        if resp.status != 200 or LOCKED in resp.text.lower():
                            record("reader %d: %r" % (i, resp))
            except Exception as e:
                record("reader %d: %r" % (i, e))
            finally:
                client.close()

        writers = [threading.Thread(target=writer, args=(i,)) for i in range(4)]
        readers = [threading.Thread(target=reader, args=(i,)) for i in range(4)]
        for t in writers + readers:
            t.start()
        for t in writers:
            t.join(600)
        stop.set()
        for t in readers:
            t.join(120)
        self.assertEqual(errors[:20], [], "%d failed requests" % len(errors))
        self.assertNoLockErrorsInLog()
        for run_id in run_ids:
            self.assertEqual(len(self.history(run_id, "k4")), 150)


class CrashRecoveryTest(ServerTestCase):

    def ingest_then_kill(self, run_ids, first_seq, width, acked):
        """Writers log-batch unique points to their own run until the server is SIGKILLed;
        acked[i] collects the seq numbers answered 200. Returns the number of failures seen
        while the server was still alive (must be 0)."""
        killed = threading.Event()
        alive_errors = []
        lock = threading.Lock()

        def writer(i):
            client = tl.KeepAliveClient(self.server, timeout=30)
            seq = first_seq
            try:
                while True:
                    try:
                        resp = client.post(API + "runs/log-batch", {"run_id": run_ids[i], "metrics": batch(seq, width, 0.5)})
                    except Exception as e:
                        if not killed.is_set():
                            with lock:
                                alive_errors.append("writer %d seq %d: %r" % (i, seq, e))
                        return
                    if resp.status == 200:
                        acked[i].append(seq)
                    elif not killed.is_set():
                        with lock:
                            alive_errors.append("writer %d seq %d: %r" % (i, seq, resp))
                    seq += 1
                    if killed.is_set():
                        return
            finally:
                client.close()

        base = [len(a) for a in acked]
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(len(run_ids))]
        for t in threads:
            t.start()
        time.sleep(opt("kill_after", 1.0))
        # (on a slow machine, give every writer a few acknowledged batches before the kill)
        tl.wait_until(lambda: all(len(a) >= b + 3 for a, b in zip(acked, base)), timeout=20)
        killed.set()
        self.server.kill()
        for t in threads:
            t.join(60)
            self.assertFalse(t.is_alive(), "a writer hung after the server was killed")
        return alive_errors

    def test_sigkill_during_ingest_loses_nothing_acknowledged(self):
        width = 10
        exp_id = self.new_experiment()
        run_ids = [self.new_run(exp_id, "crash-%d" % i) for i in range(4)]
        acked = [[] for _ in run_ids]
        next_seq = 0
        for round_no in (1, 2):
            before = [len(a) for a in acked]
            alive_errors = self.ingest_then_kill(run_ids, next_seq, width, acked)
            self.assertEqual(alive_errors[:10], [], "round %d: errors before the kill" % round_no)
            new = sum(len(a) for a in acked) - sum(before)
            self.assertGreater(new, 0, "round %d: nothing was acknowledged before the kill" % round_no)
            print("\n  round %d: %d acknowledged log-batch requests before SIGKILL" % (round_no, new))
            self.server.start()  # same data dir, new port
            self.c = self.server.client()
            for i, run_id in enumerate(run_ids):
                want = set(acked[i])
                for j in range(width):
                    hist = self.history(run_id, "k%d" % j)
                    got = {h["step"]: h["value"] for h in hist}
                    missing = sorted(want - set(got))
                    self.assertEqual(missing[:20], [], "round %d run %d key k%d: %d acknowledged points lost"
                                     % (round_no, i, j, len(missing)))
                    wrong = [s for s in want if abs(got[s] - (0.5 + s + j / 100.0)) > 1e-9]
                    self.assertEqual(wrong[:20], [], "points with corrupted values")
                    self.assertEqual(len(hist), len(got), "duplicate points after recovery")
                run = self.ok(self.c.get(API + "runs/get", {"run_id": run_id}))["run"]
                self.assertEqual(run["info"]["run_id"], run_id)
                latest = {m["key"]: m for m in run["data"]["metrics"]}
                self.assertEqual(set(latest), {"k%d" % j for j in range(width)})
                self.assertGreaterEqual(latest["k0"]["step"], max(acked[i]))
            # the next round writes new, unique steps
            next_seq = 1 + max(max(a) for a in acked) + 1000
        # the restarted server still accepts writes and reads everything back
        self.ok(self.c.post(API + "runs/log-metric", {"run_id": run_ids[0], "key": "after", "value": 1,
                                                       "timestamp": 1, "step": 0}))
        self.assertEqual(len(self.history(run_ids[0], "after")), 1)
        self.assertNoLockErrorsInLog()


class GracefulRestartTest(ServerTestCase):

    def test_sigterm_exits_zero_and_data_survives_restart(self):
        exp_id = self.new_experiment()
        run_id = self.new_run(exp_id, "persist")
        self.ok(self.c.post(API + "runs/log-batch", {"run_id": run_id, "metrics": batch(0, 3),
                                                     "params": [{"key": "lr", "value": "0.1"}],
                                                     "tags": [{"key": "t", "value": "v"}]}))
        self.ok(self.c.post(API + "experiments/set-experiment-tag", {"experiment_id": exp_id, "key": "e", "value": "1"}))
        put = self.c.put("/api/2.0/mlflow-artifacts/artifacts/%s/%s/artifacts/a/b.txt" % (exp_id, run_id), b"hello")
        self.assertEqual(put.status, 200, repr(put))
        self.assertEqual(self.server.stop(), 0, "SIGTERM must exit with status 0")
        self.server.start()
        run = self.ok(self.c.get(API + "runs/get", {"run_id": run_id}))["run"]
        self.assertEqual({p["key"]: p["value"] for p in run["data"]["params"]}, {"lr": "0.1"})
        self.assertEqual({m["key"] for m in run["data"]["metrics"]}, {"k0", "k1", "k2"})
        self.assertEqual({t["key"]: t["value"] for t in run["data"]["tags"]}.get("t"), "v")
        exp = self.ok(self.c.get(API + "experiments/get", {"experiment_id": exp_id}))["experiment"]
        self.assertEqual({t["key"]: t["value"] for t in exp["tags"]}, {"e": "1"})
        got = self.c.get("/api/2.0/mlflow-artifacts/artifacts/%s/%s/artifacts/a/b.txt" % (exp_id, run_id), raw=True)
        self.assertEqual((got.status, got.raw), (200, b"hello"))
        # a new experiment gets an id that does not collide with the old one
        self.assertNotEqual(self.new_experiment(), exp_id)

    def test_sigint_exits_zero(self):
        self.ok(self.c.post(API + "experiments/create", {"name": "sigint-%d" % os.getpid()}))
        self.assertEqual(self.server.interrupt(), 0, "SIGINT must exit with status 0")


class ShutdownAndBackendsTest(unittest.TestCase):
    """Servers started with options of their own, each on a fresh data dir."""

    def start(self, *extra_args):
        root, data_dir = tl.make_temp_root("cairn-backends-")
        if not tl.keep_data():
            self.addCleanup(shutil.rmtree, root, True)
        server = tl.CairnServer(tl.CONFIG.cairn, data_dir, extra_args=extra_args,
                                name="cairn (%s)" % self._testMethodName)
        tl.add_diagnostic(server.log_tail)
        self.addCleanup(lambda: server.running() and server.stop())
        server.start()
        return server, data_dir

    def test_sigterm_does_not_wait_for_idle_keepalive_clients(self):
        server, _ = self.start()
        idle = tl.KeepAliveClient(server)
        self.assertEqual(idle.get("/health", raw=True).status, 200)  # connection stays open
        t0 = time.monotonic()
        self.assertEqual(server.stop(timeout=15), 0)
        self.assertLess(time.monotonic() - t0, 5.0, "an idle keep-alive client held up shutdown")
        idle.close()

    def test_memory_backend_serves_the_api(self):
        server, data_dir = self.start("--backend-store-uri", "memory:")
        c = server.client()
        exp = c.post(API + "experiments/create", {"name": "in-memory"})
        self.assertEqual(exp.status, 200, repr(exp))
        self.assertFalse(os.path.exists(os.path.join(data_dir, "cairn.db")),
                         "memory: must not create a database file")

    def test_synchronous_full_sqlite_keeps_data_across_restart(self):
        root, data_dir = tl.make_temp_root("cairn-sync-")
        if not tl.keep_data():
            self.addCleanup(shutil.rmtree, root, True)
        uri = "sqlite:///%s/full.db?synchronous=full" % data_dir
        server = tl.CairnServer(tl.CONFIG.cairn, data_dir, extra_args=("--backend-store-uri", uri),
                                name="cairn (synchronous=full)")
        tl.add_diagnostic(server.log_tail)
        self.addCleanup(lambda: server.running() and server.stop())
        server.start()
        c = server.client()
        exp = c.post(API + "experiments/create", {"name": "durable-full"})
        self.assertEqual(exp.status, 200, repr(exp))
        server.kill()
        server.start()
        got = server.client().get(API + "experiments/get-by-name", {"experiment_name": "durable-full"})
        self.assertEqual(got.status, 200, repr(got))
        self.assertTrue(os.path.exists(os.path.join(data_dir, "full.db")))

    def test_unsupported_store_uri_is_a_clear_error(self):
        root, data_dir = tl.make_temp_root("cairn-baduri-")
        if not tl.keep_data():
            self.addCleanup(shutil.rmtree, root, True)
        import subprocess
        proc = subprocess.run([tl.CONFIG.cairn, "server", "--port", "0", "--data-dir", data_dir,
                               "--backend-store-uri", "mysql://nowhere/db"],
                              capture_output=True, text=True, timeout=30)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("unsupported backend store URI", proc.stderr)


if __name__ == "__main__":
    sys.exit(tl.main("durability", sys.modules[__name__], add_arguments=add_arguments))
