// larder dashboard: polls /api/v1/summary, /api/v1/prefixes and /api/v1/keys
// every second, loads /api/v1/history once, draws hand-written canvas charts.
// No libraries, no network beyond this server.
//
// Safety: every server-supplied string (keys, prefixes, versions) reaches
// the page through textContent only; nothing here assigns innerHTML.
"use strict";

const POLL_MS = 1000;
const COLORS = ["#5ab0f0", "#6ad08a", "#f0a35a", "#c08af0", "#f06a6a", "#f0e05a", "#5af0d8", "#a0a8b0"];

// ---------- formatting ----------
function fmtNum(v, digits) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const a = Math.abs(v);
  if (a >= 1e9) return (v / 1e9).toFixed(2) + "G";
  if (a >= 1e6) return (v / 1e6).toFixed(2) + "M";
  if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
  if (a >= 100 || Number.isInteger(v)) return Math.round(v).toString();
  return v.toFixed(digits === undefined ? 1 : digits);
}
function fmtBytes(v) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return (i === 0 ? Math.round(v).toString() : v.toFixed(v >= 100 ? 0 : 1)) + " " + units[i];
}
function fmtPct(v) { return v === null || !isFinite(v) ? "–" : (v * 100).toFixed(1) + "%"; }
function fmtUs(v) {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  return v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 0 : 1) + " ms" : fmtNum(v, 1) + " µs";
}
function fmtTtl(t) {
  if (t === null || t === undefined) return "–";
  if (t < 0) return "never";
  if (t >= 86400) return (t / 86400).toFixed(1) + " d";
  if (t >= 3600) return (t / 3600).toFixed(1) + " h";
  if (t >= 60) return Math.round(t / 60) + " min";
  return t + " s";
}
function fmtDuration(s) {
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
  return (d ? d + "d " : "") + (d || h ? h + "h " : "") + m + "m " + (s % 60) + "s";
}
function ratio(h, m) { return h + m > 0 ? h / (h + m) : null; }

// ---------- DOM helpers (text only) ----------
function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }
function $(id) { return document.getElementById(id); }

function legend(id, items) {
  const box = $(id);
  clear(box);
  for (const it of items) {
    const s = el("span");
    const sw = el("span", "sw");
    sw.style.background = it.color;
    s.appendChild(sw);
    s.appendChild(document.createTextNode(it.name + " "));
    s.appendChild(el("b", null, it.value));
    box.appendChild(s);
  }
}

// columns: [{title, get(row) -> string|Node, cls}]
function table(id, columns, rows, emptyText) {
  const t = $(id);
  clear(t);
  const head = el("tr");
  for (const c of columns) head.appendChild(el("th", null, c.title));
  t.appendChild(head);
  if (rows.length === 0) {
    const tr = el("tr");
    const td = el("td", "empty", emptyText || "none yet");
    td.colSpan = columns.length;
    tr.appendChild(td);
    t.appendChild(tr);
    return;
  }
  for (const r of rows) {
    const tr = el("tr");
    for (const c of columns) {
      const v = c.get(r);
      const td = el("td", c.cls);
      if (v instanceof Node) td.appendChild(v); else td.textContent = v;
      if (c.cls === "key") td.title = v instanceof Node ? "" : v;
      tr.appendChild(td);
    }
    t.appendChild(tr);
  }
}
function kv(id, pairs) {
  table(id, [{ title: "", get: p => p[0] }, { title: "", get: p => p[1] }], pairs);
  const first = $(id).firstChild;
  if (first) first.remove(); // no header row for key/value tables
}

