#!/usr/bin/env python3
"""Black-box tests of cairn's model registry over MLflow's REST API and cairn's own calls.

    python3 tests/integration/test_registry.py --cairn build/cairn [-k PATTERN]

One server for the module on a fresh data directory. Every test registers models under its own
unique names. Shapes and messages follow MLflow 2.12's handlers and SQL registry store.
"""

import json
import os
import shutil
import subprocess
import sys
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
CAIRN_API = "/api/cairn/v1/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"

SERVER = None
C = None
ROOT = None


def setUpModule():
    global SERVER, C, ROOT
    ROOT, data_dir = tl.make_temp_root("cairn-registry-")
    server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (registry)")
    tl.add_diagnostic(server.log_tail)
    try:
        server.start()
    except Exception:
        shutil.rmtree(ROOT, ignore_errors=True)
        raise
    SERVER = server
    C = SERVER.client()


def tearDownModule():
    if SERVER is None:
        return
    rc = SERVER.stop()
    if not tl.keep_data():
        shutil.rmtree(ROOT, ignore_errors=True)
    if rc != 0:
        raise AssertionError("cairn exited with status %r on SIGTERM" % rc)


def uniq(prefix="m"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:10])


def ok(resp):
    assert resp.status == 200, "%s: %s" % (resp.status, resp.text)
    return resp.body


def error(resp, status, code):
    assert resp.status == status, "expected %d, got %s: %s" % (status, resp.status, resp.text)
    assert resp.body["error_code"] == code, resp.body
    return resp.body["message"]


def new_run(files):
    """A run in the Default experiment with `files` ({path: bytes}) uploaded under it."""
    run = ok(C.post(API + "runs/create", {"experiment_id": "0"}))["run"]["info"]
    root = run["artifact_uri"][len("mlflow-artifacts:/"):]
    for path, data in files.items():
        ok(C.put(ARTIFACTS + root + "/" + path, data))
    return run["run_id"]


def create_model(name, **extra):
    return ok(C.post(API + "registered-models/create", dict(name=name, **extra)))["registered_model"]


def create_version(name, source, **extra):
    return ok(C.post(API + "model-versions/create",
                     dict(name=name, source=source, **extra)))["model_version"]


