// The dashboard in a real browser: Debian's chromium, driven by
// playwright-core, against a real cluster (`muster dev`: a server and
// agents with fake GPUs, as real processes). The CLI is the reference: the
// GPU map must match `muster get nodes`, a job submitted with `muster
// submit` must appear with a live log tail, a cancel clicked on the page
// must show in `muster get jobs`, and the usage page must give the figures
// of `muster usage`. Every page must load without a console error.
//
//   MUSTER_BINARY=build/cmd/muster/muster node --test test/browser/dashboard.test.mjs
//   MUSTER_SCREENSHOTS=docs/screenshots ...   also saves each page as PNG
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { chromium } from "playwright-core";

const MUSTER = resolve(process.env.MUSTER_BINARY || "build/cmd/muster/muster");
const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const SHOTS = process.env.MUSTER_SCREENSHOTS || "";

let dir, dev, url, adminToken, browser;
const env = () => ({ ...process.env, MUSTER_SERVER: url, MUSTER_TOKEN: adminToken, MUSTER_RETRY_SECONDS: "5" });

function muster(args, extraEnv = {}) {
  return execFileSync(MUSTER, args, { env: { ...env(), ...extraEnv }, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}
function musterJson(args, extraEnv) { return JSON.parse(muster([...args, "-o", "json"], extraEnv)); }

async function until(what, fn, ms = 30000) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ""}`);
}

// A page that fails the test on any console error or uncaught exception.
async function openPage(token) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.errors = [];
  page.on("console", (m) => { if (m.type() === "error") page.errors.push(`console: ${m.text()}`); });
  page.on("pageerror", (e) => page.errors.push(`page: ${e.message}`));
  await page.goto(`${url}/#token=${token}`);
  await page.waitForSelector("#gpu-counts");
  return page;
}

async function shot(page, name) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