// ---------- charts ----------
// series: [{name, color, values: [number|null], fill}], times: [ms]
function lineChart(canvas, times, series, opts) {
  opts = opts || {};
  const dpr = window.devicePixelRatio || 1;
  const w = canvas.clientWidth, h = canvas.clientHeight;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
  }
  const g = canvas.getContext("2d");
  g.setTransform(dpr, 0, 0, dpr, 0, 0);
  g.clearRect(0, 0, w, h);
  const left = 52, right = 8, top = 6, bottom = 18;
  const pw = w - left - right, ph = h - top - bottom;
  const now = times.length ? times[times.length - 1] : Date.now();
  // The window grows with the history: 2 minutes at first, 15 at most.
  const have = times.length ? now - times[0] : 0;
  const span = Math.min(15 * 60000, Math.max(2 * 60000, Math.ceil(have / 60000) * 60000));
  const t0 = now - span;
  let max = opts.max || 0;
  if (!opts.max) {
    for (const s of series) {
      for (let i = 0; i < s.values.length; i++) {
        if (times[i] >= t0 && s.values[i] !== null && s.values[i] > max) max = s.values[i];
      }
    }
    if (opts.stacked) {
      for (let i = 0; i < times.length; i++) {
        let sum = 0;
        for (const s of series) sum += s.values[i] || 0;
        if (sum > max) max = sum;
      }
    }
    if (opts.limit && opts.limit > max) max = opts.limit;
    max = opts.fmt === fmtBytes ? niceBytes(max) : niceMax(max);
  }
  const fmt = opts.fmt || fmtNum;
  const x = t => left + (t - t0) / span * pw;
  const y = v => top + ph - (v / max) * ph;
  // grid and axis labels
  g.strokeStyle = "#2a3642"; g.fillStyle = "#8897a6"; g.lineWidth = 1;
  g.font = "10px system-ui, sans-serif";
  g.textAlign = "right"; g.textBaseline = "middle";
  for (let k = 0; k <= 4; k++) {
    const v = max * k / 4, yy = Math.round(y(v)) + 0.5;
    g.beginPath(); g.moveTo(left, yy); g.lineTo(w - right, yy); g.stroke();
    g.fillText(fmt(v), left - 4, yy);
  }
  g.textAlign = "center"; g.textBaseline = "top";
  const stepMin = span > 10 * 60000 ? 5 : span > 4 * 60000 ? 2 : 1;
  for (let m = 0; m * 60000 <= span; m += stepMin) {
    const xx = x(now - m * 60000);
    g.fillText(m === 0 ? "now" : "-" + m + " min", Math.min(Math.max(xx, left + 14), w - right - 14), top + ph + 4);
  }
  if (times.length === 0) {
    g.textAlign = "center"; g.textBaseline = "middle";
    g.fillText("collecting history…", left + pw / 2, top + ph / 2);
    return;
  }
  // limit line (e.g. -m)
  if (opts.limit) {
    g.strokeStyle = "#f06a6a"; g.setLineDash([4, 3]);
    const yy = Math.round(y(opts.limit)) + 0.5;
    g.beginPath(); g.moveTo(left, yy); g.lineTo(w - right, yy); g.stroke();
    g.setLineDash([]);
  }
  const base = new Array(times.length).fill(0);
  const gap = (opts.gapMs || 5000);
  for (const s of series) {
    const vals = s.values.map((v, i) => (v === null ? null : (opts.stacked ? base[i] + v : v)));
    // stacked: filled band between the previous total and this one
    if (opts.stacked) {
      g.fillStyle = s.color + "55";
      let start = -1;
      const flush = (end) => {
        if (start < 0) return;
        g.beginPath();
        g.moveTo(x(times[start]), y(vals[start]));
        for (let i = start + 1; i <= end; i++) g.lineTo(x(times[i]), y(vals[i]));
        for (let i = end; i >= start; i--) g.lineTo(x(times[i]), y(base[i]));
        g.closePath(); g.fill();
        start = -1;
      };
      for (let i = 0; i < times.length; i++) {
        if (times[i] < t0 || vals[i] === null) { flush(i - 1); continue; }
        if (start >= 0 && times[i] - times[i - 1] > gap) flush(i - 1);
        if (start < 0) start = i;
      }
      flush(times.length - 1);
    }
    g.strokeStyle = s.color; g.lineWidth = 1.5; g.setLineDash(s.dash ? [3, 3] : []);
    g.beginPath();
    let pen = false;
    for (let i = 0; i < times.length; i++) {
      if (times[i] < t0 || vals[i] === null) { pen = false; continue; }
      if (pen && times[i] - times[i - 1] > gap) pen = false; // server was down: leave a gap
      const px = x(times[i]), py = y(vals[i]);
      if (pen) g.lineTo(px, py); else g.moveTo(px, py);
      pen = true;
    }
    g.stroke(); g.setLineDash([]);
    if (opts.stacked) for (let i = 0; i < times.length; i++) base[i] += s.values[i] || 0;
  }
}
// A round number of KiB/MiB/GiB, so that the quarter ticks read well.
function niceBytes(v) {
  if (!(v > 0)) return 1024;
  let unit = 1;
  while (v >= 1024 * unit && unit < Math.pow(1024, 4)) unit *= 1024;
  return niceMax(v / unit) * unit;
}
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p;
  return 10 * p;
}

