#!/usr/bin/env python3
"""Black-box tests of cairn's MLflow REST API (tracking, artifact proxy, path safety).

    python3 tests/integration/test_mlflow_api.py --cairn build/cairn [-k PATTERN]

One server is started for the whole module on a fresh temporary data dir (<tmp>/data; <tmp> is
watched by the path-safety tests, so nothing else lives there). Every test creates its own
experiment with a unique name, so tests are independent and can run in any order.
The shapes asserted here follow docs in shared/reference/mlflow-rest.md (measured against MLflow).
"""

import json
import os
import shutil
import socket
import sys
import tempfile
import unittest
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
CAIRN_API = "/api/cairn/v1/"
AJAX = "/ajax-api/2.0/mlflow/"
ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
MPU = "/api/2.0/mlflow-artifacts/mpu"
MPU_PREFIX = "Multipart upload is not supported for the current artifact repository"
DOUBLE_MAX = 1.7976931348623157e308

SERVER = None  # tl.CairnServer
C = None  # tl.Client
ROOT = None  # private temp dir; the server's data dir is ROOT/data
DATA_DIR = None


def setUpModule():
    global SERVER, C, ROOT, DATA_DIR
    ROOT, DATA_DIR = tl.make_temp_root("cairn-api-")
    server = tl.CairnServer(tl.CONFIG.cairn, DATA_DIR, name="cairn (mlflow_api)")
    tl.add_diagnostic(server.log_tail)
    try:
        server.start()
    except Exception:
        remove_root()  # tearDownModule does not run when setUpModule fails
        raise
    SERVER = server
    C = SERVER.client()


def remove_root():
    if ROOT and not tl.keep_data():
        shutil.rmtree(ROOT, ignore_errors=True)


def tearDownModule():
    if SERVER is None:
        return
    rc = SERVER.stop()
    remove_root()
    if rc != 0:
        raise AssertionError("cairn exited with status %r on SIGTERM (expected 0)" % rc)


def uniq(prefix="t"):
    return "%s-%s" % (prefix, uuid.uuid4().hex[:12])


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def kv(pairs):
    """[{'key':k,'value':v},...] -> {k: v}"""
    return {p["key"]: p["value"] for p in pairs or []}


def metric(key, value, step=0, timestamp=None):
    return {"key": key, "value": value, "step": step,
            "timestamp": tl.now_ms() if timestamp is None else timestamp}


