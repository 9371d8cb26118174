// fairgate waiting page: get a place, solve the proof of work in a worker,
// wait until the gateway says to try, try, and go in when admitted. The
// place lives in a cookie, so a refresh resumes exactly where it was.
// Settings come from this script's own tag ({{.Script}} in a template) and
// the text, in the page's language, from the JSON beside it; every element
// it updates is optional, so a custom template shows what it wants.
(() => {
  "use strict";
  const tag = document.currentScript || document.getElementById("fairgate-script");
  if (!tag) return;
  const cfg = tag.dataset;
  const prefix = cfg.prefix;
  const assets = cfg.assets;
  const returnTo = cfg.return || "/";
  const lang = cfg.lang || document.documentElement.lang || "en";
  let text = {};
  try { text = JSON.parse(document.getElementById("fairgate-text").textContent); } catch (_) { /* no text: tr shows the keys */ }
  // tr fills {name} placeholders; a missing key shows the key, never "undefined".
  const tr = (key, args) => String(text[key] || key).replace(/\{(\w+)\}/g, (m, k) => (args && k in args ? args[k] : m));
  const $ = (id) => document.getElementById(id);
  const root = $("fairgate") || document.body;
  const none = { textContent: "", value: 0, hidden: true };
  let state = $("fg-state");
  if (!state) {
    // A template without a status line still announces changes.
    state = document.createElement("p");
    state.id = "fg-state";
    state.style.cssText = "position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap";
    state.setAttribute("role", "status");
    state.setAttribute("aria-live", "polite");
    document.body.appendChild(state);
  }
  const estimate = $("fg-estimate") || none, next = $("fg-next") || none;
  const work = $("fg-work") || none, workText = $("fg-work-text") || none;
  root.classList.add("fg-js");
  const pageTitle = document.title;

  let lastAnnounced = "";
  function announce(msg) {
    // Only changes are announced, so screen readers are not flooded.
    if (msg !== lastAnnounced) {
      state.textContent = msg;
      lastAnnounced = msg;
    }
  }

  // Numbers and units in the page's language: Intl where it can, the
  // catalog's short forms otherwise.
  function unit(n, name) {
    try {
      return new Intl.NumberFormat(lang, { style: "unit", unit: name, unitDisplay: "long" }).format(n);
    } catch (_) {
      return tr(name === "hour" ? "hours" : "minutes", { n: String(n) });
    }
  }
  function humanDuration(secs) {
    if (secs < 60) return tr("estimate_under_minute");
    const m = Math.round(secs / 60);
    if (m < 60) return tr("estimate_about", { duration: unit(m, "minute") });
    const h = Math.floor(m / 60), rest = m % 60;
    return tr("estimate_about", { duration: unit(h, "hour") + (rest ? " " + unit(rest, "minute") : "") });
  }
  function localTime(iso) {
    const d = new Date(iso);
    if (isNaN(d)) return iso;
    try {
      return new Intl.DateTimeFormat(lang, { dateStyle: "medium", timeStyle: "short" }).format(d);
    } catch (_) {
      return d.toLocaleString();
    }
  }
  function localizeTimes() {
    for (const el of document.querySelectorAll("time[data-fg-local]")) {
      const iso = el.getAttribute("datetime");
      if (iso) el.textContent = localTime(iso);
    }
  }
  localizeTimes();

  // Turn notice: a visitor on another tab learns it is their turn from the
  // title and, if they allowed it here, a notification. Nothing about it
  // is kept on the server.
  const notifyButton = $("fg-notify");
  const canNotify = "Notification" in window;
  if (notifyButton && canNotify && Notification.permission === "default") {
    notifyButton.hidden = false;
    notifyButton.addEventListener("click", async () => {
      let result = Notification.permission;
      try { result = await Notification.requestPermission(); } catch (_) { /* old callback API: ignored */ }
      notifyButton.hidden = true;
      announce(tr(result === "granted" ? "notify_on" : "notify_denied"));
    });
  }
  const away = () => document.visibilityState === "hidden";
  // turnWhileAway tells a visitor on another tab that it is their turn and
  // resolves when they come back to it or click the notification.
  function turnWhileAway() {
    document.title = tr("turn_title") + " – " + pageTitle;
    announce(tr("status_turn_away"));
    return new Promise((resolve) => {
      const back = () => {
        if (away()) return;
        document.removeEventListener("visibilitychange", back);
        resolve();
      };
      document.addEventListener("visibilitychange", back);
      if (canNotify && Notification.permission === "granted") {
        try {
          const n = new Notification(tr("turn_title"), { body: tr("turn_body"), tag: "fairgate-turn", requireInteraction: true });
          n.onclick = () => { window.focus(); n.close(); resolve(); };
        } catch (_) { /* some browsers only notify from a service worker: the title still says it */ }
      }
    });
  }

  // sleep waits ms by the wall clock. A background tab's timers fire late
  // (throttled, or frozen); coming back to the tab ends a wait that is
  // already over at once, and a late timer costs only its lateness.
  const sleep = (ms) => new Promise((resolve) => {
    const until = Date.now() + ms;
    let timer;
    const check = () => {
      clearTimeout(timer);
      const left = until - Date.now();
      if (left > 0) {
        timer = setTimeout(check, left);
        return;
      }
      document.removeEventListener("visibilitychange", check);
      window.removeEventListener("pageshow", check);
      resolve();
    };
    timer = setTimeout(check, ms);
    document.addEventListener("visibilitychange", check);
    window.addEventListener("pageshow", check);
  });

  // Half the last round trip: an attempt is sent that much before nxt so it
  // arrives at nxt. The gate judges every attempt at the checkpoint its token
  // names, so arriving on time is all there is to gain, and the page does it.
  let oneWay = 0;

  async function post(path, body) {
    try {
      const sent = performance.now();
      const res = await fetch(prefix + path, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        body: JSON.stringify(body || {}),
      });
      oneWay = Math.min((performance.now() - sent) / 2, 2000);
      let data = null;
      try { data = await res.json(); } catch (_) { /* not JSON */ }
      return { status: res.status, data, retry: Number(res.headers.get("Retry-After")) || 0 };
    } catch (_) {
      return { status: 0, data: null, retry: 5 };
    }
  }

  // The solution is kept per challenge and difficulty, so a refresh does
  // not redo the work.
  function solve(challenge, difficulty) {
    const key = `fairgate:${challenge}:${difficulty}`;
    const kept = sessionStorage.getItem(key);
    if (kept) {
      showWork(1, 1);
      return Promise.resolve(kept);
    }
    return new Promise((resolve, reject) => {
      const w = new Worker(`${assets}/worker.js`);
      const expected = Math.pow(2, difficulty);
      w.onmessage = (e) => {
        showWork(e.data.done ? 1 : Math.min(0.99, e.data.hashes / (expected * 2)), e.data.done);
        if (e.data.done) {
          w.terminate();
          sessionStorage.setItem(key, e.data.nonce);
          resolve(e.data.nonce);
        }
      };
      w.onerror = (err) => { w.terminate(); reject(err); };
      w.postMessage({ challenge, difficulty });
    });
  }

  function showWork(fraction, done) {
    work.value = Math.round(fraction * 100);
    workText.textContent = done ? tr("work_done") : new Intl.NumberFormat(lang, { style: "percent" }).format(Math.round(fraction * 100) / 100);
  }

  let countdownTimer = null;
  function countdown(ms) {
    clearInterval(countdownTimer);
    const until = Date.now() + ms;
    const tick = () => {
      const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      next.textContent = left > 0 ? tr("next_in", { n: new Intl.NumberFormat(lang).format(left) }) : tr("now");
    };
    tick();
    countdownTimer = setInterval(tick, 1000);
    countdownTick = tick;
  }
  let countdownTick = null;
  // Timers in a background tab fire late: the countdown is right the
  // moment the visitor looks again.
  document.addEventListener("visibilitychange", () => { if (!away() && countdownTick) countdownTick(); });

  function show(d) {
    if (typeof d.estimate_seconds === "number") {
      estimate.textContent = humanDuration(d.estimate_seconds);
    } else {
      estimate.textContent = tr("estimate_unknown");
    }
    root.dataset.state = d.state;
    switch (d.state) {
      case "scheduled":
        announce(tr("status_scheduled", { time: localTime(d.sale_start) }));
        break;
      case "paused":
        announce(tr("status_paused"));
        break;
      default:
        announce(d.outcome === "early" ? tr("status_early") : tr("status_queue"));
    }
  }

  async function run() {
    let t = await post("/token");
    for (let round = 0; round < 100000; round++) {
      if (t.status === 200 || (t.status === 429 && t.data && t.data.challenge)) {
        const d = t.data;
        show(d);
        let nonce;
        try {
          nonce = await solve(d.challenge, d.difficulty);
        } catch (_) {
          announce(tr("status_work_failed"));
          return;
        }
        // An attempt that lands early is answered "early" at no cost, and
        // the page tries again when told.
        const wait = Math.max(0, d.retry_after * 1000 - oneWay);
        countdown(wait);
        await sleep(wait);
        const a = await post("/admit", { nonce, return: returnTo });
        if (a.status === 200 && a.data && a.data.admitted) {
          next.textContent = tr("now");
          // The pass is already set: going in can wait for the visitor.
          if (away()) await turnWhileAway();
          announce(tr("status_turn"));
          location.replace(a.data.redirect || "/");
          return;
        }
        if (a.status === 429 && !(a.data && a.data.challenge)) {
          // Turned away without a token (a rate limit in front): same token, again after Retry-After.
          countdown(a.retry * 1000);
          await sleep(a.retry * 1000 + Math.random() * 500);
          t = { status: 200, data: Object.assign({}, d, { retry_after: 0 }) };
          continue;
        }
        t = a;
        continue;
      }
      if (t.status === 503 && t.data && t.data.error && t.data.error.code === "closed") {
        announce(t.data.error.reason === "sold_out" ? tr("status_sold_out") : tr("status_closed"));
        estimate.textContent = "—";
        countdown(30000);
        await sleep(30000);
        t = await post("/token");
        continue;
      }
      if (t.status === 401 || t.status === 403 || t.status === 409 || t.status === 400) {
        if (t.data && t.data.error && t.data.error.code === "identity") {
          announce(tr("status_login"));
          return;
        }
        // A used, expired or unreadable token: get a fresh place.
        t = await post("/token");
        continue;
      }
      announce(tr("status_trouble"));
      const backoff = (t.retry || 5) * 1000;
      countdown(backoff);
      await sleep(backoff);
      t = await post("/token");
    }
  }

  run();
})();
