// Drawing on one canvas: only what is in view (nodes and edges are sorted by y), and less detail the
// further out the zoom: var nodes and edges go first, then op labels; fills are batched by colour.
"use strict";

const STYLE = DATA.style;
const KIND_FILL = STYLE.colors.map(c => c[0]), KIND_LINE = STYLE.colors.map(c => c[1]);
const FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif";
const view = {scale: 1, tx: 0, ty: 0};
const frames = [];                 // draw times in ms, for tests and benchmarks
let canvas, ctx, dpr = 1, scene, index, selection = null, drawQueued = false;

function requestDraw() {
  if (!drawQueued) { drawQueued = true; requestAnimationFrame(draw); }
}

function resize() {
  dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(canvas.clientWidth * dpr);
  canvas.height = Math.round(canvas.clientHeight * dpr);
  requestDraw();
}

function worldRect() {
  const s = view.scale;
  return {x0: -view.tx / s, y0: -view.ty / s, x1: (canvas.clientWidth - view.tx) / s, y1: (canvas.clientHeight - view.ty) / s};
}

function short(dtype) {
  return {float32: "f32", float64: "f64", float16: "f16", bfloat16: "bf16", int64: "i64", int32: "i32", int16: "i16",
          int8: "i8", uint8: "u8", bool: "bool"}[dtype] || dtype;
}

function pillLabel(n) {
  if (n.label === undefined) {
    const found = index.varsByName.get(n.name);
    const rec = found ? (found.find(([b]) => b === n.b) || found[0])[1] : null;
    n.label = rec && rec[3] ? `${n.name}  ${short(S[rec[2]])}[${rec[3].join(",")}]` : n.name;
    n.persistable = rec ? (rec[4] & 1) !== 0 : false;
    n.grad = n.name.includes("@GRAD");
  }
  return n.label;
}

function fitText(text, width) {
  if (ctx.measureText(text).width <= width) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (ctx.measureText(text.slice(0, mid) + "…").width <= width) lo = mid; else hi = mid - 1; }
  return text.slice(0, lo) + "…";
}

function draw() {
  drawQueued = false;
  const t0 = performance.now();
  const s = view.scale, r = worldRect();
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.fillStyle = "#f8fafc";
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.setTransform(dpr * s, 0, 0, dpr * s, dpr * view.tx, dpr * view.ty);
  drawGroups(r, s);
  if (s >= 0.12) { drawEdges(r, s); drawLinks(r, s); }
  drawNodes(r, s);
  drawSelection(s);
  frames.push(performance.now() - t0);
  if (frames.length > 2000) frames.splice(0, 1000);
}

function drawGroups(r, s) {
  for (const g of scene.groups) {
    if (g.y > r.y1 || g.y + g.h < r.y0 || g.x > r.x1 || g.x + g.w < r.x0) continue;
    ctx.fillStyle = g.depth % 2 ? "rgba(99,102,241,0.06)" : "rgba(14,165,233,0.06)";
    ctx.strokeStyle = "#a5b4fc";
    ctx.lineWidth = 1.2 / s;
    ctx.beginPath(); ctx.roundRect(g.x, g.y, g.w, g.h, 8); ctx.fill(); ctx.stroke();
    if (GROUP_HEAD * s >= 6) {
      const b = DATA.blocks[g.b], run = b.run_by ? DATA.blocks[b.run_by[0]].ops[b.run_by[1]] : null;
      ctx.fillStyle = "#3730a3";
      ctx.font = `600 12px ${FONT}`;
      const what = run ? `run by ${S[run[0]]} (block ${b.run_by[0]}, op ${b.run_by[1]})` : "run by no op";
      const back = b.forward >= 0 && b.forward !== null ? `, backward of block ${b.forward}` : "";
      ctx.fillText(fitText(`${g.collapsed ? "▸" : "▾"} block ${g.b}: ${b.ops.length} ops, ${what}${back}`, g.w - 16),
                   g.x + 10, g.y + 17);
    }
  }
}

