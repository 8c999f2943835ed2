"""Queue of metrics, params and tags for one run, sent in `runs/log-batch` requests.

Callers only append to the queue. A daemon thread sends it: when a full request's worth is
waiting, and every `interval` seconds otherwise. `flush()` sends everything queued so far from
the calling thread and returns once the server has acknowledged it; `close()` stops the thread
and flushes. Requests respect MLflow's log-batch limits (at most 1000 metrics, 100 params,
100 tags, 1000 items and about 1 MB of JSON each).

Errors: items the server rejects (4xx but 401) are dropped and the error raised once, by the next
call that adds to the queue or by the next flush. A batch refused as invalid is split and sent
again in halves, so the good items in it still arrive. A batch that could not be delivered
(connection failures and 5xx, after the transport's retries) goes back to the front of the
queue and is tried again on the next tick; flush raises that error if data is still queued.
So does a batch refused for its credentials (401): it waits for credentials the server takes
(the transport looks for them again after each 401).
Only one request is in flight at a time, so a run's data arrives in the order it was logged.

A batcher made with `run_may_be_missing=True` (a run that `cairn run` created, or will create
once the server is reachable: see `start_run`) counts the server's RESOURCE_DOES_NOT_EXIST for
the run as "not delivered yet" rather than as a rejection: the batch stays queued, in order,
for the next tick. `close()` then keeps trying for up to PENDING_RUN_WAIT_SECONDS, since the
wrapper creates the run at its next heartbeat (every 10 s by default).
"""

import collections
import json
import math
import os
import threading
import time

from ._http import CairnError

MAX_METRICS = 1000
MAX_PARAMS = 100
MAX_TAGS = 100
MAX_ITEMS = 1000
MAX_BODY_BYTES = 900 * 1000  # the server takes 1 MB; leave room for the envelope
MAX_QUEUED = 100 * 1000      # callers wait (or get the delivery error) beyond this
MAX_BISECT_REQUESTS = 64     # extra requests spent isolating the bad items of a rejected batch
LOG_BATCH_PATH = "/api/2.0/mlflow/runs/log-batch"
PENDING_RUN_WAIT_SECONDS = 30.0  # how long close() waits for a missing run to appear


def metric_value_json(value):
    """MLflow's JSON for a double: NaN and infinities are the strings "NaN", "Infinity"."""
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return repr(value)


