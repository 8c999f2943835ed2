// The web UI in headless Chromium (Debian's, driven by playwright-core): a real server with
// the built UI, data logged through the API, and what a person would see on each page; then a
// second server with authentication on, for signing in, tokens and what each role is offered.
//
// Usage: node tests/e2e/ui_test.mjs --cairn build/release/cairn [--ui-dir web/dist]
//          [--chromium /usr/bin/chromium] [--screenshots DIR] [-k PATTERN]
// Prints one line per test and "web_ui: N passed, N failed" last; exits 1 on a failure.
import { spawn, spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../..");
// playwright-core is a dependency of the UI's own package (web/).
const require = createRequire(join(root, "web", "package.json"));
const { chromium } = require("playwright-core");

function arg(name, fallback) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const CAIRN = resolve(arg("--cairn", join(root, "build/release/cairn")));
const UI_DIR = resolve(arg("--ui-dir", join(root, "web/dist")));
const CHROMIUM = arg("--chromium", "/usr/bin/chromium");
const SHOTS = resolve(arg("--screenshots", join(root, "build/e2e-screenshots")));
const PATTERN = arg("-k", "");

function assert(cond, message) {
  if (!cond) throw new Error(message);
}
function assertEqual(a, b, message) {
  const ja = JSON.stringify(a);
  const jb = JSON.stringify(b);
  if (ja !== jb) throw new Error(`${message}: got ${ja}, want ${jb}`);
}

// --- the server ------------------------------------------------------------------------------

async function startServer(extra = []) {
  const data = mkdtempSync(join(tmpdir(), "cairn-e2e-"));
  const proc = spawn(CAIRN, ["server", "--port", "0", "--data-dir", data, "--ui-dir", UI_DIR, ...extra],
                     { stdio: ["ignore", "pipe", "inherit"] });
  const url = await new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error("the server did not start: " + out)), 20000);
    proc.stdout.on("data", (chunk) => {
      out += chunk;
      const m = out.match(/http:\/\/[0-9.]+:\d+/);
      if (m) {
        clearTimeout(timer);
        ok(m[0]);
      }
    });
    proc.on("exit", (code) => fail(new Error(`the server exited with ${code}: ${out}`)));
  });
  return { url, proc, data };
}

// The admin made at start, and a user the tests create, on the server with authentication on.
const ADMIN = { username: "admin", password: "admin-pass-1" };
const READER = { username: "reader", password: "reader-pass-1" };
const basic = (who) =>
  ({ Authorization: "Basic " + Buffer.from(`${who.username}:${who.password}`).toString("base64") });

async function startAuthServer() {
  const dir = mkdtempSync(join(tmpdir(), "cairn-e2e-secret-"));
  const file = join(dir, "admin-password");
  writeFileSync(file, ADMIN.password + "\n", { mode: 0o600 });
  const server = await startServer(["--auth", "on", "--init-admin", ADMIN.username, "--password-file", file]);
  rmSync(dir, { recursive: true, force: true });
  return server;
}

async function api(base, method, path, body, headers = {}) {
  const resp = await fetch(base + path, {
    method,
    headers: body === undefined ? headers : { "Content-Type": "application/json", ...headers },
    body: body === undefined ? undefined : (typeof body === "string" || body instanceof Uint8Array ? body : JSON.stringify(body)),
  });
  const text = await resp.text();
  if (!resp.ok) throw new Error(`${method} ${path}: ${resp.status} ${text}`);
  return text ? JSON.parse(text) : {};
}

// Experiment "vision" with 30 finished runs (lr and optimizer differ, acc rises with i), one of
// them with a 5,000-point loss curve, and a RUNNING run with a console log; artifacts on run 0.
async function seed(base) {
  const mlflow = (m, p, b) => api(base, m, "/api/2.0/mlflow/" + p, b);
  const { experiment_id: exp } = await mlflow("POST", "experiments/create", { name: "vision" });
  await mlflow("POST", "experiments/create", { name: "empty-experiment" });
  const runs = [];
  for (let i = 0; i < 30; i++) {
    const { run } = await mlflow("POST", "runs/create", {
      experiment_id: exp, run_name: `run-${String(i).padStart(2, "0")}`, start_time: 1764680000000 + i * 1000,
    });
    const id = run.info.run_id;
    runs.push(id);
    const metrics = [{ key: "acc", value: i / 30, timestamp: 1764680000000 + i, step: 0 }];
    if (i === 0) {
      metrics.push(...[0, 1, 2].map((s) => ({ key: "broken", value: "NaN", timestamp: 1764680000000 + s, step: s })));
      for (let s = 0; s < 5000; s++) {
        metrics.push({ key: "loss", value: 1 / (1 + s) + (s === 2500 ? 3 : 0), timestamp: 1764680000000 + s, step: s });
      }
    }
    for (let k = 0; k < metrics.length; k += 990) {
      await mlflow("POST", "runs/log-batch", {
        run_id: id, metrics: metrics.slice(k, k + 990),
        params: k === 0 ? [{ key: "lr", value: String(i % 3 === 0 ? 0.1 : 0.01) },
                           { key: "optimizer", value: i % 2 ? "adam" : "sgd" },
                           { key: "epochs", value: "10" }] : [],
      });
    }
    await mlflow("POST", "runs/update", { run_id: id, status: "FINISHED", end_time: 1764680000000 + i * 1000 + 60000 });
  }
  const { run: live } = await mlflow("POST", "runs/create", { experiment_id: exp, run_name: "live" });
  await api(base, "POST", `/api/cairn/v1/runs/${live.info.run_id}/log`, {
    chunks: [{ offset: 0, stream: "stdout", timestamp: Date.now(), data: "epoch 1 started\n" }],
  });
  // Artifacts of run 0: a text file, JSON, CSV and bytes that must download intact.
  const root = `${exp}/${runs[0]}/artifacts`;
  const bytes = new Uint8Array(70000).map((_, i) => (i * 7 + 3) % 256);
  const put = (path, body) => api(base, "PUT", `/api/2.0/mlflow-artifacts/artifacts/${root}/${path}`, body);
  await put("notes.txt", "hello from the run\n");
  await put("config.json", '{"layers": 3, "dropout": 0.1}');
  await put("table.csv", 'epoch,acc,note\r\n1,0.5,"warm, up"\r\n2,0.7,"said ""hi"""\r\n');
  await put("model/weights.bin", bytes);
  // Environment snapshots of runs 1 and 2 (numpy changed, scipy only in 2, torch the same)
  // and run 1's uncommitted changes.
  const lock = (pkgs) => 'lock-version = "1.0"\n' +
    pkgs.map(([n, v]) => `\n[[packages]]\nname = "${n}"\nversion = "${v}"\n`).join("");
  for (const [i, pkgs] of [[1, [["numpy", "1.26.4"], ["torch", "2.3.0"]]],
                           [2, [["numpy", "2.0.1"], ["scipy", "1.13.1"], ["torch", "2.3.0"]]]]) {
    await api(base, "PUT", `/api/2.0/mlflow-artifacts/artifacts/${exp}/${runs[i]}/artifacts/cairn/environment/pylock.toml`, lock(pkgs));
  }
  await mlflow("POST", "runs/log-batch", { run_id: runs[1], tags: [
    { key: "mlflow.source.git.commit", value: "3f1c2a9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39" },
    { key: "mlflow.source.git.branch", value: "main" }, { key: "cairn.git.dirty", value: "true" },
    { key: "cairn.command", value: "python train.py --lr 0.01" },
    { key: "cairn.python.version", value: "3.11.2" }] });
  await api(base, "PUT", `/api/2.0/mlflow-artifacts/artifacts/${exp}/${runs[1]}/artifacts/cairn/code.diff`,
            "--- a/train.py\n+++ b/train.py\n-lr = 0.1\n+lr = 0.01\n");
  // 300 runs in an experiment of their own, for the table's virtual scrolling.
  const { experiment_id: many } = await mlflow("POST", "experiments/create", { name: "many" });
  for (let i = 0; i < 300; i += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, k) => mlflow("POST", "runs/create", {
      experiment_id: many, run_name: `m-${String(i + k).padStart(3, "0")}`, start_time: 1764680000000 + i + k,
    })));
  }
  // A finished run whose log is longer than one read (1 MiB).
  const { run: chatty } = await mlflow("POST", "runs/create", { experiment_id: exp, run_name: "chatty" });
  const line = (n) => `line ${String(n).padStart(6, "0")} ${"x".repeat(80)}\n`;
  let text = "";
  for (let n = 0; n < 20000; n++) text += line(n);
  await api(base, "POST", `/api/cairn/v1/runs/${chatty.info.run_id}/log`, {
    chunks: [{ offset: 0, stream: "stdout", timestamp: Date.now(), data: text }],
  });
  await mlflow("POST", "runs/update", { run_id: chatty.info.run_id, status: "FINISHED", end_time: Date.now() });
  // A pipeline run as `cairn pipeline run` records it: a parent run and a child run per step,
  // in an experiment named after the pipeline.
  const { experiment_id: pipelines } = await mlflow("POST", "experiments/create", { name: "recsys" });
  const { run: parent } = await mlflow("POST", "runs/create", {
    experiment_id: pipelines, run_name: "recsys",
    tags: [{ key: "cairn.pipeline.name", value: "recsys" }, { key: "cairn.pipeline.steps", value: "5" },
           { key: "cairn.pipeline.state", value: "failed" }],
  });
  const steps = {};
  for (const [id, state, needs, outputs] of [["prepare", "done", [], ["data/"]],
                                             ["train[1]", "done", ["prepare"], []],
                                             ["train[2]", "failed", ["prepare"], ["model.bin"]],
                                             ["publish", "cached", ["check"], ["report.md"]],
                                             ["deploy", "waiting for approval", ["publish"], []]]) {
    const tags = [{ key: "mlflow.parentRunId", value: parent.info.run_id },
                  { key: "cairn.step.id", value: id }, { key: "cairn.step.state", value: state }];
    if (needs.length) tags.push({ key: "cairn.step.needs", value: JSON.stringify(needs) });
    if (outputs.length) tags.push({ key: "cairn.step.outputs", value: JSON.stringify(outputs) });
    // A cached step's outputs are those of the run that produced them: here, prepare's.
    if (state === "cached") tags.push({ key: "cairn.step.cached_from_run", value: steps.prepare });
    if (state.startsWith("waiting")) tags.push({ key: "cairn.approval.by", value: "release-team" });
    const { run } = await mlflow("POST", "runs/create", { experiment_id: pipelines, run_name: id, tags });
    await mlflow("POST", "runs/update", {
      run_id: run.info.run_id,
      status: state === "failed" ? "FAILED" : state.startsWith("waiting") ? "SCHEDULED" : "FINISHED",
    });
    steps[id] = run.info.run_id;
  }
  await api(base, "PUT", `/api/2.0/mlflow-artifacts/artifacts/${pipelines}/${steps.prepare}/artifacts/outputs/data/rows.csv`,
            "a,b\n1,2\n");
  await api(base, "PUT", `/api/2.0/mlflow-artifacts/artifacts/${pipelines}/${steps.prepare}/artifacts/outputs/report.md`,
            "# report\n");
  return { exp, runs, live: live.info.run_id, bytes, pipeline: parent.info.run_id, steps, many,
           chatty: chatty.info.run_id, logBytes: text.length };
}

