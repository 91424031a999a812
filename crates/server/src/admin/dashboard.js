// The admin dashboard: fetches /mrc and /history every few seconds and draws them as inline SVG.
// Plain JavaScript, no libraries, no build step; served by mrcached itself.
//
// Every drawn curve is an SVG <path class="series"> with a data attribute naming what it shows, so a
// test (or a person with the inspector) can find it: data-class="N" / data-tenant="NAME" for miss-ratio
// curves (with a <line class="alloc"> marking the current pages), data-series="class:N",
// "tenant:NAME", "hit_ratio", "predicted", "observed" for the series over time, and <rect
// data-moves> for the policy's page moves.
"use strict";

const REFRESH_MS = 3000;
const SVG = "http://www.w3.org/2000/svg";
const PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
  "#7f7f7f", "#bcbd22", "#17becf"];
const W = 420, H = 220, M = { left: 42, right: 12, top: 10, bottom: 30 };

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function color(i) { return PALETTE[i % PALETTE.length]; }

function fmt(v) {
  if (Math.abs(v) >= 1e6) return (v / 1e6).toFixed(1) + "M";
  if (Math.abs(v) >= 1e3) return (v / 1e3).toFixed(1) + "k";
  return Number.isInteger(v) ? String(v) : v.toFixed(2);
}

// One chart. spec: { xmin, xmax, ymin, ymax, xlog, xlabel, ylabel, series: [{ attrs, color,
// points: [[x, y]] }], marks: [{ x, y, cls, color, attrs }], bars: [{ x, y, color, attrs }] }.
// Points with a null y break the line.
function chart(spec) {
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  const pw = W - M.left - M.right, ph = H - M.top - M.bottom;
  const tx = spec.xlog ? (x) => Math.log2(1 + Math.max(0, x)) : (x) => x;
  const x0 = tx(spec.xmin), x1 = Math.max(tx(spec.xmax), x0 + 1e-9);
  const y0 = spec.ymin, y1 = Math.max(spec.ymax, y0 + 1e-9);
  const sx = (x) => M.left + ((tx(x) - x0) / (x1 - x0)) * pw;
  const sy = (y) => M.top + ph - ((Math.min(Math.max(y, y0), y1) - y0) / (y1 - y0)) * ph;
  for (let i = 0; i <= 4; i++) {
    const y = y0 + ((y1 - y0) * i) / 4;
    el("line", { class: "gridline", x1: M.left, x2: M.left + pw, y1: sy(y), y2: sy(y) }, svg);
    el("text", { x: M.left - 4, y: sy(y) + 3, "text-anchor": "end" }, svg).textContent = fmt(y);
  }
  const xticks = [];
  if (spec.xlog) {
    for (let p = 1; p <= spec.xmax * 2; p *= 2) if (p >= spec.xmin && p <= spec.xmax) xticks.push(p);
    if (xticks.length > 6) for (let i = xticks.length - 2; i > 0; i -= 2) xticks.splice(i, 1);
  } else {
    for (let i = 0; i <= 4; i++) xticks.push(spec.xmin + ((spec.xmax - spec.xmin) * i) / 4);
  }
  for (const x of xticks) {
    el("text", { x: sx(x), y: M.top + ph + 12, "text-anchor": "middle" }, svg).textContent = fmt(Math.round(x));
  }
  el("line", { class: "axis", x1: M.left, x2: M.left + pw, y1: M.top + ph, y2: M.top + ph }, svg);
  el("line", { class: "axis", x1: M.left, x2: M.left, y1: M.top, y2: M.top + ph }, svg);
  el("text", { x: M.left + pw / 2, y: H - 3, "text-anchor": "middle" }, svg).textContent = spec.xlabel || "";
  el("text", { x: 10, y: M.top + ph / 2, transform: `rotate(-90 10 ${M.top + ph / 2})`, "text-anchor": "middle" },
    svg).textContent = spec.ylabel || "";
  for (const b of spec.bars || []) {
    const bw = Math.max(1.5, pw / Math.max(1, (spec.xmax - spec.xmin)) * 0.8);
    el("rect", Object.assign({ x: sx(b.x) - bw / 2, y: sy(b.y), width: bw, height: sy(y0) - sy(b.y),
      fill: b.color }, b.attrs), svg);
  }
  for (const s of spec.series || []) {
    let d = "", pen = false;
    for (const [x, y] of s.points) {
      if (y === null || y === undefined || !Number.isFinite(y)) { pen = false; continue; }
      d += `${pen ? "L" : "M"}${sx(x).toFixed(1)},${sy(y).toFixed(1)}`;
      pen = true;
    }
    if (d === "") d = "M0,0";
    el("path", Object.assign({ class: "series", d, stroke: s.color }, s.attrs), svg);
  }
  for (const m of spec.marks || []) {
    el("line", Object.assign({ class: m.cls, x1: sx(m.x), x2: sx(m.x), y1: M.top, y2: M.top + ph,
      stroke: m.color }, m.attrs), svg);
    if (m.y !== undefined && m.y !== null) {
      el("circle", { cx: sx(m.x), cy: sy(m.y), r: 3.5, fill: m.color }, svg);
    }
  }
  return svg;
}

