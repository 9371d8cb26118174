// Operator page: the room's live figures from Caddy's admin API (through
// the shop) every second, charts of the last two minutes, and controls.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const N = 120;
  const series = { admit: [], queue: [], speed: [], outcomes: {} };
  const colours = { admit: "#2e9e5b", wait: "#1a5fd0", busy: "#9ac23c", early: "#f0a030", deferred: "#c07a00", invalid: "#b00020", reused: "#8a4fff", closed: "#505a68", unavailable: "#000" };
  let last = null;

  function push(arr, v) { arr.push(v); if (arr.length > N) arr.shift(); }

  function parseMetrics(text) {
    const out = { attempts: {}, admissions: 0 };
    for (const line of text.split("\n")) {
      // The admit poll's answers by outcome, summed over their reasons.
      let m = line.match(/^fairgate_admission_attempts_total\{([^}]*)\} ([0-9.e+]+)/);
      if (m && m[1].includes('endpoint="admit"') && m[1].includes('room="sale"')) {
        const outcome = (m[1].match(/outcome="([a-z_]+)"/) || [])[1];
        if (outcome) out.attempts[outcome] = (out.attempts[outcome] || 0) + Number(m[2]);
      }
      m = line.match(/^fairgate_admissions_total\{room="sale"\} ([0-9.e+]+)/);
      if (m) out.admissions = Number(m[1]);
    }
    return out;
  }

  function chart(svg, lines, fmt) {
    const w = svg.clientWidth || 400, h = svg.clientHeight || 160, pad = 34;
    svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    svg.textContent = "";
    const max = Math.max(1e-9, ...lines.flatMap((l) => l.data));
    const ns = "http://www.w3.org/2000/svg";
    const add = (name, attrs) => { const e = document.createElementNS(ns, name); for (const k in attrs) e.setAttribute(k, attrs[k]); svg.appendChild(e); return e; };
    add("line", { x1: pad, y1: h - 16, x2: w, y2: h - 16, class: "axis" });
    add("text", { x: 2, y: 12 }).textContent = fmt(max);
    add("text", { x: 2, y: h - 18 }).textContent = "0";
    add("text", { x: w - 60, y: h - 2 }).textContent = "now";
    add("text", { x: pad, y: h - 2 }).textContent = "−2 min";
    for (const l of lines) {
      if (l.data.length < 2) continue;
      const pts = l.data.map((v, i) => `${pad + (i + N - l.data.length) * (w - pad) / (N - 1)},${h - 16 - (v / max) * (h - 30)}`);
      add("polyline", { points: pts.join(" "), fill: "none", stroke: l.colour, "stroke-width": 2 });
    }
  }

  async function poll() {
    try {
      const [room, metrics] = await Promise.all([
        fetch("/operator/api/rooms/sale").then((r) => r.json()),
        fetch("/operator/api/metrics").then((r) => r.text()),
      ]);
      const m = parseMetrics(metrics);
      const now = Date.now();
      const badge = $("state");
      badge.textContent = room.state;
      badge.className = "badge " + room.state;
      $("f-rate").textContent = room.rate.toFixed(1) + " /s";
      $("f-speed").textContent = room.clock_speed ? room.clock_speed.toFixed(4) + " (τ ≈ " + Math.round(1 / room.clock_speed) + " s)" : "stopped";
      $("f-waiting").textContent = Math.round(room.waiting);
      // Passes presented within the active window; "of" the capacity when the room is sized by it.
      $("f-active").textContent = Math.round(room.site.active) + (room.site.capacity > 0 ? " of " + room.site.capacity + " (capacity)" : "");
      $("f-estimate").textContent = room.estimate_seconds != null ? Math.round(room.estimate_seconds) + " s" : "unknown";
      $("f-bucket").textContent = room.bucket_level.toFixed(1);
      $("f-used").textContent = room.used_tokens;
      // Lanes (docs/FAIRNESS.md): present only when the room has priority lanes.
      $("lanes").hidden = !room.lanes;
      $("lane-rows").replaceChildren(...(room.lanes || []).map((l) => {
        const tr = document.createElement("tr");
        for (const v of [l.lane || "default", Math.round(l.share * 100) + " %", l.rate.toFixed(2) + " /s", Math.round(l.waiting), l.admitted]) {
          tr.appendChild(document.createElement("td")).textContent = v;
        }
        return tr;
      }));
      if (document.activeElement !== $("rate")) $("rate").value = room.rate;
      if (last) {
        const dt = (now - last.t) / 1000;
        push(series.admit, Math.max(0, (m.admissions - last.m.admissions) / dt));
        for (const k of new Set([...Object.keys(m.attempts), ...Object.keys(series.outcomes)])) {
          series.outcomes[k] = series.outcomes[k] || [];
          push(series.outcomes[k], Math.max(0, ((m.attempts[k] || 0) - (last.m.attempts[k] || 0)) / dt));
        }
      }
      push(series.queue, room.waiting);
      push(series.speed, room.clock_speed);
      last = { t: now, m };
      chart($("chart-admit"), [{ data: series.admit, colour: colours.admit }], (v) => v.toFixed(1));
      chart($("chart-queue"), [{ data: series.queue, colour: colours.wait }], (v) => Math.round(v));
      chart($("chart-speed"), [{ data: series.speed, colour: "#f07d1a" }], (v) => v.toFixed(4));
      chart($("chart-outcomes"), Object.entries(series.outcomes).map(([k, d]) => ({ data: d, colour: colours[k] || "#999" })), (v) => v.toFixed(1));
      $("outcome-legend").innerHTML = Object.keys(series.outcomes).sort()
        .map((k) => `<li><span class="sw" style="background:${colours[k] || "#999"}"></span>${k}</li>`).join("");
    } catch (e) {
      $("msg").textContent = "Admin API unreachable; retrying.";
    }
  }

  async function change(body, done) {
    const r = await fetch("/operator/api/rooms/sale", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await r.json().catch(() => ({}));
    $("msg").textContent = r.ok ? done : (data.error ? data.error.message : "Change refused.");
    poll();
  }

  $("pause").addEventListener("click", () => change({ state: "paused" }, "Paused: nobody is admitted; everyone keeps their place."));
  $("resume").addEventListener("click", () => change({ state: "queue" }, "Resumed."));
  $("apply").addEventListener("click", () => change({ rate: Number($("rate").value) }, "Rate changed; the clock follows without reordering anyone."));
  poll();
  setInterval(poll, 1000);
})();
