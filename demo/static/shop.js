// The demo ticket shop: overview map → section seat map → hold → checkout →
// confirm. Reads go to the public, cached API; writes go to the session,
// which the pass (forwarded by the waiting room) authorises.
(() => {
  "use strict";
  const shop = document.getElementById("shop");
  const event = shop.dataset.event;
  const session = shop.dataset.session;
  const $ = (id) => document.getElementById(id);
  const svgNS = "http://www.w3.org/2000/svg";
  let sections = [], current = null, seatsById = {}, selected = new Set(), mine = [], state = null, deadline = 0;

  function notice(text) { $("notice").textContent = text; }
  const money = (cents) => "€" + (cents / 100).toFixed(0);
  function el(name, attrs, parent) {
    const e = document.createElementNS(svgNS, name);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (parent) parent.appendChild(e);
    return e;
  }

  async function api(method, path, body) {
    const res = await fetch(path, {
      method, credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "Idempotency-Key": crypto.randomUUID() },
      body: body ? JSON.stringify(body) : undefined,
    });
    let data = null;
    try { data = await res.json(); } catch (_) { /* empty */ }
    return { status: res.status, data };
  }

  function level(c) {
    if (!c.total || c.available === 0) return "none";
    const r = c.available / c.total;
    return r > 0.6 ? "lots" : r > 0.25 ? "some" : "few";
  }
  const colour = { lots: "var(--lots)", some: "var(--some)", few: "var(--few)", none: "var(--none)" };

  async function loadOverview() {
    const r = await api("GET", `/api/events/${event}`);
    if (r.status !== 200) { notice("The event could not be loaded; retrying…"); return; }
    sections = r.data.sections;
    const svg = $("stadium");
    svg.textContent = "";
    el("rect", { x: 330, y: 215, width: 340, height: 270, rx: 12, class: "pitch" }, svg);
    el("rect", { x: 345, y: 230, width: 310, height: 240, class: "pitch-line" }, svg);
    el("line", { x1: 500, y1: 230, x2: 500, y2: 470, class: "pitch-line" }, svg);
    for (const s of sections) {
      const lv = level(s.counts);
      const p = el("path", { d: s.shape, fill: colour[lv], tabindex: 0, role: "button",
        "aria-label": `${s.name}: ${s.counts.available} of ${s.counts.total} seats available, from ${money(s.price)}` }, svg);
      el("title", {}, p).textContent = `${s.name} · ${s.counts.available} left · ${money(s.price)}`;
      p.addEventListener("click", () => openSection(s.id));
      p.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openSection(s.id); } });
      const box = p.getBBox();
      el("text", { x: box.x + box.width / 2, y: box.y + box.height / 2 }, svg).textContent = s.id;
    }
  }

  async function openSection(id) {
    current = sections.find((s) => s.id === id);
    selected.clear();
    $("overview").hidden = true;
    $("section").hidden = false;
    $("section-h").textContent = `${current.name} · ${money(current.price)} a seat`;
    await loadSeats();
    $("back").focus();
  }

  async function loadSeats() {
    if (!current) return;
    const r = await api("GET", `/api/events/${event}/sections/${current.id}`);
    if (r.status !== 200) return;
    seatsById = {};
    const rows = new Map();
    for (const s of r.data.seats) {
      seatsById[s.id] = s;
      const key = `${s.block}-${s.row}`;
      if (!rows.has(key)) rows.set(key, []);
      rows.get(key).push(s);
    }
    const maxSeats = Math.max(...[...rows.values()].map((r) => r.length));
    const size = 16, gap = 4, left = 44;
    const svg = document.createElementNS(svgNS, "svg");
    svg.setAttribute("width", left + maxSeats * (size + gap));
    svg.setAttribute("height", rows.size * (size + gap) + 10);
    svg.setAttribute("role", "group");
    svg.setAttribute("aria-label", `Seats of ${current.name}`);
    let y = 4;
    for (const [key, row] of rows) {
      row.sort((a, b) => a.number - b.number);
      el("text", { x: 2, y: y + 12, class: "rowlabel" }, svg).textContent = "Row " + row[0].row;
      row.forEach((s, i) => {
        const isMine = mine.includes(s.id);
        const free = s.status === "available";
        const fill = isMine ? "var(--mine)" : selected.has(s.id) ? "var(--sel)" : free ? "var(--lots)" : "var(--none)";
        const c = el("rect", { x: left + i * (size + gap), y, width: size, height: size, rx: 4, fill, class: "seat",
          "data-seat": s.id, tabindex: free ? 0 : -1, role: "checkbox", "aria-checked": selected.has(s.id) || isMine,
          "aria-label": `Row ${s.row} seat ${s.number}: ${isMine ? "held by you" : free ? "available" : "taken"}` }, svg);
        if (free && !isMine) {
          const toggle = () => { selected.has(s.id) ? selected.delete(s.id) : selected.add(s.id); loadSeatsFromCache(); };
          c.addEventListener("click", toggle);
          c.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); toggle(); } });
        }
      });
      y += size + gap;
    }
    const map = $("seatmap");
    map.textContent = "";
    map.appendChild(svg);
    $("hold").disabled = selected.size === 0 || !canHold();
    $("hold").textContent = selected.size ? `Hold ${selected.size} selected` : "Hold selected";
    $("best").disabled = !canHold();
  }

  function loadSeatsFromCache() {
    // Re-render with the last seat map, keeping focus where it was.
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.seat : null;
    loadSeats().then(() => { if (focused) { const e = document.querySelector(`[data-seat="${focused}"]`); if (e) e.focus(); } });
  }

  const canHold = () => session && state === "reservation";

  async function hold(body) {
    const r = await api("POST", `/api/sessions/${session}/holds`, body);
    if (r.status === 200) {
      selected.clear();
      showSession(r.data);
      notice(`Held: ${r.data.seats.length} seat(s). They are yours until the timer runs out.`);
    } else if (r.status === 409 && r.data.error.seats) {
      notice(`Someone was quicker: ${r.data.error.seats.join(", ")} just went. Pick again.`);
      for (const s of r.data.error.seats) selected.delete(s);
    } else {
      notice(r.data && r.data.error ? r.data.error.message : `Hold failed (${r.status}).`);
    }
    await loadSeats();
  }

  function showSession(s) {
    state = s.state;
    mine = s.seats || [];
    deadline = Date.parse(s.expires_at);
    const list = $("held");
    list.textContent = "";
    for (const id of mine) {
      const li = document.createElement("li");
      li.textContent = id.replace(/-/g, " · ");
      if (state === "reservation") {
        const b = document.createElement("button");
        b.type = "button";
        b.textContent = "Release";
        b.setAttribute("aria-label", "Release " + id);
        b.addEventListener("click", async () => {
          const r = await api("DELETE", `/api/sessions/${session}/holds/${id}`);
          if (r.status === 200) showSession(r.data);
          loadSeats();
        });
        li.appendChild(b);
      }
      list.appendChild(li);
    }
    $("basket-empty").hidden = mine.length > 0;
    $("checkout").hidden = !(state === "reservation" && mine.length > 0);
    $("pay").hidden = state !== "checkout";
    $("done").hidden = state !== "finalised";
    if (state === "finalised") {
      $("reservation").textContent = s.reservation;
      notice("Booked. Your seats are reserved.");
    }
    if (state === "expired") notice("Your time ran out and the seats went back on sale.");
  }

  function tick() {
    const t = $("timer");
    if (!session || !(state === "reservation" || state === "checkout")) { t.textContent = ""; return; }
    const left = Math.max(0, Math.floor((deadline - Date.now()) / 1000));
    t.textContent = `${state === "checkout" ? "Checkout" : "Your session"}: ${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")} left`;
    if (left === 0) refreshSession();
  }

  async function refreshSession() {
    if (!session) return;
    const r = await api("GET", `/api/sessions/${session}`);
    if (r.status === 200) showSession(r.data);
  }

  $("back").addEventListener("click", () => { current = null; $("section").hidden = true; $("overview").hidden = false; loadOverview(); });
  $("hold").addEventListener("click", () => hold({ seats: [...selected] }));
  $("best").addEventListener("click", () => hold({ best: { count: Number($("best-n").value), sections: [current.id] } }));
  $("checkout").addEventListener("click", async () => {
    const r = await api("POST", `/api/sessions/${session}/checkout`);
    if (r.status === 200) { showSession(r.data); notice("Checkout started: your seats are held a few more minutes while you pay."); $("card").focus(); }
    else notice(r.data && r.data.error ? r.data.error.message : "Checkout failed.");
  });
  $("pay").addEventListener("submit", async (e) => {
    e.preventDefault();
    // The shop's backend takes the payment (the demo's fake provider) and
    // confirms with the seat service server to server: a browser cannot.
    const r = await api("POST", `/shop/pay/${encodeURIComponent(session)}`);
    if (r.status === 200) showSession(r.data);
    else notice(r.data && r.data.error ? r.data.error.message : "Payment failed.");
  });

  if (!session) notice("Browsing only: come in through the waiting room to hold seats.");
  loadOverview();
  refreshSession();
  setInterval(tick, 1000);
  setInterval(() => { if (current) loadSeats(); else loadOverview(); }, 3000);
})();
