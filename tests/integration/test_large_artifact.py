#!/usr/bin/env python3
"""A large artifact streams through cairn's artifact proxy with bounded server memory.

    python3 tests/integration/test_large_artifact.py --cairn build/cairn [--size-mib 2048]
        [--max-rss-mib 200] [--chunked] [--tmp-dir DIR]

Uploads N MiB of pseudo-random bytes with one PUT (body sent in 1 MiB pieces, Content-Length
set, or Transfer-Encoding: chunked with --chunked), hashing as it goes; downloads it again with
a streaming GET, hashing as it goes; compares size and sha256. The server's VmRSS is sampled
during both transfers and its VmHWM (peak resident set) read at the end; the peak must stay
below --max-rss-mib. The data dir needs about N MiB of free disk (see --tmp-dir).
"""

import hashlib
import http.client
import os
import shutil
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
MIB = 1 << 20


def add_arguments(parser):
    parser.add_argument("--size-mib", type=int, default=2048, help="artifact size in MiB (default 2048)")
    parser.add_argument("--max-rss-mib", type=int, default=200, help="limit on the server's peak RSS (default 200)")
    parser.add_argument("--chunked", action="store_true", help="upload with Transfer-Encoding: chunked")


def opt(name, default):
    args = tl.CONFIG.args
    return getattr(args, name, default) if args is not None else default


class MemorySampler(threading.Thread):
    """Polls /proc/<pid>/status; .peak_rss_kib is the largest VmRSS seen."""

    def __init__(self, pid, interval=0.1):
        super().__init__(daemon=True)
        self.pid = pid
        self.interval = interval
        self.peak_rss_kib = 0
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self):
        while not self._stop_event.is_set():
            try:
                rss = tl.read_proc_memory_kib(self.pid).get("VmRSS", 0)
            except OSError:
                return
            self.peak_rss_kib = max(self.peak_rss_kib, rss)
            self.samples += 1
            self._stop_event.wait(self.interval)

    def stop(self):
        self._stop_event.set()
        self.join(5)


def random_chunks(total_bytes, chunk=MIB):
    """Pseudo-random data in `chunk`-sized pieces (os.urandom: incompressible, never repeats)."""
    left = total_bytes
    while left > 0:
        n = min(chunk, left)
        yield os.urandom(n)
        left -= n


