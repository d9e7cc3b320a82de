// Draws the neighbourhood graph from the JSON the page carries (no request of its own).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const holder = document.getElementById("graph");
  const data = document.getElementById("graph-data");
  if (!holder || !data || typeof cytoscape === "undefined") return;
  const found = JSON.parse(data.textContent);
  const big = found.nodes.length > 300;
  // A force layout reads best but costs seconds past a few dozen nodes; rings by hop count
  // (the centre, then depth 1, 2, 3) are computed in one pass.
  const layout = found.nodes.length <= 60
    ? { name: "cose", animate: false, numIter: 300 }
    : { name: "concentric", animate: false, concentric: (n) => 4 - n.data("depth"),
        levelWidth: () => 1, minNodeSpacing: 4 };
  const started = performance.now();
  const cy = cytoscape({
    container: holder,
    elements: {
      nodes: found.nodes.map((n) => ({ data: n, classes: n.centre ? "centre" : "" })),
      edges: found.edges.map((e) => ({ data: e })),
    },
    layout,
    // Large graphs: labels hidden and a cached texture while panning or zooming.
    textureOnViewport: big,
    hideEdgesOnViewport: big,
    minZoom: 0.05,
    maxZoom: 1.5,
    style: [
      { selector: "node", style: { "background-color": "#0b5cad", label: big ? "" : "data(label)",
        "font-size": 10, color: "#1b1f24", width: 14, height: 14 } },
      { selector: "node.centre", style: { "background-color": "#a4161a", width: 22, height: 22,
        label: "data(label)" } },
      { selector: "edge", style: { width: 1, "line-color": "#8a94a3", "curve-style": "haystack",
        label: big ? "" : "data(label)", "font-size": 8, color: "#4a5563" } },
    ],
  });
  cy.on("tap", "node", (event) => {
    window.location.href = holder.dataset.base + "/graph?entity=" + encodeURIComponent(event.target.id());
  });
  cy.ready(() => {
    // Milliseconds cytoscape took to draw (bench/dashboard.py reads it).
    holder.dataset.ready = String(Math.round(performance.now() - started));
    const status = document.getElementById("graph-status");
    if (status) status.textContent += " Drawn; select an entity to open it.";
  });
});
