#!/usr/bin/env python3
"""`cairn env` end to end, on wheels built by tests/fixtures/wheels.py: locking every case of the
resolver set (backtracking, extras, markers, Requires-Python, pre-releases, platform tags,
conflicts explained), the same lock from a find-links directory and from a simple index, byte-
identical locks, builds that import their packages and run their scripts without touching the
index, a hash mismatch, a build killed midway, rollback, base layers, host checks against a
recorded old driver, check, diff, snapshots, conda imports, and `cairn run` in the active
environment.

Usage: test_env.py --cairn build/release/cairn
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fixtures"))
import cairn_testlib as tl  # noqa: E402
import simple_index  # noqa: E402
import wheels  # noqa: E402

API = "/api/2.0/mlflow/"
PYTHON = "/usr/bin/python3"

# Host facts as `cairn run` records them (cairn/host.json), from the recorded outputs in
# tests/data/host: two Tesla K80 on driver 470 (CUDA 11.4, no compute capability reported),
# and two A100 on driver 535.
HOST_470 = {"os": "linux", "glibc": "2.31", "machine": "x86_64",
            "driver_version": "470.199.02", "cuda_driver_version": "11.4",
            "gpus": [{"index": i, "name": "Tesla K80", "uuid": "GPU-%d" % i,
                      "memory_total_mib": 11441, "compute_capability": "",
                      "driver_version": "470.199.02"} for i in range(2)]}
HOST_535 = {"os": "linux", "glibc": "2.35", "machine": "x86_64",
            "driver_version": "535.104.05", "cuda_driver_version": "12.2",
            "gpus": [{"index": i, "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-%d" % i,
                      "memory_total_mib": 81920, "compute_capability": "8.0",
                      "driver_version": "535.104.05"} for i in range(2)]}


def yaml_list(items):
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


class EnvTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root, _ = tl.make_temp_root("cairn-env-")
        cls.wheels = os.path.join(cls.root, "wheels")
        wheels.resolver_set(cls.wheels)
        cls.env = dict(os.environ, CAIRN_ENV_STORE=os.path.join(cls.root, "store"),
                       CAIRN_CACHE_DIR=os.path.join(cls.root, "cache"),
                       PATH="/usr/local/bin:/usr/bin:/bin")
        cls.env.pop("CAIRN_TRACKING_URI", None)
        cls.count = 0

    @classmethod
    def tearDownClass(cls):
        if not tl.keep_data():
            shutil.rmtree(cls.root, True)

    # -- helpers --------------------------------------------------------------------------------

    def project(self, requirements, sources=None, pre=False, extra=""):
        """A project directory with a cairn.yaml; returns its path."""
        EnvTest.count += 1
        path = os.path.join(self.root, "p%d" % EnvTest.count)
        os.makedirs(path)
        sources = sources or ["find-links: %s" % self.wheels]
        with open(os.path.join(path, "cairn.yaml"), "w") as f:
            f.write("environment:\n  python: \"3.11\"\n  requirements: %s\n  sources:\n%s"
                    "  prereleases: %s\n%s" % (yaml_list(requirements),
                                               "".join("    - %s\n" % s for s in sources),
                                               "true" if pre else "false", extra))
        return path

    def cairn(self, *args, cwd, env=None, timeout=300):
        return subprocess.run([tl.CONFIG.cairn, *args], cwd=cwd, env=env or self.env,
                              capture_output=True, text=True, timeout=timeout)

    def ok(self, *args, cwd, env=None):
        p = self.cairn(*args, cwd=cwd, env=env)
        self.assertEqual(p.returncode, 0, "cairn %s:\n%s%s" % (" ".join(args), p.stdout, p.stderr))
        return p

    def lock(self, project):
        self.ok("env", "lock", cwd=project)
        with open(os.path.join(project, "pylock.toml"), "rb") as f:
            return tomllib.load(f)

    def versions(self, lock):
        return {p["name"]: p["version"] for p in lock["packages"]}

    def active(self, project):
        link = os.path.join(project, ".cairn", "env", "current")
        return os.readlink(link) if os.path.islink(link) else None

    def python_in(self, prefix, code):
        return subprocess.run([os.path.join(prefix, "bin", "python"), "-c", code],
                              capture_output=True, text=True, timeout=60)

    # -- lock -----------------------------------------------------------------------------------

    def test_every_resolver_case(self):
        for case in wheels.RESOLVER_CASES:
            with self.subTest(requirements=case.requirements, pre=case.pre):
                project = self.project(case.requirements, pre=case.pre)
                p = self.cairn("env", "lock", cwd=project)
                if case.expect is None:
                    self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
                    for culprit in case.culprits:
                        self.assertIn(culprit, p.stderr)
                    continue
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(os.path.join(project, "pylock.toml"), "rb") as f:
                    lock = tomllib.load(f)
                self.assertEqual(self.versions(lock), case.expect, case.why)
                for name, filename in case.wheels.items():
                    got = [p for p in lock["packages"] if p["name"] == name][0]
                    self.assertEqual([w["name"] for w in got["wheels"]], [filename])

    def test_a_conflict_is_explained_as_chains_of_requirements(self):
        project = self.project(["conflict-x", "conflict-y"])
        p = self.cairn("env", "lock", cwd=project)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no version of conflict-z fits", p.stderr)
        self.assertIn("conflict-z==1: required by conflict-x 1.0", p.stderr)
        self.assertIn("conflict-z==2: required by conflict-y 1.0", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(project, "pylock.toml")))

    def test_the_same_inputs_give_a_byte_identical_lock(self):
        project = self.project(["alpha", "gamma", "delta[fast]", "kappa"])
        self.ok("env", "lock", cwd=project)
        with open(os.path.join(project, "pylock.toml"), "rb") as f:
            first = f.read()
        self.ok("env", "lock", "-o", "again.toml", cwd=project)
        with open(os.path.join(project, "again.toml"), "rb") as f:
            self.assertEqual(f.read(), first)
        lock = tomllib.loads(first.decode())
        for package in lock["packages"]:
            (wheel,) = package["wheels"]
            self.assertEqual(len(wheel["hashes"]["sha256"]), 64)
            self.assertGreater(wheel["size"], 0)
            self.assertFalse(os.path.isabs(wheel["path"]), "paths are relative to the lock")
        self.assertEqual(self.ok("env", "lock", "--check", cwd=project).returncode, 0)
        with open(os.path.join(project, "cairn.yaml"), "a") as f:
            f.write("  host:\n    cuda: \"12\"\n")
        stale = self.cairn("env", "lock", "--check", cwd=project)
        self.assertEqual(stale.returncode, 1)
        self.assertIn("stale", stale.stdout)

    def test_a_lock_for_other_platforms_picks_their_wheels(self):
        # kappa 1.1 has a cp311 manylinux x86_64 wheel: on aarch64 only its pure wheel fits.
        aarch64 = self.project(["kappa", "zeta", "iota"],
                               extra="  platforms: [cp311-manylinux_2_17_aarch64]\n")
        lock = self.lock(aarch64)
        self.assertEqual(lock["tool"]["cairn"]["target"], "cp311-manylinux_2_17_aarch64")
        self.assertEqual(self.versions(lock), {"kappa": "1.1", "zeta": "1.0",
                                               "linux-helper": "1.0", "iota": "1.0"})
        kappa = [p for p in lock["packages"] if p["name"] == "kappa"][0]
        self.assertEqual([w["name"] for w in kappa["wheels"]], ["kappa-1.1-py3-none-any.whl"])
        self.assertIn('platform_machine == "aarch64"', lock["environments"][0])
        # Two platforms: one entry per package, listing each platform's wheel.
        both = self.project(["kappa"], extra="  platforms: [cp311-manylinux_2_17_x86_64, "
                                             "cp311-manylinux_2_17_aarch64]\n")
        lock = self.lock(both)
        (kappa,) = lock["packages"]
        self.assertEqual(sorted(w["name"] for w in kappa["wheels"]),
                         sorted([wheels.KAPPA_LINUX_WHEEL, "kappa-1.1-py3-none-any.whl"]))
        self.assertEqual(len(lock["environments"]), 2)
        self.ok("env", "build", cwd=both)
        p = self.python_in(self.active(both), "import kappa; print(kappa.__variant__)")
        self.assertEqual(p.stdout.strip(), "manylinux-cp311", p.stderr)
        # Python 3.12 is not the spec's 3.11: the lock says so instead of guessing.
        other_python = self.project(["kappa"], extra="  platforms: [cp312-manylinux_2_17_x86_64]\n")
        p = self.cairn("env", "lock", cwd=other_python)
        self.assertEqual(p.returncode, 2)
        self.assertIn("not for Python 3.11", p.stderr)

    def test_a_simple_index_gives_the_same_versions_and_builds_without_it(self):
        case = wheels.RESOLVER_CASES[-1]  # everything installable at once
        env = dict(self.env, CAIRN_CACHE_DIR=os.path.join(self.root, "cache-index"))
        with simple_index.SimpleIndex(self.wheels) as index:
            project = self.project(case.requirements, sources=["index: %s" % index.url])
            self.ok("env", "lock", cwd=project, env=env)
            with open(os.path.join(project, "pylock.toml"), "rb") as f:
                lock = tomllib.load(f)
            self.assertEqual(self.versions(lock), case.expect)
            self.assertTrue(all(p["wheels"][0]["url"].startswith("http://127.0.0.1")
                                for p in lock["packages"]))
            # Locking read the metadata files (PEP 658), not the wheels.
            self.assertFalse(any(path.endswith(".whl") for _, path, *_ in index.log))
            index.reset_counts()
            self.ok("env", "build", cwd=project, env=env)
            self.assertEqual(index.count("/simple/"), 0, "building must not resolve again")
            self.assertEqual(index.count("/files/"), len(lock["packages"]))
            index.reset_counts()
            again = self.ok("env", "build", cwd=project, env=env)
            self.assertIn("built already", again.stdout)
            self.assertEqual(index.count(), 0)

    # -- build ----------------------------------------------------------------------------------

    def test_a_built_environment_imports_its_packages_and_runs_its_scripts(self):
        case = wheels.RESOLVER_CASES[-1]
        project = self.project(case.requirements)
        self.lock(project)
        p = self.ok("env", "build", cwd=project)
        self.assertIn("built environment", p.stdout)
        prefix = self.active(project)
        self.assertTrue(prefix and prefix.startswith(self.env["CAIRN_ENV_STORE"]), prefix)
        code = ("import alpha, beta, gamma, delta, epsilon, zeta, kappa, mu, nu, mixed_case_name;"
                "print(alpha.__version__, beta.__version__, sys.prefix)")
        r = self.python_in(prefix, "import sys;" + code)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["2.0", "1.5", prefix])
        hello = subprocess.run([os.path.join(prefix, "bin", "kappa-hello")],
                               capture_output=True, text=True, timeout=60)
        self.assertIn("kappa 1.1 (manylinux-cp311) says hello", hello.stdout)
        mu = subprocess.run([os.path.join(prefix, "bin", "mu-hello")],
                            capture_output=True, text=True, timeout=60)
        self.assertEqual(mu.returncode, 0, mu.stderr)
        self.assertIn("hello from console_scripts", mu.stdout)
        # Nothing of pip's: the environment holds exactly the lock.
        r = self.python_in(prefix, "import importlib.metadata as m; "
                                   "print(sorted(d.metadata['Name'] for d in m.distributions()))")
        self.assertNotIn("pip", r.stdout)
        ex = self.ok("env", "exec", "--", "python", "-c", "import sys; print(sys.prefix)",
                     cwd=project)
        self.assertEqual(ex.stdout.strip(), prefix)

    def test_a_wheel_with_another_hash_fails_the_build_and_leaves_nothing(self):
        store = os.path.join(self.root, "store-mismatch")
        env = dict(self.env, CAIRN_ENV_STORE=store, CAIRN_CACHE_DIR=os.path.join(self.root, "c2"))
        with simple_index.SimpleIndex(self.wheels) as index:
            project = self.project(["alpha"], sources=["index: %s" % index.url])
            self.ok("env", "lock", cwd=project, env=env)
            index.corrupt("beta-1.5-py3-none-any.whl")
            p = self.cairn("env", "build", cwd=project, env=env)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("beta 1.5", p.stderr)
        self.assertIn("sha256", p.stderr.lower())
        self.assertEqual([n for n in os.listdir(store) if not n.startswith(".")
                          and n != "projects"], [])
        self.assertIsNone(self.active(project))

    def test_a_build_killed_midway_leaves_no_environment(self):
        bench = os.path.join(self.root, "bench")
        _, requirements = wheels.bench_set(bench)
        store = os.path.join(self.root, "store-killed")
        env = dict(self.env, CAIRN_ENV_STORE=store, CAIRN_CACHE_DIR=os.path.join(self.root, "c3"))
        project = self.project(requirements, sources=["find-links: %s" % bench])
        self.ok("env", "lock", cwd=project, env=env)
        proc = subprocess.Popen([tl.CONFIG.cairn, "env", "build"], cwd=project, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if os.path.isdir(store) and any(n.startswith(".build-") for n in os.listdir(store)):
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        built = [n for n in os.listdir(store) if len(n) == 16]
        self.assertEqual(built, [], "a killed build must not leave an environment")
        self.assertIsNone(self.active(project))
        self.ok("env", "build", cwd=project, env=env)
        r = self.python_in(self.active(project), "import bench_app; print('ok')")
        self.assertEqual(r.stdout.strip(), "ok", r.stderr)

    # -- versions -------------------------------------------------------------------------------

    def test_rollback_ls_and_use(self):
        project = self.project(["alpha"])
        self.lock(project)
        self.ok("env", "build", cwd=project)
        first = self.active(project)
        with open(os.path.join(project, "cairn.yaml"), "w") as f:
            f.write("environment:\n  python: \"3.11\"\n  requirements: [gamma]\n"
                    "  sources:\n    - find-links: %s\n" % self.wheels)
        self.lock(project)
        self.ok("env", "build", cwd=project)
        second = self.active(project)
        self.assertNotEqual(first, second)
        self.assertEqual(self.python_in(second, "import gamma; print(gamma.__version__)")
                         .stdout.strip(), "2.0")
        self.ok("env", "rollback", cwd=project)
        self.assertEqual(self.active(project), first)
        self.assertTrue(os.path.isdir(second), "versions stay side by side")
        listing = self.ok("env", "ls", cwd=project).stdout
        self.assertIn("* " + os.path.basename(first), listing)
        self.assertIn(os.path.basename(second), listing)
        self.ok("env", "use", os.path.basename(second)[:8], cwd=project)
        self.assertEqual(self.active(project), second)
        lines = [json.loads(l) for l in self.ok("env", "ls", "--json", cwd=project).stdout.split("\n") if l]
        self.assertEqual({l["id"]: l["active"] for l in lines},
                         {os.path.basename(first): False, os.path.basename(second): True})

    def test_a_base_layer_is_shared_and_shadowed(self):
        base = self.project(["gamma", "zeta"])  # gamma 2.0, beta 2.1, zeta 1.0, linux-helper 1.0
        self.lock(base)
        project = self.project(["alpha", "zeta"],  # alpha 2.0, beta 1.5, zeta, linux-helper
                               extra="  base: %s\n" % os.path.join(base, "pylock.toml"))
        lock = self.lock(project)
        self.assertTrue(lock["tool"]["cairn"]["base"].endswith("pylock.toml"))
        self.ok("env", "build", cwd=project)
        prefix = self.active(project)
        r = self.python_in(prefix, "import alpha, beta, gamma, zeta; "
                                   "print(beta.__version__, gamma.__version__, zeta.__file__)")
        self.assertEqual(r.returncode, 0, r.stderr)
        version_of_beta, version_of_gamma, zeta_file = r.stdout.split()
        self.assertEqual((version_of_beta, version_of_gamma), ("1.5", "2.0"))
        self.assertFalse(zeta_file.startswith(prefix), "zeta is the base's, not installed again")
        check = self.cairn("env", "check", "--json", cwd=project)
        report = json.loads(check.stdout)
        self.assertIn("beta", json.dumps(report.get("shadowed", report)))

    # -- check ----------------------------------------------------------------------------------

    def test_host_check_fails_on_an_old_driver(self):
        project = self.project(["alpha"], extra="  host:\n    cuda: \"12\"\n")
        self.lock(project)
        self.ok("env", "build", cwd=project)
        for name, facts in (("470", HOST_470), ("535", HOST_535)):
            with open(os.path.join(project, "host-%s.json" % name), "w") as f:
                json.dump(facts, f)
        old = self.cairn("env", "check", "--host", "host-470.json", cwd=project)
        self.assertEqual(old.returncode, 1, old.stdout + old.stderr)
        self.assertIn("525.60.13", old.stdout)
        self.assertIn("470.199.02", old.stdout)
        new = self.cairn("env", "check", "--host", "host-535.json", cwd=project)
        self.assertEqual(new.returncode, 0, new.stdout + new.stderr)

    def test_check_finds_changed_missing_and_extra_packages(self):
        project = self.project(["alpha"])
        self.lock(project)
        self.ok("env", "build", cwd=project)
        prefix = self.active(project)
        clean = self.cairn("env", "check", cwd=project)
        self.assertEqual(clean.returncode, 0, clean.stdout + clean.stderr)
        site = os.path.join(prefix, "lib", "python3.11", "site-packages")
        init = os.path.join(site, "alpha", "__init__.py")
        os.unlink(init)  # replaced, not written in place: the cache shares its inode
        with open(init, "w") as f:
            f.write("__version__ = 'tampered'\n")
        shutil.rmtree(os.path.join(site, "beta"))
        report = self.cairn("env", "check", "--json", cwd=project)
        self.assertEqual(report.returncode, 1)
        text = report.stdout
        self.assertIn("alpha/__init__.py", text)
        self.assertIn("beta", text)

    # -- compare --------------------------------------------------------------------------------

    def test_diff_of_two_locks_and_of_an_environment(self):
        a = self.project(["alpha"])
        b = self.project(["gamma", "delta"])
        self.lock(a)
        self.lock(b)
        la, lb = os.path.join(a, "pylock.toml"), os.path.join(b, "pylock.toml")
        p = self.cairn("env", "diff", la, lb, cwd=self.root)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("+ gamma 2.0", p.stdout)
        self.assertIn("+ delta 1.0", p.stdout)
        self.assertIn("- alpha 2.0", p.stdout)
        self.assertIn("~ beta 1.5 -> 2.1", p.stdout)
        same = self.cairn("env", "diff", la, la, cwd=self.root)
        self.assertEqual(same.returncode, 0, same.stdout + same.stderr)
        self.ok("env", "build", cwd=a)
        env_id = os.path.basename(self.active(a))
        p = self.cairn("env", "diff", env_id, la, cwd=self.root)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_snapshot_and_conda_import(self):
        project = self.project(["alpha"])
        self.lock(project)
        self.ok("env", "build", cwd=project)
        prefix = self.active(project)
        snap = self.ok("env", "snapshot", "--python", os.path.join(prefix, "bin", "python"),
                       cwd=project).stdout
        parsed = tomllib.loads(snap)
        self.assertEqual({p["name"]: p.get("version") for p in parsed["packages"]},
                         {"alpha": "2.0", "beta": "1.5"})
        facts = parsed["tool"]["cairn"]["host-facts"]
        self.assertEqual(facts["os"], "linux")
        self.assertEqual(facts["machine"], os.uname().machine)
        self.assertEqual(facts["glibc"], os.confstr("CS_GNU_LIBC_VERSION").split()[1])
        self.assertEqual(facts["cpu_cores"], os.cpu_count())
        if not shutil.which("nvidia-smi"):
            self.assertEqual(facts["gpu"], "no GPU")
        # The same packages on a host with another driver: only the host differs.
        here = os.path.join(project, "here.toml")
        there = os.path.join(project, "there.toml")
        with open(here, "w") as f:
            f.write(snap)
        with open(there, "w") as f:
            f.write(re.sub(r'(?m)^hostname = .*$', 'hostname = "elsewhere"',
                           re.sub(r'(?m)^cuda_driver_version = .*$',
                                  'cuda_driver_version = "99.9"', snap)))
        p = self.cairn("env", "diff", here, there, cwd=project)
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("host:\n  ~ cuda_driver_version: %s -> 99.9\n"
                      % (facts["cuda_driver_version"] or "(none)"), p.stdout)
        self.assertNotIn("packages:", p.stdout)
        self.assertNotIn("hostname", p.stdout)
        explicit = os.path.join(project, "conda.txt")
        with open(explicit, "w") as f:
            f.write("# platform: linux-64\n@EXPLICIT\n"
                    "https://conda.anaconda.org/conda-forge/linux-64/"
                    "libzlib-1.2.13-hd590300_5.conda#f36c115f1ee199da648e0597ec2047ad\n")
        self.ok("env", "import-conda", explicit, cwd=project)
        with open(os.path.join(project, "pylock.toml"), "rb") as f:
            conda = tomllib.load(f)["tool"]["cairn"]["conda"]
        self.assertEqual(conda[0]["name"], "libzlib")
        self.assertEqual(conda[0]["channel"], "conda-forge")


class RunInEnvTest(unittest.TestCase):
    """`cairn run` in a project with an active environment."""

    def test_the_command_runs_in_the_active_environment_and_the_run_records_it(self):
        root, data = tl.make_temp_root("cairn-env-run-")
        self.addCleanup(shutil.rmtree, root, True)
        server = tl.CairnServer(tl.CONFIG.cairn, data, name="cairn (env run)")
        tl.add_diagnostic(server.log_tail)
        server.start()
        self.addCleanup(server.stop)
        wheel_dir = os.path.join(root, "wheels")
        wheels.resolver_set(wheel_dir)
        project = os.path.join(root, "project")
        os.makedirs(project)
        with open(os.path.join(project, "cairn.yaml"), "w") as f:
            f.write("environment:\n  python: \"3.11\"\n  requirements: [alpha]\n"
                    "  sources:\n    - find-links: %s\n" % wheel_dir)
        env = dict(os.environ, CAIRN_ENV_STORE=os.path.join(root, "store"),
                   CAIRN_CACHE_DIR=os.path.join(root, "cache"), CAIRN_HOME=root,
                   CAIRN_TRACKING_URI=server.url, PATH="/usr/local/bin:/usr/bin:/bin")
        for args in (["env", "lock"], ["env", "build"]):
            p = subprocess.run([tl.CONFIG.cairn, *args], cwd=project, env=env,
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
        prefix = os.readlink(os.path.join(project, ".cairn", "env", "current"))
        p = subprocess.run([tl.CONFIG.cairn, "run", "--system-metrics-interval", "0", "--",
                            "python", "-c", "import alpha, sys; print(sys.prefix)"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), prefix)
        run_id = [l.split()[2] for l in p.stderr.splitlines() if " in experiment " in l][0]
        run = server.client().get(API + "runs/get", {"run_id": run_id}).body["run"]
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        with open(os.path.join(project, "pylock.toml"), "rb") as f:
            import hashlib
            lock_hash = hashlib.sha256(f.read()).hexdigest()
        self.assertEqual(tags["cairn.env.lock"], lock_hash)
        self.assertEqual(tags["cairn.env.id"], os.path.basename(prefix))
        self.assertEqual(tags["cairn.python.executable"], os.path.join(prefix, "bin", "python"))
        listing = subprocess.run([tl.CONFIG.cairn, "env", "ls"], cwd=project, env=env,
                                 capture_output=True, text=True, timeout=60).stdout
        self.assertIn(run_id[:8], listing)


if __name__ == "__main__":
    sys.exit(tl.main("env", sys.modules[__name__]))
