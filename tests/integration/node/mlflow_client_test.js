#!/usr/bin/env node
// Drives a cairn server with the third-party `mlflow` npm client (2.0.7) through a full
// tracking flow, then a second server with authentication on through the same client carrying a
// bearer token in its `headers`. Usage:
//   node mlflow_client_test.js /path/to/cairn        (or --cairn PATH, or CAIRN_BIN=PATH)
// Starts `cairn server --host 127.0.0.1 --port 0 --data-dir <tmp>`, reads the URL it prints,
// runs the checks in order, stops the server with SIGTERM; then does the same with
// `--auth on --init-admin admin --password-file F`, and prints
//   node mlflow client: N passed, N failed
// exiting non-zero on any failure. (The client console.logs every POST body; that is expected.)
// Experiments.setExperimentTag is not used: it builds a URL without the '/' before the verb.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const assert = require('assert/strict');
const MLflow = require('mlflow');

const SUITE = 'node mlflow client';
const STARTUP_TIMEOUT_MS = 30000;
const OVERALL_TIMEOUT_MS = 180000;

function cairnBinary() {
  const argv = process.argv.slice(2);
  const i = argv.indexOf('--cairn');
  if (i >= 0 && argv[i + 1]) return argv[i + 1];
  const positional = argv.find((a) => !a.startsWith('-'));
  return positional || process.env.CAIRN_BIN;
}

function startServer(bin, dataDir, extraArgs = []) {
  return new Promise((resolve, reject) => {
    const args = ['server', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, ...extraArgs];
    const child = spawn(bin, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output = [];
    let buffered = '';
    let done = false;
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      child.kill('SIGKILL');
      reject(new Error(`cairn did not announce its URL within ${STARTUP_TIMEOUT_MS} ms\n${output.join('')}`));
    }, STARTUP_TIMEOUT_MS);
    child.stderr.on('data', (d) => output.push(d.toString()));
    child.stdout.on('data', (d) => {
      const text = d.toString();
      output.push(text);
      if (done) return;
      buffered += text;
      const m = /listening on (http:\/\/[^\s/]+:\d+)/.exec(buffered);
      if (m) {
        done = true;
        clearTimeout(timer);
        resolve({ child, url: m[1], output });
      }
    });
    child.on('error', (e) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(e);
    });
    child.on('exit', (code, signal) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(new Error(`cairn exited (${code ?? signal}) before announcing its URL\n${output.join('')}`));
    });
  });
}

function stopServer(child, timeoutMs = 30000) {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      resolve({ code: child.exitCode, signal: child.signalCode });
      return;
    }
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
    child.kill('SIGTERM');
  });
}

let liveServer = null; // killed by the watchdog if the run hangs

const kv = (pairs) => Object.fromEntries((pairs || []).map((p) => [p.key, p.value]));
const byKey = (metrics) => Object.fromEntries((metrics || []).map((m) => [m.key, m]));

const ADMIN_PASSWORD = 'admin-secret-1';
const basicAuth = (user, password) => 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
const rejectsWith401 = (promise) => assert.rejects(promise, (e) => {
  assert.match(e.message, /"status":401/);
  return true;
});

