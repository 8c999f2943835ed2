"""PEP 517 / PEP 660 build backend for the cairn package, standard library only.

pip's build isolation would download setuptools; this backend needs nothing, so
`pip install ./python` works offline (pyproject.toml: `requires = []`, `backend-path = ["."]`).

- Metadata comes from pyproject.toml's [project] table (name, description, readme,
  requires-python, classifiers, dependencies); the version from cairn/_version.py, the one
  place it is written.
- build_wheel writes `<name>-<version>-py3-none-any.whl`: the package files plus
  `<name>-<version>.dist-info/` with METADATA, WHEEL and RECORD (sha256 digests, urlsafe base64
  without padding, and sizes; RECORD lists itself without either).
- build_editable writes a wheel whose only code is a .pth file that puts this directory on
  sys.path, so edits to cairn/ take effect without reinstalling.
- build_sdist writes `<name>-<version>.tar.gz` with PKG-INFO and everything needed to build
  the wheel again.
Archives are reproducible: sorted entries, fixed permissions, and timestamps from
$SOURCE_DATE_EPOCH (default 1980-01-01), so building twice gives identical bytes.
"""

import base64
import csv
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.abspath(__file__))
PACKAGE_DIR = "cairn"
VERSION_FILE = os.path.join(PACKAGE_DIR, "_version.py")
SDIST_FILES = ("pyproject.toml", "cairn_build.py", "README.md")
WHEEL_TAG = "py3-none-any"
ZIP_EPOCH = 315532800  # 1980-01-01, the earliest time a zip entry can hold


# -- PEP 517 hooks --------------------------------------------------------------------------------


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = [(rel.replace(os.sep, "/"), _read(rel)) for rel in _package_files()]
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    meta = _metadata()
    pth = ("__editable__.%s-%s.pth" % (_wheel_name(meta["name"]), meta["version"]),
           (ROOT + "\n").encode("utf-8"))
    return _write_wheel(wheel_directory, [pth])


def build_sdist(sdist_directory, config_settings=None):
    meta = _metadata()
    base = "%s-%s" % (_wheel_name(meta["name"]), meta["version"])
    members = [("PKG-INFO", _metadata_file(meta))]
    members += [(rel, _read(rel)) for rel in SDIST_FILES]
    members += [(rel.replace(os.sep, "/"), _read(rel)) for rel in _package_files()]
    members.sort()
    filename = base + ".tar.gz"
    mtime = _epoch()
    with open(os.path.join(sdist_directory, filename), "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for rel, data in members:
                    info = tarfile.TarInfo("%s/%s" % (base, rel))
                    info.size = len(data)
                    info.mtime = mtime
                    info.mode = 0o644
                    info.uid = info.gid = 0
                    info.uname = info.gname = ""
                    tar.addfile(info, io.BytesIO(data))
    return filename


# -- metadata -------------------------------------------------------------------------------------


def _read(rel):
    with open(os.path.join(ROOT, rel), "rb") as f:
        return f.read()


def _version():
    text = _read(VERSION_FILE).decode("utf-8")
    m = re.search(r'^__version__\s*=\s*["\']([^"\']+)["\']', text, re.M)
    if not m:
        raise RuntimeError("no __version__ = \"...\" line in " + VERSION_FILE)
    return m.group(1)


def _project_table():
    text = _read("pyproject.toml").decode("utf-8")
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the simple subset this pyproject.toml uses
        return _parse_simple_table(text, "project")
    return tomllib.loads(text).get("project", {})


def _strip_comment(line):
    quoted = False
    for i, ch in enumerate(line):
        if ch == '"':
            quoted = not quoted
        elif ch == "#" and not quoted:
            return line[:i].strip()
    return line.strip()


def _parse_simple_table(text, table):
    """key = "string" and key = ["string", ...] (one or more lines) inside [table]: the subset
    of TOML that pyproject.toml uses, for Pythons without tomllib."""
    out, current, pending = {}, None, None
    for raw in text.splitlines():
        line = _strip_comment(raw)
        if pending is not None:
            pending[1].append(line)
            if line.endswith("]"):
                out[pending[0]] = re.findall(r'"([^"]*)"', " ".join(pending[1]))
                pending = None
        elif line.startswith("["):
            current = line.strip("[]").strip()
        elif current == table and "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            if value.startswith("[") and value.endswith("]"):
                out[key] = re.findall(r'"([^"]*)"', value)
            elif value.startswith("["):
                pending = (key, [value])
            elif value.startswith('"') and value.endswith('"'):
                out[key] = value[1:-1]
    return out


def _metadata():
    project = _project_table()
    if "version" in project:
        raise RuntimeError("pyproject.toml must not set the version; it lives in " + VERSION_FILE)
    readme = project.get("readme")
    if isinstance(readme, dict):
        readme = readme.get("file")
    return {
        "name": project["name"],
        "version": _version(),
        "summary": project.get("description", ""),
        "requires_python": project.get("requires-python"),
        "classifiers": project.get("classifiers", []),
        "dependencies": project.get("dependencies", []),
        "readme": _read(readme).decode("utf-8") if readme else "",
    }


def _metadata_file(meta):
    lines = ["Metadata-Version: 2.1", "Name: " + meta["name"], "Version: " + meta["version"]]
    if meta["summary"]:
        lines.append("Summary: " + meta["summary"])
    if meta["requires_python"]:
        lines.append("Requires-Python: " + meta["requires_python"])
    lines += ["Classifier: " + c for c in meta["classifiers"]]
    lines += ["Requires-Dist: " + d for d in meta["dependencies"]]
    if meta["readme"]:
        lines.append("Description-Content-Type: text/markdown")
        return ("\n".join(lines) + "\n\n" + meta["readme"]).encode("utf-8")
    return ("\n".join(lines) + "\n").encode("utf-8")


def _wheel_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


# -- archives -------------------------------------------------------------------------------------


def _package_files():
    out = []
    for root, dirs, files in os.walk(os.path.join(ROOT, PACKAGE_DIR)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")) or name.startswith("."):
                continue
            out.append(os.path.relpath(os.path.join(root, name), ROOT))
    return out


def _epoch():
    try:
        return max(ZIP_EPOCH, int(os.environ.get("SOURCE_DATE_EPOCH", ZIP_EPOCH)))
    except ValueError:
        return ZIP_EPOCH


def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _write_wheel(wheel_directory, files):
    """files: [(archive path, bytes)] outside the .dist-info; returns the wheel's file name."""
    meta = _metadata()
    name, version = _wheel_name(meta["name"]), meta["version"]
    dist_info = "%s-%s.dist-info" % (name, version)
    wheel_file = ("Wheel-Version: 1.0\nGenerator: cairn_build (%s)\nRoot-Is-Purelib: true\n"
                  "Tag: %s\n" % (version, WHEEL_TAG)).encode("utf-8")
    entries = sorted(files) + [
        (dist_info + "/METADATA", _metadata_file(meta)),
        (dist_info + "/WHEEL", wheel_file),
    ]
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for path, data in entries:
        writer.writerow([path, _record_hash(data), len(data)])
    writer.writerow([dist_info + "/RECORD", "", ""])
    entries.append((dist_info + "/RECORD", record.getvalue().encode("utf-8")))

    filename = "%s-%s-%s.whl" % (name, version, WHEEL_TAG)
    date_time = time.gmtime(_epoch())[:6]
    path = os.path.join(wheel_directory, filename)
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, data in entries:
            info = zipfile.ZipInfo(arcname, date_time=date_time)
            info.external_attr = (0o100644 & 0xFFFF) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3  # Unix, so the permissions above are read
            zf.writestr(info, data)
    return filename
