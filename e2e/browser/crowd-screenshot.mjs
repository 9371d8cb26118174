// Screenshots of the demo under a simulated crowd, for the README (run by
// hand: `fairgate demo --crowd 200` first, then
// `SITE=http://127.0.0.1:8080 OUT=docs/img node e2e/browser/crowd-screenshot.mjs`).
import { chromium } from "playwright-core";

const site = process.env.SITE || "http://127.0.0.1:8080";
const out = process.env.OUT || ".";
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
});
const page = await (await browser.newContext({ viewport: { width: 1280, height: 960 } })).newPage();
await page.goto(process.env.OPERATOR || site + "/operator");
await page.waitForTimeout(Number(process.env.WATCH_MS || 60000)); // let two minutes of charts fill
await page.screenshot({ path: `${out}/operator-crowd.png`, fullPage: true });
const visitor = await (await browser.newContext({ viewport: { width: 420, height: 900 } })).newPage();
await visitor.goto(site + "/");
await visitor.waitForSelector("#fairgate");
await visitor.waitForTimeout(4000);
await visitor.screenshot({ path: `${out}/waiting-room-phone.png`, fullPage: true });
await browser.close();
