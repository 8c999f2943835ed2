#!/usr/bin/env python3
"""`cairn pipeline run --executor slurm` against a real single-node Slurm cluster, which
scripts/slurm-test-cluster.sh starts for the suite and stops after it: steps run as batch jobs
with their logs and exit codes collected, a second run is cached, a failing job's exit code is
reported, a timeout cancels the job, a request the cluster cannot meet (a GPU here) is
sbatch's clear error, and resume finishes a run. `cairn agent --executor slurm` runs queued
tasks as batch jobs on the same cluster: their runs get the job's output as their log, a
cancelled task's job is cancelled, and a task needing a GPU the cluster lacks fails with
sbatch's reason.

Usage: test_pipeline_slurm.py --cairn build/release/cairn
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cairn_testlib as tl  # noqa: E402

CLUSTER_SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "scripts",
                              "slurm-test-cluster.sh")

SPEC = """name: onslurm
params: {rows: 3}
steps:
  prepare:
    run: mkdir -p data && seq ${params.rows} > data/rows.txt && echo "prepared in job $SLURM_JOB_ID"
    outputs: [data/]
  train:
    run: wc -l < data/rows.txt > model.txt && echo "trained with $SLURM_CPUS_PER_TASK cpus"
    inputs: [data/]
    outputs: [model.txt]
    resources: {cpus: 2, memory: 200M}
"""


class SlurmPipelineTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, _ = tl.make_temp_root("cairn-slurm-")
        cls.cluster = os.path.join(cls.root, "cluster")
        started = subprocess.run(["bash", CLUSTER_SCRIPT, "start", cls.cluster],
                                 capture_output=True, text=True, timeout=180)
        if started.returncode != 0:
            subprocess.run(["bash", CLUSTER_SCRIPT, "stop", cls.cluster], capture_output=True,
                           timeout=120)
            raise RuntimeError("the Slurm test cluster did not start:\n" + started.stderr)
        cls.env = dict(os.environ, CAIRN_CACHE_DIR=os.path.join(cls.root, "cache"),
                       PATH="/usr/local/bin:/usr/bin:/bin")
        for name, value in re.findall(r"^export (\w+)=(.*)$", started.stdout, re.M):
            cls.env[name] = value.strip("'\"")
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        subprocess.run(["bash", CLUSTER_SCRIPT, "stop", cls.cluster], capture_output=True,
                       timeout=120)
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    def project(self, spec):
        SlurmPipelineTest.count += 1
        path = os.path.join(self.root, "p%d" % SlurmPipelineTest.count)
        os.makedirs(path)
        with open(os.path.join(path, "pipeline.yaml"), "w") as f:
            f.write(spec)
        return path

    def cairn(self, *args, cwd):
        return subprocess.run([tl.CONFIG.cairn, "pipeline", *args], cwd=cwd, env=self.env,
                              capture_output=True, text=True, timeout=300)

    def states(self, output):
        return tl.pipeline_states(output)

    def run_dir(self, project):
        runs = os.path.join(project, ".cairn", "pipelines")
        newest = max(os.listdir(runs), key=lambda d: os.path.getmtime(os.path.join(runs, d)))
        return os.path.join(runs, newest)

    def test_steps_run_as_batch_jobs_and_a_second_run_is_cached(self):
        project = self.project(SPEC)
        p = self.cairn("run", "--executor", "slurm", "--no-track", cwd=project)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("(slurm", p.stdout)
        self.assertEqual(self.states(p.stdout), {"prepare": "done", "train": "done"})
        with open(os.path.join(project, "model.txt")) as f:
            self.assertEqual(f.read().strip(), "3")
        logs = os.path.join(self.run_dir(project), "logs")
        with open(os.path.join(logs, "prepare.log")) as f:
            self.assertRegex(f.read(), r"prepared in job \d+")
        with open(os.path.join(logs, "train.log")) as f:
            self.assertIn("trained with 2 cpus", f.read(), "--cpus-per-task reached the job")
        again = self.cairn("run", "--executor", "slurm", "--no-track", cwd=project)
        self.assertEqual(again.returncode, 0, again.stdout + again.stderr)
        self.assertEqual(set(self.states(again.stdout).values()), {"cached"})

    def test_exit_codes_timeouts_and_refused_jobs(self):
        project = self.project("""name: failing