class RegisteredModelTest(unittest.TestCase):
    def test_create_get_and_duplicate(self):
        name = uniq()
        m = create_model(name, tags=[{"key": "team", "value": "ml"}], description="churn")
        self.assertEqual(m["name"], name)
        self.assertEqual(m["description"], "churn")
        self.assertEqual(m["tags"], [{"key": "team", "value": "ml"}])
        self.assertIsInstance(m["creation_timestamp"], int)
        msg = error(C.post(API + "registered-models/create", {"name": name}), 400,
                    "RESOURCE_ALREADY_EXISTS")
        self.assertEqual(msg, "Registered Model (name=%s) already exists." % name)
        got = ok(C.get(API + "registered-models/get", {"name": name}))["registered_model"]
        self.assertEqual(got["tags"], m["tags"])
        msg = error(C.get(API + "registered-models/get", {"name": "nope-" + name}), 404,
                    "RESOURCE_DOES_NOT_EXIST")
        self.assertEqual(msg, "Registered Model with name=nope-%s not found" % name)
        error(C.post(API + "registered-models/create", {}), 400, "INVALID_PARAMETER_VALUE")

    def test_rename_update_tags_and_delete(self):
        name, new = uniq(), uniq()
        create_model(name)
        run = new_run({"model/MLmodel": b"flavors: {}\n"})
        create_version(name, "runs:/%s/model" % run)
        renamed = ok(C.post(API + "registered-models/rename",
                            {"name": name, "new_name": new}))["registered_model"]
        self.assertEqual(renamed["name"], new)
        self.assertEqual(renamed["latest_versions"][0]["name"], new)
        updated = ok(C.patch(API + "registered-models/update",
                             {"name": new, "description": "v2"}))["registered_model"]
        self.assertEqual(updated["description"], "v2")
        ok(C.post(API + "registered-models/set-tag", {"name": new, "key": "k", "value": "v"}))
        self.assertEqual(ok(C.get(API + "registered-models/get", {"name": new}))
                         ["registered_model"]["tags"], [{"key": "k", "value": "v"}])
        ok(C.delete(API + "registered-models/delete-tag", {"name": new, "key": "k"}))
        ok(C.delete(API + "registered-models/delete-tag", {"name": new, "key": "k"}))
        ok(C.delete(API + "registered-models/delete", {"name": new}))
        error(C.get(API + "registered-models/get", {"name": new}), 404, "RESOURCE_DOES_NOT_EXIST")
        error(C.get(API + "model-versions/get", {"name": new, "version": "1"}), 404,
              "RESOURCE_DOES_NOT_EXIST")

    def test_search_filters_orders_and_pages(self):
        prefix = uniq("search")
        names = ["%s-%02d" % (prefix, i) for i in range(7)]
        for i, n in enumerate(names):
            create_model(n, tags=[{"key": "parity", "value": "even" if i % 2 == 0 else "odd"}])
        body = ok(C.get(API + "registered-models/search",
                        {"filter": "name LIKE '%s-%%'" % prefix, "max_results": 3}))
        self.assertEqual([m["name"] for m in body["registered_models"]], names[:3])
        token = body["next_page_token"]
        seen = [m["name"] for m in body["registered_models"]]
        while token:
            body = ok(C.get(API + "registered-models/search",
                            {"filter": "name LIKE '%s-%%'" % prefix, "max_results": 3,
                             "page_token": token}))
            seen += [m["name"] for m in body.get("registered_models", [])]
            token = body.get("next_page_token")
        self.assertEqual(seen, names)
        odd = ok(C.get(API + "registered-models/search",
                       {"filter": "name ILIKE '%s-%%' AND tags.parity = 'odd'" % prefix.upper(),
                        "order_by": ["name DESC"]}))
        self.assertEqual([m["name"] for m in odd["registered_models"]], names[5::-2])
        msg = error(C.get(API + "registered-models/search", {"max_results": 1001}), 400,
                    "INVALID_PARAMETER_VALUE")
        self.assertIn("It must be at most 1000, but got value 1001", msg)
        error(C.get(API + "registered-models/search", {"filter": "run_id = 'x'"}), 400,
              "INVALID_PARAMETER_VALUE")