class ApiTestCase(unittest.TestCase):
    """Helpers shared by every test class. Endpoint arguments are relative to /api/2.0/mlflow/."""

    maxDiff = 4000

    # -- raw calls ----------------------------------------------------------------------------

    def get(self, endpoint, params=None, prefix=API):
        return C.get(prefix + endpoint, params)

    def post(self, endpoint, body=None, prefix=API):
        return C.post(prefix + endpoint, body)

    # -- assertions ---------------------------------------------------------------------------

    def ok(self, resp):
        """Asserts 200 with a JSON object body and returns the object."""
        self.assertEqual(resp.status, 200, "expected 200, got %r" % (resp,))
        self.assertIsInstance(resp.body, dict, "expected a JSON object, got %r" % (resp,))
        return resp.body

    def assertError(self, resp, status, code=None, mentions=None):
        """Asserts an MLflow error reply: the status, {"error_code", "message"}, optional code,
        and optional substrings (case-insensitive) that the message must contain."""
        self.assertEqual(resp.status, status, "expected %d, got %r" % (status, resp))
        self.assertIsInstance(resp.body, dict, "error body is not a JSON object: %r" % (resp,))
        self.assertIsInstance(resp.body.get("error_code"), str, "no error_code: %r" % (resp,))
        self.assertIsInstance(resp.body.get("message"), str, "no message: %r" % (resp,))
        if code is not None:
            if isinstance(code, (tuple, list, set)):
                self.assertIn(resp.body["error_code"], code, repr(resp))
            else:
                self.assertEqual(resp.body["error_code"], code, repr(resp))
        for word in ([mentions] if isinstance(mentions, str) else mentions or []):
            self.assertIn(word.lower(), resp.body["message"].lower(),
                          "message should name %r: %r" % (word, resp))

    def assertNot5xx(self, resp, what=""):
        self.assertLess(resp.status, 500, "%s answered with a server error: %r" % (what, resp))

    # -- domain helpers -----------------------------------------------------------------------

    def new_experiment(self, prefix="exp", tags=None, name=None):
        body = {"name": name or uniq(prefix)}
        if tags:
            body["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
        exp_id = self.ok(self.post("experiments/create", body))["experiment_id"]
        self.assertIsInstance(exp_id, str, "experiment_id must be a JSON string")
        return exp_id

    def get_experiment(self, exp_id):
        return self.ok(self.get("experiments/get", {"experiment_id": exp_id}))["experiment"]

    def new_run(self, exp_id, run_name=None, tags=None, start_time=None):
        body = {"experiment_id": exp_id, "user_id": "tester",
                "start_time": tl.now_ms() if start_time is None else start_time}
        if run_name:
            body["run_name"] = run_name
        if tags:
            body["tags"] = [{"key": k, "value": v} for k, v in tags.items()]
        return self.ok(self.post("runs/create", body))["run"]

    def new_run_id(self, exp_id=None, **kw):
        return self.new_run(exp_id or self.new_experiment(), **kw)["info"]["run_id"]

    def get_run(self, run_id):
        return self.ok(self.get("runs/get", {"run_id": run_id}))["run"]

    def log_batch(self, run_id, metrics=(), params=(), tags=()):
        body = {"run_id": run_id, "metrics": list(metrics),
                "params": [{"key": k, "value": v} for k, v in params],
                "tags": [{"key": k, "value": v} for k, v in tags]}
        return self.ok(self.post("runs/log-batch", body))

    def latest_metrics(self, run_id):
        return {m["key"]: m for m in self.get_run(run_id)["data"].get("metrics", [])}

    def history(self, run_id, key, max_results=None):
        """Whole metric history, following next_page_token."""
        out, token, pages = [], None, 0
        while True:
            params = {"run_id": run_id, "metric_key": key}
            if max_results:
                params["max_results"] = max_results
            if token:
                params["page_token"] = token
            body = self.ok(self.get("metrics/get-history", params))
            out.extend(body.get("metrics", []))
            token = body.get("next_page_token")
            pages += 1
            self.assertLess(pages, 1000, "get-history pagination does not end")
            if not token:
                return out

    def search_runs(self, exp_ids, filter=None, order_by=None, max_results=None,
                    run_view_type=None, page_token=None):
        body = {"experiment_ids": list(exp_ids)}
        for k, v in (("filter", filter), ("order_by", order_by), ("max_results", max_results),
                     ("run_view_type", run_view_type), ("page_token", page_token)):
            if v is not None:
                body[k] = v
        return self.post("runs/search", body)

    def search_run_ids(self, exp_ids, filter=None, order_by=None, run_view_type=None):
        body = self.ok(self.search_runs(exp_ids, filter, order_by, run_view_type=run_view_type))
        return [r["info"]["run_id"] for r in body.get("runs", [])]

    def search_experiments(self, **body):
        return self.post("experiments/search", body)

    def search_experiment_names(self, **body):
        b = self.ok(self.search_experiments(**body))
        return [e["name"] for e in b.get("experiments", [])]

    # -- artifact helpers ---------------------------------------------------------------------

    def run_root(self, run):
        """'<exp>/<run>/artifacts', the run's root under the artifact proxy."""
        return "%s/%s/artifacts" % (run["info"]["experiment_id"], run["info"]["run_id"])

    def put_artifact(self, root, rel, data):
        return C.put("%s/%s/%s" % (ARTIFACTS, root, rel), data)

    def get_artifact(self, root, rel):
        return C.get("%s/%s/%s" % (ARTIFACTS, root, rel), raw=True)

    def list_proxy(self, path):
        return C.get(ARTIFACTS, {"path": path})


# ============================================================================================
# Server basics, routing and request validation
# ============================================================================================


class ServerBasicsTest(ApiTestCase):

    def test_health_answers_ok(self):
        resp = C.get("/health", raw=True)
        self.assertEqual(resp.status, 200, repr(resp))
        self.assertEqual(resp.raw.strip(), b"OK")

    def test_version_answers_text(self):
        resp = C.get("/version", raw=True)
        self.assertEqual(resp.status, 200, repr(resp))
        self.assertTrue(resp.raw.strip(), "empty version text")

    def test_unknown_endpoint_is_404_endpoint_not_found(self):
        for method, path in (("GET", API + "no-such-endpoint"),
                             ("POST", API + "runs/no-such-thing"),
                             ("POST", AJAX + "experiments/not-a-verb")):
            with self.subTest(method=method, path=path):
                resp = C.request(method, path, body={} if method == "POST" else None)
                self.assertError(resp, 404, "ENDPOINT_NOT_FOUND")

    def test_ajax_api_prefix_matches_api_prefix(self):
        name = uniq("ajax")
        exp_id = self.ok(self.post("experiments/create", {"name": name}, prefix=AJAX))["experiment_id"]
        self.assertEqual(self.get_experiment(exp_id)["name"], name)
        via_ajax = self.ok(self.get("experiments/get-by-name", {"experiment_name": name}, prefix=AJAX))
        self.assertEqual(via_ajax["experiment"]["experiment_id"], exp_id)
        run_id = self.ok(self.post("runs/create", {"experiment_id": exp_id, "start_time": tl.now_ms()},
                                   prefix=AJAX))["run"]["info"]["run_id"]
        self.ok(self.post("runs/log-metric", metric("m", 1.5, step=3) | {"run_id": run_id}, prefix=AJAX))
        hist = self.ok(self.get("metrics/get-history", {"run_id": run_id, "metric_key": "m"}, prefix=AJAX))
        self.assertEqual([(m["value"], m["step"]) for m in hist["metrics"]], [(1.5, 3)])
        self.assertEqual(self.get_run(run_id)["info"]["experiment_id"], exp_id)

    def test_logged_models_search_answers_empty_list(self):
        exp_id = self.new_experiment()
        for prefix in (API, AJAX):
            with self.subTest(prefix=prefix):
                body = self.ok(self.post("logged-models/search",
                                         {"experiment_ids": [exp_id], "filter": "name = 'sub'"}, prefix=prefix))
                self.assertEqual(body.get("models", []), [], repr(body))

    def test_malformed_json_is_400(self):
        for text in ('{"name": ', "not json at all", '{"name": "x",}', "[1, 2", '{"name": "\\ud800"'):
            with self.subTest(body=text):
                resp = C.post(API + "experiments/create", text)
                self.assertError(resp, 400, ("INVALID_PARAMETER_VALUE", "BAD_REQUEST", "MALFORMED_REQUEST"))

    def test_wrong_type_is_400_naming_the_field(self):
        run_id = self.new_run_id()
        cases = [
            ("runs/log-metric", {"run_id": run_id, "key": "m", "value": 1.0, "timestamp": 1, "step": "abc"}, "step"),
            ("runs/log-metric", {"run_id": run_id, "key": "m", "value": 1.0, "timestamp": "yesterday"}, "timestamp"),
            ("runs/log-metric", {"run_id": run_id, "key": "m", "value": {"x": 1}, "timestamp": 1}, "value"),
            ("runs/create", {"experiment_id": {"id": "0"}}, "experiment_id"),
            ("experiments/create", {"name": ["a", "b"]}, "name"),
            ("runs/log-batch", {"run_id": run_id, "metrics": "loss"}, "metrics"),
            ("runs/search", {"experiment_ids": ["0"], "max_results": "many"}, "max_results"),
        ]
        for endpoint, body, field in cases:
            with self.subTest(endpoint=endpoint, field=field):
                self.assertError(self.post(endpoint, body), 400, "INVALID_PARAMETER_VALUE", mentions=field)

    def test_missing_required_field_is_400_naming_the_field(self):
        run_id = self.new_run_id()
        cases = [
            ("runs/log-metric", {"run_id": run_id, "value": 1.0, "timestamp": 1}, "key"),
            ("runs/log-metric", {"run_id": run_id, "key": "m", "timestamp": 1}, "value"),
            ("runs/log-parameter", {"run_id": run_id, "value": "1"}, "key"),
            ("runs/set-tag", {"run_id": run_id, "value": "v"}, "key"),
            ("experiments/create", {}, "name"),
            ("experiments/update", {"new_name": uniq()}, "experiment_id"),
            ("experiments/set-experiment-tag", {"key": "k", "value": "v"}, "experiment_id"),
        ]
        for endpoint, body, field in cases:
            with self.subTest(endpoint=endpoint, field=field):
                self.assertError(self.post(endpoint, body), 400, "INVALID_PARAMETER_VALUE", mentions=field)
        for endpoint, params, field in (("metrics/get-history", {"run_id": run_id}, "metric_key"),
                                        ("experiments/get", {}, "experiment_id"),
                                        ("experiments/get-by-name", {}, "experiment_name")):
            with self.subTest(endpoint=endpoint, field=field):
                self.assertError(self.get(endpoint, params), 400, "INVALID_PARAMETER_VALUE", mentions=field)

    def test_parameter_errors_use_mlflows_words(self):
        run_id = self.new_run_id()
        docs = " See the API docs for more information about request parameters."
        cases = [
            ("runs/create", {"experiment_id": "0", "tags": 5},
             "Invalid value 5 for parameter 'tags' supplied. Hint: Value was of type 'int'."),
            ("runs/log-metric", {"run_id": run_id, "key": "m", "value": 1, "timestamp": 1,
                                 "step": "foo"},
             "Invalid value foo for parameter 'step' supplied. Hint: Value was of type 'str'."),
            ("experiments/create", {"name": ["a", 1]},
             "Invalid value ['a', 1] for parameter 'name' supplied. Hint: Value was of type "
             "'list'."),
            ("runs/log-inputs", {"run_id": run_id},
             "Missing value for required parameter 'datasets'."),
        ]
        for endpoint, body, message in cases:
            with self.subTest(endpoint=endpoint):
                resp = self.post(endpoint, body)
                self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")
                self.assertEqual(resp.body["message"], message + docs)
        resp = self.get("metrics/get-history-bulk-interval", {"metric_key": "m"})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")
        self.assertEqual(resp.body["message"],
                         "Missing value for required parameter 'run_ids'." + docs)

    def test_malformed_dataset_inputs_are_400(self):
        run_id = self.new_run_id()
        good = {"name": "mnist", "digest": "abc", "source_type": "local", "source": "/d"}
        for dataset, words in (({**good, "name": ""}, "name"),
                               ({**good, "digest": "d" * 37}, "digest"),
                               ({k: v for k, v in good.items() if k != "source"}, "source"),
                               ({**good, "name": "n" * 501}, "name")):
            with self.subTest(dataset=str(dataset)[:60]):
                resp = self.post("runs/log-inputs", {"run_id": run_id,
                                                     "datasets": [{"dataset": dataset}]})
                self.assertError(resp, 400, "INVALID_PARAMETER_VALUE", mentions=words)
        resp = self.post("runs/log-inputs", {"run_id": run_id, "datasets": [
            {"dataset": good, "tags": [{"key": "mlflow.data.context", "value": "x" * 501}]}]})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE", mentions="InputTag value")
        resp = self.post("runs/log-inputs", {"run_id": run_id, "datasets": ["not a dataset"]})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE", mentions="datasets[0]")
        self.ok(self.post("runs/log-inputs", {"run_id": run_id, "datasets": [{"dataset": good}]}))

    def test_log_model_appends_to_the_history_tag(self):
        run_id = self.new_run_id()
        model = {"artifact_path": "model", "flavors": {"python_function": {"loader_module": "x"}},
                 "run_id": run_id, "utc_time_created": "2026-12-04 10:00:00.000000"}
        for _ in range(2):
            self.ok(self.post("runs/log-model", {"run_id": run_id, "model_json": json.dumps(model)}))
        tags = kv(self.ok(self.get("runs/get", {"run_id": run_id}))["run"]["data"]["tags"])
        history = json.loads(tags["mlflow.log-model.history"])
        self.assertEqual(len(history), 2)
        self.assertEqual(history[0]["flavors"], model["flavors"])
        resp = self.post("runs/log-model", {"run_id": run_id, "model_json": "{bad"})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE", mentions="is not a valid JSON")
        resp = self.post("runs/log-model",
                         {"run_id": run_id, "model_json": json.dumps({"artifact_path": "m"})})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE",
                         mentions="Model json is missing mandatory fields")

    def test_ui_bulk_history_and_dataset_summaries(self):
        exp = self.new_experiment("bulk")
        a, b = self.new_run_id(exp), self.new_run_id(exp)
        for run_id, values in ((a, [1.0, 2.0]), (b, [3.0])):
            self.ok(self.post("runs/log-batch", {"run_id": run_id, "metrics": [
                metric("loss", v, step=i, timestamp=1000 + i) for i, v in enumerate(values)]}))
        body = self.ok(self.get("metrics/get-history-bulk",
                                {"run_id": [a, b], "metric_key": "loss"}, prefix=AJAX))
        rows = [(m["run_id"], m["step"], m["value"]) for m in body["metrics"]]
        self.assertEqual(sorted(rows), sorted([(a, 0, 1.0), (a, 1, 2.0), (b, 0, 3.0)]))
        self.assertEqual([r[0] for r in rows], sorted(r[0] for r in rows))
        self.assertError(self.get("metrics/get-history-bulk", {"metric_key": "loss"}, prefix=AJAX),
                         400, "INVALID_PARAMETER_VALUE", mentions="at least one run_id")
        dataset = {"name": "mnist", "digest": "d1", "source_type": "local", "source": "/d"}
        self.ok(self.post("runs/log-inputs", {"run_id": a, "datasets": [
            {"dataset": dataset, "tags": [{"key": "mlflow.data.context", "value": "train"}]}]}))
        self.ok(self.post("runs/log-inputs", {"run_id": b, "datasets": [{"dataset": dataset}]}))
        body = self.ok(self.post("experiments/search-datasets", {"experiment_ids": [exp]},
                                 prefix=AJAX))
        self.assertEqual(sorted(body["dataset_summaries"], key=lambda d: str(d["context"])),
                         [{"context": None, "digest": "d1", "experiment_id": exp, "name": "mnist"},
                          {"context": "train", "digest": "d1", "experiment_id": exp,
                           "name": "mnist"}])
        self.assertError(self.post("experiments/search-datasets", {}, prefix=AJAX), 400,
                         "INVALID_PARAMETER_VALUE", mentions="at least one experiment_id")

    def test_plain_routes_serve_files_and_the_uis_upload(self):
        run_id = self.new_run_id()
        up = C.request("POST", AJAX + "upload-artifact", body=b"hello from the ui",
                       params={"run_uuid": run_id, "path": "notes/readme.txt"},
                       headers={"Content-Type": "application/octet-stream"}, raw=True)
        self.assertEqual((up.status, up.body), (200, b""), up)
        empty = C.request("POST", AJAX + "upload-artifact", body=b"",
                          params={"run_uuid": run_id, "path": "empty.txt"},
                          headers={"Content-Type": "application/octet-stream"})
        self.assertError(empty, 400, "INVALID_PARAMETER_VALUE", mentions="must specify data")
        got = C.request("GET", "/get-artifact", params={"run_id": run_id, "path": "notes/readme.txt"},
                        raw=True)
        self.assertEqual((got.status, got.body), (200, b"hello from the ui"))
        self.assertIn("attachment", got.header("Content-Disposition"))
        for params, words in (({"path": "x"}, "run_uuid"), ({"run_uuid": run_id}, "path"),
                              ({"run_uuid": run_id, "path": "../x"}, "Invalid path")):
            resp = C.request("POST", AJAX + "upload-artifact", body=b"x", params=params,
                             headers={"Content-Type": "application/octet-stream"})
            self.assertError(resp, 400, "INVALID_PARAMETER_VALUE", mentions=words)
        # Over 10 MiB is refused from the declared length, before the body is read.
        host, port = SERVER.url.split("//")[1].split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(("POST %supload-artifact?run_uuid=%s&path=big.bin HTTP/1.1\r\n"
                          "Host: %s:%s\r\nContent-Length: %d\r\n\r\n"
                          % (AJAX, run_id, host, port, 10 * 1024 * 1024 + 1)).encode())
            head = sock.recv(65536).decode("latin-1")
        self.assertTrue(head.startswith("HTTP/1.1 400"), head[:200])
        self.assertIn("Artifact size is too large. Max size is 10MB.", head)
        # A registered version's file, as MLflow's UI fetches it.
        name = uniq("plain-model")
        self.ok(self.post("registered-models/create", {"name": name}))
        self.ok(self.post("model-versions/create", {"name": name, "source": "runs:/%s/notes" % run_id}))
        got = C.request("GET", "/model-versions/get-artifact",
                        params={"name": name, "version": "1", "path": "readme.txt"}, raw=True)
        self.assertEqual((got.status, got.body), (200, b"hello from the ui"))
        missing = C.get("/model-versions/get-artifact", {"name": name, "version": "1", "path": "nope"})
        self.assertError(missing, 404, "RESOURCE_DOES_NOT_EXIST")

    def test_mlflow_routes_cairn_does_not_serve_answer_501(self):
        for method, path in (("POST", "/graphql"), ("GET", AJAX + "gateway-proxy"),
                             ("POST", AJAX + "runs/create-promptlab-run")):
            with self.subTest(path=path):
                resp = C.request(method, path, body={} if method == "POST" else None)
                self.assertError(resp, 501, "NOT_IMPLEMENTED", mentions=path)

    def test_unknown_fields_are_ignored(self):
        name = uniq("extra")
        body = {"name": name, "no_such_field": {"nested": [1, 2]}, "another": True}
        exp_id = self.ok(self.post("experiments/create", body))["experiment_id"]
        run = self.ok(self.post("runs/create", {"experiment_id": exp_id, "start_time": 1,
                                                "favourite_colour": "green"}))["run"]
        self.ok(self.post("runs/log-parameter", {"run_id": run["info"]["run_id"], "key": "p",
                                                 "value": "v", "comment": "ignored"}))
        self.assertEqual(kv(self.get_run(run["info"]["run_id"])["data"]["params"]), {"p": "v"})

    def test_client_errors_are_never_5xx(self):
        run_id = self.new_run_id()
        probes = [
            ("GET", "experiments/get", {"experiment_id": "not-a-number"}),
            ("GET", "experiments/get", {"experiment_id": "99999999999999999999999"}),
            ("GET", "runs/get", {"run_id": "0" * 32}),
            ("GET", "runs/get", {"run_id": "../../etc"}),
            ("GET", "metrics/get-history", {"run_id": run_id, "metric_key": "m", "max_results": -1}),
            ("GET", "metrics/get-history", {"run_id": run_id, "metric_key": "m", "page_token": "garbage!!"}),
            ("POST", "runs/search", {"experiment_ids": ["0"], "page_token": "not-base64-$$"}),
            ("POST", "runs/search", {"experiment_ids": ["0"], "filter": "metrics.m >"}),
            ("POST", "runs/search", {"experiment_ids": ["0"], "filter": "((("}),
            ("POST", "runs/search", {"experiment_ids": ["0"], "order_by": ["metrics.m SIDEWAYS"]}),
            ("POST", "experiments/search", {"filter": "nonsense ~~ 3"}),
            ("POST", "runs/log-metric", {"run_id": run_id, "key": "", "value": 1, "timestamp": 1}),
            ("POST", "runs/log-metric", {"run_id": "nope", "key": "m", "value": 1, "timestamp": 1}),
            ("POST", "runs/update", {"run_id": run_id, "status": "NOT_A_STATUS"}),
            ("POST", "runs/log-batch", {"run_id": run_id, "params": [{"key": "k" * 300, "value": "v"}]}),
            ("POST", "runs/set-tag", {"run_id": run_id, "key": "k", "value": "v" * 9000}),
            ("POST", "experiments/create", {"name": ""}),
            ("POST", "runs/create", {"experiment_id": "123456789"}),
            ("POST", "experiments/delete", {"experiment_id": "987654321"}),
        ]
        for method, endpoint, args in probes:
            with self.subTest(method=method, endpoint=endpoint, args=str(args)[:80]):
                if method == "GET":
                    resp = self.get(endpoint, args)
                else:
                    resp = self.post(endpoint, args)
                self.assertNot5xx(resp, endpoint)
                if resp.status >= 400:
                    self.assertIsInstance(resp.body, dict, repr(resp))
                    self.assertIn("error_code", resp.body)

    def test_run_uuid_is_accepted_in_place_of_run_id(self):
        run_id = self.new_run_id()
        self.ok(self.post("runs/log-metric", {"run_uuid": run_id, "key": "m", "value": 2.0,
                                              "timestamp": 5, "step": 1}))
        self.ok(self.post("runs/log-parameter", {"run_uuid": run_id, "key": "p", "value": "1"}))
        self.ok(self.post("runs/set-tag", {"run_uuid": run_id, "key": "t", "value": "x"}))
        run = self.ok(self.get("runs/get", {"run_uuid": run_id}))["run"]
        self.assertEqual(run["info"]["run_id"], run_id)
        self.assertEqual(kv(run["data"]["params"]), {"p": "1"})
        self.assertEqual(kv(run["data"]["tags"]).get("t"), "x")
        hist = self.ok(self.get("metrics/get-history", {"run_uuid": run_id, "metric_key": "m"}))
        self.assertEqual([m["value"] for m in hist["metrics"]], [2.0])


