#!/usr/bin/env python3
"""Versioned datasets through the real binary: `cairn data add|ls|get|diff|verify` and
`cairn run --data` against a real server, what the server stores for them, and the dataset
API as an attacker would use it (blobs that lie about their digest, digests named without
their bytes, other accounts' datasets, paths that escape).

Usage: test_data.py --cairn build/release/cairn
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
CAIRN = "/api/cairn/v1/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"


def sha(data):
    return hashlib.sha256(data).hexdigest()


def write_tree(root, files):
    for path, content in files.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(content)


def manifest(files):
    """The manifest (docs/formats/manifest.md) of {path: bytes}, byte for byte."""
    lines = ['{"path":%s,"size":%d,"mode":"100644","sha256":"%s"}'
             % (json.dumps(p, ensure_ascii=False), len(b), sha(b))
             for p, b in sorted(files.items(), key=lambda kv: kv[0].encode())]
    return ('{"cairn_manifest":1,"entries":[\n' + ",\n".join(lines) + "\n]}\n").encode()


class DataTest(unittest.TestCase):
    def setUp(self):
        self.root, self.data = tl.make_temp_root("cairn-data-")
        self.server = tl.CairnServer(tl.CONFIG.cairn, self.data, name="cairn (data)").start()
        tl.add_diagnostic(self.server.log_tail)
        self.c = self.server.client()
        self.env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                        CAIRN_DATA_CACHE=os.path.join(self.root, "cache"))
        self.env.pop("CAIRN_TOKEN", None)

    def tearDown(self):
        if self.server.running():
            self.server.stop()
        if not tl.keep_data():
            shutil.rmtree(self.root, True)

    def cairn(self, *args, check=True, cwd=None, env=None):
        p = subprocess.run([tl.CONFIG.cairn] + list(args), capture_output=True, text=True,
                           timeout=300, env=env or self.env, cwd=cwd or self.root)
        if check:
            self.assertEqual(p.returncode, 0, "cairn %s\n%s%s" % (" ".join(args), p.stdout,
                                                                   p.stderr))
        return p

    def stored_blobs(self):
        return set(tl.BlobStore(os.path.join(self.data, "artifacts")).blobs())

    def test_versions_sharing_most_files_store_them_once(self):
        src = os.path.join(self.root, "src")
        files = {"train/%03d.csv" % i: (b"row %d\n" % i) * 200 for i in range(100)}
        write_tree(src, files)
        p = self.cairn("data", "add", "mnist", src, "-m", "first", "--meta", "rows=20000")
        self.assertIn("mnist@1  100 files", p.stdout)
        self.assertIn("sent 101 of 101 blob(s)", p.stdout)  # the files and the manifest
        before = self.stored_blobs()
        self.assertEqual(len(before), 101)

        # Version 2 changes 10 of the 100 files: only those and the manifest are sent.
        for i in range(10):
            files["train/%03d.csv" % i] = b"changed %d\n" % i
        write_tree(src, files)
        p = self.cairn("data", "add", "mnist", src, "-m", "second")
        self.assertIn("mnist@2  100 files", p.stdout)
        self.assertIn("sent 11 of 101 blob(s)", p.stdout)
        after = self.stored_blobs()
        self.assertEqual(len(after - before), 11, "90 shared files are stored once")

        # The same content again adds nothing.
        p = self.cairn("data", "add", "mnist", src)
        self.assertIn("mnist@2 is unchanged", p.stdout)

        r = self.c.get(CAIRN + "datasets/versions", {"name": "mnist"})
        self.assertEqual(r.status, 200, r)
        versions = r.body["versions"]
        self.assertEqual([v["version"] for v in versions], [2, 1])
        self.assertEqual(versions[1]["metadata"], {"rows": "20000"})
        self.assertEqual(versions[0]["parent"], 1)
        self.assertEqual(versions[0]["digest"], sha(manifest(files)))

        p = self.cairn("data", "diff", "mnist@1", "mnist@2")
        self.assertIn("0 added (0 B), 0 removed (0 B), 10 changed", p.stdout)
        self.assertIn("~ train/000.csv", p.stdout)
        p = self.cairn("data", "ls")
        self.assertRegex(p.stdout, r"mnist\s+2\s+2\s+100")

        # The collector keeps every blob a version names; the store check agrees.
        r = self.c.post(CAIRN + "gc", {"grace_seconds": 0})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body["collected"], 0)
        p = subprocess.run([tl.CONFIG.cairn, "verify-store", "--data-dir", self.data],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = self.c.get(CAIRN + "storage")
        self.assertEqual(r.body["datasets"][0]["name"], "mnist")
        self.assertEqual(r.body["datasets"][0]["blobs"], 112)  # 110 distinct files, 2 manifests

    def test_get_checks_every_hash_and_repairs_a_damaged_file(self):
        src = os.path.join(self.root, "src")
        files = {"a.txt": b"alpha\n", "dir/b.bin": os.urandom(100000), "dir/c.txt": b"gamma\n"}
        write_tree(src, files)
        self.cairn("data", "add", "ds", src)
        out = os.path.join(self.root, "out")
        p = self.cairn("data", "get", "ds", out)
        self.assertIn("ds@1 -> %s  3 files" % out, p.stdout)
        for path, content in files.items():
            with open(os.path.join(out, path), "rb") as f:
                self.assertEqual(f.read(), content)
        p = self.cairn("data", "verify", "ds@1", out)
        self.assertIn("holds exactly ds@1", p.stdout)

        # A changed file, a missing one and an extra one are each reported.
        target = os.path.join(out, "dir/b.bin")
        os.chmod(target, 0o644)
        with open(target, "r+b") as f:
            f.write(b"X")  # the cached blob shares these bytes when linked: both are damaged
        os.remove(os.path.join(out, "a.txt"))
        with open(os.path.join(out, "extra.txt"), "w") as f:
            f.write("mine")
        p = self.cairn("data", "verify", "ds", out, check=False)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("~ dir/b.bin", p.stdout)
        self.assertIn("missing a.txt", p.stdout)
        self.assertIn("extra extra.txt", p.stdout)
        self.assertIn("1 missing, 1 changed, 1 extra", p.stdout)

        # get puts it right: the damaged file is fetched again, the user's file stays.
        p = self.cairn("data", "get", "ds", out)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), files["dir/b.bin"])
        with open(os.path.join(out, "a.txt"), "rb") as f:
            self.assertEqual(f.read(), files["a.txt"])
        self.assertIn("extra.txt", p.stderr)
        os.remove(os.path.join(out, "extra.txt"))
        self.cairn("data", "verify", "ds", out)

        # A second directory of the same version fetches nothing: the cache holds it.
        p = self.cairn("data", "get", "ds@1", os.path.join(self.root, "again"))
        self.assertIn("fetched 0 blob(s)", p.stdout)

        # A new version without a.txt: the directory loses exactly that file.
        del files["a.txt"]
        os.remove(os.path.join(src, "a.txt"))
        self.cairn("data", "add", "ds", src)
        p = self.cairn("data", "get", "ds", out)
        self.assertIn("removed 1", p.stdout)
        self.assertFalse(os.path.exists(os.path.join(out, "a.txt")))

    def test_get_refuses_bytes_the_server_damaged(self):
        # One small blob and one large enough to be hashed as it arrives, in several pieces.
        src = os.path.join(self.root, "src")
        files = {"small.txt": b"small\n", "large.bin": os.urandom(5 << 20)}
        write_tree(src, files)
        self.cairn("data", "add", "ds", src)
        p = self.cairn("data", "get", "ds", os.path.join(self.root, "good"))
        self.assertIn("fetched 2 blob(s)", p.stdout)
        for name, content in files.items():
            digest = sha(content)
            store = tl.BlobStore(os.path.join(self.data, "artifacts"))
            self.assertTrue(store.has(digest), name)
            store.overwrite(digest, -1, content[-1] ^ 1)
            env = dict(self.env, CAIRN_DATA_CACHE=os.path.join(self.root, "cache-" + name))
            out = os.path.join(self.root, "out-" + name)
            p = self.cairn("data", "get", "ds", out, check=False, env=env)
            self.assertNotEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("the server sent bytes for %s that hash to" % name, p.stderr)
            self.assertIn("not " + digest, p.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, name)), "a damaged file was placed")
            store.overwrite(digest, -1, content[-1])  # mended: only the next file is damaged

    def test_run_data_materialises_and_records_the_exact_version(self):
        src = os.path.join(self.root, "src")
        write_tree(src, {"x.csv": b"1,2\n", "y.csv": b"3,4\n"})
        self.cairn("data", "add", "tab", src)
        write_tree(src, {"z.csv": b"5,6\n"})
        self.cairn("data", "add", "tab", src)
        proj = os.path.join(self.root, "proj")
        os.makedirs(proj)
        p = self.cairn("run", "--data", "tab", "--data", "tab@1:old", "--", "sh", "-c",
                       "ls data/tab | wc -l; ls old | wc -l", cwd=proj)
        self.assertEqual(p.stdout.split(), ["3", "2"])
        r = self.c.post(API + "runs/search", {"experiment_ids": ["0"]})
        run = r.body["runs"][0]
        inputs = run["inputs"]["dataset_inputs"]
        self.assertEqual(len(inputs), 2)
        v2 = self.c.get(CAIRN + "datasets/get", {"name": "tab"}).body["version"]
        by_digest = {i["dataset"]["digest"]: i["dataset"] for i in inputs}
        latest = by_digest[v2["digest"][:32]]
        self.assertEqual(latest["name"], "tab")
        self.assertEqual(latest["source_type"], "cairn")
        source = json.loads(latest["source"])
        self.assertEqual(source["version"], 2, "the latest is recorded by its number")
        self.assertEqual(source["digest"], v2["digest"])
        # MLflow's own listing of an experiment's datasets sees them.
        r = self.c.post(API + "experiments/search-datasets", {"experiment_ids": ["0"]})
        self.assertEqual(len(r.body["dataset_summaries"]), 2)

        # Lineage: the version knows the runs that used it, and the run that made one.
        r = self.c.get(CAIRN + "datasets/lineage", {"name": "tab"})
        self.assertEqual([u["run_id"] for u in r.body["used_by"]], [run["info"]["run_id"]])
        self.assertNotIn("produced_by", r.body)
        p = self.cairn("run", "--", tl.CONFIG.cairn, "data", "add", "derived", src, cwd=proj)
        maker = self.c.post(API + "runs/search", {"experiment_ids": ["0"],
                                                  "order_by": ["attributes.start_time DESC"]}
                            ).body["runs"][0]["info"]["run_id"]
        r = self.c.get(CAIRN + "datasets/lineage", {"name": "derived", "version": "1"})
        self.assertEqual(r.body["produced_by"]["run_id"], maker)
        r = self.c.get(CAIRN + "datasets/produced", {"run_id": maker})
        self.assertEqual([(v["name"], v["version"]) for v in r.body["versions"]],
                         [("derived", 1)])

        p = self.cairn("run", "--data", "nope", "--", "true", cwd=proj, check=False)
        self.assertEqual(p.returncode, 2)
        self.assertIn("Dataset 'nope' not found", p.stderr)

    def test_a_pipeline_reruns_only_the_steps_that_read_a_new_version(self):
        src = os.path.join(self.root, "src")
        write_tree(src, {"a.csv": b"1\n", "b.csv": b"2\n"})
        self.cairn("data", "add", "rows", src)
        project = os.path.join(self.root, "project")
        os.makedirs(project)
        with open(os.path.join(project, "pipeline.yaml"), "w") as f:
            f.write("""name: data-pipeline
