// The waiting page in a real browser (Debian chromium via playwright-core):
// custom templates, languages, the turn notice in a background tab whose
// timers fire late, accessibility (axe-core), 200% zoom and a phone screen,
// and a priority lane chosen by the site's login.
// Run by e2e/browser/run.sh, which starts the demo, two `fairgate proxy`
// rooms with docs/examples' templates and one with a priority lane, and sets
// SITE, BRANDED, EVENT, LANES and LOGIN_KEY.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createHmac } from "node:crypto";
import { chromium } from "playwright-core";
import { assertAccessible } from "./axe.mjs";

const { SITE: site, BRANDED: branded, EVENT: event, SCREENSHOTS: shots } = process.env;
let browser;

before(async () => {
  assert.ok(site && branded && event, "SITE, BRANDED or EVENT is not set (run e2e/browser/run.sh)");
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
});
after(async () => { if (browser) await browser.close(); });

const shot = (page, name) => page.screenshot({ path: join(shots, name), fullPage: true });

// admin changes a proxy room through its admin API.
async function admin(base, room, change) {
  const res = await fetch(`${base}/rooms/${room}`, {
    signal: AbortSignal.timeout(15_000), // a hung admin API fails here, by name
    method: "POST",
    headers: { Authorization: `Bearer ${process.env.ADMIN_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify(change),
  });
  assert.equal(res.status, 200, `admin ${room} ${JSON.stringify(change)}: ${await res.text()}`);
}

async function open(url, options = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...options });
  const page = await context.newPage();
  await page.goto(url);
  return page;
}

// statusShown waits until the script has a place in line and shows it.
const statusShown = (page) => page.waitForFunction(() => {
  const s = document.getElementById("fg-state");
  return s && document.getElementById("fg-work").value === 100 && s.textContent.length > 10;
}, null, { timeout: 30_000 });

test("a custom template: the branded page waits, shows its brand, and lets the visitor in", async () => {
  await admin(process.env.BRANDED_ADMIN, "branded", { state: "paused" });
  const page = await open(branded + "/tickets?from=browser");
  assert.match(await page.title(), /Example Tickets$/);
  assert.equal(await page.locator("header.brand span").textContent(), "Example Tickets");
  await statusShown(page);
  assert.match(await page.locator("#fg-state").textContent(), /paused/);
  await assertAccessible(page, "branded waiting page");
  await shot(page, "10-custom-template-branded.png");
  await admin(process.env.BRANDED_ADMIN, "branded", { state: "queue" });
  // In: the demo site behind it answers (with its own room's page).
  await page.waitForSelector("header.brand", { state: "detached", timeout: 30_000 });
  assert.match(page.url(), /\/tickets\?from=browser$/);
  const cookies = await page.context().cookies();
  assert.ok(cookies.some((c) => c.name === "fairgate_pass_branded"), "no pass cookie after admission");
  await page.context().close();
});

test("two languages: German and Japanese from Accept-Language, numbers and times by Intl", async () => {
  await admin(process.env.EVENT_ADMIN, "event", { state: "scheduled", sale_start: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, "Z") });
  try {
    const de = await open(event + "/", { locale: "de-DE", timezoneId: "Europe/Berlin" });
    assert.equal(await de.locator("html").getAttribute("lang"), "de");
    assert.equal(await de.locator("h1").textContent(), "Sie sind im Warteraum");
    await statusShown(de);
    assert.match(await de.locator("#fg-state").textContent(), /Vorwarteschlange/);
    // Intl: a German date (dd.mm.yyyy) in the visitor's time zone.
    await de.waitForFunction(() => /\d{2}\.\d{2}\.\d{4}/.test(document.querySelector("time[data-fg-local]").textContent));
    await assertAccessible(de, "event page, German");
    await shot(de, "11-event-template-de.png");

    const ja = await open(event + "/", { locale: "ja-JP", timezoneId: "Asia/Tokyo" });
    assert.equal(await ja.locator("html").getAttribute("lang"), "ja");
    assert.equal(await ja.locator("h1").textContent(), "待合室にいます");
    await statusShown(ja);
    assert.match(await ja.locator("#fg-state").textContent(), /事前待機列/);
    await ja.waitForFunction(() => /\d{4}\/\d{1,2}\/\d{1,2}/.test(document.querySelector("time[data-fg-local]").textContent));
    await shot(ja, "12-event-template-ja.png");
    await de.context().close();
    await ja.context().close();
  } finally {
    await admin(process.env.EVENT_ADMIN, "event", { state: "queue" });
  }
});

test("right to left: the default page in Arabic", async () => {
  const page = await open(site + "/", { locale: "ar-EG" });
  assert.equal(await page.locator("html").getAttribute("dir"), "rtl");
  await statusShown(page);
  await assertAccessible(page, "default waiting page, Arabic");
  await shot(page, "13-waiting-room-ar-rtl.png");
  await page.context().close();
});

// The background tab: the visitor is on another tab, the browser holds the
// page's timers for a while so they fire late, and it still gets in; the
// title says so, the notification they allowed says so, and it goes in
// when they come back. Headless chromium shows every page and does not
// freeze them (Page.setWebLifecycleState has no effect there), so both the
// hidden state and the held timers are emulated in the page.
test("background tab: late timers, the title and the notification tell the visitor", async () => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addInitScript(() => {
    window.__away = false;
    Object.defineProperty(Document.prototype, "visibilityState", { configurable: true, get: () => (window.__away ? "hidden" : "visible") });
    Object.defineProperty(Document.prototype, "hidden", { configurable: true, get: () => window.__away });
    // The notification is recorded: a headless browser shows none.
    window.__notes = [];
    // While frozen, timers are held and fire, late, at the thaw; intervals
    // skip their ticks, as a frozen page's do.
    const realTimeout = window.setTimeout.bind(window), realInterval = window.setInterval.bind(window);
    const held = [];
    window.__frozen = false;
    window.setTimeout = (fn, ms, ...args) => realTimeout(() => (window.__frozen ? held.push(() => fn(...args)) : fn(...args)), ms);
    window.setInterval = (fn, ms, ...args) => realInterval(() => { if (!window.__frozen) fn(...args); }, ms);
    window.__thaw = () => { window.__frozen = false; for (const fn of held.splice(0)) fn(); };
    let permission = "default";
    window.Notification = class {
      constructor(title, options) { window.__notes.push({ title, body: options && options.body }); }
      close() {}
      static get permission() { return permission; }
      static async requestPermission() { permission = "granted"; return permission; }
    };
  });
  await admin(process.env.EVENT_ADMIN, "event", { state: "paused" });
  const page = await context.newPage();
  await page.goto(event + "/concert");
  const title = await page.title();
  // The visitor allows notifications on the page.
  await page.locator("#fg-notify").click();
  await page.waitForFunction(() => /notification/i.test(document.getElementById("fg-state").textContent));
  await statusShown(page);

  // They switch tabs; the browser freezes the page's timers.
  await page.evaluate(() => {
    window.__away = window.__frozen = true;
    document.dispatchEvent(new Event("visibilitychange"));
  });
  await admin(process.env.EVENT_ADMIN, "event", { state: "queue" });
  await page.waitForTimeout(8000); // longer than max_backoff: the next attempt's timer is late
  assert.equal(await page.evaluate(() => document.title), title, "admitted while every timer was held");
  await page.evaluate(() => window.__thaw());

  // Admitted while away: the title changes, one notification, no navigation.
  await page.waitForFunction((t) => document.title !== t, title, { timeout: 30_000 });
  assert.match(await page.title(), /Your turn|It's your turn/i);
  assert.equal(new URL(page.url()).pathname, "/concert");
  const notes = await page.evaluate(() => window.__notes);
  assert.equal(notes.length, 1);
  assert.equal(notes[0].title, "It's your turn!");
  assert.match(await page.locator("#fg-state").textContent(), /Come back to this tab/);
  assert.ok((await context.cookies()).some((c) => c.name === "fairgate_pass_event"), "no pass while away");
  await shot(page, "14-turn-while-away.png");

  // Back on the tab: in they go.
  await page.evaluate(() => { window.__away = false; document.dispatchEvent(new Event("visibilitychange")); });
  // In: the demo site behind it answers (with its own room's page).
  await page.waitForSelector("p.event", { state: "detached", timeout: 10_000 });
  assert.equal(new URL(page.url()).pathname, "/concert");
  await context.close();
});

test("200% zoom and a phone screen: nothing cut off, nothing to scroll sideways", async () => {
  for (const [name, options] of [
    // 1280×900 at 200% zoom is a 640×450 CSS viewport at twice the pixels.
    ["15-waiting-room-zoom-200.png", { viewport: { width: 640, height: 450 }, deviceScaleFactor: 2 }],
    ["16-waiting-room-phone.png", { viewport: { width: 375, height: 667 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true }],
  ]) {
    for (const url of [site + "/", branded + "/"]) {
      const page = await open(url, options);
      await statusShown(page);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${name} ${url}: ${overflow}px wider than the screen`);
      await assertAccessible(page, `${name} ${url}`);
      if (url === site + "/") await shot(page, name);
      await page.context().close();
    }
  }
});

