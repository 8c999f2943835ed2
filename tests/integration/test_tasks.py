#!/usr/bin/env python3
"""Tasks, queues and agents through cairn's REST API: a task queued as a SCHEDULED run, leased
by an agent only where its environment can run, renewed and finished with its run; a lost
agent's attempt failed with "agent lost" and the task queued again in a new run; cancel and
move; the `cairn task` and `cairn queue` commands; `cairn agent` running tasks, stopping a
cancelled one, a SIGKILLed agent's task finished by another, and a CUDA 12 task placed only on
the agent whose (recorded) host runs it; `cairn run --queue` shipping a repository's code
snapshot and environment lock to an agent that cannot see the repository; `cairn reproduce`
giving a deterministic, a noisy and an environment-dependent script their verdicts, and
`cairn clone`; and, with --auth on, agent calls only for service accounts, tasks shown only
to those who may read their experiment, and a team over its GPU quota waiting while another
team runs.

Usage: test_tasks.py --cairn build/release/cairn
"""
import base64
import json
import os
import re
import subprocess
import shutil
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
import cairn_testlib as tl  # noqa: E402
import wheels  # noqa: E402

API = "/api/2.0/mlflow/"
CAIRN = "/api/cairn/v1/"
CUDA12_HOST = {"os": "linux", "glibc": "2.36", "driver_version": "535.104.05",
               "cuda_driver_version": "12.2",
               "gpus": [{"index": 0, "name": "NVIDIA A100", "compute_capability": "8.0",
                         "driver_version": "535.104.05"}]}
CUDA11_HOST = dict(CUDA12_HOST, driver_version="470.199.02", cuda_driver_version="11.4")
CPU_HOST = {"os": "linux", "glibc": "2.36", "gpu_note": "nvidia-smi not found"}


