// Start-up, input events and search.
"use strict";

function searchMatches(query) {
  const q = query.trim().toLowerCase(), ops = [], vars = [];
  if (!q) return {ops, vars, more: 0};
  let more = 0;
  for (const n of index.ops) {
    if (S[n.op[0]].toLowerCase().includes(q) || `${n.b}:${n.i}` === q) {
      if (ops.length < 40) ops.push(n); else more++;
    }
  }
  for (const name of index.varsByName.keys()) {
    if (name.toLowerCase().includes(q)) { if (vars.length < 40) vars.push(name); else more++; }
  }
  vars.sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
  return {ops, vars, more};
}

function showResults(query) {
  const box = document.getElementById("results"), {ops, vars, more} = searchMatches(query);
  if (!ops.length && !vars.length) { box.style.display = query.trim() ? "block" : "none";
    box.innerHTML = query.trim() ? `<div class="more">no op or var matches</div>` : ""; return; }
  box.innerHTML = vars.map(v => `<div data-var="${esc(v)}">var ${esc(v)}</div>`).join("") +
    ops.map(n => `<div data-op="${n.b}:${n.i}">op ${esc(S[n.op[0]])} <span class="sub">block ${n.b}, op ${n.i}</span></div>`).join("") +
    (more ? `<div class="more">${more} more: type more of the name</div>` : "");
  box.style.display = "block";
  const first = box.querySelector("[data-op],[data-var]");
  if (first) first.classList.add("active");
}

function follow(target) {
  if (target.dataset.op) { const [b, i] = target.dataset.op.split(":").map(Number); selectOp(b, i, true); return true; }
  if (target.dataset.var) { selectVar(target.dataset.var, true); return true; }
  if (target.dataset.block) { const b = +target.dataset.block; reveal(b);
    const g = scene.groups.find(x => x.b === b); if (g) centerOn({x: g.x, y: g.y, w: Math.min(g.w, 400), h: 200}); return true; }
  return false;
}

function installEvents() {
  let drag = null;
  canvas.addEventListener("mousedown", e => { drag = {x: e.offsetX, y: e.offsetY, tx: view.tx, ty: view.ty, moved: false}; });
  window.addEventListener("mousemove", e => {
    if (!drag) return;
    const rect = canvas.getBoundingClientRect(), x = e.clientX - rect.left, y = e.clientY - rect.top;
    if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) { drag.moved = true; canvas.classList.add("dragging"); }
    if (drag.moved) { view.tx = drag.tx + x - drag.x; view.ty = drag.ty + y - drag.y; requestDraw(); }
  });
  window.addEventListener("mouseup", e => {
    if (drag && !drag.moved && e.target === canvas) onClick(e.offsetX, e.offsetY);
    drag = null; canvas.classList.remove("dragging");
  });
  canvas.addEventListener("wheel", e => {
    e.preventDefault();
    if (e.ctrlKey || e.metaKey) zoomAt(Math.exp(-e.deltaY * 0.0025), e.offsetX, e.offsetY);
    else { view.tx -= e.deltaX; view.ty -= e.deltaY; requestDraw(); }
  }, {passive: false});
  window.addEventListener("resize", resize);
  document.getElementById("panel").addEventListener("click", e => {
    if (e.target.classList.contains("close")) return closePanel();
    const target = e.target.closest("[data-op],[data-var],[data-block]");
    if (target) follow(target);
  });
  const search = document.getElementById("search"), results = document.getElementById("results");
  let timer = 0;
  search.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(() => showResults(search.value), 120); });
  search.addEventListener("keydown", e => {
    if (e.key === "Enter") { showResults(search.value); const first = results.querySelector(".active");
      if (first) { follow(first); results.style.display = "none"; } }
    if (e.key === "Escape") { results.style.display = "none"; search.blur(); }
  });
  results.addEventListener("click", e => { const t = e.target.closest("[data-op],[data-var]"); if (t) { follow(t); results.style.display = "none"; } });
  document.getElementById("fit").addEventListener("click", fit);
  document.getElementById("zoom-in").addEventListener("click", () => zoomAt(1.25, availableWidth() / 2, canvas.clientHeight / 2));
  document.getElementById("zoom-out").addEventListener("click", () => zoomAt(0.8, availableWidth() / 2, canvas.clientHeight / 2));
  document.getElementById("collapse").addEventListener("click", () => {
    const all = DATA.blocks.slice(1).map(b => b.idx);
    if (all.every(b => collapsed.has(b))) collapsed.clear(); else all.forEach(b => collapsed.add(b));
    rebuild();
  });
  window.addEventListener("keydown", e => {
    if (e.target === search) return;
    const step = 80;
    if (e.key === "/") { e.preventDefault(); search.focus(); }
    else if (e.key === "Escape") closePanel();
    else if (e.key === "f") fit();
    else if (e.key === "+" || e.key === "=") zoomAt(1.25, availableWidth() / 2, canvas.clientHeight / 2);
    else if (e.key === "-") zoomAt(0.8, availableWidth() / 2, canvas.clientHeight / 2);
    else if (e.key.startsWith("Arrow")) {
      view.tx += {ArrowLeft: step, ArrowRight: -step}[e.key] || 0;
      view.ty += {ArrowUp: step, ArrowDown: -step}[e.key] || 0;
      requestDraw();
    }
  });
}

function main() {
  canvas = document.getElementById("canvas");
  ctx = canvas.getContext("2d");
  index = buildIndex();
  scene = compose(index, collapsed);
  const nOps = index.ops.length, nVars = index.varsByName.size;
  document.getElementById("title").textContent = DATA.title;
  document.getElementById("counts").textContent = `${DATA.blocks.length} block${DATA.blocks.length > 1 ? "s" : ""}, ${nOps} ops, ${nVars} vars`;
  document.getElementById("legend").innerHTML = STYLE.kinds.map((k, i) =>
    `<span><span class="sw" style="background:${KIND_FILL[i]};border-color:${KIND_LINE[i]}"></span>${k}</span>`).join("") +
    `<span><span class="sw" style="background:#fff;border-color:${STYLE.link};border-style:dashed"></span>grad → forward</span>`;
  if (DATA.blocks.length === 1) document.getElementById("collapse").style.display = "none";
  installEvents();
  resize();
  initialView();
  window.gradcViewer = {
    view, frames, collapsed, selectOp, selectVar, fit, zoomAt, rebuild, get scene() { return scene; },
    get selection() { return selection; },
    screenPos(b, i) { const n = DATA.blocks[b].opNodes[i]; return {x: n.x * view.scale + view.tx + n.w * view.scale / 2,
                                                                   y: n.y * view.scale + view.ty + n.h * view.scale / 2, hidden: n.hidden}; },
    groupPos(b) { const g = scene.groups.find(x => x.b === b); return g && {x: g.x * view.scale + view.tx + 40,
                                                                             y: (g.y + GROUP_HEAD / 2) * view.scale + view.ty}; },
    ready: true,
  };
}

main();
