// The waiting page of a room under a matcher, in a real browser (Debian
// chromium via playwright-core): for each path given, the page gets a place
// through the room's endpoints, waits, and lets the visitor in by itself
// (the site's page replaces the waiting page). The waiting page arrives
// gzipped (the return path spliced into it), so this is also the browser's
// check of that stream. Run by e2e/routing.sh:
//
//	node e2e/browser/matcher.mjs http://127.0.0.1:PORT/a/shop http://127.0.0.1:PORT/b/shop
//
// Prints one line per path and exits 1 if any visitor was not let in.
import { chromium } from "playwright-core";

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
});
let failed = 0;
try {
  for (const url of process.argv.slice(2)) {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      const first = await page.goto(url);
      const encoding = first.headers()["content-encoding"] || "none";
      const waited = await page.locator("#fairgate").count();
      await page.waitForFunction(() => document.body && document.body.textContent.includes("ticket shop"), null, { timeout: 45_000 });
      const pass = (await context.cookies()).some((c) => c.name.startsWith("fairgate_pass_"));
      if (!waited || !pass) throw new Error(`waiting page shown: ${waited > 0}, pass cookie: ${pass}`);
      console.log(`let in: ${url} (waiting page sent with content-encoding ${encoding})`);
    } catch (err) {
      failed++;
      const state = await page.locator("#fg-state").textContent().catch(() => "");
      console.log(`not let in: ${url}: ${err.message.split("\n")[0]} (page says: ${state})`);
    } finally {
      await context.close();
    }
  }
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