class ModelVersionTest(unittest.TestCase):
    def test_versions_copy_files_and_survive_their_run(self):
        name = uniq()
        create_model(name)
        run = new_run({"model/MLmodel": b"flavors: {}\n", "model/data/w.bin": b"\x00weights"})
        v = create_version(name, "runs:/%s/model" % run, run_id=run,
                           tags=[{"key": "k", "value": "v"}], description="first")
        self.assertEqual(v["version"], "1")
        self.assertEqual(v["status"], "READY")
        self.assertEqual(v["current_stage"], "None")
        self.assertEqual(v["run_id"], run)
        self.assertEqual(v["run_link"], "")
        uri = ok(C.get(API + "model-versions/get-download-uri",
                       {"name": name, "version": "1"}))["artifact_uri"]
        self.assertTrue(uri.startswith("mlflow-artifacts:/models/"), uri)
        path = uri[len("mlflow-artifacts:/"):]
        listing = ok(C.get(ARTIFACTS.rstrip("/"), {"path": path}))
        self.assertEqual(sorted(f["path"] for f in listing["files"]), ["MLmodel", "data"])
        # Deleting the run's files leaves the version whole.
        ok(C.delete(ARTIFACTS + "0/%s/artifacts/model" % run))
        ok(C.post(API + "runs/delete", {"run_id": run}))
        got = C.get(ARTIFACTS + path + "/data/w.bin", raw=True)
        self.assertEqual(got.status, 200)
        self.assertEqual(got.body, b"\x00weights")
        # Nobody writes into a version's files.
        error(C.put(ARTIFACTS + path + "/data/w.bin", b"evil"), 403, "PERMISSION_DENIED")
        error(C.delete(ARTIFACTS + path + "/data/w.bin"), 403, "PERMISSION_DENIED")
        self.assertEqual(C.get(ARTIFACTS + path + "/data/w.bin", raw=True).body, b"\x00weights")

    def test_numbers_stages_update_and_delete(self):
        name = uniq()
        create_model(name)
        run = new_run({"m/f": b"x"})
        for _ in range(3):
            create_version(name, "runs:/%s/m" % run)
        t = ok(C.post(API + "model-versions/transition-stage",
                      {"name": name, "version": "1", "stage": "production",
                       "archive_existing_versions": False}))["model_version"]
        self.assertEqual(t["current_stage"], "Production")
        ok(C.post(API + "model-versions/transition-stage",
                  {"name": name, "version": "2", "stage": "Production",
                   "archive_existing_versions": True}))
        self.assertEqual(ok(C.get(API + "model-versions/get", {"name": name, "version": "1"}))
                         ["model_version"]["current_stage"], "Archived")
        msg = error(C.post(API + "model-versions/transition-stage",
                           {"name": name, "version": "2", "stage": "Bogus"}), 400,
                    "INVALID_PARAMETER_VALUE")
        self.assertEqual(msg, "Invalid Model Version stage: Bogus. Value must be one of None, "
                              "Staging, Production, Archived.")
        error(C.post(API + "model-versions/transition-stage",
                     {"name": name, "version": "3", "stage": "Archived",
                      "archive_existing_versions": True}), 400, "INVALID_PARAMETER_VALUE")
        latest = ok(C.post(API + "registered-models/get-latest-versions",
                           {"name": name, "stages": ["Production"]}))["model_versions"]
        self.assertEqual([v["version"] for v in latest], ["2"])
        upd = ok(C.patch(API + "model-versions/update",
                         {"name": name, "version": "3", "description": "d"}))["model_version"]
        self.assertEqual(upd["description"], "d")
        ok(C.delete(API + "model-versions/delete", {"name": name, "version": "3"}))
        self.assertEqual(create_version(name, "runs:/%s/m" % run)["version"], "4")
        msg = error(C.get(API + "model-versions/get", {"name": name, "version": "3"}), 404,
                    "RESOURCE_DOES_NOT_EXIST")
        self.assertEqual(msg, "Model Version (name=%s, version=3) not found" % name)
        msg = error(C.get(API + "model-versions/get", {"name": name, "version": "x"}), 400,
                    "INVALID_PARAMETER_VALUE")
        self.assertEqual(msg, "Model version must be an integer, got 'x'")
        ok(C.post(API + "model-versions/set-tag",
                  {"name": name, "version": "4", "key": "k", "value": "v"}))
        self.assertEqual(ok(C.get(API + "model-versions/get", {"name": name, "version": "4"}))
                         ["model_version"]["tags"], [{"key": "k", "value": "v"}])
        ok(C.delete(API + "model-versions/delete-tag", {"name": name, "version": "4", "key": "k"}))

    def test_hostile_sources_are_refused(self):
        name = uniq()
        create_model(name)
        run = new_run({"m/f": b"x"})
        for source in ["s3://bucket/model", "file:///etc/passwd", "/etc/passwd",
                       "mlflow-artifacts:/0/%s/artifacts/../../../etc" % run,
                       "runs:/%s/../../x" % run, "runs:/%s/empty" % run,
                       "mlflow-artifacts:/models/x", "models:/%s/9" % name, "runs://m",
                       "mlflow-artifacts:/0", "mlflow-artifacts:/0/%s" % run]:
            resp = C.post(API + "model-versions/create", {"name": name, "source": source})
            self.assertIn(resp.status, (400, 404), "%s: %s" % (source, resp.text))
            self.assertNotEqual(resp.status, 200, source)
        self.assertNotIn("model_versions",
                         ok(C.get(API + "model-versions/search", {"filter": "name = '%s'" % name})))

    def test_paging_through_a_thousand_versions(self):
        name = uniq("many")
        create_model(name)
        run = new_run({"m/f": b"x"})
        for _ in range(1000):
            create_version(name, "runs:/%s/m" % run)
        seen, token = [], None
        while True:
            params = {"filter": "name = '%s'" % name, "max_results": 300,
                      "order_by": ["version_number ASC"]}
            if token:
                params["page_token"] = token
            body = ok(C.get(API + "model-versions/search", params))
            seen += [int(v["version"]) for v in body.get("model_versions", [])]
            token = body.get("next_page_token")
            if not token:
                break
        self.assertEqual(seen, list(range(1, 1001)))
        some = ok(C.get(API + "model-versions/search",
                        {"filter": "name = '%s' AND version_number > 995" % name}))
        self.assertEqual([v["version"] for v in some["model_versions"]],
                         ["1000", "999", "998", "997", "996"])
        by_run = ok(C.get(API + "model-versions/search",
                          {"filter": "run_id IN ('%s') AND name = '%s'" % (run, name),
                           "max_results": 1}))
        self.assertEqual(len(by_run["model_versions"]), 1)
        self.assertIn("next_page_token", by_run)


