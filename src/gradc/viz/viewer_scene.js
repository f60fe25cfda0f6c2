// Op records: [type, kind, row, x, loss, paired block, paired op, sub-block, inputs, outputs, attributes].
// The scene: every op, var node, group and edge of the program at absolute positions, recomputed when a
// sub-block is collapsed or expanded. Each block comes laid out by gradc (rows, x within the block); a
// sub-block is a group inserted below the row of the op that runs it.
"use strict";

const S = DATA.strings;
const SIZE = DATA.sizes;
const PILL_W = SIZE.cell - 16, GROUP_HEAD = 26, GROUP_PAD = 14, LONG_EDGE = 2400;

function buildIndex() {
  const blocks = DATA.blocks;
  const children = blocks.map(() => []);     // block -> sub-blocks inserted into it, [row, op x, sub]
  for (const b of blocks) {
    if (b.idx !== 0 && b.run_by && blocks[b.run_by[0]]) {
      const host = blocks[b.run_by[0]], op = host.ops[b.run_by[1]];
      children[host.idx].push([op[2], op[3], b.idx]);
    }
  }
  for (const list of children) list.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const ops = [], pills = [];
  const varsByName = new Map();             // name -> [[block, var record]]
  const writers = new Map(), readers = new Map();
  for (const b of blocks) {
    b.opNodes = b.ops.map((op, i) => { const n = {t: 0, b: b.idx, i, x: 0, y: 0, w: SIZE.cell, h: SIZE.op, op};
      ops.push(n); return n; });
    b.pillNodes = b.pills.map((p, i) => { const n = {t: 1, b: b.idx, i, x: 0, y: 0, w: PILL_W, h: SIZE.pill,
      name: S[p[0]], writer: p[4]}; pills.push(n); return n; });
    for (const v of b.vars) {
      const name = S[v[0]];
      if (!varsByName.has(name)) varsByName.set(name, []);
      varsByName.get(name).push([b.idx, v]);
    }
    b.inPills = b.ops.map(() => []); b.outPills = b.ops.map(() => []); b.pillOut = b.pills.map(() => []);
    for (let e = 0; e < b.edges.length; e += 2) { b.inPills[b.edges[e + 1]].push(b.edges[e]); b.pillOut[b.edges[e]].push(b.edges[e + 1]); }
    b.pills.forEach((p, k) => { if (p[4] >= 0) b.outPills[p[4]].push(k); });
    b.ops.forEach((op, i) => {
      for (const [, args] of op[8]) for (const a of args) push(readers, S[a], [b.idx, i]);
      for (const [, args] of op[9]) for (const a of args) push(writers, S[a], [b.idx, i]);
    });
  }
  const gradsOf = new Map();                 // forward op "b:i" -> grad ops
  for (const n of ops) if (n.op[5] >= 0) push(gradsOf, n.op[5] + ":" + n.op[6], [n.b, n.i]);
  return {children, ops, pills, varsByName, writers, readers, gradsOf};
}

function push(map, key, value) {
  if (!map.has(key)) map.set(key, []);
  map.get(key).push(value);
}

function compose(index, collapsed) {
  const groups = [], placed = new Set();
  function place(bidx, ox, oy, depth) {
    placed.add(bidx);
    const b = DATA.blocks[bidx];
    const top = oy + (bidx === 0 ? 0 : GROUP_HEAD);
    const rowY = new Array(b.rows.length);
    let y = top, k = 0;
    const kids = index.children[bidx];
    let width = b.width;
    for (let r = 0; r < b.rows.length; r++) {
      rowY[r] = y;
      y += b.rows[r][1];
      while (k < kids.length && kids[k][0] === r) {
        const [, x, sub] = kids[k++];
        if (placed.has(sub)) continue;            // a malformed program whose blocks run each other
        const g = {b: sub, x: ox + x, y: y, w: DATA.blocks[sub].width + 2 * GROUP_PAD, h: GROUP_HEAD, depth: depth + 1,
                   collapsed: collapsed.has(sub)};
        groups.push(g);
        if (!g.collapsed) g.h = place(sub, g.x + GROUP_PAD, y, depth + 1) + GROUP_PAD;
        else hide(sub);
        width = Math.max(width, x + g.w);
        y += g.h + 24;
      }
    }
    for (const n of b.opNodes) { n.x = ox + n.op[3]; n.y = rowY[n.op[2]] + b.rows[n.op[2]][0]; n.hidden = false; }
    b.pills.forEach((p, i) => { const n = b.pillNodes[i]; n.x = ox + p[2] + (SIZE.cell - PILL_W) / 2;
      n.y = rowY[p[1]] + p[3]; n.hidden = false; });
    b.placedWidth = width;
    return y - oy;
  }
  function hide(bidx) {
    placed.add(bidx);
    const b = DATA.blocks[bidx];
    for (const n of b.opNodes) n.hidden = true;
    for (const n of b.pillNodes) n.hidden = true;
    for (const [, , sub] of index.children[bidx]) if (!placed.has(sub)) hide(sub);
  }
  let height = place(0, 0, 0, 0);
  for (const {idx: sub} of DATA.blocks) {   // blocks no op of block 0's tree runs: at the bottom
    if (placed.has(sub)) continue;
    const g = {b: sub, x: 0, y: height + 30, w: DATA.blocks[sub].width + 2 * GROUP_PAD, h: GROUP_HEAD, depth: 1,
               collapsed: collapsed.has(sub), orphan: true};
    groups.push(g);
    if (!g.collapsed) g.h = place(sub, GROUP_PAD, g.y, 1) + GROUP_PAD; else hide(sub);
    height = g.y + g.h;
  }
  const nodes = index.ops.concat(index.pills).filter(n => !n.hidden).sort((a, b) => a.y - b.y);
  const edges = [], stubs = [], links = [];
  for (const b of DATA.blocks) {
    for (let e = 0; e < b.edges.length; e += 2) {
      const from = b.pillNodes[b.edges[e]], to = b.opNodes[b.edges[e + 1]];
      if (from.hidden || to.hidden) continue;
      const item = {from, to, y0: Math.min(from.y, to.y), y1: Math.max(from.y + from.h, to.y)};
      (item.y1 - item.y0 > LONG_EDGE ? stubs : edges).push(item);
    }
  }
  for (const n of index.ops) {
    if (n.hidden || n.op[5] < 0) continue;
    const f = DATA.blocks[n.op[5]].opNodes[n.op[6]];
    if (f.hidden) continue;
    links.push({from: n, to: f, y0: Math.min(n.y, f.y), y1: Math.max(n.y, f.y) + SIZE.op,
                long: Math.abs(n.y - f.y) > LONG_EDGE});
  }
  edges.sort((a, b) => a.y0 - b.y0);
  stubs.sort((a, b) => a.to.y - b.to.y);
  links.sort((a, b) => a.y0 - b.y0);
  const width = Math.max(DATA.blocks[0].placedWidth, ...groups.map(g => g.x + g.w));
  return {nodes, edges, stubs, links, groups, width, height};
}

// first index whose key(item) >= value, in an array sorted by key
function lowerBound(items, value, key) {
  let lo = 0, hi = items.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (key(items[mid]) < value) lo = mid + 1; else hi = mid; }
  return lo;
}