# ============================================================================================
# Experiments
# ============================================================================================


class ExperimentsTest(ApiTestCase):

    def test_default_experiment_zero_exists(self):
        exp = self.get_experiment("0")
        self.assertEqual(exp["experiment_id"], "0")
        self.assertEqual(exp["name"], "Default")
        self.assertEqual(exp["lifecycle_stage"], "active")
        by_name = self.ok(self.get("experiments/get-by-name", {"experiment_name": "Default"}))
        self.assertEqual(by_name["experiment"]["experiment_id"], "0")

    def test_create_and_get_returns_full_experiment(self):
        name = uniq("create")
        before = tl.now_ms()
        exp_id = self.new_experiment(name=name, tags={"team": "x", "k2": "v2"})
        exp = self.get_experiment(exp_id)
        self.assertEqual(exp["experiment_id"], exp_id)
        self.assertIsInstance(exp["experiment_id"], str)
        self.assertEqual(exp["name"], name)
        self.assertEqual(exp["lifecycle_stage"], "active")
        self.assertEqual(kv(exp.get("tags")), {"team": "x", "k2": "v2"})
        self.assertEqual(exp["artifact_location"], "mlflow-artifacts:/%s" % exp_id)
        for field in ("creation_time", "last_update_time"):
            self.assertTrue(is_int(exp[field]), "%s must be a JSON number: %r" % (field, exp[field]))
            self.assertGreaterEqual(exp[field], before - 5000)

    def test_artifact_location_is_a_label_and_artifacts_stay_here(self):
        name = uniq("labelled")
        exp_id = self.ok(self.post("experiments/create",
                                   {"name": name, "artifact_location": "s3://bucket/prefix"}))[
            "experiment_id"]
        self.assertEqual(self.get_experiment(exp_id)["artifact_location"], "s3://bucket/prefix")
        run = self.ok(self.post("runs/create", {"experiment_id": exp_id}))["run"]["info"]
        self.assertEqual(run["artifact_uri"],
                         "mlflow-artifacts:/%s/%s/artifacts" % (exp_id, run["run_id"]))
        root = run["artifact_uri"][len("mlflow-artifacts:/"):]
        self.assertEqual(C.put(ARTIFACTS + "/" + root + "/f.txt", b"kept here").status, 200)
        files = self.ok(self.get("artifacts/list", {"run_id": run["run_id"]}))["files"]
        self.assertEqual([f["path"] for f in files], ["f.txt"])

    def test_get_by_name(self):
        name = uniq("byname")
        exp_id = self.new_experiment(name=name)
        exp = self.ok(self.get("experiments/get-by-name", {"experiment_name": name}))["experiment"]
        self.assertEqual((exp["experiment_id"], exp["name"]), (exp_id, name))

    def test_get_by_unknown_name_is_404(self):
        resp = self.get("experiments/get-by-name", {"experiment_name": uniq("never-created")})
        self.assertError(resp, 404, "RESOURCE_DOES_NOT_EXIST")

    def test_get_unknown_id_is_404(self):
        self.assertError(self.get("experiments/get", {"experiment_id": "987654321"}), 404,
                         "RESOURCE_DOES_NOT_EXIST")

    def test_duplicate_name_is_400_resource_already_exists(self):
        name = uniq("dup")
        self.new_experiment(name=name)
        resp = self.post("experiments/create", {"name": name})
        self.assertError(resp, 400, "RESOURCE_ALREADY_EXISTS")

    def test_update_renames(self):
        old, new = uniq("old"), uniq("new")
        exp_id = self.new_experiment(name=old)
        self.ok(self.post("experiments/update", {"experiment_id": exp_id, "new_name": new}))
        self.assertEqual(self.get_experiment(exp_id)["name"], new)
        self.assertError(self.get("experiments/get-by-name", {"experiment_name": old}), 404,
                         "RESOURCE_DOES_NOT_EXIST")
        other = self.new_experiment()
        resp = self.post("experiments/update", {"experiment_id": other, "new_name": new})
        self.assertError(resp, 400, ("RESOURCE_ALREADY_EXISTS", "INVALID_PARAMETER_VALUE"))

    def test_delete_and_restore(self):
        exp_id = self.new_experiment()
        self.ok(self.post("experiments/delete", {"experiment_id": exp_id}))
        self.assertEqual(self.get_experiment(exp_id)["lifecycle_stage"], "deleted")
        self.ok(self.post("experiments/restore", {"experiment_id": exp_id}))
        self.assertEqual(self.get_experiment(exp_id)["lifecycle_stage"], "active")

    def test_deleted_experiment_rejects_new_runs(self):
        exp_id = self.new_experiment()
        self.ok(self.post("experiments/delete", {"experiment_id": exp_id}))
        resp = self.post("runs/create", {"experiment_id": exp_id, "start_time": tl.now_ms()})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")

    def test_set_and_delete_experiment_tag(self):
        exp_id = self.new_experiment(tags={"keep": "1"})
        self.ok(self.post("experiments/set-experiment-tag", {"experiment_id": exp_id, "key": "k", "value": "v1"}))
        self.assertEqual(kv(self.get_experiment(exp_id)["tags"]), {"keep": "1", "k": "v1"})
        self.ok(self.post("experiments/set-experiment-tag", {"experiment_id": exp_id, "key": "k", "value": "v2"}))
        self.assertEqual(kv(self.get_experiment(exp_id)["tags"]), {"keep": "1", "k": "v2"})
        self.ok(self.post("experiments/delete-experiment-tag", {"experiment_id": exp_id, "key": "k"}))
        self.assertEqual(kv(self.get_experiment(exp_id).get("tags")), {"keep": "1"})

    def test_search_filter_by_name_and_tag(self):
        prefix = uniq("srch")
        ids = {}
        for suffix, team in (("a", "red"), ("b", "blue"), ("c", "red")):
            ids[suffix] = self.new_experiment(name="%s-%s" % (prefix, suffix), tags={"team": team})
        names = self.search_experiment_names(filter="name LIKE '%s-%%'" % prefix)
        self.assertEqual(sorted(names), ["%s-%s" % (prefix, s) for s in "abc"])
        names = self.search_experiment_names(filter="name LIKE '%s-%%' AND tags.team = 'red'" % prefix)
        self.assertEqual(sorted(names), ["%s-a" % prefix, "%s-c" % prefix])
        names = self.search_experiment_names(filter="name = '%s-b'" % prefix)
        self.assertEqual(names, ["%s-b" % prefix])
        names = self.search_experiment_names(filter="name ILIKE '%s-%%'" % prefix.upper())
        self.assertEqual(len(names), 3)

    def test_search_order_by(self):
        prefix = uniq("order")
        for s in ("b", "c", "a"):
            self.new_experiment(name="%s-%s" % (prefix, s))
        flt = "name LIKE '%s-%%'" % prefix
        self.assertEqual(self.search_experiment_names(filter=flt, order_by=["name ASC"]),
                         ["%s-%s" % (prefix, s) for s in "abc"])
        self.assertEqual(self.search_experiment_names(filter=flt, order_by=["name DESC"]),
                         ["%s-%s" % (prefix, s) for s in "cba"])

    def test_search_view_type(self):
        prefix = uniq("view")
        live = self.new_experiment(name=prefix + "-live")
        dead = self.new_experiment(name=prefix + "-dead")
        self.ok(self.post("experiments/delete", {"experiment_id": dead}))
        flt = "name LIKE '%s-%%'" % prefix

        def ids(view):
            body = self.ok(self.search_experiments(filter=flt, view_type=view))
            return sorted(e["experiment_id"] for e in body.get("experiments", []))

        self.assertEqual(ids("ACTIVE_ONLY"), [live])
        self.assertEqual(ids("DELETED_ONLY"), [dead])
        self.assertEqual(ids("ALL"), sorted([live, dead]))
        body = self.ok(self.search_experiments(filter=flt))  # default view is ACTIVE_ONLY
        self.assertEqual([e["experiment_id"] for e in body["experiments"]], [live])

    def test_search_paginates_with_max_results_and_page_token(self):
        prefix = uniq("page")
        created = {self.new_experiment(name="%s-%d" % (prefix, i)) for i in range(5)}
        seen, token, pages = [], None, 0
        while True:
            body = {"filter": "name LIKE '%s-%%'" % prefix, "max_results": 2}
            if token:
                body["page_token"] = token
            page = self.ok(self.search_experiments(**body))
            exps = page.get("experiments", [])
            self.assertLessEqual(len(exps), 2)
            seen.extend(e["experiment_id"] for e in exps)
            token = page.get("next_page_token")
            pages += 1
            self.assertLess(pages, 10, "pagination does not end")
            if not token:
                break
        self.assertEqual(len(seen), len(set(seen)), "a page repeated an experiment")
        self.assertEqual(set(seen), created)
        self.assertGreaterEqual(pages, 3)

    def test_search_via_get_with_query_parameters(self):
        name = uniq("getsearch")
        exp_id = self.new_experiment(name=name)
        body = self.ok(self.get("experiments/search", {"filter": "name = '%s'" % name, "max_results": 10}))
        self.assertEqual([e["experiment_id"] for e in body.get("experiments", [])], [exp_id])

    def test_search_rejects_max_results_over_50000(self):
        self.assertError(self.search_experiments(max_results=50001), 400, "INVALID_PARAMETER_VALUE")


# ============================================================================================
# Runs
# ============================================================================================


