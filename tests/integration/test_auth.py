#!/usr/bin/env python3
"""Identity and access against the real server, with authentication on and off: each
permission level on each class of endpoint, searches filtered to what the caller may read,
passwords, tokens (expired, revoked, read-only), teams, MLflow's auth API, the audit log of
deletes, throttled sign-ins, browser sessions with their CSRF token, and the refusal to listen
beyond loopback without authentication.

Usage: test_auth.py --cairn build/release/cairn
"""
import base64
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts/"
CAIRN = "/api/cairn/v1/"
ADMIN_PASSWORD = "admin-password-1"
NOT_AUTHENTICATED = ("You are not authenticated. Please see "
                     "https://www.mlflow.org/docs/latest/auth/index.html#authenticating-to-mlflow "
                     "on how to authenticate.")


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(
        ("%s:%s" % (user, password)).encode()).decode()}


def bearer(token):
    return {"Authorization": "Bearer " + token}


class As:
    """Requests made with one set of credentials."""

    def __init__(self, client, headers):
        self.c = client
        self.headers = headers

    def get(self, path, params=None, headers=None):
        return self.c.get(path, params, headers={**self.headers, **(headers or {})})

    def post(self, path, body=None, headers=None):
        return self.c.post(path, body, headers={**self.headers, **(headers or {})})

    def patch(self, path, body=None):
        return self.c.patch(path, body, headers=self.headers)

    def delete(self, path, body=None):
        return self.c.delete(path, body, headers=self.headers)

    def put(self, path, data):
        return self.c.put(path, data, headers=self.headers)


def write_password_file(root, password):
    path = os.path.join(root, "admin-password")
    with open(path, "w") as f:
        f.write(password + "\n")
    os.chmod(path, 0o600)
    return path


