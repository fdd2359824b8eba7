/* cdcweb dashboard: dialogs, the lag / throughput / lineage charts and the watermark chart.
 * Charts read the REST API (session auth) and redraw in place; htmx refreshes the rest. */
(function () {
  "use strict";

  var STATE_COLOURS = {
    CREATED: "#94a3b8", SCHEDULED: "#3b82f6", RUNNING: "#16a34a", FINISHED: "#475569",
  };
  var LAYOUT = {
    margin: { l: 56, r: 16, t: 24, b: 36 }, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
    font: { family: "Inter, system-ui, sans-serif", size: 12, color: "#334155" },
    xaxis: { type: "date", gridcolor: "#e2e8f0" }, yaxis: { gridcolor: "#e2e8f0", rangemode: "tozero" },
    legend: { orientation: "h", y: -0.18, x: 0 }, hovermode: "closest",
  };
  var CONFIG = { displaylogo: false, responsive: true, modeBarButtonsToRemove: ["select2d", "lasso2d"] };

  /* Return a UTC time string Plotly reads without shifting it into the browser's zone. */
  function t(value) { return new Date(value).toISOString().slice(0, 23).replace("T", " "); }
  function layout(extra) { return Object.assign({}, JSON.parse(JSON.stringify(LAYOUT)), extra || {}); }
  function rows(data) {
    if (Array.isArray(data)) return data;
    return data.results || data.samples || data.series || [];
  }
  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { if (!r.ok) throw new Error(url + ": HTTP " + r.status); return r.json(); });
  }
  function duration(s) {
    if (s === null || s === undefined) return "—";
    s = Math.round(s);
    if (s < 60) return s + " s";
    var d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
    if (d) return d + " d " + h + " h";
    if (h) return h + " h " + m + " m";
    return m + " m " + (s % 60) + " s";
  }
  function showError(el, err) {
    el.innerHTML = "";
    var p = document.createElement("p");
    p.className = "muted chart-empty";
    p.textContent = err;
    el.appendChild(p);
  }

  /* ---- dialogs ---------------------------------------------------------------------- */
  document.addEventListener("click", function (e) {
    var opener = e.target.closest("[data-open-dialog]");
    if (!opener || opener.disabled) return;
    var dialog = document.getElementById(opener.getAttribute("data-open-dialog"));
    if (dialog && dialog.showModal) dialog.showModal();
  });

  /* A select marked data-autosubmit sends its form when changed (no inline handlers: CSP). */
  document.addEventListener("change", function (e) {
    if (e.target.matches && e.target.matches("select[data-autosubmit]") && e.target.form) e.target.form.submit();
  });

  /* ---- lag and throughput ----------------------------------------------------------- */
  function stateChanges(since) {
    var el = document.getElementById("state-changes");
    var all = el ? JSON.parse(el.textContent) : [];
    return all.filter(function (c) { return new Date(c.at) >= since; });
  }

  function annotate(changes) {
    return {
      shapes: changes.map(function (c) {
        return { type: "line", xref: "x", yref: "paper", x0: t(c.at), x1: t(c.at), y0: 0, y1: 1,
          line: { color: "#a855f7", width: 1, dash: "dot" } };
      }),
      annotations: changes.slice(-12).map(function (c) {
        return { x: t(c.at), xref: "x", y: 1, yref: "paper", yanchor: "bottom", showarrow: false,
          text: c.to_state, font: { size: 9, color: "#7e22ce" }, textangle: -30 };
      }),
    };
  }

  function throughputSeries(samples) {
    var x = [], y = [];
    for (var i = 1; i < samples.length; i++) {
      var dt = (new Date(samples[i].at) - new Date(samples[i - 1].at)) / 1000;
      var dr = samples[i].data_records - samples[i - 1].data_records;
      if (dt > 0 && dr >= 0) { x.push(t(samples[i].at)); y.push(dr / dt); }
    }
    return { x: x, y: y };
  }

  function drawLag(el, samples, since, until) {
    var x = samples.map(function (s) { return t(s.at); });
    function line(key, name, colour, dash) {
      return { type: "scattergl", mode: "lines", name: name, x: x, line: { color: colour, width: 2, dash: dash },
        y: samples.map(function (s) { return s[key]; }),
        hovertemplate: name + ": %{customdata}<extra></extra>",
        customdata: samples.map(function (s) { return duration(s[key]); }) };
    }
    var traces = [
      line("lag_seconds", "low-watermark lag", "#2563eb"),
      line("p95_partition_lag", "p95 partition lag", "#f59e0b", "dash"),
      line("max_partition_lag", "max partition lag", "#dc2626", "dot"),
    ];
    // A young stream's samples fill the chart instead of hugging the right edge of the range.
    var first = samples.length ? new Date(samples[0].at) : since;
    var from = first > since ? new Date(first.getTime() - 30000) : since;
    var extra = annotate(stateChanges(from));
    extra.xaxis = Object.assign({}, LAYOUT.xaxis, { range: [t(from), t(until || new Date())] });
    extra.margin = { l: 56, r: 16, t: 24, b: 60 };
    extra.yaxis = Object.assign({}, LAYOUT.yaxis, { title: { text: "seconds" } });
    Plotly.react(el, traces, layout(extra), CONFIG);
    var tp = throughputSeries(samples);
    var tpEl = document.getElementById("throughput-chart");
    if (tpEl) {
      Plotly.react(tpEl, [{ type: "scattergl", mode: "lines", name: "records/s", x: tp.x, y: tp.y,
        fill: "tozeroy", line: { color: "#0d9488", width: 2 } }],
      layout({ showlegend: false, yaxis: Object.assign({}, LAYOUT.yaxis, { title: { text: "records/s" } }) }), CONFIG);
    }
  }

  function setupLag(el) {
    var range = 3600;
    // ?since=&until= (an alert's evidence window) pins the chart until a range is picked.
    var query = new URLSearchParams(window.location.search);
    var pinned = query.get("since") && query.get("until") ?
      { since: new Date(query.get("since")), until: new Date(query.get("until")) } : null;
    function load() {
      var until = pinned ? pinned.until : new Date();
      var since = pinned ? pinned.since : new Date(until - range * 1000);
      var url = el.getAttribute("data-lag-url") + "?since=" + encodeURIComponent(since.toISOString()) +
        "&until=" + encodeURIComponent(until.toISOString());
      getJSON(url).then(function (data) {
        var samples = rows(data);
        if (!samples.length) { showError(el, "No lag samples in this range yet."); return; }
        drawLag(el, samples, since, pinned ? until : null);
      }).catch(function (err) { showError(el, "Lag series unavailable (" + err.message + ")."); });
    }
    document.querySelectorAll(".range").forEach(function (b) {
      b.classList.toggle("active", !pinned && Number(b.getAttribute("data-range")) === range);
      b.addEventListener("click", function () {
        pinned = null;
        range = Number(b.getAttribute("data-range"));
        document.querySelectorAll(".range").forEach(function (o) { o.classList.toggle("active", o === b); });
        load();
      });
    });
    load();
    setInterval(load, 10000);
  }

  /* ---- lineage ---------------------------------------------------------------------- */
  /* Order rows depth first from the roots, so every child sits right under a parent. */
  function dfsOrder(nodes, edges) {
    var byId = {}, children = {}, hasParent = {};
    nodes.forEach(function (n) { byId[n.id] = n; children[n.id] = []; });
    edges.forEach(function (e) {
      if (byId[e.parent] && byId[e.child]) { children[e.parent].push(e.child); hasParent[e.child] = true; }
    });
    function byStart(a, b) {
      return (byId[a].start_at < byId[b].start_at ? -1 : byId[a].start_at > byId[b].start_at ? 1 : 0) ||
        (byId[a].token < byId[b].token ? -1 : 1);
    }
    var roots = nodes.map(function (n) { return n.id; }).filter(function (id) { return !hasParent[id]; });
    roots.sort(byStart);
    var row = {}, order = [], stack = roots.slice().reverse();
    while (stack.length) {
      var id = stack.pop();
      if (row[id] !== undefined) continue;
      row[id] = order.length;
      order.push(byId[id]);
      var kids = children[id].slice().sort(byStart);
      for (var i = kids.length - 1; i >= 0; i--) if (row[kids[i]] === undefined) stack.push(kids[i]);
    }
    nodes.forEach(function (n) { if (row[n.id] === undefined) { row[n.id] = order.length; order.push(n); } });
    return { order: order, row: row, byId: byId };
  }

  function hoverText(n) {
    return "<b>" + n.token.slice(0, 32) + "</b>" + (n.label ? "<br>" + n.label : "") + "<br>" + n.state +
      (n.stalled ? " · STALLED" : "") +
      "<br>watermark " + (n.watermark || "—") + "<br>lag " + duration(n.lag_seconds) +
      "<br>records " + n.data_records + " · mods " + n.mods + " · heartbeats " + n.heartbeats +
      " · bytes " + n.bytes;
  }

  function lineageTraces(nodes, edges, holderId) {
    var laid = dfsOrder(nodes, edges), now = t(new Date()), perState = {};
    var width = Math.max(1, Math.min(10, 520 / Math.max(1, laid.order.length)));
    laid.order.forEach(function (n) {
      var tr = perState[n.state] || (perState[n.state] = { x: [], y: [], text: [], customdata: [] });
      var startMs = new Date(n.start_at).getTime(), endMs = n.end_at ? new Date(n.end_at).getTime() : Date.now();
      var start = t(startMs), end = n.end_at ? t(endMs) : now, mid = t((startMs + endMs) / 2), y = laid.row[n.id];
      var text = hoverText(n);
      tr.x.push(start, mid, end, null); tr.y.push(y, y, y, null);
      tr.text.push(text, text, text, null); tr.customdata.push(n.id, n.id, n.id, null);
    });
    var traces = Object.keys(perState).sort().map(function (state) {
      var d = perState[state];
      return { type: "scattergl", mode: "lines", name: state.toLowerCase(), x: d.x, y: d.y, text: d.text,
        customdata: d.customdata, hoverinfo: "text", connectgaps: false,
        line: { color: STATE_COLOURS[state] || "#888", width: width } };
    });
    var lx = [], ly = [];
    edges.forEach(function (e) {
      var p = laid.byId[e.parent], c = laid.byId[e.child];
      if (!p || !c) return;
      lx.push(t(p.end_at || c.start_at), t(c.start_at), null);
      ly.push(laid.row[p.id], laid.row[c.id], null);
    });
    traces.unshift({ type: "scattergl", mode: "lines", name: "split / merge", x: lx, y: ly, hoverinfo: "skip",
      line: { color: "rgba(100,116,139,0.45)", width: 1 } });
    var holder = holderId && laid.byId[holderId];
    if (holder) {
      traces.push({ type: "scattergl", mode: "markers", name: "holds the low watermark",
        x: [t(holder.watermark || holder.start_at)], y: [laid.row[holder.id]], text: [hoverText(holder)],
        customdata: [holder.id], hoverinfo: "text",
        marker: { symbol: "diamond", size: 12, color: "#dc2626", line: { color: "#fff", width: 1 } } });
    }
    return { traces: traces, rows: laid.order.length };
  }

  /* Return the id of the unfinished partition with the oldest watermark, and name it above the chart. */
  function lowWatermarkHolder(nodes) {
    var best = null;
    nodes.forEach(function (n) {
      if (n.state !== "FINISHED" && n.watermark && (!best || n.watermark < best.watermark)) best = n;
    });
    var caption = document.getElementById("lineage-holder");
    if (best && caption) {
      var link = document.createElement("a");
      link.href = document.getElementById("lineage-chart").getAttribute("data-partition-url").replace(/0\/$/, best.id + "/");
      link.textContent = best.token;
      caption.textContent = "Held back by partition ";
      caption.appendChild(link);
      caption.appendChild(document.createTextNode(" (watermark " + best.watermark + ", lag " + duration(best.lag_seconds) + ")."));
    }
    return best ? best.id : null;
  }

  function setupLineage(el) {
    var url = el.getAttribute("data-lineage-url");
    var partitionUrl = el.getAttribute("data-partition-url");
    var bound = false, timer = null;
    function load() {
      getJSON(url).then(function (data) {
        var nodes = data.nodes || [], edges = data.edges || [];
        if (!nodes.length) { showError(el, "No partitions yet."); return; }
        var holder = lowWatermarkHolder(nodes) || Number(el.getAttribute("data-holder")) || null;
        var built = lineageTraces(nodes, edges, holder);
        document.getElementById("lineage-count").textContent = nodes.length + " partitions, " + edges.length + " links";
        Plotly.react(el, built.traces, layout({
          yaxis: { autorange: "reversed", showticklabels: false, zeroline: false, showgrid: false,
            title: { text: "partitions (children under parents)" } },
          dragmode: "zoom", uirevision: "lineage",
        }), CONFIG);
        if (!bound) {
          bound = true;
          el.on("plotly_click", function (ev) {
            var id = ev.points && ev.points[0] && ev.points[0].customdata;
            if (id) window.location.href = partitionUrl.replace(/0\/$/, id + "/");
          });
        }
        // A huge lineage is redrawn only on reload; a small one follows the stream live.
        if (!timer && nodes.length < 3000) timer = setInterval(load, 15000);
      }).catch(function (err) { showError(el, "Lineage unavailable (" + err.message + ")."); });
    }
    load();
  }

  /* ---- partition page --------------------------------------------------------------- */
  function setupWatermark(el) {
    var points = JSON.parse(document.getElementById("watermark-history").textContent);
    Plotly.react(el, [{ type: "scatter", mode: "lines+markers", name: "watermark",
      x: points.map(function (p) { return t(p.at); }), y: points.map(function (p) { return t(p.watermark); }),
      text: points.map(function (p) { return p.source; }), hovertemplate: "%{y}<br>%{text}<extra></extra>",
      line: { color: "#2563eb", shape: "hv" } }],
    layout({ showlegend: false, margin: { l: 80, r: 16, t: 8, b: 48 },
      yaxis: { type: "date", gridcolor: "#e2e8f0", tickformat: "%H:%M:%S" },
      xaxis: { type: "date", gridcolor: "#e2e8f0", title: { text: "recorded at" } } }), CONFIG);
  }

  /* ---- forms that ask before they submit (the Content-Security-Policy forbids onsubmit) -- */
  document.addEventListener("submit", function (event) {
    var question = event.target.getAttribute && event.target.getAttribute("data-confirm-submit");
    if (question && !window.confirm(question)) event.preventDefault();
  });

  function start() {
    if (!window.Plotly) return;
    var lag = document.getElementById("lag-chart");
    if (lag) setupLag(lag);
    var lineage = document.getElementById("lineage-chart");
    if (lineage) setupLineage(lineage);
    var wm = document.getElementById("watermark-chart");
    if (wm) setupWatermark(wm);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