class RunsTest(ApiTestCase):

    def test_create_run_returns_full_run(self):
        exp_id = self.new_experiment()
        start = tl.now_ms() - 1234
        run = self.new_run(exp_id, run_name="first", start_time=start, tags={"team": "x", "mlflow.user": "tester"})
        info = run["info"]
        run_id = info["run_id"]
        self.assertIsInstance(run_id, str)
        self.assertTrue(run_id)
        self.assertEqual(info.get("run_uuid"), run_id)
        self.assertEqual(info["experiment_id"], exp_id)
        self.assertEqual(info["status"], "RUNNING")
        self.assertEqual(info["lifecycle_stage"], "active")
        self.assertEqual(info["run_name"], "first")
        self.assertTrue(is_int(info["start_time"]), "start_time must be a JSON number")
        self.assertEqual(info["start_time"], start)
        self.assertEqual(info["artifact_uri"], "mlflow-artifacts:/%s/%s/artifacts" % (exp_id, run_id))
        tags = kv(run["data"]["tags"])
        self.assertEqual(tags.get("team"), "x")
        self.assertEqual(tags.get("mlflow.runName"), "first")

    def test_get_run_round_trips_create(self):
        exp_id = self.new_experiment()
        created = self.new_run(exp_id, run_name="again", tags={"a": "b"})
        fetched = self.get_run(created["info"]["run_id"])
        for field in ("run_id", "experiment_id", "status", "start_time", "artifact_uri", "lifecycle_stage", "run_name"):
            self.assertEqual(fetched["info"][field], created["info"][field], field)
        self.assertEqual(kv(fetched["data"]["tags"]).get("a"), "b")

    def test_get_unknown_run_is_404(self):
        self.assertError(self.get("runs/get", {"run_id": uuid.uuid4().hex}), 404, "RESOURCE_DOES_NOT_EXIST")

    def test_create_run_in_unknown_experiment_is_404(self):
        resp = self.post("runs/create", {"experiment_id": "876543210", "start_time": tl.now_ms()})
        self.assertError(resp, 404, "RESOURCE_DOES_NOT_EXIST")

    def test_update_sets_status_end_time_and_name(self):
        run_id = self.new_run_id(run_name="before")
        end = tl.now_ms() + 10
        info = self.ok(self.post("runs/update", {"run_id": run_id, "status": "FINISHED", "end_time": end,
                                                 "run_name": "after"}))["run_info"]
        self.assertEqual(info["status"], "FINISHED")
        self.assertEqual(info["end_time"], end)
        self.assertTrue(is_int(info["end_time"]))
        run = self.get_run(run_id)
        self.assertEqual(run["info"]["status"], "FINISHED")
        self.assertEqual(run["info"]["end_time"], end)
        self.assertEqual(run["info"]["run_name"], "after")
        self.assertEqual(kv(run["data"]["tags"]).get("mlflow.runName"), "after")
        for status in ("FAILED", "KILLED", "SCHEDULED", "RUNNING"):
            with self.subTest(status=status):
                self.ok(self.post("runs/update", {"run_id": run_id, "status": status}))
                self.assertEqual(self.get_run(run_id)["info"]["status"], status)

    def test_delete_and_restore_run(self):
        exp_id = self.new_experiment()
        run_id = self.new_run_id(exp_id)
        self.ok(self.post("runs/delete", {"run_id": run_id}))
        self.assertEqual(self.get_run(run_id)["info"]["lifecycle_stage"], "deleted")
        self.assertEqual(self.search_run_ids([exp_id]), [])
        self.assertEqual(self.search_run_ids([exp_id], run_view_type="DELETED_ONLY"), [run_id])
        self.assertEqual(self.search_run_ids([exp_id], run_view_type="ALL"), [run_id])
        self.ok(self.post("runs/restore", {"run_id": run_id}))
        self.assertEqual(self.get_run(run_id)["info"]["lifecycle_stage"], "active")
        self.assertEqual(self.search_run_ids([exp_id]), [run_id])


# ============================================================================================
# Metrics, params, tags, log-batch, log-inputs, history
# ============================================================================================