test("the closed and sold-out pages pass axe, in the visitor's language", async () => {
  await admin(process.env.BRANDED_ADMIN, "branded", { state: "closed" });
  try {
    const page = await open(branded + "/", { locale: "fr-FR" });
    assert.equal(await page.locator("h1").textContent(), "Fermé pour le moment");
    await assertAccessible(page, "closed page");
    await shot(page, "17-closed-fr.png");
    await admin(process.env.BRANDED_ADMIN, "branded", { state: "closed", reason: "sold_out" });
    await page.reload();
    assert.equal(await page.locator("h1").textContent(), "Complet");
    await assertAccessible(page, "sold-out page");
    await page.context().close();
  } finally {
    await admin(process.env.BRANDED_ADMIN, "branded", { state: "queue" });
  }
});

// login signs the site's login JWT (HS256) as the shop's backend would.
function login(claims) {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const body = `${b64({ alg: "HS256", typ: "JWT" })}.${b64({ ...claims, exp: Math.floor(Date.now() / 1000) + 3600 })}`;
  const sig = createHmac("sha256", Buffer.from(process.env.LOGIN_KEY, "base64")).update(body).digest("base64url");
  return `${body}.${sig}`;
}

// lanesAdmin reads the lanes room through its admin API.
async function lanesAdmin() {
  const res = await fetch(`${process.env.LANES_ADMIN}/rooms/lanes`, { signal: AbortSignal.timeout(15_000), headers: { Authorization: `Bearer ${process.env.ADMIN_TOKEN}` } });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return JSON.parse(body);
}