class AuthOnTest(unittest.TestCase):
    """--auth on, default permission READ."""

    @classmethod
    def setUpClass(cls):
        cls.root, cls.data_dir = tl.make_temp_root("cairn-auth-")
        password_file = write_password_file(cls.root, ADMIN_PASSWORD)
        cls.server = tl.CairnServer(tl.CONFIG.cairn, cls.data_dir, name="cairn (auth on)",
                                    extra_args=["--auth", "on", "--init-admin", "admin",
                                                "--password-file", password_file])
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.c = cls.server.client()
        cls.admin = As(cls.c, basic("admin", ADMIN_PASSWORD))
        # Accounts: one per level, granted on the experiment "levels"; a team member.
        for name in ("reader", "editor", "manager", "outsider", "member", "plain"):
            r = cls.admin.post(API + "users/create", {"username": name, "password": name + "-pass"})
            assert r.status == 200, r
        r = cls.admin.post(API + "experiments/create", {"name": "levels"})
        assert r.status == 200, r
        cls.exp = r.body["experiment_id"]
        for user, level in (("reader", "READ"), ("editor", "EDIT"), ("manager", "MANAGE"),
                            ("outsider", "NO_PERMISSIONS"), ("member", "NO_PERMISSIONS")):
            r = cls.admin.post(API + "experiments/permissions/create",
                               {"experiment_id": cls.exp, "username": user, "permission": level})
            assert r.status == 200, r

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def user(self, name):
        return As(self.c, basic(name, name + "-pass"))

    def new_run(self, experiment_id=None):
        r = self.admin.post(API + "runs/create", {"experiment_id": experiment_id or self.exp,
                                                  "start_time": tl.now_ms()})
        self.assertEqual(r.status, 200, r)
        return r.body["run"]["info"]

    def new_token(self, who, name, scopes=None):
        body = {"name": name}
        if scopes:
            body["scopes"] = scopes
        r = who.post(CAIRN + "tokens", body)
        self.assertEqual(r.status, 200, r)
        self.assertTrue(r.body["value"].startswith("cairn_"), r.body)
        return r.body["token"], r.body["value"]

    # --- credentials ---------------------------------------------------------------------------

    def test_requests_without_credentials_get_mlflows_401(self):
        for method, path in (("GET", API + "experiments/search?max_results=5"),
                             ("POST", API + "runs/log-batch"),
                             ("GET", CAIRN + "experiments/stats"),
                             ("GET", ARTIFACTS + "1/x/artifacts/a.txt")):
            r = self.c.request(method, path, body={} if method == "POST" else None)
            self.assertEqual(r.status, 401, (method, path, r))
            self.assertEqual(r.text, NOT_AUTHENTICATED)
            self.assertEqual(r.header("WWW-Authenticate"), 'Basic realm="mlflow"')
        # The web UI's own requests get no browser password dialog.
        r = self.c.get(API + "experiments/search", headers={"X-Cairn-UI": "1"})
        self.assertEqual(r.status, 401)
        self.assertIsNone(r.header("WWW-Authenticate"))
        # Health, version and the UI's files need none.
        self.assertEqual(self.c.get("/health").status, 200)
        self.assertEqual(self.c.get("/version").status, 200)

    def test_wrong_password_unknown_user_and_malformed_header_are_refused(self):
        self.assertEqual(self.c.get(API + "experiments/search",
                                    headers=basic("reader", "nope")).status, 401)
        self.assertEqual(self.c.get(API + "experiments/search",
                                    headers=basic("ghost", "ghost-pass")).status, 401)
        for header in ("Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode(), "Token x",
                       "Bearer", ""):
            r = self.c.get(API + "experiments/search", headers={"Authorization": header})
            self.assertEqual(r.status, 401, header)
        self.assertEqual(self.user("reader").get(API + "experiments/search").status, 200)

    def test_tokens_work_until_revoked_and_only_hashes_are_kept(self):
        editor = self.user("editor")
        token, value = self.new_token(editor, "laptop")
        self.assertEqual(token["scopes"], ["read", "write"])
        self.assertIsNone(token["expiry_time"])
        run = self.new_run()
        as_token = As(self.c, bearer(value))
        r = as_token.post(API + "runs/log-batch", {"run_id": run["run_id"], "metrics": [
            {"key": "loss", "value": 0.5, "timestamp": 1, "step": 1}]})
        self.assertEqual(r.status, 200, r)
        listed = editor.get(CAIRN + "tokens").body["tokens"]
        self.assertEqual([t["name"] for t in listed], ["laptop"])
        self.assertIsNotNone(listed[0]["last_used_time"])
        self.assertNotIn("value", listed[0])
        # The database holds the SHA-256 of the value, never the value.
        db = sqlite3.connect(os.path.join(self.data_dir, "cairn.db"))
        stored = db.execute("SELECT secret_hash FROM tokens WHERE id = ?", (token["id"],)).fetchone()
        db.close()
        self.assertEqual(stored[0], hashlib.sha256(value.encode()).hexdigest())
        # Another user cannot revoke it; its owner can, and it stops at once.
        r = self.user("reader").post(CAIRN + "tokens/revoke", {"token": token["id"]})
        self.assertEqual(r.status, 404, r)
        r = editor.post(CAIRN + "tokens/revoke", {"token": "laptop"})
        self.assertEqual(r.status, 200, r)
        self.assertIsNotNone(r.body["token"]["revoked_time"])
        r = as_token.post(API + "runs/log-batch", {"run_id": run["run_id"], "metrics": []})
        self.assertEqual(r.status, 401, r)
        self.assertEqual(as_token.get(API + "experiments/search").status, 401)

    def test_expired_token_is_refused(self):
        # A token that expired a minute ago, written as another process would write it.
        value = "cairn_" + "ab" * 20
        db = sqlite3.connect(os.path.join(self.data_dir, "cairn.db"), timeout=10)
        now = tl.now_ms()
        db.execute("INSERT INTO tokens (id, name, owner, secret_hash, scopes, created_time, "
                   "expiry_time, last_used_time, revoked_time) VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0)",
                   ("expired1", "old", "outsider", hashlib.sha256(value.encode()).hexdigest(),
                    "read,write", now - 120000, now - 60000))
        db.commit()
        db.close()
        r = self.c.get(API + "experiments/search", headers=bearer(value))
        self.assertEqual(r.status, 401, r)
        entries = self.admin.get(CAIRN + "audit", {"actor": "outsider/old"}).body["entries"]
        self.assertEqual(entries[0]["outcome"], "refused: expired token")

    def test_read_scoped_token_reads_but_does_not_write(self):
        manager = self.user("manager")
        _, value = self.new_token(manager, "read-only", ["read"])
        as_token = As(self.c, bearer(value))
        self.assertEqual(as_token.get(API + "experiments/get", {"experiment_id": self.exp}).status,
                         200)
        r = as_token.post(API + "runs/create", {"experiment_id": self.exp})
        self.assertEqual(r.status, 403, r)
        self.assertEqual(r.body, {"error_code": "PERMISSION_DENIED", "message": "Permission denied"})
        # Nor can it make itself a stronger token.
        r = as_token.post(CAIRN + "tokens", {"name": "escalated", "scopes": ["write"]})
        self.assertEqual(r.status, 403, r)

    # --- each level on each class of endpoint ---------------------------------------------------

    def test_each_level_on_experiments_runs_and_artifacts(self):
        run = self.new_run()
        run_id = run["run_id"]
        path = ARTIFACTS + "%s/%s/artifacts/notes.txt" % (self.exp, run_id)
        self.assertEqual(self.admin.put(path, b"hello").status, 200)
        # (read, update, delete/manage) expected for each user on the experiment "levels".
        expected = {"reader": (True, False, False), "editor": (True, True, False),
                    "manager": (True, True, True), "outsider": (False, False, False),
                    "plain": (True, False, False)}  # nothing granted: the default, READ
        for name, (can_read, can_update, can_manage) in expected.items():
            who = self.user(name)
            with self.subTest(user=name):
                checks = [
                    (can_read, who.get(API + "experiments/get", {"experiment_id": self.exp})),
                    (can_read, who.get(API + "runs/get", {"run_id": run_id})),
                    (can_read, who.get(API + "metrics/get-history",
                                       {"run_id": run_id, "metric_key": "m"})),
                    (can_read, who.get(path)),
                    (can_read, who.get(CAIRN + "metrics/series", {"run_id": run_id, "key": "m"})),
                    (can_update, who.post(API + "runs/set-tag",
                                          {"run_id": run_id, "key": "k", "value": name})),
                    (can_update, who.post(API + "runs/create", {"experiment_id": self.exp})),
                    (can_update, who.put(path.replace("notes", "by-" + name), b"x")),
                    (can_update, who.post(API + "experiments/set-experiment-tag",
                                          {"experiment_id": self.exp, "key": "k", "value": "v"})),
                    (can_manage, who.get(API + "experiments/permissions/get",
                                         {"experiment_id": self.exp, "username": "reader"})),
                    (can_manage, who.get(CAIRN + "experiments/permissions",
                                         {"experiment_id": self.exp})),
                ]
                # The UI asks first what it may offer; the answer agrees with what happens.
                access = who.get(CAIRN + "experiments/access", {"experiment_id": self.exp})
                self.assertEqual(access.status, 200, access)
                mine = access.body["experiments"][0]
                self.assertEqual((mine["can_read"], mine["can_update"], mine["can_manage"]),
                                 (can_read, can_update, can_manage))
                for i, (allowed, r) in enumerate(checks):
                    if allowed:
                        self.assertIn(r.status, (200, 404), (i, r))  # 404: no such metric yet
                    else:
                        self.assertEqual(r.status, 403, (i, r))
        # Deleting needs MANAGE: the editor is refused, the manager may.
        victim = self.new_run()["run_id"]
        self.assertEqual(self.user("editor").post(API + "runs/delete", {"run_id": victim}).status,
                         403)
        self.assertEqual(self.user("manager").post(API + "runs/delete", {"run_id": victim}).status,
                         200)
        self.assertEqual(self.user("editor").delete(path).status, 403)
        self.assertEqual(self.user("manager").delete(path).status, 200)

    def test_a_run_without_an_experiment_goes_to_default_only_if_allowed(self):
        # With the default READ, nobody but admins may add runs to the Default experiment,
        # named or not.
        reader = self.user("reader")
        self.assertEqual(reader.post(API + "runs/create", {}).status, 403)
        self.assertEqual(reader.post(API + "runs/create", {"experiment_id": "0"}).status, 403)
        r = self.admin.post(API + "runs/create", {})
        self.assertEqual((r.status, r.body["run"]["info"]["experiment_id"]), (200, "0"))

    def test_padded_experiment_ids_are_the_same_experiment(self):
        outsider = self.user("outsider")
        for padded in ("0" + self.exp, "00" + self.exp):
            r = outsider.get(API + "experiments/get", {"experiment_id": padded})
            self.assertEqual(r.status, 403, (padded, r))
        # A grant made with a padded id holds for the experiment itself.
        r = self.admin.post(API + "experiments/create", {"name": "padded"})
        padded_exp = r.body["experiment_id"]
        r = self.admin.post(API + "experiments/permissions/create",
                            {"experiment_id": "0" + padded_exp, "username": "outsider",
                             "permission": "NO_PERMISSIONS"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(outsider.get(API + "experiments/get",
                                      {"experiment_id": padded_exp}).status, 403)

    def test_a_token_cannot_change_its_owners_password(self):
        _, value = self.new_token(self.user("member"), "member-write")
        r = As(self.c, bearer(value)).patch(API + "users/update-password",
                                            {"username": "member", "password": "taken-over"})
        self.assertEqual(r.status, 403, r)
        self.assertEqual(self.user("member").get(API + "experiments/search").status, 200)

    def test_bad_tokens_from_an_address_do_not_lock_out_good_ones(self):
        _, value = self.new_token(self.user("reader"), "steady")
        good = As(self.c, bearer(value))
        self.assertEqual(good.get(API + "experiments/search").status, 200)
        statuses = [self.c.get(API + "experiments/search",
                               headers=bearer("cairn_%040x" % i)).status for i in range(15)]
        self.assertEqual(statuses[0], 401)
        self.assertEqual(statuses[-1], 429)  # the address's bad tokens are held back
        time.sleep(0.6)  # past the recheck of cached credentials
        self.assertEqual(good.get(API + "experiments/search").status, 200)

    def test_batched_records_are_checked_one_by_one(self):
        theirs = self.new_run()
        mine = os.urandom(16).hex()
        for who, expect in (("reader", [0, 1]), ("editor", [])):
            r = self.user(who).post(CAIRN + "runs/records", {"records": [
                {"run_id": os.urandom(16).hex(), "op": "create", "experiment_id": self.exp,
                 "start_time": 1},
                {"run_id": theirs["run_id"], "op": "batch",
                 "tags": [{"key": "by", "value": who}]}]})
            self.assertEqual(r.status, 200, r)
            self.assertEqual([f["index"] for f in r.body["failures"]], expect, (who, r.body))
            for f in r.body["failures"]:
                self.assertEqual(f["error_code"], "PERMISSION_DENIED")
        # Naming someone else's run in a create of one's own opens nothing: the run exists, so
        # the records after the create are checked against its real experiment.
        put = self.admin.put(ARTIFACTS + "%s/%s/artifacts/model.txt" % (
            self.exp, theirs["run_id"]), b"the real model")
        self.assertEqual(put.status, 200, put)
        r = self.user("outsider").post(CAIRN + "runs/records", {"records": [
            {"run_id": theirs["run_id"], "op": "create", "experiment_name": "outsiders-trap",
             "start_time": 1},
            {"run_id": theirs["run_id"], "op": "batch", "tags": [{"key": "by", "value": "x"}]},
            {"run_id": theirs["run_id"], "op": "artifact", "path": "model.txt",
             "content": "planted"},
            {"run_id": theirs["run_id"], "op": "end", "status": "KILLED", "end_time": 2}]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([(f["index"], f["error_code"]) for f in r.body["failures"]],
                         [(0, "RESOURCE_ALREADY_EXISTS"), (1, "PERMISSION_DENIED"),
                          (2, "PERMISSION_DENIED"), (3, "PERMISSION_DENIED")])
        got = self.admin.get(ARTIFACTS + "%s/%s/artifacts/model.txt" % (self.exp,
                                                                         theirs["run_id"]))
        self.assertEqual(got.raw, b"the real model")
        # A run the outsider creates in an experiment of its own is its own to write.
        outsider = self.user("outsider")
        r = outsider.post(CAIRN + "runs/records", {"records": [
            {"run_id": mine, "op": "create", "experiment_name": "outsiders-own", "start_time": 1},
            {"run_id": mine, "op": "end", "status": "FINISHED", "end_time": 2},
            {"run_id": theirs["run_id"], "op": "end", "status": "KILLED", "end_time": 2}]})
        self.assertEqual(r.status, 200, r)
        self.assertEqual([(f["index"], f["error_code"]) for f in r.body["failures"]],
                         [(2, "PERMISSION_DENIED")])
        run = self.admin.get(API + "runs/get", {"run_id": theirs["run_id"]}).body["run"]
        self.assertEqual(run["info"]["status"], "RUNNING")
        self.assertIn({"key": "by", "value": "editor"}, run["data"]["tags"])

    def test_only_the_named_approver_decides_on_a_step_and_it_is_audited(self):
        self.assertEqual(self.admin.post(CAIRN + "teams", {"name": "approvers"}).status, 200)
        self.assertEqual(self.admin.post(CAIRN + "teams/members",
                                         {"team": "approvers", "username": "reader"}).status, 200)
        waiting = self.new_run()["run_id"]
        r = self.admin.post(API + "runs/log-batch", {"run_id": waiting, "tags": [
            {"key": "cairn.approval.by", "value": "approvers"},
            {"key": "cairn.step.state", "value": "waiting for approval"}]})
        self.assertEqual(r.status, 200, r)
        # The editor may write to the run but is not an approver; the outsider may not even
        # read it.
        r = self.user("editor").post(CAIRN + "runs/approval",
                                     {"run_id": waiting, "decision": "approve"})
        self.assertEqual((r.status, r.body["error_code"]), (403, "PERMISSION_DENIED"), r)
        self.assertIn("is approved by approvers", r.body["message"])
        r = self.user("outsider").post(CAIRN + "runs/approval",
                                       {"run_id": waiting, "decision": "approve"})
        self.assertEqual(r.status, 403, r)
        # Nobody writes a decision as a tag; a read-only token cannot decide either.
        for key in ("cairn.approval.decision", "cairn.approval.decided_by"):
            r = self.admin.post(API + "runs/set-tag", {"run_id": waiting, "key": key,
                                                       "value": "approved"})
            self.assertEqual((r.status, r.body["error_code"]), (400, "INVALID_PARAMETER_VALUE"))
        _, read_only = self.new_token(self.user("reader"), "approver-ro", ["read"])
        r = As(self.c, bearer(read_only)).post(CAIRN + "runs/approval",
                                               {"run_id": waiting, "decision": "approve"})
        self.assertEqual(r.status, 403, r)
        # A member of the team decides; the decision stands.
        r = self.user("reader").post(CAIRN + "runs/approval", {
            "run_id": waiting, "decision": "reject", "comment": "metrics regressed",
            "user": "someone-else"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body, {"run_id": waiting, "decision": "rejected",
                                  "decided_by": "reader"})
        tags = {t["key"]: t["value"] for t in self.admin.get(
            API + "runs/get", {"run_id": waiting}).body["run"]["data"]["tags"]}
        self.assertEqual((tags["cairn.approval.decision"], tags["cairn.approval.decided_by"],
                          tags["cairn.approval.comment"]),
                         ("rejected", "reader", "metrics regressed"))
        r = self.admin.post(CAIRN + "runs/approval", {"run_id": waiting, "decision": "approve"})
        self.assertEqual((r.status, r.body["error_code"]), (400, "RESOURCE_ALREADY_EXISTS"), r)
        self.assertIn("was rejected already by reader", r.body["message"])
        audit = self.admin.get(CAIRN + "audit", {"object": "run " + waiting}).body
        actions = [(e["actor"], e["action"], e["outcome"].split(":")[0])
                   for e in audit.get("entries", [])]
        self.assertIn(("reader", "POST runs/approval (rejected)", "ok"), actions)
        self.assertIn(("editor", "POST runs/approval (approved)", "PERMISSION_DENIED"), actions)
        # A run that waits for nothing cannot be decided on.
        r = self.admin.post(CAIRN + "runs/approval",
                            {"run_id": self.new_run()["run_id"], "decision": "approve"})
        self.assertEqual((r.status, r.body["error_code"]), (400, "BAD_REQUEST"), r)

    def test_an_existing_run_id_in_another_experiment_is_not_shown(self):
        run_id = self.new_run()["run_id"]
        r = self.user("editor").post(CAIRN + "runs", {"run_id": run_id,
                                                      "experiment_name": "editor-elsewhere"})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.body["error_code"], "RESOURCE_ALREADY_EXISTS")
        self.assertEqual(set(r.body), {"error_code", "message"})
        self.assertNotIn("artifact", r.body["message"])

    def test_a_password_set_by_another_process_ends_browser_sessions(self):
        r = self.admin.post(API + "users/create", {"username": "browser", "password": "browser-1"})
        self.assertEqual(r.status, 200, r)
        r = self.c.post(CAIRN + "auth/login", {"username": "browser", "password": "browser-1"})
        session = {"Cookie": r.header("Set-Cookie").split(";")[0]}
        self.assertEqual(self.c.get(API + "experiments/search", headers=session).status, 200)
        password_file = os.path.join(self.root, "browser-pw")
        with open(password_file, "w") as f:
            f.write("browser-2\n")
        os.chmod(password_file, 0o600)
        p = subprocess.run([tl.CONFIG.cairn, "admin", "set-password", "browser", "--password-file",
                            password_file, "--data-dir", self.data_dir],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        time.sleep(0.6)
        self.assertEqual(self.c.get(API + "experiments/search", headers=session).status, 401)
        self.assertEqual(self.c.get(API + "experiments/search",
                                    headers=basic("browser", "browser-2")).status, 200)

    def test_a_missing_run_is_404_not_403(self):
        r = self.user("reader").get(API + "runs/get", {"run_id": "0" * 32})
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body["error_code"], "RESOURCE_DOES_NOT_EXIST")

    def test_admin_endpoints_refuse_others(self):
        reader = self.user("reader")
        for r in (reader.post(API + "users/create", {"username": "x1", "password": "password1"}),
                  reader.patch(API + "users/update-admin", {"username": "reader", "is_admin": True}),
                  reader.delete(API + "users/delete", {"username": "editor"}),
                  reader.get(CAIRN + "users"), reader.get(CAIRN + "audit"),
                  reader.post(CAIRN + "teams", {"name": "x"}),
                  reader.get(API + "users/get", {"username": "editor"})):
            self.assertEqual(r.status, 403, r)
        # A user may read and change its own account.
        r = reader.get(API + "users/get", {"username": "reader"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body["user"]["experiment_permissions"],
                         [{"experiment_id": self.exp, "user_id": r.body["user"]["id"],
                           "permission": "READ"}])

    def test_teams_grant_their_members(self):
        self.assertEqual(self.admin.post(CAIRN + "teams", {"name": "vision"}).status, 200)
        r = self.admin.post(API + "experiments/create", {"name": "team-only"})
        team_exp = r.body["experiment_id"]
        # Nobody reads it by default ...
        for body in ({"username": "member", "permission": "NO_PERMISSIONS"},
                     {"team": "vision", "permission": "EDIT"}):
            r = self.admin.post(CAIRN + "experiments/permissions",
                                {"experiment_id": team_exp, **body})
            self.assertEqual(r.status, 200, r)
        self.assertEqual(self.admin.post(CAIRN + "teams/members",
                                         {"team": "vision", "username": "plain"}).status, 200)
        # ... the team's EDIT lets its member write; a user's own grant beats the team's.
        plain = self.user("plain")
        self.assertEqual(plain.post(API + "runs/create", {"experiment_id": team_exp}).status, 200)
        self.assertEqual(self.admin.post(CAIRN + "teams/members",
                                         {"team": "vision", "username": "member"}).status, 200)
        self.assertEqual(self.user("member").get(API + "experiments/get",
                                                 {"experiment_id": team_exp}).status, 403)
        # Leaving the team takes its grant away at once.
        self.assertEqual(self.admin.post(CAIRN + "teams/members/remove",
                                         {"team": "vision", "username": "plain"}).status, 200)
        self.assertEqual(plain.post(API + "runs/create", {"experiment_id": team_exp}).status, 403)

    # --- searches are filtered, never refused ----------------------------------------------------

    def test_searches_leave_out_what_the_caller_may_not_read(self):
        outsider = self.user("outsider")
        r = outsider.get(API + "experiments/search", {"max_results": 1000})
        self.assertEqual(r.status, 200, r)
        names = [e["name"] for e in r.body.get("experiments", [])]
        self.assertNotIn("levels", names)
        self.assertIn("Default", names)
        self.assertIn("levels", [e["name"] for e in
                                 self.user("reader").get(API + "experiments/search").body["experiments"]])
        self.new_run()
        r = outsider.post(API + "runs/search", {"experiment_ids": [self.exp, "0"]})
        self.assertEqual(r.status, 200, r)
        self.assertTrue(all(run["info"]["experiment_id"] != self.exp for run in r.body.get("runs", [])))
        self.assertTrue(self.user("reader").post(API + "runs/search",
                                                 {"experiment_ids": [self.exp]}).body.get("runs"))
        stats = outsider.get(CAIRN + "experiments/stats").body["experiments"]
        self.assertNotIn(self.exp, [s["experiment_id"] for s in stats])
        # Pages stay full: with page size 1 the readable experiments all come, one per page.
        seen, token = [], None
        while True:
            params = {"max_results": 1, **({"page_token": token} if token else {})}
            page = outsider.get(API + "experiments/search", params).body
            seen += [e["name"] for e in page.get("experiments", [])]
            token = page.get("next_page_token")
            if not token:
                break
        self.assertEqual(sorted(seen), sorted(names))

    # --- MLflow's auth API -----------------------------------------------------------------------

    def test_mlflow_auth_api_shapes_and_errors(self):
        r = self.admin.post(API + "users/create", {"username": "carol", "password": "carol-pass"})
        self.assertEqual(r.status, 200, r)
        user = r.body["user"]
        self.assertEqual(set(user), {"id", "username", "is_admin", "experiment_permissions",
                                     "registered_model_permissions"})
        r = self.admin.post(API + "users/create", {"username": "carol", "password": "carol-pass"})
        self.assertEqual((r.status, r.body["error_code"]), (400, "RESOURCE_ALREADY_EXISTS"))
        self.assertEqual(r.body["message"], "User (username=carol) already exists.")
        r = self.admin.get(API + "users/get", {"username": "nobody"})
        self.assertEqual((r.status, r.body["message"]), (404, "User with username=nobody not found"))
        r = self.admin.post(API + "experiments/permissions/create",
                            {"experiment_id": self.exp, "username": "carol", "permission": "OWNER"})
        self.assertEqual(r.status, 400)
        self.assertEqual(r.body["message"], "Invalid permission 'OWNER'. Valid permissions are: "
                                            "('READ', 'EDIT', 'MANAGE', 'NO_PERMISSIONS')")
        r = self.admin.post(API + "experiments/permissions/create",
                            {"experiment_id": self.exp, "username": "carol", "permission": "EDIT"})
        self.assertEqual(r.body, {"experiment_permission": {
            "experiment_id": self.exp, "user_id": user["id"], "permission": "EDIT"}})
        r = self.admin.patch(API + "experiments/permissions/update",
                             {"experiment_id": self.exp, "username": "carol", "permission": "READ"})
        self.assertEqual((r.status, r.body), (200, {}))
        r = self.admin.get(API + "experiments/permissions/get",
                           {"experiment_id": self.exp, "username": "carol"})
        self.assertEqual(r.body["experiment_permission"]["permission"], "READ")
        r = self.admin.delete(API + "experiments/permissions/delete",
                              {"experiment_id": self.exp, "username": "carol"})
        self.assertEqual((r.status, r.body), (200, {}))
        r = self.admin.delete(API + "experiments/permissions/delete",
                              {"experiment_id": self.exp, "username": "carol"})
        self.assertEqual(r.status, 404)
        self.assertEqual(r.body["message"], "Experiment permission with experiment_id=%s and "
                                            "username=carol not found" % self.exp)
        # A password change applies at once; update-admin makes an admin.
        carol = As(self.c, basic("carol", "carol-pass"))
        r = carol.patch(API + "users/update-password", {"username": "carol", "password": "carol-new1"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(carol.get(API + "experiments/search").status, 401)
        r = self.admin.patch(API + "users/update-admin", {"username": "carol", "is_admin": True})
        self.assertEqual(r.status, 200, r)
        carol = As(self.c, basic("carol", "carol-new1"))
        self.assertEqual(carol.get(CAIRN + "users").status, 200)
        self.assertEqual(self.admin.delete(API + "users/delete", {"username": "carol"}).status, 200)
        self.assertEqual(carol.get(API + "experiments/search").status, 401)

    def test_creator_manages_what_it_creates(self):
        editor = self.user("editor")
        r = editor.post(API + "experiments/create", {"name": "editors-own"})
        self.assertEqual(r.status, 200, r)
        own = r.body["experiment_id"]
        r = editor.get(CAIRN + "experiments/permissions", {"experiment_id": own})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(r.body["permissions"], [{"username": "editor", "permission": "MANAGE"}])
        self.assertEqual(self.user("reader").post(API + "experiments/delete",
                                                  {"experiment_id": own}).status, 403)
        self.assertEqual(editor.post(API + "experiments/delete", {"experiment_id": own}).status, 200)

    def test_registered_models_take_permissions_like_experiments(self):
        editor, reader, outsider = self.user("editor"), self.user("reader"), self.user("outsider")
        # The editor may write the experiment, so it may register a model from its run.
        run = self.new_run()
        root = run["artifact_uri"][len("mlflow-artifacts:/"):]
        self.assertEqual(self.admin.put(ARTIFACTS + root + "/model/w.bin", b"w").status, 200)
        r = editor.post(API + "registered-models/create", {"name": "editors-model"})
        self.assertEqual(r.status, 200, r)
        r = editor.post(API + "model-versions/create",
                        {"name": "editors-model", "source": "runs:/%s/model" % run["run_id"]})
        self.assertEqual(r.status, 200, r)
        # The creator manages it; the server default (READ) lets others read, not write.
        r = editor.post(API + "registered-models/permissions/create",
                        {"name": "editors-model", "username": "outsider",
                         "permission": "NO_PERMISSIONS"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(set(r.body["registered_model_permission"]), {"name", "user_id", "permission"})
        r = editor.get(API + "registered-models/permissions/get",
                       {"name": "editors-model", "username": "outsider"})
        self.assertEqual(r.body["registered_model_permission"]["permission"], "NO_PERMISSIONS")
        self.assertEqual(reader.get(API + "registered-models/get",
                                    {"name": "editors-model"}).status, 200)
        self.assertEqual(reader.post(API + "registered-models/alias",
                                     {"name": "editors-model", "alias": "a", "version": "1"}).status,
                         403)
        self.assertEqual(outsider.get(API + "registered-models/get",
                                      {"name": "editors-model"}).status, 403)
        # Searches leave out what the caller may not read; so do a version's files.
        names = [m["name"] for m in outsider.get(API + "registered-models/search").body.get(
            "registered_models", [])]
        self.assertNotIn("editors-model", names)
        self.assertNotIn("model_versions", outsider.get(
            API + "model-versions/search", {"filter": "name = 'editors-model'"}).body)
        uri = editor.get(API + "model-versions/get-download-uri",
                         {"name": "editors-model", "version": "1"}).body["artifact_uri"]
        file_path = ARTIFACTS + uri[len("mlflow-artifacts:/"):] + "/w.bin"
        self.assertEqual(reader.get(file_path).status, 200)
        self.assertEqual(outsider.get(file_path).status, 403)
        # Nobody may register what they may not read.
        r = outsider.post(API + "registered-models/create", {"name": "outsiders-model"})
        self.assertEqual(r.status, 200, r)
        r = outsider.post(API + "model-versions/create",
                          {"name": "outsiders-model", "source": "runs:/%s/model" % run["run_id"]})
        self.assertEqual(r.status, 403, r)
        for source in ("models:/editors-model/1", "models:/editors-model/99",
                       "models:/editors-model@nope"):
            # Refused before anything about the other model is looked up.
            r = outsider.post(API + "model-versions/create",
                              {"name": "outsiders-model", "source": source})
            self.assertEqual(r.status, 403, r)
        # The list of every version's storage is not for everyone.
        self.assertEqual(outsider.get(ARTIFACTS.rstrip("/"), {"path": "models"}).status, 403)
        # Every change to the model is in the audit log, refusals included.
        r = editor.post(API + "registered-models/alias",
                        {"name": "editors-model", "alias": "champion", "version": "1"})
        self.assertEqual(r.status, 200, r)
        entries = self.admin.get(CAIRN + "audit",
                                 {"object": "registered_model editors-model"}).body["entries"]
        actions = {(e["actor"], e["action"], e["outcome"].split(":")[0]) for e in entries}
        self.assertIn(("editor", "POST registered-models/alias", "ok"), actions)
        self.assertIn(("editor", "POST model-versions/create", "ok"), actions)
        self.assertIn(("reader", "POST registered-models/alias", "PERMISSION_DENIED"), actions)
        # Permissions follow a rename, and go with a delete.
        r = editor.post(API + "registered-models/rename",
                        {"name": "editors-model", "new_name": "renamed-model"})
        self.assertEqual(r.status, 200, r)
        self.assertEqual(outsider.get(API + "registered-models/get",
                                      {"name": "renamed-model"}).status, 403)
        self.assertEqual(editor.delete(API + "registered-models/delete",
                                       {"name": "renamed-model"}).status, 200)
        r = self.admin.get(API + "registered-models/permissions/get",
                           {"name": "renamed-model", "username": "editor"})
        self.assertEqual(r.status, 404, r)
        self.assertEqual(r.body["message"], "Registered model permission with name=renamed-model "
                                            "and username=editor not found")

    # --- the audit log ---------------------------------------------------------------------------

    def test_deletes_show_who_did_them(self):
        manager = self.user("manager")
        run_id = self.new_run()["run_id"]
        path = "%s/%s/artifacts/model.bin" % (self.exp, run_id)
        self.assertEqual(self.admin.put(ARTIFACTS + path, b"weights").status, 200)
        self.assertEqual(manager.delete(ARTIFACTS + path).status, 200)
        self.assertEqual(manager.post(API + "runs/delete", {"run_id": run_id}).status, 200)
        r = self.admin.post(API + "experiments/create", {"name": "to-delete"})
        gone = r.body["experiment_id"]
        self.assertEqual(self.admin.post(API + "experiments/delete",
                                         {"experiment_id": gone}).status, 200)
        refused = self.user("reader").post(API + "runs/delete", {"run_id": run_id})
        self.assertEqual(refused.status, 403)
        entries = self.admin.get(CAIRN + "audit", {"max_results": 50}).body["entries"]
        def find(action, obj):
            return [e for e in entries if e["action"] == action and e["object"] == obj]
        artifact = find("DELETE artifacts", "artifact " + path)
        self.assertEqual([(e["actor"], e["outcome"]) for e in artifact], [("manager", "ok")])
        self.assertEqual(artifact[0]["source"], "127.0.0.1")
        run_entries = find("POST runs/delete", "run " + run_id)
        self.assertEqual([(e["actor"], e["outcome"]) for e in run_entries],
                         [("reader", "PERMISSION_DENIED: Permission denied"), ("manager", "ok")])
        self.assertEqual([e["actor"] for e in find("POST experiments/delete", "experiment " + gone)],
                         ["admin"])
        # Filters, as `cairn audit` uses them.
        mine = self.admin.get(CAIRN + "audit", {"actor": "manager", "object": "run "}).body
        self.assertTrue(mine["entries"])
        self.assertTrue(all(e["actor"] == "manager" and e["object"].startswith("run ")
                            for e in mine["entries"]))
        # The log cannot be changed, even by someone with the database file.
        db = sqlite3.connect(os.path.join(self.data_dir, "cairn.db"), timeout=10)
        with self.assertRaises(sqlite3.DatabaseError):
            db.execute("DELETE FROM audit_log")
        db.close()

    def test_cairn_audit_command_reads_the_log(self):
        home = os.path.join(self.root, "home-audit")
        os.makedirs(home, exist_ok=True)
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                   MLFLOW_TRACKING_USERNAME="admin", MLFLOW_TRACKING_PASSWORD=ADMIN_PASSWORD,
                   CAIRN_TRACKING_URI=self.server.url)
        env.pop("CAIRN_TOKEN", None)
        self.admin.post(API + "experiments/create", {"name": "audited"})
        p = subprocess.run([tl.CONFIG.cairn, "audit", "--actor", "admin", "--since", "1h"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("POST experiments/create", p.stdout)
        self.assertIn("experiment audited", p.stdout)
        env.pop("MLFLOW_TRACKING_USERNAME")
        p = subprocess.run([tl.CONFIG.cairn, "audit"], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("cairn login", p.stderr)

    def test_cairn_login_saves_a_token_and_replaces_the_last_one(self):
        home = os.path.join(self.root, "home-login")
        os.makedirs(home, exist_ok=True)
        password_file = os.path.join(home, "pw")
        with open(password_file, "w") as f:
            f.write("plain-pass\n")
        os.chmod(password_file, 0o600)
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CAIRN_", "MLFLOW_TRACKING_"))}
        env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"),
                   CAIRN_TRACKING_URI=self.server.url)
        login = [tl.CONFIG.cairn, "login", "-u", "plain", "--password-file", password_file]
        p = subprocess.run(login, capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        path = os.path.join(home, ".config", "cairn", "credentials")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.dirname(path)).st_mode & 0o777, 0o700)
        with open(path) as f:
            first = f.read().split("token = ")[1].strip()
        # The saved token is what the other commands use: a run is the editor's.
        p = subprocess.run([tl.CONFIG.cairn, "experiments", "ls"], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("levels", p.stdout)
        plain = As(self.c, bearer(first))
        own = plain.post(API + "experiments/create", {"name": "plain-own"}).body["experiment_id"]
        r = plain.post(API + "runs/create", {"experiment_id": own, "user_id": "someone-else"})
        self.assertEqual(r.body["run"]["info"]["user_id"], "plain")
        # Signing in again replaces the token and revokes the old one.
        p = subprocess.run(login, capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("revoked the token it replaces", p.stdout)
        with open(path) as f:
            second = f.read().split("token = ")[1].strip()
        self.assertNotEqual(first, second)
        self.assertEqual(self.c.get(API + "experiments/search", headers=bearer(first)).status, 401)
        self.assertEqual(self.c.get(API + "experiments/search", headers=bearer(second)).status, 200)

    # --- sign-in throttling and browser sessions --------------------------------------------------

    def test_repeated_failures_from_one_address_are_throttled(self):
        r = self.admin.post(API + "users/create", {"username": "target", "password": "target-pass"})
        self.assertEqual(r.status, 200)
        statuses = [self.c.get(API + "experiments/search",
                               headers=basic("target", "guess%d" % i)).status for i in range(10)]
        self.assertEqual(statuses, [401] * 10)
        r = self.c.get(API + "experiments/search", headers=basic("target", "target-pass"))
        self.assertEqual(r.status, 429, r)
        self.assertEqual(r.body["error_code"], "REQUEST_LIMIT_EXCEEDED")
        self.assertGreater(int(r.header("Retry-After")), 0)
        # Audit lines are written without holding up the answer: give them a moment.
        deadline = time.monotonic() + 5
        while True:
            failures = self.admin.get(CAIRN + "audit", {"actor": "target"}).body["entries"]
            if len(failures) >= 10 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.assertEqual(len(failures), 10)
        self.assertTrue(all(e["outcome"] == "refused: wrong password" for e in failures[:10]))

    def test_browser_sessions_need_their_csrf_token_to_write(self):
        r = self.c.post(CAIRN + "auth/login", {"username": "editor", "password": "wrong"})
        self.assertEqual(r.status, 400, r)
        self.assertEqual(r.body["message"], "Wrong username or password.")
        r = self.c.post(CAIRN + "auth/login", {"username": "editor", "password": "editor-pass"})
        self.assertEqual(r.status, 200, r)
        cookie = r.header("Set-Cookie")
        self.assertRegex(cookie, r"^cairn_session=[0-9a-f]{64}; Path=/; HttpOnly; SameSite=Strict$")
        session = {"Cookie": cookie.split(";")[0]}
        csrf = r.body["csrf_token"]
        self.assertEqual(self.c.get(CAIRN + "auth/session", headers=session).body["username"],
                         "editor")
        self.assertEqual(self.c.get(API + "experiments/get", {"experiment_id": self.exp},
                                    headers=session).status, 200)
        r = self.c.post(API + "runs/create", {"experiment_id": self.exp}, headers=session)
        self.assertEqual(r.status, 403, r)
        r = self.c.post(API + "runs/create", {"experiment_id": self.exp},
                        headers={**session, "X-Cairn-CSRF-Token": "0" * 64})
        self.assertEqual(r.status, 403, r)
        r = self.c.post(API + "runs/create", {"experiment_id": self.exp},
                        headers={**session, "X-Cairn-CSRF-Token": csrf})
        self.assertEqual(r.status, 200, r)
        r = self.c.post(CAIRN + "auth/logout", {}, headers={**session, "X-Cairn-CSRF-Token": csrf})
        self.assertEqual(r.status, 200, r)
        self.assertIn("Max-Age=0", r.header("Set-Cookie"))
        self.assertEqual(self.c.get(API + "experiments/search", headers=session).status, 401)


class AuthOffTest(unittest.TestCase):
    """The default on loopback: every request acts as a local admin, as before."""

    @classmethod
    def setUpClass(cls):
        cls.root, data_dir = tl.make_temp_root("cairn-auth-off-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (auth off)")
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.c = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def test_everything_is_allowed_without_credentials_and_deletes_are_audited(self):
        r = self.c.post(API + "experiments/create", {"name": "open"})
        self.assertEqual(r.status, 200, r)
        exp = r.body["experiment_id"]
        r = self.c.post(API + "runs/create", {"experiment_id": exp})
        run_id = r.body["run"]["info"]["run_id"]
        self.assertEqual(self.c.post(API + "runs/delete", {"run_id": run_id}).status, 200)
        self.assertEqual(self.c.post(API + "experiments/delete", {"experiment_id": exp}).status, 200)
        # Credentials are not needed, and wrong ones are not looked at.
        self.assertEqual(self.c.get(API + "experiments/search",
                                    headers=basic("nobody", "nothing")).status, 200)
        session = self.c.get(CAIRN + "auth/session").body
        self.assertEqual((session["auth"], session["signed_in"], session["is_admin"]),
                         (False, True, True))
        entries = self.c.get(CAIRN + "audit").body["entries"]
        actions = [(e["action"], e["object"], e["actor"]) for e in entries]
        self.assertIn(("POST runs/delete", "run " + run_id, ""), actions)
        self.assertIn(("POST experiments/delete", "experiment " + exp, ""), actions)
        # Accounts can be prepared before authentication is turned on.
        r = self.c.post(API + "users/create", {"username": "later", "password": "later-pass"})
        self.assertEqual(r.status, 200, r)

    def test_reads_are_audited_only_when_asked(self):
        r = self.c.post(API + "experiments/create", {"name": "read-audit"})
        exp = r.body["experiment_id"]
        self.c.get(API + "experiments/get", {"experiment_id": exp})
        objects = [(e["action"], e["object"]) for e in self.c.get(CAIRN + "audit").body["entries"]]
        self.assertNotIn(("GET experiments/get", "experiment " + exp), objects)
        root, data_dir = tl.make_temp_root("cairn-audit-reads-")
        server = tl.CairnServer(tl.CONFIG.cairn, data_dir, extra_args=["--audit-reads"],
                                name="cairn (audit reads)")
        server.start()
        try:
            c = server.client()
            c.get(API + "experiments/get", {"experiment_id": "0"})
            entries = c.get(CAIRN + "audit").body["entries"]
            self.assertIn(("GET experiments/get", "experiment 0", "ok"),
                          [(e["action"], e["object"], e["outcome"]) for e in entries])
        finally:
            server.stop()
            shutil.rmtree(root, True)

    def test_public_bind_without_auth_is_refused_at_start(self):
        root, data_dir = tl.make_temp_root("cairn-public-")
        try:
            p = subprocess.run([tl.CONFIG.cairn, "server", "--host", "0.0.0.0", "--port", "0",
                                "--data-dir", data_dir], capture_output=True, text=True,
                               timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("without authentication", p.stderr)
            self.assertIn("--auth on", p.stderr)
            self.assertIn("--insecure-no-auth", p.stderr)
            # With the explicit flag it starts (and says why that is risky).
            server = tl.CairnServer(tl.CONFIG.cairn, data_dir, host="0.0.0.0",
                                    extra_args=["--insecure-no-auth"], name="cairn (public)")
            server.start()
            try:
                self.assertIn("--insecure-no-auth", server.log_text())
            finally:
                server.stop()
        finally:
            shutil.rmtree(root, True)


if __name__ == "__main__":
    sys.exit(tl.main("auth", sys.modules[__name__]))