class LoggingTest(ApiTestCase):

    def test_log_metric_shows_in_run_and_history(self):
        run_id = self.new_run_id()
        ts = tl.now_ms()
        self.ok(self.post("runs/log-metric", {"run_id": run_id, "key": "loss", "value": 0.25,
                                              "timestamp": ts, "step": 7}))
        m = self.latest_metrics(run_id)["loss"]
        self.assertEqual((m["value"], m["timestamp"], m["step"]), (0.25, ts, 7))
        self.assertTrue(is_int(m["timestamp"]) and is_int(m["step"]), "int64 must be JSON numbers: %r" % m)
        hist = self.history(run_id, "loss")
        self.assertEqual([(h["key"], h["value"], h["timestamp"], h["step"]) for h in hist],
                         [("loss", 0.25, ts, 7)])

    def test_large_int64_values_are_json_numbers(self):
        run_id = self.new_run_id()
        big_step, big_ts = 2 ** 53 - 1, 2 ** 42
        self.ok(self.post("runs/log-metric", {"run_id": run_id, "key": "m", "value": 1,
                                              "timestamp": big_ts, "step": big_step}))
        h = self.history(run_id, "m")[0]
        self.assertTrue(is_int(h["step"]) and is_int(h["timestamp"]), repr(h))
        self.assertEqual((h["step"], h["timestamp"]), (big_step, big_ts))

    def test_nan_and_infinity_are_strings_on_the_wire(self):
        run_id = self.new_run_id()
        for key, value in (("nan", "NaN"), ("pinf", "Infinity"), ("ninf", "-Infinity")):
            self.ok(self.post("runs/log-metric", {"run_id": run_id, "key": key, "value": value,
                                                  "timestamp": 1, "step": 0}))
        latest = self.latest_metrics(run_id)
        self.assertEqual(self.history(run_id, "nan")[0]["value"], "NaN")
        self.assertEqual(latest["nan"]["value"], "NaN")
        # The strings are what cairn echoes; MLflow's SQL store returns +-DBL_MAX for +-inf, so
        # that is tolerated too. A bare NaN/Infinity token would not even parse (strict JSON).
        for key, text, clamp in (("pinf", "Infinity", DOUBLE_MAX), ("ninf", "-Infinity", -DOUBLE_MAX)):
            with self.subTest(key=key):
                for v in (self.history(run_id, key)[0]["value"], latest[key]["value"]):
                    self.assertIn(v, (text, clamp), "%s echoed as %r" % (key, v))

    def test_log_batch_accepts_nan_strings(self):
        run_id = self.new_run_id()
        self.log_batch(run_id, metrics=[metric("x", "NaN", 0, 1), metric("x", 2.0, 1, 2)])
        values = {h["step"]: h["value"] for h in self.history(run_id, "x")}
        self.assertEqual(values, {0: "NaN", 1: 2.0})

    def test_metric_series_thins_a_long_history_and_keeps_its_spikes(self):
        run_id = self.new_run_id()
        values = [((i * 37) % 100) / 100.0 for i in range(5000)]
        values[1234], values[4321] = 99.0, -99.0
        for start in range(0, 5000, 1000):
            self.log_batch(run_id, metrics=[metric("loss", values[i], i, 10_000 + i)
                                            for i in range(start, start + 1000)])
        series = self.ok(self.get("metrics/series", {"run_id": run_id, "key": "loss",
                                                     "points": 200}, prefix=CAIRN_API))
        self.assertEqual(series["total_points"], 5000)
        steps, values_out = series["steps"], series["values"]
        self.assertLessEqual(len(steps), 200)
        self.assertGreater(len(steps), 150)
        self.assertEqual(len(series["timestamps"]), len(steps))
        self.assertEqual(len(values_out), len(steps))
        self.assertEqual(steps, sorted(steps))
        self.assertEqual((steps[0], steps[-1]), (0, 4999))
        for step in (1234, 4321):
            i = steps.index(step)
            self.assertEqual((values_out[i], series["timestamps"][i]),
                             (values[step], 10_000 + step))
        # Short series come whole, NaN as on MLflow's wire; bad requests say what is wrong.
        self.log_batch(run_id, metrics=[metric("acc", "NaN", 0, 1), metric("acc", 0.5, 1, 2)])
        short = self.ok(self.get("metrics/series", {"run_id": run_id, "key": "acc"},
                                 prefix=CAIRN_API))
        self.assertEqual((short["steps"], short["values"]), ([0, 1], ["NaN", 0.5]))
        self.assertError(self.get("metrics/series", {"run_id": run_id, "key": "loss",
                                                     "points": 1}, prefix=CAIRN_API),
                         400, "INVALID_PARAMETER_VALUE", "points")
        self.assertError(self.get("metrics/series", {"run_id": run_id}, prefix=CAIRN_API),
                         400, mentions="key")
        self.assertError(self.get("metrics/series", {"run_id": "0" * 32, "key": "loss"},
                                  prefix=CAIRN_API), 404, "RESOURCE_DOES_NOT_EXIST")

    def test_experiment_stats_count_active_runs(self):
        exp = self.new_experiment()
        empty = self.new_experiment()
        first = self.new_run_id(exp, start_time=1_000)
        self.new_run_id(exp, start_time=2_000)
        deleted = self.new_run_id(exp, start_time=9_000)
        self.ok(self.post("runs/update", {"run_id": first, "status": "FINISHED", "end_time": 5_000}))
        self.ok(self.post("runs/delete", {"run_id": deleted}))
        stats = self.ok(self.get("experiments/stats", prefix=CAIRN_API))["experiments"]
        by_id = {e["experiment_id"]: e for e in stats}
        self.assertEqual(by_id[exp], {"experiment_id": exp, "runs": 2, "running": 1,
                                      "last_activity": 5_000})
        self.assertNotIn(empty, by_id)
        ids = [int(e["experiment_id"]) for e in stats]
        self.assertEqual(ids, sorted(ids))
        self.assertError(self.post("experiments/stats", {}, prefix=CAIRN_API), 404)

    def test_environment_diff_of_runs_compares_their_recorded_environments(self):
        exp = self.new_experiment()
        runs = [self.new_run(exp) for _ in range(3)]
        snapshot = ('lock-version = "1.0"\n\n[[packages]]\nname = "numpy"\nversion = "%s"\n\n'
                    '[tool.cairn]\nkind = "environment-snapshot"\npython-version = "3.11.2"\n')
        host = '{"os": "linux", "glibc": "%s", "hostname": "%s", "gpus": []}'
        for run, numpy, glibc in ((runs[1], "1.26.4", "2.36"), (runs[2], "2.0.1", "2.39")):
            root = self.run_root(run)
            self.assertEqual(self.put_artifact(root, "cairn/environment/pylock.toml",
                                               (snapshot % numpy).encode()).status, 200)
            self.assertEqual(self.put_artifact(root, "cairn/host.json",
                                               (host % (glibc, run["info"]["run_id"])).encode()).status, 200)
        ids = [r["info"]["run_id"] for r in runs]
        answer = self.ok(self.get("runs/environment-diff", {"run_id": ids}, prefix=CAIRN_API))
        # The first run recorded nothing: the second is the baseline.
        self.assertEqual(answer["baseline"], ids[1])
        self.assertEqual(answer["runs"], [{"run_id": ids[0], "recorded": False},
                                          {"run_id": ids[1], "recorded": True},
                                          {"run_id": ids[2], "recorded": True}])
        self.assertEqual(len(answer["diffs"]), 1)
        diff = answer["diffs"][0]
        self.assertEqual(diff["run_id"], ids[2])
        self.assertFalse(diff["diff"]["same"])
        self.assertEqual(diff["diff"]["packages"], [{"name": "numpy", "change": "changed",
                                                     "from": "1.26.4", "to": "2.0.1",
                                                     "details": []}])
        self.assertEqual(diff["diff"]["host"], [{"name": "glibc", "from": "2.36", "to": "2.39"}])
        self.assertEqual(diff["diff"]["packages_before"], 1)
        # A snapshot that cannot be read leaves its run out, saying why.
        self.put_artifact(self.run_root(runs[0]), "cairn/environment/pylock.toml", b"[[oops")
        answer = self.ok(self.get("runs/environment-diff", {"run_id": ids}, prefix=CAIRN_API))
        self.assertFalse(answer["runs"][0]["recorded"])
        self.assertIn("not valid TOML", answer["runs"][0]["error"])
        self.assertEqual(answer["baseline"], ids[1])
        # Errors: one run, eleven runs, an unknown run, a wrong method.
        self.assertError(self.get("runs/environment-diff", {"run_id": ids[:1]}, prefix=CAIRN_API),
                         400, "INVALID_PARAMETER_VALUE")
        self.assertError(self.get("runs/environment-diff", {"run_id": [ids[1], "f" * 32]},
                                  prefix=CAIRN_API), 404, "RESOURCE_DOES_NOT_EXIST")
        self.assertError(self.get("runs/environment-diff", {"run_id": ids * 4}, prefix=CAIRN_API),
                         400, "INVALID_PARAMETER_VALUE")
        self.assertError(self.post("runs/environment-diff", {}, prefix=CAIRN_API), 404)

    def test_log_parameter_same_value_ok_changed_value_rejected(self):
        run_id = self.new_run_id()
        self.ok(self.post("runs/log-parameter", {"run_id": run_id, "key": "lr", "value": "0.1"}))
        self.ok(self.post("runs/log-parameter", {"run_id": run_id, "key": "lr", "value": "0.1"}))
        resp = self.post("runs/log-parameter", {"run_id": run_id, "key": "lr", "value": "0.2"})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")
        self.assertEqual(kv(self.get_run(run_id)["data"]["params"]), {"lr": "0.1"})

    def test_set_tag_overwrites_and_delete_tag_removes(self):
        run_id = self.new_run_id()
        self.ok(self.post("runs/set-tag", {"run_id": run_id, "key": "stage", "value": "one"}))
        self.ok(self.post("runs/set-tag", {"run_id": run_id, "key": "stage", "value": "two"}))
        self.assertEqual(kv(self.get_run(run_id)["data"]["tags"]).get("stage"), "two")
        self.ok(self.post("runs/delete-tag", {"run_id": run_id, "key": "stage"}))
        self.assertNotIn("stage", kv(self.get_run(run_id)["data"].get("tags")))
        self.assertError(self.post("runs/delete-tag", {"run_id": run_id, "key": "stage"}), 404,
                         "RESOURCE_DOES_NOT_EXIST")

    def test_latest_metric_is_largest_step_then_timestamp_then_value(self):
        run_id = self.new_run_id()
        self.log_batch(run_id, metrics=[
            metric("m", 9.0, step=0, timestamp=1000),   # newest timestamp, smallest step
            metric("m", 5.0, step=2, timestamp=40),
            metric("m", 1.0, step=2, timestamp=50),     # largest (step, timestamp) -> wins
            metric("m", 0.5, step=2, timestamp=50),     # same step and timestamp, smaller value
            metric("m", 7.0, step=1, timestamp=2000),
        ])
        latest = self.latest_metrics(run_id)["m"]
        self.assertEqual((latest["step"], latest["timestamp"], latest["value"]), (2, 50, 1.0))
        self.ok(self.post("runs/log-metric", {"run_id": run_id, "key": "m", "value": -3.0, "timestamp": 1, "step": 3}))
        latest = self.latest_metrics(run_id)["m"]
        self.assertEqual((latest["step"], latest["timestamp"], latest["value"]), (3, 1, -3.0))
        self.assertEqual(len(self.history(run_id, "m")), 6)

    def test_log_batch_logs_metrics_params_and_tags(self):
        run_id = self.new_run_id()
        self.log_batch(run_id,
                       metrics=[metric("loss", 1.0 / (s + 1), step=s, timestamp=100 + s) for s in range(5)]
                       + [metric("acc", 0.9, step=0, timestamp=7)],
                       params=[("lr", "0.01"), ("layers", "3")],
                       tags=[("note", "first"), ("owner", "me")])
        run = self.get_run(run_id)
        self.assertEqual(kv(run["data"]["params"]), {"lr": "0.01", "layers": "3"})
        tags = kv(run["data"]["tags"])
        self.assertEqual((tags.get("note"), tags.get("owner")), ("first", "me"))
        latest = {m["key"]: m for m in run["data"]["metrics"]}
        self.assertEqual(set(latest), {"loss", "acc"})
        self.assertEqual((latest["loss"]["step"], latest["loss"]["value"]), (4, 0.2))
        self.assertEqual([h["step"] for h in sorted(self.history(run_id, "loss"), key=lambda h: h["step"])],
                         list(range(5)))

    def test_log_batch_tags_take_the_last_value(self):
        run_id = self.new_run_id()
        self.log_batch(run_id, tags=[("t", "1"), ("t", "2"), ("t", "3")])
        self.assertEqual(kv(self.get_run(run_id)["data"]["tags"]).get("t"), "3")
        self.log_batch(run_id, tags=[("t", "4")])
        self.assertEqual(kv(self.get_run(run_id)["data"]["tags"]).get("t"), "4")

    def test_log_batch_param_relog_same_ok_changed_rejected(self):
        run_id = self.new_run_id()
        self.log_batch(run_id, params=[("p", "a")])
        self.log_batch(run_id, params=[("p", "a"), ("q", "b")])
        resp = self.post("runs/log-batch", {"run_id": run_id, "params": [{"key": "p", "value": "changed"}]})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")
        self.assertEqual(kv(self.get_run(run_id)["data"]["params"]), {"p": "a", "q": "b"})

    def test_log_batch_exact_duplicate_metrics_are_stored_once(self):
        run_id = self.new_run_id()
        point = metric("dup", 3.5, step=1, timestamp=77)
        self.log_batch(run_id, metrics=[point])
        self.log_batch(run_id, metrics=[point])
        self.assertEqual(len(self.history(run_id, "dup")), 1)

    def test_log_batch_limits(self):
        run_id = self.new_run_id()

        def m(n):
            return [metric("m%d" % i, float(i), 0, 1) for i in range(n)]

        def p(n, prefix="p"):
            return [{"key": "%s%d" % (prefix, i), "value": "v"} for i in range(n)]

        too_big = {
            "1001 metrics": {"metrics": m(1001)},
            "101 params": {"params": p(101)},
            "101 tags": {"tags": p(101, "t")},
            "1001 entities": {"metrics": m(901), "params": p(50), "tags": p(50, "t")},
        }
        for label, body in too_big.items():
            with self.subTest(label):
                resp = self.post("runs/log-batch", dict(body, run_id=run_id))
                self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")
        run = self.get_run(run_id)
        self.assertEqual(run["data"].get("metrics", []), [], "a rejected batch was partly applied")
        self.assertEqual(run["data"].get("params", []), [])
        # at the limits exactly: accepted
        self.ok(self.post("runs/log-batch", {"run_id": run_id, "metrics": m(1000)}))
        self.ok(self.post("runs/log-batch", {"run_id": run_id, "params": p(100), "tags": p(100, "t")}))
        run = self.get_run(run_id)
        self.assertEqual(len(run["data"]["metrics"]), 1000)
        self.assertEqual(len(run["data"]["params"]), 100)

    def test_log_inputs_shows_dataset_inputs(self):
        exp_id = self.new_experiment()
        run_id = self.new_run_id(exp_id)
        dataset = {"name": "iris", "digest": "d1g3st", "source_type": "local",
                   "source": '{"uri": "/data/iris.csv"}',
                   "schema": '{"mlflow_colspec": [{"type": "double", "name": "sepal"}]}',
                   "profile": '{"num_rows": 150}'}
        tags = [{"key": "mlflow.data.context", "value": "training"}, {"key": "split", "value": "a"}]
        self.ok(self.post("runs/log-inputs", {"run_id": run_id, "datasets": [{"tags": tags, "dataset": dataset}]}))
        inputs = self.get_run(run_id)["inputs"]["dataset_inputs"]
        self.assertEqual(len(inputs), 1, repr(inputs))
        self.assertEqual({k: inputs[0]["dataset"].get(k) for k in dataset}, dataset)
        self.assertEqual(kv(inputs[0]["tags"]), {"mlflow.data.context": "training", "split": "a"})

    def test_get_history_pages_until_no_token(self):
        run_id = self.new_run_id()
        self.log_batch(run_id, metrics=[metric("h", float(s), step=s, timestamp=1000 + s) for s in range(250)])
        pages, token, steps = 0, None, []
        while True:
            params = {"run_id": run_id, "metric_key": "h", "max_results": 100}
            if token:
                params["page_token"] = token
            body = self.ok(self.get("metrics/get-history", params))
            self.assertLessEqual(len(body.get("metrics", [])), 100)
            steps.extend(m["step"] for m in body.get("metrics", []))
            token = body.get("next_page_token")
            pages += 1
            self.assertLess(pages, 20, "pagination does not end")
            if not token:
                break
        self.assertGreaterEqual(pages, 3)
        self.assertEqual(sorted(steps), list(range(250)), "pages lost or repeated points")
        self.assertEqual(sorted(h["step"] for h in self.history(run_id, "h")), list(range(250)))

    def test_get_history_of_unknown_key_is_empty(self):
        run_id = self.new_run_id()
        body = self.ok(self.get("metrics/get-history", {"run_id": run_id, "metric_key": "never"}))
        self.assertEqual(body.get("metrics", []), [])

    def test_get_history_bulk_interval(self):
        exp_id = self.new_experiment()
        run_a, run_b = self.new_run_id(exp_id), self.new_run_id(exp_id)
        for run_id, scale in ((run_a, 1.0), (run_b, 10.0)):
            self.log_batch(run_id, metrics=[metric("acc", scale * s, step=s, timestamp=500 + s) for s in range(10)]
                           + [metric("other", 1.0, 0, 1)])
        body = self.ok(self.get("metrics/get-history-bulk-interval",
                                [("run_ids", run_a), ("run_ids", run_b), ("metric_key", "acc"), ("max_results", 100)]))
        rows = body.get("metrics", [])
        by_run = {}
        for row in rows:
            self.assertEqual(row["key"], "acc")
            by_run.setdefault(row["run_id"], {})[row["step"]] = row["value"]
        self.assertEqual(by_run, {run_a: {s: float(s) for s in range(10)},
                                  run_b: {s: 10.0 * s for s in range(10)}})
        # a step window
        body = self.ok(self.get("metrics/get-history-bulk-interval",
                                [("run_ids", run_a), ("metric_key", "acc"), ("start_step", 3), ("end_step", 5)]))
        self.assertEqual(sorted(r["step"] for r in body["metrics"]), [3, 4, 5])
        # sampling: fewer rows than steps, all of them real steps
        body = self.ok(self.get("metrics/get-history-bulk-interval",
                                [("run_ids", run_a), ("metric_key", "acc"), ("max_results", 4)]))
        steps = [r["step"] for r in body["metrics"]]
        self.assertTrue(1 <= len(steps) <= 5, repr(steps))
        self.assertTrue(set(steps) <= set(range(10)))
        self.assertIn(0, steps)
        # max_results is bounded
        resp = self.get("metrics/get-history-bulk-interval",
                        [("run_ids", run_a), ("metric_key", "acc"), ("max_results", 2501)])
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE")


# ============================================================================================
# runs/search
# ============================================================================================


