// Draws the neighbourhood graph from the JSON the page carries (no request of its own).
// Up to `data-large` nodes: Cytoscape.js, labels and a force layout for small ones. Past it:
// rings by hop count on a plain canvas, one path for the links and one per colour for the
// nodes, redrawn on pan and zoom: 2,000 nodes draw in milliseconds, where Cytoscape's
// per-element styling took seconds.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const holder = document.getElementById("graph");
  const data = document.getElementById("graph-data");
  if (!holder || !data) return;
  const found = JSON.parse(data.textContent);
  const started = performance.now();
  const done = () => {
    // Milliseconds the drawing took (bench/dashboard.py reads it).
    holder.dataset.ready = String(Math.round(performance.now() - started));
    const status = document.getElementById("graph-status");
    if (status) status.textContent += " Drawn; select an entity to open it.";
  };
  if (found.nodes.length > Number(holder.dataset.large)) {
    drawLarge(holder, found, done);
  } else if (typeof cytoscape !== "undefined") {
    drawSmall(holder, found, done);
  }
});

function open(holder, id) {
  window.location.href = holder.dataset.base + "/graph?entity=" + encodeURIComponent(id);
}

function drawSmall(holder, found, done) {
  // A force layout reads best but costs seconds past a few dozen nodes; past it, rings: by
  // hop count (the centre, then depth 1, 2, 3), or, for a whole graph where every node is at
  // depth 0, by how many links a node has (the busiest in the middle), computed in one pass.
  // The force layout counts each label as part of its node and keeps nodes well apart, so
  // on a small graph no two labels overlap.
  const layout = found.nodes.length <= 60
    ? { name: "cose", animate: false, randomize: false, numIter: 1000, padding: 30,
        nodeDimensionsIncludeLabels: true, idealEdgeLength: () => 160,
        nodeRepulsion: () => 80000, nodeOverlap: 40, componentSpacing: 120, gravity: 0.5 }
    : { name: "concentric", animate: false, minNodeSpacing: 4, levelWidth: () => 1,
        concentric: found.whole ? (n) => n.degree() : (n) => 4 - n.data("depth") };
  const label = { "text-background-color": "#fff", "text-background-opacity": 0.85,
    "text-background-padding": 2, "text-background-shape": "roundrectangle" };
  const cy = cytoscape({
    container: holder,
    elements: {
      nodes: found.nodes.map((n) => ({ data: n, classes: n.centre ? "centre" : "" })),
      edges: found.edges.map((e) => ({ data: e })),
    },
    layout,
    minZoom: 0.05,
    maxZoom: 1.8,
    style: [
      // Names under their node, on a white ground: readable where a link passes behind.
      { selector: "node", style: { "background-color": "#0b5cad", label: "data(label)",
        "font-size": 11, color: "#1b1f24", width: 14, height: 14, "text-valign": "bottom",
        "text-margin-y": 3, "text-wrap": "ellipsis", "text-max-width": 140, ...label } },
      { selector: "node.centre", style: { "background-color": "#a4161a", width: 22, height: 22,
        "font-weight": 700 } },
      // Bezier: two links between the same pair are drawn apart, their labels readable.
      { selector: "edge", style: { width: 1, "line-color": "#8a94a3", "curve-style": "bezier",
        "target-arrow-shape": "triangle", "target-arrow-color": "#8a94a3", "arrow-scale": 0.7,
        label: "data(label)", "font-size": 9, color: "#4a5563", "text-rotation": "autorotate",
        ...label } },
    ],
  });
  cy.on("tap", "node", (event) => open(holder, event.target.id()));
  cy.ready(done);
}

// Rings by hop count: the centre in the middle, each depth on a ring wide enough that its
// nodes sit about 12px apart.
function rings(nodes) {
  const byDepth = new Map();
  for (const n of nodes) {
    if (!byDepth.has(n.depth)) byDepth.set(n.depth, []);
    byDepth.get(n.depth).push(n);
  }
  if (byDepth.size === 1 && nodes.length > 1) return sunflower(nodes);
  let radius = 0;
  for (const depth of [...byDepth.keys()].sort((a, b) => a - b)) {
    const ring = byDepth.get(depth);
    radius = depth === 0 ? 0 : Math.max(radius + 80, (ring.length * 12) / (2 * Math.PI));
    ring.forEach((n, i) => {
      const angle = (2 * Math.PI * i) / ring.length;
      n.x = radius * Math.cos(angle);
      n.y = radius * Math.sin(angle);
    });
  }
  return radius;
}

