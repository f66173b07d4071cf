// Muster's dashboard: one page over the server's /v1 API, with the
// signed-in user's credential (a token: `muster token create`), showing
// what that user may see. Views: the cluster as a GPU map, queues, jobs,
// one job (with its log, live), and usage and cost over time.
//
// Everything the server sends is put in the page as text (textContent),
// never as markup.

const TOKEN_KEY = "muster.token";
const REFRESH_MS = 2000;

// ---- The API.

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

class ApiError extends Error {
  constructor(status, code, message, field) {
    super(field ? `${message} (${field})` : message);
    this.status = status;
    this.code = code;
  }
}

async function api(path, { method = "GET", body, text = false } = {}) {
  const headers = { Authorization: `Bearer ${token()}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (!res.ok) {
    let e = {};
    try { e = (await res.json()).error || {}; } catch { /* not JSON */ }
    throw new ApiError(res.status, e.code || String(res.status), e.message || res.statusText, e.field);
  }
  return text ? res.text() : res.json();
}

// ---- Building the page.

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const SVG = "http://www.w3.org/2000/svg";
function s(tag, attrs = {}, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children.flat()) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function table(head, rows, numeric = []) {
  return h("table", {},
    h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { class: numeric.includes(i) ? "number" : "" }, t)))),
    h("tbody", {}, rows));
}

function row(cells, numeric = [], attrs = {}) {
  return h("tr", attrs, cells.map((c, i) => h("td", { class: numeric.includes(i) ? "number" : "" }, c)));
}

function stateText(state) { return h("span", { class: `state state-${state}` }, state); }

// A stable color per queue name.
const PALETTE = ["#2456c7", "#1b8a5a", "#8e44ad", "#c0392b", "#d35400", "#16a085", "#2c3e50", "#7f8c8d",
  "#b8860b", "#6a5acd", "#008b8b", "#a0522d"];
function queueColor(name) {
  let x = 0;
  for (const ch of name) x = (x * 31 + ch.codePointAt(0)) >>> 0;
  return PALETTE[x % PALETTE.length];
}

// Two decimals, or two significant digits for what is smaller (a short
// job's GPU-hours), or none for what is large.
function amount(x) {
  if (x === 0) return "0";
  if (Math.abs(x) >= 100) return x.toFixed(0);
  if (Math.abs(x) >= 0.1) return x.toFixed(2);
  return x.toPrecision(2);
}
const hours = amount, money = amount;
function percent(x) { return typeof x === "number" ? `${Math.round(x * 100)}%` : "-"; }
function since(t) {
  if (!t) return "-";
  const s = Math.max(0, (Date.now() - Date.parse(t)) / 1000);
  if (s < 90) return `${Math.round(s)}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  if (s < 172800) return `${Math.round(s / 3600)}h`;
  return `${Math.round(s / 86400)}d`;
}

// ---- Views. Each renders into `main` and returns an optional refresh
// function, called every REFRESH_MS while it is shown.

const main = () => document.getElementById("main");

async function clusterView(el) {
  const [nodes, queues] = await Promise.all([api("/v1/nodes"), api("/v1/queues")]);
  const counts = { used: 0, free: 0, reserved: 0, unhealthy: 0, cordoned: 0 };
  const bySpine = new Map();
  for (const n of nodes.items) {
    const spine = n.spine || "-", leaf = n.leaf || "-";
    if (!bySpine.has(spine)) bySpine.set(spine, new Map());
    const leaves = bySpine.get(spine);
    if (!leaves.has(leaf)) leaves.set(leaf, []);
    leaves.get(leaf).push(n);
  }
  const nodeCard = (n) => {
    const use = new Map((n.gpuUse || []).map((u) => [u.index, u]));
    const devices = (n.agent && Array.isArray(n.agent.gpuDevices)) ? n.agent.gpuDevices : [];
    const unhealthy = new Set(devices.filter((g) => g.healthy === false).map((g) => g.index));
    const down = n.condition !== "Ready" || !n.schedulable;
    let reserved = n.reservedGpus || 0;
    const cells = [];
    for (let i = 0; i < n.gpus; i++) {
      let state = "free", title = `GPU ${i}: free`, color;
      const u = use.get(i);
      if (u) {
        state = "used"; title = `GPU ${i}: job ${u.job} (${u.queue})`; color = queueColor(u.queue);
      } else if (unhealthy.has(i)) {
        state = "unhealthy"; title = `GPU ${i}: unhealthy`;
      } else if (down) {
        state = "cordoned"; title = `GPU ${i}: ${n.cordon || n.condition}`;
      } else if (reserved > 0) {
        reserved--; state = "reserved"; title = `GPU ${i}: reserved for job ${n.reservedFor}`;
      }
      counts[state]++;
      const cell = h("div", { class: "gpu", title, dataset: { node: n.name, gpu: String(i), state, job: u ? String(u.job) : "" } });
      if (color) cell.style.background = color;
      if (u) cell.addEventListener("click", () => { location.hash = `#/jobs/${u.job}`; });
      cells.push(cell);
    }
    return h("div", { class: `node${down ? " down" : ""}`, dataset: { node: n.name, pool: n.pool || "" } },
      h("div", { class: "node-name" }, n.name),
      h("div", { class: "node-meta" },
        `${n.gpus}x${n.gpuType || "-"} · ${n.pool || "-"} · ${n.condition}${n.schedulable ? "" : " · cordoned"}`),
      h("div", { class: "gpus" }, cells));
  };
  const spines = [...bySpine.keys()].sort().map((spine) => h("section", { class: "spine" },
    spine === "-" ? "" : h("h2", {}, `Spine ${spine}`),
    [...bySpine.get(spine).keys()].sort().map((leaf) => h("div", { class: "leaf" },
      h("div", { class: "leaf-name" }, leaf === "-" ? "No leaf switch given" : `Leaf ${leaf}`),
      h("div", { class: "nodes" }, bySpine.get(spine).get(leaf).map(nodeCard))))));
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  el.replaceChildren(
    h("h1", {}, "Cluster"),
    h("div", { class: "summary", id: "gpu-counts" },
      h("div", {}, h("strong", { dataset: { count: "total" } }, total), "GPUs"),
      h("div", {}, h("strong", { dataset: { count: "used" } }, counts.used), "in use"),
      h("div", {}, h("strong", { dataset: { count: "free" } }, counts.free), "free"),
      h("div", {}, h("strong", { dataset: { count: "reserved" } }, counts.reserved), "reserved for a gang"),
      h("div", {}, h("strong", { dataset: { count: "unhealthy" } }, counts.unhealthy), "unhealthy"),
      h("div", {}, h("strong", { dataset: { count: "cordoned" } }, counts.cordoned), "cordoned or down"),
      h("div", {}, h("strong", {}, nodes.items.length), "nodes")),
    h("div", { class: "legend" },
      queues.items.map((q) => { const sw = h("i", { class: "swatch" }); sw.style.background = queueColor(q.name); return h("span", {}, sw, q.name); }),
      [["free", "var(--free)"], ["reserved", "var(--reserved)"], ["unhealthy", "var(--unhealthy)"], ["cordoned", "var(--cordoned)"]]
        .map(([name, color]) => { const sw = h("i", { class: "swatch" }); sw.style.background = color; return h("span", {}, sw, name); })),
    ...(spines.length ? spines : [h("p", { class: "quiet" }, "No nodes yet: start an agent (muster agent).")]));
  return () => clusterView(el);
}

function quota(m) {
  if (!m) return "-";
  return Object.entries(m).map(([type, n]) => (type === "*" ? `${n}` : `${n} ${type}`)).join(", ");
}

async function queuesView(el) {
  const queues = await api("/v1/queues");
  const rows = queues.items.map((q) => {
    const limit = q.limit && q.limit["*"], guarantee = q.guarantee && q.guarantee["*"];
    const scale = Math.max(limit || 0, guarantee || 0, q.gpusInUse, 1);
    const bar = h("div", { class: "bar", title: `${q.gpusInUse} in use; guarantee ${quota(q.guarantee)}; limit ${quota(q.limit)}` });
    const fill = h("div");
    fill.style.width = `${(100 * q.gpusInUse) / scale}%`;
    fill.style.background = queueColor(q.name);
    bar.append(fill);
    if (guarantee) { const mark = h("i"); mark.style.left = `${(100 * guarantee) / scale}%`; bar.append(mark); }
    return row([h("a", { href: `#/jobs?queue=${encodeURIComponent(q.name)}` }, q.name), quota(q.guarantee), quota(q.limit),
      q.gpusInUse, bar, q.running, q.pending], [3, 5, 6], { dataset: { queue: q.name } });
  });
  el.replaceChildren(h("h1", {}, "Queues"),
    table(["Queue", "Guarantee", "Limit", "GPUs in use", "Use against guarantee", "Running", "Waiting"], rows, [3, 5, 6]));
  return () => queuesView(el);
}

const STATES = ["", "PENDING", "HELD", "RUNNING", "COMPLETING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT",
  "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"];

async function jobsView(el, params) {
  const filter = { state: params.get("state") || "", queue: params.get("queue") || "", user: params.get("user") || "",
    name: params.get("name") || "" };
  const form = h("form", { class: "filters", id: "job-filters" },
    h("select", { name: "state", "aria-label": "State" }, STATES.map((st) => h("option", { value: st, selected: st === filter.state }, st || "any state"))),
    h("input", { name: "queue", placeholder: "queue", value: filter.queue, "aria-label": "Queue" }),
    h("input", { name: "user", placeholder: "user", value: filter.user, "aria-label": "User" }),
    h("input", { name: "name", placeholder: "name", value: filter.name, "aria-label": "Name" }),
    h("button", { type: "submit" }, "Filter"));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) q.set(k, v);
    location.hash = `#/jobs${q.toString() ? `?${q}` : ""}`;
  });
  const body = h("div");
  el.replaceChildren(h("h1", {}, "Jobs"), form, body);
  // The newest 500 that match; filters narrow the rest.
  const load = async () => {
    const q = new URLSearchParams({ view: "summary", limit: "500", order: "newest" });
    for (const [k, v] of Object.entries(filter)) if (v) q.set(k, v);
    const jobs = await api(`/v1/jobs?${q}`);
    const items = jobs.items;
    body.replaceChildren(items.length === 0 ? h("p", { class: "quiet" }, "No jobs.") :
      table(["ID", "Name", "User", "Queue", "State", "GPUs", "Age", "Reason"], items.map((j) => row([
        h("a", { href: `#/jobs/${j.id}` }, j.id), j.name, j.user, j.queue, stateText(j.state),
        j.replicas > 1 ? `${j.replicas}x${j.gpus}` : j.gpus, since(j.submitTime), j.reason], [0, 5],
      { dataset: { job: String(j.id), state: j.state } })), [0, 5]));
  };
  await load();
  return load;
}

