"""Datasets: recording which version of a dataset a run used, and putting a version's files
in a directory, checked against their SHA-256 (docs/data.md).

A version is named NAME@VERSION on the server; its manifest lists each file's path, size,
mode and SHA-256, and the manifest's own SHA-256 is the version's digest.
"""

import hashlib
import json
import os
import urllib.parse

from ._http import CairnError

CAIRN_API = "/api/cairn/v1/"
ARTIFACTS_API = "/api/2.0/mlflow-artifacts/artifacts/"
SOURCE_TYPE = "cairn"
_BLOCK = 1 << 20


def get_version(transport, name, version=None):
    """The version record (a dict: name, version, digest, files, bytes, ...); the latest when
    `version` is None."""
    query = {"name": name}
    if version is not None:
        query["version"] = str(_version_number(version))
    return transport.call("GET", CAIRN_API + "datasets/get", query=query)["version"]


def _version_number(version):
    text = str(version)
    if text.startswith("v"):
        text = text[1:]
    try:
        number = int(text)
    except ValueError:
        raise CairnError("%r is not a dataset version: use a number from 1" % (version,),
                         "INVALID_PARAMETER_VALUE") from None
    if number < 1:
        raise CairnError("dataset versions count from 1, not %d" % number,
                         "INVALID_PARAMETER_VALUE")
    return number


def input_record(v, context=None):
    """The runs/log-inputs entry that records version `v`, as `cairn run --data` writes it."""
    source = {"uri": "cairn-data:%s@%d" % (v["name"], v["version"]), "name": v["name"],
              "version": v["version"], "digest": v["digest"]}
    dataset = {"name": v["name"], "digest": v["digest"][:32], "source_type": SOURCE_TYPE,
               "source": json.dumps(source, separators=(",", ":")),
               "profile": json.dumps({"files": v["files"], "bytes": v["bytes"]},
                                     separators=(",", ":"))}
    tags = [{"key": "mlflow.data.context", "value": context}] if context else []
    return {"tags": tags, "dataset": dataset}


def _file_sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(_BLOCK)
            if not block:
                return h.hexdigest()
            h.update(block)


def _safe_join(root, rel):
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts) or "\0" in rel:
        raise CairnError("the server listed a file at %r, which is not a relative path" % rel,
                         "INVALID_RESPONSE")
    return os.path.join(root, *parts)


def materialise(transport, v, directory):
    """Make `directory` hold version `v`'s files: those already there with the right SHA-256
    are kept, the others fetched, checked and put in place. Files the version does not list are
    left alone. Returns (files fetched, bytes fetched)."""
    raw = transport.get_bytes(CAIRN_API + "datasets/manifest",
                              query={"name": v["name"], "version": str(v["version"])})
    if hashlib.sha256(raw).hexdigest() != v["digest"]:
        raise CairnError("the manifest of %s@%d does not match its digest %s"
                         % (v["name"], v["version"], v["digest"]), "INVALID_RESPONSE")
    entries = json.loads(raw.decode("utf-8"))["entries"]
    fetched = fetched_bytes = 0
    for e in entries:
        dest = _safe_join(directory, e["path"])
        executable = e["mode"] == "100755"
        if os.path.isfile(dest) and not os.path.islink(dest) \
                and os.path.getsize(dest) == e["size"] and _file_sha256(dest) == e["sha256"]:
            if executable != bool(os.stat(dest).st_mode & 0o100):
                os.chmod(dest, 0o755 if executable else 0o644)
            continue
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        tmp = dest + ".cairn-part"
        path = "datasets/%s/%s/%s" % (v["name"], v["digest"], e["path"])
        transport.download(ARTIFACTS_API + urllib.parse.quote(path, safe="/"), tmp)
        got = _file_sha256(tmp)
        if got != e["sha256"]:
            os.remove(tmp)
            raise CairnError("the server sent bytes for %s that hash to %s, not %s"
                             % (e["path"], got, e["sha256"]), "INVALID_RESPONSE")
        os.chmod(tmp, 0o755 if executable else 0o644)
        os.replace(tmp, dest)
        fetched += 1
        fetched_bytes += e["size"]
    return fetched, fetched_bytes
