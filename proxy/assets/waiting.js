// fairgate waiting page: get a place, solve the proof of work in a worker,
// wait until the gateway says to try, try, and go in when admitted. The
// place lives in a cookie, so a refresh resumes exactly where it was.
(() => {
  "use strict";
  const root = document.getElementById("fairgate");
  if (!root) return;
  const prefix = root.dataset.prefix;
  const assets = root.dataset.assets;
  const returnTo = root.dataset.return || "/";
  const $ = (id) => document.getElementById(id);
  const state = $("fg-state"), estimate = $("fg-estimate"), next = $("fg-next");
  const work = $("fg-work"), workText = $("fg-work-text");
  root.classList.add("fg-js");

  let lastAnnounced = "";
  function announce(text) {
    // Only changes are announced, so screen readers are not flooded.
    if (text !== lastAnnounced) {
      state.textContent = text;
      lastAnnounced = text;
    }
  }

  function humanDuration(secs) {
    if (secs < 60) return "less than a minute";
    const m = Math.round(secs / 60);
    if (m < 60) return m === 1 ? "about 1 minute" : `about ${m} minutes`;
    const h = Math.floor(m / 60), rest = m % 60;
    return `about ${h} hour${h > 1 ? "s" : ""}${rest ? ` ${rest} min` : ""}`;
  }

  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
    workText.textContent = done ? "done" : `${Math.round(fraction * 100)}%`;
  }

  let countdownTimer = null;
  function countdown(ms) {
    clearInterval(countdownTimer);
    const until = Date.now() + ms;
    const tick = () => {
      const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      next.textContent = left > 0 ? `in ${left} s` : "now";
    };
    tick();
    countdownTimer = setInterval(tick, 1000);
  }

  function show(d) {
    if (typeof d.estimate_seconds === "number") {
      estimate.textContent = humanDuration(d.estimate_seconds);
    } else {
      estimate.textContent = "unknown while paused";
    }
    root.dataset.state = d.state;
    switch (d.state) {
      case "scheduled":
        announce(`You're in the pre-queue. At the start (${new Date(d.sale_start).toLocaleTimeString()}) places are drawn by lottery; arriving earlier does not help.`);
        break;
      case "paused":
        announce("The sale is paused. You keep your place; nobody is let in until it resumes.");
        break;
      default:
        announce(d.outcome === "early"
          ? "Checked too early: that does not help, and does not hurt. Waiting as the page says."
          : "You're in line. This page will let you in automatically.");
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
          announce("Your browser could not finish the check. Please reload the page.");
          return;
        }
        // An attempt that lands early is answered "early" at no cost, and
        // the page tries again when told.
        const wait = Math.max(0, d.retry_after * 1000 - oneWay);
        countdown(wait);
        await sleep(wait);
        const a = await post("/admit", { nonce, return: returnTo });
        if (a.status === 200 && a.data && a.data.admitted) {
          announce("It's your turn! Taking you in…");
          next.textContent = "now";
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
        announce(t.data.error.reason === "sold_out" ? "Sold out. Thank you for waiting." : "The waiting room is closed right now. This page will check again.");
        estimate.textContent = "—";
        countdown(30000);
        await sleep(30000);
        t = await post("/token");
        continue;
      }
      if (t.status === 401 || t.status === 403 || t.status === 409 || t.status === 400) {
        if (t.data && t.data.error && t.data.error.code === "identity") {
          announce("Please log in to join the queue, then reload this page.");
          return;
        }
        // A used, expired or unreadable token: get a fresh place.
        t = await post("/token");
        continue;
      }
      announce("Connection trouble. Your place is kept; retrying…");
      const backoff = (t.retry || 5) * 1000;
      countdown(backoff);
      await sleep(backoff);
      t = await post("/token");
    }
  }

  run();
})();
