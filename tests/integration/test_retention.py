#!/usr/bin/env python3
"""Retention rules and collections on a real server: keep_last over a run's checkpoints frees
exactly the others, keep_best keeps the best runs' files, max_age and purge_deleted_after
take old and deleted runs' files, a pinned run and a registered version's run keep theirs,
and collections racing uploads lose nothing.

Usage: test_retention.py --cairn build/release/cairn
"""
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


class RetentionTest(unittest.TestCase):
    def setUp(self):
        self.root, self.data = tl.make_temp_root("cairn-retention-")
        self.server = None

    def start(self, server_rules=None):
        args = []
        if server_rules is not None:
            path = os.path.join(self.root, "retention.yaml")
            with open(path, "w") as f:
                f.write(server_rules)
            args = ["--retention", path]
        self.server = tl.CairnServer(tl.CONFIG.cairn, self.data, extra_args=args,
                                     name="cairn (retention)").start()
        tl.add_diagnostic(self.server.log_tail)
        self.c = self.server.client()

    def tearDown(self):
        if self.server is not None and self.server.running():
            self.server.stop()
        if not tl.keep_data():
            shutil.rmtree(self.root, True)

    def experiment(self, name, rules=None):
        exp = self.c.post(API + "experiments/create", {"name": name}).body["experiment_id"]
        if rules is not None:
            r = self.c.post(API + "experiments/set-experiment-tag",
                            {"experiment_id": exp, "key": "cairn.retention",
                             "value": json.dumps(rules)})
            self.assertEqual(r.status, 200, r)
        return exp

    def run_with(self, exp, files, metrics=None, end=True):
        run = self.c.post(API + "runs/create", {"experiment_id": exp}).body["run"]["info"]
        root = run["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
        for path, content in files.items():
            self.assertEqual(self.c.put(ARTIFACTS + root + "/" + path, content).status, 200)
        if metrics:
            self.c.post(API + "runs/log-batch", {
                "run_id": run["run_id"],
                "metrics": [{"key": k, "value": v, "timestamp": 1, "step": 0}
                            for k, v in metrics.items()]})
        if end:
            self.c.post(API + "runs/update", {"run_id": run["run_id"], "status": "FINISHED",
                                              "end_time": 1000})
        return run["run_id"], root

    def files(self, run_id, path=""):
        out = []
        pending = [path]
        while pending:
            p = pending.pop()
            body = self.c.get(API + "artifacts/list", {"run_id": run_id, "path": p}).body
            for f in body.get("files", []):
                (pending if f["is_dir"] else out).append(f["path"])
        return sorted(out)

    def gc(self, dry_run=False):
        r = self.c.post(CAIRN + "gc", {"dry_run": dry_run, "grace_seconds": 0})
        self.assertEqual(r.status, 200, r)
        return r.body

    def test_keep_last_frees_exactly_the_other_checkpoints(self):
        self.start()
        exp = self.experiment("train", [{"keep_last": 10, "artifacts": "checkpoints/*"}])
        files = {"checkpoints/epoch_%d.pt" % i: os.urandom(1000) for i in range(1, 51)}
        files["model.pt"] = b"final"
        run_id, _ = self.run_with(exp, files, end=False)  # a run still training: applies too

        preview = self.gc(dry_run=True)
        self.assertEqual(preview["retention"]["files"], 40)
        self.assertEqual(preview["retention"]["bytes"], 40000)
        self.assertEqual(len(self.files(run_id)), 51, "a dry run removes nothing")

        done = self.gc()
        rule = done["retention"]["rules"][0]
        self.assertEqual((rule["scope"], rule["files"], rule["runs"]), (exp, 40, 1))
        # The 40 blobs nothing else names go at once, with the files.
        self.assertEqual((rule["blobs_freed"], rule["bytes_freed"]), (40, 40000))
        self.assertEqual(done["retention"]["bytes_freed"], 40000)
        kept = self.files(run_id)
        self.assertEqual(kept, sorted(["checkpoints/epoch_%d.pt" % i for i in range(41, 51)]
                                      + ["model.pt"]))
        # Applied again, the rule has nothing left to do.
        self.assertEqual(self.gc()["retention"]["files"], 0)

        p = subprocess.run([tl.CONFIG.cairn, "storage", "--tracking-uri", self.server.url],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"keep_last":10', p.stdout)

    def test_a_registered_versions_run_and_a_pinned_run_keep_their_files(self):
        self.start("- max_age: 0s\n")
        exp = self.experiment("models")
        registered, _ = self.run_with(exp, {"model/w.bin": b"registered weights"})
        pinned, _ = self.run_with(exp, {"model/w.bin": b"pinned weights"})
        plain, _ = self.run_with(exp, {"model/w.bin": b"plain weights"})
        self.c.post(API + "runs/set-tag", {"run_id": pinned, "key": "cairn.pinned",
                                           "value": "true"})
        self.assertEqual(self.c.post(API + "registered-models/create", {"name": "m"}).status, 200)
        r = self.c.post(API + "model-versions/create",
                        {"name": "m", "source": "runs:/%s/model" % registered,
                         "run_id": registered})
        self.assertEqual(r.status, 200, r)

        done = self.gc()
        self.assertEqual(done["retention"]["files"], 1)
        self.assertEqual(self.files(plain), [])
        self.assertEqual(self.files(registered), ["model/w.bin"])
        self.assertEqual(self.files(pinned), ["model/w.bin"])
        r = self.c.get("/model-versions/get-artifact", {"name": "m", "version": "1",
                                                         "path": "w.bin"}, raw=True)
        self.assertEqual((r.status, r.body), (200, b"registered weights"))

    def test_keep_best_and_purge_deleted(self):
        self.start()
        exp = self.experiment("sweep", [{"keep_best": 2, "by": "metrics.val_loss"},
                                        {"purge_deleted_after": "0s"}])
        runs = {}
        for i, loss in enumerate([0.5, 0.1, 0.9, 0.3]):
            runs[loss], _ = self.run_with(exp, {"w.bin": b"weights %d" % i}, {"val_loss": loss})
        unranked, _ = self.run_with(exp, {"w.bin": b"no metric"})
        deleted, _ = self.run_with(exp, {"w.bin": b"deleted"}, {"val_loss": 0.01})
        self.assertEqual(self.c.post(API + "runs/delete", {"run_id": deleted}).status, 200)
        tags = {t["key"]: t["value"] for t in
                self.c.get(API + "runs/get", {"run_id": deleted}).body["run"]["data"]["tags"]}
        self.assertIn("cairn.deleted_time", tags)
        # Only deleting a run sets it: a client cannot make a run look deleted long ago.
        r = self.c.post(API + "runs/set-tag", {"run_id": unranked, "key": "cairn.deleted_time",
                                               "value": "0"})
        self.assertEqual(r.status, 400, r)

        self.gc()
        self.assertEqual(self.files(runs[0.1]), ["w.bin"])
        self.assertEqual(self.files(runs[0.3]), ["w.bin"])
        self.assertEqual(self.files(runs[0.5]), [])
        self.assertEqual(self.files(runs[0.9]), [])
        self.assertEqual(self.files(unranked), ["w.bin"], "runs without the metric are left")
        self.assertEqual(self.files(deleted), [])

    def test_rules_from_cairn_yaml(self):
        # Server-wide rules from a cairn.yaml beside other sections.
        self.start("environment:\n  python: '3.11'\n"
                   "retention:\n  - keep_last: 2\n    artifacts: 'a/*'\n")
        exp = self.experiment("project")
        # The experiment's own from the project's cairn.yaml, found from a directory below it.
        project = os.path.join(self.root, "project")
        os.makedirs(os.path.join(project, "src"))
        with open(os.path.join(project, "cairn.yaml"), "w") as f:
            f.write("retention:\n  - keep_last: 1\n    artifacts: 'b/*'\n")
        p = subprocess.run([tl.CONFIG.cairn, "retention", "set", "project",
                            "--tracking-uri", self.server.url],
                           cwd=os.path.join(project, "src"), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        tags = {t["key"]: t["value"] for t in self.c.get(
            API + "experiments/get", {"experiment_id": exp}).body["experiment"]["tags"]}
        self.assertEqual(json.loads(tags["cairn.retention"]),
                         [{"keep_last": 1, "artifacts": "b/*"}])
        run_id, _ = self.run_with(exp, {"%s/%d" % (d, i): b"%s%d" % (d.encode(), i)
                                        for d in ("a", "b") for i in range(1, 4)})
        self.gc()
        self.assertEqual(self.files(run_id), ["a/2", "a/3", "b/3"])

        # Without a cairn.yaml, or with one that has no rules, it says so.
        elsewhere = os.path.join(self.root, "elsewhere")
        os.makedirs(elsewhere)
        p = subprocess.run([tl.CONFIG.cairn, "retention", "set", "project",
                            "--tracking-uri", self.server.url],
                           cwd=elsewhere, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("no cairn.yaml in . or above it", p.stderr)
        with open(os.path.join(elsewhere, "cairn.yaml"), "w") as f:
            f.write("environment:\n  python: '3.11'\n")
        p = subprocess.run([tl.CONFIG.cairn, "retention", "set", "project",
                            "--tracking-uri", self.server.url],
                           cwd=elsewhere, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("has no retention section", p.stderr)

    def test_rules_that_cannot_be_read_are_refused(self):
        self.start()
        exp = self.experiment("bad")
        for value in ("not json", '[{"keep_last": -1}]', '[{"keep_best": 3}]',
                      '[{"max_age": "ninety days"}]', '[{"keep_last": 1, "max_age": "1d"}]'):
            r = self.c.post(API + "experiments/set-experiment-tag",
                            {"experiment_id": exp, "key": "cairn.retention", "value": value})
            self.assertEqual(r.status, 400, value)
            self.assertIn("retention", r.body["message"])
        bad = os.path.join(self.root, "bad.yaml")
        with open(bad, "w") as f:
            f.write("- keep_last: ten\n")
        p = subprocess.run([tl.CONFIG.cairn, "server", "--retention", bad, "--port", "0",
                            "--data-dir", os.path.join(self.root, "other")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("keep_last takes a count", p.stderr)

    def test_collections_racing_uploads_lose_nothing(self):
        self.start()
        exp = self.experiment("race")
        run = self.c.post(API + "runs/create", {"experiment_id": exp}).body["run"]["info"]
        root = run["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
        stop = threading.Event()
        uploaded = {}

        def upload():
            c = self.server.client()
            i = 0
            while not stop.is_set() or i < 200:
                content = os.urandom(2000)
                r = c.put(ARTIFACTS + root + "/f%04d" % i, content)
                assert r.status == 200, r
                uploaded["f%04d" % i] = content
                i += 1

        t = threading.Thread(target=upload)
        t.start()
        collections = 0
        try:
            while len(uploaded) < 200:
                self.gc()
                collections += 1
        finally:
            stop.set()
            t.join()
        self.gc()
        self.assertGreater(collections, 3)
        for name, content in uploaded.items():
            r = self.c.get(ARTIFACTS + root + "/" + name, raw=True)
            self.assertEqual((r.status, r.body), (200, content), name)


if __name__ == "__main__":
    sys.exit(tl.main("retention", sys.modules[__name__]))
