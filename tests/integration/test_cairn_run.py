#!/usr/bin/env python3
"""`cairn run` against a real server: run status and the wrapper's exit code for exit 0, exit 3
and a signal; parameters and tags; the variables that let a child log into the same run (through
plain REST, as an MLflow client would); the console and process record as artifacts; Ctrl-C
forwarded to the command; Ctrl-Z and `fg` in an interactive shell.

Usage: test_cairn_run.py --cairn build/release/cairn
"""
import fcntl
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import termios
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"

# A child that logs a metric and a tag into the wrapper's run through the REST API, using only
# the variables `cairn run` sets.
REST_CHILD = r"""
import json, os, urllib.request
base = os.environ["MLFLOW_TRACKING_URI"]
assert os.environ["CAIRN_TRACKING_URI"] == base
assert os.environ["CAIRN_RUN_ID"] == os.environ["MLFLOW_RUN_ID"]
def post(path, body):
    req = urllib.request.Request(base + "/api/2.0/mlflow/" + path, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    urllib.request.urlopen(req).read()
run = os.environ["MLFLOW_RUN_ID"]
post("runs/log-batch", {"run_id": run, "metrics": [
    {"key": "loss", "value": 0.5 / (s + 1), "timestamp": 1, "step": s} for s in range(5)]})
post("runs/set-tag", {"run_id": run, "key": "experiment_seen",
                      "value": os.environ["MLFLOW_EXPERIMENT_ID"]})
print("logged", flush=True)
"""


class CairnRunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, data_dir = tl.make_temp_root("cairn-run-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (run)")
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.c = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def cairn_run(self, *args, env=None, cwd_override=None, **kw):
        full_env = dict(os.environ)
        full_env.pop("MLFLOW_TRACKING_URI", None)
        full_env["CAIRN_TRACKING_URI"] = self.server.url
        full_env.update(env or {})
        return subprocess.run([tl.CONFIG.cairn, "run", *args], env=full_env,
                              cwd=cwd_override or self.root,
                              capture_output=True, text=True, errors="replace", timeout=120,
                              **kw)

    def run_of(self, stderr):
        for line in stderr.splitlines():
            if line.startswith("cairn: run ") and " in experiment " in line:
                run_id = line.split()[2]
                r = self.c.get(API + "runs/get", {"run_id": run_id})
                self.assertEqual(r.status, 200, repr(r))
                return r.body["run"]
        self.fail("cairn run did not name its run:\n" + stderr)

    def tags(self, run):
        return {t["key"]: t["value"] for t in run["data"].get("tags", [])}

    def artifact(self, run, path):
        root = run["info"]["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
        r = self.c.get("/api/2.0/mlflow-artifacts/artifacts/%s/%s" % (root, path))
        self.assertEqual(r.status, 200, repr(r))
        return r.raw

    def test_success_records_params_tags_console_and_process(self):
        p = self.cairn_run("--experiment", "run-tests", "--name", "ok", "-p", "lr=0.01",
                           "-p", "layers=3", "--tag", "team=vision", "--",
                           "sh", "-c", "echo to-out; echo to-err >&2; exit 0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("to-out", p.stdout)  # passed through live
        self.assertIn("to-err", p.stderr)
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["status"], "FINISHED")
        self.assertEqual(run["info"]["run_name"], "ok")
        self.assertIn("end_time", run["info"])
        params = {x["key"]: x["value"] for x in run["data"]["params"]}
        self.assertEqual(params, {"lr": "0.01", "layers": "3"})
        tags = self.tags(run)
        self.assertEqual(tags["team"], "vision")
        self.assertEqual(tags["mlflow.source.type"], "LOCAL")
        self.assertEqual(tags["mlflow.runName"], "ok")
        self.assertEqual(tags["cairn.exit_code"], "0")
        self.assertEqual(tags["cairn.command"], "sh -c 'echo to-out; echo to-err >&2; exit 0'")
        self.assertTrue(tags["mlflow.user"])
        self.assertEqual(run["info"]["user_id"], tags["mlflow.user"])
        exp = self.c.get(API + "experiments/get-by-name", {"experiment_name": "run-tests"})
        self.assertEqual(run["info"]["experiment_id"], exp.body["experiment"]["experiment_id"])
        log = self.c.get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"])
        self.assertEqual(log.status, 200, repr(log))
        self.assertEqual(sorted(log.text.splitlines()), ["to-err", "to-out"])
        self.assertEqual(log.header("X-Cairn-Run-Status"), "FINISHED")
        chunks = self.c.get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"],
                            {"format": "json"}).body["chunks"]
        self.assertEqual({c["stream"] for c in chunks}, {"stdout", "stderr"})
        record = json.loads(self.artifact(run, "cairn/process.json"))
        self.assertEqual(record["command"], ["sh", "-c", "echo to-out; echo to-err >&2; exit 0"])
        self.assertEqual(os.path.realpath(record["cwd"]), os.path.realpath(self.root))
        self.assertIn("PATH", record["env_names"])
        # Host facts: this machine has no NVIDIA driver, which is a fact, not an error.
        host = json.loads(self.artifact(run, "cairn/host.json"))
        self.assertEqual(host["os"], "linux")
        self.assertGreater(host["cpu_cores"], 0)
        self.assertEqual(tags["cairn.host.os"], "linux")
        self.assertEqual(tags["cairn.host.kernel"], os.uname().release)
        self.assertEqual(int(tags["cairn.host.cpu_cores"]), host["cpu_cores"])
        if not shutil.which("nvidia-smi"):
            self.assertEqual(host["gpus"], [])
            self.assertEqual(tags["cairn.gpu.name"], "no GPU")
            self.assertEqual(tags["cairn.gpu.count"], "0")

    def test_code_state_of_a_dirty_repository(self):
        repo = os.path.join(self.root, "repo")
        os.makedirs(repo)

        def git(*args):
            subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
        git("init", "-q", "-b", "main")
        git("config", "user.email", "t@example.com")
        git("config", "user.name", "t")
        git("remote", "add", "origin", "https://bob:hunter2@git.example.com/ml/repo.git")
        with open(os.path.join(repo, "train.py"), "w") as f:
            f.write("lr = 0.1\n")
        git("add", "-A")
        git("commit", "-q", "-m", "first")
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True,
                                capture_output=True, text=True).stdout.strip()
        with open(os.path.join(repo, "train.py"), "w") as f:
            f.write("lr = 0.2\n")
        with open(os.path.join(repo, "untracked.py"), "w") as f:
            f.write("extra = True\n")
        p = self.cairn_run("--", "true", cwd_override=repo)
        self.assertEqual(p.returncode, 0, p.stderr)
        run = self.run_of(p.stderr)
        tags = self.tags(run)
        self.assertEqual(tags["mlflow.source.git.commit"], commit)
        self.assertEqual(tags["mlflow.source.git.branch"], "main")
        self.assertEqual(tags["mlflow.source.git.repoURL"], "https://git.example.com/ml/repo.git")
        self.assertEqual(tags["cairn.git.dirty"], "true")
        diff = self.artifact(run, "cairn/code.diff").decode()
        self.assertIn("+lr = 0.2", diff)
        self.assertIn("+extra = True", diff)
        self.assertNotIn("hunter2", json.dumps(run))
        code = json.loads(self.artifact(run, "cairn/code.json"))
        self.assertEqual(code["commit"], commit)
        self.assertTrue(code["dirty"])

    def test_console_streams_while_the_command_runs(self):
        # The command prints, then waits until the line is on the server: only a log that is
        # uploaded while the command runs lets it finish.
        child = r"""
import json, os, sys, time, urllib.request
print("epoch 1 of 2, \u00fc \U0001F600", flush=True)
sys.stdout.buffer.write(b"bad byte \xff\n"); sys.stdout.flush()
url = "%s/api/cairn/v1/runs/%s/log" % (os.environ["CAIRN_TRACKING_URI"], os.environ["CAIRN_RUN_ID"])
for _ in range(100):
    if "epoch 1 of 2" in urllib.request.urlopen(url).read().decode():
        print("seen on the server", flush=True)
        break
    time.sleep(0.1)
"""
        p = self.cairn_run("--", sys.executable, "-c", child)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("seen on the server", p.stdout)
        run = self.run_of(p.stderr)
        log = self.c.get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"]).raw.decode()
        self.assertEqual(log, "epoch 1 of 2, \u00fc \U0001F600\nbad byte \ufffd\n"
                              "seen on the server\n")
        tail = self.c.get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"], {"offset": 6})
        self.assertEqual(tail.raw.decode(), log.encode()[6:].decode())
        self.assertEqual(int(tail.header("X-Cairn-Log-Next-Offset")), len(log.encode()))

    def test_cairn_logs_prints_and_follows(self):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url)
        child = "import time\nfor i in range(3):\n    print('step', i, flush=True)\n    time.sleep(0.7)"
        proc = subprocess.Popen([tl.CONFIG.cairn, "run", "--", sys.executable, "-c", child],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline().strip(), "step 0")
        run_id = None
        for line in iter(proc.stderr.readline, ""):
            if line.startswith("cairn: run ") and " in experiment " in line:
                run_id = line.split()[2]
                break
        self.assertIsNotNone(run_id)
        # Started while the run is going, -f ends by itself when the run does.
        follow = subprocess.run([tl.CONFIG.cairn, "logs", "-f", run_id], env=env,
                                capture_output=True, text=True, timeout=60)
        proc.communicate(timeout=60)
        self.assertEqual(follow.returncode, 0, follow.stderr)
        self.assertEqual(follow.stdout, "step 0\nstep 1\nstep 2\n")
        once = subprocess.run([tl.CONFIG.cairn, "logs", run_id], env=env, capture_output=True,
                              text=True, timeout=60)
        self.assertEqual(once.stdout, "step 0\nstep 1\nstep 2\n")
        missing = subprocess.run([tl.CONFIG.cairn, "logs", "nope"], env=env, capture_output=True,
                                 text=True, timeout=60)
        self.assertEqual(missing.returncode, 1)
        self.assertIn("not found", missing.stderr)

    def test_system_metrics_and_python_environment(self):
        child = "import time\nt = time.time()\nwhile time.time() - t < 2.5: pass"
        p = self.cairn_run("--system-metrics-interval", "1", "--", sys.executable, "-c", child)
        self.assertEqual(p.returncode, 0, p.stderr)
        run = self.run_of(p.stderr)
        metrics = {m["key"]: m for m in run["data"]["metrics"]}
        for key in ("system/cpu_utilization_percentage", "system/process_cpu_percentage",
                    "system/process_memory_rss_megabytes", "system/system_memory_usage_megabytes"):
            self.assertIn(key, metrics)
        self.assertGreater(metrics["system/process_memory_rss_megabytes"]["value"], 1)
        self.assertGreaterEqual(metrics["system/cpu_utilization_percentage"]["step"], 1)
        # The command is a Python interpreter: its packages are the ones recorded.
        tags = self.tags(run)
        self.assertEqual(tags["cairn.python.version"], "%d.%d.%d" % sys.version_info[:3])
        lock = self.artifact(run, "cairn/environment/pylock.toml").decode()
        self.assertIn('lock-version = "1.0"', lock)
        self.assertIn('requires-python = "==%d.%d.%d"' % sys.version_info[:3], lock)
        import hashlib
        self.assertEqual(tags["cairn.env.hash"], hashlib.sha256(lock.encode()).hexdigest())
        self.assertIn("cairn.heartbeat", tags)

    def example(self):
        path = os.path.join(os.path.dirname(tl.CONFIG.cairn), "cairn_example_train")
        if not os.path.exists(path):
            self.skipTest("cairn_example_train is not built next to cairn")
        return path

    def test_cpp_client_example_logs_its_own_run(self):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url)
        for name in ("CAIRN_RUN_ID", "MLFLOW_RUN_ID"):
            env.pop(name, None)
        p = subprocess.run([self.example(), "--steps", "1500"], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        run_id = p.stdout.split()[1].rstrip(":")
        run = self.c.get(API + "runs/get", {"run_id": run_id}).body["run"]
        self.assertEqual(run["info"]["status"], "FINISHED")
        params = {x["key"]: x["value"] for x in run["data"]["params"]}
        self.assertEqual(params["steps"], "1500")
        history = self.c.get(API + "metrics/get-history",
                             {"run_id": run_id, "metric_key": "loss"}).body["metrics"]
        self.assertEqual(sorted(m["step"] for m in history), list(range(1500)))
        metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
        self.assertAlmostEqual(metrics["w"], 3, delta=0.1)
        self.assertIn(b"w ", self.artifact(run, "model/weights.txt"))

    def test_cpp_client_example_under_cairn_run_attaches(self):
        p = self.cairn_run("--experiment", "cpp-under-run", "--", self.example(), "--steps", "50")
        self.assertEqual(p.returncode, 0, p.stderr)
        run = self.run_of(p.stderr)
        self.assertEqual(p.stdout.split()[1].rstrip(":"), run["info"]["run_id"])
        self.assertEqual(run["info"]["status"], "FINISHED")
        self.assertEqual(self.tags(run)["example"], "train_loop")
        history = self.c.get(API + "metrics/get-history",
                             {"run_id": run["info"]["run_id"], "metric_key": "loss"})
        self.assertEqual(len(history.body["metrics"]), 50)
        exp_id = self.c.get(API + "experiments/get-by-name",
                            {"experiment_name": "cpp-under-run"}).body["experiment"]
        runs = self.c.post(API + "runs/search", {"experiment_ids": [exp_id["experiment_id"]]})
        self.assertEqual(len(runs.body["runs"]), 1)  # the example made no run of its own

    def test_run_id_records_into_a_scheduled_run(self):
        exp = self.c.post(API + "experiments/create", {"name": "attach-here"}).body
        created = self.c.post(API + "runs/create", {
            "experiment_id": exp["experiment_id"], "run_name": "queued-train",
            "tags": [{"key": "team", "value": "vision"}]}).body["run"]["info"]
        run_id = created["run_id"]
        r = self.c.post(API + "runs/update", {"run_id": run_id, "status": "SCHEDULED"})
        self.assertEqual(r.status, 200, r)
        p = self.cairn_run("--run-id", run_id, "-p", "lr=0.5", "--", "sh", "-c",
                           'echo "attached $CAIRN_RUN_ID $MLFLOW_EXPERIMENT_ID"')
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "attached %s %s\n" % (run_id, exp["experiment_id"]))
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["run_id"], run_id)
        self.assertEqual(run["info"]["status"], "FINISHED")
        self.assertEqual(run["info"]["run_name"], "queued-train")
        self.assertEqual(self.tags(run)["team"], "vision", "its own tags stay")
        self.assertIn("cairn.host.os", self.tags(run))
        self.assertEqual({x["key"]: x["value"] for x in run["data"]["params"]}, {"lr": "0.5"})
        runs = self.c.post(API + "runs/search", {"experiment_ids": [exp["experiment_id"]]})
        self.assertEqual(len(runs.body["runs"]), 1, "no second run")
        p = self.cairn_run("--run-id", run_id, "--", "touch", "ran")
        self.assertEqual(p.returncode, 2)
        self.assertIn("has ended (FINISHED)", p.stderr)
        p = self.cairn_run("--run-id", "not-an-id", "--", "touch", "ran")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("32 lowercase hex digits", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "ran")), "the command never ran")

    def test_a_refused_record_does_not_hold_back_the_end_of_the_run(self):
        p = self.cairn_run("-p", "bad key!=1", "--", "sh", "-c", "echo hello")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("refused a record", p.stderr)
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["status"], "FINISHED")
        log = self.c.get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"]).text
        self.assertEqual(log, "hello\n")

    def test_a_closed_output_pipe_does_not_stop_the_recording(self):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url)
        p = subprocess.run(
            ["sh", "-c", "'%s' run -- sh -c 'for i in $(seq 1 3000); do echo line $i; done' "
             "| head -1" % tl.CONFIG.cairn], env=env, cwd=self.root, capture_output=True,
            text=True, timeout=120)
        self.assertEqual(p.stdout, "line 1\n")
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["status"], "FINISHED")
        log = self.c.get("/api/cairn/v1/runs/%s/log" % run["info"]["run_id"]).text
        self.assertEqual(len(log.splitlines()), 3000)

    def test_exit_code_3_fails_the_run(self):
        p = self.cairn_run("--", "sh", "-c", "exit 3")
        self.assertEqual(p.returncode, 3)
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["status"], "FAILED")
        self.assertEqual(self.tags(run)["cairn.exit_code"], "3")

    def test_signal_kills_the_run(self):
        p = self.cairn_run("--", "sh", "-c", "kill -KILL $$")
        self.assertEqual(p.returncode, 128 + signal.SIGKILL)
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["status"], "KILLED")
        self.assertEqual(self.tags(run)["cairn.exit_signal"], str(int(signal.SIGKILL)))

    def test_interrupt_is_forwarded_to_the_command(self):
        full_env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url)
        # One process that prints and then waits: a shell could take the interrupt between
        # its echo and starting sleep, and then wait for sleep.
        child = "import time; print('started', flush=True); time.sleep(60)"
        proc = subprocess.Popen(
            [tl.CONFIG.cairn, "run", "--", sys.executable, "-c", child],
            env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.assertEqual(proc.stdout.readline().strip(), "started")
        t = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        self.assertLess(time.monotonic() - t, 10, "the command did not get the interrupt")
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertEqual(self.run_of(err)["info"]["status"], "KILLED")

    def test_ctrl_z_stops_the_job_and_fg_resumes_it(self):
        shell = InteractiveShell(dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                                      CAIRN_HOME=self.root), self.root)
        self.addCleanup(shell.close)
        shell.type("%s run --system-metrics-interval 0 -- %s -c \"import sys\n"
                   "for l in sys.stdin: print('got', l.strip(), flush=True)\"\n"
                   % (tl.CONFIG.cairn, sys.executable))
        run_id = shell.expect(r"cairn: run ([0-9a-f]{32}) ").group(1)
        shell.type("first\n")  # the command has the terminal: it reads what is typed
        shell.expect(r"got first")
        shell.type("\x1a")  # Ctrl-Z: the shell must get its terminal back
        shell.expect(r"Stopped")
        shell.type("echo shell-$((40+2))\n")
        shell.expect(r"shell-42")
        self.assertEqual(self.c.get(API + "runs/get", {"run_id": run_id})
                         .body["run"]["info"]["status"], "RUNNING")
        shell.type("fg\n")
        shell.type("second\n")
        shell.expect(r"got second")
        shell.type("\x04")  # end of input: the command ends, and the run with it
        shell.expect(r"cairn: run %s FINISHED" % run_id)
        shell.type("echo status-$((0+$?))\n")
        shell.expect(r"status-0")
        run = self.c.get(API + "runs/get", {"run_id": run_id}).body["run"]
        self.assertEqual(run["info"]["status"], "FINISHED")
        log = self.c.get("/api/cairn/v1/runs/%s/log" % run_id).text
        self.assertEqual(log, "got first\ngot second\n")

    def test_child_logs_into_the_same_run_over_rest(self):
        p = self.cairn_run("--experiment", "run-tests", "--", sys.executable, "-c", REST_CHILD)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("logged", p.stdout)
        run = self.run_of(p.stderr)
        self.assertEqual(self.tags(run)["experiment_seen"], run["info"]["experiment_id"])
        history = self.c.get(API + "metrics/get-history",
                             {"run_id": run["info"]["run_id"], "metric_key": "loss"})
        self.assertEqual([m["step"] for m in history.body["metrics"]], [0, 1, 2, 3, 4])
        self.assertEqual(run["info"]["status"], "FINISHED")

    def test_options_after_the_command_belong_to_it(self):
        p = self.cairn_run("-p", "a=1", sys.executable, "-c",
                           "import sys; print(sys.argv[1:])", "-p", "--", "x")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "['-p', '--', 'x']")

    def test_missing_command_is_127_and_a_failed_run(self):
        p = self.cairn_run("--", "no-such-command-anywhere")
        self.assertEqual(p.returncode, 127)
        self.assertIn("command not found: no-such-command-anywhere", p.stderr)
        run = self.run_of(p.stderr)
        self.assertEqual(run["info"]["status"], "FAILED")
        self.assertIn("not found", self.tags(run)["cairn.error"])

    def test_usage_errors(self):
        self.assertEqual(self.cairn_run().returncode, 2)
        p = self.cairn_run("-p", "novalue", "--", "true")
        self.assertEqual(p.returncode, 2)
        self.assertIn("-p takes key=value", p.stderr)

    def test_unreachable_server_runs_the_command_and_keeps_the_records(self):
        home = os.path.join(self.root, "unreachable-home")
        p = self.cairn_run("--tracking-uri", "http://127.0.0.1:9", "--", "sh", "-c", "exit 4",
                           env={"CAIRN_HOME": home})
        self.assertEqual(p.returncode, 4)  # the command ran, and its code is the wrapper's
        self.assertIn("the tracking server at http://127.0.0.1:9 cannot be reached", p.stderr)
        self.assertIn("`cairn sync`", p.stderr)
        self.assertEqual(len([f for f in os.listdir(os.path.join(home, "journal"))
                              if f.endswith(".journal")]), 1)
        bad = self.cairn_run("--tracking-uri", "ftp://example.com", "--", "true")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("tracking URI must start with http://", bad.stderr)