// The reader's account, and experiment "guarded", which the admin made and so manages alone
// (everyone else has the default level, READ).
async function seedAuth(base) {
  const admin = basic(ADMIN);
  await api(base, "POST", "/api/cairn/v1/users", READER, admin);
  const { experiment_id: guarded } = await api(base, "POST", "/api/2.0/mlflow/experiments/create",
                                               { name: "guarded" }, admin);
  return { guarded };
}

async function signIn(page, base, who, hash = "") {
  await page.goto(base + "/" + hash);
  await page.fill("#login input[name=username]", who.username);
  await page.fill("#login input[name=password]", who.password);
  await page.click("#login button[type=submit]");
  await page.locator("#user", { hasText: who.username }).waitFor();
}

// --- the tests -------------------------------------------------------------------------------

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
// A test against the server with authentication on.
const authTest = (name, fn) => tests.push({ name, fn, auth: true });

test("the experiments page lists experiments with their run counts", async ({ page, base, shot }) => {
  await page.goto(base + "/");
  const row = page.locator("#experiments tr", { hasText: "vision" });
  await row.waitFor();
  // 30 finished runs, "chatty" (finished) and "live", which is running.
  assertEqual((await row.locator("td.num").textContent()).trim(), "32 (1 running)", "vision's runs");
  const empty = page.locator("#experiments tr", { hasText: "empty-experiment" });
  assertEqual((await empty.locator("td.num").textContent()).trim(), "0", "the empty experiment's runs");
  await shot("experiments");
});

test("an experiment is created, renamed and deleted from the experiments page", async ({ page, base }) => {
  await page.goto(base + "/");
  await page.locator("#experiments").waitFor();
  await page.fill('input[placeholder="new experiment name"]', "scratch");
  await page.click("button[type=submit]");
  const row = (name) => page.locator("#experiments tr", { has: page.locator("td a", { hasText: new RegExp(`^${name}$`) }) });
  await row("scratch").waitFor();
  page.once("dialog", (d) => d.accept("scratch-2"));
  await row("scratch").locator("button", { hasText: "Rename" }).click();
  await row("scratch-2").waitFor();
  page.once("dialog", (d) => d.accept());
  await row("scratch-2").locator("button", { hasText: "Delete" }).click();
  await row("scratch-2").waitFor({ state: "detached" });
  const { experiments } = await api(base, "POST", "/api/2.0/mlflow/experiments/search",
                                    { max_results: 1000, view_type: "DELETED_ONLY" });
  assert(experiments.some((e) => e.name === "scratch-2"), "the experiment is deleted, not gone");
});

test("the runs table shows the runs, sorts by a column, and keeps headers over columns", async ({ page, base, data, shot }) => {
  await page.goto(`${base}/#/experiments/${data.exp}`);
  await page.locator("#run-count", { hasText: "32 runs" }).waitFor();
  const rows = page.locator(".vtable-row");
  assert(await rows.count() > 5, "rows are drawn");
  // Sort by acc, ascending then descending: the first row follows.
  await page.locator("[role=columnheader]", { hasText: /^acc/ }).click();
  const firstAcc = async () => (await rows.first().locator("[role=cell]").nth(5).textContent()).trim();
  assertEqual(await firstAcc(), "0", "lowest acc first");
  await page.locator("[role=columnheader]", { hasText: /^acc/ }).click();
  assertEqual(await firstAcc(), String(+(29 / 30).toPrecision(6)), "highest acc first");
  await shot("runs");
  // Scrolled sideways, the headers stay above their columns.
  await page.locator(".vtable-body").evaluate((b) => { b.scrollLeft = 300; });
  const head = await page.locator("[role=columnheader]", { hasText: /^acc/ }).boundingBox();
  const cellBox = await rows.first().locator("[role=cell]").nth(5).boundingBox();
  assert(Math.abs(head.x - cellBox.x) < 1, `header at ${head.x}, its cells at ${cellBox.x}`);
});

