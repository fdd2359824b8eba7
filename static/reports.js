/* Report page charts: Plotly over the result tables embedded in the page (#report-charts). */
(function () {
  "use strict";

  var LAYOUT = {
    margin: { l: 56, r: 16, t: 24, b: 40 }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: "Inter, system-ui, sans-serif", size: 12, color: "#334155" },
    yaxis: { gridcolor: "#e2e8f0", rangemode: "tozero" }, legend: { orientation: "h", y: -0.2, x: 0 },
  };
  var CONFIG = { displaylogo: false, responsive: true };

  /* Return a UTC time string Plotly reads without shifting it into the browser's zone. */
  function t(value) { return String(value).replace("T", " ").replace("Z", ""); }
  function layout(extra) { return Object.assign({}, JSON.parse(JSON.stringify(LAYOUT)), extra || {}); }
  function empty(id, text) {
    var el = document.getElementById(id);
    if (el) el.innerHTML = '<p class="muted chart-empty">' + text + "</p>";
  }
  function byKey(rows, key) {
    var groups = {};
    rows.forEach(function (r) { (groups[r[key]] = groups[r[key]] || []).push(r); });
    return groups;
  }

  function throughput(rows) {
    if (!rows.length) return empty("chart-throughput", "No data in this range.");
    var traces = Object.entries(byKey(rows, "table_name")).map(function (e) {
      return { type: "bar", name: e[0], x: e[1].map(function (r) { return t(r.minute); }),
        y: e[1].map(function (r) { return r.mods; }),
        customdata: e[1].map(function (r) { return [r.records, r.transactions, r.bytes]; }),
        hovertemplate: "%{x}<br>%{y} mods, %{customdata[0]} records, %{customdata[1]} tx, %{customdata[2]} B" };
    });
    Plotly.newPlot("chart-throughput", traces,
      layout({ barmode: "stack", xaxis: { type: "date" }, yaxis: { title: "mods / minute", rangemode: "tozero" } }), CONFIG);
  }

  function latency(rows) {
    if (!rows.length) return empty("chart-latency", "No data in this range.");
    var x = rows.map(function (r) { return t(r.minute); });
    var traces = ["p50", "p95", "p99", "max"].map(function (p) {
      return { type: "scatter", mode: "lines", name: p, x: x,
        y: rows.map(function (r) { return r[p + "_seconds"]; }) };
    });
    Plotly.newPlot("chart-latency", traces,
      layout({ xaxis: { type: "date" }, yaxis: { title: "seconds", rangemode: "tozero" } }), CONFIG);
  }

  function shape(rows) {
    var groups = byKey(rows, "measure");
    ["records", "partitions", "mods"].forEach(function (m) {
      var g = groups[m] || [];
      if (!g.length) return empty("chart-shape-" + m, "No transactions.");
      Plotly.newPlot("chart-shape-" + m, [{ type: "bar", name: m, x: g.map(function (r) { return r.value; }),
        y: g.map(function (r) { return r.transactions; }) }],
        layout({ showlegend: false, margin: { l: 48, r: 8, t: 16, b: 44 },
          xaxis: { type: "category", title: { text: m + " per transaction", font: { size: 12 } } } }),
        Object.assign({}, CONFIG, { displayModeBar: false }));
    });
  }

  function cost(rows) {
    if (!rows.length) return empty("chart-cost", "No data in this range.");
    var traces = Object.entries(byKey(rows, "table_name")).map(function (e) {
      return { type: "bar", name: e[0], x: e[1].map(function (r) { return r.day; }),
        y: e[1].map(function (r) { return r.total_usd_high; }),
        customdata: e[1].map(function (r) { return [r.total_usd_low, r.storage_usd]; }),
        hovertemplate: "%{x}<br>%{y:.4f} USD (low %{customdata[0]:.4f}, storage %{customdata[1]:.6f})" };
    });
    Plotly.newPlot("chart-cost", traces,
      layout({ barmode: "stack", xaxis: { type: "category" }, yaxis: { title: "USD / day", rangemode: "tozero" } }), CONFIG);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var el = document.getElementById("report-charts");
    if (!el || !window.Plotly) return;
    var charts = JSON.parse(el.textContent);
    throughput(charts.throughput || []);
    latency(charts.latency_by_minute || []);
    shape(charts.transaction_shape || []);
    cost(charts.cost || []);
  });
})();