def basic_auth(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


class TasksTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, data = tl.make_temp_root("cairn-tasks-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (tasks)").start()
        tl.add_diagnostic(cls.server.log_tail)
        cls.c = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def ok(self, r):
        self.assertEqual(r.status, 200, "%s %s" % (r.status, r.text[:500]))
        return r.body

    def enqueue(self, queue, **extra):
        body = {"queue": queue, "run_name": "train",
                "spec": {"command": ["python", "train.py"], "params": {"lr": "0.1"}}}
        body.update(extra)
        return self.ok(self.c.post(CAIRN + "tasks", body))["task"]

    def lease(self, agent, queues, host, gpus=(), lease_ms=30000):
        return self.ok(self.c.post(CAIRN + "agents/lease", {
            "agent": agent, "queues": queues, "free_gpus": list(gpus), "host": host,
            "lease_ms": lease_ms})).get("task")

    def run_of(self, run_id):
        return self.ok(self.c.get(API + "runs/get", {"run_id": run_id}))["run"]

    def tags(self, run):
        return {t["key"]: t["value"] for t in run["data"].get("tags", [])}

    def test_a_task_runs_where_its_environment_can_and_ends_with_its_run(self):
        task = self.enqueue("gpu-a", needs={"gpus": 1}, requirements={"cuda": "12"})
        self.assertEqual(task["state"], "queued")
        self.assertEqual(task["spec"]["params"], {"lr": "0.1"})
        run = self.run_of(task["run_id"])
        self.assertEqual(run["info"]["status"], "SCHEDULED")
        self.assertEqual(self.tags(run)["cairn.task.id"], task["id"])

        self.ok(self.c.post(CAIRN + "agents", {"id": "old-gpu", "queues": ["gpu-a"],
                                               "gpus": ["0"], "host": CUDA11_HOST}))
        self.assertIsNone(self.lease("old-gpu", ["gpu-a"], CUDA11_HOST, ["0"]),
                          "a CUDA 11 driver cannot run a CUDA 12 build")
        self.assertIsNone(self.lease("cpu", ["gpu-a"], CPU_HOST, ["0"]))
        self.assertIsNone(self.lease("busy", ["gpu-a"], CUDA12_HOST, []), "no free GPU")
        leased = self.lease("new-gpu", ["gpu-a"], CUDA12_HOST, ["0"])
        self.assertEqual(leased["id"], task["id"])
        self.assertEqual(leased["gpus"], "0")
        self.assertEqual(leased["attempt"], 1)
        self.assertEqual(self.run_of(task["run_id"])["info"]["status"], "RUNNING")

        renewed = self.ok(self.c.post(CAIRN + "agents/renew", {
            "task_id": task["id"], "agent": "new-gpu", "attempt": 1}))["task"]
        self.assertFalse(renewed["cancel_requested"])
        r = self.c.post(CAIRN + "agents/renew", {"task_id": task["id"], "agent": "old-gpu",
                                                 "attempt": 1})
        self.assertEqual(r.status, 400, r.text)
        self.assertIn("no longer held by agent old-gpu", r.text)
        done = self.ok(self.c.post(CAIRN + "agents/finish", {
            "task_id": task["id"], "agent": "new-gpu", "attempt": 1, "state": "done",
            "reason": "exit code 0"}))["task"]
        self.assertEqual(done["state"], "done")
        self.assertEqual(self.run_of(task["run_id"])["info"]["status"], "FINISHED")

        agents = self.ok(self.c.get(CAIRN + "agents"))["agents"]
        self.assertIn("old-gpu", [a["id"] for a in agents])
        queues = {q["name"]: q for q in self.ok(self.c.get(CAIRN + "queues"))["queues"]}
        self.assertEqual(queues["gpu-a"]["queued"], 0)

    def test_a_lost_agents_task_runs_again_in_a_new_run(self):
        task = self.enqueue("lost-q", max_attempts=2)
        leased = self.lease("doomed", ["lost-q"], CPU_HOST, lease_ms=1000)
        self.assertEqual(leased["id"], task["id"])
        deadline = time.time() + 15
        while time.time() < deadline:
            now = self.ok(self.c.get(CAIRN + "tasks/" + task["id"]))["task"]
            if now["state"] == "queued":
                break
            time.sleep(0.2)
        self.assertEqual(now["state"], "queued", now)
        self.assertIn("agent lost", now["reason"])
        self.assertNotEqual(now["run_id"], task["run_id"])
        dead = self.run_of(task["run_id"])
        self.assertEqual(dead["info"]["status"], "FAILED")
        self.assertIn("agent lost", self.tags(dead)["cairn.failure_reason"])
        fresh = self.run_of(now["run_id"])
        self.assertEqual(fresh["info"]["status"], "SCHEDULED")
        self.assertEqual(self.tags(fresh)["cairn.task.previous_run"], task["run_id"])
        r = self.c.post(CAIRN + "agents/finish", {"task_id": task["id"], "agent": "doomed",
                                                  "attempt": 1, "state": "done"})
        self.assertEqual(r.status, 400, "the lost agent's attempt is gone")
        again = self.lease("other", ["lost-q"], CPU_HOST)
        self.assertEqual((again["id"], again["attempt"]), (task["id"], 2))

    def test_priority_cancel_and_move(self):
        low = self.enqueue("prio-q")
        high = self.enqueue("prio-q", priority=5)
        listed = self.ok(self.c.get(CAIRN + "tasks", {"queue": "prio-q"}))["tasks"]
        self.assertEqual([t["id"] for t in listed], [high["id"], low["id"]])
        cancelled = self.ok(self.c.post(CAIRN + "tasks/%s/cancel" % low["id"], {}))["task"]
        self.assertEqual(cancelled["state"], "cancelled")
        self.assertEqual(self.run_of(low["run_id"])["info"]["status"], "KILLED")
        moved = self.ok(self.c.post(CAIRN + "tasks/%s/move" % high["id"],
                                    {"queue": "other-q", "priority": 1}))["task"]
        self.assertEqual((moved["queue"], moved["priority"]), ("other-q", 1))
        self.assertIsNone(self.lease("a", ["prio-q"], CPU_HOST))
        self.assertEqual(self.lease("a", ["other-q"], CPU_HOST)["id"], high["id"])
        r = self.c.post(CAIRN + "tasks/%s/move" % high["id"], {"queue": "prio-q"})
        self.assertEqual(r.status, 400, "a running task stays where it is")

    def cli(self, *args):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url, COLUMNS="200")
        env.pop("MLFLOW_TRACKING_URI", None)
        return subprocess.run([tl.CONFIG.cairn, *args], env=env, capture_output=True, text=True,
                              timeout=60)

    def test_the_task_and_queue_commands(self):
        first = self.enqueue("cli-q", needs={"gpus": 2})
        second = self.enqueue("cli-q", priority=3)
        p = self.cli("task", "ls", "--queue", "cli-q")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertTrue(lines[0].startswith("TASK"), p.stdout)
        self.assertEqual([l.split()[0] for l in lines[1:]], [second["id"][:8], first["id"][:8]])
        self.assertIn("waiting", lines[1])
        p = self.cli("task", "show", first["id"][:6])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"^task +%s\n" % first["id"])
        self.assertIn("2 GPU(s)", p.stdout)
        self.assertIn('"params":{"lr":"0.1"}', p.stdout)
        p = self.cli("task", "move", first["id"], "--priority", "9")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("queue cli-q, priority 9", p.stdout)
        p = self.cli("task", "cancel", second["id"])
        self.assertEqual((p.returncode, p.stdout.strip()), (0, second["id"] + ": cancelled"))
        p = self.cli("task", "ls", "--queue", "cli-q", "--json")
        self.assertEqual([json.loads(l)["id"] for l in p.stdout.splitlines()], [first["id"]])
        p = self.cli("task", "ls", "--queue", "cli-q", "--all")
        self.assertIn("cancelled", p.stdout)
        p = self.cli("queue", "ls")
        self.assertEqual(p.returncode, 0, p.stderr)
        row = [l for l in p.stdout.splitlines() if l.startswith("cli-q ")]
        self.assertEqual(row[0].split()[:3], ["cli-q", "1", "0"], p.stdout)
        p = self.cli("task", "show", "ffff")
        self.assertEqual(p.returncode, 1)
        self.assertIn("No task", p.stderr)

    def test_malformed_requests_are_400(self):
        for body, words in (({"queue": "q"}, "spec"),
                            ({"queue": "bad queue", "spec": {}}, "Invalid queue name"),
                            ({"queue": "q", "spec": "text"}, "spec"),
                            ({"queue": "q", "spec": {}, "needs": {"gpus": -1}}, "negative"),
                            ({"queue": "q", "spec": {}, "requirements": {"tpu": "v4"}},
                             "Unknown task requirement"),
                            ({"queue": "q", "spec": {}, "max_attempts": 0}, "max_attempts")):
            r = self.c.post(CAIRN + "tasks", body)
            self.assertEqual(r.status, 400, (body, r.text))
            self.assertIn(words, r.text)
        r = self.c.post(CAIRN + "agents/lease", {"agent": "a", "queues": []})
        self.assertEqual(r.status, 400)
        r = self.c.post(CAIRN + "agents/lease", {"agent": "a", "queues": ["q"],
                                                 "host": {"glibc": 5}})
        self.assertEqual(r.status, 400, r.text)
        self.assertEqual(self.c.get(CAIRN + "tasks/nope").status, 404)
        for path, body, words in (
                ("quotas", {"team": "vision", "gpus": -1}, "cannot be negative"),
                ("quotas", {"team": "no such/team", "gpus": 1}, "Invalid team name"),
                ("quotas", {"team": "vision", "gpu_hours": "lots"}, "gpu_hours"),
                ("tasks/clone", {}, "run_id"),
                ("tasks/clone", {"run_id": "0" * 32, "params": "lr=1"}, "params"),
                ("runs", {"run_id": "1" * 32, "status": "FINISHED"}, "RUNNING or SCHEDULED"),
                ("tasks", {"queue": "q", "spec": {}, "run_id": "2" * 32}, "not found")):
            r = self.c.post(CAIRN + path, body)
            self.assertEqual(r.status, 400, (path, body, r.text))
            self.assertIn(words, r.text)
        r = self.c.post(CAIRN + "tasks/clone", {"run_id": "3" * 32})
        self.assertEqual(r.status, 404, r.text)