test("a priority lane: a VIP login waits in its lane, a fan in the default one, and both get in", { timeout: 120_000 }, async () => {
  const lanes = process.env.LANES;
  await admin(process.env.LANES_ADMIN, "lanes", { state: "paused" });
  const visitor = async (claims) => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ name: "site_login", value: login(claims), url: lanes }]);
    const page = await context.newPage();
    // The last answers the page got from the room, for a failure's message.
    const answers = [];
    page.on("response", async (r) => {
      if (!r.url().includes("/_fairgate/")) return;
      const body = (await r.text().catch(() => "")).replace(/"(token|challenge)":"[^"]*",?/g, "");
      answers.push(`${new Date().toISOString()} ${r.url().replace(lanes, "")} ${r.status()} ${body.slice(0, 300)}`);
      answers.splice(0, answers.length - 4);
    });
    const ticket = page.waitForResponse((r) => r.url().endsWith("/_fairgate/token") && r.status() === 200, { timeout: 30_000 });
    // A page the site behind serves without its own room (the demo
    // bypasses /healthz): once in, the visitor stays in. Behind /tickets the
    // demo's own waiting page took a token of this room, was admitted
    // again, reloaded and so on every 4 s, and closing its context with a
    // proof-of-work worker running took up to 110 s under load (the test's
    // 120 s timeout ran out, 1 run in 5).
    await page.goto(lanes + "/healthz?lane=test");
    return { page, answers, ticket: await (await ticket).json() };
  };
  const vip = await visitor({ sub: "vip-1", tier: "vip" });
  const fan = await visitor({ sub: "fan-1", tier: "basic" });
  assert.equal(vip.ticket.lane, "vip", "the VIP login's token is in the vip lane");
  assert.equal(fan.ticket.lane, undefined, "the fan's token is in the default lane");
  await statusShown(vip.page);
  await statusShown(fan.page);
  await assertAccessible(vip.page, "waiting page in a lane");
  await shot(vip.page, "16-lane-vip-waiting.png");

  await admin(process.env.LANES_ADMIN, "lanes", { state: "queue" });
  // In: the page shows the site's answer, with the pass cookie set. Each
  // page's navigation in is waited for: closing a context while its page
  // was still going in hung for up to 110 s under load (the test's 120 s
  // ran out, 1 run in 5).
  for (const [who, { page, answers }] of [["the VIP", vip], ["the fan", fan]]) {
    await page.waitForFunction(() => document.body && document.body.innerText.trim() === "ok", null, { timeout: 60_000 })
      .catch(async (err) => assert.fail(`${who}: not in within 60 s of the queue opening (${err.message.split("\n")[0]}); the room's last answers:\n${answers.join("\n")}\nthe room: ${JSON.stringify(await lanesAdmin())}`));
    await page.waitForLoadState("load");
    assert.ok((await page.context().cookies()).some((c) => c.name === "fairgate_pass_lanes"), `${who}: in without the room's pass cookie`);
  }
  const status = await lanesAdmin();
  const vipLane = status.lanes.find((l) => l.lane === "vip");
  assert.ok(vipLane, `no vip lane in the admin API: ${JSON.stringify(status.lanes)}`);
  assert.ok(vipLane.admitted >= 1, `the VIP was admitted in the vip lane: ${vipLane.admitted}`);
  const fanLane = status.lanes.find((l) => l.lane === "");
  assert.ok(fanLane.admitted >= 1, `the fan was admitted in the default lane: ${fanLane.admitted}`);
  await vip.page.context().close();
  await fan.page.context().close();
});