test("a long runs table draws only the rows in view", async ({ page, base, data }) => {
  await page.goto(`${base}/#/experiments/${data.many}`);
  await page.locator("#run-count", { hasText: "300 runs" }).waitFor();
  const rows = page.locator(".vtable-row");
  const drawn = await rows.count();
  assert(drawn > 10 && drawn < 100, `${drawn} rows drawn of 300`);
  // Newest first; scrolled to the bottom, the oldest run is drawn.
  await page.locator(".vtable-body").evaluate((b) => { b.scrollTop = b.scrollHeight; });
  await page.locator(".vtable-row", { hasText: "m-000" }).waitFor();
  assert(await page.locator(".vtable-row", { hasText: "m-299" }).count() === 0,
         "the newest run is no longer drawn");
});

test("a filter narrows the rows and a bad one shows the server's error", async ({ page, base, data }) => {
  // The "live" run is running, so the table is read again after 5 s; the filters below come
  // after that, as they would for a person watching the table.
  const refreshed = page.waitForRequest((r) => r.url().includes("runs/search") &&
                                              (r.postDataJSON().filter || "").includes("run_id IN ("),
                                        { timeout: 15000 });
  await page.goto(`${base}/#/experiments/${data.exp}`);
  await page.locator("#run-count", { hasText: /^\s*32 runs/ }).waitFor();
  await refreshed;
  await page.fill("#filter", "metrics.acc >>> 1");
  await page.press("#filter", "Enter");
  const error = page.locator("#filter-error");
  await error.waitFor();
  assert(/invalid|error|parse|expected/i.test(await error.textContent()), "the server's message is shown");
  // Back to no filter: every run again, and the error gone.
  await page.fill("#filter", "");
  await page.press("#filter", "Enter");
  await page.locator("#run-count", { hasText: /^\s*32 runs/ }).waitFor();
  await error.waitFor({ state: "detached" });
  await page.fill("#filter", "metrics.acc > 0.5 and params.optimizer = 'adam'");
  await page.press("#filter", "Enter");
  // acc = i/30 > 0.5 for i >= 16; adam for odd i: 17, 19, ..., 29.
  await page.locator("#run-count", { hasText: /^\s*7 runs/ }).waitFor();
});

test("a live runs table reads again only the running runs and new ones", async ({ page, base }) => {
  const mlflow = (m, p, b) => api(base, m, "/api/2.0/mlflow/" + p, b);
  const { experiment_id: exp } = await mlflow("POST", "experiments/create", { name: "watched" });
  const t0 = Date.now();
  const make = async (name, kind, start) => {
    const { run } = await mlflow("POST", "runs/create", { experiment_id: exp, run_name: name, start_time: start });
    await mlflow("POST", "runs/log-batch", { run_id: run.info.run_id, params: [{ key: "kind", value: kind }] });
    return run.info.run_id;
  };
  const busy = await make("busy", "w", t0);
  const done = await make("done", "w", t0 - 1000);
  await mlflow("POST", "runs/update", { run_id: done, status: "FINISHED", end_time: t0 });
  const filters = [];
  page.on("request", (r) => {
    if (r.url().includes("runs/search")) filters.push(r.postDataJSON().filter);
  });
  await page.goto(`${base}/#/experiments/${exp}?filter=${encodeURIComponent("params.kind = 'w'")}`);
  await page.locator("#run-count", { hasText: "2 runs · refreshing while runs are active" }).waitFor();
  // Before the next read: the running run logs a metric and ends; two runs start, one of
  // which the filter excludes.
  await mlflow("POST", "runs/log-batch", { run_id: busy, metrics: [{ key: "acc", value: 0.75, timestamp: t0, step: 1 }] });
  await make("fresh", "w", t0 + 1000);
  await make("other", "x", t0 + 2000);
  await mlflow("POST", "runs/update", { run_id: busy, status: "FINISHED", end_time: t0 + 3000 });
  await page.locator(".vtable-row", { hasText: "fresh" }).waitFor({ timeout: 15000 });
  const busyRow = page.locator(".vtable-row", { hasText: "busy" });
  await busyRow.locator(".status", { hasText: "FINISHED" }).waitFor({ timeout: 15000 });
  assert((await busyRow.textContent()).includes("0.75"), "the metric logged meanwhile is shown");
  // "fresh" runs on, so the table keeps watching.
  await page.locator("#run-count", { hasText: "3 runs · refreshing" }).waitFor();
  assertEqual(await page.locator(".vtable-row", { hasText: "other" }).count(), 0, "rows of the excluded run");
  assert(filters.some((f) => f.startsWith("params.kind = 'w' and attributes.run_id IN ('")),
         `a refresh asked for the running runs only: ${JSON.stringify(filters)}`);
  // A refresh that fails keeps the rows and says why; the next one clears the message.
  const search = "**/api/2.0/mlflow/runs/search";
  await page.route(search, (route) => route.fulfill({
    status: 503, contentType: "application/json",
    body: JSON.stringify({ error_code: "TEMPORARILY_UNAVAILABLE", message: "the server is restarting" }),
  }));
  await page.locator("#filter-error", { hasText: "the server is restarting" }).waitFor({ timeout: 15000 });
  assertEqual(await page.locator(".vtable-row").count(), 3, "rows kept after a failed refresh");
  await page.unroute(search);
  await page.locator("#filter-error").waitFor({ state: "detached", timeout: 15000 });
  await page.locator("#run-count", { hasText: "3 runs · refreshing" }).waitFor();
});

test("a run's metric chart is drawn from the thinned series", async ({ page, base, data, shot }) => {
  const series = page.waitForResponse((r) => r.url().includes("metrics/series") && r.url().includes("key=loss"));
  await page.goto(`${base}/#/runs/${data.runs[0]}?tab=metrics`);
  const answer = await (await series).json();
  assert(answer.total_points === 5000 && answer.values.length <= 2000,
         `thinned: ${answer.values.length} of ${answer.total_points} points`);
  assert(answer.values.includes(3 + 1 / 2501), "the spike at step 2500 survives the thinning");
  const chart = page.locator('.chart[data-metric="loss"]');
  await chart.locator("canvas").waitFor();
  await chart.locator(".muted", { hasText: "5,000 points" }).waitFor();
  // Pixels in the first run's colour (#2f6db5): the curve, not the axes or the grid.
  const curvePixels = (canvas) => canvas.evaluate((c) => {
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && d[i + 2] > 120 && d[i + 2] - d[i] > 60) n++;
    return n;
  });
  const painted = await curvePixels(chart.locator("canvas"));
  assert(painted > 1000, `the canvas has a curve on it (${painted} pixels in its colour)`);
  // A metric that is NaN throughout draws no curve, and says why.
  const broken = page.locator('.chart[data-metric="broken"]');
  await broken.locator(".muted", { hasText: "no finite values" }).waitFor();
  assertEqual(await curvePixels(broken.locator("canvas")), 0, "pixels of a NaN metric's curve");
  await shot("run-metrics");
});

test("a run's overview shows its code state and diff, and its environment", async ({ page, base, data }) => {
  await page.goto(`${base}/#/runs/${data.runs[1]}`);
  await page.locator("#overview td", { hasText: "python train.py --lr 0.01" }).waitFor();
  await page.locator("#overview td", { hasText: "3f1c2a9d8e7b on main" }).waitFor();
  await page.locator("#overview button", { hasText: "show diff" }).click();
  await page.locator("#code-diff .add", { hasText: "+lr = 0.01" }).waitFor();
  await page.locator(".tabs a", { hasText: "parameters" }).click();
  await page.locator("#params tr", { hasText: "optimizer" }).locator("td", { hasText: "adam" }).waitFor();
  await page.locator(".tabs a", { hasText: "environment" }).click();
  await page.locator("#env-facts tr", { hasText: "cairn.python.version" }).waitFor();
  await page.locator("pre", { hasText: 'name = "numpy"' }).waitFor();
});

