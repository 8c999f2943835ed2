#!/usr/bin/env python3
"""The baseline for cairn's environment builder: pip making the benchmark environment.

Usage: bench/pip_baseline.py [--dir DIR] [--repeats 3] [--seed 0] [--compile both|default|no]

Builds the bench set of tests/fixtures/wheels.py (40 distributions, about 23 MB of wheels and
20,000 files; in a temporary directory unless --dir), then times, in a fresh directory each
run, `python3 -m venv` followed by `pip install --no-index --find-links DIR bench-app` (which
pulls all 40), with pip's cache disabled and no pip configuration from the caller. pip's
default byte-compiles every installed .py file; that is the baseline row. `--no-compile` runs
are measured too (interleaved with the default ones) unless --compile says otherwise. Prints
the median of each figure over the runs, with every run's time.
"""
import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "fixtures"))
import wheels  # noqa: E402


def child_env():
    """No PIP_* settings or pip config of the caller, nothing from the network, and Python's
    defaults for bytecode (pip's own compile step is what is measured)."""
    env = {k: v for k, v in os.environ.items()
           if not k.upper().startswith("PIP_")
           and k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")}
    env.update(PIP_CONFIG_FILE=os.devnull, http_proxy="http://127.0.0.1:9",
               https_proxy="http://127.0.0.1:9")
    return env


def count_files(top):
    return sum(len(files) for _, _, files in os.walk(top))


def dist_infos(venv):
    out = []
    for root, dirs, _ in os.walk(os.path.join(venv, "lib")):
        out += [d for d in dirs if d.endswith(".dist-info")]
        dirs[:] = [d for d in dirs if d == "site-packages" or d.startswith("python")]
    return out


def one_run(python, wheel_dir, requirements, compile_, scratch):
    """(venv seconds, pip seconds, files pip wrote, distributions pip installed)."""
    venv = tempfile.mkdtemp(prefix="venv-", dir=scratch)
    env = child_env()
    try:
        t0 = time.perf_counter()
        subprocess.run([python, "-m", "venv", venv], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        venv_s = time.perf_counter() - t0
        files_before, dists_before = count_files(venv), len(dist_infos(venv))
        cmd = [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "--no-index",
               "--find-links", wheel_dir, "--no-cache-dir", "--disable-pip-version-check",
               "--quiet"]
        if not compile_:
            cmd.append("--no-compile")
        t1 = time.perf_counter()
        p = subprocess.run(cmd + list(requirements), env=env, capture_output=True, text=True)
        pip_s = time.perf_counter() - t1
        if p.returncode != 0:
            raise RuntimeError("pip failed (%d): %s" % (p.returncode, p.stdout + p.stderr))
        return (venv_s, pip_s, count_files(venv) - files_before,
                len(dist_infos(venv)) - dists_before)
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def pip_version(python, scratch):
    venv = os.path.join(scratch, "probe")
    subprocess.run([python, "-m", "venv", venv], env=child_env(), check=True,
                   stdout=subprocess.DEVNULL)
    out = subprocess.run([os.path.join(venv, "bin", "python"), "-m", "pip", "--version"],
                         env=child_env(), capture_output=True, text=True, check=True).stdout
    shutil.rmtree(venv)
    return out.split()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", help="build the wheels here (default: a temporary directory)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", choices=("both", "default", "no"), default="both",
                    help="default: pip as it is (byte-compiles); no: --no-compile")
    ap.add_argument("--python", default="/usr/bin/python3" if os.path.exists("/usr/bin/python3")
                    else sys.executable, help="the interpreter whose venv runs pip")
    args = ap.parse_args()
    scratch = tempfile.mkdtemp(prefix="cairn-pip-baseline-")
    try:
        wheel_dir = os.path.abspath(args.dir) if args.dir else os.path.join(scratch, "wheels")
        t = time.perf_counter()
        paths, requirements = wheels.bench_set(wheel_dir, seed=args.seed)
        build_s = time.perf_counter() - t
        count, size, files = wheels.summarize(paths)
        pyver = subprocess.run([args.python, "-c", "import platform; "
                                "print(platform.python_version())"], capture_output=True,
                               text=True, check=True).stdout.strip()
        print("bench set: %d wheels, %.1f MB, %d files in the wheels (seed %d, built in %.1f s)"
              % (count, size / 1e6, files, args.seed, build_s))
        print("pip %s, Python %s (%s), %s, %d CPUs, load average %.2f at start; %d runs each"
              % (pip_version(args.python, scratch), pyver, args.python, platform.machine(),
                 os.cpu_count(), os.getloadavg()[0], args.repeats), flush=True)

        modes = {"both": [True, False], "default": [True], "no": [False]}[args.compile]
        runs = {m: [] for m in modes}
        for _ in range(args.repeats):
            for m in modes:  # interleaved, so drifting load hits both alike
                runs[m].append(one_run(args.python, wheel_dir, requirements, m, scratch))

        def row(name, value, unit, note=""):
            print(("%-52s %10s %-6s %s" % (name, value, unit, note)).rstrip(), flush=True)

        for m in modes:
            r = runs[m]
            total = [v + p for v, p, _, _ in r]
            dists = {d for _, _, _, d in r}
            if dists != {count}:
                raise RuntimeError("pip installed %s distributions, expected %d" % (dists, count))
            label = ("venv + pip install (pip's default: byte-compiles)" if m
                     else "venv + pip install --no-compile")
            row(label, "%.1f" % statistics.median(total), "s",
                "runs: " + " ".join("%.1f" % x for x in total) + ("  <- baseline" if m else ""))
            row("  python3 -m venv", "%.1f" % statistics.median(v for v, _, _, _ in r), "s")
            row("  pip install (%d distributions)" % count,
                "%.1f" % statistics.median(p for _, p, _, _ in r), "s")
            row("  files pip wrote" + (" (incl. .pyc)" if m else ""),
                "%d" % statistics.median(n for _, _, n, _ in r), "files")
        if True in runs:
            print("baseline: pip needs %.1f s here for %d distributions, %.1f MB of wheels, "
                  "%d files in the wheels (pip's default, with byte-compilation)"
                  % (statistics.median(v + p for v, p, _, _ in runs[True]), count, size / 1e6,
                     files))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