class RunRecordsTest(ApiTestCase):
    """cairn's POST runs/records: many runs' records in one request, as journals deliver them."""

    def records(self, records):
        return self.ok(self.post("runs/records", {"records": records}, prefix=CAIRN_API))

    def test_records_of_many_runs_apply_in_order(self):
        name = uniq("records")
        a, b = os.urandom(16).hex(), os.urandom(16).hex()
        got = self.records([
            {"run_id": a, "op": "create", "experiment_name": name, "run_name": "a",
             "start_time": 100, "status": "SCHEDULED", "tags": [{"key": "t", "value": "1"}]},
            {"run_id": b, "op": "create", "experiment_name": name, "run_name": "b",
             "start_time": 100},
            {"run_id": a, "op": "start", "start_time": 150},
            {"run_id": a, "op": "batch", "params": [{"key": "lr", "value": "0.1"}],
             "metrics": [{"key": "loss", "value": 0.5, "timestamp": 160, "step": 1}],
             "tags": [{"key": "t", "value": "2"}]},
            {"run_id": a, "op": "log", "chunks": [{"offset": 0, "data": "hello\n"}]},
            {"run_id": a, "op": "artifact", "path": "cairn/outputs.json", "content": "[1]"},
            {"run_id": a, "op": "end", "status": "FINISHED", "end_time": 200},
            {"run_id": b, "op": "end", "status": "FAILED", "end_time": 300},
        ])
        self.assertEqual(got, {"failures": []})
        run_a = self.ok(self.get("runs/get", {"run_id": a}))["run"]
        self.assertEqual((run_a["info"]["status"], run_a["info"]["start_time"],
                          run_a["info"]["end_time"], run_a["info"]["run_name"]),
                         ("FINISHED", 150, 200, "a"))
        tags = {t["key"]: t["value"] for t in run_a["data"]["tags"]}
        self.assertEqual(tags["t"], "2")
        self.assertEqual(run_a["data"]["params"], [{"key": "lr", "value": "0.1"}])
        self.assertEqual(run_a["data"]["metrics"][0]["value"], 0.5)
        self.assertEqual(C.get(CAIRN_API + "runs/%s/log" % a).text, "hello\n")
        self.assertEqual(C.get("/get-artifact", {"run_id": a, "path": "cairn/outputs.json"}).text,
                         "[1]")
        run_b = self.ok(self.get("runs/get", {"run_id": b}))["run"]
        self.assertEqual(run_b["info"]["status"], "FAILED")
        self.assertEqual(run_a["info"]["experiment_id"], run_b["info"]["experiment_id"])

    def test_a_batch_delivered_twice_changes_nothing(self):
        rid = os.urandom(16).hex()
        batch = [{"run_id": rid, "op": "create", "experiment_name": uniq("twice"),
                  "start_time": 1},
                 {"run_id": rid, "op": "batch", "params": [{"key": "p", "value": "1"}]},
                 {"run_id": rid, "op": "log", "chunks": [{"offset": 0, "data": "abc"}]},
                 {"run_id": rid, "op": "end", "status": "FINISHED", "end_time": 5}]
        self.assertEqual(self.records(batch), {"failures": []})
        self.assertEqual(self.records(batch), {"failures": []})
        self.assertEqual(C.get(CAIRN_API + "runs/%s/log" % rid).text, "abc")

    def test_each_refused_record_is_named_and_the_rest_apply(self):
        rid = os.urandom(16).hex()
        got = self.records([
            {"run_id": rid, "op": "create", "experiment_name": uniq("refused"), "start_time": 1},
            {"run_id": rid, "op": "end", "status": "DONE"},
            {"run_id": "f" * 32, "op": "batch", "tags": [{"key": "a", "value": "b"}]},
            {"run_id": rid, "op": "teleport"},
            {"op": "batch"},
            {"run_id": rid, "op": "batch", "params": [{"key": "bad/../name", "value": "1"}]},
            {"run_id": rid, "op": "batch", "tags": [{"key": "ok", "value": "yes"}]},
            {"run_id": "NOT-HEX", "op": "create", "start_time": 1},
            {"run_id": rid, "op": "artifact", "path": "../escape.txt", "content": "x"},
            {"run_id": "f" * 32, "op": "artifact", "path": "a.txt", "content": "x"},
        ])
        failures = {f["index"]: f for f in got["failures"]}
        self.assertEqual(sorted(failures), [1, 2, 3, 4, 5, 7, 8, 9], got)
        self.assertEqual(failures[8]["error_code"], "INVALID_PARAMETER_VALUE")
        self.assertEqual(failures[9]["error_code"], "RESOURCE_DOES_NOT_EXIST")
        self.assertEqual(failures[1]["error_code"], "INVALID_PARAMETER_VALUE")
        self.assertIn("'DONE'", failures[1]["message"])
        self.assertEqual(failures[2]["error_code"], "RESOURCE_DOES_NOT_EXIST")
        self.assertIn("'teleport'", failures[3]["message"])
        self.assertIn("records[4].run_id", failures[4]["message"])
        self.assertIn("32 lowercase hexadecimal", failures[7]["message"])
        run = self.ok(self.get("runs/get", {"run_id": rid}))["run"]
        self.assertIn({"key": "ok", "value": "yes"}, run["data"]["tags"])
        self.assertEqual(run["info"]["status"], "RUNNING")

    def test_too_many_records_or_a_body_that_is_not_records_is_refused(self):
        r = self.post("runs/records", {"records": [{"run_id": "x", "op": "end"}] * 10001},
                      prefix=CAIRN_API)
        self.assertError(r, 400, "INVALID_PARAMETER_VALUE", mentions="at most 10000")
        self.assertError(self.post("runs/records", {"records": 7}, prefix=CAIRN_API), 400,
                         "INVALID_PARAMETER_VALUE")
        self.assertEqual(self.records([]), {"failures": []})


class SearchRunsTest(ApiTestCase):

    def make_runs(self):
        """Four runs in a fresh experiment:
        alpha: loss 0.3, lr '0.1', owner alice, val loss 2, FINISHED
        beta:  loss 0.1, lr '0.2', owner Alicia
        gamma: loss NaN, lr '0.1', owner bob
        delta: no loss,  no lr,    no tags
        start times increase alpha..delta; params 'lr' and 'learning rate' are equal; tags 'owner',
        'team.name' = 'core' and 'rank' = the run's name.
        """
        exp_id = self.new_experiment("search")
        t0 = tl.now_ms()
        specs = [
            ("alpha", t0 + 1, 0.3, "0.1", "alice"),
            ("beta", t0 + 2, 0.1, "0.2", "Alicia"),
            ("gamma", t0 + 3, "NaN", "0.1", "bob"),
            ("delta", t0 + 4, None, None, None),
        ]
        runs = {}
        for name, start, loss, lr, owner in specs:
            run_id = self.new_run(exp_id, run_name=name, start_time=start)["info"]["run_id"]
            runs[name] = run_id
            metrics = [metric("loss", loss, 0, 1)] if loss is not None else []
            params = [("lr", lr), ("learning rate", lr)] if lr else []
            tags = [("owner", owner), ("team.name", "core"), ("rank", name)] if owner else []
            if metrics or params or tags:
                self.log_batch(run_id, metrics=metrics, params=params, tags=tags)
        self.log_batch(runs["alpha"], metrics=[metric("val loss", 2.0, 0, 1)])
        self.ok(self.post("runs/update", {"run_id": runs["alpha"], "status": "FINISHED", "end_time": t0 + 100}))
        return exp_id, runs, t0

    def names(self, runs, ids):
        inv = {v: k for k, v in runs.items()}
        return [inv.get(i, i) for i in ids]

    def check(self, exp_id, runs, flt, expected, ordered=False):
        with self.subTest(filter=flt):
            got = self.names(runs, self.search_run_ids([exp_id], filter=flt))
            if ordered:
                self.assertEqual(got, expected)
            else:
                self.assertEqual(sorted(got), sorted(expected))

    def test_filter_on_metrics(self):
        exp_id, runs, _ = self.make_runs()
        # (comparisons are chosen so that gamma's NaN matches none of them, whether a store keeps
        # NaN as NaN or, like MLflow's SQL store, as an is_nan flag next to 0)
        self.check(exp_id, runs, "metrics.loss > 0.2", ["alpha"])
        self.check(exp_id, runs, "metrics.loss >= 0.1", ["alpha", "beta"])
        self.check(exp_id, runs, "metrics.loss < 0.2 and metrics.loss > 0.05", ["beta"])
        self.check(exp_id, runs, "metric.loss = 0.3", ["alpha"])
        self.check(exp_id, runs, "metrics.loss > 100", [])
        self.check(exp_id, runs, "metrics.`val loss` <= 2", ["alpha"])

    def test_filter_on_params_and_tags(self):
        exp_id, runs, _ = self.make_runs()
        self.check(exp_id, runs, "params.lr = '0.1'", ["alpha", "gamma"])
        self.check(exp_id, runs, 'params.lr = "0.2"', ["beta"])
        self.check(exp_id, runs, "params.lr != '0.1'", ["beta"])  # delta has no lr: never matches
        self.check(exp_id, runs, "tags.owner = 'bob'", ["gamma"])
        self.check(exp_id, runs, "params.lr = '0.1' and tags.owner = 'alice'", ["alpha"])
        self.check(exp_id, runs, "params.lr = '0.1' AND metrics.loss > 0.2", ["alpha"])

    def test_filter_with_quoted_keys(self):
        exp_id, runs, _ = self.make_runs()
        self.check(exp_id, runs, "params.\"learning rate\" = '0.2'", ["beta"])
        self.check(exp_id, runs, "params.`learning rate` = '0.1'", ["alpha", "gamma"])
        self.check(exp_id, runs, "metrics.`val loss` > 1", ["alpha"])
        self.check(exp_id, runs, "tags.\"team.name\" = 'core'", ["alpha", "beta", "gamma"])

    def test_like_is_case_sensitive_ilike_is_not(self):
        exp_id, runs, _ = self.make_runs()
        self.check(exp_id, runs, "tags.owner LIKE 'ali%'", ["alpha"])
        self.check(exp_id, runs, "tags.owner ILIKE 'ali%'", ["alpha", "beta"])
        self.check(exp_id, runs, "tags.owner LIKE '_ob'", ["gamma"])
        self.check(exp_id, runs, "params.lr LIKE '0.%'", ["alpha", "beta", "gamma"])

    def test_filter_on_attributes(self):
        exp_id, runs, t0 = self.make_runs()
        self.check(exp_id, runs, "attributes.status = 'FINISHED'", ["alpha"])
        self.check(exp_id, runs, "attributes.run_name = 'beta'", ["beta"])
        self.check(exp_id, runs, "run_name = 'gamma'", ["gamma"])
        self.check(exp_id, runs, "attributes.start_time >= %d" % (t0 + 3), ["gamma", "delta"])
        self.check(exp_id, runs, "attributes.run_id IN ('%s', '%s')" % (runs["alpha"], runs["delta"]),
                   ["alpha", "delta"])
        self.check(exp_id, runs, "attributes.run_id = '%s'" % runs["beta"], ["beta"])

    def test_filter_on_datasets(self):
        exp_id = self.new_experiment("ds")
        run_train, run_eval, run_none = (self.new_run_id(exp_id) for _ in range(3))
        for run_id, name, digest, context in ((run_train, "iris", "aaa111", "training"),
                                              (run_eval, "wine", "bbb222", "eval")):
            ds = {"name": name, "digest": digest, "source_type": "local", "source": "{}"}
            self.ok(self.post("runs/log-inputs", {"run_id": run_id, "datasets": [
                {"tags": [{"key": "mlflow.data.context", "value": context}], "dataset": ds}]}))
        names = {run_train: "train", run_eval: "eval", run_none: "none"}
        for flt, expected in (("datasets.name = 'iris'", ["train"]),
                              ("datasets.digest = 'bbb222'", ["eval"]),
                              ("datasets.context = 'training'", ["train"]),
                              ("datasets.name IN ('iris', 'wine')", ["eval", "train"]),
                              ("dataset.name LIKE 'w%'", ["eval"])):
            with self.subTest(filter=flt):
                got = sorted(names[i] for i in self.search_run_ids([exp_id], filter=flt))
                self.assertEqual(got, expected)

    def test_or_is_rejected(self):
        exp_id, _, _ = self.make_runs()
        for flt in ("metrics.loss < 0.2 OR metrics.loss > 0.25", "params.lr = '0.1' or params.lr = '0.2'"):
            with self.subTest(filter=flt):
                self.assertError(self.search_runs([exp_id], filter=flt), 400, "INVALID_PARAMETER_VALUE")

    def test_unquoted_string_value_is_rejected(self):
        exp_id, _, _ = self.make_runs()
        for flt in ("params.lr = 0.1", "tags.owner = bob", "attributes.status = FINISHED"):
            with self.subTest(filter=flt):
                self.assertError(self.search_runs([exp_id], filter=flt), 400, "INVALID_PARAMETER_VALUE")

    def test_max_results_over_50000_is_rejected(self):
        exp_id = self.new_experiment()
        self.assertError(self.search_runs([exp_id], max_results=50001), 400, "INVALID_PARAMETER_VALUE")
        self.ok(self.search_runs([exp_id], max_results=50000))

    def test_order_by_metric_puts_nan_then_missing_last(self):
        exp_id, runs, _ = self.make_runs()
        asc = self.names(runs, self.search_run_ids([exp_id], order_by=["metrics.loss ASC"]))
        self.assertEqual(asc, ["beta", "alpha", "gamma", "delta"])
        desc = self.names(runs, self.search_run_ids([exp_id], order_by=["metrics.loss DESC"]))
        self.assertEqual(desc, ["alpha", "beta", "gamma", "delta"])
        default = self.names(runs, self.search_run_ids([exp_id], order_by=["metrics.loss"]))
        self.assertEqual(default, asc)

    def test_order_by_param_tag_and_attributes(self):
        exp_id, runs, _ = self.make_runs()
        # ties (alpha/gamma share lr 0.1) break on start_time DESC; delta (no lr) is last
        self.assertEqual(self.names(runs, self.search_run_ids([exp_id], order_by=["params.lr DESC"])),
                         ["beta", "gamma", "alpha", "delta"])
        self.assertEqual(self.names(runs, self.search_run_ids([exp_id], order_by=["tags.rank DESC"])),
                         ["gamma", "beta", "alpha", "delta"])
        self.assertEqual(self.names(runs, self.search_run_ids([exp_id], order_by=["attributes.start_time ASC"])),
                         ["alpha", "beta", "gamma", "delta"])
        self.assertEqual(self.names(runs, self.search_run_ids([exp_id])),  # default: start_time DESC
                         ["delta", "gamma", "beta", "alpha"])
        self.assertEqual(self.names(runs, self.search_run_ids([exp_id], order_by=["attributes.run_name DESC"])),
                         ["gamma", "delta", "beta", "alpha"])

    def test_pagination_with_next_page_token(self):
        exp_id = self.new_experiment("runpage")
        t0 = tl.now_ms()
        created = [self.new_run(exp_id, start_time=t0 + i)["info"]["run_id"] for i in range(5)]
        seen, token, pages = [], None, 0
        while True:
            body = self.ok(self.search_runs([exp_id], max_results=2, page_token=token))
            page = [r["info"]["run_id"] for r in body.get("runs", [])]
            self.assertLessEqual(len(page), 2)
            seen.extend(page)
            token = body.get("next_page_token")
            pages += 1
            self.assertLess(pages, 10, "pagination does not end")
            if not token:
                break
        self.assertEqual(seen, list(reversed(created)), "pages out of order, lost or repeated runs")

    def test_search_spans_several_experiments_and_returns_latest_metrics(self):
        exp_a, exp_b = self.new_experiment(), self.new_experiment()
        run_a, run_b = self.new_run_id(exp_a), self.new_run_id(exp_b)
        self.log_batch(run_a, metrics=[metric("score", 1.0, 0, 1), metric("score", 3.0, 1, 2)])
        self.log_batch(run_b, metrics=[metric("score", 2.0, 0, 1)])
        body = self.ok(self.search_runs([exp_a, exp_b], order_by=["metrics.score DESC"]))
        self.assertEqual([r["info"]["run_id"] for r in body["runs"]], [run_a, run_b])
        latest = {m["key"]: m["value"] for m in body["runs"][0]["data"]["metrics"]}
        self.assertEqual(latest, {"score": 3.0})

    def test_search_by_run_view_type(self):
        exp_id = self.new_experiment()
        live, dead = self.new_run_id(exp_id), self.new_run_id(exp_id)
        self.ok(self.post("runs/delete", {"run_id": dead}))
        self.assertEqual(self.search_run_ids([exp_id], run_view_type="ACTIVE_ONLY"), [live])
        self.assertEqual(self.search_run_ids([exp_id], run_view_type="DELETED_ONLY"), [dead])
        self.assertEqual(sorted(self.search_run_ids([exp_id], run_view_type="ALL")), sorted([live, dead]))