class Batcher:
    def __init__(self, transport, run_id, interval=1.0, run_may_be_missing=False):
        self._transport = transport
        self._run_id = run_id
        self._interval = interval
        self._run_may_be_missing = run_may_be_missing
        self._prefix = '{"run_id":%s' % json.dumps(run_id)
        self._key_json = {}
        self._init_state()

    def _init_state(self):
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._room = threading.Condition(self._lock)
        self._send_lock = threading.Lock()
        self._metrics = collections.deque()  # (key, value, timestamp, step)
        self._params = collections.deque()   # (key, value)
        self._tags = collections.OrderedDict()  # key -> value; a later value replaces it
        self._rejected = None   # CairnError from a batch the server refused, raised once
        self._undelivered = None  # CairnError of the last failed delivery, while data waits
        self._closed = False
        self._thread = None

    # -- callers ------------------------------------------------------------------------------

    def add(self, metrics=(), params=(), tags=()):
        """Queue items; raises the error of an earlier rejected batch (once)."""
        self._after_fork_check()
        with self._lock:
            self._raise_rejected()
            while self._queued() >= MAX_QUEUED and not self._closed:
                if self._undelivered is not None:
                    raise self._undelivered
                self._wake.notify()
                self._room.wait(1.0)
            self._metrics.extend(metrics)
            self._params.extend(params)
            for k, v in tags:
                self._tags.pop(k, None)
                self._tags[k] = v
            if self._queued() >= MAX_ITEMS and self._undelivered is None:
                self._wake.notify()  # after a failed delivery, the sender waits for its tick
            start = self._thread is None and not self._closed
            if start:
                self._thread = threading.Thread(target=self._loop, daemon=True,
                                                name="cairn-batch-" + self._run_id[:8])
        if start:
            self._thread.start()

    def flush(self):
        """Send everything queued; raises a rejected batch's error or a delivery failure."""
        self._after_fork_check()
        with self._send_lock:
            try:
                self._drain()
            except CairnError:
                pass  # recorded in _undelivered; raised below
        with self._lock:
            self._raise_rejected()
            if self._undelivered is not None and self._queued():
                raise self._undelivered

    def close(self):
        """Stop the background thread, then flush (raising as flush does). A run that may be
        missing yet is waited for, up to PENDING_RUN_WAIT_SECONDS."""
        self._after_fork_check()
        with self._lock:
            self._closed = True
            thread = self._thread
            self._wake.notify_all()
            self._room.notify_all()
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        deadline = time.monotonic() + PENDING_RUN_WAIT_SECONDS
        while True:
            try:
                return self.flush()
            except CairnError as e:
                if not (_run_not_there_yet(e) and time.monotonic() < deadline):
                    raise
            time.sleep(min(self._interval, 1.0))

    def pending(self):
        with self._lock:
            return self._queued()

    # -- internals ----------------------------------------------------------------------------

    def _after_fork_check(self):
        # A forked child inherits the queue but not the thread; the parent sends what was
        # queued before the fork, the child starts afresh.
        if self._pid != os.getpid():
            closed = self._closed
            self._init_state()
            self._closed = closed

    def _queued(self):
        return len(self._metrics) + len(self._params) + len(self._tags)

    def _raise_rejected(self):
        if self._rejected is not None:
            error, self._rejected = self._rejected, None
            raise error

    def _loop(self):
        while True:
            with self._lock:
                if not self._closed and (self._queued() < MAX_ITEMS or self._undelivered):
                    self._wake.wait(self._interval)
                if self._closed:
                    return
                if not self._queued():
                    continue
            with self._send_lock:
                try:
                    self._drain()
                except CairnError:
                    pass  # kept queued; the next tick tries again
                except Exception as e:  # never let the sender die silently
                    with self._lock:
                        self._undelivered = CairnError("cairn batch sender: %r" % (e,),
                                                       "INTERNAL_ERROR")

    def _drain(self):
        """Send batches until the queue is empty (caller holds _send_lock)."""
        while True:
            with self._lock:
                entries = self._take_batch()
                self._room.notify_all()
            if not entries:
                return
            try:
                self._deliver(entries, [MAX_BISECT_REQUESTS])
            except CairnError as e:  # not delivered (connection, 5xx): keep it for later
                with self._lock:
                    self._put_back(entries)
                    self._undelivered = e
                raise
            with self._lock:
                self._undelivered = None

    def _deliver(self, entries, budget):
        """Send entries in one request. When the server rejects it as invalid, send halves,
        so one bad item does not take the rest down with it; the first rejection is kept.
        Raises only retryable errors (a bisection then resends delivered items, which the
        server takes as no-ops: metrics drop exact duplicates, params and tags repeat)."""
        try:
            self._transport.call("POST", LOG_BATCH_PATH, raw_body=self._body(entries))
        except CairnError as e:
            if e.retryable:
                raise
            if e.error_code == "UNAUTHENTICATED":
                # Refused credentials (a token revoked or expired): nothing is wrong with the
                # data, which stays queued until credentials the server takes are found.
                raise CairnError(e.message, e.error_code, e.status, True)
            if self._run_may_be_missing and e.error_code == "RESOURCE_DOES_NOT_EXIST":
                raise CairnError("run %s is not on the tracking server yet: its wrapper creates "
                                 "it once the server is reachable; what was logged stays queued "
                                 "(%s)" % (self._run_id, e.message), e.error_code, e.status, True)
            if (len(entries) > 1 and e.error_code == "INVALID_PARAMETER_VALUE"
                    and budget[0] >= 2):
                budget[0] -= 2
                mid = len(entries) // 2
                self._deliver(entries[:mid], budget)
                self._deliver(entries[mid:], budget)
                return
            with self._lock:
                if self._rejected is None:
                    self._rejected = e

    def _take_batch(self):
        """Pop one request's worth of items (caller holds _lock) as [(kind, item, json)]."""
        entries = []
        counts = {"p": 0, "t": 0, "m": 0}
        size = len(self._prefix) + 40

        def take(kind, queue, limit, pop, encode):
            nonlocal size
            while queue and counts[kind] < limit and len(entries) < MAX_ITEMS:
                item = queue[0] if kind != "t" else next(iter(queue.items()))
                enc = encode(item)
                if entries and size + len(enc) + 1 > MAX_BODY_BYTES:
                    return
                pop()
                entries.append((kind, item, enc))
                counts[kind] += 1
                size += len(enc) + 1

        def pair_json(item):
            return '{"key":%s,"value":%s}' % (json.dumps(item[0]), json.dumps(item[1]))

        key_json = self._key_json

        def metric_json(item):
            key, value, ts, step = item
            kj = key_json.get(key)
            if kj is None:
                kj = key_json[key] = json.dumps(key)
            return '{"key":%s,"value":%s,"timestamp":%d,"step":%d}' % (
                kj, metric_value_json(value), ts, step)

        take("p", self._params, MAX_PARAMS, self._params.popleft, pair_json)
        take("t", self._tags, MAX_TAGS, lambda: self._tags.popitem(last=False), pair_json)
        take("m", self._metrics, MAX_METRICS, self._metrics.popleft, metric_json)
        return entries

    def _body(self, entries):
        parts = [self._prefix]
        for kind, name in (("m", "metrics"), ("p", "params"), ("t", "tags")):
            encoded = [enc for k, _, enc in entries if k == kind]
            if encoded:
                parts.append(',"%s":[%s]' % (name, ",".join(encoded)))
        parts.append("}")
        return "".join(parts).encode("utf-8")

    def _put_back(self, entries):
        """Return taken entries to the front of the queue (caller holds _lock)."""
        self._metrics.extendleft(reversed([item for k, item, _ in entries if k == "m"]))
        self._params.extendleft(reversed([item for k, item, _ in entries if k == "p"]))
        newer = self._tags
        self._tags = collections.OrderedDict(item for k, item, _ in entries if k == "t")
        for k, v in newer.items():
            self._tags.pop(k, None)
            self._tags[k] = v


def _run_not_there_yet(error):
    """True for the error a batcher of a run that may be missing keeps its data queued for."""
    return error.retryable and error.error_code == "RESOURCE_DOES_NOT_EXIST"
