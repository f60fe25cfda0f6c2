// Interaction: pan (drag, wheel), zoom (ctrl+wheel, pinch, + and -), click panels for ops and vars,
// collapsible sub-blocks, search. window.gradcViewer exposes the state for tests.
"use strict";

const collapsed = new Set();
const panel = () => document.getElementById("panel");

function esc(text) {
  return String(text).replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
}

function rebuild() {
  scene = compose(index, collapsed);
  requestDraw();
}

function availableWidth() {
  return canvas.clientWidth - (panel().classList.contains("open") ? panel().offsetWidth : 0);
}

function zoomAt(factor, sx, sy) {
  const s = Math.min(3, Math.max(0.002, view.scale * factor));
  view.tx = sx - (sx - view.tx) * (s / view.scale);
  view.ty = sy - (sy - view.ty) * (s / view.scale);
  view.scale = s;
  requestDraw();
}

function fit() {
  const W = availableWidth(), H = canvas.clientHeight;
  view.scale = Math.min(1.2, (W - 40) / (scene.width + 40), (H - 40) / (scene.height + 40));
  view.tx = (W - scene.width * view.scale) / 2;
  view.ty = 20;
  requestDraw();
}

function initialView() {
  const W = canvas.clientWidth;
  view.scale = Math.min(1, Math.max(0.35, (W - 40) / (scene.width + 40)));
  if (scene.height * view.scale < canvas.clientHeight - 40) return fit();
  view.tx = Math.max(20, (W - scene.width * view.scale) / 2);
  view.ty = 20;
  requestDraw();
}

function reveal(bidx) {              // expand the groups that hide a block
  let changed = false;
  for (let b = bidx, steps = 0; b > 0 && steps < DATA.blocks.length; steps++) {
    if (collapsed.delete(b)) changed = true;
    const host = DATA.blocks[b].run_by;
    b = host ? host[0] : 0;
  }
  if (changed) rebuild();
}

function centerOn(n) {
  if (view.scale < 0.6) view.scale = 0.9;
  view.tx = availableWidth() / 2 - (n.x + n.w / 2) * view.scale;
  view.ty = canvas.clientHeight / 2 - (n.y + n.h / 2) * view.scale;
  requestDraw();
}

function opLink(b, i) {
  const op = DATA.blocks[b].ops[i];
  return `<a data-op="${b}:${i}">${esc(S[op[0]])}</a> <span class="sub">(block ${b}, op ${i})</span>`;
}

function varLink(name) {
  return `<a data-var="${esc(name)}">${esc(name)}</a>`;
}

function slotRows(slots) {
  return slots.map(([slot, args]) => `<tr><td>${esc(S[slot])}</td><td>${args.map(a => S[a] === "@EMPTY@" ?
    "@EMPTY@" : varLink(S[a])).join(", ") || "<span class=sub>empty</span>"}</td></tr>`).join("");
}

function selectOp(b, i, center) {
  reveal(b);
  selection = {type: "op", b, i};
  const op = DATA.blocks[b].ops[i], kind = STYLE.kinds[op[1]];
  let html = `<button class="close" title="Close (Esc)">×</button><h2>${esc(S[op[0]])}</h2>
    <div class="sub">block ${b}, op ${i}</div>
    <span class="badge" style="background:${KIND_FILL[op[1]]};border-color:${KIND_LINE[op[1]]}">${kind}</span>`;
  if (op[4]) html += `<span class="badge" style="border-color:${STYLE.loss}">loss</span>`;
  if (op[5] >= 0) html += `<h3>Differentiates</h3>${opLink(op[5], op[6])}`;
  const grads = index.gradsOf.get(b + ":" + i) || [];
  if (grads.length) html += `<h3>Grad ops</h3>${grads.map(([gb, gi]) => opLink(gb, gi)).join("<br>")}`;
  if (op[7] >= 0) html += `<h3>Runs</h3><a data-block="${op[7]}">block ${op[7]}</a> (${DATA.blocks[op[7]].ops.length} ops)`;
  html += `<h3>Inputs</h3><table>${slotRows(op[8]) || "<tr><td>none</td></tr>"}</table>`;
  html += `<h3>Outputs</h3><table>${slotRows(op[9]) || "<tr><td>none</td></tr>"}</table>`;
  html += `<h3>Attributes</h3><table>${op[10].map(([k, v]) => `<tr><td>${esc(S[k])}</td><td>${esc(S[v])}</td></tr>`)
    .join("") || "<tr><td>none</td></tr>"}</table>`;
  const doc = DATA.docs[S[op[0]]];
  html += `<h3>Description</h3>${doc ? `<pre>${esc(doc)}</pre>` : "<div class=sub>not an op gradc knows</div>"}`;
  openPanel(html);
  const n = DATA.blocks[b].opNodes[i];
  if (center) centerOn(n); else keepVisible(n);
  requestDraw();
}

