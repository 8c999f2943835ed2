#!/usr/bin/env python3
"""`cairn pipeline` end to end with the local executor: a three-step pipeline runs, a second
run is fully cached, changing one input re-runs only the steps downstream of it and `explain`
names the input, a fan-out, a failing step with retries, a timeout that kills the step's whole
process group, Ctrl-C stopping every step, validate naming every problem, resume after the
runner is killed with SIGKILL, and the live status line on a terminal; and the records in the tracking server: a parent run per pipeline run, a child run
per step with its log, state and cache key, a cached step linked to the run that produced its
outputs, records kept for `cairn sync` when the server is away, and a step's `register`
making a model version from its output when it runs.

Usage: test_pipeline.py --cairn build/release/cairn
"""
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cairn_testlib as tl  # noqa: E402

# prepare copies raw/ into data/ and counts its runs; train writes model.txt from data/ and the
# learning rate; evaluate writes metrics.json from the model.
THREE_STEPS = """name: demo
params: {lr: 0.1}
steps:
  prepare:
    run: mkdir -p data && cat raw/*.csv > data/all.csv && echo x >> runs-prepare
    inputs: [raw/]
    outputs: [data/]
  train:
    run: echo "lr=${params.lr} rows=$(wc -l < data/all.csv)" > model.txt && echo x >> runs-train
    inputs: [data/]
    outputs: [model.txt]
  evaluate:
    needs: [train]
    run: (cat model.txt; echo scored) > metrics.json && echo x >> runs-evaluate
    outputs: [metrics.json]
"""


class PipelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, data = tl.make_temp_root("cairn-pipeline-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (pipelines)").start()
        cls.env = dict(os.environ, CAIRN_CACHE_DIR=os.path.join(cls.root, "cache"),
                       CAIRN_HOME=os.path.join(cls.root, "home"),
                       CAIRN_TRACKING_URI=cls.server.url, PATH="/usr/local/bin:/usr/bin:/bin")
        cls.env.pop("MLFLOW_TRACKING_URI", None)
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def api(self, method, params):
        return self.server.client().get("/api/2.0/mlflow/" + method, params).body

    def runs_of_pipeline(self, run_id):
        """The pipeline's parent run and its step runs by step id."""
        parent = self.api("runs/get", {"run_id": run_id})["run"]
        found = self.server.client().post("/api/2.0/mlflow/runs/search", {
            "experiment_ids": [parent["info"]["experiment_id"]],
            "filter": "tags.mlflow.parentRunId = '%s'" % run_id, "max_results": 1000}).body
        children = {}
        for run in found.get("runs", []):
            tags = {t["key"]: t["value"] for t in run["data"].get("tags", [])}
            children[tags["cairn.step.id"]] = (run, tags)
        return parent, children

    def project(self, spec, files=None):
        PipelineTest.count += 1
        path = os.path.join(self.root, "p%d" % PipelineTest.count)
        os.makedirs(path)
        with open(os.path.join(path, "pipeline.yaml"), "w") as f:
            f.write(spec)
        for name, content in (files or {}).items():
            os.makedirs(os.path.dirname(os.path.join(path, name)) or path, exist_ok=True)
            with open(os.path.join(path, name), "w") as f:
                f.write(content)
        return path

    def cairn(self, *args, cwd, timeout=120):
        return subprocess.run([tl.CONFIG.cairn, "pipeline", *args], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def ok(self, *args, cwd):
        p = self.cairn(*args, cwd=cwd)
        self.assertEqual(p.returncode, 0, "cairn pipeline %s:\n%s%s" % (" ".join(args), p.stdout,
                                                                       p.stderr))
        return p

    def states(self, output):
        return tl.pipeline_states(output)

    def runs_of(self, project, step):
        path = os.path.join(project, "runs-" + step)
        return len(open(path).read().split()) if os.path.exists(path) else 0

    def last_run_id(self, project):
        listing = self.ok("ls", cwd=project).stdout.splitlines()
        return listing[1].split()[0]

    def test_cached_rerun_and_a_changed_input(self):
        project = self.project(THREE_STEPS, {"raw/a.csv": "1\n2\n"})
        first = self.ok("run", cwd=project)
        self.assertEqual(self.states(first.stdout),
                         {"prepare": "done", "train": "done", "evaluate": "done"})
        with open(os.path.join(project, "metrics.json")) as f:
            self.assertEqual(f.read(), "lr=0.1 rows=2\nscored\n")

        # Nothing changed: every step comes from the cache, and nothing runs.
        second = self.ok("run", cwd=project)
        self.assertEqual(set(self.states(second.stdout).values()), {"cached"})
        self.assertIn("3 cached", second.stdout)
        self.assertNotIn("\x1b", second.stdout, "no live status line off a terminal")
        self.assertEqual([self.runs_of(project, s) for s in ("prepare", "train", "evaluate")],
                         [1, 1, 1])

        # Outputs deleted by hand come back from the store, still without running anything.
        os.remove(os.path.join(project, "metrics.json"))
        shutil.rmtree(os.path.join(project, "data"))
        self.assertEqual(set(self.states(self.ok("run", cwd=project).stdout).values()),
                         {"cached"})
        with open(os.path.join(project, "metrics.json")) as f:
            self.assertEqual(f.read(), "lr=0.1 rows=2\nscored\n")
        self.assertTrue(os.path.exists(os.path.join(project, "data", "all.csv")))

        # A new raw file: everything downstream of raw/ runs again.
        with open(os.path.join(project, "raw", "b.csv"), "w") as f:
            f.write("3\n")
        third = self.ok("run", cwd=project)
        self.assertEqual(self.states(third.stdout),
                         {"prepare": "done", "train": "done", "evaluate": "done"})
        run_id = self.last_run_id(project)
        explain = self.ok("explain", run_id, "prepare", cwd=project).stdout
        self.assertIn("input raw changed", explain)
        self.assertIn("step prepare in run %s: done" % run_id, explain)

        # Another learning rate: prepare is cached, train and evaluate run.
        fourth = self.ok("run", "-p", "lr=0.5", cwd=project)
        self.assertEqual(self.states(fourth.stdout),
                         {"prepare": "cached", "train": "done", "evaluate": "done"})
        explain = self.ok("explain", self.last_run_id(project), "train", cwd=project).stdout
        self.assertIn('params changed: {"lr":"0.1"} -> {"lr":"0.5"}', explain)
        self.assertNotIn("input data", explain)
        explain = self.ok("explain", self.last_run_id(project), "evaluate", cwd=project).stdout
        self.assertIn("input model.txt changed", explain)
        with open(os.path.join(project, "metrics.json")) as f:
            self.assertEqual(f.read(), "lr=0.5 rows=3\nscored\n")

        # --no-cache runs everything.
        fifth = self.ok("run", "-p", "lr=0.5", "--no-cache", cwd=project)
        self.assertEqual(set(self.states(fifth.stdout).values()), {"done"})

    def test_each_step_is_a_child_run_of_the_pipeline_run(self):
        project = self.project(THREE_STEPS.replace("echo x >> runs-train",
                                                   "echo trained; echo x >> runs-train"),
                               {"raw/a.csv": "1\n"})
        first = self.ok("run", cwd=project)
        self.assertIn("tracked at %s" % self.server.url, first.stdout)
        first_id = run_id_of(first.stdout)
        parent, children = self.runs_of_pipeline(first_id)
        self.assertEqual(parent["info"]["status"], "FINISHED")
        parent_tags = {t["key"]: t["value"] for t in parent["data"]["tags"]}
        self.assertEqual(parent_tags["cairn.pipeline.state"], "complete")
        self.assertEqual(sorted(children), ["evaluate", "prepare", "train"])
        train_run, train_tags = children["train"]
        self.assertEqual(train_run["info"]["status"], "FINISHED")
        self.assertEqual(train_tags["cairn.step.state"], "done")
        self.assertEqual(train_tags["cairn.step.exit_code"], "0")
        self.assertEqual(len(train_tags["cairn.step.cache_key"]), 64)
        # What each step waits for, so that the DAG can be drawn from the runs alone.
        self.assertEqual(json.loads(train_tags["cairn.step.needs"]), ["prepare"])
        self.assertNotIn("cairn.step.needs", children["prepare"][1])
        self.assertIn({"key": "lr", "value": "0.1"}, train_run["data"]["params"])
        log = self.server.client().get("/api/cairn/v1/runs/%s/log" %
                                       train_run["info"]["run_id"], {"offset": 0})
        self.assertIn("trained", log.text)

        # A cached re-run: each step's run names the run that produced its outputs.
        second = self.ok("run", cwd=project)
        second_id = run_id_of(second.stdout)
        _, cached = self.runs_of_pipeline(second_id)
        self.assertEqual(cached["train"][1]["cairn.step.state"], "cached")
        self.assertEqual(cached["train"][1]["cairn.step.cached_from_run"],
                         train_run["info"]["run_id"])

        # A step that logs through MLflow's REST API with the variables it is given.
        script = ("import json, os, urllib.request\n"
                  "body = json.dumps({'run_id': os.environ['MLFLOW_RUN_ID'], 'key': 'acc',"
                  " 'value': 0.9, 'timestamp': 0, 'step': 0}).encode()\n"
                  "req = urllib.request.Request(os.environ['MLFLOW_TRACKING_URI'] +"
                  " '/api/2.0/mlflow/runs/log-metric', body,"
                  " {'Content-Type': 'application/json'})\n"
                  "urllib.request.urlopen(req).read()\n")
        logging = self.project("name: logs\nsteps:\n  score: {run: /usr/bin/python3 log.py}\n",
                               {"log.py": script})
        p = self.ok("run", cwd=logging)
        run_id = run_id_of(p.stdout)
        _, steps = self.runs_of_pipeline(run_id)
        metrics = {m["key"]: m["value"] for m in steps["score"][0]["data"].get("metrics", [])}
        self.assertEqual(metrics, {"acc": 0.9})

    def test_a_step_that_runs_registers_its_output_as_a_model_version(self):
        spec = ("name: reg\nparams: {lr: 0.1}\nsteps:\n"
                "  train:\n"
                "    run: mkdir -p model/cfg && echo lr=${params.lr} > model/w.txt"
                " && echo {} > model/cfg/c.json\n"
                "    outputs: [model/]\n"
                "    register: {model: reg-clf, path: model, alias: candidate}\n")
        project = self.project(spec)
        first = self.ok("run", cwd=project)
        self.assertIn("registered model reg-clf version 1, alias candidate", first.stdout)
        _, steps = self.runs_of_pipeline(run_id_of(first.stdout))
        train_run = steps["train"][0]["info"]["run_id"]
        v1 = self.api("registered-models/alias", {"name": "reg-clf", "alias": "candidate"})
        self.assertEqual(v1["model_version"]["version"], "1")
        self.assertEqual(v1["model_version"]["run_id"], train_run)
        self.assertEqual(v1["model_version"]["source"], "runs:/%s/outputs/model" % train_run)
        self.assertEqual(v1["model_version"]["status"], "READY")

        def version_file(version, path):
            r = self.server.client().get("/model-versions/get-artifact", {
                "name": "reg-clf", "version": version, "path": path})
            self.assertEqual(r.status, 200, r.text)
            return r.text

        self.assertEqual(version_file("1", "w.txt"), "lr=0.1\n")
        self.assertEqual(version_file("1", "cfg/c.json"), "{}\n")

        # Taken from the cache, the step does not run and registers nothing.
        second = self.ok("run", cwd=project)
        self.assertEqual(self.states(second.stdout), {"train": "cached"})
        self.assertNotIn("registered", second.stdout)
        versions = self.api("model-versions/search", {"filter": "name = 'reg-clf'"})
        self.assertEqual(len(versions["model_versions"]), 1)

        # Run again with another parameter: version 2, and the alias moves to it.
        third = self.ok("run", "-p", "lr=0.5", cwd=project)
        self.assertIn("registered model reg-clf version 2, alias candidate", third.stdout)
        v2 = self.api("registered-models/alias", {"name": "reg-clf", "alias": "candidate"})
        self.assertEqual(v2["model_version"]["version"], "2")
        self.assertEqual(version_file("2", "w.txt"), "lr=0.5\n")
        self.assertEqual(version_file("1", "w.txt"), "lr=0.1\n", "version 1 keeps its files")

        # Its lineage names the pipeline run and the step.
        shown = subprocess.run([tl.CONFIG.cairn, "models", "show", "reg-clf@candidate"],
                               env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("pipeline      reg run %s, step train" % run_id_of(third.stdout),
                      shown.stdout)

        # `path` must name one of the step's outputs.
        bad = self.project(spec.replace("path: model,", "path: weights.bin,"))
        p = self.cairn("validate", cwd=bad)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("steps.train.register.path: weights.bin is not among the step's outputs "
                      "(model)", p.stdout + p.stderr)

    def test_a_registration_waits_for_sync_and_a_forged_journal_uploads_nothing(self):
        # A server that is down while the step runs: the version is made by `cairn sync`, from
        # the files as the step wrote them, though the step has run again since.
        away = tl.CairnServer(tl.CONFIG.cairn, os.path.join(self.root, "away-data"),
                              name="cairn (away)").start()
        port = away.port
        away.stop()
        home = os.path.join(self.root, "away-home")
        env = dict(self.env, CAIRN_TRACKING_URI="http://127.0.0.1:%d" % port, CAIRN_HOME=home)
        project = self.project("name: later\nsteps:\n  train:\n"
                               "    run: mkdir -p m && date +%N > m/w.txt\n"
                               "    outputs: [m/]\n"
                               "    register: {model: later-clf, path: m, alias: candidate}\n")
        p = subprocess.run([tl.CONFIG.cairn, "pipeline", "run"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(os.path.join(project, "m", "w.txt")) as f:
            written = f.read()
        p = subprocess.run([tl.CONFIG.cairn, "pipeline", "run", "--no-cache", "--no-track"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        back = tl.CairnServer(tl.CONFIG.cairn, os.path.join(self.root, "away-data"), port=port,
                              name="cairn (back)").start()
        try:
            p = subprocess.run([tl.CONFIG.cairn, "sync"], cwd=project, env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("registered model later-clf version 1, alias candidate",
                          p.stdout + p.stderr)
            r = back.client().get("/model-versions/get-artifact", {
                "name": "later-clf", "version": "1", "path": "w.txt"})
            self.assertEqual(r.text, written)
            self.assertEqual(os.listdir(os.path.join(home, "journal")), [],
                             "the journals and their kept files are gone once delivered")
        finally:
            back.stop()

        # A journal planted in the journal directory may not upload files from elsewhere on
        # the machine, nor register another run's files.
        run_id = self.server.client().post("/api/2.0/mlflow/runs/create",
                                           {"experiment_id": "0"}).body["run"]["info"]["run_id"]
        other = self.server.client().post("/api/2.0/mlflow/runs/create",
                                          {"experiment_id": "0"}).body["run"]["info"]["run_id"]
        secret = os.path.join(self.root, "secret.txt")
        with open(secret, "w") as f:
            f.write("private")
        journal_dir = os.path.join(self.env["CAIRN_HOME"], "journal")
        os.makedirs(journal_dir, exist_ok=True)
        records = [
            {"cairn_journal": 1, "tracking_uri": self.server.url},
            {"op": "artifact_file", "artifact_uri": "", "path": "outputs/a", "file": secret},
            {"op": "artifact_file", "artifact_uri": "", "path": "outputs/b",
             "file": "../../secret.txt"},
            {"op": "register", "model": "planted", "source": "runs:/%s/outputs" % run_id,
             "alias": "", "files": [{"path": "outputs/a", "size": 7}]},
            {"op": "register", "model": "planted", "source": "runs:/%s/outputs" % other,
             "alias": "", "files": []},
            {"op": "end", "status": "FINISHED", "end_time": 1},
        ]
        with open(os.path.join(journal_dir, run_id + ".journal"), "w") as f:
            f.write("".join(json.dumps(r) + "\n" for r in records))
        p = subprocess.run([tl.CONFIG.cairn, "sync"], cwd=self.root, env=self.env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stderr.count("names no kept file"), 2, p.stderr)
        self.assertIn("registers another run's files", p.stderr)
        self.assertIn("1 of its 1 files did not reach the server whole", p.stderr)
        listed = self.api("artifacts/list", {"run_id": run_id})
        self.assertEqual(listed.get("files", []), [])
        r = self.server.client().get("/api/2.0/mlflow/registered-models/get",
                                     {"name": "planted"})
        self.assertEqual(r.status, 404)
        self.assertEqual(self.api("runs/get", {"run_id": run_id})["run"]["info"]["status"],
                         "FINISHED")

    def test_a_terminal_gets_a_live_status_line(self):
        project = self.project("name: live\nsteps:\n  slow: {run: sleep 1.6}\n"
                               "  after: {run: 'true', needs: [slow]}\n")
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
        proc = subprocess.Popen([tl.CONFIG.cairn, "pipeline", "run", "--no-track"], cwd=project,
                                env=dict(self.env, TERM="xterm"), stdin=slave, stdout=slave,
                                stderr=slave)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        self.assertEqual(proc.wait(timeout=60), 0, out)
        text = out.decode()
        self.assertIn("[0/2] running: slow 0s", text)
        self.assertIn("[0/2] running: slow 1s", text, "redrawn while the step runs")
        self.assertIn("[1/2]", text)
        # Each status line is cleared before the next line, the summary last of all.
        self.assertIn("\r\x1b[K  done      slow", text)
        self.assertRegex(text, r"\r\x1b\[K2 done in [0-9.]+ s\r?\n$")

    def test_code_in_git_counts_large_untracked_files_and_not_cairns_records(self):
        # The pipeline lives in a subdirectory of the repository; its script is untracked and
        # too large for the diff.
        PipelineTest.count += 1
        repo = os.path.join(self.root, "repo%d" % PipelineTest.count)
        project = os.path.join(repo, "sub")
        os.makedirs(project)
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
        for args in (["init", "-q"], ["commit", "-q", "--allow-empty", "-m", "start"]):
            subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)
        with open(os.path.join(project, "pipeline.yaml"), "w") as f:
            f.write("name: gen\nsteps:\n  gen: {run: python3 gen.py > out.txt, "
                    "outputs: [out.txt]}\n")
        padding = "#" * 300_000 + "\n"
        with open(os.path.join(project, "gen.py"), "w") as f:
            f.write("print(1)\n" + padding)
        self.assertEqual(self.states(self.ok("run", "--no-track", cwd=project).stdout),
                         {"gen": "done"})
        # The first run's own records under sub/.cairn are not code changes.
        self.assertEqual(self.states(self.ok("run", "--no-track", cwd=project).stdout),
                         {"gen": "cached"})
        with open(os.path.join(project, "gen.py"), "w") as f:
            f.write("print(2)\n" + padding)  # same size
        p = self.ok("run", "--no-track", cwd=project)
        self.assertEqual(self.states(p.stdout), {"gen": "done"})
        with open(os.path.join(project, "out.txt")) as f:
            self.assertEqual(f.read(), "2\n")
        run_id = self.last_run_id(project)
        explained = self.ok("explain", run_id, "gen", cwd=project).stdout
        self.assertIn("git uncommitted changes changed", explained)

    def test_the_commit_and_the_diff_are_on_the_pipelines_runs(self):
        PipelineTest.count += 1
        project = os.path.join(self.root, "repo%d" % PipelineTest.count)
        os.makedirs(project)
        env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x",
                   GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@x")
        with open(os.path.join(project, "pipeline.yaml"), "w") as f:
            f.write("name: versioned\nsteps:\n  prep: {run: python3 prep.py > data.txt, "
                    "outputs: [data.txt]}\n  train: {run: cat data.txt, needs: [prep]}\n")
        with open(os.path.join(project, "prep.py"), "w") as f:
            f.write("print(1)\n")
        for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "v1"]):
            subprocess.run(["git", *args], cwd=project, env=env, check=True, capture_output=True)
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project, capture_output=True,
                                text=True, check=True).stdout.strip()
        with open(os.path.join(project, "prep.py"), "w") as f:
            f.write("print(2)\n")
        parent, children = self.runs_of_pipeline(run_id_of(self.ok("run", cwd=project).stdout))
        self.assertEqual(set(children), {"prep", "train"})
        c = self.server.client()
        for run, tags in [(parent, {t["key"]: t["value"] for t in parent["data"]["tags"]}),
                          *children.values()]:
            self.assertNotEqual(tags.get("cairn.step.state"), "cached")
            self.assertEqual(tags["mlflow.source.git.commit"], commit)
            self.assertEqual(tags["mlflow.source.git.branch"], "main")
            self.assertEqual(tags["cairn.git.dirty"], "true")
            diff = c.get("/get-artifact", {"run_id": run["info"]["run_id"],
                                           "path": "cairn/code.diff"})
            self.assertEqual(diff.status, 200, diff)
            self.assertIn("+print(2)", diff.text)
            self.assertIn("-print(1)", diff.text)

    def test_outputs_are_the_step_runs_artifacts_and_go_up_once(self):
        project = self.project(
            "name: outs\nsteps:\n"
            "  make:\n    run: mkdir -p model && echo w1 > model/w.bin && echo {} > model/c.json"
            " && echo 42 > score.txt\n    outputs: [model/, score.txt]\n"
            "  use: {run: cat score.txt, needs: [make]}\n")
        storage = lambda: self.server.client().get("/api/cairn/v1/storage").body["blobs"]["count"]
        first = self.ok("run", cwd=project)
        self.assertIn("outputs: 3 files recorded as artifacts, 3 sent (9 B), 0 already on the "
                      "server", first.stdout)
        blobs = storage()
        second = self.ok("run", "--no-cache", cwd=project)
        out = second.stdout + second.stderr
        self.assertIn("outputs: 3 files recorded as artifacts, 0 sent (0 B), 3 already on the "
                      "server", out)
        self.assertEqual(storage(), blobs, "nothing new was stored")
        for output in (first, second):
            _, children = self.runs_of_pipeline(run_id_of(output.stdout))
            run = children["make"][0]["info"]["run_id"]
            listed = self.api("artifacts/list", {"run_id": run, "path": "outputs/model"})
            self.assertEqual(sorted((f["path"], f["file_size"]) for f in listed["files"]),
                             [("outputs/model/c.json", 3), ("outputs/model/w.bin", 3)])
            got = self.server.client().get("/get-artifact",
                                           {"run_id": run, "path": "outputs/score.txt"})
            self.assertEqual(got.text, "42\n")
            self.assertNotIn("outputs", [f["path"] for f in self.api(
                "artifacts/list", {"run_id": children["use"][0]["info"]["run_id"]}).get(
                    "files", [])], "a step without outputs has none")
        # --upload-outputs never: the run records none.
        third = self.ok("run", "--no-cache", "--upload-outputs", "never", cwd=project)
        _, children = self.runs_of_pipeline(run_id_of(third.stdout))
        listed = self.api("artifacts/list", {"run_id": children["make"][0]["info"]["run_id"]})
        self.assertEqual([f["path"] for f in listed.get("files", [])], ["cairn"])
        runs_before = self.ok("ls", cwd=project).stdout
        bad = self.cairn("run", "--upload-outputs", "sometimes", cwd=project)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertEqual(self.ok("ls", cwd=project).stdout, runs_before, "nothing was recorded")
        self.assertIn("--upload-outputs takes never, small or always, not 'sometimes'", bad.stderr)

    TRAIN_WITH_CHECKPOINT = """import os, sys, time
os.makedirs("ckpt", exist_ok=True)
start = int(open("ckpt/epoch").read()) if os.path.exists("ckpt/epoch") else 0
print("starting at epoch", start, flush=True)
for e in range(start, 12):
    time.sleep(0.2)
    with open("ckpt/epoch.tmp", "w") as f:
        f.write(str(e + 1))
    os.replace("ckpt/epoch.tmp", "ckpt/epoch")
    with open("epochs.log", "a") as f:
        f.write("%d\\n" % e)
    if e == 4 and os.environ.get("FAIL_ONCE") and not os.path.exists("failed-once"):
        open("failed-once", "w").close()
        sys.exit(3)
with open("model.txt", "w") as f:
    f.write("trained\\n")
"""

    def epochs(self, project):
        with open(os.path.join(project, "epochs.log")) as f:
            return [int(x) for x in f.read().split()]

    def test_a_step_killed_mid_training_resumes_from_its_checkpoint(self):
        project = self.project(
            "name: ckpt\nsteps:\n  train:\n    run: python3 train.py\n"
            "    checkpoint: {path: ckpt, every: 0.3s}\n    outputs: [model.txt]\n",
            {"train.py": self.TRAIN_WITH_CHECKPOINT})
        p = subprocess.Popen([tl.CONFIG.cairn, "pipeline", "run", "--no-track"], cwd=project,
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if os.path.exists(os.path.join(project, "epochs.log")) and \
                    len(self.epochs(project)) >= 5:
                break
            time.sleep(0.05)
        os.killpg(p.pid, signal.SIGKILL)  # the runner and its step, with no chance to clean up
        p.wait()
        done_before = len(self.epochs(project))
        self.assertLess(done_before, 12, "the step ended before it was killed")
        resumed = self.ok("resume", self.last_run_id(project), cwd=project)
        self.assertIn("restored  train", resumed.stdout)
        self.assertEqual(self.states(resumed.stdout)["train"], "done")
        log = subprocess.run(["sh", "-c", "cat .cairn/pipelines/*/logs/*"], cwd=project,
                             capture_output=True, text=True).stdout
        starts = [int(line.split()[-1]) for line in log.splitlines()
                  if line.startswith("starting at epoch")]
        self.assertEqual(len(starts), 2, log)
        self.assertEqual(starts[0], 0)
        self.assertGreaterEqual(starts[1], 2, "the second attempt started from the checkpoint")
        self.assertLessEqual(starts[1], done_before)
        self.assertEqual(self.epochs(project)[done_before:], list(range(starts[1], 12)))

    def test_a_retried_step_continues_from_the_checkpoint_its_failed_attempt_left(self):
        project = self.project(
            "name: ckpt-retry\nsteps:\n  train:\n    run: FAIL_ONCE=1 python3 train.py\n"
            "    checkpoint: ckpt\n    retries: 1\n    outputs: [model.txt]\n",
            {"train.py": self.TRAIN_WITH_CHECKPOINT})
        out = self.ok("run", "--no-track", cwd=project)
        self.assertEqual(self.states(out.stdout)["train"], "done")
        self.assertEqual(self.epochs(project), list(range(0, 5)) + list(range(5, 12)),
                         "the retry went on from epoch 5, not from 0")
        # A new run starts from an empty checkpoint directory.
        os.remove(os.path.join(project, "epochs.log"))
        os.remove(os.path.join(project, "failed-once"))
        self.ok("run", "--no-track", "--no-cache", cwd=project)
        self.assertEqual(self.epochs(project)[0], 0)

    def start_waiting_run(self, project, *flags):
        """Starts `pipeline run` in the background and returns it once a step waits."""
        p = subprocess.Popen([tl.CONFIG.cairn, "pipeline", "run", *flags], cwd=project,
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        lines = []
        for line in p.stdout:
            lines.append(line)
            if line.startswith("  waiting"):
                return p, "".join(lines)
        self.fail("no step waited:\n" + "".join(lines) + p.stderr.read())

    # Each test's steps are its own (`{0}`): the step cache is shared.
    APPROVAL_SPEC = ("name: gated\nsteps:\n  build: {{run: 'echo {0} > b.txt', outputs: [b.txt]}}\n"
                     "  publish: {{run: 'cat b.txt', needs: [build], approve: {{by: alice}}}}\n"
                     "  announce: {{run: 'echo announced {0}', needs: [publish]}}\n")

    def test_a_step_waits_for_approval_and_runs_once_approved(self):
        project = self.project(self.APPROVAL_SPEC.format("approved"))
        p, head = self.start_waiting_run(project)
        self.assertIn("waiting   publish", head)
        self.assertIn("for approval by alice: cairn pipeline approve", head)
        run_id = run_id_of(head)
        _, children = self.runs_of_pipeline(run_id)
        self.assertEqual(children["publish"][1]["cairn.step.state"], "waiting for approval")
        self.assertEqual(children["publish"][1]["cairn.approval.by"], "alice")
        self.assertEqual(children["announce"][0]["info"]["status"], "SCHEDULED")
        approved = self.ok("approve", run_id[:8], "publish", "-m", "ship it", cwd=project)
        self.assertIn("approved step publish of run %s" % run_id[:8], approved.stdout)
        out, err = p.communicate(timeout=60)
        out = head + out
        self.assertEqual(p.returncode, 0, out + err)
        self.assertIn("approved  publish", out)
        self.assertIn("ship it", out)
        self.assertEqual(self.states(out), {"build": "done", "publish": "done",
                                            "announce": "done"})
        _, children = self.runs_of_pipeline(run_id)
        tags = children["publish"][1]
        self.assertEqual((tags["cairn.approval.decision"], tags["cairn.approval.comment"]),
                         ("approved", "ship it"))
        again = self.cairn("approve", run_id[:8], "publish", cwd=project)
        self.assertEqual(again.returncode, 1)
        self.assertIn("does not wait for approval (it is done)", again.stderr)

    def test_a_rejected_step_fails_and_what_needs_it_is_skipped(self):
        project = self.project(self.APPROVAL_SPEC.format("rejected"))
        p, head = self.start_waiting_run(project)
        run_id = run_id_of(head)
        self.ok("approve", run_id[:8], "publish", "--reject", "-m", "not today", cwd=project)
        out, err = p.communicate(timeout=60)
        out = head + out
        self.assertEqual(p.returncode, 1, out + err)
        self.assertEqual(self.states(out), {"build": "done", "publish": "failed",
                                            "announce": "skipped"})
        self.assertIn("rejected by", out)
        self.assertIn("not today", out)
        _, children = self.runs_of_pipeline(run_id)
        self.assertEqual(children["publish"][0]["info"]["status"], "FAILED")

    def test_a_decision_made_while_the_runner_was_down_counts_on_resume(self):
        project = self.project(self.APPROVAL_SPEC.format("resumed"))
        p, head = self.start_waiting_run(project)
        run_id = run_id_of(head)
        p.kill()
        p.wait()
        self.ok("approve", run_id[:8], "publish", "-m", "while it was down", cwd=project)
        resumed = self.ok("resume", run_id[:8], cwd=project)
        self.assertIn("approved  publish", resumed.stdout)
        self.assertIn("while it was down", resumed.stdout)
        states = self.states(resumed.stdout)
        self.assertEqual((states["publish"], states["announce"]), ("done", "done"))
        _, children = self.runs_of_pipeline(run_id)
        self.assertEqual(children["publish"][1]["cairn.approval.decision"], "approved")
        self.assertEqual(children["publish"][1]["cairn.step.state"], "done",
                         "the step ran in the run that was approved")

    def test_an_untracked_run_is_approved_in_its_directory(self):
        project = self.project(self.APPROVAL_SPEC.format("untracked"))
        p, head = self.start_waiting_run(project, "--no-track")
        run = self.last_run_id(project)
        status = self.ok("status", run, cwd=project).stdout
        self.assertIn("waiting", status)
        self.ok("approve", run, "publish", cwd=project)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertEqual(self.states(out)["announce"], "done")
        wrong = self.cairn("approve", run, "build", cwd=project)
        self.assertEqual(wrong.returncode, 1)
        self.assertIn("step build of run %s does not wait for approval" % run, wrong.stderr)

    def test_records_wait_when_the_server_is_away(self):
        project = self.project("name: away\nsteps:\n  s: {run: echo hi}\n")
        env = dict(self.env, CAIRN_TRACKING_URI="http://127.0.0.1:9")
        p = subprocess.run([tl.CONFIG.cairn, "pipeline", "run"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("cannot take the pipeline's records", p.stderr)
        self.assertIn("`cairn sync` uploads them", p.stderr)
        journals = os.listdir(os.path.join(self.env["CAIRN_HOME"], "journal"))
        self.assertTrue(any(j.endswith(".journal") for j in journals))
        p = self.ok("run", "--no-track", cwd=project)
        self.assertNotIn("tracked at", p.stdout)

    def all_runs(self, server, experiment):
        """Every run of the experiment named `experiment` on `server`, with its tags."""
        c = server.client()
        exp = c.get("/api/2.0/mlflow/experiments/get-by-name",
                    {"experiment_name": experiment}).body["experiment"]["experiment_id"]
        runs, token = [], None
        while True:
            body = {"experiment_ids": [exp], "max_results": 1000}
            if token:
                body["page_token"] = token
            page = c.post("/api/2.0/mlflow/runs/search", body).body
            runs += [(r, {t["key"]: t["value"] for t in r["data"].get("tags", [])})
                     for r in page.get("runs", [])]
            token = page.get("next_page_token")
            if not token:
                return runs

    def test_a_server_down_for_the_whole_run_costs_no_time_and_sync_uploads_it_all(self):
        spare = tl.CairnServer(tl.CONFIG.cairn, os.path.join(self.root, "down-data"),
                               name="cairn (down)").start()
        port = spare.port
        spare.stop()
        home = os.path.join(self.root, "down-home")
        env = dict(self.env, CAIRN_TRACKING_URI="http://127.0.0.1:%d" % port, CAIRN_HOME=home)
        steps = 300
        project = self.project("name: down\nsteps:\n" + "".join(
            "  s%d: {run: 'true %d'%s}\n" % (i, i, ", needs: [s%d]" % (i - 1) if i else "")
            for i in range(steps)))
        started = time.monotonic()
        p = subprocess.run([tl.CONFIG.cairn, "pipeline", "run"], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
        took = time.monotonic() - started
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("`cairn sync` uploads them", p.stderr)
        # The client's retries at the start and at the end, not once per step.
        self.assertLess(took, 30, "a run with its server down took %.1f s" % took)
        journals = [j for j in os.listdir(os.path.join(home, "journal"))
                    if j.endswith(".journal")]
        self.assertEqual(len(journals), 1, "one journal for the pipeline run: %r" % journals)
        back = tl.CairnServer(tl.CONFIG.cairn, os.path.join(self.root, "down-data"), port=port,
                              name="cairn (back up)").start()
        try:
            p = subprocess.run([tl.CONFIG.cairn, "sync"], cwd=project, env=env,
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            runs = self.all_runs(back, "down")
            self.assertEqual(len(runs), steps + 1)
            self.assertEqual({r["info"]["status"] for r, _ in runs}, {"FINISHED"})
            self.assertEqual(sorted(t["cairn.step.id"] for _, t in runs if "cairn.step.id" in t),
                             sorted("s%d" % i for i in range(steps)))
            self.assertEqual(os.listdir(os.path.join(home, "journal")), [])
        finally:
            back.stop()

    def test_the_server_killed_mid_run_and_restarted_loses_nothing(self):
        data = os.path.join(self.root, "flaky-data")
        flaky = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (flaky)").start()
        port = flaky.port
        home = os.path.join(self.root, "flaky-home")
        env = dict(self.env, CAIRN_TRACKING_URI=flaky.url, CAIRN_HOME=home)
        project = self.project("name: flaky\nsteps:\n" + "".join(
            "  s%d: {run: 'sleep 0.3; echo step %d'%s}\n" % (
                i, i, ", needs: [s%d]" % (i - 1) if i else "") for i in range(12)))
        p = subprocess.Popen([tl.CONFIG.cairn, "pipeline", "run"], cwd=project, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: p.poll() is None and p.kill())
        time.sleep(1.2)
        flaky.kill()
        time.sleep(1.0)
        back = tl.CairnServer(tl.CONFIG.cairn, data, port=port, name="cairn (restarted)").start()
        try:
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 0, out + err)
            if "`cairn sync` uploads them" in err:
                s = subprocess.run([tl.CONFIG.cairn, "sync"], cwd=project, env=env,
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(s.returncode, 0, s.stdout + s.stderr)
            runs = self.all_runs(back, "flaky")
            self.assertEqual(len(runs), 13)
            self.assertEqual({r["info"]["status"] for r, _ in runs}, {"FINISHED"})
            for run, tags in runs:
                if "cairn.step.id" not in tags:
                    continue
                self.assertEqual(tags["cairn.step.state"], "done")
                log = back.client().get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"])
                self.assertEqual(log.text, "step %s\n" % tags["cairn.step.id"][1:])
        finally:
            back.stop()

    def test_a_thousand_step_run_keeps_few_files_open(self):
        # Each step counts the runner's open files (its parent's) when it runs.
        steps = 1000
        project = self.project("name: fds\nsteps:\n" + "".join(
            "  s%d: {run: 'ls /proc/$PPID/fd | wc -l >> fds.txt # %d'%s}\n" % (
                i, i, ", needs: [s%d]" % (i - 1) if i else "") for i in range(steps)))
        self.ok("run", cwd=project)
        with open(os.path.join(project, "fds.txt")) as f:
            counts = [int(line) for line in f.read().split()]
        self.assertEqual(len(counts), steps)
        self.assertLessEqual(max(counts), 64, "open files while steps ran: max %d" % max(counts))
        runs = self.all_runs(self.server, "fds")
        self.assertEqual(len(runs), steps + 1)

    def test_a_fan_out_runs_each_item_and_the_step_after_waits_for_all(self):
        project = self.project("""name: fan
params: {seeds: [1, 2, 3, 4]}
steps:
  train:
    foreach: ${params.seeds}
    # Each item waits until all four have started: run one after another, they never would.
    run: |
      touch started.${item}
      n=0
      while [ "$(ls started.* | wc -l)" -lt 4 ]; do
        n=$((n + 1)); if [ $n -gt 600 ]; then exit 9; fi; sleep 0.05
      done
      echo ${item} > out/${item}.txt
    outputs:
      - out/${item}.txt
  gather:
    needs: [train]
    run: cat out/*.txt | sort | tr '\\n' ' ' > all.txt
    outputs: [all.txt]
""", {"out/.keep": ""})
        p = self.ok("run", "--jobs", "4", "--cpus", "4", cwd=project)
        self.assertEqual(self.states(p.stdout),
                         {"train[1]": "done", "train[2]": "done", "train[3]": "done",
                          "train[4]": "done", "gather": "done"})
        with open(os.path.join(project, "all.txt")) as f:
            self.assertEqual(f.read(), "1 2 3 4 ")
        # Fewer seeds: the items that remain are cached; gather runs on the new set.
        p = self.ok("run", "-p", "seeds=2,3", cwd=project)
        self.assertEqual(self.states(p.stdout),
                         {"train[2]": "cached", "train[3]": "cached", "gather": "done"})

    def test_a_failing_step_is_retried_and_what_needs_it_is_skipped(self):
        project = self.project("""name: flaky
steps:
  flaky:
    run: echo try >> tries; test $(wc -l < tries) -ge 3
    retries: {limit: 2, backoff: 100ms}
  never:
    run: echo bad >&2; exit 7
    retries: 1
  after:
    needs: [never]
    run: touch after-ran
  other:
    run: touch other-ran
""")
        p = self.cairn("run", cwd=project)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("retry     flaky", p.stdout)
        states = self.states(p.stdout)
        self.assertEqual(states["flaky"], "done")
        self.assertEqual(states["never"], "failed")
        self.assertEqual(states["after"], "skipped")
        self.assertEqual(states["other"], "done")
        self.assertIn("exit code 7", p.stdout)
        self.assertIn("| bad", p.stdout, "the failed step's log is shown")
        with open(os.path.join(project, "tries")) as f:
            self.assertEqual(len(f.read().split()), 3)
        self.assertFalse(os.path.exists(os.path.join(project, "after-ran")))
        status = self.ok("status", self.last_run_id(project), cwd=project).stdout
        self.assertIn("failed      never", status)
        self.assertIn("2 of 4 steps did not complete", status)

    def test_a_timeout_kills_the_whole_process_group(self):
        project = self.project("""name: slow
steps:
  slow:
    run: (sleep 30; touch survived) & echo $! > child.pid; sleep 30
    timeout: 1s
""")
        started = time.monotonic()
        p = self.cairn("run", cwd=project)
        self.assertEqual(p.returncode, 1)
        self.assertLess(time.monotonic() - started, 10)
        self.assertIn("timed out after 1 s", p.stdout)
        with open(os.path.join(project, "child.pid")) as f:
            child = int(f.read())
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _alive(child):
            time.sleep(0.05)
        self.assertFalse(_alive(child), "the step's background child is killed too")

    def test_ctrl_c_stops_every_step_and_records_their_states(self):
        project = self.project("""name: stop
steps:
  a: {run: "touch a.started; sleep 67"}
  b: {run: "touch b.started; sleep 67"}
  after: {run: "true", needs: [a]}
""")
        runner = subprocess.Popen([tl.CONFIG.cairn, "pipeline", "run", "--jobs", "2",
                                   "--no-track"], cwd=project, env=self.env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not all(
                os.path.exists(os.path.join(project, s)) for s in ("a.started", "b.started")):
            time.sleep(0.05)
        started = time.monotonic()
        runner.send_signal(signal.SIGINT)
        out, err = runner.communicate(timeout=30)
        self.assertLess(time.monotonic() - started, 5, "the steps are killed, not waited for")
        self.assertEqual(runner.returncode, 130, out + err)
        self.assertEqual(self.states(out), {"a": "cancelled", "b": "cancelled",
                                            "after": "cancelled"})
        status = self.ok("status", self.last_run_id(project), cwd=project).stdout
        self.assertIn("cancelled   a", status)
        self.assertIn("cancelled   after", status)
        self.assertEqual(_processes_with("sleep\0" + "67"), [], "no step process survives")

    def test_validate_names_every_problem(self):
        project = self.project("""name: broken
params: {lr: 1}
steps:
  a: {run: "x ${params.rate}", needs: [b]}
  b: {run: y, needs: [a, ghost], inputs: [nothing-here.csv]}
  c: {run: z, outputs: [o.txt], retries: {limit: many}}
  d: {run: w, outputs: [o.txt]}
""")
        p = self.cairn("validate", cwd=project)
        self.assertEqual(p.returncode, 1)
        for problem in ("${params.rate} names no parameter", "no step is named ghost",
                        "cycle: a -> b -> a", "nothing-here.csv does not exist and no step "
                        "writes it", "steps c and d both write o.txt",
                        "steps.c.retries.limit: must be a whole number"):
            self.assertIn(problem, p.stderr)
        self.assertIn("6 problems", p.stderr)
        good = self.project(THREE_STEPS, {"raw/a.csv": "1\n"})
        p = self.ok("validate", cwd=good)
        self.assertIn("3 steps, no problems", p.stdout)

    def test_a_run_without_the_cache_resumes_without_it(self):
        project = self.project("""name: nocache
steps:
  a: {run: echo a > a.txt, outputs: [a.txt]}
  b: {run: test -f go && echo x >> runs-b && echo b > b.txt, outputs: [b.txt], needs: [a]}
""", {"go": ""})
        self.ok("run", "--no-track", cwd=project)  # b's outputs are in the cache now
        os.remove(os.path.join(project, "go"))
        failed = self.cairn("run", "--no-track", "--no-cache", cwd=project)
        self.assertEqual(failed.returncode, 1, failed.stdout + failed.stderr)
        self.assertEqual(self.states(failed.stdout), {"a": "done", "b": "failed"})
        open(os.path.join(project, "go"), "w").close()
        p = self.ok("resume", self.last_run_id(project), cwd=project)
        self.assertEqual(self.states(p.stdout), {"a": "kept", "b": "done"})
        self.assertEqual(self.runs_of(project, "b"), 2)

    def test_resume_after_the_runner_is_killed(self):
        project = self.project("""name: long
steps:
  first:
    run: echo x >> runs-first && echo 1 > first.txt
    outputs: [first.txt]
  second:
    needs: [first]
    run: echo x >> runs-second && touch second.started && sleep ${SLEEP:-60} && echo 2 > second.txt
    outputs: [second.txt]
  third:
    needs: [second]
    run: cat first.txt second.txt > third.txt
    outputs: [third.txt]
""")
        runner = subprocess.Popen([tl.CONFIG.cairn, "pipeline", "run"], cwd=project,
                                  env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        marker = os.path.join(project, "second.started")
        deadline = time.monotonic() + 30
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(marker), "the second step started")
        # While its runner lives, the run is running: a resume would race it and is refused.
        run_id = self.last_run_id(project)
        status = self.ok("status", run_id, cwd=project).stdout
        self.assertIn("running     second", status)
        self.assertIn("running (process %d)" % runner.pid, status)
        self.assertIn("1 done, 1 running", self.ok("ls", cwd=project).stdout)
        refused = self.cairn("resume", run_id, cwd=project)
        self.assertEqual(refused.returncode, 1, refused.stdout + refused.stderr)
        self.assertIn("is still running (process %d); stop it first" % runner.pid,
                      refused.stderr)
        self.assertEqual(self.runs_of(project, "second"), 1, "the live step was left alone")
        runner.send_signal(signal.SIGKILL)
        runner.communicate(timeout=30)
        status = self.ok("status", run_id, cwd=project).stdout
        self.assertIn("done        first", status)
        self.assertIn("interrupted second", status)
        self.assertIn("waiting     third", status)

        env = dict(self.env, SLEEP="0")
        p = subprocess.run([tl.CONFIG.cairn, "pipeline", "resume", run_id], cwd=project, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("stopped 1 step process group", p.stdout)
        self.assertEqual(self.states(p.stdout),
                         {"first": "kept", "second": "done", "third": "done"})
        self.assertEqual(self.runs_of(project, "first"), 1, "first is not run again")
        self.assertEqual(self.runs_of(project, "second"), 2)
        with open(os.path.join(project, "third.txt")) as f:
            self.assertEqual(f.read(), "1\n2\n")
        self.assertIn("complete", self.ok("status", run_id, cwd=project).stdout)


def _processes_with(text):
    """Pids of live processes whose NUL-separated command line contains `text`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/cmdline" % pid) as f:
                if text in f.read() and _alive(int(pid)):
                    found.append(int(pid))
        except OSError:
            pass
    return found


def run_id_of(output):
    return re.search(r"run ([0-9a-f]{32}) \(", output).group(1)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


if __name__ == "__main__":
    sys.exit(tl.main("pipeline", sys.modules[__name__]))