// A whole graph (every node at depth 0, the most salient first): a sunflower spiral, the
// first nodes in the middle, each about 14px from its neighbours.
function sunflower(nodes) {
  const golden = Math.PI * (3 - Math.sqrt(5));
  nodes.forEach((n, i) => {
    const r = 8 * Math.sqrt(i);
    n.x = r * Math.cos(i * golden);
    n.y = r * Math.sin(i * golden);
  });
  return 8 * Math.sqrt(nodes.length);
}

function drawLarge(holder, found, done) {
  const outer = rings(found.nodes) + 20;
  const at = new Map(found.nodes.map((n) => [n.id, n]));
  const canvas = document.createElement("canvas");
  holder.appendChild(canvas);
  const ratio = window.devicePixelRatio || 1;
  const width = holder.clientWidth, height = holder.clientHeight;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  canvas.className = "graph-canvas";
  const view = { scale: Math.min(width, height) / (2 * outer), x: width / 2, y: height / 2 };
  const g = canvas.getContext("2d");
  const draw = () => {
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    g.setTransform(ratio * view.scale, 0, 0, ratio * view.scale, ratio * view.x, ratio * view.y);
    g.lineWidth = 1 / view.scale;
    g.strokeStyle = "#8a94a3";
    g.beginPath();
    for (const e of found.edges) {
      const a = at.get(e.source), b = at.get(e.target);
      g.moveTo(a.x, a.y);
      g.lineTo(b.x, b.y);
    }
    g.stroke();
    const r = Math.max(3, 5 / view.scale);
    g.fillStyle = "#0b5cad";
    g.beginPath();
    for (const n of found.nodes) {
      if (n.centre) continue;
      g.moveTo(n.x + r, n.y);
      g.arc(n.x, n.y, r, 0, 2 * Math.PI);
    }
    g.fill();
    g.font = `${12 / view.scale}px sans-serif`;
    for (const n of found.nodes.filter((c) => c.centre)) {
      g.fillStyle = "#a4161a";
      g.beginPath();
      g.arc(n.x, n.y, r * 2, 0, 2 * Math.PI);
      g.fill();
      g.fillStyle = "#1b1f24";
      g.fillText(n.label, n.x + r * 2.5, n.y);
    }
    // Zoomed in far enough that names fit between nodes: the names of those on screen (at
    // most 400, so a wheel turn stays smooth).
    if (view.scale >= 2) {
      g.fillStyle = "#1b1f24";
      let named = 0;
      for (const n of found.nodes) {
        const sx = n.x * view.scale + view.x, sy = n.y * view.scale + view.y;
        if (n.centre || sx < 0 || sy < 0 || sx > width || sy > height) continue;
        g.fillText(n.label, n.x + r * 1.5, n.y);
        if (++named >= 400) break;
      }
    }
  };
  interact(canvas, view, draw, (px, py) => {
    // The node nearest the pointer, within 8px on screen.
    let best = null, bestD = 64;
    for (const n of found.nodes) {
      const dx = n.x * view.scale + view.x - px, dy = n.y * view.scale + view.y - py;
      const d = dx * dx + dy * dy;
      if (d < bestD) { best = n; bestD = d; }
    }
    if (best) open(holder, best.id);
  });
  draw();
  requestAnimationFrame(done);
}

function interact(canvas, view, draw, pick) {
  let dragging = null, moved = false, queued = false;
  const redraw = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; draw(); });
  };
  canvas.addEventListener("pointerdown", (e) => {
    dragging = { x: e.clientX, y: e.clientY };
    moved = false;
    canvas.setPointerCapture(e.pointerId);
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!dragging) return;
    const dx = e.clientX - dragging.x, dy = e.clientY - dragging.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
    view.x += dx;
    view.y += dy;
    dragging = { x: e.clientX, y: e.clientY };
    redraw();
  });
  canvas.addEventListener("pointerup", (e) => {
    dragging = null;
    if (!moved) {
      const box = canvas.getBoundingClientRect();
      pick(e.clientX - box.left, e.clientY - box.top);
    }
  });
  canvas.addEventListener("wheel", (e) => {
    e.preventDefault();
    const box = canvas.getBoundingClientRect();
    const px = e.clientX - box.left, py = e.clientY - box.top;
    const factor = Math.exp(-e.deltaY / 500);
    const scale = Math.min(20, Math.max(0.02, view.scale * factor));
    view.x = px - ((px - view.x) * scale) / view.scale;
    view.y = py - ((py - view.y) * scale) / view.scale;
    view.scale = scale;
    redraw();
  }, { passive: false });
}