class AgentTest(unittest.TestCase):
    """`cairn agent` processes against a server, with recorded host facts."""

    @classmethod
    def setUpClass(cls):
        cls.root, data = tl.make_temp_root("cairn-agents-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (agents)").start()
        tl.add_diagnostic(cls.server.log_tail)
        cls.c = cls.server.client()
        cls.host = os.path.join(cls.root, "host.json")
        with open(cls.host, "w") as f:
            json.dump(CPU_HOST, f)
        cls.agents = []

    @classmethod
    def tearDownClass(cls):
        for p in cls.agents:
            if p.poll() is None:
                p.kill()
                p.wait()
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def start_agent(self, name, queue, *extra, env=None, host=None):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                   CAIRN_ENV_STORE=os.path.join(self.root, "envs"),
                   CAIRN_CACHE_DIR=os.path.join(self.root, "cache"),
                   PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"),
                   **(env or {}))
        env.pop("MLFLOW_TRACKING_URI", None)
        p = subprocess.Popen([tl.CONFIG.cairn, "agent", "--queue", queue, "--id", name,
                              "--host-facts", host or self.host, "--poll-ms", "50",
                              "--workdir", os.path.join(self.root, name), *extra],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        self.agents.append(p)
        return p

    def enqueue(self, queue, command, **extra):
        body = {"queue": queue, "spec": {"command": command, "params": {"lr": "0.5"}}}
        body.update(extra)
        r = self.c.post(CAIRN + "tasks", body)
        self.assertEqual(r.status, 200, r.text)
        return r.body["task"]

    def task(self, task_id):
        return self.c.get(CAIRN + "tasks/" + task_id).body["task"]

    def wait_for(self, task_id, predicate, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            t = self.task(task_id)
            if predicate(t):
                return t
            time.sleep(0.05)
        self.fail("task %s never got there: %r" % (task_id, self.task(task_id)))

    def run_of(self, run_id):
        return self.c.get(API + "runs/get", {"run_id": run_id}).body["run"]

    def test_an_agent_runs_a_task_in_its_scheduled_run(self):
        task = self.enqueue("agent-q", ["sh", "-c", "echo lr=${params.lr} env=$CAIRN_PARAM_LR"])
        agent = self.start_agent("solo", "agent-q", "--max-tasks", "1")
        out, _ = agent.communicate(timeout=60)
        self.assertEqual(agent.returncode, 0, out)
        self.assertIn("done %s (exit code 0)" % task["id"][:8], out)
        done = self.task(task["id"])
        self.assertEqual(done["state"], "done")
        run = self.run_of(task["run_id"])
        self.assertEqual(run["info"]["status"], "FINISHED")
        log = self.c.get("/api/cairn/v1/runs/%s/log" % task["run_id"]).text
        self.assertEqual(log, "lr=0.5 env=0.5\n")
        self.assertFalse(os.path.exists(os.path.join(self.root, "solo", task["id"] + "-1")),
                         "its work directory is removed")

    def test_cancel_stops_the_task_and_a_killed_agents_task_runs_elsewhere(self):
        # Cancelled while running: the agent stops its process group.
        slow = self.enqueue("cancel-q", ["sleep", "60"])
        agent = self.start_agent("canceller", "cancel-q", "--lease-seconds", "3")
        self.wait_for(slow["id"], lambda t: t["state"] == "running")
        self.assertEqual(self.c.post(CAIRN + "tasks/%s/cancel" % slow["id"], {}).status, 200)
        ended = self.wait_for(slow["id"], lambda t: t["state"] != "running", 20)
        self.assertEqual(ended["state"], "cancelled", ended)
        self.assertEqual(self.run_of(slow["run_id"])["info"]["status"], "KILLED")
        agent.terminate()
        agent.wait(timeout=30)

        # SIGKILL of an agent mid-task: the task is queued again and another agent finishes it.
        task = self.enqueue("lost-agent-q", ["sh", "-c", "sleep ${params.lr}; sleep 1; echo ok"],
                            max_attempts=2)
        doomed = self.start_agent("doomed", "lost-agent-q", "--lease-seconds", "2")
        first = self.wait_for(task["id"], lambda t: t["state"] == "running")
        self.assertEqual(first["agent"], "doomed")
        doomed.kill()
        doomed.wait()
        again = self.wait_for(task["id"], lambda t: t["state"] == "queued", 20)
        self.assertIn("agent lost", again["reason"])
        rescuer = self.start_agent("rescuer", "lost-agent-q", "--max-tasks", "1")
        out, _ = rescuer.communicate(timeout=60)
        self.assertEqual(rescuer.returncode, 0, out)
        done = self.task(task["id"])
        self.assertEqual((done["state"], done["attempt"]), ("done", 2), done)
        dead = self.run_of(task["run_id"])
        self.assertEqual(dead["info"]["status"], "FAILED")
        tags = {t["key"]: t["value"] for t in dead["data"]["tags"]}
        self.assertIn("agent lost", tags["cairn.failure_reason"])
        self.assertEqual(self.run_of(done["run_id"])["info"]["status"], "FINISHED")


    def test_a_task_needing_cuda_12_runs_only_on_the_agent_whose_host_has_it(self):
        hosts = {}
        for name, facts in (("old-driver", CUDA11_HOST), ("new-driver", CUDA12_HOST)):
            hosts[name] = os.path.join(self.root, name + ".json")
            with open(hosts[name], "w") as f:
                json.dump(facts, f)
        task = self.enqueue("cuda-q", ["true"], requirements={"cuda": "12"},
                            needs={"gpus": 1})
        old = self.start_agent("old-driver", "cuda-q", "--gpus", "0", host=hosts["old-driver"])
        time.sleep(1.5)  # the old agent asks, and asks again, and never gets it
        self.assertEqual(self.task(task["id"])["state"], "queued")
        new = self.start_agent("new-driver", "cuda-q", "--gpus", "0", "--max-tasks", "1",
                               host=hosts["new-driver"])
        out, _ = new.communicate(timeout=60)
        self.assertEqual(new.returncode, 0, out)
        done = self.task(task["id"])
        self.assertEqual((done["state"], done["gpus"]), ("done", "0"))
        tags = {t["key"]: t["value"] for t in self.run_of(done["run_id"])["data"]["tags"]}
        self.assertEqual(tags["cairn.task.agent"], "new-driver")
        old.terminate()
        old.wait(timeout=30)

    def git(self, repo, *args):
        subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
                       cwd=repo, check=True, capture_output=True)

    def test_run_queue_ships_the_code_and_the_environment(self):
        # A repository with a commit, an uncommitted change, an untracked file and an ignored
        # one, and a project environment locked from a local wheel.
        repo = os.path.join(self.root, "repo")
        os.makedirs(os.path.join(repo, "src"))
        wheel_dir = os.path.join(self.root, "wheels")
        wheels.build_wheel(wheel_dir, "tinypkg", "1.0",
                           files={"tinypkg/__init__.py": "GREETING = 'from tinypkg'\n"})
        with open(os.path.join(repo, "cairn.yaml"), "w") as f:
            f.write("environment:\n  python: \"3.11\"\n  requirements: [\"tinypkg\"]\n"
                    "  sources:\n    - find-links: %s\n" % wheel_dir)
        with open(os.path.join(repo, "src", "train.py"), "w") as f:
            f.write("import os, sys, tinypkg\n"
                    "print('args', sys.argv[1:], 'env', os.environ['CAIRN_PARAM_EPOCHS'])\n"
                    "print(open('notes.txt').read().strip(), open('new.txt').read().strip())\n"
                    "print(tinypkg.GREETING, os.path.exists('../cache.log'))\n")
        with open(os.path.join(repo, "src", "notes.txt"), "w") as f:
            f.write("committed\n")
        with open(os.path.join(repo, ".gitignore"), "w") as f:
            f.write("*.log\n")
        self.git(repo, "init", "-q")
        self.git(repo, "add", ".")
        self.git(repo, "commit", "-qm", "first")
        with open(os.path.join(repo, "src", "notes.txt"), "w") as f:
            f.write("uncommitted\n")
        with open(os.path.join(repo, "src", "new.txt"), "w") as f:
            f.write("untracked\n")
        with open(os.path.join(repo, "cache.log"), "w") as f:
            f.write("ignored\n")
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                   CAIRN_ENV_STORE=os.path.join(self.root, "envs"),
                   CAIRN_CACHE_DIR=os.path.join(self.root, "cache"),
                   PATH="/usr/local/bin:/usr/bin:/bin")
        env.pop("MLFLOW_TRACKING_URI", None)
        p = subprocess.run([tl.CONFIG.cairn, "env", "lock"], cwd=repo, env=env,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)

        p = subprocess.run([tl.CONFIG.cairn, "run", "--queue", "code-q", "-p", "epochs=3",
                            "--name", "shipped", "--", "python", "train.py", "${params.epochs}"],
                           cwd=os.path.join(repo, "src"), env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"queued task [0-9a-f]{32} in code-q")
        self.assertIn("6 files", p.stdout)  # with the untracked pylock.toml
        self.assertIn("with uncommitted changes", p.stdout)
        self.assertIn("environment: %s" % os.path.join(repo, "pylock.toml"), p.stdout)
        task_id = p.stdout.split()[2]
        task = self.task(task_id)
        self.assertEqual(self.run_of(task["run_id"])["info"]["status"], "SCHEDULED")
        code = task["spec"]["code"]
        self.assertEqual((code["cwd"], code["files"], code["dirty"]), ("src", 6, True))
        listed = self.c.get(API + "artifacts/list", {"run_id": task["run_id"],
                                                     "path": "cairn/task/code/src"}).body
        self.assertEqual(sorted(f["path"] for f in listed["files"]),
                         ["cairn/task/code/src/new.txt", "cairn/task/code/src/notes.txt",
                          "cairn/task/code/src/train.py"])

        # The agent needs nothing of the repository: it is gone before the task starts.
        shutil.rmtree(repo)
        agent = self.start_agent("shipper", "code-q", "--max-tasks", "1")
        out, _ = agent.communicate(timeout=120)
        self.assertEqual(agent.returncode, 0, out)
        done = self.task(task_id)
        self.assertEqual(done["state"], "done", (done, out))
        log = self.c.get("/api/cairn/v1/runs/%s/log" % task["run_id"]).text
        self.assertEqual(log, "args ['3'] env 3\nuncommitted untracked\nfrom tinypkg False\n")
        run = self.run_of(task["run_id"])
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        self.assertEqual(tags["cairn.code.snapshot"], code["snapshot"])
        self.assertEqual(tags["mlflow.source.git.commit"], code["commit"])
        self.assertEqual({p["key"]: p["value"] for p in run["data"]["params"]}, {"epochs": "3"})
        self.assertIn(os.path.join(self.root, "envs"), tags["cairn.python.executable"])
        self.assertEqual(tags["cairn.env.lock"], task["spec"]["environment"]["lock_hash"])
        self.assertIn(tags["cairn.env.id"], tags["cairn.python.executable"])

    def test_a_task_whose_code_cannot_be_written_fails_with_the_reason(self):
        task = self.enqueue("broken-q", ["true"])
        spec = {"command": ["true"], "code": {"snapshot": "0" * 64, "run_id": task["run_id"]}}
        broken = self.c.post(CAIRN + "tasks", {"queue": "broken-q", "spec": spec}).body["task"]
        agent = self.start_agent("breaker", "broken-q", "--max-tasks", "2")
        out, _ = agent.communicate(timeout=60)
        self.assertEqual(agent.returncode, 0, out)
        failed = self.task(broken["id"])
        self.assertEqual(failed["state"], "failed", out)
        self.assertIn("cannot start: writing the code snapshot", failed["reason"])
        tags = {t["key"]: t["value"] for t in self.run_of(broken["run_id"])["data"]["tags"]}
        self.assertIn("cannot start", tags["cairn.failure_reason"])
        self.assertEqual(self.task(task["id"])["state"], "done")


    REPRO_SCRIPT = """import os, random, cairn
p = cairn.params({"kind": "deterministic"})
random.seed(os.environ["CAIRN_RUN_ID"])  # another run, other noise
scale = float(os.environ.get("REPRO_SCALE", "1"))
for step in range(10):
    loss = 1.0 / (step + 1)
    if p["kind"] == "noisy":
        loss *= 1 + random.uniform(-1e-5, 1e-5)
    if p["kind"] == "environment" and step >= 6:
        loss *= scale
    cairn.log_metric("loss", loss, step=step)
cairn.log_metric("acc", 0.5, step=0)
print("kind", p["kind"], "lr", os.environ.get("CAIRN_PARAM_LR", "-"))
"""

    def queue_script(self, kind):
        project = os.path.join(self.root, "repro-" + kind)
        os.makedirs(project, exist_ok=True)
        with open(os.path.join(project, "train.py"), "w") as f:
            f.write(self.REPRO_SCRIPT)
        p = subprocess.run([tl.CONFIG.cairn, "run", "--queue", "repro-q", "-p", "kind=" + kind,
                            "--", "python3", "train.py"], cwd=project, env=self.cli_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.split()[2]

    def cli_env(self, **extra):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                   PYTHONPATH=os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"),
                   **extra)
        env.pop("MLFLOW_TRACKING_URI", None)
        return env

    def run_one(self, name, **env):
        agent = self.start_agent(name, "repro-q", "--max-tasks", "1", env=env)
        out, _ = agent.communicate(timeout=120)
        self.assertEqual(agent.returncode, 0, out)
        return out

    def reproduce(self, run_id, *args, agent_env=None):
        """`cairn reproduce` through the queue, with an agent to run it."""
        p = subprocess.Popen([tl.CONFIG.cairn, "reproduce", run_id, *args], env=self.cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.run_one("reproducer", **(agent_env or {}))
        out, err = p.communicate(timeout=60)
        return p.returncode, out, err

    def test_reproduce_gives_each_kind_of_script_its_verdict(self):
        det = self.task(self.queue_script("deterministic"))
        noisy = self.task(self.queue_script("noisy"))
        env_dependent = self.task(self.queue_script("environment"))
        for _ in range(3):
            self.run_one("first", REPRO_SCALE="1")
        for t in (det, noisy, env_dependent):
            self.assertEqual(self.task(t["id"])["state"], "done")
        original = det["run_id"]

        code, out, err = self.reproduce(original)
        self.assertEqual(code, 0, out + err)
        self.assertIn("identical: 2 metric(s), 11 value(s), bit for bit", out)
        new_run = out.split()[5]
        run = self.run_of(new_run)
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        self.assertEqual((tags["cairn.reproduce.of"], tags["cairn.reproduce.verdict"]),
                         (original, "identical"))
        self.assertEqual(tags["cairn.code.snapshot"], det["spec"]["code"]["snapshot"])
        record = self.c.get("/api/2.0/mlflow-artifacts/artifacts/%s/%s/artifacts/cairn/"
                            "reproduce.json" % (run["info"]["experiment_id"], new_run)).body
        self.assertEqual((record["original"], record["verdict"]), (original, "identical"))
        self.assertEqual(record["environment"]["host"]["os"], "linux")
        self.assertEqual(record["differences"]["code"], [])

        code, out, err = self.reproduce(noisy["run_id"], "--rtol", "1e-3")
        self.assertEqual(code, 0, out + err)
        self.assertIn("within tolerance: 2 metric(s)", out)
        code, out, err = self.reproduce(noisy["run_id"])
        self.assertEqual(code, 1, out + err)
        self.assertRegex(out, r"diverged at step \d: loss ")

        # Queued as the web UI's button does, with nobody waiting: the server gives the verdict
        # when the task ends (exact by default), and gives it again on request with a tolerance.
        r = self.c.post(CAIRN + "tasks/clone", {"run_id": noisy["run_id"], "reproduce": True})
        self.assertEqual(r.status, 200, r.text)
        queued = r.body["task"]
        self.run_one("reproducer")
        ended = self.task(queued["id"])
        self.assertEqual(ended["state"], "done", ended)
        tags = {t["key"]: t["value"] for t in self.run_of(ended["run_id"])["data"]["tags"]}
        self.assertEqual((tags["cairn.reproduce.of"], tags["cairn.reproduce.verdict"]),
                         (noisy["run_id"], "diverged"))
        again = self.c.post(CAIRN + "runs/reproduction",
                            {"run_id": ended["run_id"], "options": {"rtol": 1e-3}})
        self.assertEqual(again.status, 200, again.text)
        self.assertEqual(again.body["reproduction"]["verdict"], "within tolerance")
        self.assertEqual(again.body["reproduction"]["options"]["rtol"], 1e-3)
        tags = {t["key"]: t["value"] for t in self.run_of(ended["run_id"])["data"]["tags"]}
        self.assertEqual(tags["cairn.reproduce.verdict"], "within tolerance")
        for body, words in (({}, "run_id"),
                            ({"run_id": ended["run_id"], "options": {"rtol": -1}}, "options.rtol"),
                            ({"run_id": ended["run_id"], "options": {"metrics": "loss"}},
                             "options.metrics"),
                            ({"run_id": noisy["run_id"]}, "reproduces no run"),
                            ({"run_id": ended["run_id"], "original_run_id": ended["run_id"]},
                             "cannot reproduce itself"),
                            ({"run_id": ended["run_id"], "original_run_id": det["run_id"]},
                             "(its cairn.reproduce.of tag), not")):
            bad = self.c.post(CAIRN + "runs/reproduction", body)
            self.assertEqual(bad.status, 400, (body, bad.text))
            self.assertEqual(bad.body["error_code"], "INVALID_PARAMETER_VALUE")
            self.assertIn(words, bad.body["message"])
        missing = self.c.post(CAIRN + "runs/reproduction",
                              {"run_id": ended["run_id"], "original_run_id": "f" * 32})
        self.assertEqual(missing.status, 404, missing.text)

        code, out, err = self.reproduce(env_dependent["run_id"], "--metric", "loss",
                                        agent_env={"REPRO_SCALE": "2"})
        self.assertEqual(code, 1, out + err)
        self.assertIn("diverged at step 6: loss 0.2857142857142857 (original 0.14285714285714285)",
                      out)

        # Here rather than through a queue; and a run that fails is incomplete.
        p = subprocess.run([tl.CONFIG.cairn, "reproduce", original, "--local"],
                           env=self.cli_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("identical", p.stdout)
        p = subprocess.run([tl.CONFIG.cairn, "reproduce", original, "--local"],
                           env=self.cli_env(PATH="/nonexistent"), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("incomplete: the new run ended FAILED", p.stdout)

    def test_clone_queues_a_run_again_with_other_parameters(self):
        first = self.task(self.queue_script("deterministic"))
        self.run_one("cloner")
        p = subprocess.run([tl.CONFIG.cairn, "clone", first["run_id"], "-p", "lr=0.3",
                            "--name", "more-lr"], env=self.cli_env(), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("lr = 0.3 (was not set)", p.stdout)
        clone = self.task(p.stdout.split()[2])
        self.assertEqual(clone["spec"]["params"], {"kind": "deterministic", "lr": "0.3"})
        self.assertEqual(clone["spec"]["code"], first["spec"]["code"])
        self.run_one("cloner")
        run = self.run_of(clone["run_id"])
        self.assertEqual(run["info"]["run_name"], "more-lr")
        self.assertEqual({x["key"]: x["value"] for x in run["data"]["params"]},
                         {"kind": "deterministic", "lr": "0.3"})
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        self.assertEqual(tags["cairn.clone.of"], first["run_id"])
        log = self.c.get("/api/cairn/v1/runs/%s/log" % clone["run_id"]).text
        self.assertEqual(log, "kind deterministic lr 0.3\n")
        # A run neither a queue nor `cairn run` ran has no record to run again from.
        plain = self.c.post(API + "runs/create", {"experiment_id": "0"}).body["run"]["info"]
        p = subprocess.run([tl.CONFIG.cairn, "clone", plain["run_id"], "--queue", "repro-q"],
                           env=self.cli_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 1)
        self.assertIn("only runs that `cairn run` or a queue ran can be run again", p.stderr)

    def test_a_run_cairn_run_ran_is_reproduced_from_its_commit_and_recorded_changes(self):
        repo = os.path.join(self.root, "plain-repo")
        os.makedirs(os.path.join(repo, "src"))
        with open(os.path.join(repo, "src", "train.py"), "w") as f:
            f.write(self.REPRO_SCRIPT)
        self.git(repo, "init", "-q", "-b", "main")
        self.git(repo, "add", "-A")
        self.git(repo, "commit", "-q", "-m", "first")
        # Uncommitted: a change to the script and an untracked file it reads.
        with open(os.path.join(repo, "src", "train.py"), "a") as f:
            f.write("print('note:', open('note.txt').read().strip())\n")
        with open(os.path.join(repo, "src", "note.txt"), "w") as f:
            f.write("uncommitted and untracked\n")
        p = subprocess.run([tl.CONFIG.cairn, "run", "-p", "kind=deterministic", "--",
                            "python3", "train.py"], cwd=os.path.join(repo, "src"),
                           env=self.cli_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        original = self.c.post(API + "runs/search", {"experiment_ids": ["0"],
                                                     "order_by": ["attributes.start_time DESC"],
                                                     "max_results": 1}).body["runs"][0]
        original_id = original["info"]["run_id"]
        self.assertNotIn("cairn.task.id", {t["key"] for t in original["data"]["tags"]})
        # The repository moves on before anyone reproduces the run.
        self.git(repo, "add", "-A")
        self.git(repo, "commit", "-q", "-m", "second")
        with open(os.path.join(repo, "src", "note.txt"), "w") as f:
            f.write("changed since\n")

        p = subprocess.run([tl.CONFIG.cairn, "reproduce", original_id, "--local"], cwd=repo,
                           env=self.cli_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("identical: 2 metric(s), 11 value(s), bit for bit", p.stdout)
        self.assertIn("its code rebuilt from commit", p.stderr)
        new_run = re.search(r"reproduction of \w+ in run (\w+)", p.stdout).group(1)
        log = self.c.get("/api/cairn/v1/runs/%s/log" % new_run).text
        self.assertIn("note: uncommitted and untracked", log, "the run's own changes, not today's")

        # Through a queue: an agent without the repository runs the rebuilt code.
        p = subprocess.Popen([tl.CONFIG.cairn, "reproduce", original_id, "--queue", "repro-q",
                              "--repo", os.path.join(repo, "src")], env=self.cli_env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.run_one("plain-reproducer")
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, out + err)
        self.assertIn("identical", out)
        run = self.run_of(re.search(r"reproduction of \w+ in run (\w+)", out).group(1))
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        self.assertEqual((tags["cairn.reproduce.of"], tags["cairn.reproduce.verdict"]),
                         (original_id, "identical"))
        self.assertEqual(tags["mlflow.source.git.commit"],
                         {t["key"]: t["value"] for t in original["data"]["tags"]}
                         ["mlflow.source.git.commit"])

        # A clone needs a queue; outside the repository there is no commit to rebuild.
        p = subprocess.run([tl.CONFIG.cairn, "clone", original_id, "-p", "kind=noisy"], cwd=repo,
                           env=self.cli_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("say which queue takes it, --queue NAME", p.stderr)
        p = subprocess.run([tl.CONFIG.cairn, "clone", original_id, "--queue", "repro-q"],
                           cwd=self.root, env=self.cli_env(), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("is not in a git repository", p.stderr)
        p = subprocess.run([tl.CONFIG.cairn, "clone", original_id, "-p", "kind=noisy", "--queue",
                            "repro-q"], cwd=repo, env=self.cli_env(), capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        clone = self.task(p.stdout.split()[2])
        self.assertEqual(clone["spec"]["params"], {"kind": "noisy"})
        self.assertEqual(clone["spec"]["command"], ["python3", "train.py"])
        self.assertEqual(clone["spec"]["code"]["cwd"], "src")
        self.c.post(CAIRN + "tasks/%s/cancel" % clone["id"], {})

        # Untracked files a run could not record make its code impossible to rebuild exactly.
        with open(os.path.join(repo, "src", "weights.bin"), "wb") as f:
            f.write(b"\0\1binary")
        p = subprocess.run([tl.CONFIG.cairn, "run", "--", "true"], cwd=repo, env=self.cli_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        binary_run = self.c.post(API + "runs/search", {"experiment_ids": ["0"],
                                                       "order_by": ["attributes.start_time DESC"],
                                                       "max_results": 1}).body["runs"][0]
        p = subprocess.run([tl.CONFIG.cairn, "reproduce", binary_run["info"]["run_id"], "--local"],
                           cwd=repo, env=self.cli_env(), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("untracked files that were not recorded (src/weights.bin", p.stderr)


class TasksAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, data = tl.make_temp_root("cairn-tasks-auth-")
        password_file = os.path.join(cls.root, "pw")
        with open(password_file, "w") as f:
            f.write("admin-pass\n")
        os.chmod(password_file, 0o600)
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (tasks, auth)",
                                    extra_args=["--auth", "on", "--init-admin", "admin",
                                                "--password-file", password_file])
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.c = cls.server.client()
        cls.admin = {"Authorization": basic_auth("admin", "admin-pass")}
        for name, service in (("alice", False), ("bob", False), ("agent-svc", True),
                              ("other-svc", True)):
            body = {"username": name, "password": name + "-pass-123"}
            if service:
                body = {"username": name, "service_account": True}
            r = cls.c.post(CAIRN + "users", body, headers=cls.admin)
            assert r.status == 200, r.text
        r = cls.c.post(CAIRN + "tokens", {"name": "agent", "owner": "agent-svc"},
                       headers=cls.admin)
        assert r.status == 200, r.text
        cls.agent = {"Authorization": "Bearer " + r.body["value"]}
        r = cls.c.post(CAIRN + "tokens", {"name": "agent", "owner": "other-svc"},
                       headers=cls.admin)
        assert r.status == 200, r.text
        cls.other = {"Authorization": "Bearer " + r.body["value"]}
        cls.alice = {"Authorization": basic_auth("alice", "alice-pass-123")}
        cls.bob = {"Authorization": basic_auth("bob", "bob-pass-123")}

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def test_only_service_accounts_lease_and_tasks_follow_their_experiment(self):
        r = self.c.post(API + "experiments/create", {"name": "alice-private"}, headers=self.alice)
        self.assertEqual(r.status, 200, r.text)
        exp = r.body["experiment_id"]
        r = self.c.post(API + "experiments/permissions/create",
                        {"experiment_id": exp, "username": "bob",
                         "permission": "NO_PERMISSIONS"}, headers=self.admin)
        self.assertEqual(r.status, 200, r.text)
        r = self.c.post(CAIRN + "tasks", {"queue": "auth-q", "experiment_id": exp,
                                          "spec": {"command": ["true"]}}, headers=self.alice)
        self.assertEqual(r.status, 200, r.text)
        task = r.body["task"]
        self.assertEqual(task["owner"], "alice")
        r = self.c.post(CAIRN + "tasks", {"queue": "auth-q", "experiment_id": exp,
                                          "spec": {"command": ["true"]}}, headers=self.bob)
        self.assertEqual(r.status, 403, "bob may not add runs to alice's experiment")
        r = self.c.post(CAIRN + "tasks", {"queue": "auth-q", "experiment_name": "no-such",
                                          "spec": {"command": ["true"]}}, headers=self.bob)
        self.assertEqual(r.status, 403, "nor to the Default experiment, named or not")

        self.assertEqual(self.c.get(CAIRN + "tasks/" + task["id"], headers=self.bob).status, 403)
        listed = self.c.get(CAIRN + "tasks", {"queue": "auth-q"}, headers=self.bob).body["tasks"]
        self.assertEqual(listed, [])
        listed = self.c.get(CAIRN + "tasks", {"queue": "auth-q"}, headers=self.alice).body
        self.assertEqual([t["id"] for t in listed["tasks"]], [task["id"]])
        r = self.c.post(CAIRN + "tasks/%s/cancel" % task["id"], {}, headers=self.bob)
        self.assertEqual(r.status, 403)

        lease = {"agent": "a1", "queues": ["auth-q"], "host": CPU_HOST}
        self.assertEqual(self.c.post(CAIRN + "agents/lease", lease, headers=self.alice).status,
                         403, "a person is not an agent")
        r = self.c.post(CAIRN + "agents/lease", lease, headers=self.agent)
        self.assertEqual(r.status, 403, "an agent registers first")
        self.assertIn("not registered", r.text)
        r = self.c.post(CAIRN + "agents", {"id": "a1", "queues": ["auth-q"], "host": CPU_HOST},
                        headers=self.agent)
        self.assertEqual(r.status, 200, r.text)
        # Another service account cannot take over the agent, nor act as it.
        r = self.c.post(CAIRN + "agents", {"id": "a1", "queues": ["auth-q"]}, headers=self.other)
        self.assertEqual(r.status, 403, r.text)
        self.assertEqual(self.c.post(CAIRN + "agents/lease", lease, headers=self.other).status,
                         403)
        r = self.c.post(CAIRN + "agents/lease", dict(lease, queues=["elsewhere"]),
                        headers=self.agent)
        self.assertEqual(r.status, 403, "only the queues it registered for")
        r = self.c.post(CAIRN + "agents/lease", lease, headers=self.agent)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(r.body["task"]["id"], task["id"])
        finish = {"task_id": task["id"], "agent": "a1", "attempt": 1, "state": "done"}
        self.assertEqual(self.c.post(CAIRN + "agents/finish", finish, headers=self.other).status,
                         403)
        r = self.c.post(CAIRN + "agents/finish", finish, headers=self.agent)
        self.assertEqual(r.status, 200, r.text)

        # Bob's own run cannot be compared with alice's private run: the verdict would show
        # its values.
        r = self.c.post(API + "experiments/create", {"name": "bob-own"}, headers=self.bob)
        self.assertEqual(r.status, 200, r.text)
        mine = self.c.post(API + "runs/create", {"experiment_id": r.body["experiment_id"]},
                           headers=self.bob)
        self.assertEqual(mine.status, 200, mine.text)
        mine_id = mine.body["run"]["info"]["run_id"]
        r = self.c.post(CAIRN + "runs/reproduction",
                        {"run_id": mine_id, "original_run_id": task["run_id"]}, headers=self.bob)
        self.assertEqual(r.status, 403, r.text)
        r = self.c.post(CAIRN + "runs/reproduction",
                        {"run_id": task["run_id"], "original_run_id": mine_id}, headers=self.bob)
        self.assertEqual(r.status, 403, "nor can he record a verdict in her run")
        # Nor can he queue a task that names her run: an agent would read its code, and the
        # verdict of a reproduction would show its values.
        bob_exp = mine.body["run"]["info"]["experiment_id"]
        for spec in ({"command": ["true"], "reproduce": {"of": task["run_id"]}},
                     {"command": ["cat", "secret.py"],
                      "code": {"snapshot": "0" * 64, "run_id": task["run_id"]}},
                     {"command": ["true"],
                      "environment": {"run_id": task["run_id"], "lock_hash": "0" * 64}}):
            r = self.c.post(CAIRN + "tasks", {"queue": "auth-q", "experiment_id": bob_exp,
                                              "spec": spec}, headers=self.bob)
            self.assertEqual(r.status, 403, (spec, r.text))
        r = self.c.post(CAIRN + "tasks", {"queue": "auth-q", "experiment_id": bob_exp,
                                          "spec": {"command": ["true"],
                                                   "reproduce": {"of": mine_id}}},
                        headers=self.bob)
        self.assertEqual(r.status, 200, "his own run he may name")
        cancelled = r.body["task"]
        r = self.c.post(CAIRN + "tasks/%s/cancel" % cancelled["id"], {}, headers=self.bob)
        self.assertEqual(r.status, 200, r.text)
        run = self.c.get(API + "runs/get", {"run_id": cancelled["run_id"]}, headers=self.bob)
        tags = {t["key"]: t["value"] for t in run.body["run"]["data"]["tags"]}
        self.assertEqual(tags.get("cairn.reproduce.verdict"), "incomplete",
                         "a reproduction cancelled before it ran still gets its verdict")
        # Collecting blobs is an admin's.
        self.assertEqual(self.c.post(CAIRN + "gc", {"dry_run": True}, headers=self.bob).status,
                         403)
        r = self.c.post(CAIRN + "gc", {"dry_run": True}, headers=self.admin)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(r.body["collected"], 0)
        self.assertEqual(self.c.get(CAIRN + "storage", headers=self.bob).status, 403)
        self.assertEqual(self.c.get(CAIRN + "storage", headers=self.admin).status, 200)
        r = self.c.post(CAIRN + "queues", {"name": "auth-q", "description": "x"},
                        headers=self.alice)
        self.assertEqual(r.status, 403, "queues are the admin's")


    def test_a_team_over_its_quota_waits_while_another_team_runs(self):
        for team, member in (("vision", "alice"), ("speech", "bob")):
            r = self.c.post(CAIRN + "teams", {"name": team}, headers=self.admin)
            self.assertEqual(r.status, 200, r.text)
            r = self.c.post(CAIRN + "teams/members", {"team": team, "username": member},
                            headers=self.admin)
            self.assertEqual(r.status, 200, r.text)
        r = self.c.post(CAIRN + "quotas", {"team": "vision", "gpus": 1}, headers=self.alice)
        self.assertEqual(r.status, 403, "only admins set quotas")
        r = self.c.post(CAIRN + "quotas", {"team": "vision", "gpus": 1, "gpu_hours": 100},
                        headers=self.admin)
        self.assertEqual(r.status, 200, r.text)

        experiments = {}
        for name, who in (("alice", self.alice), ("bob", self.bob)):
            r = self.c.post(API + "experiments/create", {"name": name + "-quota"}, headers=who)
            self.assertEqual(r.status, 200, r.text)
            experiments[who["Authorization"]] = r.body["experiment_id"]

        def queue(who):
            r = self.c.post(CAIRN + "tasks", {"queue": "quota-q", "needs": {"gpus": 1},
                                              "experiment_id": experiments[who["Authorization"]],
                                              "spec": {"command": ["true"]}}, headers=who)
            self.assertEqual(r.status, 200, r.text)
            return r.body["task"]
        first, second, speech = queue(self.alice), queue(self.alice), queue(self.bob)
        self.assertEqual((first["team"], speech["team"]), ("vision", "speech"))
        r = self.c.post(CAIRN + "agents", {"id": "quota-agent", "queues": ["quota-q"],
                                           "gpus": ["0", "1", "2"], "host": CUDA12_HOST},
                        headers=self.agent)
        self.assertEqual(r.status, 200, r.text)

        def lease():
            r = self.c.post(CAIRN + "agents/lease", {"agent": "quota-agent",
                                                     "queues": ["quota-q"],
                                                     "free_gpus": ["0", "1", "2"],
                                                     "host": CUDA12_HOST}, headers=self.agent)
            self.assertEqual(r.status, 200, r.text)
            return r.body.get("task")
        self.assertEqual(lease()["id"], first["id"])
        self.assertEqual(lease()["id"], speech["id"], "vision is at its quota; speech runs")
        self.assertIsNone(lease())
        waiting = self.c.get(CAIRN + "tasks/" + second["id"], headers=self.alice).body["task"]
        self.assertEqual(waiting["reason"], "over quota: team vision has 1 of its 1 GPUs in use")
        quotas = self.c.get(CAIRN + "quotas", headers=self.bob).body["quotas"]
        self.assertEqual([(q["team"], q["gpus"], q["used_gpus"]) for q in quotas],
                         [("vision", 1, 1)])
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url,
                   CAIRN_TOKEN=self.agent["Authorization"][7:])
        env.pop("MLFLOW_TRACKING_URI", None)
        p = subprocess.run([tl.CONFIG.cairn, "task", "ls", "--queue", "quota-q"], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertIn("over quota", p.stdout + p.stderr)
        p = subprocess.run([tl.CONFIG.cairn, "queue", "quota"], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"vision +1 +1 +100\.0")

        # Its task done, the team's waiting task starts.
        r = self.c.post(CAIRN + "agents/finish", {"task_id": first["id"], "agent": "quota-agent",
                                                  "attempt": 1, "state": "done"},
                        headers=self.agent)
        self.assertEqual(r.status, 200, r.text)
        self.assertEqual(lease()["id"], second["id"])


if __name__ == "__main__":
    sys.exit(tl.main("tasks", sys.modules[__name__]))