function edgePath(from, to) {
  const fx = from.x + from.w / 2, fy = from.y + from.h, tx = to.x + to.w / 2, ty = to.y;
  if (ty >= fy - 1) {              // down to the reader
    const bend = Math.min(60, (ty - fy) / 2);
    ctx.moveTo(fx, fy); ctx.bezierCurveTo(fx, fy + bend, tx, ty - bend, tx, ty);
    return;
  }
  const sy = from.y + from.h / 2, ey = to.y + to.h / 2;
  if (to.x > from.x + from.w || to.x + to.w < from.x) {   // beside: side to side
    const right = to.x > from.x;
    const sx = right ? from.x + from.w : from.x, ex = right ? to.x : to.x + to.w;
    const bend = Math.max(20, Math.abs(ex - sx) / 3) * (right ? 1 : -1);
    ctx.moveTo(sx, sy); ctx.bezierCurveTo(sx + bend, sy, ex - bend, ey, ex, ey);
  } else {                         // up the same column (the backward pass climbs): round the right side
    const sx = from.x + from.w, ex = to.x + to.w, out = Math.max(sx, ex) + 26;
    ctx.moveTo(sx, sy); ctx.bezierCurveTo(out, sy, out, ey, ex, ey);
  }
}

function drawEdges(r, s) {
  ctx.strokeStyle = "#9ca3af";
  ctx.lineWidth = Math.max(1 / s, 0.8);
  ctx.beginPath();
  for (let k = lowerBound(scene.edges, r.y0 - LONG_EDGE, e => e.y0); k < scene.edges.length; k++) {
    const e = scene.edges[k];
    if (e.y0 > r.y1) break;
    if (e.y1 < r.y0) continue;
    edgePath(e.from, e.to);
  }
  ctx.stroke();
  if (s < 0.45) return;
  ctx.font = `10px ${FONT}`;
  ctx.fillStyle = "#6b7280";
  ctx.beginPath();
  for (let k = lowerBound(scene.stubs, r.y0 - 20, e => e.to.y); k < scene.stubs.length; k++) {
    const e = scene.stubs[k], x = e.to.x + e.to.w / 2, y = e.to.y;
    if (y > r.y1 + 20) break;
    ctx.moveTo(x, y - 12); ctx.lineTo(x, y);
    ctx.fillText(fitText("↓ " + e.from.name, e.to.w / 2 - 4), x + 3, y - 3);
  }
  ctx.stroke();
}

function drawLinks(r, s) {
  ctx.strokeStyle = STYLE.link;
  ctx.lineWidth = Math.max(1.5 / s, 1.2);
  ctx.setLineDash([6, 4]);
  ctx.beginPath();
  for (let k = lowerBound(scene.links, r.y0 - LONG_EDGE, l => l.y0); k < scene.links.length; k++) {
    const l = scene.links[k];
    if (l.y0 > r.y1) break;
    if (l.y1 < r.y0 || l.long) continue;
    linkPath(l.from, l.to);
  }
  ctx.stroke();
  ctx.setLineDash([]);
}

function linkPath(grad, fwd) {
  const left = fwd.x < grad.x;
  const sx = left ? grad.x : grad.x + grad.w, sy = grad.y + grad.h / 2;
  const ex = left ? fwd.x + fwd.w : fwd.x, ey = fwd.y + fwd.h / 2;
  const bend = Math.max(30, Math.abs(ex - sx) / 3) * (left ? -1 : 1);
  ctx.moveTo(sx, sy); ctx.bezierCurveTo(sx + bend, sy - 14, ex - bend, ey - 14, ex, ey);
}

