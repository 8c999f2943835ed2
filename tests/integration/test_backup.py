#!/usr/bin/env python3
"""`cairn backup` and `cairn restore` against a real server: backups taken while writers log
metrics, params and artifacts are each whole (every file they name has its blob), a second
backup copies only the new blobs, and a server started on a restored directory answers
searches, metric histories, artifact listings and downloads exactly as the original did.

Usage: test_backup.py --cairn build/release/cairn
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
CAIRN = "/api/cairn/v1/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"


class BackupTest(unittest.TestCase):
    def setUp(self):
        self.root, self.data = tl.make_temp_root("cairn-backup-")
        self.server = tl.CairnServer(tl.CONFIG.cairn, self.data, name="cairn (original)").start()
        tl.add_diagnostic(self.server.log_tail)
        self.c = self.server.client()
        self.restored = None

    def tearDown(self):
        for s in (self.server, self.restored):
            if s is not None and s.running():
                s.stop()
        if not tl.keep_data():
            shutil.rmtree(self.root, True)

    def cairn(self, *args, check=True):
        p = subprocess.run([tl.CONFIG.cairn] + list(args), capture_output=True, text=True,
                           timeout=300, cwd=self.root)
        if check:
            self.assertEqual(p.returncode, 0, "cairn %s\n%s%s" % (" ".join(args), p.stdout,
                                                                   p.stderr))
        return p

    def writer(self, index, stop, runs):
        c = self.server.client()
        exp = c.post(API + "experiments/create", {"name": "w%d" % index}).body["experiment_id"]
        n = 0
        while not stop.is_set():
            run = c.post(API + "runs/create", {"experiment_id": exp}).body["run"]["info"]
            c.post(API + "runs/log-batch", {
                "run_id": run["run_id"],
                "metrics": [{"key": "loss", "value": 1.0 / (s + 1), "timestamp": s, "step": s}
                            for s in range(50)],
                "params": [{"key": "n", "value": str(n)}]})
            root = run["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
            for k in range(3):
                r = c.put(ARTIFACTS + "%s/ckpt/%d.bin" % (root, k),
                          ("run %s part %d " % (run["run_id"], k)).encode() * 500)
                assert r.status == 200, r
            c.post(API + "runs/update", {"run_id": run["run_id"], "status": "FINISHED"})
            runs.append(run["run_id"])
            n += 1

    def snapshot(self, c):
        """What a client sees: every run (sorted), its metric history and artifacts."""
        exps = c.post(API + "experiments/search", {"max_results": 1000}).body["experiments"]
        ids = [e["experiment_id"] for e in exps]
        runs = c.post(API + "runs/search", {"experiment_ids": ids, "max_results": 1000,
                                            "order_by": ["attributes.run_id"]}).body.get("runs", [])
        out = {"experiments": sorted((e["experiment_id"], e["name"]) for e in exps), "runs": []}
        for run in runs:
            rid = run["info"]["run_id"]
            hist = c.get(API + "metrics/get-history", {"run_id": rid, "metric_key": "loss"})
            files = c.get(API + "artifacts/list", {"run_id": rid, "path": "ckpt"}).body
            root = run["info"]["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
            digests = {}
            for f in files.get("files", []):
                r = c.get(ARTIFACTS + "%s/%s" % (root, f["path"]), raw=True)
                digests[f["path"]] = hashlib.sha256(r.body).hexdigest()
            out["runs"].append({"run": run, "history": hist.body, "files": files,
                                "digests": digests})
        return out

    def test_backup_while_writing_then_restore_answers_as_the_original(self):
        stop = threading.Event()
        runs = []
        threads = [threading.Thread(target=self.writer, args=(i, stop, runs)) for i in range(3)]
        for t in threads:
            t.start()
        dest = os.path.join(self.root, "backup")
        try:
            tl.wait_until(lambda: len(runs) >= 10, timeout=60)
            first = self.cairn("backup", dest, "--data-dir", self.data)
            tl.wait_until(lambda: len(runs) >= 25, timeout=60)
            second = self.cairn("backup", dest, "--data-dir", self.data)
        finally:
            stop.set()
            for t in threads:
                t.join()
        self.assertIn("copied", first.stdout)
        record = json.load(open(os.path.join(dest, "backup.json")))
        # Incremental: the second backup copied only what was new since the first.
        self.assertLess(record["copied"], record["blobs"])
        self.assertGreater(record["copied"], 0)

        # A backup taken mid-write is whole: every file it names has its blob.
        mid = os.path.join(self.root, "mid")
        self.cairn("restore", dest, "--data-dir", mid)
        p = self.cairn("verify-store", "--data-dir", mid)
        self.assertIn("the stores agree", p.stdout)

        # Writers stopped: a last backup, restored, answers exactly as the original.
        self.cairn("backup", dest, "--data-dir", self.data)
        restored_dir = os.path.join(self.root, "restored")
        p = self.cairn("restore", dest, "--data-dir", restored_dir)
        self.assertIn("cairn server --data-dir", p.stdout)
        self.restored = tl.CairnServer(tl.CONFIG.cairn, restored_dir,
                                       name="cairn (restored)").start()
        original = self.snapshot(self.c)
        again = self.snapshot(self.restored.client())
        self.assertGreaterEqual(len(original["runs"]), 25)
        self.assertEqual(original, again)

    def test_restore_refuses_a_used_directory_and_a_missing_backup(self):
        used = os.path.join(self.root, "used")
        os.makedirs(used)
        open(os.path.join(used, "x"), "w").close()
        dest = os.path.join(self.root, "b")
        self.cairn("backup", dest, "--data-dir", self.data)
        p = self.cairn("restore", dest, "--data-dir", used, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("is not empty", p.stderr)
        p = self.cairn("restore", os.path.join(self.root, "nothing"), "--data-dir",
                       os.path.join(self.root, "new"), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no backup in", p.stderr)
        p = self.cairn("backup", dest, "--data-dir", os.path.join(self.root, "none"), check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("no store at", p.stderr)

    def test_a_damaged_blob_in_the_backup_is_found_on_restore(self):
        run = self.c.post(API + "runs/create", {"experiment_id": "0"}).body["run"]["info"]
        content = b"model weights " * 1000
        root = run["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
        self.assertEqual(self.c.put(ARTIFACTS + root + "/w.bin", content).status, 200)
        dest = os.path.join(self.root, "b")
        self.cairn("backup", dest, "--data-dir", self.data)
        digest = hashlib.sha256(content).hexdigest()
        tl.BlobStore(os.path.join(dest, "artifacts")).overwrite(digest, 0, ord("X"))
        p = self.cairn("restore", dest, "--data-dir", os.path.join(self.root, "r"), check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn(digest + ": its bytes hash to", p.stdout)


if __name__ == "__main__":
    sys.exit(tl.main("backup", sys.modules[__name__]))
