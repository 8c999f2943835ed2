#!/usr/bin/env python3
"""`cairn experiments ls` and `cairn runs ls|show|compare|diff-env` against a real server: runs
recorded with `cairn run` (with the system Python, and with an empty venv) and through plain
REST, then the commands run as subprocesses (so stdout is not a terminal: nothing is cut and
there is no colour), asserting on what they print and how they exit.

Usage: test_cli_runs.py --cairn build/release/cairn
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cairn_testlib as tl  # noqa: E402

API = "/api/2.0/mlflow/"
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


class CliRunsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, data_dir = tl.make_temp_root("cairn-cli-runs-")
        cls.server = tl.CairnServer(tl.CONFIG.cairn, data_dir, name="cairn (cli runs)")
        tl.add_diagnostic(cls.server.log_tail)
        cls.server.start()
        cls.c = cls.server.client()
        # Two runs of the same environment, differing in a param and a metric.
        cls.alpha = cls.record("cli-a", "alpha", ["-p", "lr=0.1", "-p", "opt=adam"])
        cls.beta = cls.record("cli-a", "beta", ["-p", "lr=0.01", "-p", "opt=adam"])
        cls.log_metric(cls.alpha, "loss", 0.5)
        cls.log_metric(cls.beta, "loss", 0.25)
        # A venv without packages (not even pip) is another environment.
        venv = os.path.join(cls.root, "venv")
        subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True, timeout=120)
        cls.gamma = cls.record("cli-b", "gamma", [], python=os.path.join(venv, "bin", "python"))
        # A run made over plain REST, as an MLflow client would: no cairn records.
        exp = cls.c.get(API + "experiments/get-by-name", {"experiment_name": "cli-a"})
        r = cls.c.post(API + "runs/create", {"experiment_id": exp.body["experiment"]["experiment_id"],
                                             "run_name": "plain", "start_time": tl.now_ms(),
                                             "tags": [{"key": "team", "value": "vision"}]})
        assert r.status == 200, r
        cls.plain = r.body["run"]["info"]
        # A run whose records are edited copies of alpha's (see test_diff_env_reports_...).
        r = cls.c.post(API + "experiments/create", {"name": "cli-c"})
        assert r.status == 200, r
        r = cls.c.post(API + "runs/create", {"experiment_id": r.body["experiment_id"],
                                             "run_name": "edited", "start_time": tl.now_ms()})
        assert r.status == 200, r
        cls.edited = r.body["run"]["info"]

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    @classmethod
    def env(cls, extra=None):
        env = dict(os.environ)
        for name in ("MLFLOW_TRACKING_URI", "NO_COLOR", "COLUMNS"):
            env.pop(name, None)
        env["CAIRN_TRACKING_URI"] = cls.server.url
        env.update(extra or {})
        return env

    @classmethod
    def record(cls, experiment, name, args, python=PYTHON):
        p = subprocess.run([tl.CONFIG.cairn, "run", "-e", experiment, "-n", name, "--python", python,
                            "--system-metrics-interval", "0", *args, "--", "true"],
                           env=cls.env(), cwd=cls.root, capture_output=True, text=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        m = re.search(r"cairn: run ([0-9a-f]{32}) ", p.stderr)
        assert m, p.stderr
        r = cls.c.get(API + "runs/get", {"run_id": m.group(1)})
        assert r.status == 200, r
        return r.body["run"]["info"]

    @classmethod
    def log_metric(cls, info, key, value):
        r = cls.c.post(API + "runs/log-metric", {"run_id": info["run_id"], "key": key,
                                                 "value": value, "timestamp": tl.now_ms(),
                                                 "step": 0})
        assert r.status == 200, r

    def cairn(self, *args, columns=None, extra_env=None):
        env = self.env(extra_env)
        if columns is not None:
            env["COLUMNS"] = str(columns)
        return subprocess.run([tl.CONFIG.cairn, *args], env=env, cwd=self.root,
                              capture_output=True, text=True, errors="replace", timeout=60)

    def artifact(self, info, path):
        root = info["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
        r = self.c.get("/api/2.0/mlflow-artifacts/artifacts/%s/%s" % (root, path))
        self.assertEqual(r.status, 200, repr(r))
        return r.raw

    def put_artifact(self, info, path, data):
        root = info["artifact_uri"].split("mlflow-artifacts:/", 1)[1]
        r = self.c.put("/api/2.0/mlflow-artifacts/artifacts/%s/%s" % (root, path), data)
        self.assertEqual(r.status, 200, repr(r))

    @staticmethod
    def table(stdout):
        """Rows of a table printed with two-space gaps, as lists of cells."""
        return [re.split(r" {2,}", line.strip()) for line in stdout.splitlines() if line.strip()]

    # --- experiments -------------------------------------------------------------------------

    def test_experiments_ls_lists_active_and_with_all_deleted(self):
        r = self.c.post(API + "experiments/create", {"name": "doomed"})
        self.assertEqual(r.status, 200, repr(r))
        self.c.post(API + "experiments/delete", {"experiment_id": r.body["experiment_id"]})
        p = self.cairn("experiments", "ls")
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = self.table(p.stdout)
        self.assertEqual(rows[0], ["id", "name", "lifecycle", "created"])
        names = {row[1]: row for row in rows[1:]}
        self.assertIn("cli-a", names)
        self.assertIn("Default", names)
        self.assertNotIn("doomed", names)
        self.assertEqual(names["cli-a"][2], "active")
        p = self.cairn("experiments", "ls", "--all")
        self.assertIn("doomed", {row[1]: row for row in self.table(p.stdout)})
        self.assertEqual({row[1]: row for row in self.table(p.stdout)}["doomed"][2], "deleted")
        p = self.cairn("experiments", "ls", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        objs = [json.loads(line) for line in p.stdout.splitlines()]
        self.assertIn("cli-b", [o["name"] for o in objs])
        self.assertTrue(all(o["creation_time"] > 0 for o in objs))

    # --- runs ls -----------------------------------------------------------------------------

    def test_runs_ls_default_table_shows_varying_params_and_metrics(self):
        p = self.cairn("runs", "ls", columns=200)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = self.table(p.stdout)
        self.assertEqual(rows[0][:5], ["run", "name", "status", "start", "duration"])
        # lr and loss differ between runs; opt is "adam" on every run that has it, but it is
        # missing on others, so it varies too. Constant keys would be left out.
        for key in ("lr", "loss", "opt"):
            self.assertIn(key, rows[0])
        by_name = {row[1]: dict(zip(rows[0], row)) for row in rows[1:]}
        self.assertEqual(set(by_name), {"alpha", "beta", "gamma", "plain", "edited"})
        self.assertEqual(by_name["alpha"]["run"], self.alpha["run_id"][:8])
        self.assertEqual(by_name["alpha"]["lr"], "0.1")
        self.assertEqual(by_name["beta"]["loss"], "0.25")
        self.assertEqual(by_name["gamma"]["lr"], "-")
        self.assertEqual(by_name["alpha"]["status"], "FINISHED")
        self.assertEqual(by_name["plain"]["status"], "RUNNING")
        # Newest first.
        self.assertEqual([row[1] for row in rows[1:]],
                         ["edited", "plain", "gamma", "beta", "alpha"])

    def test_runs_ls_narrow_width_keeps_only_fixed_columns(self):
        p = self.cairn("runs", "ls", columns=50)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.table(p.stdout)[0], ["run", "name", "status", "start", "duration"])

    def test_runs_ls_filter_order_and_columns(self):
        p = self.cairn("runs", "ls", "-e", "cli-a", "--filter", "params.lr = '0.1'",
                       "--columns", "name,params.lr,metrics.loss,tags.mlflow.runName")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.table(p.stdout),
                         [["name", "lr", "loss", "mlflow.runName"], ["alpha", "0.1", "0.5", "alpha"]])
        p = self.cairn("runs", "ls", "-e", "cli-a", "--order-by", "metrics.loss ASC",
                       "--columns", "name")
        self.assertEqual(p.returncode, 0, p.stderr)
        # Runs with the metric come first in either direction; "plain" has none.
        self.assertEqual(p.stdout.split(), ["name", "beta", "alpha", "plain"])
        p = self.cairn("runs", "ls", "-e", "cli-a", "-e", "cli-b", "--columns", "name,experiment",
                       "--filter", "attributes.run_name LIKE '%a'")
        self.assertEqual(self.table(p.stdout)[1:], [["gamma", "cli-b"], ["beta", "cli-a"],
                                                    ["alpha", "cli-a"]])

    def test_runs_ls_json_lines_and_max(self):
        p = self.cairn("runs", "ls", "-e", "cli-a", "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        runs = [json.loads(line) for line in p.stdout.splitlines()]
        self.assertEqual({r["info"]["run_name"] for r in runs}, {"alpha", "beta", "plain"})
        alpha = [r for r in runs if r["info"]["run_id"] == self.alpha["run_id"]][0]
        self.assertIn({"key": "lr", "value": "0.1"}, alpha["data"]["params"])
        self.assertEqual([m["value"] for m in alpha["data"]["metrics"] if m["key"] == "loss"],
                         [0.5])
        p = self.cairn("runs", "ls", "--max", "1", "--columns", "name")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), ["name", "edited"])
        self.assertIn("more match", p.stderr)

    def test_runs_ls_errors_are_clear(self):
        p = self.cairn("runs", "ls", "--filter", "params.lr = '0.1' or params.lr = '1'")
        self.assertEqual(p.returncode, 1)
        self.assertIn("error: the server rejected the search: Invalid clause(s) in filter string",
                      p.stderr)
        self.assertEqual(p.stdout, "")
        p = self.cairn("runs", "ls", "--order-by", "bogus.key")
        self.assertEqual(p.returncode, 1)
        self.assertIn("'bogus'", p.stderr)
        p = self.cairn("runs", "ls", "-e", "no-such-experiment")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no experiment named 'no-such-experiment'", p.stderr)
        p = self.cairn("runs", "ls", "--columns", "name,colour")
        self.assertEqual(p.returncode, 2)
        self.assertIn("unknown column 'colour'", p.stderr)
        p = self.cairn("runs", "ls", "--tracking-uri", "http://127.0.0.1:1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot reach the tracking server", p.stderr)

    # --- runs show ---------------------------------------------------------------------------

    def test_runs_show_groups_tags_and_lists_artifacts(self):
        p = self.cairn("runs", "show", self.alpha["run_id"][:8])
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout
        self.assertIn("run           %s\n" % self.alpha["run_id"], out)
        self.assertIn("experiment    cli-a (", out)
        self.assertIn("status        FINISHED\n", out)
        self.assertRegex(out, r"\nparams\n  lr   0\.1\n  opt  adam\n")
        self.assertRegex(out, r"\nmetrics \(latest\)\n  loss  0\.5  \(step 0\)\n")
        for section, key in (("environment", "cairn.python.version"),
                             ("host", "cairn.host.os"), ("system tags", "cairn.command")):
            self.assertRegex(out, r"\n%s\n(  \S+ +.*\n)*  %s " % (section, re.escape(key)))
        self.assertRegex(out, r"\nartifacts \(\d+ files\)\n")
        self.assertRegex(out, r"\n  cairn/environment/pylock\.toml +\d")
        self.assertRegex(out, r"\n  cairn/host\.json +\d")
        p = self.cairn("runs", "show", self.alpha["run_id"], "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["run"]["info"]["run_id"], self.alpha["run_id"])
        self.assertEqual(doc["experiment_name"], "cli-a")
        self.assertIn("cairn/host.json", [a["path"] for a in doc["artifacts"]])
        p = self.cairn("runs", "show", "ffffffffff")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no run with id or id prefix 'ffffffffff'", p.stderr)

    def test_runs_pin_and_unpin_set_and_clear_the_tag(self):
        run_id = self.plain["run_id"]

        def tags():
            r = self.c.get(API + "runs/get", {"run_id": run_id})
            return {t["key"]: t["value"] for t in r.body["run"]["data"].get("tags", [])}

        p = self.cairn("runs", "pin", run_id[:10])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "run %s pinned: retention rules leave its artifacts alone\n"
                         % run_id)
        self.assertEqual(tags().get("cairn.pinned"), "true")
        self.assertEqual(tags().get("team"), "vision", "other tags stay")
        for _ in range(2):  # a run not pinned is unpinned already: no error
            p = self.cairn("runs", "unpin", run_id)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(p.stdout, "run %s unpinned\n" % run_id)
            self.assertNotIn("cairn.pinned", tags())
        p = self.cairn("runs", "pin", "ffffffffff")
        self.assertEqual(p.returncode, 1)
        self.assertIn("no run with id or id prefix 'ffffffffff'", p.stderr)

    # --- runs compare ------------------------------------------------------------------------

    def test_runs_compare_marks_differing_rows(self):
        p = self.cairn("runs", "compare", self.alpha["run_id"][:8], self.beta["run_id"],
                       columns=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0].split(), [self.alpha["run_id"][:8], self.beta["run_id"][:8]])
        self.assertEqual(lines[1].split(), ["name", "alpha", "beta"])
        self.assertIn(["*", "lr", "0.1", "0.01"], [line.split() for line in lines])
        self.assertIn(["*", "loss", "0.5", "0.25"], [line.split() for line in lines])
        self.assertIn(["opt", "adam", "adam"], [line.split() for line in lines])
        env_hash = [line for line in lines if line.lstrip().startswith("env hash")]
        self.assertEqual(len(env_hash), 1)  # same environment: present and not marked
        self.assertFalse(env_hash[0].startswith("*"))
        self.assertNotIn("\x1b[", p.stdout)  # not a terminal: no colour
        p = self.cairn("runs", "compare", "--only-diff", self.alpha["run_id"],
                       self.gamma["run_id"], columns=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        rows = [line.split() for line in p.stdout.splitlines()]
        self.assertIn("environment", p.stdout)
        self.assertTrue(any(r[:3] == ["*", "env", "hash"] for r in rows), p.stdout)
        self.assertTrue(any(r[:2] == ["*", "packages"] for r in rows), p.stdout)
        self.assertNotIn("status", p.stdout)
        self.assertIn(["*", "opt", "adam", "-"], rows)  # a value against none differs
        self.assertNotIn("start", p.stdout)  # always differs, so never marked
        p = self.cairn("runs", "compare", self.alpha["run_id"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("two runs or more", p.stderr)

    # --- runs diff-env -----------------------------------------------------------------------

    def test_diff_env_same_environment_exits_0(self):
        p = self.cairn("runs", "diff-env", self.alpha["run_id"][:8], self.beta["run_id"][:8])
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.splitlines()[0], "--- %s (alpha)" % self.alpha["run_id"])
        self.assertEqual(p.stdout.splitlines()[1], "+++ %s (beta)" % self.beta["run_id"])
        self.assertRegex(p.stdout, r"no differences \(\d+ packages, Python 3\.\d+")

    def test_diff_env_against_an_empty_venv_exits_1(self):
        p = self.cairn("runs", "diff-env", self.alpha["run_id"], self.gamma["run_id"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lock = self.artifact(self.alpha, "cairn/environment/pylock.toml").decode()
        system_packages = re.findall(r'\[\[packages\]\]\nname = "([^"]+)"', lock)
        lines = p.stdout.splitlines()
        if system_packages:
            self.assertIn("packages: %d removed" % len(system_packages), lines)
            self.assertTrue(any(line.startswith("  - %s " % system_packages[0]) for line in lines),
                            p.stdout)
        self.assertIn("interpreter:", lines)
        self.assertIn("  ~ venv: false -> true", lines)
        self.assertNotIn("host:", lines)  # the same machine

    def test_diff_env_reports_changed_packages_and_host(self):
        # A run whose records are the alpha run's, edited: one package upgraded, one added,
        # another glibc and a GPU.
        edited = self.edited
        lock = self.artifact(self.alpha, "cairn/environment/pylock.toml").decode()
        m = re.search(r'\[\[packages\]\]\nname = "([^"]+)"\nversion = "([^"]+)"\n', lock)
        if m:
            lock = lock.replace(m.group(0), '[[packages]]\nname = "%s"\nversion = "999.0"\n'
                                % m.group(1), 1)
        lock = lock.replace("\n[tool.cairn]\n",
                            '\n[[packages]]\nname = "zz-extra"\nversion = "1.2.3"\n\n[tool.cairn]\n')
        host = json.loads(self.artifact(self.alpha, "cairn/host.json"))
        old_glibc = host["glibc"] or "(none)"
        host["glibc"] = "9.99"
        host["hostname"] = "elsewhere"  # not compared
        host["gpus"] = [{"index": 0, "name": "NVIDIA L4", "uuid": "GPU-x",
                         "memory_total_mib": 23034, "compute_capability": "8.9",
                         "driver_version": "550.54.15"}]
        self.put_artifact(edited, "cairn/environment/pylock.toml", lock.encode())
        self.put_artifact(edited, "cairn/host.json", json.dumps(host).encode())

        p = self.cairn("runs", "diff-env", self.alpha["run_id"], edited["run_id"])
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        lines = p.stdout.splitlines()
        self.assertIn("+++ %s (edited)" % edited["run_id"], lines)
        self.assertIn("  + zz-extra 1.2.3", lines)
        if m:
            self.assertIn("  ~ %s %s -> 999.0" % (m.group(1), m.group(2)), lines)
            self.assertIn("packages: 1 added, 1 changed", lines)
        self.assertNotIn("interpreter:", lines)
        self.assertIn("host:", lines)
        self.assertIn("  ~ glibc: %s -> 9.99" % old_glibc, lines)
        self.assertIn("  ~ gpu_count: 0 -> 1", lines)
        self.assertIn("  ~ gpus[0].name: (none) -> NVIDIA L4", lines)
        self.assertIn("  ~ gpus[0].compute_capability: (none) -> 8.9", lines)
        self.assertFalse(any("hostname" in line for line in lines))

    def test_diff_env_errors_exit_2(self):
        p = self.cairn("runs", "diff-env", self.alpha["run_id"], self.plain["run_id"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("has no artifact cairn/environment/pylock.toml", p.stderr)
        p = self.cairn("runs", "diff-env", self.alpha["run_id"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("exactly two runs", p.stderr)
        p = self.cairn("runs", "diff-env", self.alpha["run_id"], "0000000000000000")
        self.assertEqual(p.returncode, 2)
        self.assertIn("no run with id or id prefix", p.stderr)

    # --- help --------------------------------------------------------------------------------

    def test_every_command_explains_itself(self):
        for args, words in ((["experiments", "ls"], "--all"),
                            (["runs", "ls"], "--order-by"),
                            (["runs", "show"], "artifact"),
                            (["runs", "compare"], "--only-diff"),
                            (["runs", "diff-env"], "Exits 0")):
            p = self.cairn(*args, "--help")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(words, p.stdout)


if __name__ == "__main__":
    sys.exit(tl.main("cli_runs", sys.modules[__name__]))