# ============================================================================================
# Artifacts: proxy and artifacts/list
# ============================================================================================


class ArtifactsTest(ApiTestCase):

    def new_run_with_root(self):
        run = self.new_run(self.new_experiment("art"))
        return run, self.run_root(run)

    def test_put_then_get_round_trips_bytes_with_download_headers(self):
        _, root = self.new_run_with_root()
        data = bytes(range(256)) * 17 + b"\x00\xff end"
        self.assertEqual(self.put_artifact(root, "dir/blob.bin", data).status, 200)
        resp = self.get_artifact(root, "dir/blob.bin")
        self.assertEqual(resp.status, 200, repr(resp))
        self.assertEqual(resp.raw, data)
        disposition = resp.header("Content-Disposition", "")
        self.assertTrue(disposition.lower().startswith("attachment"), "Content-Disposition: %r" % disposition)
        self.assertIn("blob.bin", disposition)
        self.assertEqual(resp.header("X-Content-Type-Options", "").lower(), "nosniff")

    def test_a_range_past_the_end_is_served_up_to_the_end(self):
        _, root = self.new_run_with_root()
        self.assertEqual(self.put_artifact(root, "r.txt", b"0123456789abcdef").status, 200)
        path = ARTIFACTS + "/" + root + "/r.txt"
        resp = C.get(path, raw=True, headers={"Range": "bytes=3-5"})
        self.assertEqual((resp.status, resp.raw), (206, b"345"))
        # How a preview asks for "at most the first 2 MiB".
        resp = C.get(path, raw=True, headers={"Range": "bytes=0-2097151"})
        self.assertEqual((resp.status, resp.raw), (206, b"0123456789abcdef"))
        self.assertEqual(resp.header("Content-Range"), "bytes 0-15/16")
        self.assertIn("sandbox", resp.header("Content-Security-Policy", ""))
        # An empty file has no range to serve: it comes whole (and empty).
        self.assertEqual(self.put_artifact(root, "empty.txt", b"").status, 200)
        resp = C.get(ARTIFACTS + "/" + root + "/empty.txt", raw=True, headers={"Range": "bytes=0-2097151"})
        self.assertEqual((resp.status, resp.raw, resp.header("Content-Range")), (200, b"", None))

    def test_put_overwrites_and_empty_file_round_trips(self):
        _, root = self.new_run_with_root()
        self.assertEqual(self.put_artifact(root, "f.txt", b"first version").status, 200)
        self.assertEqual(self.put_artifact(root, "f.txt", b"second").status, 200)
        self.assertEqual(self.get_artifact(root, "f.txt").raw, b"second")
        self.assertEqual(self.put_artifact(root, "empty.txt", b"").status, 200)
        resp = self.get_artifact(root, "empty.txt")
        self.assertEqual((resp.status, resp.raw), (200, b""))

    def test_get_missing_artifact_is_404(self):
        _, root = self.new_run_with_root()
        self.assertEqual(self.get_artifact(root, "never/written.txt").status, 404)

    def test_proxy_listing_gives_basenames_dirs_and_sizes(self):
        _, root = self.new_run_with_root()
        self.put_artifact(root, "top.txt", b"123456")
        self.put_artifact(root, "d/f.txt", b"abc")
        self.put_artifact(root, "d/e/g.txt", b"xy")
        body = self.ok(self.list_proxy(root))
        files = {f["path"]: f for f in body.get("files", [])}
        self.assertEqual(set(files), {"top.txt", "d"})
        self.assertEqual(files["d"]["is_dir"], True)
        self.assertNotIn("file_size", files["d"])
        self.assertEqual(files["top.txt"]["is_dir"], False)
        self.assertEqual(files["top.txt"]["file_size"], 6)
        self.assertTrue(is_int(files["top.txt"]["file_size"]))
        sub = {f["path"]: f for f in self.ok(self.list_proxy(root + "/d")).get("files", [])}
        self.assertEqual(set(sub), {"f.txt", "e"})
        self.assertEqual((sub["f.txt"]["file_size"], sub["e"]["is_dir"]), (3, True))
        # listing a file path answers an empty list (the MLflow client does this before a download)
        listed_file = self.ok(self.list_proxy(root + "/top.txt"))
        self.assertEqual(listed_file.get("files", []), [], repr(listed_file))

    def test_delete_file_and_directory(self):
        _, root = self.new_run_with_root()
        self.put_artifact(root, "keep.txt", b"k")
        self.put_artifact(root, "gone.txt", b"g")
        self.put_artifact(root, "dir/a.txt", b"a")
        self.put_artifact(root, "dir/sub/b.txt", b"b")
        self.assertEqual(C.delete("%s/%s/gone.txt" % (ARTIFACTS, root)).status, 200)
        self.assertEqual(self.get_artifact(root, "gone.txt").status, 404)
        self.assertEqual(C.delete("%s/%s/dir" % (ARTIFACTS, root)).status, 200)
        self.assertEqual(self.get_artifact(root, "dir/sub/b.txt").status, 404)
        names = [f["path"] for f in self.ok(self.list_proxy(root)).get("files", [])]
        self.assertEqual(names, ["keep.txt"])
        self.assertEqual(self.get_artifact(root, "keep.txt").raw, b"k")

    def test_artifacts_list_gives_run_relative_paths(self):
        run, root = self.new_run_with_root()
        run_id = run["info"]["run_id"]
        self.put_artifact(root, "model/MLmodel", b"flavors: {}\n")
        self.put_artifact(root, "model/data/w.bin", b"\x01\x02\x03\x04")
        self.put_artifact(root, "notes.txt", b"hello")
        body = self.ok(self.get("artifacts/list", {"run_id": run_id}))
        self.assertEqual(body.get("root_uri"), run["info"]["artifact_uri"])
        files = {f["path"]: f for f in body.get("files", [])}
        self.assertEqual(set(files), {"model", "notes.txt"})
        self.assertTrue(files["model"]["is_dir"])
        self.assertEqual((files["notes.txt"]["is_dir"], files["notes.txt"]["file_size"]), (False, 5))
        sub = {f["path"]: f for f in self.ok(self.get("artifacts/list", {"run_id": run_id, "path": "model"}))["files"]}
        self.assertEqual(set(sub), {"model/MLmodel", "model/data"})
        self.assertEqual(sub["model/MLmodel"]["file_size"], 12)
        self.assertTrue(sub["model/data"]["is_dir"])
        empty = self.ok(self.get("artifacts/list", {"run_uuid": self.new_run_id()}))
        self.assertEqual(empty.get("files", []), [])

    def test_mpu_create_is_501_with_mlflow_prefix(self):
        _, root = self.new_run_with_root()
        resp = C.post("%s/create/%s/big.bin" % (MPU, root), {"path": "big.bin", "num_parts": 3})
        self.assertError(resp, 501, "NOT_IMPLEMENTED")
        self.assertTrue(resp.body["message"].startswith(MPU_PREFIX), repr(resp))


# ============================================================================================
# Path safety
# ============================================================================================

# Inserted verbatim into URLs (as the path suffix after '<exp>/<run>/artifacts/', or as the raw
# query value), so that the server is the one doing the percent-decoding.
TRAVERSAL_CORPUS = [
    "../x", "a/../../x", "/etc/passwd", "a\\..\\b", "%2e%2e/x", "a%2f..%2f..%2fx", "a%00b", "..",
    "./../x", "a/./../../b",
    "%2E%2E/x", "..%2fx", "%2e%2e%2fx", "..%5cx", ".%2e/x", "a/..%2f..%2fx", "..\\x",
]