const ENDED = new Set(["COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED"]);

async function jobView(el, id) {
  const state = h("span"), fields = h("dl", { class: "fields" }), events = h("div"), attempts = h("div"), replicas = h("div"),
    checkpoints = h("div"), log = h("pre", { id: "log-tail" }, ""), actions = h("div"), spec = h("pre", { id: "job-spec" });
  el.replaceChildren(h("h1", {}, `Job ${id} `, state), actions,
    h("div", { class: "columns" },
      h("div", {}, h("h2", {}, "Job"), fields, h("details", {}, h("summary", {}, "Spec and status (as muster describe job shows)"), spec),
        h("h2", {}, "Replicas"), replicas, h("h2", {}, "Attempts"), attempts, h("h2", {}, "Checkpoints"), checkpoints),
      h("div", {}, h("h2", {}, "Log (replica 0, last 200 lines, live)"), log, h("h2", {}, "Events"), events)));
  const load = async () => {
    const [job, ev, cp] = await Promise.all([api(`/v1/jobs/${id}`), api(`/v1/jobs/${id}/events?limit=200`),
      api(`/v1/jobs/${id}/checkpoints`)]);
    state.replaceChildren(stateText(job.state));
    const res = job.resources || {};
    const progress = job.progress ? `step ${job.progress.step}${job.progress.message ? `: ${job.progress.message}` : ""}` : "-";
    const pairs = [
      ["Name", job.name], ["User", job.user], ["Queue", job.queue], ["Priority", job.priority || "-"],
      ["Replicas", job.replicas], ["GPUs per replica", `${res.gpus || 0}${res.gpuType ? ` ${res.gpuType}` : ""}`],
      ["Command", (job.command || []).join(" ") || (job.script ? "(script)" : "-")],
      ["Submitted", job.submitTime], ["Started", job.startTime || "-"], ["Ended", job.endTime || "-"],
      ["Reason", job.reasonDetail || job.reason || "-"], ["Planned start", job.plannedStart || "-"],
      ["Progress", progress], ["GPU utilization", percent(job.gpuUtilization)],
      ["Nodes", (job.allocations || []).map((a) => `${a.node} (GPUs ${a.gpus.join(",")})`).join("; ") || "-"],
    ];
    fields.replaceChildren(...pairs.flatMap(([k, v]) => [h("dt", {}, k), h("dd", { dataset: { field: k } }, v)]));
    spec.textContent = JSON.stringify(job, null, 2);
    // Each replica's steps and step rate; a straggler trains well behind its siblings.
    const progressOf = new Map((job.replicaProgress || []).map((r) => [r.replica, r]));
    const nodeOf = [];
    for (const a of job.allocations || []) for (let k = 0; k < a.replicas; k++) nodeOf.push(a.node);
    replicas.replaceChildren(nodeOf.length === 0 ? h("p", { class: "quiet" }, "Not running.") :
      table(["Replica", "Node", "Step", "Steps/s", ""], nodeOf.map((node, i) => {
        const p = progressOf.get(i) || {};
        return row([i, node, p.step ?? "-", typeof p.stepsPerSecond === "number" ? p.stepsPerSecond.toPrecision(3) : "-",
          p.straggler ? h("strong", { class: "straggler" }, "straggler") : ""], [0, 2, 3],
        { dataset: { replica: String(i), straggler: p.straggler ? "true" : "false" } });
      }), [0, 2, 3]));
    const history = job.attemptHistory || [];
    attempts.replaceChildren(history.length === 0 ? h("p", { class: "quiet" }, "No attempt has ended.") :
      table(["#", "Start", "End", "Result", "Exit", "GPU use", "Reason"], history.map((a) => row([a.attempt, a.startTime, a.endTime,
        a.result, a.exitCode === undefined ? "-" : `${a.exitCode}:${a.signal || 0}`, percent(a.gpuUtilization), a.reason || ""]))));
    checkpoints.replaceChildren(cp.items.length === 0 ? h("p", { class: "quiet" }, "None.") :
      table(["Seq", "Attempt", "Step", "State", "Bytes", "Created"], cp.items.map((c) => row([c.seq, c.attempt, c.step, c.state,
        c.bytes, c.createdTime], [0, 1, 2, 4])), [0, 1, 2, 4]));
    events.replaceChildren(table(["Time", "Type", "Message"], ev.items.slice().reverse().map((e) =>
      row([e.time, e.type, e.message || e.reason || ""]))));
    const ended = ENDED.has(job.state);
    actions.replaceChildren(ended ? "" : h("button", { class: "danger", id: "cancel-job", type: "button", onclick: async (e) => {
      e.target.disabled = true;
      try { await api(`/v1/jobs/${id}/cancel`, { method: "POST", body: {} }); await load(); } catch (err) { problem(err); }
    } }, "Cancel job"));
    try {
      const text = await api(`/v1/jobs/${id}/logs?tail=200`, { text: true });
      const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
      log.textContent = text;
      if (stick) log.scrollTop = log.scrollHeight;
    } catch (err) {
      log.textContent = `(${err.message})`;
    }
  };
  await load();
  return load;
}

