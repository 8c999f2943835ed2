"""cairn: log runs to a cairn (or any MLflow) tracking server. Standard library only.

    import cairn
    with cairn.start_run(experiment="demo", params={"lr": 0.01}) as run:
        for step in range(100):
            cairn.log_metric("loss", 1.0 / (step + 1), step=step)
        cairn.log_artifact("model.pt")

Metrics, params and tags are queued and sent in batches by a background thread (at least
every second, and when the run ends or the program exits). The module-level functions act on
the active run and start one when there is none. Under `cairn run`, start_run attaches to the
wrapper's run (CAIRN_RUN_ID / MLFLOW_RUN_ID) and leaves ending it to the wrapper.
"""

import json as _json
import os as _os

from . import _data
from ._http import CairnError
from ._run import Run, active_run, resolve_tracking_uri, start_run
from ._run import active_or_start as _active_or_start
from ._run import _transport
from ._version import __version__

__all__ = [
    "CairnError", "Run", "__version__", "active_run", "end_run", "flush", "log_artifact",
    "log_artifacts", "log_input", "log_metric", "log_metrics", "log_param", "log_params",
    "params", "resolve_tracking_uri", "set_tag", "set_tags", "start_run", "use_dataset",
]


def log_metric(key, value, step=None, timestamp=None):
    """Queue a metric point on the active run (step 0 and the current time by default)."""
    _active_or_start().log_metric(key, value, step=step, timestamp=timestamp)


def log_metrics(metrics, step=None, timestamp=None):
    """Queue a dict of metrics on the active run, all at one step and timestamp."""
    _active_or_start().log_metrics(metrics, step=step, timestamp=timestamp)


def log_param(key, value):
    _active_or_start().log_param(key, value)


def log_params(params):
    _active_or_start().log_params(params)


def set_tag(key, value):
    _active_or_start().set_tag(key, value)


def set_tags(tags):
    _active_or_start().set_tags(tags)


def log_artifact(local_path, artifact_path=None):
    """Upload a file into the active run's artifacts, under `artifact_path` if given."""
    _active_or_start().log_artifact(local_path, artifact_path)


def log_artifacts(local_dir, artifact_path=None):
    """Upload a directory tree into the active run's artifacts."""
    _active_or_start().log_artifacts(local_dir, artifact_path)


def log_input(dataset_name, version=None, context=None):
    """Record on the active run that it used a version of a dataset (the latest when `version`
    is None; the exact number is recorded). Returns the version record (a dict)."""
    return _active_or_start().log_input(dataset_name, version, context)


def use_dataset(name, version=None, dir=None, context=None, tracking_uri=None):
    """Put version `version` of dataset `name` (the latest when None) in `dir` (default
    data/NAME) and return the directory. Files already there with the right SHA-256 are kept;
    the others are fetched and checked against their SHA-256 before they are put in place;
    files the version does not list are left alone. When a run is active, the version is
    recorded as its input (see log_input).

        train_dir = cairn.use_dataset("mnist", version=3)
    """
    run = active_run()
    transport = run._transport if run is not None else _transport(tracking_uri)
    v = _data.get_version(transport, name, version)
    directory = dir if dir is not None else _os.path.join("data", name)
    _data.materialise(transport, v, directory)
    if run is not None:
        run._transport.call("POST", "/api/2.0/mlflow/runs/log-inputs",
                            {"run_id": run.run_id, "datasets": [_data.input_record(v, context)]})
    return directory


def flush():
    """Send everything queued for the active run now (no-op without one)."""
    run = active_run()
    if run is not None:
        run.flush()


def end_run(status="FINISHED"):
    """End the active run (no-op without one). Under `cairn run` the run is flushed and
    detached; the wrapper ends it from the command's exit code."""
    run = active_run()
    if run is not None:
        run.end_run(status)


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _convert(name, text, default):
    if isinstance(default, bool):
        lowered = text.strip().lower()
        if lowered in _TRUE or lowered in _FALSE:
            return lowered in _TRUE
        raise ValueError("parameter %r is %r, which is not a boolean" % (name, text))
    for kind in (int, float):
        if isinstance(default, kind):
            try:
                return kind(text)
            except ValueError:
                raise ValueError("parameter %r is %r, which is not %s" % (
                    name, text, "an integer" if kind is int else "a number")) from None
    return text


def params(defaults=None):
    """The parameters this program was started with, over `defaults`.

    Under `cairn run -p NAME=VALUE`, and in a task an agent runs (`cairn run --queue`,
    `cairn clone RUN -p NAME=VALUE`), the values come from CAIRN_PARAMS. A value whose default
    is a bool, int or float is converted to that type (ValueError when it cannot be); the rest
    are strings. Parameters without a default are included as strings. Elsewhere the defaults
    come back unchanged:

        p = cairn.params({"lr": 0.01, "epochs": 3})
        for epoch in range(p["epochs"]): ...
    """
    out = dict(defaults or {})
    text = _os.environ.get("CAIRN_PARAMS", "")
    given = _json.loads(text) if text else {}
    if not isinstance(given, dict):
        raise ValueError("CAIRN_PARAMS is not a JSON object")
    for name, value in given.items():
        out[name] = _convert(name, str(value), out[name]) if name in out else str(value)
    return out