steps:
  three: {run: "echo failing; exit 3"}
  slow: {run: sleep 120, timeout: 3s}
  gpu: {run: nvidia-smi, resources: {gpus: 1}}
""")
        started = time.monotonic()
        p = self.cairn("run", "--executor", "slurm", "--no-track", cwd=project)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertLess(time.monotonic() - started, 60)
        states = self.states(p.stdout)
        self.assertEqual(states, {"three": "failed", "slow": "failed", "gpu": "failed"})
        self.assertIn("exit code 3", p.stdout)
        self.assertIn("timed out after 3 s", p.stdout)
        self.assertIn("sbatch refused the job", p.stdout)
        self.assertIn("| failing", p.stdout, "the job's output is in the step's log")
        # The timed-out job was cancelled, not left to run.
        queue = subprocess.run(["squeue", "-h", "-o", "%j"], env=self.env, capture_output=True,
                               text=True, timeout=60).stdout
        self.assertNotIn("slow", queue)

    def test_resume_finishes_a_failed_run(self):
        project = self.project("""name: again
steps:
  first: {run: "echo 1 > first.txt", outputs: [first.txt]}
  second: {run: "test -f go && cat first.txt > second.txt", needs: [first], outputs: [second.txt]}
""")
        p = self.cairn("run", "--executor", "slurm", "--no-track", cwd=project)
        self.assertEqual(p.returncode, 1)
        run_id = re.search(r"run ([0-9a-f]{32})", p.stdout).group(1)
        open(os.path.join(project, "go"), "w").close()
        p = self.cairn("resume", run_id, cwd=project)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.states(p.stdout), {"first": "kept", "second": "done"})
        self.assertIn("(slurm", p.stdout, "resume keeps the run's executor")

    def test_an_agent_runs_queued_tasks_as_slurm_jobs(self):
        data = os.path.join(self.root, "server")
        server = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (slurm agent)").start()
        self.addCleanup(server.stop)
        tl.add_diagnostic(server.log_tail)
        c = server.client()
        api = "/api/cairn/v1/"

        def enqueue(command, **needs):
            body = {"queue": "cluster", "spec": {"command": command, "params": {"lr": "0.5"}},
                    "needs": needs}
            r = c.post(api + "tasks", body)
            self.assertEqual(r.status, 200, r.text)
            return r.body["task"]

        def wait_for(task_id, predicate, seconds=90):
            deadline = time.time() + seconds
            while time.time() < deadline:
                t = c.get(api + "tasks/" + task_id).body["task"]
                if predicate(t):
                    return t
                time.sleep(0.2)
            self.fail("task %s never got there: %r" % (task_id, t))

        def run_of(run_id):
            r = c.get("/api/2.0/mlflow/runs/get", {"run_id": run_id}).body["run"]
            return r["info"], {t["key"]: t["value"] for t in r["data"].get("tags", [])}

        work = os.path.join(self.root, "agent-work")
        env = dict(self.env, CAIRN_TRACKING_URI=server.url)
        env.pop("MLFLOW_TRACKING_URI", None)
        agent = subprocess.Popen([tl.CONFIG.cairn, "agent", "--queue", "cluster", "--id", "sl1",
                                  "--executor", "slurm", "--slots", "2", "--gpus", "g0",
                                  "--poll-ms", "100", "--workdir", work],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True)

        def stop_agent():
            if agent.poll() is None:
                agent.terminate()
                try:
                    agent.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    agent.kill()
                    agent.wait()
        self.addCleanup(stop_agent)

        ok = enqueue(["sh", "-c", "echo job $SLURM_JOB_ID lr=${params.lr} cpus=$SLURM_CPUS_PER_TASK"],
                     cpus=2)
        done = wait_for(ok["id"], lambda t: t["state"] not in ("queued", "running"))
        self.assertEqual(done["state"], "done", done)
        info, tags = run_of(ok["run_id"])
        self.assertEqual(info["status"], "FINISHED")
        self.assertEqual(tags.get("cairn.task.agent"), "sl1")
        log = c.get(api + "runs/%s/log" % ok["run_id"]).text
        self.assertRegex(log, r"^job \d+ lr=0\.5 cpus=2\n$", "the job's output is the run's log")
        host = c.get("/get-artifact", {"run_id": ok["run_id"], "path": "cairn/host.json"})
        self.assertEqual(host.status, 200, "the run records the host the job ran on")

        # Cancelled while its job runs: the job is cancelled and the run ends KILLED.
        slow = enqueue(["sleep", "120"])
        wait_for(slow["id"], lambda t: t["state"] == "running")
        job_name = "cairn-agent-sl1-%s-1" % slow["id"][:8]
        tl.wait_until(lambda: job_name in self.squeue_names(), timeout=60)
        self.assertEqual(c.post(api + "tasks/%s/cancel" % slow["id"], {}).status, 200)
        ended = wait_for(slow["id"], lambda t: t["state"] != "running")
        self.assertEqual(ended["state"], "cancelled", ended)
        self.assertEqual(run_of(slow["run_id"])[0]["status"], "KILLED")
        self.assertNotIn(job_name, self.squeue_names())

        # A GPU the cluster does not have: sbatch refuses the job and the task says why.
        gpu = enqueue(["nvidia-smi"], gpus=1)
        refused = wait_for(gpu["id"], lambda t: t["state"] not in ("queued", "running"))
        self.assertEqual(refused["state"], "failed", refused)
        self.assertIn("sbatch refused the job", refused["reason"])

        stop_agent()
        out = agent.stdout.read()
        self.assertIn("as Slurm jobs", out)
        self.assertIn("done %s" % ok["id"][:8], out)
        self.assertEqual(os.listdir(work), [f for f in os.listdir(work) if f.endswith(".log")],
                         "only the jobs' logs are left in the work directory")

        # Where sbatch cannot be run at all, nothing is the task's fault: it goes back to its
        # queue when its lease runs out, for another agent.
        tools = os.path.join(self.root, "no-sbatch")
        os.makedirs(tools, exist_ok=True)
        for tool in ("squeue", "scancel", "scontrol", "sacct"):
            found = shutil.which(tool, path=self.env["PATH"])
            if found and not os.path.exists(os.path.join(tools, tool)):
                os.symlink(found, os.path.join(tools, tool))
        broken = subprocess.Popen([tl.CONFIG.cairn, "agent", "--queue", "cluster", "--id", "sl2",
                                   "--executor", "slurm", "--lease-seconds", "3",
                                   "--poll-ms", "100", "--workdir", work],
                                  env=dict(env, PATH=tools), stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
        retried = enqueue(["true"])
        again = wait_for(retried["id"], lambda t: t["attempt"] >= 1 and t["state"] == "queued",
                         60)
        self.assertIn("agent lost", again["reason"])
        broken.terminate()
        out, _ = broken.communicate(timeout=60)
        self.assertIn("sbatch failed for %s" % retried["id"][:8], out)
        self.assertIn("goes back to its queue", out)
        c.post(api + "tasks/%s/cancel" % retried["id"], {})

    def squeue_names(self):
        return subprocess.run(["squeue", "-h", "-o", "%j"], env=self.env, capture_output=True,
                              text=True, timeout=60).stdout.split()


if __name__ == "__main__":
    sys.exit(tl.main("pipeline_slurm", sys.modules[__name__]))