// ---------- state ----------
const state = {
  fields: null,       // history field names, "unix_ms" first
  samples: [],        // [[unix_ms, ...]]
  capacity: 450,
  last: null,         // previous poll, the three documents merged (for live rates)
  cur: null,
  failures: 0,
};
function col(name) { return state.fields ? state.fields.indexOf(name) : -1; }
function seriesOf(name) { const i = col(name); return state.samples.map(s => (i < 0 ? null : s[i])); }

async function getJson(path) {
  // Resolved against the origin, not the page: a page opened with basic
  // auth's user:password@ in its address would otherwise hand fetch a URL
  // with credentials in it, which browsers refuse; the browser sends the
  // credentials it authenticated the page with by itself.
  const r = await fetch(new URL(path, location.origin), { cache: "no-store" });
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

async function loadHistory() {
  const h = await getJson("/api/v1/history");
  state.fields = h.fields;
  state.samples = h.samples;
  state.capacity = h.capacity;
}

function addLatest(latest) {
  if (!latest || !state.fields) return;
  const n = state.samples.length;
  if (n && state.samples[n - 1][0] >= latest[0]) return;
  state.samples.push(latest);
  while (state.samples.length > state.capacity) state.samples.shift();
}

// Rates between the two last polls (fresher than the 2 s history samples).
// Before the second poll, the newest history sample's rate stands in.
const SAMPLE_RATE = {
  cmd_get: "get_per_s", cmd_set: "set_per_s", cmd_touch: "touch_per_s", get_hits: "hits_per_s",
  get_misses: "misses_per_s", bytes_read: "bytes_read_per_s", bytes_written: "bytes_written_per_s",
  evictions: "evictions_per_s", reclaimed: "reclaimed_per_s",
};
function liveRate(name) {
  const a = state.last, b = state.cur;
  if (!a || !b) {
    const l = latestSample();
    if (!l) return null;
    if (name in SAMPLE_RATE) return l[SAMPLE_RATE[name]];
    if (name === "delete_hits") return l.delete_per_s;
    if (name === "incr_hits") return l.incr_decr_per_s;
    if (/^(delete_misses|incr_misses|decr_hits|decr_misses)$/.test(name)) return 0;
    return null;
  }
  const dt = (b.now_ms - a.now_ms) / 1000;
  if (dt <= 0) return null;
  const d = (b.stats[name] || 0) - (a.stats[name] || 0);
  return d >= 0 ? d / dt : null;
}
function liveSum(names) {
  let t = 0;
  for (const n of names) { const r = liveRate(n); if (r === null) return null; t += r; }
  return t;
}

// ---------- rendering ----------
function tile(box, label, value, sub) {
  const t = el("div", "tile");
  t.appendChild(el("div", "label", label));
  t.appendChild(el("div", "value", value));
  t.appendChild(el("div", "sub", sub || "\u00a0"));
  box.appendChild(t);
}

function renderTiles(d) {
  const s = d.stats, m = d.memory;
  const box = $("tiles");
  clear(box);
  const reqs = liveSum(["cmd_get", "cmd_set", "cmd_touch", "delete_hits", "delete_misses",
    "incr_hits", "incr_misses", "decr_hits", "decr_misses"]);
  tile(box, "requests/s", fmtNum(reqs), "get " + fmtNum(liveRate("cmd_get")) + " · set " + fmtNum(liveRate("cmd_set")));
  const hr = liveSum(["get_hits"]), mr = liveSum(["get_misses"]);
  tile(box, "hit ratio (now)", hr !== null && hr + mr > 0 ? fmtPct(hr / (hr + mr)) : "–",
    "since start " + fmtPct(ratio(s.get_hits, s.get_misses)));
  tile(box, "memory (-m)", fmtPct(m.used / m.limit), fmtBytes(m.used) + " of " + fmtBytes(m.limit));
  tile(box, "items", fmtNum(s.curr_items), fmtBytes(m.items) + " · dead " + fmtBytes(m.dead));
  tile(box, "evictions/s", fmtNum(liveRate("evictions")), "total " + fmtNum(s.evictions));
  tile(box, "expired/s", fmtNum(liveRate("reclaimed")), "reclaimed total " + fmtNum(s.reclaimed));
  tile(box, "connections", fmtNum(s.curr_connections), "buffers " + fmtBytes(m.read_buf_bytes + m.response_obj_bytes));
  const l = latestSample();
  const busy = l && l.p50_us > 0; // no request in the last interval: no percentile
  tile(box, "latency p99", busy ? fmtUs(l.p99_us) : "–",
    busy ? "p50 " + fmtUs(l.p50_us) + " · p99.9 " + fmtUs(l.p999_us) : "no requests in the last 2 s");
  tile(box, "network in / out", fmtBytes(liveRate("bytes_read")) + "/s",
    "out " + fmtBytes(liveRate("bytes_written")) + "/s");
}

function latestSample() {
  const n = state.samples.length;
  if (!n || !state.fields) return null;
  const o = {};
  state.fields.forEach((f, i) => { o[f] = state.samples[n - 1][i]; });
  return o;
}

function last(arr) { for (let i = arr.length - 1; i >= 0; i--) if (arr[i] !== null) return arr[i]; return null; }

function chart(id, legendId, defs, opts) {
  const times = state.samples.map(s => s[0]);
  const series = defs.map((d, i) => ({
    name: d.name, color: d.color || COLORS[i % COLORS.length], dash: d.dash,
    values: d.values || seriesOf(d.field),
  }));
  lineChart($(id), times, series, opts);
  // For tests and the curious: how many points the chart has drawn (in its
  // time window, all series).
  const t0 = times.length ? times[times.length - 1] - 15 * 60000 : 0;
  let points = 0;
  for (const s of series) s.values.forEach((v, i) => { if (v !== null && times[i] >= t0) points++; });
  $(id).dataset.points = points;
  const fmt = (opts && opts.fmt) || fmtNum;
  legend(legendId, series.map(s => ({ name: s.name, color: s.color, value: fmt(last(s.values)) })));
}

function renderCharts(d) {
  chart("c-req", "l-req", [
    { name: "get", field: "get_per_s" }, { name: "set", field: "set_per_s" },
    { name: "delete", field: "delete_per_s" }, { name: "incr/decr", field: "incr_decr_per_s" },
    { name: "touch", field: "touch_per_s" }, { name: "meta (also above)", field: "meta_per_s", dash: true },
  ]);
  const hits = seriesOf("hits_per_s"), misses = seriesOf("misses_per_s");
  chart("c-hit", "l-hit", [
    { name: "hit ratio", values: hits.map((h, i) => (h === null || h + misses[i] === 0 ? null : h / (h + misses[i]))) },
  ], { max: 1, fmt: fmtPct });
  chart("c-mem", "l-mem", [
    { name: "items", field: "items_bytes" }, { name: "index", field: "index_bytes" },
    { name: "dead", field: "dead_bytes" }, { name: "conn buffers", field: "conn_buffer_bytes" },
  ], { stacked: true, limit: d.memory.limit, fmt: fmtBytes });
  chart("c-evict", "l-evict", [
    { name: "evictions", field: "evictions_per_s", color: COLORS[4] },
    { name: "expired reclaimed", field: "reclaimed_per_s", color: COLORS[2] },
    { name: "grace hits", field: "grace_hits_per_s", color: COLORS[3] },
  ]);
  chart("c-lat", "l-lat", [
    { name: "p50", field: "p50_us" }, { name: "p99", field: "p99_us" }, { name: "p99.9", field: "p999_us" },
  ], { fmt: fmtUs });
  chart("c-net", "l-net", [
    { name: "in", field: "bytes_read_per_s" }, { name: "out", field: "bytes_written_per_s" },
  ], { fmt: fmtBytes });
  chart("c-conn", "l-conn", [{ name: "connections", field: "curr_connections" }]);
  chart("c-items", "l-items", [{ name: "items", field: "curr_items", color: COLORS[1] }]);
}

function renderMembar(d) {
  const m = d.memory;
  const parts = [
    { name: "items", v: m.items, color: COLORS[0] },
    { name: "index", v: m.index, color: COLORS[1] },
    { name: "dead (not yet reclaimed)", v: m.dead, color: COLORS[2] },
    { name: "other reserved (segment slack, spare segments)", v: Math.max(0, m.used - m.items - m.index - m.dead), color: "#4a5866" },
  ];
  const total = Math.max(m.limit, m.used);
  const bar = $("membar");
  clear(bar);
  for (const p of parts) {
    const seg = el("div");
    seg.style.width = (p.v / total * 100) + "%";
    seg.style.background = p.color;
    seg.title = p.name + ": " + fmtBytes(p.v);
    bar.appendChild(seg);
  }
  legend("l-membar", parts.map(p => ({ name: p.name, color: p.color, value: fmtBytes(p.v) }))
    .concat([
      { name: "free of -m", color: "#0b0f13", value: fmtBytes(Math.max(0, m.limit - m.used)) },
      { name: "connection buffers (outside -m): read", color: COLORS[3], value: fmtBytes(m.read_buf_bytes) },
      { name: "response", color: COLORS[3], value: fmtBytes(m.response_obj_bytes) },
      { name: "accounting", color: COLORS[7], value: fmtBytes(m.observe) },
      { name: "history", color: COLORS[7], value: fmtBytes(m.history) },
    ]));
}

function barCell(v, max, text) {
  const span = el("span");
  const b = el("span", "bar");
  b.style.width = Math.round(max > 0 ? v / max * 60 : 0) + "px";
  span.appendChild(b);
  span.appendChild(document.createTextNode(text));
  return span;
}

function renderPrefixes(d) {
  const rows = d.prefixes;
  const maxBytes = rows.reduce((a, r) => Math.max(a, r.bytes), 0);
  const maxSent = rows.reduce((a, r) => Math.max(a, r.bytes_sent), 0);
  $("prefix-note").textContent = d.observe_enabled
    ? "(top " + rows.length + " of " + d.prefixes_total + " by memory; traffic since start or stats reset)"
    : "(accounting disabled: -o observe=off)";
  table("t-prefixes", [
    { title: "prefix", get: r => r.prefix, cls: "key" },
    { title: "memory", get: r => barCell(r.bytes, maxBytes, fmtBytes(r.bytes)) },
    { title: "items", get: r => fmtNum(r.items) },
    { title: "gets", get: r => fmtNum(r.gets) },
    { title: "hit ratio", get: r => fmtPct(ratio(r.hits, r.misses)) },
    { title: "bytes sent", get: r => barCell(r.bytes_sent, maxSent, fmtBytes(r.bytes_sent)) },
    { title: "sets", get: r => fmtNum(r.sets) },
    { title: "deletes", get: r => fmtNum(r.deletes) },
    { title: "evicted", get: r => fmtNum(r.evictions) },
    { title: "expired", get: r => fmtNum(r.expired) },
  ], rows);
}

// A server started with -X sends no key names (key: null): sizes, prefixes
// and counts only.
function keyName(r) { return r.key === null ? "(hidden)" : r.key; }

function renderKeys(d) {
  table("t-big", [
    { title: "key", get: keyName, cls: "key" },
    { title: "prefix", get: r => (r.prefix === null ? "–" : r.prefix), cls: "key" },
    { title: "size", get: r => fmtBytes(r.size) },
    { title: "TTL", get: r => fmtTtl(r.ttl) },
    { title: "age", get: r => fmtTtl(r.age) },
  ], d.bigkeys.slice(0, 10));
  const h = d.hotkeys;
  $("hot-note").textContent = "(last " + h.window_s + " s)";
  const hotCols = (countTitle, fmtCount) => [
    { title: "key", get: keyName, cls: "key" },
    { title: "prefix", get: r => (r.prefix === null ? "–" : r.prefix), cls: "key" },
    { title: countTitle, get: r => fmtCount(r.count) },
    { title: "size", get: r => (r.size === null ? "gone" : fmtBytes(r.size)) },
    { title: "TTL", get: r => fmtTtl(r.ttl) },
  ];
  table("t-hotreq", hotCols("requests", fmtNum), h.by_requests);
  table("t-hotbytes", hotCols("bytes", fmtBytes), h.by_bytes);
}

function renderStore(d) {
  const s = d.stats;
  kv("t-store", [
    ["segments used / total", fmtNum(s.larder_segments_used) + " / " + fmtNum(s.larder_segments_total)],
    ["segment size", fmtBytes(s.larder_segment_size)],
    ["compactions", fmtNum(s.larder_compactions)],
    ["index load", fmtPct(s.larder_index_slots ? s.larder_index_used / s.larder_index_slots : null) +
      " (" + fmtNum(s.larder_index_used) + " of " + fmtNum(s.larder_index_slots) + " slots)"],
    ["index memory", fmtBytes(s.larder_index_bytes)],
    ["large objects", fmtNum(s.larder_large_objects)],
    ["evicted unfetched", fmtNum(s.evicted_unfetched)],
    ["expired unfetched", fmtNum(s.expired_unfetched)],
    ["store refused: too large / no memory", fmtNum(s.store_too_large) + " / " + fmtNum(s.store_no_memory)],
  ]);
  kv("t-grace", d.grace_enabled ? [
    ["grace hits (stale served)", fmtNum(s.larder_grace_hits)],
    ["grace wins (one refresher)", fmtNum(s.larder_grace_wins)],
    ["winner timeouts", fmtNum(s.larder_grace_winner_timeouts)],
    ["get misses", fmtNum(s.get_misses)],
  ] : [
    ["grace mode", "off (-o grace=…)"],
    ["get misses", fmtNum(s.get_misses)],
    ["get expired", fmtNum(s.get_expired)],
  ]);
  const l = d.latency_us;
  kv("t-lat", [
    ["requests timed", fmtNum(l.count)],
    ["mean", fmtUs(l.mean)],
    ["p50", fmtUs(l.p50)], ["p90", fmtUs(l.p90)], ["p99", fmtUs(l.p99)], ["p99.9", fmtUs(l.p999)],
    ["connection budget used", fmtBytes(s.larder_conn_budget_used) + " of " + fmtBytes(s.larder_conn_budget_bytes)],
  ]);
}

function render(d) {
  const s = d.stats;
  $("server").textContent = "version " + s.version + " · pid " + s.pid + " · up " + fmtDuration(s.uptime) +
    " · " + s.threads + " threads";
  renderTiles(d);
  renderCharts(d);
  renderMembar(d);
  renderPrefixes(d);
  renderKeys(d);
  renderStore(d);
}

async function poll() {
  try {
    if (!state.fields) await loadHistory();
    // One merged object: the documents' top-level names do not collide
    // (except now_ms, the same clock).
    const [summary, prefixes, keys] = await Promise.all(
      ["/api/v1/summary", "/api/v1/prefixes", "/api/v1/keys"].map(getJson));
    const d = Object.assign({}, keys, prefixes, summary);
    state.last = state.cur;
    state.cur = d;
    addLatest(d.latest);
    render(d);
    state.failures = 0;
    const st = $("status");
    st.className = "status live";
    st.textContent = "live · " + new Date(d.now_ms).toLocaleTimeString();
  } catch (e) {
    state.failures++;
    const st = $("status");
    st.className = "status down";
    st.textContent = "no answer from the server (" + state.failures + ")";
  }
  setTimeout(poll, POLL_MS);
}

window.addEventListener("resize", () => { if (state.cur) renderCharts(state.cur); });
poll();