function figure(caption, svg, legend) {
  const f = document.createElement("figure");
  const c = document.createElement("figcaption");
  c.textContent = caption;
  f.appendChild(c);
  f.appendChild(svg);
  if (legend && legend.length) {
    const l = document.createElement("div");
    l.className = "legend";
    for (const [name, col] of legend) {
      const s = document.createElement("span");
      const i = document.createElement("i");
      i.style.background = col;
      s.appendChild(i);
      s.appendChild(document.createTextNode(name));
      l.appendChild(s);
    }
    f.appendChild(l);
  }
  return f;
}

function replace(id, nodes, emptyText) {
  const box = document.getElementById(id);
  box.replaceChildren(...nodes);
  if (nodes.length === 0) {
    const p = document.createElement("div");
    p.className = "empty";
    p.textContent = emptyText;
    box.appendChild(p);
  }
}

// The miss ratio a curve gives at `pages` (linear between its points).
function missAt(curve, pages) {
  if (curve.length === 0) return null;
  if (pages <= curve[0][0]) return curve[0][1];
  for (let i = 1; i < curve.length; i++) {
    const [xa, ya] = curve[i - 1], [xb, yb] = curve[i];
    if (pages <= xb) return ya + ((yb - ya) * (pages - xa)) / Math.max(1e-9, xb - xa);
  }
  return curve[curve.length - 1][1];
}

function curveChart(points, pages, target, attrs, col) {
  const xmax = Math.max(points.length ? points[points.length - 1][0] : 1, pages, target || 0, 1);
  const marks = [{ x: pages, y: missAt(points, pages), cls: "alloc", color: col,
    attrs: Object.assign({ "data-pages": pages }, attrs) }];
  if (target) marks.push({ x: target, cls: "target", color: "#555", attrs: { "data-target-pages": target } });
  return chart({ xmin: 1, xmax, ymin: 0, ymax: 1, xlog: true, xlabel: "pages (log scale)",
    ylabel: "miss ratio", series: [{ attrs: Object.assign({ class: "series mrc" }, attrs), color: col, points }],
    marks });
}

function drawCurves(mrc) {
  const tenants = mrc.tenants.map((t, i) => figure(
    `tenant ${t.tenant}: ${t.pages} pages` + (t.target_pages ? `, target ${t.target_pages}` : "") +
      `, ${t.requests} sampled uses`,
    curveChart(t.curve_pages, t.pages, t.target_pages, { "data-tenant": t.tenant }, color(i))));
  replace("tenant-curves", tenants,
    "No tenant curves: tenants share one memory (no tenant pools) or profiling is off.");
  const classes = mrc.classes.filter((c) => c.requests > 0 || c.pages > 0).map((c, i) => figure(
    `class ${c.class} (${c.chunk_size_bytes} B chunks): ${c.pages} pages, ${c.items} items`,
    curveChart(c.curve_pages, c.pages, 0, { "data-class": c.class }, color(i))));
  replace("class-curves", classes,
    mrc.profiling ? "No class has been used yet." : "Profiling is off (-o mrc_sample_rate=0).");
}