class AliasTest(unittest.TestCase):
    def test_aliases_move_and_roll_back(self):
        name = uniq()
        create_model(name)
        run = new_run({"m/f": b"x"})
        for _ in range(3):
            create_version(name, "runs:/%s/m" % run)
        for v in ("1", "2", "3"):
            ok(C.post(API + "registered-models/alias",
                      {"name": name, "alias": "champion", "version": v}))
        got = ok(C.get(API + "registered-models/alias",
                       {"name": name, "alias": "champion"}))["model_version"]
        self.assertEqual(got["version"], "3")
        self.assertEqual(got["aliases"], ["champion"])
        back = ok(C.post(CAIRN_API + "models/rollback", {"name": name, "alias": "champion"}))
        self.assertEqual(back["version"], "2")
        back = ok(C.post(CAIRN_API + "models/rollback", {"name": name, "alias": "champion"}))
        self.assertEqual(back["version"], "1")
        msg = error(C.post(CAIRN_API + "models/rollback", {"name": name, "alias": "champion"}),
                    400, "BAD_REQUEST")
        self.assertIn("has no earlier version to roll back to", msg)
        history = ok(C.get(CAIRN_API + "models/alias-history",
                           {"name": name, "alias": "champion"}))["moves"]
        self.assertEqual([(m["kind"], m["version"]) for m in history],
                         [("set", "1"), ("set", "2"), ("set", "3"), ("rollback", "2"),
                          ("rollback", "1")])
        model = ok(C.get(API + "registered-models/get", {"name": name}))["registered_model"]
        self.assertEqual(model["aliases"], [{"alias": "champion", "version": "1"}])
        msg = error(C.post(API + "registered-models/alias",
                           {"name": name, "alias": "latest", "version": "1"}), 400,
                    "INVALID_PARAMETER_VALUE")
        self.assertEqual(msg, "'latest' alias name (case insensitive) is reserved.")
        error(C.post(API + "registered-models/alias", {"name": name, "alias": "v2", "version": "1"}),
              400, "INVALID_PARAMETER_VALUE")
        ok(C.delete(API + "registered-models/alias", {"name": name, "alias": "champion"}))
        msg = error(C.get(API + "registered-models/alias", {"name": name, "alias": "champion"}),
                    400, "INVALID_PARAMETER_VALUE")
        self.assertEqual(msg, "Registered model alias champion not found.")

    def test_models_uris_resolve(self):
        name = uniq()
        create_model(name)
        run = new_run({"m/f": b"x"})
        for _ in range(3):
            create_version(name, "runs:/%s/m" % run)
        ok(C.post(API + "model-versions/transition-stage",
                  {"name": name, "version": "2", "stage": "Staging"}))
        ok(C.post(API + "registered-models/alias", {"name": name, "alias": "best", "version": "1"}))
        # models:/NAME/STAGE and models:/NAME/latest, as the client resolves them.
        staging = ok(C.post(API + "registered-models/get-latest-versions",
                            {"name": name, "stages": ["staging"]}))["model_versions"]
        self.assertEqual([v["version"] for v in staging], ["2"])
        every = ok(C.post(API + "registered-models/get-latest-versions", {"name": name}))
        self.assertEqual(max(int(v["version"]) for v in every["model_versions"]), 3)
        # A version made from models:/ copies the other version's files.
        copied = create_version(name, "models:/%s@best" % name)
        self.assertEqual(copied["version"], "4")
        uri = ok(C.get(API + "model-versions/get-download-uri",
                       {"name": name, "version": "4"}))["artifact_uri"]
        listing = ok(C.get(ARTIFACTS.rstrip("/"), {"path": uri[len("mlflow-artifacts:/"):]}))
        self.assertEqual([f["path"] for f in listing["files"]], ["f"])
        staged = create_version(name, "models:/%s/Staging" % name)
        self.assertEqual(staged["version"], "5")