test("compare highlights exactly the parameters that differ", async ({ page, base, data, shot }) => {
  // Runs 1 and 2: lr 0.01 both; optimizer adam vs sgd; epochs 10 both.
  await page.goto(`${base}/#/compare?runs=${data.runs[1]},${data.runs[2]}`);
  await page.locator("#compare-table").waitFor();
  // The environment snapshots load after the table.
  await page.locator("#package-summary", { hasText: "2 of 3 packages differ" }).waitFor();
  const differing = await page.locator("#compare-table tr.differs").evaluateAll(
    (rows) => rows.map((r) => r.dataset.key));
  assertEqual(differing.filter((k) => k.startsWith("params.")), ["params.optimizer"], "differing parameters");
  assert(differing.includes("metrics.acc"), "acc differs too");
  const packages = await page.locator("#package-diff tr.differs").evaluateAll(
    (rows) => rows.map((r) => [r.dataset.package, ...[...r.querySelectorAll("td")].map((td) => td.textContent)]));
  assertEqual(packages, [["numpy", "1.26.4", "2.0.1"], ["scipy", "absent", "1.13.1"]], "packages that differ");
  await page.locator("pre.diff .add", { hasText: "+lr = 0.01" }).waitFor();
  await shot("compare");
});

test("an artifact downloads intact and text artifacts preview", async ({ page, base, data }) => {
  await page.goto(`${base}/#/runs/${data.runs[0]}?tab=artifacts`);
  await page.locator("#artifacts").waitFor();
  await page.locator("#artifacts button", { hasText: "config.json" }).click();
  await page.locator("#preview pre", { hasText: '"dropout": 0.1' }).waitFor();
  await page.locator("#artifacts button", { hasText: "table.csv" }).click();
  await page.locator("#preview table td", { hasText: "0.7" }).waitFor();
  // Quoted fields keep their commas and quotes; CRLF leaves nothing in the cells.
  const cells = await page.locator("#preview table tr").evaluateAll(
    (rows) => rows.map((r) => [...r.children].map((c) => c.textContent)));
  assertEqual(cells, [["epoch", "acc", "note"], ["1", "0.5", "warm, up"], ["2", "0.7", 'said "hi"']], "CSV cells");
  await page.locator("#artifacts button", { hasText: "model/" }).click();
  const [download] = await Promise.all([
    page.waitForEvent("download"),
    page.locator("#artifacts a", { hasText: "download" }).first().click(),
  ]);
  const got = readFileSync(await download.path());
  assertEqual(got.length, data.bytes.length, "downloaded size");
  assert(Buffer.compare(got, Buffer.from(data.bytes)) === 0, "downloaded bytes are the uploaded ones");
});

test("a finished run's long log is shown to its end", async ({ page, base, data }) => {
  await page.goto(`${base}/#/runs/${data.chatty}?tab=log`);
  await page.locator("#log", { hasText: "line 019999" }).waitFor();
  const shown = await page.locator("#log").evaluate((e) => e.textContent.length);
  assertEqual(shown, data.logBytes, "characters shown");
});

test("the console log follows new lines of a running run", async ({ page, base, data }) => {
  await page.goto(`${base}/#/runs/${data.live}?tab=log`);
  await page.locator("#log", { hasText: "epoch 1 started" }).waitFor();
  await api(base, "POST", `/api/cairn/v1/runs/${data.live}/log`, {
    chunks: [{ offset: 16, stream: "stdout", timestamp: Date.now(), data: "epoch 2 started\n" }],
  });
  await page.locator("#log", { hasText: "epoch 2 started" }).waitFor({ timeout: 10000 });
  // The run ends: the page's header follows (the run is read again while it is active).
  await api(base, "POST", "/api/2.0/mlflow/runs/update", { run_id: data.live, status: "FINISHED", end_time: Date.now() });
  await page.locator("h1 .status", { hasText: "FINISHED" }).waitFor({ timeout: 15000 });
});

test("a pipeline run is drawn as its DAG with each step's state", async ({ page, base, data, shot }) => {
  await page.goto(`${base}/#/runs/${data.pipeline}`);
  await page.click("#pipeline-link");
  await page.locator("#dag").waitFor();
  const states = Object.fromEntries(await page.locator("#dag g.node").evaluateAll(
    (nodes) => nodes.map((n) => [n.dataset.step, n.dataset.state])));
  assertEqual(states, { check: "not started", prepare: "done", publish: "cached", "train[1]": "done",
                        "train[2]": "failed", deploy: "waiting for approval" }, "steps and states");
  const edges = await page.locator("#dag path.edge").evaluateAll((p) => p.map((e) => e.dataset.edge).sort());
  assertEqual(edges, ["check>publish", "prepare>train[1]", "prepare>train[2]", "publish>deploy"], "edges");
  // needs come first: prepare is left of what needs it
  const x = async (step) => (await page.locator(`#dag g.node[data-step="${step}"]`).boundingBox()).x;
  assert(await x("prepare") < await x("train[2]"), "prepare is drawn before train[2]");
  await shot("pipeline");
  // Each step's outputs link to where they are kept; a failed step's were not written.
  const outputs = await page.locator("#pipeline-outputs tr[data-step]").evaluateAll((rows) =>
    rows.map((r) => [r.dataset.step, [...r.querySelectorAll("[data-output]")].map(
      (o) => [o.dataset.output, o.getAttribute("href")])]));
  assertEqual(outputs, [
    ["prepare", [["data/", `#/runs/${data.steps.prepare}?tab=artifacts&path=outputs%2Fdata`]]],
    ["publish", [["report.md", `#/runs/${data.steps.prepare}?tab=artifacts&path=outputs`]]],
    ["train[2]", [["model.bin", null]]],
  ], "outputs and their links");
  // A step waiting for approval is approved from the page; the decision is the run's.
  await page.locator('#approvals tr[data-step="deploy"]').waitFor();
  await page.fill("#approvals input", "checked the report");
  await page.click('#approvals tr[data-step="deploy"] button[data-decision="approve"]');
  await page.locator("#approvals").waitFor({ state: "detached" });
  const { run: deploy } = await api(base, "GET", `/api/2.0/mlflow/runs/get?run_id=${data.steps.deploy}`);
  const decided = Object.fromEntries(deploy.data.tags.map((t) => [t.key, t.value]));
  assertEqual([decided["cairn.approval.decision"], decided["cairn.approval.comment"]],
              ["approved", "checked the report"], "the decision");
  await page.locator('#pipeline-outputs a[data-output="data/"]').click();
  await page.locator("#artifacts li", { hasText: "rows.csv" }).waitFor();
  await page.goBack();
  await page.locator('#dag g.node[data-step="train[2]"]').click();
  await page.locator("h1", { hasText: "train[2]" }).waitFor();
});