steps:
  count:
    run: ls data/rows | wc -l > count.txt
    inputs: [{data: rows}]
    outputs: [count.txt]
  pinned:
    run: cat old/a.csv > pinned.txt
    inputs: [{data: rows@1, path: old}]
    outputs: [pinned.txt]
  other:
    run: echo other > other.txt
    outputs: [other.txt]
""")
        env = dict(self.env, CAIRN_CACHE_DIR=os.path.join(self.root, "step-cache"))

        def run():
            p = self.cairn("pipeline", "run", cwd=project, env=env)
            steps = ("count", "pinned", "other")  # the notes about datasets are not steps
            return ({k: v for k, v in tl.pipeline_states(p.stdout).items() if k in steps},
                    p.stdout)

        states, out = run()
        self.assertEqual(states, {"count": "done", "pinned": "done", "other": "done"})
        self.assertIn("dataset rows@1 in data/rows", out)
        with open(os.path.join(project, "count.txt")) as f:
            self.assertEqual(f.read().strip(), "2")
        states, _ = run()
        self.assertEqual(set(states.values()), {"cached"})

        # Version 2: exactly the step that reads the latest runs again.
        write_tree(src, {"c.csv": b"3\n"})
        self.cairn("data", "add", "rows", src)
        states, out = run()
        self.assertEqual(states, {"count": "done", "pinned": "cached", "other": "cached"})
        self.assertIn("dataset rows@2 in data/rows", out)
        with open(os.path.join(project, "count.txt")) as f:
            self.assertEqual(f.read().strip(), "3")
        listing = self.cairn("pipeline", "ls", cwd=project, env=env).stdout.splitlines()
        explain = self.cairn("pipeline", "explain", listing[1].split()[0], "count", cwd=project,
                             env=env).stdout
        self.assertIn("dataset rows in data/rows", explain)

    def test_a_stopped_add_sends_only_what_it_had_not_sent(self):
        src = os.path.join(self.root, "src")
        files = {"f%02d" % i: os.urandom(1000) for i in range(20)}
        write_tree(src, files)
        # An earlier add sent 15 of the blobs before it was stopped.
        for name in sorted(files)[:15]:
            r = self.c.put(CAIRN + "datasets/blobs/" + sha(files[name]), files[name])
            self.assertEqual(r.status, 200, r)
        p = self.cairn("data", "add", "big", src)
        self.assertIn("sent 6 of 21 blob(s)", p.stdout)  # 5 files and the manifest

    def test_a_large_file_goes_while_it_is_hashed_and_once_at_most(self):
        def bytes_written():
            with open("/proc/%d/io" % self.server.proc.pid) as f:
                return int(f.read().split("wchar:")[1].split()[0])

        src = os.path.join(self.root, "src")
        os.makedirs(src)
        size = 200 << 20
        path = os.path.join(src, "weights.bin")
        digest = hashlib.sha256()
        with open(path, "wb") as f:
            for i in range(size >> 20):
                block = os.urandom(1 << 20)
                digest.update(block)
                f.write(block)
        written_before = bytes_written()
        p = self.cairn("data", "add", "big", src)
        self.assertIn("sent 2 of 2 blob(s)", p.stdout)
        self.assertIn(digest.hexdigest(), self.stored_blobs())
        # Sent once, while it was hashed: not again after.
        self.assertLess(bytes_written() - written_before, size * 13 // 10)
        out = os.path.join(self.root, "out")
        self.cairn("data", "get", "big", out)
        with open(os.path.join(out, "weights.bin"), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), digest.hexdigest())

        # Another machine (a cache that never hashed the file) adds the same bytes: the send
        # starts with the hashing and is called off once the server is found to hold them, or
        # ends first where sending is faster than hashing (the server writes a large blob at
        # about the speed one core hashes it); either way it goes once and nothing is kept.
        before = self.stored_blobs()
        written_before = bytes_written()
        env = dict(self.env, CAIRN_DATA_CACHE=os.path.join(self.root, "cache2"))
        p = self.cairn("data", "add", "copy", src, env=env)
        # The same file and manifest: nothing, or the file once when its send ended first.
        self.assertRegex(p.stdout, r"sent (0 of 2 blob\(s\), 0 B|1 of 2 blob\(s\), 200\.0 MiB)")
        written = bytes_written() - written_before  # the server's writes into its blob store
        self.assertGreater(written, 1 << 20, "the send starts with the hashing")
        self.assertLess(written, size * 13 // 10, "and goes once at most")
        self.assertEqual(self.stored_blobs(), before)
        # The bytes that did arrive were discarded: nothing is left half-written.
        def partial_blobs():
            return [n for d, _, names in os.walk(self.data) for n in names
                    if os.path.basename(d) == "tmp"]
        deadline = time.time() + 10
        while partial_blobs() and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(partial_blobs(), [])

        # Bytes sent without a digest are named by the server; only as raw bytes, which no
        # form or simple cross-site request can claim to send.
        r = self.c.request("POST", CAIRN + "datasets/blobs", body=b"unnamed bytes",
                           headers={"Content-Type": "application/octet-stream"})
        self.assertEqual((r.status, r.body["digest"]), (200, sha(b"unnamed bytes")))
        for ctype in ("text/plain", "application/x-www-form-urlencoded", None):
            r = self.c.request("POST", CAIRN + "datasets/blobs", body=b"form bytes",
                               headers={"Content-Type": ctype} if ctype else {})
            self.assertEqual(r.status, 400, (ctype, r))
        self.assertNotIn(sha(b"form bytes"), self.stored_blobs())

    def test_the_edge_refuses_lies_and_escapes(self):
        good = b"content"
        # A blob whose bytes do not hash to the digest named is refused.
        r = self.c.put(CAIRN + "datasets/blobs/" + sha(b"other"), good)
        self.assertEqual(r.status, 400, r)
        self.assertIn("hash to " + sha(good), r.body["message"])
        r = self.c.put(CAIRN + "datasets/blobs/../../etc", good)
        self.assertIn(r.status, (400, 404), r)
        r = self.c.put(CAIRN + "datasets/blobs/" + "A" * 64, good)
        self.assertEqual(r.status, 400, r)

        # A version naming a blob never sent is refused, though another run holds it.
        run = self.c.post(API + "runs/create", {"experiment_id": "0"}).body["run"]["info"]
        secret = b"someone else's weights"
        self.assertEqual(self.c.put(ARTIFACTS + "0/%s/artifacts/w.bin" % run["run_id"],
                                    secret).status, 200)
        m = manifest({"stolen.bin": secret})
        self.assertEqual(self.c.put(CAIRN + "datasets/blobs/" + sha(m), m).status, 200)
        r = self.c.post(CAIRN + "datasets/versions", {"name": "grab", "digest": sha(m)})
        self.assertEqual(r.status, 400, r)
        self.assertIn("send blob " + sha(secret), r.body["message"])
        r = self.c.post(CAIRN + "datasets/missing", {"name": "grab", "digests": [sha(secret)]})
        self.assertEqual(r.body["missing"], [sha(secret)])

        # A manifest with an escaping path is no manifest.
        bad = manifest({"../x": good})
        self.assertEqual(self.c.put(CAIRN + "datasets/blobs/" + sha(bad), bad).status, 200)
        self.assertEqual(self.c.put(CAIRN + "datasets/blobs/" + sha(good), good).status, 200)
        r = self.c.post(CAIRN + "datasets/versions", {"name": "esc", "digest": sha(bad)})
        self.assertEqual(r.status, 400, r)
        r = self.c.post(CAIRN + "datasets/versions", {"name": "../x", "digest": sha(bad)})
        self.assertEqual(r.status, 400, r)
        self.assertIn("Invalid dataset name", r.body["message"])

        # Datasets' files are read through the artifact proxy, never written through it.
        ok = manifest({"a": good})
        self.c.put(CAIRN + "datasets/blobs/" + sha(ok), ok)
        r = self.c.post(CAIRN + "datasets/versions", {"name": "fine", "digest": sha(ok)})
        self.assertEqual(r.status, 200, r)
        path = ARTIFACTS + "datasets/fine/%s/a" % sha(ok)
        r = self.c.get(path, raw=True)
        self.assertEqual((r.status, r.body), (200, good))
        self.assertEqual(self.c.put(path, b"overwrite").status, 403)
        self.assertEqual(self.c.delete(path).status, 403)
        self.assertEqual(self.c.put(ARTIFACTS + "datasets/fine/new", b"x").status, 403)


class DataPermissionsTest(unittest.TestCase):
    """--auth on: a dataset belongs to its creator; others read it only when granted."""

    def setUp(self):
        self.root, self.data = tl.make_temp_root("cairn-data-auth-")
        password = os.path.join(self.root, "pw")
        with open(password, "w") as f:
            f.write("admin-pass-1\n")
        os.chmod(password, 0o600)
        self.server = tl.CairnServer(
            tl.CONFIG.cairn, self.data, name="cairn (data, auth)",
            extra_args=["--auth", "on", "--init-admin", "admin", "--password-file", password,
                        "--default-permission", "NO_PERMISSIONS"]).start()
        tl.add_diagnostic(self.server.log_tail)
        self.c = self.server.client()
        admin = {"Authorization": "Basic " + base64.b64encode(b"admin:admin-pass-1").decode()}
        for user in ("alice", "bob"):
            r = self.c.post(API + "users/create", {"username": user, "password": user + "-pass"},
                            headers=admin)
            self.assertEqual(r.status, 200, r)

    def tearDown(self):
        self.server.stop()
        if not tl.keep_data():
            shutil.rmtree(self.root, True)

    def env(self, user):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                   MLFLOW_TRACKING_USERNAME=user, MLFLOW_TRACKING_PASSWORD=user + "-pass",
                   CAIRN_DATA_CACHE=os.path.join(self.root, "cache-" + user))
        env.pop("CAIRN_TOKEN", None)
        return env

    def headers(self, user):
        return {"Authorization": "Basic " + base64.b64encode(
            ("%s:%s-pass" % (user, user)).encode()).decode()}

    def cairn(self, user, *args):
        return subprocess.run([tl.CONFIG.cairn] + list(args), capture_output=True, text=True,
                              timeout=120, env=self.env(user), cwd=self.root)

    def test_only_the_creator_and_those_granted_see_a_dataset(self):
        src = os.path.join(self.root, "src")
        write_tree(src, {"secret.csv": b"s3cr3t\n"})
        p = self.cairn("alice", "data", "add", "private", src)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

        self.assertEqual(self.cairn("bob", "data", "ls").stdout.count("private"), 0)
        p = self.cairn("bob", "data", "get", "private", os.path.join(self.root, "b"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("Permission denied", p.stderr)
        m = manifest({"secret.csv": b"s3cr3t\n"})
        r = self.c.get(ARTIFACTS + "datasets/private/%s/secret.csv" % sha(m),
                       headers=self.headers("bob"))
        self.assertEqual(r.status, 403, r)
        # Adding to it needs EDIT, even with the blobs in hand.
        write_tree(src, {"more.csv": b"x\n"})
        p = self.cairn("bob", "data", "add", "private", src)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("Permission denied", p.stderr)

        r = self.c.post(CAIRN + "datasets/permissions",
                        {"name": "private", "username": "bob", "permission": "READ"},
                        headers=self.headers("alice"))
        self.assertEqual(r.status, 200, r)
        p = self.cairn("bob", "data", "get", "private", os.path.join(self.root, "b"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        # READ is not EDIT.
        p = self.cairn("bob", "data", "add", "private", src)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)


if __name__ == "__main__":
    sys.exit(tl.main("data", sys.modules[__name__]))
