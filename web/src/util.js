// Small helpers shared by the pages.

export function formatTime(ms) {
  if (!ms) return "";
  const d = new Date(Number(ms));
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return "";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  const h = Math.floor(m / 60);
  return `${h} h ${m - h * 60} min`;
}

// A byte count as people read it: "812 B", "1.2 KiB", "3.4 MiB".
export function formatSize(bytes) {
  const n = Number(bytes) || 0;
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

export function formatValue(v) {
  if (typeof v === "number") {
    if (Number.isInteger(v)) return String(v);
    const a = Math.abs(v);
    return a !== 0 && (a < 1e-3 || a >= 1e6) ? v.toExponential(4) : String(+v.toPrecision(6));
  }
  return v === undefined || v === null ? "" : String(v);
}

// Tags as the registry answers them ([{key, value}]) as a plain map.
export function tagMap(tags) {
  return Object.fromEntries((tags || []).map((t) => [t.key, t.value]));
}

// A run's fields as plain maps: {params: {k: v}, metrics: {k: v}, tags: {k: v}}.
export function runFields(run) {
  const data = run.data || {};
  const toMap = (list, field = "value") =>
    Object.fromEntries((list || []).map((x) => [x.key, x[field]]));
  return { params: toMap(data.params), metrics: toMap(data.metrics), tags: toMap(data.tags) };
}

export function runName(run) {
  return run.info.run_name || (runFields(run).tags["mlflow.runName"] ?? run.info.run_id.slice(0, 8));
}

export function runDuration(run) {
  const { start_time: start, end_time: end, status } = run.info;
  if (!start) return null;
  if (end) return Number(end) - Number(start);
  return status === "RUNNING" ? Date.now() - Number(start) : null;
}

// Compares two cells for sorting: numbers by value, text by locale; empty cells last in
// either direction.
export function compareCells(a, b, desc = false) {
  const ea = a === undefined || a === null || a === "";
  const eb = b === undefined || b === null || b === "";
  if (ea || eb) return ea === eb ? 0 : ea ? 1 : -1;
  const na = typeof a === "number" ? a : Number(a);
  const nb = typeof b === "number" ? b : Number(b);
  const order = !Number.isNaN(na) && !Number.isNaN(nb) ? na - nb : String(a).localeCompare(String(b));
  return desc ? -order : order;
}