const WINDOWS = { "24h": { span: 86400e3, step: 3600e3 }, "7d": { span: 7 * 86400e3, step: 86400e3 },
  "30d": { span: 30 * 86400e3, step: 86400e3 } };

async function usageView(el, params) {
  const name = WINDOWS[params.get("window")] ? params.get("window") : "7d";
  const { span, step } = WINDOWS[name];
  const to = Math.ceil(Date.now() / step) * step, from = to - span;
  const iso = (t) => new Date(t).toISOString();
  const whole = await api(`/v1/usage?by=queue&from=${iso(from)}&to=${iso(Math.min(to, Date.now()))}`);
  const buckets = [];
  for (let t = from; t < to; t += step) buckets.push(t);
  const series = await Promise.all(buckets.map((t) =>
    t >= Date.now() ? { items: [] } : api(`/v1/usage?by=queue&from=${iso(t)}&to=${iso(Math.min(t + step, Date.now()))}`)));
  const queues = [...new Set(series.flatMap((b) => b.items.map((i) => i.queue)).concat(whole.items.map((i) => i.queue)))].sort();
  const picker = h("form", { class: "filters" }, Object.keys(WINDOWS).map((w) =>
    h("a", { href: `#/usage?window=${w}`, class: w === name ? "current" : "" }, w === name ? h("strong", {}, `last ${w}`) : `last ${w}`)));
  const rows = whole.items.map((i) => row([i.queue, i.jobs, hours(i.gpuHours), money(i.cost), percent(i.efficiency)],
    [1, 2, 3, 4], { dataset: { queue: i.queue, gpuHours: String(i.gpuHours), cost: String(i.cost) } }));
  const t = whole.total;
  rows.push(row([h("strong", {}, "Total"), t.jobs, hours(t.gpuHours), money(t.cost), percent(t.efficiency)], [1, 2, 3, 4],
    { dataset: { total: "", gpuHours: String(t.gpuHours), cost: String(t.cost) } }));
  el.replaceChildren(h("h1", {}, "Usage and cost"), picker,
    h("p", { class: "quiet" }, `From ${whole.from} to ${whole.to}, by queue (team). GPU-hours are GPUs held times hours; cost at the configured price of each GPU type.`),
    h("div", { class: "columns" },
      h("div", { class: "chart", id: "gpu-hours-chart" }, h("h2", {}, "GPU-hours"), barChart(buckets, step, series, queues, "gpuHours")),
      h("div", { class: "chart", id: "cost-chart" }, h("h2", {}, "Cost"), barChart(buckets, step, series, queues, "cost"))),
    h("h2", {}, "Totals"),
    h("div", { id: "usage-table" }, table(["Queue", "Jobs", "GPU-hours", "Cost", "Efficiency"], rows, [1, 2, 3, 4])));
  return null;  // sums over a window: refreshed on demand, not every 2 s
}

