#!/usr/bin/env python3
"""The Debian package: `cpack -G DEB` in the build directory, installed with dpkg on this
machine, then the installed /usr/bin/cairn started from / (far from the source tree) must answer
and serve its built-in web UI; the package's user, data directory, systemd unit and defaults
must be in place; purging removes it. Needs root (CI runs as root); standard library only.

    python3 tests/package/test_deb.py --build-dir build/release
"""

import argparse
import glob
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import cairn_testlib as tl  # noqa: E402

ARGS = None


def run(*cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kw)


class DebPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("installing a package needs root")
        if run("dpkg-query", "-W", "-f=${Status}", "cairn").stdout.startswith("install ok"):
            # Someone's own installation: not ours to replace and purge.
            raise unittest.SkipTest("a cairn package is installed on this machine already")
        cls.out = tempfile.mkdtemp(prefix="cairn-deb-")
        p = run("cpack", "-G", "DEB", "-B", cls.out, cwd=ARGS.build_dir)
        if p.returncode != 0:
            raise AssertionError("cpack failed:\n" + p.stdout + p.stderr)
        debs = glob.glob(os.path.join(cls.out, "cairn_*.deb"))
        if len(debs) != 1:
            raise AssertionError("cpack made %r" % debs)
        cls.deb = debs[0]
        p = run("dpkg", "-i", cls.deb)
        if p.returncode != 0:
            raise AssertionError("dpkg -i failed:\n" + p.stdout + p.stderr)

    @classmethod
    def tearDownClass(cls):
        run("dpkg", "--purge", "cairn")
        shutil.rmtree(cls.out, ignore_errors=True)

    def test_package_metadata_and_files(self):
        p = run("dpkg-deb", "--field", self.deb, "Package", "Depends")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Package: cairn", p.stdout)
        for dep in ("libcurl4", "libsqlite3", "libgit2"):
            self.assertIn(dep, p.stdout)
        files = run("dpkg", "-L", "cairn").stdout.split()
        for path in ("/usr/bin/cairn", "/usr/lib/systemd/system/cairn.service",
                     "/usr/share/doc/cairn/README.md", "/usr/share/doc/cairn/server.md",
                     "/usr/share/cairn/default.cairn"):
            self.assertIn(path, files)
        unit = open("/usr/lib/systemd/system/cairn.service").read()
        self.assertIn("User=cairn", unit)
        self.assertIn("ExecStart=/usr/bin/cairn server --data-dir /var/lib/cairn", unit)
        self.assertTrue(os.path.exists("/etc/default/cairn"))
        # Stripped: the package carries the program, not its debug information.
        self.assertLess(os.path.getsize("/usr/bin/cairn"), 60 << 20)

    def test_service_user_and_data_directory(self):
        user = pwd.getpwnam("cairn")
        st = os.stat("/var/lib/cairn")
        self.assertEqual(st.st_uid, user.pw_uid)
        self.assertEqual(st.st_mode & 0o777, 0o750)

    def test_installed_server_answers_and_serves_the_ui(self):
        data = tempfile.mkdtemp(prefix="cairn-deb-data-")
        self.addCleanup(shutil.rmtree, data, True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CAIRN_")}
        # Started from /, far from any web/dist.
        server = tl.CairnServer("/usr/bin/cairn", data, name="installed", cwd="/", env=env)
        server.start()
        try:
            with urllib.request.urlopen(server.url + "/health", timeout=10) as r:
                self.assertEqual(r.read(), b"OK")
            with urllib.request.urlopen(server.url + "/", timeout=10) as r:
                page = r.read().decode()
            self.assertIn('<div id="app"', page)
            assets = re.findall(r'(?:src|href)="(/assets/[^"]+)"', page)
            self.assertTrue(assets, page)
            for asset in assets:
                with urllib.request.urlopen(server.url + asset, timeout=10) as r:
                    self.assertEqual(r.status, 200)
                    self.assertGreater(len(r.read()), 100)
            req = urllib.request.Request(server.url + "/api/2.0/mlflow/experiments/create",
                                         json.dumps({"name": "from-the-package"}).encode(),
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertIn("experiment_id", json.loads(r.read()))
        finally:
            self.assertEqual(server.stop(), 0)

    def test_zz_purge_removes_the_package_user_and_options(self):
        # Named to run last: unittest orders a class's tests by name.
        p = run("dpkg", "--purge", "cairn")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(os.path.exists("/usr/bin/cairn"))
        self.assertFalse(os.path.exists("/etc/default/cairn"))
        self.assertNotEqual(run("getent", "passwd", "cairn").returncode, 0)


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--build-dir", required=True)
    ARGS = ap.parse_args()
    ARGS.build_dir = os.path.abspath(ARGS.build_dir)
    suite = unittest.TestLoader().loadTestsFromTestCase(DebPackageTest)
    return tl.run_suite("package_deb", suite)


if __name__ == "__main__":
    sys.exit(main())