class CliTest(unittest.TestCase):
    """cairn models against the server: promote, roll back, and a version's lineage."""

    def cairn(self, *args):
        env = dict(os.environ, CAIRN_TRACKING_URI=SERVER.url, NO_COLOR="1")
        return subprocess.run([tl.CONFIG.cairn, "models", *args], env=env, capture_output=True,
                              text=True, timeout=60)

    def test_promote_rollback_and_show_lineage(self):
        name = uniq("cli")
        create_model(name)
        run = new_run({"model/w.bin": b"w"})
        ok(C.post(API + "runs/log-batch", {"run_id": run, "params": [{"key": "lr", "value": "0.1"}],
                                           "tags": [{"key": "mlflow.source.git.commit",
                                                     "value": "c0ffee12"}]}))
        ok(C.post(API + "runs/log-inputs", {"run_id": run, "datasets": [{"dataset": {
            "name": "mnist", "digest": "d1", "source_type": "local", "source": "/data/mnist"}}]}))
        for _ in range(2):
            create_version(name, "runs:/%s/model" % run)
        out = self.cairn("promote", name, "1", "--alias", "champion")
        self.assertEqual((out.returncode, out.stdout), (0, "%s@champion: none -> 1\n" % name),
                         out.stderr)
        out = self.cairn("promote", name, "2", "--alias", "champion")
        self.assertEqual(out.stdout, "%s@champion: 1 -> 2\n" % name)
        out = self.cairn("rollback", name, "--alias", "champion")
        self.assertEqual((out.returncode, out.stdout), (0, "%s@champion: 2 -> 1\n" % name),
                         out.stderr)
        out = self.cairn("rollback", name, "--alias", "champion")
        self.assertEqual(out.returncode, 1)
        self.assertIn("no earlier version to roll back to", out.stderr)
        out = self.cairn("show", name + "@champion")
        self.assertEqual(out.returncode, 0, out.stderr)
        for text in ("version  1", "made by", run, "lr  0.1", "mnist  digest d1",
                     "c0ffee12", "model/w.bin"):
            self.assertIn(text, out.stdout)
        out = self.cairn("show", name + "/2", "--json")
        body = json.loads(out.stdout)
        self.assertEqual(body["model_version"]["version"], "2")
        self.assertEqual(body["run"]["run"]["info"]["run_id"], run)
        out = self.cairn("show", name)
        self.assertIn("champion=1", out.stdout)
        out = self.cairn("history", name)
        self.assertEqual([line.split()[3] for line in out.stdout.splitlines()[1:]],
                         ["set", "set", "rollback"])
        out = self.cairn("ls", "--filter", "name = '%s'" % name)
        self.assertIn(name, out.stdout)
        out = self.cairn("show", "nope-" + name)
        self.assertEqual(out.returncode, 1)
        self.assertIn("not found", out.stderr)


class AllowedSchemeTest(unittest.TestCase):
    """A server started with --allow-model-source keeps such sources as given."""

    def test_allowed_scheme_is_kept_and_others_still_refused(self):
        root, data_dir = tl.make_temp_root("cairn-registry-s3-")
        server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (registry, s3 allowed)",
                                extra_args=["--allow-model-source", "S3"])
        try:
            server.start()
            c = server.client()
            name = uniq()
            ok(c.post(API + "registered-models/create", {"name": name}))
            v = ok(c.post(API + "model-versions/create",
                          {"name": name, "source": "s3://bucket/model"}))["model_version"]
            self.assertEqual(v["source"], "s3://bucket/model")
            uri = ok(c.get(API + "model-versions/get-download-uri",
                           {"name": name, "version": v["version"]}))["artifact_uri"]
            self.assertEqual(uri, "s3://bucket/model")
            error(c.post(API + "model-versions/create", {"name": name, "source": "gs://b/m"}),
                  400, "INVALID_PARAMETER_VALUE")
        finally:
            self.assertEqual(server.stop(), 0)
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(tl.main("registry", sys.modules[__name__]))