function keepVisible(n) {           // the panel opened over it: slide the picture left
  const right = (n.x + n.w) * view.scale + view.tx, limit = availableWidth() - 30;
  if (right > limit) view.tx -= right - limit;
}

function fmt(x) {
  return x === null ? "–" : Math.abs(x) >= 1e5 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(4) : +x.toPrecision(6);
}

function selectVar(name, center) {
  selection = {type: "var", name};
  const decls = index.varsByName.get(name) || [];
  let html = `<button class="close" title="Close (Esc)">×</button><h2>${esc(name)}</h2>`;
  for (const [b, v] of decls) {
    const flags = ["persistable", "parameter", "stop_gradient", "fed (need_check_feed)"].filter((_, k) => v[4] & (1 << k));
    html += `<div class="sub">declared in block ${b}: ${esc(S[v[1]])} ${esc(S[v[2]])}${v[3] ? "[" + v[3].join(", ") + "]" : ""}
      ${flags.length ? "· " + flags.join(", ") : ""}</div>`;
  }
  if (!decls.length) html += `<div class="sub">not declared</div>`;
  const list = (pairs) => (pairs || []).map(([b, i]) => opLink(b, i)).join("<br>") || "<span class=sub>none</span>";
  html += `<h3>Written by</h3>${list(index.writers.get(name))}<h3>Read by</h3>${list(index.readers.get(name))}`;
  const grad = name + "@GRAD";
  if (index.varsByName.has(grad)) html += `<h3>Gradient</h3>${varLink(grad)}`;
  const base = name.split("@RENAME@")[0];
  if (base.endsWith("@GRAD") && index.varsByName.has(base.slice(0, -5)))
    html += `<h3>Gradient of</h3>${varLink(base.slice(0, -5))}`;
  const st = DATA.stats[name];
  if (st) html += `<h3>Values</h3><table><tr><td>min</td><td>${fmt(st[0])}</td></tr><tr><td>max</td><td>${fmt(st[1])}</td></tr>
    <tr><td>mean</td><td>${fmt(st[2])}</td></tr><tr><td>NaN</td><td>${st[3]}</td></tr>
    <tr><td>value</td><td>${esc(st[4])}[${st[5].join(", ")}]</td></tr></table>`;
  else if (Object.keys(DATA.stats).length) html += `<h3>Values</h3><div class="sub">no value after the run</div>`;
  openPanel(html);
  if (center) {
    const pill = index.pills.find(p => p.name === name);
    if (pill) { reveal(pill.b); centerOn(pill); }
  }
  requestDraw();
}

function openPanel(html) {
  const p = panel();
  p.innerHTML = html;
  p.classList.add("open");
}

function closePanel() {
  panel().classList.remove("open");
  selection = null;
  requestDraw();
}

function hitTest(sx, sy) {
  const wx = (sx - view.tx) / view.scale, wy = (sy - view.ty) / view.scale;
  for (const g of scene.groups) {
    if (wx >= g.x && wx <= g.x + g.w && wy >= g.y && wy <= g.y + GROUP_HEAD) return {group: g};
  }
  const nodes = scene.nodes;
  for (let k = lowerBound(nodes, wy - 60, n => n.y); k < nodes.length && nodes[k].y <= wy; k++) {
    const n = nodes[k];
    if (wx >= n.x && wx <= n.x + n.w && wy <= n.y + n.h && (n.t === 0 || view.scale >= 0.2)) return {node: n};
  }
  return null;
}

function onClick(sx, sy) {
  const hit = hitTest(sx, sy);
  if (!hit) return closePanel();
  if (hit.group) {
    if (collapsed.has(hit.group.b)) collapsed.delete(hit.group.b); else collapsed.add(hit.group.b);
    return rebuild();
  }
  if (hit.node.t === 0) selectOp(hit.node.b, hit.node.i, false); else selectVar(hit.node.name, false);
}
