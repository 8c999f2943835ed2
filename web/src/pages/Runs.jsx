// The runs of one experiment: a virtualised table with sortable columns, a filter in MLflow's
// grammar (the server's error shown under it), a column chooser, multi-select to compare, and
// a refresh every 5 s while runs are active; its permissions for those who may manage it.
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { mlflow, searchRuns, streamRuns } from "../api.js";
import { VirtualTable } from "../components/VirtualTable.jsx";
import { Crumbs } from "../components/Crumbs.jsx";
import { Permissions } from "../components/Permissions.jsx";
import { href } from "../router.js";
import {
  compareCells, formatDuration, formatTime, formatValue, runDuration, runFields, runName,
} from "../util.js";

// While runs are active the table is read again every REFRESH_MS. A refresh reads only what
// can have changed: the runs shown as RUNNING (their status, metrics and tags move) and the
// runs started since the newest one shown. Every FULL_EVERY-th refresh, or with more than
// MAX_WATCHED runs running, it reads the whole list, which also brings runs recorded late with
// an earlier start time (`cairn run` uploading its journal) and runs deleted meanwhile.
const REFRESH_MS = 5000;
const FULL_EVERY = 6;
const MAX_WATCHED = 200;

export function Runs({ experimentId, params }) {
  const [experiment, setExperiment] = useState(null);
  const [runs, setRuns] = useState([]);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState(null);
  const [filterText, setFilterText] = useState(params.get("filter") || "");
  const [filter, setFilter] = useState(params.get("filter") || "");
  const [sort, setSort] = useState({ key: "start", desc: true });
  const [chosen, setChosen] = useState(null); // column keys, null: the defaults
  const [choosing, setChoosing] = useState(false);
  const [selected, setSelected] = useState(new Set());
  const [generation, setGeneration] = useState(0);
  const shown = useRef(null); // the filter whose runs are all in the table

  useEffect(() => {
    mlflow.get("experiments/get", { experiment_id: experimentId })
      .then((r) => setExperiment(r.experiment))
      .catch((e) => setError(e.message));
  }, [experimentId]);

  useEffect(() => {
    const what = experimentId + "\n" + filter;
    const refreshing = shown.current === what;
    if (!refreshing) {
      shown.current = null; // until this list is complete
      setError(null);
    }
    setLoading(true);
    const loaded = () => {
      setError(null);
      setLoading(false);
    };
    // A failed first load empties the table; a failed refresh keeps the rows shown, says why,
    // and is tried again at the next tick.
    const fail = (e) => {
      setError(e.message);
      if (!refreshing) setRuns([]);
      setLoading(false);
    };
    const watched = runs.filter((r) => r.info.status === "RUNNING").map((r) => r.info.run_id);
    if (refreshing && generation % FULL_EVERY !== 0 && watched.length > 0 &&
        watched.length <= MAX_WATCHED) {
      let stopped = false;
      const since = runs.reduce((m, r) => Math.max(m, Number(r.info.start_time)), 0);
      const and = (clause) => (filter ? `${filter} and ${clause}` : clause);
      const ids = watched.map((id) => `'${id}'`).join(", ");
      Promise.all([
        searchRuns({ experiment_ids: [experimentId], filter: and(`attributes.run_id IN (${ids})`) }),
        searchRuns({ experiment_ids: [experimentId], filter: and(`attributes.start_time >= ${since}`) }),
      ]).then(([updated, started]) => {
        if (stopped) return;
        setRuns((current) => {
          const byId = new Map(current.map((r) => [r.info.run_id, r]));
          // A watched run that no longer matches (or was deleted) leaves the table.
          for (const id of watched) byId.delete(id);
          for (const r of [...updated, ...started]) byId.set(r.info.run_id, r);
          return [...byId.values()];
        });
        loaded();
      }, (e) => !stopped && fail(e));
      return () => {
        stopped = true;
      };
    }
    // A first load shows rows page by page; a full refresh keeps what is shown until the whole
    // new list is in, so the table neither shrinks nor loses its scroll position.
    const pages = [];
    return streamRuns(
      { experimentId, filter },
      (page, done) => {
        pages.push(...page);
        if (!refreshing || done) setRuns([...pages]);
        if (done) {
          shown.current = what;
          loaded();
        }
      },
      fail,
    );
  }, [experimentId, filter, generation]);

  // While runs are active, look again every few seconds.
  const active = runs.some((r) => r.info.status === "RUNNING");
  useEffect(() => {
    if (!active || loading) return undefined;
    const t = setTimeout(() => setGeneration((g) => g + 1), REFRESH_MS);
    return () => clearTimeout(t);
  }, [active, loading, runs]);

  const fieldsCache = useMemo(() => new Map(runs.map((r) => [r.info.run_id, runFields(r)])), [runs]);
  const keys = useMemo(() => {
    const out = { params: new Set(), metrics: new Set(), tags: new Set() };
    for (const f of fieldsCache.values()) {
      for (const kind of ["params", "metrics", "tags"]) {
        for (const k of Object.keys(f[kind])) {
          if (kind !== "tags" || !k.startsWith("mlflow.")) out[kind].add(k);
        }
      }
    }
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, [...v].sort()]));
  }, [fieldsCache]);
  const columnKeys = chosen ||
    [...keys.metrics.slice(0, 5).map((k) => "metrics." + k),
     ...keys.params.slice(0, 5).map((k) => "params." + k)];

  const cell = (run, key) => {
    const [kind, ...rest] = key.split(".");
    return fieldsCache.get(run.info.run_id)[kind][rest.join(".")];
  };

  const toggle = (id) => setSelected((s) => {
    const next = new Set(s);
    if (next.has(id)) next.delete(id); else next.add(id);
    return next;
  });

  const columns = [
    { key: "select", label: "", width: 3, sortable: false,
      render: (r) => (
        <input type="checkbox" aria-label={"select " + runName(r)}
               checked={selected.has(r.info.run_id)} onChange={() => toggle(r.info.run_id)} />
      ) },
    { key: "name", label: "Run", width: 14, value: runName,
      render: (r) => <a href={href("runs", r.info.run_id)}>{runName(r)}</a> },
    { key: "status", label: "Status", width: 8, value: (r) => r.info.status,
      render: (r) => <span class={"status " + r.info.status.toLowerCase()}>{r.info.status}</span> },
    { key: "start", label: "Started", width: 12.5, value: (r) => Number(r.info.start_time),
      render: (r) => formatTime(r.info.start_time) },
    { key: "duration", label: "Duration", width: 7, value: runDuration,
      render: (r) => formatDuration(runDuration(r)) },
    ...columnKeys.map((k) => ({
      key: k, label: k.split(".").slice(1).join("."), title: k, width: 9,
      value: (r) => cell(r, k), render: (r) => formatValue(cell(r, k)),
    })),
  ];

  const sorted = useMemo(() => {
    const col = columns.find((c) => c.key === sort.key);
    if (!col || !col.value) return runs;
    return [...runs].sort((a, b) => compareCells(col.value(a), col.value(b), sort.desc));
  }, [runs, sort, columnKeys.join("|")]);

  const onSort = (key) =>
    setSort((s) => (s.key === key ? { key, desc: !s.desc } : { key, desc: false }));
  const applyFilter = (e) => {
    e.preventDefault();
    setFilter(filterText.trim());
  };
  const chooseColumn = (key, on) => {
    const now = new Set(columnKeys);
    if (on) now.add(key); else now.delete(key);
    setChosen([...now]);
  };

  return (
    <section>
      <Crumbs />
      <h1>{experiment ? experiment.name : "…"}</h1>
      <Permissions experimentId={experimentId} />
      <form class="inline-form filter" onSubmit={applyFilter}>
        <input id="filter" class="wide" placeholder="filter, e.g. metrics.acc > 0.9 and params.opt = 'adam'"
               value={filterText} onInput={(e) => setFilterText(e.currentTarget.value)} />
        <button type="submit">Filter</button>
        <button type="button" onClick={() => setChoosing(!choosing)}>Columns</button>
        <a class={"button" + (selected.size >= 2 && selected.size <= 10 ? "" : " disabled")}
           id="compare"
           href={selected.size >= 2 ? "#/compare?runs=" + [...selected].join(",") : undefined}>
          Compare {selected.size ? `(${selected.size})` : ""}
        </a>
      </form>
      {error && <p class="error" role="alert" id="filter-error">{error}</p>}
      {choosing && (
        <div class="chooser" id="chooser">
          {["metrics", "params", "tags"].map((kind) => (
            <fieldset key={kind}>
              <legend>{kind}</legend>
              {keys[kind].map((k) => (
                <label key={k}>
                  <input type="checkbox" checked={columnKeys.includes(kind + "." + k)}
                         onChange={(e) => chooseColumn(kind + "." + k, e.currentTarget.checked)} />
                  {k}
                </label>
              ))}
            </fieldset>
          ))}
        </div>
      )}
      <p class="muted" id="run-count">
        {runs.length.toLocaleString()} run{runs.length === 1 ? "" : "s"}
        {loading ? " (loading…)" : ""}{active ? " · refreshing while runs are active" : ""}
      </p>
      <VirtualTable columns={columns} rows={sorted} rowKey={(r) => r.info.run_id}
                    sort={sort} onSort={onSort}
                    rowClass={(r) => (selected.has(r.info.run_id) ? "selected" : "")} />
    </section>
  );
}
