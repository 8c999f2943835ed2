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

from ._http import CairnError
from ._run import Run, active_run, resolve_tracking_uri, start_run
from ._run import active_or_start as _active_or_start
from ._version import __version__

__all__ = [
    "CairnError", "Run", "__version__", "active_run", "end_run", "flush", "log_artifact",
    "log_artifacts", "log_metric", "log_metrics", "log_param", "log_params", "params",
    "resolve_tracking_uri", "set_tag", "set_tags", "start_run",
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