function timeChart(samples, series, opts) {
  const t0 = samples.length ? samples[0].t : 0;
  const t1 = samples.length ? samples[samples.length - 1].t : 1;
  let ymax = opts.ymax;
  if (ymax === undefined) {
    ymax = 1;
    for (const s of series) for (const [, y] of s.points) if (y !== null && y > ymax) ymax = y;
    for (const b of opts.bars || []) if (b.y > ymax) ymax = b.y;
  }
  return chart(Object.assign({ xmin: t0, xmax: Math.max(t1, t0 + 1), ymin: 0, ymax,
    xlabel: "seconds since start", series }, opts));
}

function drawHistory(h) {
  const samples = h.samples;
  const classIds = [...new Set(samples.flatMap((s) => s.class_pages.map(([c]) => c)))].sort((a, b) => a - b);
  const classSeries = classIds.map((c, i) => ({ attrs: { "data-series": `class:${c}` }, color: color(i),
    points: samples.map((s) => { const e = s.class_pages.find(([k]) => k === c); return [s.t, e ? e[1] : 0]; }) }));
  document.getElementById("class-pages").replaceChildren(
    figure("", timeChart(samples, classSeries, { ylabel: "pages" }),
      classIds.map((c, i) => [`class ${c}`, color(i)])));
  const names = [...new Set(samples.flatMap((s) => s.tenants.map((t) => t.tenant)))];
  const tenantSeries = names.map((n, i) => ({ attrs: { "data-series": `tenant:${n}` }, color: color(i),
    points: samples.map((s) => { const t = s.tenants.find((x) => x.tenant === n); return [s.t, t ? t.pages : null]; }) }));
  document.getElementById("tenant-pages").replaceChildren(
    figure("", timeChart(samples, tenantSeries, { ylabel: "pages" }), names.map((n, i) => [n, color(i)])));
  const hit = [{ attrs: { "data-series": "hit_ratio" }, color: color(0),
    points: samples.map((s) => [s.t, s.hit_ratio]) }];
  document.getElementById("hit-ratio").replaceChildren(
    figure("", timeChart(samples, hit, { ymax: 1, ylabel: "hit ratio" })));
  const prediction = [
    { attrs: { "data-series": "predicted" }, color: color(1), points: samples.map((s) => [s.t, s.predicted_miss_ratio]) },
    { attrs: { "data-series": "observed" }, color: color(0), points: samples.map((s) => [s.t, s.observed_miss_ratio]) },
  ];
  document.getElementById("prediction").replaceChildren(
    figure("", timeChart(samples, prediction, { ymax: 1, ylabel: "miss ratio" }),
      [["predicted", color(1)], ["observed", color(0)]]));
  const bars = samples.filter((s) => s.moves > 0).map((s) => ({ x: s.t, y: s.moves, color: color(2),
    attrs: { "data-moves": s.moves } }));
  const rounds = samples.filter((s) => s.arbiter_rounds > 0).map((s) => ({ x: s.t, cls: "target", color: color(3),
    attrs: { "data-arbiter-rounds": s.arbiter_rounds } }));
  document.getElementById("moves").replaceChildren(
    figure("", timeChart(samples, [], { bars, marks: rounds, ylabel: "pages moved" }),
      [["class policy moves", color(2)], ["arbiter rounds", color(3)]]));
}

let refreshes = 0;

async function refresh() {
  const status = document.getElementById("status");
  try {
    const [mrc, history] = await Promise.all(["/mrc", "/history"].map(async (url) => {
      const r = await fetch(url, { cache: "no-store" });
      if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
      return r.json();
    }));
    drawCurves(mrc);
    drawHistory(history);
    refreshes += 1;
    document.body.dataset.refreshes = String(refreshes);
    const last = history.samples[history.samples.length - 1];
    status.className = "";
    const page = mrc.page_size_bytes % 1048576 === 0 ? `${mrc.page_size_bytes / 1048576} MiB`
      : `${fmt(mrc.page_size_bytes)} B`;
    status.textContent = `${mrc.page_limit} pages of ${page}` +
      (last ? `, up ${last.t} s` : "") + `, updated ${new Date().toLocaleTimeString()}`;
  } catch (e) {
    status.className = "error";
    status.textContent = `update failed: ${e.message}`;
  }
}

refresh();
setInterval(refresh, REFRESH_MS);
