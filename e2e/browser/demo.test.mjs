// fairgate demo in a real browser (Debian chromium via playwright-core):
// a visitor waits, solves the proof of work, is admitted, holds two seats,
// checks out and confirms; a second visitor sees those seats taken; the
// operator pauses the room and a third visitor stays waiting.
// Run by e2e/browser/run.sh, which starts `fairgate demo` and sets SITE.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { assertAccessible } from "./axe.mjs";

const site = process.env.SITE;
const shots = process.env.SCREENSHOTS;
let browser;
let held = [];

before(async () => {
  assert.ok(site, "SITE is not set (run e2e/browser/run.sh)");
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
});
after(async () => { if (browser) await browser.close(); });

async function visitor() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  return context.newPage();
}

const shot = (page, name) => page.screenshot({ path: join(shots, name), fullPage: true });

// waitAdmitted waits on the waiting page until it lets the visitor in by itself.
async function waitAdmitted(page, name) {
  await page.goto(site + "/");
  await page.waitForSelector("#fairgate");
  if (name) {
    await page.waitForFunction(() => document.getElementById("fg-work-text").textContent !== "");
    await shot(page, name);
    await assertAccessible(page, "waiting page");
  }
  await page.waitForSelector("#stadium path", { timeout: 90_000 });
}

test("a visitor waits, is admitted, holds two seats, checks out and confirms", async () => {
  const page = await visitor();
  await waitAdmitted(page, "01-waiting-room.png");
  assert.notEqual(await page.locator("#shop").getAttribute("data-session"), "", "the pass carries a session");
  await shot(page, "02-admitted-overview.png");
  await assertAccessible(page, "shop: stadium overview");

  await page.locator('#stadium path[aria-label^="Lower 1:"]').click();
  await page.waitForSelector('#seatmap rect.seat[tabindex="0"]');
  const free = page.locator('#seatmap rect.seat[tabindex="0"]');
  held = [await free.nth(0).getAttribute("data-seat"), await free.nth(1).getAttribute("data-seat")];
  await free.nth(0).click();
  await page.locator(`#seatmap rect[data-seat="${held[1]}"]`).click();
  await page.locator("#hold").click();
  await page.waitForFunction(() => document.querySelectorAll("#held li").length === 2);
  await page.waitForFunction(() => /left/.test(document.getElementById("timer").textContent));
  await shot(page, "03-two-seats-held.png");
  await assertAccessible(page, "shop: seat map with seats held");

  await page.locator("#checkout").click();
  await page.waitForSelector("#pay:not([hidden])");
  await shot(page, "04-checkout.png");
  await assertAccessible(page, "shop: checkout");
  await page.locator("#pay-btn").click();
  await page.waitForSelector("#done:not([hidden])");
  assert.match(await page.locator("#reservation").textContent(), /^R/);
  await shot(page, "05-confirmed.png");
  await assertAccessible(page, "shop: confirmation");
  await page.context().close();
});

test("a second visitor sees those seats taken", async () => {
  assert.equal(held.length, 2);
  const page = await visitor();
  await waitAdmitted(page);
  await page.locator('#stadium path[aria-label^="Lower 1:"]').click();
  // Seat maps come from the gateway's cache (fresh for s-maxage, then
  // stale while one request refreshes): the page polls, and within a few
  // seconds the booked seats show as taken.
  for (const id of held) {
    await page.waitForFunction((seat) => {
      const e = document.querySelector(`#seatmap rect[data-seat="${seat}"]`);
      return e && /taken/.test(e.getAttribute("aria-label"));
    }, id, { timeout: 20_000 });
  }
  await shot(page, "06-second-visitor-sees-seats-taken.png");
  await page.context().close();
});

test("the operator pauses the room and a third visitor stays waiting", async () => {
  const op = await visitor();
  await op.goto(process.env.OPERATOR || site + "/operator");
  await op.waitForFunction(() => document.getElementById("state").textContent === "queue");
  await op.locator("#pause").click();
  await op.waitForFunction(() => document.getElementById("state").textContent === "paused");
  await op.waitForTimeout(2500); // let the charts draw a few points
  await shot(op, "07-operator-paused.png");

  const page = await visitor();
  await page.goto(site + "/");
  await page.waitForSelector("#fairgate");
  await page.waitForFunction(() => /paused/.test(document.getElementById("fg-state").textContent), null, { timeout: 30_000 });
  // Several attempt rounds pass (backoff 1-10 s); the visitor is still waiting.
  await page.waitForTimeout(12_000);
  assert.equal(await page.locator("#stadium").count(), 0, "a paused room let someone in");
  assert.equal(await page.locator("#fairgate").count(), 1);
  await shot(page, "08-third-visitor-waits-while-paused.png");

  await op.locator("#resume").click();
  await op.waitForFunction(() => document.getElementById("state").textContent === "queue");
  await page.context().close();
  await op.context().close();
});