class PathSafetyTest(ApiTestCase):
    """Every artifact endpoint answers 400 to each traversal corpus entry, never touches a file
    outside the data dir, and never returns content from outside the run's root."""

    @classmethod
    def setUpClass(cls):
        cls.marker = ("outside-secret-" + uuid.uuid4().hex).encode()
        cls.outside_file = os.path.join(ROOT, "outside-secret.txt")
        cls.outside_dir = os.path.join(ROOT, "outside-dir")
        os.makedirs(cls.outside_dir, exist_ok=True)
        for p in (cls.outside_file, os.path.join(cls.outside_dir, "secret.txt")):
            with open(p, "wb") as f:
                f.write(cls.marker)

    def setUp(self):
        self.exp_id = self.new_experiment("safety")
        self.run = self.new_run(self.exp_id)
        self.root = self.run_root(self.run)
        # a neighbour run whose file must stay unreachable from self.run
        self.other = self.new_run(self.exp_id)
        self.other_secret = ("neighbour-" + uuid.uuid4().hex).encode()
        self.assertEqual(self.put_artifact(self.run_root(self.other), "secret.txt", self.other_secret).status, 200)
        self.assertEqual(self.put_artifact(self.root, "keep/sentinel.txt", b"sentinel").status, 200)
        self.root_listing_before = sorted(os.listdir(ROOT))

    def tearDown(self):
        self.assertEqual(sorted(os.listdir(ROOT)), self.root_listing_before,
                         "something appeared in or vanished from the data dir's parent")
        self.assertTrue(os.path.exists(self.outside_file), "a file outside the data dir was deleted")
        self.assertEqual(self.get_artifact(self.root, "keep/sentinel.txt").raw, b"sentinel")
        self.assertEqual(self.get_artifact(self.run_root(self.other), "secret.txt").raw, self.other_secret)

    # -- corpus construction -------------------------------------------------------------------

    def deep(self, absolute):
        """A relative path with enough '..' to climb from anywhere to '/' and then to `absolute`."""
        return "../" * 24 + absolute.lstrip("/")

    def corpus(self, absolute_target):
        """Path suffixes relative to the run root; `absolute_target` replaces /etc/passwd for
        writes and deletes (so a broken server running as root cannot damage the machine)."""
        items = [absolute_target if c == "/etc/passwd" else c for c in TRAVERSAL_CORPUS]
        items += [self.deep(absolute_target),
                  "../../%s/artifacts/secret.txt" % self.other["info"]["run_id"],
                  "keep/../../../%s/%s/artifacts/secret.txt" % (self.exp_id, self.other["info"]["run_id"])]
        return items

    def assert_rejected(self, resp, what):
        self.assertNot5xx(resp, what)
        self.assertEqual(resp.status, 400, "%s: expected 400, got %r" % (what, resp))
        for secret in (b"root:", self.marker, self.other_secret):
            self.assertNotIn(secret, resp.raw, "%s leaked content from outside the run" % what)

    def proxy(self, suffix):
        return "%s/%s/%s" % (ARTIFACTS, self.root, suffix)

    def scan_for(self, needle, top):
        """Files under `top` (without following symlinks) whose content contains `needle`."""
        hits = []
        for dirpath, _dirs, files in os.walk(top):
            for name in files:
                p = os.path.join(dirpath, name)
                try:
                    if os.path.islink(p) or os.path.getsize(p) > 64 << 20:
                        continue
                    with open(p, "rb") as f:
                        if needle in f.read():
                            hits.append(p)
                except OSError:
                    pass
        return hits

    # -- the endpoints -------------------------------------------------------------------------

    def test_proxy_put_rejects_traversal(self):
        probe = ("escape-probe-" + uuid.uuid4().hex).encode()
        abs_target = os.path.join(ROOT, "abs-put-target")
        tmp_target = os.path.join(tempfile.gettempdir(), "cairn-escape-" + uuid.uuid4().hex)
        suffixes = self.corpus(abs_target) + [self.deep(tmp_target)]
        for suffix in suffixes:
            with self.subTest(path=suffix):
                self.assert_rejected(C.put(self.proxy(suffix), probe), "PUT " + suffix)
        with self.subTest(path="(whole path absolute)"):
            self.assert_rejected(C.put(ARTIFACTS + "/" + abs_target, probe), "PUT absolute")
        self.assertFalse(os.path.exists(abs_target))
        self.assertFalse(os.path.exists(tmp_target))
        self.assertEqual(self.scan_for(probe, ROOT), [], "a rejected upload was written somewhere")
        self.assertEqual(self.get_artifact(self.run_root(self.other), "secret.txt").raw, self.other_secret)

    def test_proxy_get_rejects_traversal(self):
        suffixes = self.corpus("/etc/passwd") + [self.deep(self.outside_file), self.deep("/etc/passwd")]
        for suffix in suffixes:
            with self.subTest(path=suffix):
                self.assert_rejected(C.get(self.proxy(suffix), raw=True), "GET " + suffix)
        for whole in ("/etc/passwd", self.outside_file):
            with self.subTest(path="(whole path) " + whole):
                self.assert_rejected(C.get(ARTIFACTS + "/" + whole, raw=True), "GET absolute")

    def test_proxy_delete_rejects_traversal(self):
        victim = os.path.join(ROOT, "victim.txt")
        with open(victim, "wb") as f:
            f.write(b"do not delete")
        try:
            suffixes = self.corpus(victim) + [self.deep(victim)]
            for suffix in suffixes:
                with self.subTest(path=suffix):
                    self.assert_rejected(C.delete(self.proxy(suffix)), "DELETE " + suffix)
                    self.assertTrue(os.path.exists(victim), "DELETE %s removed a file outside" % suffix)
            with self.subTest(path="(whole path absolute)"):
                self.assert_rejected(C.delete(ARTIFACTS + "/" + victim), "DELETE absolute")
            self.assertTrue(os.path.exists(victim))
        finally:
            os.unlink(victim)

    def test_proxy_listing_rejects_traversal(self):
        suffixes = self.corpus("/etc") + [self.deep(self.outside_dir), self.deep("/etc")]
        for suffix in suffixes:
            with self.subTest(path=suffix):
                resp = C.get(ARTIFACTS + "?path=" + self.root + "/" + suffix)
                self.assert_rejected(resp, "list " + suffix)
        for whole in ("/etc", "..", "../..", "%2e%2e", "/" + self.outside_dir.lstrip("/"), self.exp_id + "/.."):
            with self.subTest(path="(whole path) " + whole):
                self.assert_rejected(C.get(ARTIFACTS + "?path=" + whole), "list " + whole)

    def test_artifacts_list_rejects_traversal(self):
        run_id = self.run["info"]["run_id"]
        suffixes = self.corpus("/etc") + [self.deep(self.outside_dir), self.deep("/etc"), "/"]
        for suffix in suffixes:
            with self.subTest(path=suffix):
                resp = C.get(API + "artifacts/list?run_id=%s&path=%s" % (run_id, suffix))
                self.assert_rejected(resp, "artifacts/list " + suffix)

    def test_symlinks_do_not_escape(self):
        """If artifacts are plain files under <data-dir>/artifacts, plant symlinks pointing
        outside and check that no endpoint follows them; if the layout is content-addressed,
        check that a never-written path is a 404."""
        probe_name = "probe-%s.txt" % uuid.uuid4().hex
        self.assertEqual(self.put_artifact(self.root, probe_name, b"probe").status, 200)
        art_dir = os.path.join(DATA_DIR, "artifacts")
        found = None
        if os.path.isdir(art_dir):
            for dirpath, _dirs, files in os.walk(art_dir):
                if probe_name in files:
                    found = dirpath
                    break
        if found is None:
            self.assertEqual(self.get_artifact(self.root, "never-written-%s" % uuid.uuid4().hex).status, 404)
            self.assertEqual(self.get_artifact(self.root, "keep/never.txt").status, 404)
            return
        links = {"evil-file": self.outside_file, "evil-dir": self.outside_dir,
                 "evil-etc": "/etc", "evil-passwd": "/etc/passwd"}
        for name, target in links.items():
            os.symlink(target, os.path.join(found, name))
        run_id = self.run["info"]["run_id"]
        try:
            for rel in ("evil-file", "evil-dir/secret.txt", "evil-passwd", "evil-etc/passwd"):
                with self.subTest(op="GET", path=rel):
                    resp = self.get_artifact(self.root, rel)
                    self.assertNot5xx(resp, "GET " + rel)
                    self.assertIn(resp.status, (400, 403, 404), "GET through symlink %s: %r" % (rel, resp))
                    self.assertNotIn(self.marker, resp.raw)
                    self.assertNotIn(b"root:", resp.raw)
            for rel in ("evil-dir", "evil-etc"):
                with self.subTest(op="list", path=rel):
                    resp = self.list_proxy(self.root + "/" + rel)
                    self.assertNot5xx(resp, "list " + rel)
                    self.assertNotIn(b"secret.txt", resp.raw)
                    self.assertNotIn(b"passwd", resp.raw)
                    resp = C.get(API + "artifacts/list", {"run_id": run_id, "path": rel})
                    self.assertNot5xx(resp, "artifacts/list " + rel)
                    self.assertNotIn(b"secret.txt", resp.raw)
                    self.assertNotIn(b"passwd", resp.raw)
            with self.subTest(op="PUT", path="evil-dir/new.txt"):
                resp = self.put_artifact(self.root, "evil-dir/new.txt", b"planted")
                self.assertNot5xx(resp, "PUT through symlink")
                self.assertIn(resp.status, (400, 403, 404), repr(resp))
                self.assertFalse(os.path.exists(os.path.join(self.outside_dir, "new.txt")))
            with self.subTest(op="PUT", path="evil-file"):
                resp = self.put_artifact(self.root, "evil-file", b"overwritten")
                self.assertNot5xx(resp, "PUT onto symlink")
                with open(self.outside_file, "rb") as f:
                    self.assertEqual(f.read(), self.marker, "PUT wrote through a symlink")
            with self.subTest(op="DELETE", path="evil-dir/secret.txt"):
                resp = C.delete("%s/%s/evil-dir/secret.txt" % (ARTIFACTS, self.root))
                self.assertNot5xx(resp, "DELETE through symlink")
                self.assertTrue(os.path.exists(os.path.join(self.outside_dir, "secret.txt")))
            with self.subTest(op="DELETE", path="evil-dir"):
                resp = C.delete("%s/%s/evil-dir" % (ARTIFACTS, self.root))
                self.assertNot5xx(resp, "DELETE symlinked dir")
                self.assertTrue(os.path.exists(os.path.join(self.outside_dir, "secret.txt")),
                                "DELETE followed a symlink out of the run root")
        finally:
            for name in links:
                p = os.path.join(found, name)
                if os.path.lexists(p):
                    os.unlink(p)
            with open(self.outside_file, "wb") as f:  # restore in case a broken server overwrote it
                f.write(self.marker)


# ============================================================================================
# Hardening: requests that once crashed the server, leaked storage or gave wrong answers
# ============================================================================================

class HardeningTest(ApiTestCase):

    def test_deeply_nested_body_is_400_and_server_lives(self):
        depth = 200000
        body = '{"experiment_id": ' + "[" * depth + "]" * depth + "}"
        resp = C.request("POST", API + "experiments/delete", body=body.encode(),
                         headers={"Content-Type": "application/json"})
        self.assertError(resp, 400, "INVALID_PARAMETER_VALUE", mentions="deeper")
        self.assertEqual(C.get("/health", raw=True).status, 200)

    def test_malformed_page_tokens_are_400(self):
        run_id = self.new_run_id()
        for token in ["====", "a===", "eyJvZmZzZXQiOiA5MjIzMzcyMDM2ODU0Nzc1ODA3fQ=="]:
            with self.subTest(token=token):
                self.assertError(self.post("runs/search", {"experiment_ids": ["0"],
                                                           "page_token": token}), 400)
                self.assertError(self.post("experiments/search", {"page_token": token}), 400)
                self.assertError(self.get("metrics/get-history", {
                    "run_id": run_id, "metric_key": "m", "page_token": token}), 400)

    def test_repeated_experiment_ids_do_not_repeat_runs(self):
        exp = self.new_experiment("dup")
        ids = {self.new_run_id(exp) for _ in range(3)}
        body = self.ok(self.post("runs/search", {"experiment_ids": [exp, exp, "0" + exp]}))
        got = [r["info"]["run_id"] for r in body.get("runs", [])]
        self.assertEqual(sorted(got), sorted(ids))
        for r in body["runs"]:
            self.assertTrue(r["info"]["artifact_uri"], "runs must come back complete")

    def test_invalid_utf8_artifact_path_is_400(self):
        run = self.get_run(self.new_run_id())
        resp = C.put("%s/%s/bad%%FF.txt" % (ARTIFACTS, self.run_root(run)), b"x")
        self.assertError(resp, 400, mentions="utf-8")

    def test_overwritten_artifact_leaves_one_blob(self):
        run = self.get_run(self.new_run_id())
        root = self.run_root(run)
        blob_dir = os.path.join(DATA_DIR, "artifacts")

        def blobs():
            return set(tl.BlobStore(blob_dir).blobs())

        self.assertEqual(self.put_artifact(root, "model.bin", b"version one " + uniq().encode()).status, 200)
        before = blobs()
        self.assertEqual(self.put_artifact(root, "model.bin", b"version two " + uniq().encode()).status, 200)
        after = blobs()
        self.assertEqual(len(after), len(before), "the replaced blob must be removed")
        self.assertTrue(self.get_artifact(root, "model.bin").body.startswith(b"version two"))


if __name__ == "__main__":
    sys.exit(tl.main("mlflow_api", sys.modules[__name__]))
