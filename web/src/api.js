// The server's APIs, as the UI uses them: MLflow's REST API under /api/2.0/mlflow/ (and its
// artifact proxy under /api/2.0/mlflow-artifacts/) and cairn's own under /api/cairn/v1/. Every
// call resolves to the JSON answer or throws an ApiError that carries the server's message, so
// pages can show it where the user acted.

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// Every request says it comes from the UI, so that a 401 answer carries no WWW-Authenticate
// header and the browser shows no password dialog of its own: the UI has its sign-in page.
const UI_HEADER = { "X-Cairn-UI": "1" };

// Writes in a browser session carry the session's CSRF token (from auth/session or
// auth/login); with authentication off there is none and none is needed.
let csrfToken = "";
export function setCsrfToken(token) {
  csrfToken = token || "";
}

// Called when the server answers 401: the session ended or was never there.
const signedOutListeners = new Set();
export function onSignedOut(listener) {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}
function signedOut() {
  for (const listener of signedOutListeners) listener();
}

// fetch() with the UI's header, for answers that are not JSON (logs, artifacts).
export async function uiFetch(url, init = {}) {
  const resp = await fetch(url, { ...init, headers: { ...UI_HEADER, ...(init.headers || {}) } });
  if (resp.status === 401) signedOut();
  return resp;
}

// `headers` add to the request's; with `quiet`, a 401 is only thrown (signing in answers 401
// for a wrong password).
async function call(method, url, body, { headers = {}, quiet = false } = {}) {
  const init = { method, headers: { ...UI_HEADER, ...headers } };
  if (method !== "GET" && csrfToken) init.headers["X-Cairn-CSRF-Token"] = csrfToken;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(url, init);
  const text = await resp.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : {};
  } catch {
    json = null;
  }
  if (!resp.ok) {
    if (resp.status === 401 && !quiet) signedOut();
    const message = json && json.message ? json.message : text || resp.statusText;
    throw new ApiError(resp.status, json && json.error_code, message);
  }
  return json;
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) q.append(k, String(item));
  }
  return q.toString();
}

const MLFLOW = "/api/2.0/mlflow/";
export const mlflow = {
  get: (endpoint, params = {}) => call("GET", MLFLOW + endpoint + "?" + query(params)),
  post: (endpoint, body = {}) => call("POST", MLFLOW + endpoint, body),
  patch: (endpoint, body = {}) => call("PATCH", MLFLOW + endpoint, body),
  delete: (endpoint, body = {}) => call("DELETE", MLFLOW + endpoint, body),
};

// The files directly under `path` of the server's artifact store ("models/<id>/sub"), through
// the artifact proxy: {files: [{path, is_dir, file_size}]}, each path relative to `path`.
export function listArtifactStore(path) {
  return call("GET", "/api/2.0/mlflow-artifacts/artifacts?" + query({ path }));
}

const CAIRN = "/api/cairn/v1/";
export const cairn = {
  get: (endpoint, params = {}) => call("GET", CAIRN + endpoint + "?" + query(params)),
  post: (endpoint, body = {}) => call("POST", CAIRN + endpoint, body),
};

// Who the browser is signed in as: {auth, signed_in, username, is_admin, csrf_token}
// (`signed_in` false on a server with authentication on: show the sign-in page).
export async function getSession() {
  return call("GET", CAIRN + "auth/session", undefined, { quiet: true });
}

// Signs in and answers the session; a wrong password is an ApiError with the server's message.
export function login(username, password) {
  return call("POST", CAIRN + "auth/login", { username, password }, { quiet: true });
}

export function logout() {
  return call("POST", CAIRN + "auth/logout", {}, { quiet: true });
}

// The pages of an MLflow search (`endpoint` answering `field` and next_page_token), one at a
// time.
async function* searchPages(endpoint, body, field) {
  let token;
  do {
    const page = await mlflow.post(endpoint, { ...body, page_token: token });
    token = page.next_page_token;
    yield { items: page[field] || [], last: !token };
  } while (token);
}

async function searchAll(endpoint, body, field) {
  const out = [];
  for await (const page of searchPages(endpoint, body, field)) out.push(...page.items);
  return out;
}

// Every active experiment.
export function listExperiments() {
  return searchAll("experiments/search", { max_results: 1000, view_type: "ACTIVE_ONLY" },
                   "experiments");
}

// Every run a runs/search body matches, in pages of the largest size the API allows.
export function searchRuns(body) {
  return searchAll("runs/search", { max_results: 50000, ...body }, "runs");
}

// Runs of one experiment page by page: `onPage(runs, done)` is called as each page arrives,
// so the first rows show before the last page is read. Returns a function that stops it.
export function streamRuns({ experimentId, filter, orderBy, pageSize = 1000 }, onPage, onError) {
  let stopped = false;
  (async () => {
    try {
      const body = {
        experiment_ids: [experimentId],
        filter: filter || "",
        order_by: orderBy ? [orderBy] : [],
        max_results: pageSize,
      };
      for await (const page of searchPages("runs/search", body, "runs")) {
        if (stopped) return;
        onPage(page.items, page.last);
      }
    } catch (e) {
      if (!stopped) onError(e);
    }
  })();
  return () => {
    stopped = true;
  };
}

export function metricSeries(runId, key, points = 2000) {
  return cairn.get("metrics/series", { run_id: runId, key, points });
}

// A run's console log from `offset` (text, and where to continue).
export async function runLog(runId, offset = 0) {
  const resp = await uiFetch(CAIRN + "runs/" + encodeURIComponent(runId) + "/log?" +
                             query({ offset, format: "json" }));
  if (!resp.ok) {
    const json = await resp.json().catch(() => ({}));
    throw new ApiError(resp.status, json.error_code, json.message || resp.statusText);
  }
  return resp.json();
}

// The registry's searches are GETs (MLflow has no POST form of them), paged the same way.
async function searchAllGet(endpoint, params, field) {
  const out = [];
  let token;
  do {
    const page = await mlflow.get(endpoint, { ...params, page_token: token });
    out.push(...(page[field] || []));
    token = page.next_page_token;
  } while (token);
  return out;
}

// Every registered model a registered-models/search filter matches, by name.
export function searchRegisteredModels(filter) {
  return searchAllGet("registered-models/search",
                      { max_results: 1000, filter: filter || undefined, order_by: "name ASC" },
                      "registered_models");
}

// Every model version a model-versions/search filter matches ("run_id = '...'").
export function searchModelVersions(filter) {
  return searchAllGet("model-versions/search", { max_results: 10000, filter }, "model_versions");
}

// The versions of one model, newest first. The filter grammar has no escapes, so a name that
// holds a quote cannot be written in one: such a model's versions are picked from all.
export async function modelVersions(name) {
  const found = name.includes("'")
    ? (await searchModelVersions(undefined)).filter((v) => v.name === name)
    : await searchModelVersions(`name = '${name}'`);
  return found.sort((a, b) => Number(b.version) - Number(a.version));
}

// Active runs, running ones and last activity of every experiment that has runs.
export async function experimentStats() {
  return (await cairn.get("experiments/stats")).experiments;
}
