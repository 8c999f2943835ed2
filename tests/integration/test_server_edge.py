#!/usr/bin/env python3
"""The server's HTTP edge against a hostile client: ranges that reach past a representation,
oversized and slow headers, half-sent requests and idle connections by the thousand, cross-site
writes and foreign Host headers, uploads over the limit, the connection limit, TLS, and a
graceful shutdown with a request in flight. Standard library only; raw sockets where the bytes
on the wire matter.

    python3 tests/integration/test_server_edge.py --cairn build/release/cairn
"""

import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"


def start_server(test, *extra, name="edge"):
    root, data = tl.make_temp_root("cairn-edge-")
    server = tl.CairnServer(tl.CONFIG.cairn, data, extra_args=list(extra), name=name).start()
    test.addCleanup(lambda: shutil.rmtree(root, ignore_errors=True) if not tl.keep_data() else None)
    test.addCleanup(server.stop)
    return server


def raw_exchange(port, data, timeout=10.0, read_all=True):
    """Sends bytes on a fresh connection and returns everything read until the server closes
    (or until one complete answer when read_all is False)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        return read_answer(s, read_all)


def read_answer(s, read_all=True):
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not chunk:
            break
        out += chunk
        if not read_all and complete_answer(out):
            break
    return out


def complete_answer(raw):
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return len(body) >= int(value)
    return False


def parse_answer(raw):
    """(status, headers dict lowercased, body) of the first answer in raw bytes."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith(b"HTTP/1.1") else 0
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower().decode()] = value.strip().decode()
    if "content-length" in headers:
        body = body[:int(headers["content-length"])]
    return status, headers, body


def timed_health(port, timeout=5.0):
    """Seconds a fresh connection takes to get GET /health answered."""
    start = time.monotonic()
    raw = raw_exchange(port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", timeout,
                       read_all=False)
    elapsed = time.monotonic() - start
    status, _, body = parse_answer(raw)
    if (status, body) != (200, b"OK"):
        raise AssertionError("GET /health answered %r" % raw[:200])
    return elapsed