class HeartbeatTest(unittest.TestCase):
    """A server that fails runs after 3 s without a heartbeat."""

    def setUp(self):
        self.root, data_dir = tl.make_temp_root("cairn-heartbeat-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (heartbeat)",
                                     extra_args=["--run-heartbeat-timeout", "3"])
        tl.add_diagnostic(self.server.log_tail)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.c = self.server.client()

    def status(self, run_id):
        return self.c.get(API + "runs/get", {"run_id": run_id}).body["run"]

    def test_a_killed_wrapper_fails_its_run_and_others_are_left_alone(self):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url)
        child = "import os, time; print('up', os.getpid(), flush=True); time.sleep(60)"
        wrapper = subprocess.Popen(
            [tl.CONFIG.cairn, "run", "--heartbeat-interval", "1", "--", sys.executable, "-c",
             child], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(wrapper.kill)
        up, child_pid = wrapper.stdout.readline().split()
        self.assertEqual(up, "up")
        # The command outlives its killed wrapper (it has a process group of its own).
        self.addCleanup(lambda: os.kill(int(child_pid), signal.SIGKILL))
        run_id = None
        for line in iter(wrapper.stderr.readline, ""):
            if " in experiment " in line:
                run_id = line.split()[2]
                break
        # A plain MLflow run has no heartbeat and must never be failed for it.
        plain = self.c.post(API + "runs/create", {"experiment_id": "0"}).body["run"]["info"]
        time.sleep(5)  # beyond the timeout, with heartbeats coming every second
        self.assertEqual(self.status(run_id)["info"]["status"], "RUNNING")
        wrapper.kill()  # the wrapper dies; its command (own process group) lives on
        wrapper.wait()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.status(run_id)["info"]["status"] == "RUNNING":
            time.sleep(0.5)
        run = self.status(run_id)
        self.assertEqual(run["info"]["status"], "FAILED")
        reason = {t["key"]: t["value"] for t in run["data"]["tags"]}["cairn.failure_reason"]
        self.assertIn("no heartbeat", reason)
        beat = {t["key"]: t["value"] for t in run["data"]["tags"]}["cairn.heartbeat"]
        self.assertEqual(int(run["info"]["end_time"]), int(beat))
        self.assertEqual(self.status(plain["run_id"])["info"]["status"], "RUNNING")
        # Its owner ends it after all (it was only cut off): the reason no longer holds.
        ended = self.c.post(API + "runs/update", {"run_id": run_id, "status": "FINISHED",
                                                  "end_time": tl.now_ms()})
        self.assertEqual(ended.status, 200, repr(ended))
        run = self.status(run_id)
        self.assertEqual(run["info"]["status"], "FINISHED")
        self.assertNotIn("cairn.failure_reason", {t["key"] for t in run["data"]["tags"]})


class InteractiveShell:
    """bash with job control on a pseudo-terminal of its own, typed into as a person would."""

    def __init__(self, env, cwd):
        self.master, slave = os.openpty()

        def take_terminal():
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        env = dict(env, PS1="$ ", TERM="dumb", HISTFILE="/dev/null")
        self.proc = subprocess.Popen(["bash", "--norc", "--noprofile", "-i"], stdin=slave,
                                     stdout=slave, stderr=slave, env=env, cwd=cwd,
                                     preexec_fn=take_terminal)
        os.close(slave)
        self.seen = ""

    def type(self, text):
        os.write(self.master, text.encode())

    def expect(self, pattern, timeout=30):
        """Waits for `pattern` in the output after what earlier expects consumed."""
        deadline = time.monotonic() + timeout
        while True:
            m = re.search(pattern, self.seen)
            if m:
                self.seen = self.seen[m.end():]
                return m
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                raise AssertionError("no %r in the terminal within %d s; it shows:\n%s"
                                     % (pattern, timeout, self.seen))
            try:
                self.seen += os.read(self.master, 65536).decode(errors="replace")
            except OSError:
                raise AssertionError("the terminal closed; it showed:\n" + self.seen)

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self.master)