// A model "fraud" with three versions made from one finished run (its code, environment,
// dataset, a parameter and a metric recorded; a file of weights under model/), version 2 in
// Staging; and a run of the same experiment that made no version.
async function seedRegistry(base) {
  const mlflow = (m, p, b) => api(base, m, "/api/2.0/mlflow/" + p, b);
  const { experiment_id: exp } = await mlflow("POST", "experiments/create", { name: "fraud-training" });
  const commit = "9b1e4c7d2a3f5e6b8c9d0a1b2c3d4e5f6a7b8c9d";
  const { run } = await mlflow("POST", "runs/create", { experiment_id: exp, run_name: "trainer" });
  const runId = run.info.run_id;
  await mlflow("POST", "runs/log-batch", {
    run_id: runId, params: [{ key: "max_depth", value: "6" }],
    metrics: [{ key: "auc", value: 0.93, timestamp: Date.now(), step: 5 }],
    tags: [{ key: "mlflow.source.git.commit", value: commit }, { key: "cairn.git.dirty", value: "false" },
           { key: "cairn.env.hash", value: "5d41402abc4b2a76b9719d911017c592" }],
  });
  await mlflow("POST", "runs/log-inputs", { run_id: runId, datasets: [{
    tags: [{ key: "mlflow.data.context", value: "training" }],
    dataset: { name: "transactions", digest: "e4d909c2", source_type: "local",
               source: '{"uri": "/data/transactions.parquet"}' },
  }] });
  const weights = new Uint8Array(5000).map((_, i) => (i * 13 + 5) % 256);
  const root = run.info.artifact_uri.replace(/^mlflow-artifacts:\/*/, "");
  await api(base, "PUT", `/api/2.0/mlflow-artifacts/artifacts/${root}/model/w.bin`, weights);
  await mlflow("POST", "runs/update", { run_id: runId, status: "FINISHED", end_time: Date.now() });
  await mlflow("POST", "registered-models/create", {
    name: "fraud", description: "Flags card transactions for review.", tags: [{ key: "team", value: "risk" }],
  });
  for (let i = 0; i < 3; i++) {
    await mlflow("POST", "model-versions/create", { name: "fraud", source: `runs:/${runId}/model`, run_id: runId });
  }
  await mlflow("POST", "model-versions/transition-stage",
               { name: "fraud", version: "2", stage: "Staging", archive_existing_versions: false });
  const { run: other } = await mlflow("POST", "runs/create", { experiment_id: exp, run_name: "unregistered" });
  return { runId, commit, weights, other: other.info.run_id };
}

test("the queues page: tasks in the order they start with why they wait, reprioritised and cancelled; the agents", async ({ page, base, shot }) => {
  const post = async (path, body) => api(base, "POST", "/api/cairn/v1/" + path, body);
  const first = (await post("tasks", { queue: "ui-q", spec: { command: ["true"] } })).task;
  const second = (await post("tasks", { queue: "ui-q", priority: 2, needs: { gpus: 1 },
                                        spec: { command: ["true"] } })).task;
  await post("agents", { id: "gpu-box", queues: ["ui-q"], gpus: ["0"], slots: 2,
                         host: { os: "linux", driver_version: "535.104.05",
                                 gpus: [{ index: 0, name: "NVIDIA A100" }] } });
  await page.goto(base + "/");
  await page.click("#queues-link");
  const order = () => page.locator('[data-queue="ui-q"] tbody tr').evaluateAll((rows) =>
    rows.map((r) => r.dataset.task));
  await page.locator(`tr[data-task="${first.id}"]`).waitFor();
  assertEqual(await order(), [second.id, first.id], "the higher priority first");
  await page.locator(`tr[data-task="${first.id}"] .task-status`, { hasText: /^waiting / }).waitFor();
  const agent = await page.locator('#agents tr[data-agent="gpu-box"] td').allTextContents();
  assertEqual([agent[1], agent[2], agent[3], agent[6]], ["ui-q", "0", "2", "1 × NVIDIA A100, driver 535.104.05"],
              "the agent's queues, GPUs, slots and host");

  page.once("dialog", (d) => d.accept("5"));
  await page.locator(`tr[data-task="${first.id}"] button[data-action=priority]`).click();
  await page.waitForFunction((id) => document.querySelector('[data-queue="ui-q"] tbody tr').dataset.task === id,
                             first.id);
  page.once("dialog", (d) => d.accept());
  await page.locator(`tr[data-task="${second.id}"] button[data-action=cancel]`).click();
  await page.locator(`tr[data-task="${second.id}"]`).waitFor({ state: "detached" });
  const tasks = await api(base, "GET", "/api/cairn/v1/tasks?queue=ui-q&state=queued&state=cancelled");
  assertEqual(tasks.tasks.map((t) => [t.id, t.state, t.priority]),
              [[first.id, "queued", 5], [second.id, "cancelled", 2]], "what the buttons did, through the API");
  await shot("queues");
});

test("a queued run's page clones it with a parameter changed and queues a reproduction", async ({ page, base }) => {
  const post = async (path, body) => api(base, "POST", "/api/cairn/v1/" + path, body);
  const task = (await post("tasks", { queue: "again-q", run_name: "first",
                                      spec: { command: ["python", "train.py"], params: { lr: "0.1" } } })).task;
  await page.goto(`${base}/#/runs/${task.run_id}`);
  page.once("dialog", (d) => d.accept("lr=0.5, epochs=3"));
  await page.click("#clone-run");
  await page.locator("h1", { hasText: "first-clone" }).waitFor();
  const clone = (await api(base, "GET", "/api/cairn/v1/tasks?queue=again-q")).tasks
    .find((t) => t.id !== task.id);
  assertEqual(clone.spec.params, { epochs: "3", lr: "0.5" }, "the clone's parameters");
  assert(page.url().endsWith(`#/runs/${clone.run_id}`), "the clone's page");
  await page.locator(".run-again a", { hasText: task.run_id.slice(0, 8) }).waitFor();
  await page.click("#reproduce-run");
  await page.locator("h1", { hasText: "first-clone-reproduced" }).waitFor();
  const { run } = await api(base, "GET", "/api/2.0/mlflow/runs/get?run_id=" + page.url().split("/").pop());
  assertEqual(run.data.tags.find((t) => t.key === "cairn.reproduce.of").value, clone.run_id,
              "the reproduction names its original");
});

test("a reproduction's verdict and both runs' curves show on the pages of both runs", async ({ page, base, shot }) => {
  const post = async (path, body) => api(base, "POST", "/api/cairn/v1/" + path, body);
  const logLosses = (runId, losses) => api(base, "POST", "/api/2.0/mlflow/runs/log-batch", {
    run_id: runId,
    metrics: losses.map((value, step) => ({ key: "loss", value, step, timestamp: 1764680000000 + step })),
  });
  // An agent's work, done through the API: lease the task, log its run's metrics, finish it.
  await post("agents", { id: "repro-box", queues: ["repro-ui-q"], slots: 1, host: { os: "linux" } });
  const runTask = async (losses) => {
    const { task } = await post("agents/lease", { agent: "repro-box", queues: ["repro-ui-q"],
                                                  host: { os: "linux" } });
    await logLosses(task.run_id, losses);
    await post("agents/finish", { task_id: task.id, agent: "repro-box", attempt: task.attempt, state: "done" });
    return task;
  };
  await post("tasks", { queue: "repro-ui-q", run_name: "seeded",
                        spec: { command: ["python", "train.py"], params: { seed: "1" } } });
  const original = await runTask([1.0, 0.5, 0.25, 0.125]);
  await post("tasks/clone", { run_id: original.run_id, reproduce: true });
  const again = await runTask([1.0, 0.5, 0.3, 0.2]);

  await page.goto(`${base}/#/runs/${again.run_id}`);
  const panel = page.locator('#reproduction-verdict[data-verdict="diverged"]');
  await panel.waitFor();
  assert((await panel.locator("p").first().textContent()).startsWith("diverged at step 2: loss 0.3 (original 0.25) · "),
         "the summary names the step and both values");
  const row = await page.locator('#reproduction-metrics tr[data-metric="loss"] td').allTextContents();
  assertEqual(row, ["loss", "diverged", "3", "step 2: 0.3 (original 0.25)"], "the metric's row");
  const legend = panel.locator(".u-legend");
  await legend.locator("text=original " + original.run_id.slice(0, 8)).waitFor();
  await legend.locator("text=reproduction " + again.run_id.slice(0, 8)).waitFor();

  await page.goto(`${base}/#/runs/${original.run_id}`);
  await page.locator(`#reproductions tr[data-run="${again.run_id}"] .verdict`, { hasText: "diverged" }).waitFor();
  await page.locator('#reproduction-verdict[data-verdict="diverged"] .u-legend').waitFor();
  await shot("reproduction");
});

// `cairn ARGS...` against the server at `base`, in `cwd`; its output when it succeeds.
function cairnCli(base, cwd, ...args) {
  const p = spawnSync(CAIRN, args, {
    cwd, encoding: "utf8", timeout: 120000,
    env: { ...process.env, CAIRN_TRACKING_URI: base, CAIRN_DATA_CACHE: join(cwd, ".data-cache") },
  });
  assert(p.status === 0, `cairn ${args.join(" ")} exited ${p.status}: ${p.stdout}${p.stderr}`);
  return p.stdout;
}

test("datasets: the list, a version's files and lineage, two versions compared, a run's inputs", async ({ page, base, shot }) => {
  const dir = mkdtempSync(join(tmpdir(), "cairn-e2e-data-"));
  const src = join(dir, "src");
  mkdirSync(join(src, "images"), { recursive: true });
  for (let i = 0; i < 30; i++) writeFileSync(join(src, "images", `cat_${i}.jpg`), `cat ${i} `.repeat(100));
  writeFileSync(join(src, "labels.csv"), "file,label\n");
  cairnCli(base, dir, "data", "add", "pets", src, "-m", "first cut", "--meta", "source=shelter");
  writeFileSync(join(src, "labels.csv"), "file,label\ncat_0.jpg,cat\n");
  writeFileSync(join(src, "images", "dog_0.jpg"), "woof");
  rmSync(join(src, "images", "cat_29.jpg"));
  cairnCli(base, dir, "data", "add", "pets", src, "-m", "labelled, a dog added");
  cairnCli(base, dir, "run", "--name", "trained-on-pets", "--data", "pets@1", "--", "true");
  const runs = await api(base, "POST", "/api/2.0/mlflow/runs/search",
                         { experiment_ids: ["0"], filter: "attributes.run_name = 'trained-on-pets'" });
  const runId = runs.runs[0].info.run_id;

  await page.goto(`${base}/#/`);
  await page.click("#datasets-link");
  await page.locator('#datasets tr[data-dataset="pets"]').waitFor();
  const row = await page.locator('#datasets tr[data-dataset="pets"] td').allTextContents();
  assertEqual([row[0], row[1], row[2], row[3], row[6]], ["pets", "2", "2", "31", "labelled, a dog added"],
              "the dataset's row: versions, latest, files, message");
  await page.click('#datasets tr[data-dataset="pets"] a');
  await page.locator('#versions tr[data-version="1"]').waitFor();
  await page.check('#versions tr[data-version="1"] input');
  await page.check('#versions tr[data-version="2"] input');
  await page.click("#compare-versions");
  await page.locator("#diff-summary", { hasText: "1 added" }).waitFor();
  await page.locator("#data-diff tbody tr").first().waitFor();
  const changes = await page.locator("#data-diff tbody tr").evaluateAll((rows) =>
    rows.map((r) => [r.children[0].textContent, r.children[1].textContent]));
  assertEqual(changes, [["removed", "images/cat_29.jpg"], ["added", "images/dog_0.jpg"], ["changed", "labels.csv"]],
              "the diff of version 1 and 2, in path order");
  await page.locator("#diff-summary", { hasText: "29 of 31 files the same" }).waitFor();
  await shot("dataset-diff");

  await page.goto(`${base}/#/datasets/pets/versions/1`);
  await page.locator("#data-version tr", { hasText: "Files" }).locator("td", { hasText: "31," }).waitFor();
  await page.locator("#data-metadata tr", { hasText: "source" }).locator("td", { hasText: "shelter" }).waitFor();
  await page.locator(`#used-by tr[data-run="${runId}"] a`, { hasText: "trained-on-pets" }).waitFor();
  await page.locator("#files-total", { hasText: "31 file(s)" }).waitFor();
  await page.fill("#files-prefix", "images");
  await page.click("#files-prefix + button");
  await page.locator("#files-total", { hasText: "30 file(s)" }).waitFor();
  await page.locator('#files tr[data-path="images/cat_10.jpg"]').waitFor();
  await shot("dataset-version");

  await page.click(`#used-by tr[data-run="${runId}"] a`);
  await page.locator('#dataset-inputs tr[data-dataset="pets"]').waitFor();
  const input = await page.locator('#dataset-inputs tr[data-dataset="pets"] td').allTextContents();
  assertEqual([input[0], input[1], input[4]], ["pets", "version 1", "cairn"], "the run's dataset input");
  rmSync(dir, { recursive: true, force: true });
});

test("the model registry: an alias promoted and rolled back, a version's files and run, a run's versions", async ({ page, base, shot }) => {
  const seeded = await seedRegistry(base);
  await page.goto(base + "/");
  await page.click("#models-link");
  const listed = page.locator('#models tr[data-model="fraud"]');
  await listed.waitFor();
  assertEqual((await listed.locator("td").nth(1).textContent()).trim(), "3", "fraud's latest version");
  await page.fill("#model-filter", "name >>> 'x'");
  await page.press("#model-filter", "Enter");
  await page.locator("#model-filter-error").waitFor();
  await page.fill("#model-filter", "name LIKE 'fra%'");
  await page.press("#model-filter", "Enter");
  await listed.locator("a", { hasText: /^fraud$/ }).click();

  await page.locator("h1", { hasText: "fraud" }).waitFor();
  await page.locator("#model-description", { hasText: "Flags card transactions for review." }).waitFor();
  await page.locator("#model-tags tr", { hasText: "team" }).locator("td", { hasText: "risk" }).waitFor();
  const versions = await page.locator("#versions tbody tr").evaluateAll((rows) =>
    rows.map((r) => [r.dataset.version, r.children[1].textContent]));
  assertEqual(versions, [["3", "None"], ["2", "Staging"], ["1", "None"]], "versions and stages, newest first");
  // Promote 2, then 3, to champion; roll back; a second rollback has nothing earlier.
  const champion = (version) =>
    page.locator('#aliases tr[data-alias="champion"] td.version', { hasText: new RegExp(`^${version}$`) });
  for (const version of ["2", "3"]) {
    await page.selectOption("#promote select[name=version]", version);
    await page.fill("#promote input[name=alias]", "champion");
    await page.click("#promote button[type=submit]");
    await champion(version).waitFor();
  }
  await page.locator("#alias-notice", { hasText: "@champion now names version 3 (it named 2)" }).waitFor();
  const rollBack = page.locator('#aliases tr[data-alias="champion"] button', { hasText: "Roll back" });
  await rollBack.click();
  await page.locator("#alias-notice", { hasText: "@champion is back at version 2" }).waitFor();
  await champion("2").waitFor();
  await page.locator('#versions tr[data-version="2"] .chip', { hasText: "@champion" }).waitFor();
  const moves = await page.locator("#alias-history tbody tr").evaluateAll((rows) =>
    rows.map((r) => [r.children[1].textContent, r.dataset.move, r.querySelector("td.version").textContent]));
  assertEqual(moves, [["@champion", "rollback", "2"], ["@champion", "set", "3"], ["@champion", "set", "2"]],
              "the alias's moves, newest first");
  const { registered_model: model } = await api(base, "GET", "/api/2.0/mlflow/registered-models/get?name=fraud");
  assertEqual(model.aliases, [{ alias: "champion", version: "2" }], "fraud's aliases through the API");
  const { moves: history } = await api(base, "GET", "/api/cairn/v1/models/alias-history?name=fraud&alias=champion");
  assertEqual(history.map((m) => [m.kind, m.version]), [["set", "2"], ["set", "3"], ["rollback", "2"]],
              "champion's history through the API");
  await shot("model");
  await rollBack.click();
  await page.locator("#alias-error", { hasText: "has no earlier version to roll back to" }).waitFor();
  await champion("2").waitFor();

  // The version: its stage and alias, its file downloading intact, and the run that made it.
  await page.locator('#versions tr[data-version="2"] a', { hasText: /^2$/ }).click();
  await page.locator("h1", { hasText: "version 2" }).waitFor();
  await page.locator("#version tr", { hasText: "Stage" }).locator("td", { hasText: "Staging" }).waitFor();
  await page.locator("#version .chip", { hasText: "@champion" }).waitFor();
  const file = page.locator('#version-files tr[data-file="w.bin"]');
  await file.locator("td.num", { hasText: "5,000 B" }).waitFor();
  const [download] = await Promise.all([page.waitForEvent("download"),
                                        file.locator("a", { hasText: "download" }).click()]);
  assert(Buffer.compare(readFileSync(await download.path()), Buffer.from(seeded.weights)) === 0,
         "the version's file downloads as the run logged it");
  await page.locator("#lineage-code tr", { hasText: "mlflow.source.git.commit" })
    .locator("td", { hasText: seeded.commit }).waitFor();
  await page.locator("#lineage-env tr", { hasText: "cairn.env.hash" }).waitFor();
  const dataset = await page.locator('#lineage-datasets tr[data-dataset="transactions"] td').allTextContents();
  assertEqual(dataset, ["transactions", "e4d909c2", '{"uri": "/data/transactions.parquet"} (local)', "training"],
              "the run's dataset");
  await page.locator("#lineage-params tr", { hasText: "max_depth" }).locator("td", { hasText: "6" }).waitFor();
  await page.locator("#lineage-metrics tr", { hasText: "auc" }).locator("td", { hasText: "0.93" }).waitFor();
  await shot("model-version");
  assertEqual(await page.getAttribute("#run-link", "href"), `#/runs/${seeded.runId}`, "the link to the version's run");
  await page.click("#run-link");

  // The run lists the versions made from it; a run that made none shows no such section.
  await page.locator("h1", { hasText: "trainer" }).waitFor();
  await page.locator('#registered-versions tr[data-version="fraud/2"]', { hasText: "@champion" }).waitFor();
  const made = await page.locator("#registered-versions tbody tr").evaluateAll(
    (rows) => rows.map((r) => r.dataset.version));
  assertEqual(made, ["fraud/3", "fraud/2", "fraud/1"], "versions registered from the run");
  await page.locator("#registered-versions a", { hasText: "version 3" }).click();
  await page.locator("h1", { hasText: "version 3" }).waitFor();
  const searched = page.waitForResponse((r) => r.url().includes("model-versions/search") &&
                                               r.url().includes(seeded.other));
  await page.goto(`${base}/#/runs/${seeded.other}`);
  await searched;
  await page.locator("h1", { hasText: "unregistered" }).waitFor();
  await page.evaluate(() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done))));
  assertEqual(await page.locator("h2", { hasText: "Registered versions" }).count(), 0,
              "registered-version sections on a run that made none");

  // Back on the list, the alias shows where it points.
  await page.click("#models-link");
  await page.locator('#models tr[data-model="fraud"] .chip', { hasText: "@champion → 2" }).waitFor();
});

authTest("sign-in: a wrong password is refused on the page, the right one leads where the person was going", async ({ page, base, data, shot }) => {
  // The browser must never be asked for a password itself: no answer may challenge it.
  const challenges = [];
  page.on("response", (r) => r.headers()["www-authenticate"] && challenges.push(r.url()));
  await page.goto(`${base}/#/experiments/${data.guarded}`);
  await page.locator("#login").waitFor();
  assertEqual(await page.locator("#user").count(), 0, "signed-in indicators before signing in");
  await page.fill("#login input[name=username]", ADMIN.username);
  await page.fill("#login input[name=password]", "not-the-password");
  await page.click("#login button[type=submit]");
  await page.locator("#login-error", { hasText: "Wrong username or password." }).waitFor();
  await shot("login");
  await page.fill("#login input[name=password]", ADMIN.password);
  await page.click("#login button[type=submit]");
  await page.locator("header #user", { hasText: "admin" }).waitFor();
  await page.locator("h1", { hasText: "guarded" }).waitFor();
  assertEqual(challenges, [], "answers that ask the browser for a password");
});

authTest("a token made on the settings page works for a REST client until it is revoked", async ({ page, base, shot }) => {
  await signIn(page, base, ADMIN);
  await page.click("#user");
  await page.locator("h1", { hasText: "Access tokens of admin" }).waitFor();
  await page.fill("input[name=token-name]", "laptop");
  await page.click("#new-token-form button[type=submit]");
  await page.locator("#new-token", { hasText: "will not be shown again" }).waitFor();
  const value = (await page.locator("#token-value").textContent()).trim();
  assert(/^cairn_\w+$/.test(value), `the token's value is shown: ${value}`);
  await shot("tokens");
  const search = () => fetch(`${base}/api/2.0/mlflow/experiments/search?max_results=10`,
                             { headers: { Authorization: "Bearer " + value } });
  const before = await search();
  assertEqual(before.status, 200, "a search with the new token");
  assert((await before.json()).experiments.some((e) => e.name === "guarded"), "the token reads experiments");
  const row = page.locator("#tokens tr", { hasText: "laptop" });
  assertEqual((await row.locator("td").nth(1).textContent()).trim(), "read", "the token's scopes");
  page.once("dialog", (d) => d.accept());
  await row.locator("button", { hasText: "Revoke" }).click();
  await row.locator("td.revoked", { hasText: /\d/ }).waitFor();
  assertEqual(await row.locator("button", { hasText: "Revoke" }).count(), 0, "revoke buttons of a revoked token");
  assertEqual((await search()).status, 401, "a search with the revoked token");
});

authTest("a reader is offered neither the admin page nor deleting an experiment it does not manage", async ({ page, base, data }) => {
  await signIn(page, base, READER);
  const row = (name) => page.locator("#experiments tr", { has: page.locator("td a", { hasText: new RegExp(`^${name}$`) }) });
  // Once the reader's access is known, the buttons say why they are off.
  const del = row("guarded").locator("button", { hasText: "Delete" });
  await row("guarded").locator('button[title="needs MANAGE on this experiment"]').waitFor();
  assert(await del.isDisabled(), "guarded's Delete button is disabled");
  assert(await row("guarded").locator("button", { hasText: "Rename" }).isDisabled(),
         "guarded's Rename button is disabled (the reader has READ)");
  assertEqual(await page.locator("#admin-link").count(), 0, "admin links");
  // An experiment the reader makes is the reader's to manage.
  await page.fill('input[placeholder="new experiment name"]', "readers-own");
  await page.click("section > form button[type=submit]");
  await row("readers-own").waitFor();
  await row("readers-own").locator("button:enabled", { hasText: "Delete" }).waitFor();
  // The guarded experiment's runs show, without its permissions.
  const asked = [];
  page.on("request", (r) => { if (r.url().includes("experiments/permissions")) asked.push(r.url()); });
  const access = page.waitForResponse((r) => r.url().includes("experiments/access"));
  await page.goto(`${base}/#/experiments/${data.guarded}`);
  const mine = (await (await access).json()).experiments[0];
  assertEqual([mine.permission, mine.can_manage], ["READ", false], "the reader's access to guarded");
  await page.locator("#run-count", { hasText: "0 runs" }).waitFor();
  assertEqual(asked, [], "requests for guarded's permissions from a reader");
  assertEqual(await page.locator("#permissions").count(), 0, "permissions panels shown to a reader");
});

authTest("an admin grants on an experiment's permissions panel, and manages accounts, teams and the audit log", async ({ page, base, data, shot }) => {
  await signIn(page, base, ADMIN, `#/experiments/${data.guarded}`);
  await page.click("#permissions summary");
  await page.locator('#grants tr[data-grant="user:admin"] select', { hasText: "MANAGE" }).waitFor();
  await page.fill("#new-grant input[name=grantee]", "reader");
  await page.selectOption("#new-grant select[name=permission]", "EDIT");
  await page.click("#new-grant button[type=submit]");
  const readerGrant = page.locator('#grants tr[data-grant="user:reader"]');
  await readerGrant.waitFor();
  const grants = async () => (await api(base, "GET", `/api/cairn/v1/experiments/permissions?experiment_id=${data.guarded}`,
                                        undefined, basic(ADMIN))).permissions;
  assert((await grants()).some((g) => g.username === "reader" && g.permission === "EDIT"), "reader's EDIT grant");
  await readerGrant.locator("select").selectOption("MANAGE");
  await shot("permissions");
  page.once("dialog", (d) => d.accept());
  await readerGrant.locator("button", { hasText: "Remove" }).click();
  await readerGrant.waitFor({ state: "detached" });
  assert(!(await grants()).some((g) => g.username === "reader"), "reader's grant is gone");

  await page.click("#admin-link");
  await page.fill("#new-user input[name=username]", "ci-bot");
  await page.selectOption("#new-user select[name=kind]", "service");
  await page.click("#new-user button[type=submit]");
  const bot = page.locator('#users tr[data-user="ci-bot"]');
  await bot.locator("td", { hasText: "service account" }).waitFor();
  await bot.locator("button", { hasText: "Make admin" }).click();
  await bot.locator("button", { hasText: "Remove admin" }).waitFor();
  await bot.locator("button", { hasText: "Tokens" }).click();
  assertEqual(await page.inputValue("input[name=expires-in-days]"), "90", "a service token's suggested expiry");
  await shot("admin-users");
  page.once("dialog", (d) => d.accept());
  await bot.locator("button", { hasText: "Delete" }).click();
  await bot.waitFor({ state: "detached" });

  await page.click(".tabs a:text-is('teams')");
  await page.fill("#new-team input[name=team]", "vision");
  await page.click("#new-team button[type=submit]");
  const team = page.locator('#teams tr[data-team="vision"]');
  await team.locator("input[name=member]").fill("reader");
  await team.locator("button", { hasText: "Add member" }).click();
  await team.locator('.chip[data-member="reader"]').waitFor();
  await team.locator('.chip[data-member="reader"] button').click();
  await team.locator(".chip").waitFor({ state: "detached" });

  await page.click(".tabs a:text-is('audit')");
  await page.locator("#audit tr", { hasText: "POST teams/members/remove" }).waitFor();
  const actions = await page.locator("#audit tbody tr td:nth-child(4)").allTextContents();
  assertEqual(actions[0], "POST teams/members/remove", "the newest entry first");
  // The reader's failed attempt on guarded is there, and is all a filter on it shows.
  await api(base, "POST", "/api/2.0/mlflow/experiments/delete", { experiment_id: data.guarded }, basic(READER))
    .then(() => assert(false, "the reader deleted guarded"), () => {});
  await page.fill("#audit-filter input[name=actor]", "reader");
  await page.fill("#audit-filter input[name=object]", `experiment ${data.guarded}`);
  await page.click("#audit-filter button[type=submit]");
  const refused = page.locator("#audit tr.refused", { hasText: "POST experiments/delete" });
  await refused.waitFor();
  assert((await refused.textContent()).includes("PERMISSION_DENIED"), "the refusal is recorded as such");
  const rows = await page.locator("#audit tbody tr").evaluateAll(
    (trs) => trs.map((tr) => [tr.children[1].textContent, tr.children[4].textContent]));
  assert(rows.every(([actor, object]) => actor === "reader" && object === `experiment ${data.guarded}`),
         `only the reader's entries on guarded: ${JSON.stringify(rows)}`);
});

authTest("signing out, or a session that ends, returns to the sign-in page", async ({ page, base, context }) => {
  await signIn(page, base, ADMIN);
  await page.click("#sign-out");
  await page.locator("#login").waitFor();
  await page.reload();
  await page.locator("#login").waitFor();
  // A session ended elsewhere: the next request is answered 401 and the page asks again.
  await signIn(page, base, ADMIN);
  await context.clearCookies();
  await page.goto(`${base}/#/settings/tokens`);
  await page.locator("#login").waitFor();
  await signIn(page, base, ADMIN, "#/settings/tokens");
  await page.locator("h1", { hasText: "Access tokens of admin" }).waitFor();
});

// --- running them ----------------------------------------------------------------------------

const chosen = tests.filter((t) => !PATTERN || t.name.includes(PATTERN));
const servers = [];
let browser;
let passed = 0;
let failed = 0;
try {
  // Each server is started and seeded only when a chosen test needs it.
  const [plain, guarded] = await Promise.all([
    chosen.some((t) => !t.auth) ? startServer() : null,
    chosen.some((t) => t.auth) ? startAuthServer() : null,
  ]);
  servers.push(...[plain, guarded].filter(Boolean));
  const [plainData, authData] = await Promise.all([plain && seed(plain.url), guarded && seedAuth(guarded.url)]);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true,
                                     args: ["--no-sandbox", "--disable-gpu"] });
  mkdirSync(SHOTS, { recursive: true });
  for (const t of chosen) {
    const server = t.auth ? guarded : plain;
    const data = t.auth ? authData : plainData;
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    const page = await context.newPage();
    page.setDefaultTimeout(15000);
    const pageErrors = [];
    page.on("pageerror", (e) => pageErrors.push(e.message));
    // Console errors count too, but not the browser's note of an answer with an error status:
    // the tests ask for some (a bad filter, a wrong password, a reader's refusals).
    page.on("console", (m) => m.type() === "error" && !m.text().startsWith("Failed to load resource") &&
                              pageErrors.push("console: " + m.text()));
    // Nothing may leave the machine: any request to another host fails the test.
    const foreign = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(server.url) && !r.url().startsWith("data:") && !r.url().startsWith("blob:")) foreign.push(r.url());
    });
    const shot = (name) => page.screenshot({ path: join(SHOTS, name + ".png") });
    try {
      await t.fn({ page, context, base: server.url, data, shot });
      assertEqual(pageErrors, [], "script and console errors on the page");
      assertEqual(foreign, [], "requests to other machines");
      passed++;
      console.log(`ok    ${t.name}`);
    } catch (e) {
      failed++;
      console.log(`FAIL  ${t.name}\n      ${String(e.message).split("\n").join("\n      ")}`);
      await page.screenshot({ path: join(SHOTS, "failed-" + t.name.replace(/\W+/g, "-") + ".png") }).catch(() => {});
    } finally {
      await context.close();
    }
  }
} catch (e) {
  failed++;
  console.log("FAIL  setting up: " + e.stack);
} finally {
  if (browser) await browser.close();
  for (const server of servers) {
    server.proc.kill("SIGTERM");
    rmSync(server.data, { recursive: true, force: true });
  }
}
console.log(`web_ui: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