before(async () => {
  assert.ok(existsSync(MUSTER), `no muster binary at ${MUSTER} (set MUSTER_BINARY)`);
  assert.ok(existsSync(CHROMIUM), `no chromium at ${CHROMIUM} (scripts/install-deps.sh installs Debian's)`);
  dir = mkdtempSync(join(tmpdir(), "muster-browser-"));
  // The dev cluster keeps the admin's token in HOME's token file: a HOME of its own.
  const home = join(dir, "home");
  mkdirSync(home);
  // Queues with quotas, and stragglers found within seconds.
  const settings = join(dir, "settings.yaml");
  writeFileSync(settings, "queues: [{name: research, guarantee: 6}, {name: interns, guarantee: 4, limit: 8}, {name: default}]\n" +
    "stragglers: {ratio: 0.5, window: 30s, after: 2s, minReports: 3}\n");
  dev = spawn(MUSTER, ["dev", "--nodes", "3", "--gpus", "4xH100", "--port", "0", "--dir", join(dir, "cluster"),
    "--server-config", settings],
    { env: { ...process.env, HOME: home }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  dev.stdout.on("data", (d) => { out += d; });
  dev.stderr.on("data", (d) => { out += d; });
  const line = await until("muster dev to print the dashboard's address", () => out.match(/dashboard: (http:\/\/[^/\s]+)\/#token=(\S+)/), 60000)
    .catch((e) => { throw new Error(`${e.message}\n${out}`); });
  [, url, adminToken] = line;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-dev-shm-usage"] });
});

after(async () => {
  if (browser) await browser.close();
  if (dev) {
    dev.kill("SIGTERM");
    await new Promise((r) => { dev.on("exit", r); setTimeout(r, 20000); });
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the GPU map and queues match muster get nodes and queues", async () => {
  const id = Number(muster(["submit", "--parsable", "--name", "holds-three", "--queue", "research", "--gpus", "3", "--",
    "sleep", "300"]).trim());
  const other = Number(muster(["submit", "--parsable", "--name", "pair", "--queue", "interns", "--replicas", "2",
    "--gpus", "2", "--", "sleep", "300"]).trim());
  await until("the jobs to run", () => musterJson(["get", "jobs"]).filter((j) => [id, other].includes(j.id) && j.state === "RUNNING").length === 2);
  const page = await openPage(adminToken);
  const nodes = musterJson(["get", "nodes"]);
  assert.equal(nodes.length, 3);
  for (const n of nodes) {
    const cells = page.locator(`.gpu[data-node="${n.name}"]`);
    assert.equal(await cells.count(), n.gpus, `GPUs of ${n.name}`);
    assert.equal(await page.locator(`.node[data-node="${n.name}"]`).getAttribute("data-pool"), n.pool, `pool of ${n.name}`);
    const used = page.locator(`.gpu[data-node="${n.name}"][data-state="used"]`);
    assert.equal(await used.count(), n.gpus - n.freeGpus, `GPUs in use on ${n.name}`);
    for (const u of n.gpuUse) {
      assert.equal(await page.locator(`.gpu[data-node="${n.name}"][data-gpu="${u.index}"]`).getAttribute("data-job"), String(u.job));
    }
  }
  const total = nodes.reduce((a, n) => a + n.gpus, 0), free = nodes.reduce((a, n) => a + n.freeGpus, 0);
  assert.equal(await page.locator('[data-count="total"]').textContent(), String(total));
  assert.equal(await page.locator('[data-count="used"]').textContent(), String(total - free));
  await shot(page, "cluster");
  // A GPU in use leads to its job.
  await page.locator(`.gpu[data-job="${id}"]`).first().click();
  await page.waitForSelector("#log-tail");
  assert.match(await page.locator("h1").textContent(), new RegExp(`Job ${id}`));
  // Queues while they run: each queue's GPUs and jobs, as muster get queues says.
  await page.goto(`${url}/#/queues`);
  await page.waitForSelector('tr[data-queue="research"]');
  for (const q of musterJson(["get", "queues"])) {
    const cells = await page.locator(`tr[data-queue="${q.name}"] td`).allTextContents();
    assert.equal(cells[3], String(q.gpusInUse), `GPUs in use by ${q.name}`);
    assert.equal(cells[5], String(q.running), `jobs running in ${q.name}`);
  }
  await shot(page, "queues");
  muster(["cancel", String(id), String(other)]);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a job submitted from the CLI appears, its log tail updates, and a cancel on the page stops it", async () => {
  const id = Number(muster(["submit", "--parsable", "--name", "browser-log", "--gpus", "1", "--",
    "sh", "-c", "i=0; while true; do i=$((i+1)); echo line-$i; sleep 0.3; done"]).trim());
  const page = await openPage(adminToken);
  await page.goto(`${url}/#/jobs`);
  await page.waitForSelector(`tr[data-job="${id}"]`);
  await shot(page, "jobs");
  await page.locator(`tr[data-job="${id}"] a`).first().click();
  await page.waitForSelector("#log-tail");
  // Live: later lines arrive without a reload.
  const first = await until("the log tail to show output", async () => {
    const text = await page.locator("#log-tail").textContent();
    const m = [...text.matchAll(/line-(\d+)/g)];
    return m.length ? Number(m[m.length - 1][1]) : 0;
  });
  await until("the log tail to move on", async () => {
    const text = await page.locator("#log-tail").textContent();
    return text.includes(`line-${first + 5}`);
  });
  await shot(page, "job");
  await page.locator("#cancel-job").click();
  await until("muster get jobs to show it cancelled", () => musterJson(["get", "jobs"]).find((j) => j.id === id && j.state === "CANCELLED"));
  await until("the page to show it cancelled", async () => (await page.locator("h1 .state").textContent()) === "CANCELLED");
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("the usage page gives the figures of muster usage", async () => {
  const ids = [["research", "2"], ["interns", "1"]].map(([queue, gpus]) => Number(muster(["submit", "--parsable",
    "--name", "two-seconds", "--queue", queue, "--gpus", gpus, "--", "sleep", "2"]).trim()));
  await until("the jobs to end", () => musterJson(["get", "jobs"]).filter((j) => ids.includes(j.id) && j.state === "COMPLETED").length === 2);
  // Nothing runs now: sums over any window that holds every run are fixed.
  for (const j of musterJson(["get", "jobs"])) if (!["COMPLETED", "CANCELLED", "FAILED"].includes(j.state)) muster(["cancel", String(j.id)]);
  await until("every job to end", () => musterJson(["get", "jobs"]).every((j) => ["COMPLETED", "CANCELLED", "FAILED"].includes(j.state)));
  const page = await openPage(adminToken);
  await page.goto(`${url}/#/usage?window=24h`);
  await page.waitForSelector("#usage-table tr[data-total]");
  await shot(page, "usage");
  const cli = musterJson(["usage", "--since", "24h"]);
  assert.ok(cli.items.length >= 2);
  assert.ok(cli.total.cost > 0, "muster dev prices GPU-hours");
  for (const item of cli.items) {
    const r = page.locator(`#usage-table tr[data-queue="${item.queue}"]`);
    assert.ok(Math.abs(Number(await r.getAttribute("data-gpu-hours")) - item.gpuHours) < 1e-9, `GPU-hours of ${item.queue}`);
    assert.ok(Math.abs(Number(await r.getAttribute("data-cost")) - item.cost) < 1e-9, `cost of ${item.queue}`);
  }
  const total = page.locator("#usage-table tr[data-total]");
  assert.ok(Math.abs(Number(await total.getAttribute("data-gpu-hours")) - cli.total.gpuHours) < 1e-9);
  assert.ok(cli.total.gpuHours >= (2 * 2) / 3600, "the two-second job's GPU time at least");
  // The chart draws the same GPU-hours, bar by bar.
  assert.ok(await page.locator("#gpu-hours-chart rect").count() > 0);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a straggling replica is marked on its job's page", async () => {
  // Three replicas step 4 at a time; replica 2 one at a time.
  const id = Number(muster(["submit", "--parsable", "--name", "straggles", "--replicas", "3", "--gpus", "1", "--",
    "sh", "-c", `i=0; d=4; [ $RANK = 2 ] && d=1; while true; do i=$((i+d)); ${MUSTER} progress --step $i >/dev/null; sleep 0.2; done`]).trim());
  const page = await openPage(adminToken);
  await page.goto(`${url}/#/jobs/${id}`);
  await page.waitForSelector('tr[data-replica="2"][data-straggler="true"]', { timeout: 60000 });
  assert.equal(await page.locator('tr[data-straggler="true"]').count(), 1, "only replica 2");
  await page.waitForSelector('td >> text=Straggler');
  await shot(page, "straggler");
  muster(["cancel", String(id)]);
  assert.deepEqual(page.errors, []);
  await page.context().close();
});

test("a user signs in with a token and sees only what they may see", async () => {
  const alice = muster(["token", "create", "--user", "alice"]).trim().split(/\s+/).find((w) => w.startsWith("mst_"));
  assert.ok(alice, "a token for alice");
  const mine = Number(muster(["submit", "--parsable", "--name", "alices", "--", "true"], { MUSTER_TOKEN: alice }).trim());
  const context = await browser.newContext();
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(`${url}/`);
  await page.waitForSelector("#sign-in");
  await shot(page, "sign-in");
  await page.fill('#sign-in input[name="token"]', "mst_not_a_real_token");
  await page.click('#sign-in button[type="submit"]');
  await page.waitForSelector("#sign-in >> text=That token was refused");
  await page.fill('#sign-in input[name="token"]', alice);
  await page.click('#sign-in button[type="submit"]');
  await page.waitForSelector("#gpu-counts");
  assert.equal(await page.locator("#who").textContent(), "alice");
  await page.goto(`${url}/#/jobs`);
  await page.waitForSelector(`tr[data-job="${mine}"]`);
  const shown = await page.locator("tbody tr[data-job]").evaluateAll((rows) => rows.map((r) => r.children[2].textContent));
  assert.ok(shown.length >= 1);
  assert.deepEqual([...new Set(shown)], ["alice"], "only alice's jobs");
  // Another user's job page says why not.
  await page.goto(`${url}/#/jobs/1`);
  await page.waitForSelector("#problem:not([hidden])");
  assert.match(await page.locator("#problem").textContent(), /alice|may|permission|not/i);
  // The files are served with a policy that keeps other sites' scripts out.
  const res = await page.request.get(`${url}/ui/app.js`);
  assert.match(res.headers()["content-security-policy"], /default-src 'self'/);
  assert.equal(res.headers()["content-type"], "text/javascript; charset=utf-8");
  assert.deepEqual(errors, []);
  await context.close();
});
