#!/usr/bin/env python3
"""Tasks, queues and agents through cairn's REST API: a task queued as a SCHEDULED run, leased
by an agent only where its environment can run, renewed and finished with its run; a lost
agent's attempt failed with "agent lost" and the task queued again in a new run; cancel and
move; the `cairn task` and `cairn queue` commands; `cairn agent` running tasks, stopping a
cancelled one, and a SIGKILLed agent's task finished by another; and, with --auth on, agent calls only for service accounts and tasks shown only to those
who may read their experiment.

Usage: test_tasks.py --cairn build/release/cairn
"""
import base64
import json
import os
import subprocess
import shutil
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cairn_testlib as tl  # noqa: E402

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

    def start_agent(self, name, queue, *extra):
        env = dict(os.environ, CAIRN_TRACKING_URI=self.server.url)
        env.pop("MLFLOW_TRACKING_URI", None)
        p = subprocess.Popen([tl.CONFIG.cairn, "agent", "--queue", queue, "--id", name,
                              "--host-facts", self.host, "--poll-ms", "50",
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
        r = self.c.post(CAIRN + "queues", {"name": "auth-q", "description": "x"},
                        headers=self.alice)
        self.assertEqual(r.status, 403, "queues are the admin's")


if __name__ == "__main__":
    sys.exit(tl.main("tasks", sys.modules[__name__]))
