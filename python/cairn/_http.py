"""HTTP transport to a tracking server that speaks the MLflow REST API.

One `Transport` per tracking URI. Each thread keeps its own persistent `http.client`
connection (a connection is never shared between threads or across `fork`). A request that
fails to connect, loses its connection, times out or is answered with 408, 429 or 5xx is
retried with exponential backoff; any other non-2xx answer raises `CairnError` at once with
the server's MLflow `error_code` and `message`.

Settings (environment, read when a Transport is made):
  CAIRN_HTTP_MAX_RETRIES   retries after the first attempt (default 7)
  CAIRN_HTTP_BACKOFF       first backoff in seconds, doubled per retry up to 30 s (default 0.5)
  CAIRN_HTTP_TIMEOUT       socket timeout per request in seconds (default 120)
  CAIRN_CA_BUNDLE          PEM file of the certificate authorities an https:// server's
                           certificate must chain to (MLflow's MLFLOW_TRACKING_SERVER_CERT_PATH
                           is read too); default: the system's
Credentials, as cairn's other clients find them: CAIRN_TOKEN (bearer); MLflow's
MLFLOW_TRACKING_USERNAME with MLFLOW_TRACKING_PASSWORD (basic, which MLflow prefers to a
token), then MLFLOW_TRACKING_TOKEN (bearer); else the credentials file
$XDG_CONFIG_HOME/cairn/credentials (~/.config/cairn/credentials), an INI file with a section
per tracking URI and [default] for the rest, holding `token`, or `username` and `password`
(`cairn login` writes it). A credentials file its group or others may read is refused.
"""

import base64
import configparser
import http.client
import json
import os
import random
import ssl
import threading
import time
import urllib.parse

from ._version import __version__

RETRY_STATUSES = frozenset((408, 429, 500, 502, 503, 504))
MAX_BACKOFF_SECONDS = 30.0
UPLOAD_BLOCK_SIZE = 1 << 16


class CairnError(Exception):
    """An error reported by the tracking server, or a request that could not be completed.

    Attributes: `message` (the server's message), `error_code` (MLflow's error code name, such
    as "INVALID_PARAMETER_VALUE"; "CONNECTION_ERROR" when the server could not be reached),
    `status` (the HTTP status, or None), `retryable` (True when the request failed in a way
    that retrying later may fix: no connection, timeouts, 408, 429, 5xx).
    """

    def __init__(self, message, error_code=None, status=None, retryable=False):
        super().__init__(message)
        self.message = message
        self.error_code = error_code
        self.status = status
        self.retryable = retryable

    def __str__(self):
        if self.error_code:
            return "%s: %s" % (self.error_code, self.message)
        return self.message


def _env_number(name, default, kind=float):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise CairnError("%s must be a number, got %r" % (name, raw), "INVALID_PARAMETER_VALUE")
    if value < 0:
        raise CairnError("%s must not be negative, got %r" % (name, raw), "INVALID_PARAMETER_VALUE")
    return value


def _error_from_response(status, payload, what, auth_source=None):
    """CairnError for a non-2xx answer; MLflow's JSON error body when there is one."""
    code, message = None, None
    try:
        body = json.loads(payload.decode("utf-8"))
        if isinstance(body, dict):
            code, message = body.get("error_code"), body.get("message")
    except ValueError:
        pass
    if message is None:
        text = payload.decode("utf-8", "replace").strip()
        message = "HTTP %d%s" % (status, (": " + text[:500]) if text else "")
    if status == 401:
        code = "UNAUTHENTICATED"
        if auth_source is None:
            message = "the server needs credentials: set CAIRN_TOKEN, or run `cairn login`"
        else:
            message = ("the server refused the credentials from %s (a wrong password, or a "
                       "token that expired or was revoked): set CAIRN_TOKEN, or run "
                       "`cairn login`" % auth_source)
    if code is None:
        code = "ENDPOINT_NOT_FOUND" if status == 404 else "HTTP_%d" % status
    return CairnError("%s (%s)" % (message, what), code, status, status in RETRY_STATUSES)