def request(server, method, path, body=None, headers=None):
    """One request on its own connection; (status, headers, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def post_json(server, endpoint, payload, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    status, hdrs, body = request(server, "POST", API + endpoint, json.dumps(payload).encode(), h)
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body  # the text/plain refusals


class RangeTest(unittest.TestCase):
    """No byte beyond a representation is ever sent, whatever the Range."""

    def setUp(self):
        self.server = start_server(self)

    def representations(self):
        """(path, exact bytes) of a UI page and an artifact."""
        status, _, page = request(self.server, "GET", "/")
        self.assertEqual(status, 200)
        _, run = post_json(self.server, "runs/create", {"experiment_id": "0"})
        uri = run["run"]["info"]["artifact_uri"]
        data = bytes(range(256)) * 4 + b"end"
        path = ARTIFACTS + uri.split("mlflow-artifacts:/", 1)[1].lstrip("/") + "/blob.bin"
        status, _, _ = request(self.server, "PUT", path, data)
        self.assertEqual(status, 200)
        return [("/", page), (path, data)]

    def test_ranges_never_reach_past_the_representation(self):
        for path, data in self.representations():
            n = len(data)
            cases = {
                "bytes=0-1000000": (206, data, "bytes 0-%d/%d" % (n - 1, n)),
                "bytes=%d-%d" % (n - 4, n + 500): (206, data[-4:], "bytes %d-%d/%d" % (n - 4, n - 1, n)),
                "bytes=-1000000": (206, data, "bytes 0-%d/%d" % (n - 1, n)),
                "bytes=5-2": (200, data, None),                # inverted: ignored
                "bytes=0-1,3-4": (200, data, None),            # multi-range: the whole, once
                "bytes=0-0,-1,0-99999999": (200, data, None),
                "bytes=%d-" % n: (416, b"", "bytes */%d" % n),  # starts past the end
                "bytes=%d-%d" % (n + 10, n + 20): (416, b"", "bytes */%d" % n),
                "bytes=-0": (416, b"", "bytes */%d" % n),
                "bytes=99999999999999999999999-": (416, b"", "bytes */%d" % n),
            }
            for header, (want_status, want_body, want_range) in cases.items():
                with self.subTest(path=path, range=header):
                    raw = raw_exchange(self.server.port, (
                        "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: %s\r\nConnection: close\r\n\r\n"
                        % (path, header)).encode())
                    status, headers, body = parse_answer(raw)
                    _, _, everything = raw.partition(b"\r\n\r\n")
                    self.assertEqual(status, want_status)
                    self.assertEqual(headers.get("content-range"), want_range)
                    if want_status != 416:
                        self.assertEqual(body, want_body)
                    # Nothing after the declared body: no heap, no second copy.
                    self.assertEqual(len(everything), int(headers["content-length"]))
                    self.assertLessEqual(len(everything), n)


class HostileClientTest(unittest.TestCase):
    def setUp(self):
        self.server = start_server(self)

    def test_oversized_headers_are_refused_with_431(self):
        long_line = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Long: " + b"a" * (64 << 10) + b"\r\n\r\n"
        status, headers, body = parse_answer(raw_exchange(self.server.port, long_line))
        self.assertEqual(status, 431)
        self.assertEqual(json.loads(body)["error_code"], "REQUEST_LIMIT_EXCEEDED")
        # A header line that never ends is cut off at the limit too.
        endless = b"GET /health HTTP/1.1\r\nX-Endless: " + b"b" * (64 << 10)
        status, _, _ = parse_answer(raw_exchange(self.server.port, endless))
        self.assertEqual(status, 431)
        many = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n" + b"".join(
            b"X-H%d: v\r\n" % i for i in range(200)) + b"\r\n"
        status, _, body = parse_answer(raw_exchange(self.server.port, many))
        self.assertEqual(status, 431)
        self.assertIn("header fields; the limit is 100", json.loads(body)["message"])
        self.assertLess(timed_health(self.server.port), 1.0)

    def test_malformed_requests_get_400(self):
        for raw in (b"GARBAGE\r\n\r\n", b"GET /health HTTP/9.9\r\n\r\n",
                    b"GET http://elsewhere/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                    b"POST " + API.encode() + b"experiments/create HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Length: zz\r\n\r\n"):
            with self.subTest(raw=raw[:40]):
                status, headers, body = parse_answer(raw_exchange(self.server.port, raw))
                self.assertEqual(status, 400)
                self.assertIn("error_code", json.loads(body))

    def test_health_answers_fast_while_hostile_clients_hold_connections(self):
        port = self.server.port
        held = []
        try:
            # 1,000 half-sent requests, a 64 KiB header line dribbling in, 200 headers dribbling in.
            for _ in range(1000):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(b"GET /heal")
                held.append(s)
            slow = []
            for head in (b"GET / HTTP/1.1\r\nX-Long: ", b"GET / HTTP/1.1\r\n"):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(head)
                slow.append(s)
                held.append(s)
            stop = threading.Event()

            def dribble():
                i = 0
                while not stop.is_set():
                    try:
                        slow[0].sendall(b"a" * 1024)
                        slow[1].sendall(b"X-H%d: v\r\n" % i)
                    except OSError:
                        return
                    i += 1
                    time.sleep(0.01)

            t = threading.Thread(target=dribble, daemon=True)
            t.start()
            time.sleep(0.3)
            times = [timed_health(port) for _ in range(5)]
            stop.set()
            t.join()
            self.assertLess(max(times), 0.1, "GET /health took %s s" % times)
        finally:
            for s in held:
                s.close()

    def test_thousands_of_idle_keep_alive_connections_lock_no_one_out(self):
        port = self.server.port
        idle = []
        try:
            for _ in range(2000):
                s = socket.create_connection(("127.0.0.1", port), timeout=10)
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                idle.append(s)
            for s in idle:
                status, _, body = parse_answer(read_answer(s, read_all=False))
                self.assertEqual((status, body), (200, b"OK"))
            times = [timed_health(port) for _ in range(5)]
            self.assertLess(max(times), 0.1, "GET /health took %s s" % times)
            print("server memory with 2,000 idle connections: %.1f MiB"
                  % (self.server.memory_kib()["VmRSS"] / 1024.0))
        finally:
            for s in idle:
                s.close()

    def test_cross_site_writes_are_refused(self):
        status, created = post_json(self.server, "experiments/create", {"name": "keep-me"})
        self.assertEqual(status, 200)
        exp = created["experiment_id"]
        # The classic CSRF: a text/plain form POST from another site.
        status, headers, body = request(
            self.server, "POST", API + "experiments/delete", json.dumps({"experiment_id": exp}),
            {"Content-Type": "text/plain", "Origin": "http://attacker.example"})
        self.assertEqual((status, body), (403, b"Cross-origin request blocked"))
        # Same-origin but not JSON: MLflow's own error.
        status, headers, body = request(
            self.server, "POST", API + "experiments/delete", json.dumps({"experiment_id": exp}),
            {"Content-Type": "text/plain"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(body), {
            "error_code": "INVALID_PARAMETER_VALUE",
            "message": "Bad Request. Content-Type must be one of ['application/json']."})
        status, headers, body = request(self.server, "POST", API + "experiments/delete",
                                        json.dumps({"experiment_id": exp}))
        self.assertEqual(json.loads(body)["message"], "Bad Request. Content-Type header is missing.")
        # A JSON write from a foreign origin (after a preflight the server never granted).
        status, _ = post_json(self.server, "experiments/delete", {"experiment_id": exp},
                              {"Origin": "http://attacker.example"})
        self.assertEqual(status, 403)
        # An artifact upload from a foreign origin.
        status, _, _ = request(self.server, "PUT", ARTIFACTS + "0/x/artifacts/f.txt", b"x",
                               {"Origin": "http://attacker.example"})
        self.assertEqual(status, 403)
        # The experiment survived all of it.
        status, got = 0, None
        conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=30)
        conn.request("GET", API + "experiments/get?experiment_id=" + exp)
        got = json.loads(conn.getresponse().read())
        self.assertEqual(got["experiment"]["lifecycle_stage"], "active")
        # The server's own origin may write.
        own = "http://127.0.0.1:%d" % self.server.port
        status, _ = post_json(self.server, "experiments/delete", {"experiment_id": exp},
                              {"Origin": own})
        self.assertEqual(status, 200)

    def test_foreign_host_headers_are_refused(self):
        status, headers, body = request(self.server, "GET", "/", headers={"Host": "attacker.example"})
        self.assertEqual((status, body),
                         (403, b"Invalid Host header - possible DNS rebinding attack detected"))
        status, _, body = request(self.server, "GET", API + "experiments/search?max_results=1",
                                  headers={"Host": "attacker.example:%d" % self.server.port})
        self.assertEqual(status, 403)
        for host in ("localhost:%d" % self.server.port, "127.0.0.1", "[::1]:80"):
            status, _, _ = request(self.server, "GET", "/", headers={"Host": host})
            self.assertEqual(status, 200, host)
        # Health checks answer whatever the Host (load balancers probe by address or name).
        status, _, body = request(self.server, "GET", "/health", headers={"Host": "lb.internal"})
        self.assertEqual((status, body), (200, b"OK"))

    def test_json_bodies_over_the_limit_are_refused_as_mlflow_does(self):
        body = json.dumps({"run_id": "r", "metrics": [], "pad": "x" * 1_200_000}).encode()
        status, headers, raw = request(self.server, "POST", API + "runs/log-batch", body,
                                       {"Content-Type": "application/json"})
        self.assertEqual(status, 400)
        self.assertEqual(json.loads(raw), {
            "error_code": "INVALID_PARAMETER_VALUE",
            "message": "Batched logging API requests must be at most 1000000 bytes, got a "
                       "request of size %d." % len(body)})
        # Chunked, with no length declared up front: cut off as it passes the limit.
        chunk = b"x" * 65536
        data = (b"POST " + API.encode() + b"experiments/create HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 20 + b"0\r\n\r\n")
        status, _, raw = parse_answer(raw_exchange(self.server.port, data))
        self.assertEqual(status, 400)
        self.assertIn("got a request of size over 1000000", json.loads(raw)["message"])

    def test_smuggling_and_endless_chunk_lines_are_refused(self):
        for head in (b"Transfer-Encoding: gzip\r\n",
                     b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
                     b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n"):
            with self.subTest(head=head):
                data = (b"POST " + API.encode() + b"experiments/create HTTP/1.1\r\n"
                        b"Host: 127.0.0.1\r\n"
                        b"Content-Type: application/json\r\n" + head + b"\r\n"
                        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                raw = raw_exchange(self.server.port, data)
                self.assertEqual(parse_answer(raw)[0], 400)
                self.assertEqual(raw.count(b"HTTP/1.1 "), 1, "a smuggled request was served")
        # A chunk-size line that never ends may not grow the server's buffer without bound: the
        # server stops taking it (and closes) long before 256 MiB have gone in.
        sent = 0
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=10) as s:
            s.sendall(b"POST " + API.encode() + b"experiments/create HTTP/1.1\r\n"
                      b"Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Transfer-Encoding: chunked\r\n\r\n1;")
            try:
                for _ in range(4096):
                    s.sendall(b"a" * 65536)
                    sent += 65536
            except OSError:
                pass  # closed on us: refused
            status, _, _ = parse_answer(read_answer(s))
            self.assertIn(status, (0, 400))
        self.assertLess(sent, 32 << 20, "the server kept reading an endless chunk line")
        # HTTP/1.1 without Host.
        status, _, _ = parse_answer(raw_exchange(self.server.port, b"GET /health HTTP/1.1\r\n\r\n"))
        self.assertEqual(status, 400)


class LimitsTest(unittest.TestCase):
    def test_upload_over_the_limit_is_refused_and_nothing_is_kept(self):
        server = start_server(self, "--max-upload", "1M")
        _, run = post_json(server, "runs/create", {"experiment_id": "0"})
        rel = run["run"]["info"]["artifact_uri"].split("mlflow-artifacts:/", 1)[1].lstrip("/")
        blobs = os.path.join(server.data_dir, "artifacts")

        def files():
            return sorted(os.path.join(d, f) for d, _, fs in os.walk(blobs) for f in fs)

        before = files()
        # Declared too large: refused before a byte of it is read.
        status, _, body = request(server, "PUT", ARTIFACTS + rel + "/big.bin", b"z" * (2 << 20))
        self.assertEqual(status, 413)
        self.assertIn("exceeds the limit", json.loads(body)["message"])
        # Chunked past the limit: refused midway, the partial blob discarded.
        chunk = b"y" * 65536
        data = (("PUT %s%s/big2.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
                 % (ARTIFACTS, rel)).encode()
                + (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 40 + b"0\r\n\r\n")
        status, _, body = parse_answer(raw_exchange(server.port, data))
        self.assertEqual(status, 413)
        self.assertIn("nothing of it was kept", json.loads(body)["message"])
        time.sleep(0.2)
        self.assertEqual(files(), before, "a refused upload left files behind")
        status, _, body = request(server, "GET", API + "artifacts/list?run_id=" + run["run"]["info"]["run_id"])
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body).get("files", []), [])
        # The same limit holds for bytes sent for a dataset, named by the server or not.
        stored = tl.BlobStore(blobs).blobs()
        raw = {"Content-Type": "application/octet-stream"}
        for method, path in (("POST", "/api/cairn/v1/datasets/blobs"),
                             ("PUT", "/api/cairn/v1/datasets/blobs/" + "ab" * 32)):
            status, _, body = request(server, method, path, b"d" * (2 << 20), raw)
            self.assertEqual(status, 413, (method, body))
            data = (("%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream"
                     "\r\nTransfer-Encoding: chunked\r\n\r\n" % (method, path)).encode()
                    + (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 40 + b"0\r\n\r\n")
            status, _, body = parse_answer(raw_exchange(server.port, data))
            self.assertEqual(status, 413, (method, body))
        time.sleep(0.2)
        self.assertEqual(files(), before, "a refused dataset upload left files behind")
        self.assertEqual(tl.BlobStore(blobs).blobs(), stored)
        # Under the limit: stored.
        status, _, _ = request(server, "PUT", ARTIFACTS + rel + "/small.bin", b"s" * 1000)
        self.assertEqual(status, 200)

    def test_uploads_of_declared_length_end_exactly_where_they_say(self):
        server = start_server(self)
        _, run = post_json(server, "runs/create", {"experiment_id": "0"})
        rel = run["run"]["info"]["artifact_uri"].split("mlflow-artifacts:/", 1)[1].lstrip("/")
        blobs = os.path.join(server.data_dir, "artifacts")

        def files():
            return sorted(os.path.join(d, f) for d, _, fs in os.walk(blobs) for f in fs)

        def put_head(name, length):
            return ("PUT %s%s/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n"
                    % (ARTIFACTS, rel, name, length)).encode()

        # A large upload cut short (the client goes away midway): nothing of it is kept.
        before = files()
        big = 12 << 20
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(put_head("cut.bin", big) + b"c" * (big // 2))
        deadline = time.monotonic() + 5
        while files() != before and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(files(), before, "a cut upload left files behind")

        # Two uploads and a read pipelined on one connection, the first one large: each body
        # ends at its declared length and the next request is read from the byte after it.
        first = os.urandom(9 << 20)
        second = b"second body"
        data = (put_head("one.bin", len(first)) + first + put_head("two.bin", len(second)) + second
                + ("GET %s%s/two.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                   % (ARTIFACTS, rel)).encode())
        raw = raw_exchange(server.port, data, timeout=30)
        self.assertEqual(raw.count(b"HTTP/1.1 200 OK"), 3, raw[:600])
        self.assertTrue(raw.endswith(second), raw[-200:])
        status, _, body = request(server, "GET", ARTIFACTS + rel + "/one.bin")
        self.assertEqual((status, len(body)), (200, len(first)))
        self.assertEqual(body, first)

    def test_timeouts_close_slow_and_idle_connections(self):
        server = start_server(self, "--header-timeout", "0.5", "--idle-timeout", "0.5")
        start = time.monotonic()
        status, _, body = parse_answer(raw_exchange(server.port, b"GET /health HTTP/1.1\r\nHost: x"))
        self.assertEqual(status, 408)
        self.assertLess(time.monotonic() - start, 5)
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            self.assertEqual(parse_answer(read_answer(s, read_all=False))[0], 200)
            start = time.monotonic()
            self.assertEqual(s.recv(10), b"", "the idle connection was not closed")
            self.assertLess(time.monotonic() - start, 5)

    def test_connections_past_the_limit_get_503(self):
        server = start_server(self, "--max-connections", "16")
        held = [socket.create_connection(("127.0.0.1", server.port), timeout=10) for _ in range(16)]
        try:
            time.sleep(0.2)
            status, headers, body = parse_answer(raw_exchange(
                server.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
            self.assertEqual(status, 503)
            self.assertEqual(json.loads(body)["error_code"], "TEMPORARILY_UNAVAILABLE")
        finally:
            for s in held:
                s.close()
        time.sleep(0.2)
        self.assertLess(timed_health(server.port), 1.0)

    def test_cors_is_off_unless_origins_are_given(self):
        server = start_server(self)
        status, headers, _ = request(server, "OPTIONS", API + "runs/create",
                                     headers={"Origin": "https://notebooks.lab",
                                              "Access-Control-Request-Method": "POST"})
        self.assertEqual(status, 403)
        self.assertNotIn("access-control-allow-origin", headers)
        server = start_server(self, "--cors-origins", "https://notebooks.lab")
        status, headers, _ = request(server, "OPTIONS", API + "runs/create",
                                     headers={"Origin": "https://notebooks.lab",
                                              "Access-Control-Request-Method": "POST"})
        self.assertEqual(status, 204)
        self.assertEqual(headers["access-control-allow-origin"], "https://notebooks.lab")
        status, created = post_json(server, "experiments/create", {"name": "from-notebook"},
                                    {"Origin": "https://notebooks.lab"})
        self.assertEqual(status, 200)
        status, _ = post_json(server, "experiments/create", {"name": "from-elsewhere"},
                              {"Origin": "https://other.lab"})
        self.assertEqual(status, 403)


class TlsTest(unittest.TestCase):
    def test_https_serves_the_api_and_the_clients_trust_a_given_ca(self):
        root, _ = tl.make_temp_root("cairn-tls-")
        self.addCleanup(lambda: shutil.rmtree(root, ignore_errors=True))
        cert, key = os.path.join(root, "cert.pem"), os.path.join(root, "key.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                        "-keyout", key, "-out", cert], check=True, capture_output=True)
        server = start_server(self, "--tls-cert", cert, "--tls-key", key)
        self.assertTrue(server.url.startswith("https://"), server.url)
        ctx = ssl.create_default_context(cafile=cert)
        conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=30)
        conn.request("POST", API + "experiments/create", json.dumps({"name": "over-tls"}),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        self.assertEqual(resp.status, 200)
        resp.read()
        # Plain HTTP on the TLS port gets nothing useful.
        raw = raw_exchange(server.port, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 5)
        self.assertNotIn(b"200 OK", raw)
        # The C++ client: refused without the CA, fine with --ca-cert or CAIRN_CA_BUNDLE.
        env = dict(os.environ)
        env.pop("CAIRN_CA_BUNDLE", None)
        args = [tl.CONFIG.cairn, "experiments", "ls", "--tracking-uri", server.url]
        p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("certificate", p.stderr.lower())
        p = subprocess.run(args + ["--ca-cert", cert], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("over-tls", p.stdout)
        p = subprocess.run(args, env=dict(env, CAIRN_CA_BUNDLE=cert), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        # The Python client, trusting the same authority through CAIRN_CA_BUNDLE.
        python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python")
        script = ("import cairn\n"
                  "with cairn.start_run(experiment='py-over-tls') as run:\n"
                  "    run.log_metric('loss', 0.5)\n"
                  "print(run.run_id)\n")
        p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           timeout=120, env=dict(env, PYTHONPATH=python_dir, CAIRN_CA_BUNDLE=cert,
                                                 CAIRN_TRACKING_URI=server.url,
                                                 CAIRN_HTTP_MAX_RETRIES="0"))
        self.assertEqual(p.returncode, 0, p.stderr)
        conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=ctx, timeout=30)
        conn.request("GET", API + "runs/get?run_id=" + p.stdout.strip())
        run = json.loads(conn.getresponse().read())["run"]
        self.assertEqual(run["data"]["metrics"][0]["value"], 0.5)


class ShutdownTest(unittest.TestCase):
    def test_sigterm_lets_the_request_in_flight_finish_and_exits_0(self):
        server = start_server(self)
        _, run = post_json(server, "runs/create", {"experiment_id": "0"})
        rel = run["run"]["info"]["artifact_uri"].split("mlflow-artifacts:/", 1)[1].lstrip("/")
        payload = os.urandom(4 << 20)
        # An upload in flight: headers and half the body sent, then SIGTERM.
        s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        s.sendall(("PUT %s%s/late.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n"
                   % (ARTIFACTS, rel, len(payload))).encode() + payload[:len(payload) // 2])
        idle = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        time.sleep(0.3)
        server.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        self.assertEqual(idle.recv(10), b"", "an idle connection was kept open by the shutdown")
        idle.close()
        with self.assertRaises(OSError):
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
        s.sendall(payload[len(payload) // 2:])
        status, headers, body = parse_answer(read_answer(s, read_all=False))
        s.close()
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("connection"), "close")
        self.assertEqual(server.proc.wait(30), 0)
        # The upload was committed: a restarted server serves it.
        server.start()
        status, _, body = request(server, "GET", ARTIFACTS + rel + "/late.bin")
        self.assertEqual((status, body == payload), (200, True))


if __name__ == "__main__":
    sys.exit(tl.main("server_edge", sys.modules[__name__]))