class OutageTest(unittest.TestCase):
    """The tracking server goes away while a run is going on."""

    CHILD = r"""
import sys, time
sys.path.insert(0, %r)
import cairn
with cairn.start_run() as run:
    for i in range(12):
        print("line", i, flush=True)
        run.log_metric("m", i, step=i)
        time.sleep(0.4)
"""

    def setUp(self):
        self.root, data_dir = tl.make_temp_root("cairn-outage-")
        self.addCleanup(shutil.rmtree, self.root, True)
        self.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (outage)")
        tl.add_diagnostic(self.server.log_tail)
        self.server.start()
        self.server.requested_port = self.server.port  # clients must find it again
        self.addCleanup(lambda: self.server.running() and self.server.stop())
        self.env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url, CAIRN_HOME=self.root)
        python_dir = os.path.join(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__)))), "python")
        self.child = self.CHILD % python_dir

    def start_wrapper(self):
        proc = subprocess.Popen(
            [tl.CONFIG.cairn, "run", "--system-metrics-interval", "1", "--", sys.executable,
             "-c", self.child], env=self.env, cwd=self.root, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline().strip(), "line 0")
        return proc

    def check_complete(self, run_id):
        c = self.server.client()
        run = c.get(API + "runs/get", {"run_id": run_id}).body["run"]
        self.assertEqual(run["info"]["status"], "FINISHED")
        log = c.get("/api/cairn/v1/runs/%s/log" % run_id).text
        self.assertEqual(log, "".join("line %d\n" % i for i in range(12)))
        steps = [m["step"] for m in c.get(API + "metrics/get-history",
                                          {"run_id": run_id, "metric_key": "m"}).body["metrics"]]
        self.assertEqual(steps, list(range(12)))
        keys = {m["key"] for m in run["data"]["metrics"]}
        self.assertIn("system/system_memory_usage_megabytes", keys)
        return run

    def run_id_of(self, stderr):
        for line in stderr.splitlines():
            if " in experiment " in line:
                return line.split()[2]
        self.fail("no run id in:\n" + stderr)

    def pending_in_journal(self, run_id):
        """Records of the run's journal the server has not acknowledged (the header aside)."""
        base = os.path.join(self.root, "journal", run_id)
        with open(base + ".journal") as f:
            records = [line for line in f if not line.startswith('{"cairn_journal":')]
        try:
            with open(base + ".sent") as f:
                sent = int(f.read() or 0)
        except FileNotFoundError:
            sent = 0
        return len(records) - sent

    def test_server_stopped_and_restarted_mid_run_loses_nothing(self):
        proc = self.start_wrapper()
        run_id = None
        while run_id is None:
            line = proc.stderr.readline()
            self.assertTrue(line, "cairn run ended before naming its run")
            if " in experiment " in line:
                run_id = line.split()[2]
        self.assertEqual(proc.stdout.readline().strip(), "line 1")
        self.server.stop()
        # The command goes on printing and logging; what the wrapper cannot deliver waits in
        # its journal (the cairn client in the command keeps its own queue meanwhile).
        deadline = time.monotonic() + 20
        while self.pending_in_journal(run_id) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertGreaterEqual(self.pending_in_journal(run_id), 3)
        self.server.start()
        out, err = proc.communicate(timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.check_complete(run_id)
        # Delivered and ended: the journal is gone ($CAIRN_HOME/journal).
        self.assertEqual(os.listdir(os.path.join(self.root, "journal")), [])

    def test_run_started_while_the_server_is_down_is_created_when_it_is_back(self):
        self.server.stop()
        proc = subprocess.Popen(
            [tl.CONFIG.cairn, "run", "--experiment", "offline", "-p", "lr=0.1", "--", sys.executable,
             "-c", "import sys\nprint('line 0', flush=True)\nsys.stdin.readline()\n" +
             "\n".join("print('line %d')" % i for i in range(1, 12))],
            env=self.env, cwd=self.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline().strip(), "line 0")  # it runs without a server
        self.server.start()
        out, err = proc.communicate("go\n", timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("cannot be reached", err)
        run_id = self.run_id_of(err)
        c = self.server.client()
        run = c.get(API + "runs/get", {"run_id": run_id}).body["run"]
        self.assertEqual(run["info"]["status"], "FINISHED")
        exp = c.get(API + "experiments/get-by-name", {"experiment_name": "offline"}).body
        self.assertEqual(run["info"]["experiment_id"], exp["experiment"]["experiment_id"])
        self.assertEqual({p["key"]: p["value"] for p in run["data"]["params"]}, {"lr": "0.1"})
        log = c.get("/api/cairn/v1/runs/%s/log" % run_id).text
        self.assertEqual(log, "".join("line %d\n" % i for i in range(12)))
        process = c.get("/api/2.0/mlflow-artifacts/artifacts/%s/%s/artifacts/cairn/process.json"
                        % (run["info"]["experiment_id"], run_id))
        self.assertEqual(process.status, 200, repr(process))

    def test_records_left_at_exit_are_uploaded_by_cairn_sync(self):
        proc = subprocess.Popen(
            [tl.CONFIG.cairn, "run", "--", sys.executable, "-c",
             "import time, sys\nprint('line 0', flush=True)\nsys.stdin.readline()\n" +
             "\n".join("print('line %d')" % i for i in range(1, 12))],
            env=self.env, cwd=self.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline().strip(), "line 0")
        self.server.stop()
        out, err = proc.communicate("go\n", timeout=120)
        self.assertEqual(proc.returncode, 0, err)
        self.assertIn("cairn sync", err)
        run_id = self.run_id_of(err)
        # Another server does not get the run's records: they wait for their own.
        other = subprocess.run([tl.CONFIG.cairn, "sync", "--tracking-uri", "http://127.0.0.1:9"],
                               env=self.env, cwd=self.root, capture_output=True, text=True,
                               timeout=60)
        self.assertEqual(other.returncode, 0, other.stdout + other.stderr)
        self.assertIn("1 run(s) wait for the tracking server at %s" % self.server.url,
                      other.stdout)
        self.server.start()
        sync = subprocess.run([tl.CONFIG.cairn, "sync"], env=self.env, cwd=self.root,
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(sync.returncode, 0, sync.stdout + sync.stderr)
        self.assertIn("run %s:" % run_id, sync.stdout)
        c = self.server.client()
        run = c.get(API + "runs/get", {"run_id": run_id}).body["run"]
        self.assertEqual(run["info"]["status"], "FINISHED")
        log = c.get("/api/cairn/v1/runs/%s/log" % run_id).text
        self.assertEqual(log, "".join("line %d\n" % i for i in range(12)))
        again = subprocess.run([tl.CONFIG.cairn, "sync"], env=self.env, cwd=self.root,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(again.returncode, 0)
        self.assertIn("nothing to upload", again.stdout)


if __name__ == "__main__":
    sys.exit(tl.main("cairn_run", sys.modules[__name__]))
