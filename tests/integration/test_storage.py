#!/usr/bin/env python3
"""A server's stores checked against each other: `cairn verify-store` on a data directory a
real server wrote, while the server runs and after it stopped, with a flipped byte in a blob
and a blob removed behind the index's back found and named.

Usage: test_storage.py --cairn build/release/cairn
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"


class VerifyStoreTest(unittest.TestCase):
    def setUp(self):
        self.root, self.data = tl.make_temp_root("cairn-storage-")
        self.server = tl.CairnServer(tl.CONFIG.cairn, self.data, name="cairn (storage)").start()
        tl.add_diagnostic(self.server.log_tail)
        self.c = self.server.client()

    def tearDown(self):
        if self.server.running():
            self.server.stop()
        if not tl.keep_data():
            shutil.rmtree(self.root, True)

    def verify(self):
        return subprocess.run([tl.CONFIG.cairn, "verify-store", "--data-dir", self.data],
                              capture_output=True, text=True, timeout=120)

    def blobs(self):
        return tl.BlobStore(os.path.join(self.data, "artifacts"))

    def test_verify_store_finds_a_flipped_byte_and_a_missing_blob(self):
        run = self.c.post(API + "runs/create", {"experiment_id": "0"}).body["run"]["info"]
        root = ARTIFACTS + "0/%s/artifacts/" % run["run_id"]
        files = {"model.bin": b"weights " * 1000, "notes.txt": b"a note\n",
                 "copy.txt": b"a note\n", "eval/metrics.json": b'{"acc": 0.9}'}
        for path, content in files.items():
            self.assertEqual(self.c.put(root + path, content).status, 200)

        # While the server runs.
        p = self.verify()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("blobs: 3 hashed", p.stdout, "equal files are one blob")
        self.assertIn("artifact files: 4, 0 without their blob", p.stdout)
        self.assertIn("the stores agree", p.stdout)

        self.server.stop()
        digest = hashlib.sha256(files["model.bin"]).hexdigest()
        self.blobs().overwrite(digest, 100, ord("X"))
        note_digest = hashlib.sha256(files["notes.txt"]).hexdigest()
        self.blobs().remove(note_digest)
        p = self.verify()
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        flipped = bytearray(files["model.bin"])
        flipped[100] = ord("X")
        self.assertIn("%s: its bytes hash to %s" % (digest, hashlib.sha256(flipped).hexdigest()),
                      p.stdout)
        self.assertIn("0/%s/artifacts/model.bin (%s): its blob is corrupt"
                      % (run["run_id"], digest[:12]), p.stdout)
        for name in ("notes.txt", "copy.txt"):
            self.assertIn("0/%s/artifacts/%s (%s): no such blob"
                          % (run["run_id"], name, note_digest[:12]), p.stdout)
        self.assertIn("4 problem(s) found", p.stdout)

        p = subprocess.run([tl.CONFIG.cairn, "verify-store", "--data-dir",
                            os.path.join(self.root, "nowhere", "x")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("error: no store at", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "nowhere")),
                         "a check makes no store where there was none")

    def orphan(self, content, age_seconds):
        """A blob no artifact names, as an upload killed between its blob and its index entry
        leaves one, written `age_seconds` ago; its digest."""
        return self.blobs().plant(content, age_seconds)

    def gc(self, *args):
        return subprocess.run([tl.CONFIG.cairn, "gc", "--tracking-uri", self.server.url, *args],
                              capture_output=True, text=True, timeout=120)

    def test_gc_collects_old_unreferenced_blobs_and_nothing_else(self):
        run = self.c.post(API + "runs/create", {"experiment_id": "0"}).body["run"]["info"]
        root = ARTIFACTS + "0/%s/artifacts/" % run["run_id"]
        kept = {"model.bin": b"weights " * 100, "notes.txt": b"a note\n"}
        for path, content in kept.items():
            self.assertEqual(self.c.put(root + path, content).status, 200)
        old = self.orphan(b"left by a killed upload", 7200)
        young = self.orphan(b"an upload on its way", 0)

        p = self.gc("--dry-run")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("would collect 1 unreferenced blob(s), 23 B, of 4 blob(s); 1 kept, "
                      "written in the last 3600 s", p.stdout)
        self.assertTrue(self.blobs().has(old), "a dry run removes nothing")
        p = self.gc()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("collected 1 unreferenced blob(s)", p.stdout)
        self.assertFalse(self.blobs().has(old))
        self.assertTrue(self.blobs().has(young), "the grace window keeps an upload's blob")
        for path, content in kept.items():
            got = self.c.get(root + path, raw=True)
            self.assertEqual((got.status, got.body), (200, content))
        p = self.gc("--grace", "0")
        self.assertIn("collected 1 unreferenced blob(s)", p.stdout)
        self.assertFalse(self.blobs().has(young))
        p = self.verify()
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("unreferenced", p.stdout)

        bad = self.c.post("/api/cairn/v1/gc", {"grace_seconds": -1})
        self.assertEqual(bad.status, 400, bad.text)
        self.assertIn("grace_seconds", bad.body["message"])

    def test_storage_says_where_the_bytes_are(self):
        exps = {}
        for name in ("vision", "speech"):
            exps[name] = self.c.post(API + "experiments/create", {"name": name}).body["experiment_id"]
        for name, files in (("vision", {"a.bin": b"x" * 3000, "shared.txt": b"same bytes"}),
                            ("speech", {"shared.txt": b"same bytes"})):
            run = self.c.post(API + "runs/create",
                              {"experiment_id": exps[name]}).body["run"]["info"]
            for path, content in files.items():
                url = ARTIFACTS + "%s/%s/artifacts/%s" % (exps[name], run["run_id"], path)
                self.assertEqual(self.c.put(url, content).status, 200)
        self.orphan(b"left behind", 0)
        # This machine's caches: a step cache holding one 2,048-byte output.
        cache = os.path.join(self.root, "cache")
        os.makedirs(os.path.join(cache, "objects", "ab"))
        with open(os.path.join(cache, "objects", "ab", "cdef"), "wb") as f:
            f.write(b"o" * 2048)
        env = dict(os.environ, CAIRN_CACHE_DIR=cache, CAIRN_DATA_CACHE=os.path.join(cache, "data"),
                   CAIRN_ENV_STORE=os.path.join(cache, "envs"))
        p = subprocess.run([tl.CONFIG.cairn, "storage", "--tracking-uri", self.server.url],
                           capture_output=True, text=True, timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        rows = [line.split() for line in p.stdout.splitlines()[1:4]]
        self.assertEqual(rows[0][:3], [exps["vision"], "vision", "2"], p.stdout)
        self.assertEqual(rows[1][:3], [exps["speech"], "speech", "1"], p.stdout)
        self.assertEqual(rows[2][:4], ["-", "(model", "registry)", "0"], p.stdout)
        self.assertIn("blobs: 3, 3.0 KiB stored", p.stdout)
        self.assertIn("unreferenced: 1 blob(s), 11 B, which `cairn gc` removes", p.stdout)
        self.assertRegex(p.stdout, r"artifacts\s+3\s+2\.9 KiB")
        self.assertRegex(p.stdout, r"metadata\s+-\s+\d")
        self.assertRegex(p.stdout, r"step cache\s+%s \(objects, steps, stat-cache\)\s+2\.0 KiB"
                         "\s+cairn pipeline gc" % re.escape(cache))
        self.assertNotIn("dataset cache", p.stdout)  # there is none
        self.assertNotIn("environments", p.stdout)
        r = self.c.get("/api/cairn/v1/storage").body
        kinds = r["kinds"]
        self.assertEqual(kinds["artifacts"], {"files": 3, "bytes": 3020})
        self.assertEqual(kinds["models"], {"files": 0, "bytes": 0})
        self.assertEqual(kinds["datasets"], {"files": 0, "bytes": 0})
        self.assertGreater(kinds["metadata"]["bytes"], 4096)
        self.assertEqual({e["name"]: (e["files"], e["bytes"]) for e in r["experiments"]},
                         {"vision": (2, 3010), "speech": (1, 10)})
        self.assertEqual((r["blobs"]["count"], r["blobs"]["bytes"]), (3, 3021))


if __name__ == "__main__":
    sys.exit(tl.main("storage", sys.modules[__name__]))