// Stacked bars: one per bucket, one segment per queue.
function barChart(buckets, step, series, queues, key) {
  const W = 640, H = 220, left = 64, bottom = 24, top = 8;
  const sums = series.map((b) => b.items.reduce((a, i) => a + i[key], 0));
  const max = Math.max(...sums, 1e-9);
  const bw = (W - left - 8) / buckets.length;
  const y = (v) => H - bottom - ((H - bottom - top) * v) / max;
  const svg = s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": key });
  for (let k = 0; k <= 4; k++) {
    const v = (max * k) / 4;
    svg.append(s("line", { x1: left, x2: W - 4, y1: y(v), y2: y(v), stroke: "#e3e8ee" }),
      s("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end" }, key === "cost" ? money(v) : hours(v)));
  }
  buckets.forEach((t, i) => {
    let base = 0;
    for (const q of queues) {
      const item = series[i].items.find((it) => it.queue === q);
      const v = item ? item[key] : 0;
      if (v <= 0) continue;
      svg.append(s("rect", { x: left + i * bw + 1, width: Math.max(1, bw - 2), y: y(base + v), height: y(base) - y(base + v),
        fill: queueColor(q) }, s("title", {}, `${q}: ${key === "cost" ? money(v) : hours(v)} (${new Date(t).toISOString()})`)));
      base += v;
    }
    if (buckets.length <= 10 || i % Math.ceil(buckets.length / 8) === 0) {
      const d = new Date(t);
      const label = step < 86400e3 ? `${String(d.getUTCHours()).padStart(2, "0")}:00` : `${d.getUTCMonth() + 1}/${d.getUTCDate()}`;
      svg.append(s("text", { x: left + i * bw + bw / 2, y: H - 6, "text-anchor": "middle" }, label));
    }
  });
  return h("div", {}, svg, h("div", { class: "legend" }, queues.map((q) => {
    const sw = h("i", { class: "swatch" }); sw.style.background = queueColor(q); return h("span", {}, sw, q);
  })));
}