class LargeArtifactTest(unittest.TestCase):

    def setUp(self):
        self.size = opt("size_mib", 2048) * MIB
        self.limit_kib = opt("max_rss_mib", 200) * 1024
        base = opt("tmp_dir", None) or tempfile.gettempdir()
        free = shutil.disk_usage(base).free
        if free < self.size + 256 * MIB:
            self.fail("not enough free disk in %s for a %d MiB artifact (%d MiB free); use --tmp-dir or --size-mib"
                      % (base, self.size // MIB, free // MIB))
        self.root, self.data_dir = tl.make_temp_root("cairn-large-")
        if not tl.keep_data():
            self.addCleanup(shutil.rmtree, self.root, True)
        self.server = tl.CairnServer(tl.CONFIG.cairn, self.data_dir, name="cairn (large artifact)")
        tl.add_diagnostic(self.server.log_tail)
        self.addCleanup(self.stop_server)
        self.server.start()
        self.c = self.server.client(timeout=600)

    def stop_server(self):
        if self.server.running():
            self.server.stop()

    def connection(self):
        u = urllib.parse.urlsplit(self.server.url)
        return http.client.HTTPConnection(u.hostname, u.port, timeout=600)

    def upload(self, path):
        """Streams the body; returns (response, sha256 hex, seconds)."""
        digest = hashlib.sha256()
        conn = self.connection()
        chunked = opt("chunked", False)
        t0 = time.monotonic()
        try:
            conn.putrequest("PUT", path)
            conn.putheader("Content-Type", "application/octet-stream")
            if chunked:
                conn.putheader("Transfer-Encoding", "chunked")
            else:
                conn.putheader("Content-Length", str(self.size))
            conn.endheaders()
            try:
                for piece in random_chunks(self.size):
                    digest.update(piece)
                    if chunked:
                        conn.send(b"%x\r\n" % len(piece))
                        conn.send(piece)
                        conn.send(b"\r\n")
                    else:
                        conn.send(piece)
                if chunked:
                    conn.send(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError) as e:
                # the server gave up early; its reply (if any) says why
                try:
                    resp = conn.getresponse()
                    self.fail("server closed the upload early (%r): HTTP %d %r" % (e, resp.status, resp.read()[:500]))
                except (http.client.HTTPException, OSError):
                    self.fail("server closed the upload early: %r" % (e,))
            resp = conn.getresponse()
            body = resp.read()
            return (resp.status, body), digest.hexdigest(), time.monotonic() - t0
        finally:
            conn.close()

    def download(self, path):
        """Streams the body; returns (status, headers, byte count, sha256 hex, seconds)."""
        digest = hashlib.sha256()
        conn = self.connection()
        t0 = time.monotonic()
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            if resp.status != 200:
                return resp.status, resp.headers, 0, resp.read()[:500], 0.0
            n = 0
            while True:
                piece = resp.read(MIB)
                if not piece:
                    break
                n += len(piece)
                digest.update(piece)
            return resp.status, resp.headers, n, digest.hexdigest(), time.monotonic() - t0
        finally:
            conn.close()

    def test_upload_and_download_stream_with_bounded_memory(self):
        exp_id = self.c.post(API + "experiments/create", {"name": "large-artifact"}).body["experiment_id"]
        run = self.c.post(API + "runs/create", {"experiment_id": exp_id, "start_time": tl.now_ms()}).body["run"]
        run_root = "%s/%s/artifacts" % (exp_id, run["info"]["run_id"])
        path = "%s/%s/big/blob.bin" % (ARTIFACTS, run_root)
        mem_start = self.server.memory_kib()

        sampler = MemorySampler(self.server.pid)
        sampler.start()
        try:
            (status, body), up_sha, up_s = self.upload(path)
            self.assertEqual(status, 200, "upload answered %d %r" % (status, body[:500]))
            mem_after_upload = self.server.memory_kib()

            listing = self.c.get(ARTIFACTS, {"path": run_root + "/big"})
            self.assertEqual(listing.status, 200, repr(listing))
            sizes = {f["path"]: f.get("file_size") for f in listing.body.get("files", [])}
            self.assertEqual(sizes, {"blob.bin": self.size}, "listing after upload: %r" % (listing.body,))

            status, headers, n, down_sha, down_s = self.download(path)
            self.assertEqual(status, 200, "download answered %d %r" % (status, down_sha))
        finally:
            sampler.stop()
        mem_end = self.server.memory_kib()

        mib = self.size / MIB
        print("\n  %d MiB: upload %.1f s (%.0f MiB/s), download %.1f s (%.0f MiB/s)%s"
              % (mib, up_s, mib / up_s if up_s else 0, down_s, mib / down_s if down_s else 0,
                 " [chunked upload]" if opt("chunked", False) else ""))
        print("  server memory (MiB): RSS at start %.1f, after upload %.1f, at end %.1f;"
              " peak sampled RSS %.1f (%d samples); VmHWM %.1f"
              % (mem_start["VmRSS"] / 1024, mem_after_upload["VmRSS"] / 1024, mem_end["VmRSS"] / 1024,
                 sampler.peak_rss_kib / 1024, sampler.samples, mem_end["VmHWM"] / 1024))

        self.assertEqual(n, self.size, "downloaded byte count differs from the upload")
        self.assertEqual(down_sha, up_sha, "downloaded bytes differ from the upload")
        length = headers.get("Content-Length")
        if length is not None:
            self.assertEqual(int(length), self.size)
        self.assertTrue(headers.get("Content-Disposition", "").lower().startswith("attachment"))
        self.assertEqual(headers.get("X-Content-Type-Options", "").lower(), "nosniff")
        peak = max(mem_end["VmHWM"], sampler.peak_rss_kib)
        self.assertLess(peak, self.limit_kib, "server peak RSS %.1f MiB exceeds %d MiB"
                        % (peak / 1024, self.limit_kib // 1024))

        # the file is gone once deleted, and disk is given back to the test
        self.assertEqual(self.c.delete(path).status, 200)
        self.assertEqual(self.c.get(path, raw=True).status, 404)


if __name__ == "__main__":
    sys.exit(tl.main("large_artifact", sys.modules[__name__], add_arguments=add_arguments))