// One request with fetch, outside the mlflow client (tokens are cairn's own API). Returns the
// status, the headers and the parsed JSON body (null when the body is not JSON).
async function api(url, method, target, body, authorization) {
  const headers = { Accept: 'application/json' };
  if (authorization) headers.Authorization = authorization;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(url + target, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch (_) {
    // a 401 answers in plain text
  }
  return { status: r.status, headers: r.headers, text, json };
}

// The second server, with authentication on: an admin makes a token with its password, the
// mlflow client logs with that token as a bearer header, and loses access once it is revoked.
async function authPhase(bin, tmp, check) {
  const state = { server: null };
  const dataDir = path.join(tmp, 'auth-data');
  fs.mkdirSync(dataDir);
  const passwordFile = path.join(tmp, 'admin-password');
  fs.writeFileSync(passwordFile, ADMIN_PASSWORD + '\n', { mode: 0o600 });
  await check('auth: server starts with --auth on --init-admin admin', async () => {
    state.server = await startServer(bin, dataDir,
      ['--auth', 'on', '--init-admin', 'admin', '--password-file', passwordFile]);
    liveServer = state.server.child;
  });
  if (!state.server) return state;
  const url = state.server.url;
  console.log(`cairn (auth on) at ${url}`);
  const admin = basicAuth('admin', ADMIN_PASSWORD);
  const anonymous = new MLflow({ endpoint: url });
  const t0 = Date.now();
  const ctx = { lateMetric: { key: 'loss', value: 9, timestamp: t0, step: 9 } }; // must never arrive
  const history = async (authorization) => {
    const r = await api(url, 'GET', `/api/2.0/mlflow/metrics/get-history?run_id=${ctx.runId}&metric_key=loss`,
      undefined, authorization);
    assert.equal(r.status, 200, r.text);
    return (r.json.metrics || []).map((m) => [m.step, m.value]).sort((a, b) => a[0] - b[0]);
  };

  await check('auth: a wrong password is refused with 401 and a Basic challenge', async () => {
    const r = await api(url, 'POST', '/api/cairn/v1/tokens', { name: 'nope', scopes: ['write'] },
      basicAuth('admin', 'not-the-password'));
    assert.equal(r.status, 401, r.text);
    assert.equal(r.headers.get('www-authenticate'), 'Basic realm="mlflow"');
    assert.equal(r.json, null);
  });

  await check('auth: admin creates a token with its password', async () => {
    const r = await api(url, 'POST', '/api/cairn/v1/tokens', { name: 'node-client', scopes: ['write'] }, admin);
    assert.equal(r.status, 200, r.text);
    assert.match(r.json.value, /^cairn_\w{16,}$/);
    assert.equal(typeof r.json.token.id, 'string');
    assert.equal(r.json.token.name, 'node-client');
    assert.ok(r.json.token.scopes.includes('write'), JSON.stringify(r.json.token));
    assert.ok(!JSON.stringify(r.json.token).includes(r.json.value), 'the token record repeats its secret');
    ctx.token = r.json.value;
    ctx.tokenId = r.json.token.id;
    ctx.client = new MLflow({ endpoint: url, headers: { Authorization: 'Bearer ' + ctx.token } });
  });

  await check('auth: bearer client creates an experiment and a run', async () => {
    const { Experiments, Runs } = ctx.client;
    ctx.expName = `node-auth-${process.pid}-${t0}`;
    ctx.expId = (await Experiments.create({ name: ctx.expName })).experiment_id;
    assert.equal(typeof ctx.expId, 'string');
    assert.equal((await Experiments.get({ experiment_id: ctx.expId })).experiment.name, ctx.expName);
    const r = await Runs.create({
      experiment_id: ctx.expId, user_id: 'node', start_time: t0, tags: [{ key: 'via', value: 'bearer' }],
    });
    ctx.runId = r.run.info.run_id;
    assert.equal(r.run.info.experiment_id, ctx.expId);
    assert.equal(r.run.info.status, 'RUNNING');
  });

  await check('auth: bearer client logs a param and metrics and reads them back', async () => {
    const { Runs, Metrics } = ctx.client;
    await Runs.logParameter({ run_id: ctx.runId, key: 'lr', value: '0.01' });
    for (let step = 0; step < 3; step++) {
      await Runs.logMetric({ run_id: ctx.runId, key: 'loss', value: 1 / (step + 1), timestamp: t0 + step, step });
    }
    const { run } = await Runs.get({ run_id: ctx.runId });
    assert.deepEqual(kv(run.data.params), { lr: '0.01' });
    assert.equal(kv(run.data.tags).via, 'bearer');
    assert.equal(byKey(run.data.metrics).loss.step, 2);
    assert.equal(byKey(run.data.metrics).loss.value, 1 / 3);
    const h = await Metrics.getHistory({ run_id: ctx.runId, metric_key: 'loss' });
    assert.deepEqual([...h.metrics].sort((a, b) => a.step - b.step).map((m) => m.value), [1, 1 / 2, 1 / 3]);
  });

  await check('auth: bearer client searches runs', async () => {
    const r = await ctx.client.Runs.search({ experiment_ids: [ctx.expId], filter: "params.lr = '0.01'" });
    assert.deepEqual(r.runs.map((x) => x.info.run_id), [ctx.runId]);
    const none = await ctx.client.Runs.search({ experiment_ids: [ctx.expId], filter: "params.lr = '0.02'" });
    assert.deepEqual(none.runs || [], []);
  });

  await check('auth: the same client without the header gets 401 and changes nothing', async () => {
    await rejectsWith401(anonymous.Runs.get({ run_id: ctx.runId }));
    await rejectsWith401(anonymous.Runs.logMetric({ ...ctx.lateMetric, run_id: ctx.runId }));
    await rejectsWith401(anonymous.Experiments.create({ name: `${ctx.expName}-anonymous` }));
    await rejectsWith401(anonymous.Runs.search({ experiment_ids: [ctx.expId] }));
    assert.deepEqual(await history(admin), [[0, 1], [1, 1 / 2], [2, 1 / 3]]);
    const r = await api(url, 'GET',
      `/api/2.0/mlflow/experiments/get-by-name?experiment_name=${encodeURIComponent(ctx.expName + '-anonymous')}`,
      undefined, admin);
    assert.equal(r.status, 404, r.text);
  });

  await check('auth: after the token is revoked the client\'s next call gets 401', async () => {
    const r = await api(url, 'POST', '/api/cairn/v1/tokens/revoke', { token: ctx.tokenId }, admin);
    assert.equal(r.status, 200, r.text);
    assert.equal(typeof r.json.token.revoked_time, 'number');
    await rejectsWith401(ctx.client.Runs.get({ run_id: ctx.runId }));
    await rejectsWith401(ctx.client.Runs.logMetric({ ...ctx.lateMetric, run_id: ctx.runId }));
    assert.deepEqual(await history(admin), [[0, 1], [1, 1 / 2], [2, 1 / 3]]);
  });

  await check('auth: server exits 0 on SIGTERM', async () => {
    const { code, signal } = await stopServer(state.server.child);
    assert.equal(signal, null, `killed by ${signal}`);
    assert.equal(code, 0);
  });
  return state;
}

async function main() {
  const bin = cairnBinary();
  if (!bin || !fs.existsSync(bin)) {
    console.error(`usage: node mlflow_client_test.js /path/to/cairn (or CAIRN_BIN); got ${bin}`);
    console.log(`${SUITE}: 0 passed, 1 failed`);
    return 2;
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-node-'));
  const dataDir = path.join(tmp, 'data');
  fs.mkdirSync(dataDir);
  let server;
  try {
    server = await startServer(path.resolve(bin), dataDir);
  } catch (e) {
    console.error(String(e && e.stack ? e.stack : e));
    console.log(`${SUITE}: 0 passed, 1 failed`);
    fs.rmSync(tmp, { recursive: true, force: true });
    return 1;
  }
  liveServer = server.child;
  console.log(`cairn at ${server.url}`);

  const mlflow = new MLflow({ endpoint: server.url });
  const { Experiments, Runs, Metrics, Artifacts } = mlflow;
  const results = [];
  const ctx = {};
  const t0 = Date.now();

  async function check(name, fn) {
    try {
      await fn();
      results.push([name, true]);
      console.log(`ok   - ${name}`);
    } catch (e) {
      results.push([name, false]);
      console.log(`FAIL - ${name}\n       ${String(e && e.stack ? e.stack : e).split('\n').join('\n       ')}`);
    }
  }

  await check('create experiment', async () => {
    ctx.expName = `node-client-${process.pid}-${t0}`;
    const r = await Experiments.create({ name: ctx.expName });
    assert.equal(typeof r.experiment_id, 'string');
    ctx.expId = r.experiment_id;
  });

  await check('create experiment with a taken name is rejected (400 RESOURCE_ALREADY_EXISTS)', async () => {
    await assert.rejects(Experiments.create({ name: ctx.expName }), (e) => {
      assert.match(e.message, /"status":400/);
      assert.match(e.message, /RESOURCE_ALREADY_EXISTS/);
      return true;
    });
  });

  await check('get experiment', async () => {
    const r = await Experiments.get({ experiment_id: ctx.expId });
    assert.equal(r.experiment.experiment_id, ctx.expId);
    assert.equal(r.experiment.name, ctx.expName);
    assert.equal(r.experiment.lifecycle_stage, 'active');
    assert.equal(typeof r.experiment.creation_time, 'number');
  });

  await check('create run with tags', async () => {
    const r = await Runs.create({
      experiment_id: ctx.expId,
      user_id: 'node',
      start_time: t0,
      tags: [{ key: 'mlflow.runName', value: 'node-run' }, { key: 'team', value: 'js' }],
    });
    ctx.runId = r.run.info.run_id;
    assert.equal(typeof ctx.runId, 'string');
    assert.equal(r.run.info.experiment_id, ctx.expId);
    assert.equal(r.run.info.status, 'RUNNING');
    assert.equal(r.run.info.start_time, t0);
    assert.equal(kv(r.run.data.tags).team, 'js');
  });

  await check('log params', async () => {
    await Runs.logParameter({ run_id: ctx.runId, key: 'lr', value: '0.01' });
    await Runs.logParameter({ run_id: ctx.runId, key: 'batch_size', value: '32' });
  });

  await check('log metrics over several steps', async () => {
    for (let step = 0; step < 5; step++) {
      await Runs.logMetric({ run_id: ctx.runId, key: 'loss', value: 1 / (step + 1), timestamp: t0 + step, step });
    }
  });

  await check('set tag', async () => {
    await Runs.setTag({ run_id: ctx.runId, key: 'stage', value: 'train' });
  });

  await check('log batch', async () => {
    await Runs.logBatch({
      run_id: ctx.runId,
      metrics: [0, 1, 2].map((step) => ({ key: 'acc', value: 0.5 + step / 10, timestamp: t0 + step, step })),
      params: [{ key: 'optimizer', value: 'adam' }],
      tags: [{ key: 'note', value: 'batch' }],
    });
  });

  await check('get run shows params, tags and latest metrics', async () => {
    const { run } = await Runs.get({ run_id: ctx.runId });
    assert.deepEqual(kv(run.data.params), { lr: '0.01', batch_size: '32', optimizer: 'adam' });
    const tags = kv(run.data.tags);
    assert.equal(tags.team, 'js');
    assert.equal(tags.stage, 'train');
    assert.equal(tags.note, 'batch');
    const m = byKey(run.data.metrics);
    assert.equal(m.loss.step, 4);
    assert.equal(m.loss.value, 0.2);
    assert.equal(m.acc.step, 2);
    assert.equal(m.acc.value, 0.5 + 2 / 10);
  });

  await check('get metric history', async () => {
    const r = await Metrics.getHistory({ run_id: ctx.runId, metric_key: 'loss' });
    const points = [...r.metrics].sort((a, b) => a.step - b.step);
    assert.deepEqual(points.map((p) => p.step), [0, 1, 2, 3, 4]);
    assert.deepEqual(points.map((p) => p.value), [1, 1 / 2, 1 / 3, 1 / 4, 1 / 5]);
    assert.ok(points.every((p) => p.key === 'loss' && typeof p.timestamp === 'number'));
  });

  await check('search runs with a filter and order_by', async () => {
    const r2 = await Runs.create({ experiment_id: ctx.expId, user_id: 'node', start_time: t0 + 1, tags: [] });
    ctx.run2 = r2.run.info.run_id;
    await Runs.logBatch({
      run_id: ctx.run2,
      metrics: [{ key: 'loss', value: 0.05, timestamp: t0, step: 0 }],
      params: [{ key: 'optimizer', value: 'adam' }],
      tags: [],
    });
    const r3 = await Runs.create({ experiment_id: ctx.expId, user_id: 'node', start_time: t0 + 2, tags: [] });
    await Runs.logBatch({ run_id: r3.run.info.run_id, metrics: [{ key: 'loss', value: 0.01, timestamp: t0, step: 0 }],
      params: [{ key: 'optimizer', value: 'sgd' }], tags: [] });
    const asc = await Runs.search({
      experiment_ids: [ctx.expId],
      filter: "params.optimizer = 'adam' and metrics.loss < 10",
      run_view_type: 'ACTIVE_ONLY',
      order_by: ['metrics.loss ASC'],
      max_results: 10,
    });
    assert.deepEqual(asc.runs.map((r) => r.info.run_id), [ctx.run2, ctx.runId]);
    const desc = await Runs.search({
      experiment_ids: [ctx.expId], filter: "params.optimizer = 'adam'", order_by: ['metrics.loss DESC'],
    });
    assert.deepEqual(desc.runs.map((r) => r.info.run_id), [ctx.runId, ctx.run2]);
  });

  await check('search runs pages with max_results and page_token', async () => {
    const seen = [];
    let token;
    for (let page = 0; page < 10; page++) {
      const r = await Runs.search({ experiment_ids: [ctx.expId], max_results: 2, page_token: token });
      seen.push(...(r.runs || []).map((x) => x.info.run_id));
      token = r.next_page_token;
      if (!token) break;
    }
    assert.equal(seen.length, 3);
    assert.equal(new Set(seen).size, 3);
  });

  await check('list artifacts of a run without artifacts', async () => {
    const r = await Artifacts.list({ run_id: ctx.runId });
    assert.deepEqual(r.files || [], []);
  });

  await check('delete tag', async () => {
    await Runs.deleteTag({ run_id: ctx.runId, key: 'stage' });
    const { run } = await Runs.get({ run_id: ctx.runId });
    assert.equal(kv(run.data.tags).stage, undefined);
  });

  await check('update run to FINISHED', async () => {
    const end = Date.now();
    const r = await Runs.update({ run_id: ctx.runId, status: 'FINISHED', end_time: end });
    assert.equal(r.run_info.status, 'FINISHED');
    assert.equal(r.run_info.end_time, end);
    const { run } = await Runs.get({ run_id: ctx.runId });
    assert.equal(run.info.status, 'FINISHED');
  });

  await check('delete and restore run', async () => {
    await Runs.delete({ run_id: ctx.run2 });
    assert.equal((await Runs.get({ run_id: ctx.run2 })).run.info.lifecycle_stage, 'deleted');
    const deleted = await Runs.search({ experiment_ids: [ctx.expId], run_view_type: 'DELETED_ONLY' });
    assert.deepEqual(deleted.runs.map((r) => r.info.run_id), [ctx.run2]);
    await Runs.restore({ run_id: ctx.run2 });
    assert.equal((await Runs.get({ run_id: ctx.run2 })).run.info.lifecycle_stage, 'active');
  });

  await check('rename, delete and restore experiment', async () => {
    const newName = `${ctx.expName}-renamed`;
    await Experiments.update({ experiment_id: ctx.expId, new_name: newName });
    assert.equal((await Experiments.get({ experiment_id: ctx.expId })).experiment.name, newName);
    await Experiments.delete({ experiment_id: ctx.expId });
    assert.equal((await Experiments.get({ experiment_id: ctx.expId })).experiment.lifecycle_stage, 'deleted');
    await Experiments.restore({ experiment_id: ctx.expId });
    assert.equal((await Experiments.get({ experiment_id: ctx.expId })).experiment.lifecycle_stage, 'active');
  });

  await check('unknown run is a 404', async () => {
    await assert.rejects(Runs.get({ run_id: '0123456789abcdef0123456789abcdef' }), (e) => {
      assert.match(e.message, /"status":404/);
      assert.match(e.message, /RESOURCE_DOES_NOT_EXIST/);
      return true;
    });
  });

  await check('server exits 0 on SIGTERM', async () => {
    const { code, signal } = await stopServer(server.child);
    assert.equal(signal, null, `killed by ${signal}`);
    assert.equal(code, 0);
  });

  const auth = await authPhase(path.resolve(bin), tmp, check);

  const passed = results.filter((r) => r[1]).length;
  const failed = results.length - passed;
  if (failed) {
    console.log(`--- cairn output ---\n${server.output.join('')}--- end ---`);
    if (auth.server) console.log(`--- cairn (auth on) output ---\n${auth.server.output.join('')}--- end ---`);
    console.log(`failed: ${results.filter((r) => !r[1]).map((r) => r[0]).join('; ')}`);
  }
  await stopServer(server.child);
  if (auth.server) await stopServer(auth.server.child);
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`${SUITE}: ${passed} passed, ${failed} failed`);
  return failed || passed === 0 ? 1 : 0;
}

const watchdog = setTimeout(() => {
  console.log(`timed out after ${OVERALL_TIMEOUT_MS} ms`);
  if (liveServer && liveServer.exitCode === null) liveServer.kill('SIGKILL');
  console.log(`${SUITE}: 0 passed, 1 failed`);
  process.exit(1);
}, OVERALL_TIMEOUT_MS);

main().then(
  (code) => {
    clearTimeout(watchdog);
    process.exitCode = code;
  },
  (e) => {
    clearTimeout(watchdog);
    console.error(e);
    console.log(`${SUITE}: 0 passed, 1 failed`);
    process.exitCode = 1;
  },
);