function signInView(el, message) {
  const input = h("input", { type: "password", name: "token", placeholder: "mst_…", autocomplete: "off", "aria-label": "Token", required: true });
  const form = h("form", { class: "sign-in", id: "sign-in" },
    h("h1", {}, "Sign in"),
    h("p", {}, "Paste a Muster token. Make one with ", h("code", {}, "muster token create"), "; it stays in this tab only."),
    message ? h("p", { class: "quiet" }, message) : "",
    input, h("button", { type: "submit" }, "Sign in"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input.value.trim());
    await route();
  });
  el.replaceChildren(form);
  return null;
}

// ---- Routing.

let timer = null;
let generation = 0;

function problem(err) {
  const box = document.getElementById("problem");
  box.hidden = !err;
  box.textContent = err ? err.message : "";
}

async function route() {
  clearInterval(timer);
  timer = null;
  const mine = ++generation;
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query);
  const parts = path.split("/").filter(Boolean);
  const el = main();
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("current", a.dataset.view === (parts[0] || "cluster"));
  if (!token()) return signInView(el);
  let who;
  try {
    who = await api("/v1/whoami");
  } catch (err) {
    if (err.status === 401) {
      sessionStorage.removeItem(TOKEN_KEY);
      return signInView(el, `That token was refused: ${err.message}`);
    }
    problem(err);
    return;
  }
  document.getElementById("who").textContent = who.user;
  document.getElementById("sign-out").hidden = false;
  let refresh = null;
  try {
    problem(null);
    if (parts[0] === "jobs" && parts[1]) refresh = await jobView(el, parts[1]);
    else if (parts[0] === "jobs") refresh = await jobsView(el, params);
    else if (parts[0] === "queues") refresh = await queuesView(el);
    else if (parts[0] === "usage") refresh = await usageView(el, params);
    else refresh = await clusterView(el);
  } catch (err) {
    problem(err);
  }
  if (refresh && mine === generation) {
    timer = setInterval(async () => {
      if (document.hidden) return;
      try { await refresh(); problem(null); } catch (err) { problem(err); }
    }, REFRESH_MS);
  }
}

// A token handed over in the address (#token=...; `muster dev` prints one)
// moves into this tab's storage and out of the address bar and history.
const handed = new URLSearchParams(location.hash.replace(/^#/, "")).get("token");
if (handed) {
  sessionStorage.setItem(TOKEN_KEY, handed);
  history.replaceState(null, "", `${location.pathname}#/cluster`);
}
document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("who").textContent = "";
  document.getElementById("sign-out").hidden = true;
  route();
});
window.addEventListener("hashchange", route);
route();