def credentials_file_path():
    """$XDG_CONFIG_HOME/cairn/credentials, else ~/.config/cairn/credentials."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "cairn", "credentials")


def _basic(user, password):
    pair = ("%s:%s" % (user, password)).encode("utf-8")
    return "Basic " + base64.b64encode(pair).decode("ascii")


def resolve_authorization(tracking_uri):
    """The Authorization header for `tracking_uri`, or None (see the module's docstring)."""
    return find_credentials(tracking_uri)[0]


def find_credentials(tracking_uri):
    """(Authorization header or None, where it came from: "CAIRN_TOKEN", ..., or None)."""
    env = os.environ
    if env.get("CAIRN_TOKEN"):
        return "Bearer " + env["CAIRN_TOKEN"], "CAIRN_TOKEN"
    if env.get("MLFLOW_TRACKING_USERNAME") and env.get("MLFLOW_TRACKING_PASSWORD"):
        return (_basic(env["MLFLOW_TRACKING_USERNAME"], env["MLFLOW_TRACKING_PASSWORD"]),
                "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD")
    if env.get("MLFLOW_TRACKING_TOKEN"):
        return "Bearer " + env["MLFLOW_TRACKING_TOKEN"], "MLFLOW_TRACKING_TOKEN"
    path = credentials_file_path()
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None, None
    if mode & 0o077:
        raise CairnError("refusing the credentials in %s: its group or others may read it; "
                         "chmod 600 %s" % (path, path), "PERMISSION_DENIED")
    # No section is special: "[DEFAULT]" must not lend its keys to the others.
    parser = configparser.ConfigParser(interpolation=None, default_section="\0")
    try:
        parser.read(path, encoding="utf-8")
    except configparser.Error as e:
        raise CairnError("cannot read %s: %s" % (path, e), "INVALID_PARAMETER_VALUE")
    wanted = tracking_uri.rstrip("/")
    sections = {name.rstrip("/"): parser[name] for name in parser.sections()}
    for name in (wanted, "default"):
        section = sections.get(name)
        if section is None:
            continue
        source = "[%s] of %s" % (name, path)
        if section.get("token"):
            return "Bearer " + section["token"], source
        if section.get("username"):
            return _basic(section["username"], section.get("password", "")), source
        return None, None
    return None, None


class Transport:
    """Requests to one tracking server. Thread-safe: connections are per thread."""

    def __init__(self, tracking_uri):
        parts = urllib.parse.urlsplit(tracking_uri)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise CairnError("tracking URI must be http:// or https:// with a host, got %r"
                             % tracking_uri, "INVALID_PARAMETER_VALUE")
        self.uri = tracking_uri.rstrip("/")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port or (443 if self._https else 80)
        self._prefix = parts.path.rstrip("/")
        self.max_retries = int(_env_number("CAIRN_HTTP_MAX_RETRIES", 7, int))
        self.backoff = _env_number("CAIRN_HTTP_BACKOFF", 0.5)
        self.timeout = _env_number("CAIRN_HTTP_TIMEOUT", 120.0)
        self._headers = {"User-Agent": "cairn-python/" + __version__}
        self._auth_lock = threading.Lock()
        self._use_credentials(*find_credentials(self.uri))
        self._local = threading.local()

    # -- public -------------------------------------------------------------------------------

    def call(self, method, path, body=None, query=None, raw_body=None, retries=None):
        """JSON request to `path` (under the URI's own path); returns the parsed JSON answer.

        `body` is a JSON-serialisable value (NaN and infinities are refused: encode them as
        MLflow does, as strings); `raw_body` is already encoded JSON bytes. GET takes `query`.
        `retries` overrides the number of retries after the first attempt (None: the
        transport's `max_retries`); 0 tries once.
        """
        if body is not None:
            raw_body = json.dumps(body, allow_nan=False, separators=(",", ":")).encode("utf-8")
        headers = {}
        if raw_body is not None:
            headers["Content-Type"] = "application/json"
        target = self._prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(query, doseq=True)
        return self._send(method, target, headers, lambda: raw_body, retries)

    def upload(self, path, local_path, content_type="application/octet-stream"):
        """PUT the file at `local_path` as the raw body, streamed from disk in blocks."""
        with open(local_path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            headers = {"Content-Type": content_type, "Content-Length": str(size)}

            def rewind():
                f.seek(0)
                return f
            return self._send("PUT", self._prefix + path, headers, rewind)

    def get_bytes(self, path, query=None):
        """GET `path`; returns the answer's body as bytes, unparsed."""
        target = self._prefix + path
        if query:
            target += "?" + urllib.parse.urlencode(query, doseq=True)
        return self._send("GET", target, {}, lambda: None, receive=lambda resp: resp.read())

    def download(self, path, local_path):
        """GET `path` into the file `local_path` (replaced), streamed in blocks."""

        def receive(resp):
            with open(local_path, "wb") as f:
                while True:
                    block = resp.read(UPLOAD_BLOCK_SIZE)
                    if not block:
                        return None
                    f.write(block)
        self._send("GET", self._prefix + path, {}, lambda: None, receive=receive)

    # -- internals ----------------------------------------------------------------------------

    def _tls_context(self):
        if getattr(self, "_tls", None) is None:
            cafile = (os.environ.get("CAIRN_CA_BUNDLE")
                      or os.environ.get("MLFLOW_TRACKING_SERVER_CERT_PATH") or None)
            self._tls = ssl.create_default_context(cafile=cafile)
        return self._tls

    def _connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid != os.getpid():
            conn = None  # inherited through fork: the socket belongs to the parent
        if conn is None:
            if self._https:
                conn = http.client.HTTPSConnection(self._host, self._port, timeout=self.timeout,
                                                   context=self._tls_context(),
                                                   blocksize=UPLOAD_BLOCK_SIZE)
            else:
                conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout,
                                                  blocksize=UPLOAD_BLOCK_SIZE)
            self._local.conn = conn
            self._local.pid = os.getpid()
            self._local.used = False
        return conn, self._local.used

    def _discard_connection(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            conn.close()
        self._local.conn = None

    def _use_credentials(self, authorization, source):
        with self._auth_lock:
            self._auth_source = source
            if authorization:
                self._headers["Authorization"] = authorization
            else:
                self._headers.pop("Authorization", None)

    def _refresh_credentials(self, sent):
        """After a 401: look for credentials again (CAIRN_TOKEN set since, `cairn login` run in
        another terminal); True when they differ from the ones `sent`."""
        found, source = find_credentials(self.uri)
        if found == sent:
            return False
        self._use_credentials(found, source)
        return True

    def _send(self, method, target, headers, make_body, max_retries=None, receive=None):
        """Sends with retries; a 2xx answer's body is parsed as JSON, or given to `receive`
        (which reads it from the response and returns the result)."""
        if max_retries is None:
            max_retries = self.max_retries
        with self._auth_lock:
            all_headers = dict(self._headers)
            auth_source = self._auth_source
        all_headers.update(headers)
        credentials_refreshed = False
        what = "%s %s" % (method, target.split("?", 1)[0])
        retries = 0
        stale_retry_done = False
        while True:
            conn, reused = self._connection()
            try:
                conn.request(method, target, body=make_body(), headers=all_headers)
                resp = conn.getresponse()
                received = None
                if receive is not None and 200 <= resp.status < 300:
                    received = receive(resp)
                    payload = b""
                else:
                    payload = resp.read()
            except (OSError, http.client.HTTPException) as e:
                self._discard_connection()
                if reused and not stale_retry_done:
                    # The server may have closed an idle keep-alive connection: one immediate
                    # retry on a fresh connection before counting failures.
                    stale_retry_done = True
                    continue
                error = CairnError("cannot reach the tracking server at %s: %s (%s)"
                                   % (self.uri, str(e) or type(e).__name__, what),
                                   "CONNECTION_ERROR", None, True)
                delay_hint = None
            else:
                self._local.used = True
                if 200 <= resp.status < 300:
                    if resp.will_close:
                        self._discard_connection()
                    return received if receive is not None else _parse_json(payload, what)
                # A server that refuses a request may not have read its body, and could read
                # the rest as the next request: never reuse the connection after an error.
                self._discard_connection()
                if resp.status == 401 and not credentials_refreshed:
                    credentials_refreshed = True
                    if self._refresh_credentials(all_headers.get("Authorization")):
                        with self._auth_lock:
                            all_headers.pop("Authorization", None)
                            all_headers.update(self._headers)
                            auth_source = self._auth_source
                        continue
                error = _error_from_response(resp.status, payload, what, auth_source)
                if not error.retryable:
                    raise error
                delay_hint = _retry_after(resp.getheader("Retry-After"))
            if retries >= max_retries:
                if retries:
                    error.message += " (gave up after %d retries)" % retries
                raise error
            delay = min(MAX_BACKOFF_SECONDS, self.backoff * (2 ** retries))
            delay *= 0.75 + random.random() / 2  # jitter, so many clients do not retry in step
            if delay_hint is not None:
                delay = max(delay, min(delay_hint, MAX_BACKOFF_SECONDS))
            retries += 1
            time.sleep(delay)


def _retry_after(value):
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _parse_json(payload, what):
    if not payload.strip():
        return {}
    try:
        return json.loads(payload.decode("utf-8"))
    except ValueError:
        raise CairnError("the tracking server answered %s with something that is not JSON: %r"
                         % (what, payload[:200]), "INVALID_RESPONSE")