function drawNodes(r, s) {
  const nodes = scene.nodes, showPills = s >= 0.2, labels = s >= 0.42;
  const buckets = new Map();
  const visible = [];
  for (let k = lowerBound(nodes, r.y0 - 40, n => n.y); k < nodes.length; k++) {
    const n = nodes[k];
    if (n.y > r.y1) break;
    if (n.x > r.x1 || n.x + n.w < r.x0 || (n.t === 1 && !showPills)) continue;
    let key;
    if (n.t === 0) key = "o" + n.op[1];
    else { pillLabel(n); key = n.grad ? "g" : n.persistable ? "p" : "v"; }
    if (!buckets.has(key)) buckets.set(key, []);
    buckets.get(key).push(n);
    visible.push(n);
  }
  const varStyle = {g: STYLE.vars.grad, p: STYLE.vars.persistable, v: STYLE.vars.plain};
  ctx.lineWidth = Math.max(1.2 / s, 1);
  for (const [key, list] of buckets) {
    const [fill, line] = key[0] === "o" ? [KIND_FILL[+key[1]], KIND_LINE[+key[1]]] : varStyle[key];
    ctx.fillStyle = s < 0.12 ? line : fill; ctx.strokeStyle = line;
    ctx.beginPath();
    const radius = key[0] === "o" ? 5 : 9;
    const minH = 1.5 / s;           // far out, every op stays at least a line
    for (const n of list) {
      if (s < 0.12) ctx.rect(n.x, n.y, n.w, Math.max(n.h, minH)); else ctx.roundRect(n.x, n.y, n.w, n.h, radius);
    }
    ctx.fill();
    if (s >= 0.12) ctx.stroke();
  }
  ctx.strokeStyle = STYLE.loss; ctx.lineWidth = Math.max(3 / s, 2.5);
  ctx.beginPath();
  for (const n of visible) if (n.t === 0 && n.op[4]) ctx.roundRect(n.x, n.y, n.w, n.h, 5);
  ctx.stroke();
  if (!labels) return;
  ctx.textBaseline = "middle";
  for (const n of visible) {
    if (n.t === 0) {
      ctx.fillStyle = "#111827";
      ctx.font = `600 12.5px ${FONT}`;
      ctx.textAlign = "center";
      ctx.fillText(fitText(S[n.op[0]], n.w - 44), n.x + (n.w - 26) / 2 + 4, n.y + n.h / 2 + 1);
      if (s >= 0.6) {
        ctx.font = `10px ${FONT}`; ctx.fillStyle = "#6b7280"; ctx.textAlign = "right";
        ctx.fillText("#" + n.i, n.x + n.w - 5, n.y + n.h / 2 + 1);
      }
    } else if (s >= 0.45) {
      ctx.fillStyle = n.grad ? "#9a3412" : "#1f2937";
      ctx.font = `10.5px ${FONT}`;
      ctx.textAlign = "left";
      ctx.fillText(fitText(n.label, n.w - 14), n.x + 7, n.y + n.h / 2 + 1);
    }
  }
  ctx.textAlign = "left"; ctx.textBaseline = "alphabetic";
}

function drawSelection(s) {
  if (!selection) return;
  ctx.lineWidth = Math.max(3 / s, 2.5);
  if (selection.type === "op") {
    const b = DATA.blocks[selection.b], n = b.opNodes[selection.i];
    if (n.hidden) return;
    ctx.strokeStyle = "#2563eb";
    ctx.beginPath();
    for (const p of b.inPills[selection.i] || []) if (!b.pillNodes[p].hidden) edgePath(b.pillNodes[p], n);
    for (const [pb, pi] of opOutputs(selection.b, selection.i)) for (const o of DATA.blocks[pb].pillOut[pi] || [])
      if (!DATA.blocks[pb].opNodes[o].hidden) edgePath(DATA.blocks[pb].pillNodes[pi], DATA.blocks[pb].opNodes[o]);
    ctx.stroke();
    ctx.strokeStyle = STYLE.link;
    ctx.setLineDash([6, 4]);
    ctx.beginPath();
    for (const [gb, gi] of pairedWith(selection.b, selection.i)) {
      const m = DATA.blocks[gb].opNodes[gi];
      if (m.hidden) continue;
      if (m.op[5] === selection.b && m.op[6] === selection.i) linkPath(m, n); else linkPath(n, m);
      ctx.roundRect(m.x - 3, m.y - 3, m.w + 6, m.h + 6, 7);
    }
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.strokeStyle = "#111827";
    ctx.beginPath(); ctx.roundRect(n.x - 3, n.y - 3, n.w + 6, n.h + 6, 7); ctx.stroke();
  } else {
    ctx.strokeStyle = "#2563eb";
    ctx.beginPath();
    for (const n of index.pills) {
      if (n.hidden || n.name !== selection.name) continue;
      ctx.roundRect(n.x - 3, n.y - 3, n.w + 6, n.h + 6, 10);
      for (const o of DATA.blocks[n.b].pillOut[n.i] || []) if (!DATA.blocks[n.b].opNodes[o].hidden) edgePath(n, DATA.blocks[n.b].opNodes[o]);
    }
    ctx.stroke();
  }
}

// the pills an op writes: [block, pill]
function opOutputs(b, i) {
  return (DATA.blocks[b].outPills[i] || []).map(p => [b, p]);
}

// grad ops of a forward op, or the forward op of a grad op: [[block, op]]
function pairedWith(b, i) {
  const op = DATA.blocks[b].ops[i];
  const found = (index.gradsOf.get(b + ":" + i) || []).slice();
  if (op[5] >= 0) found.push([op[5], op[6]]);
  return found;
}
