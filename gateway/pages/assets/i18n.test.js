// Node tests of the waiting script's text: `node --test gateway/pages/assets/`.
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");

const script = fs.readFileSync(path.join(__dirname, "waiting.js"), "utf8");
const dir = path.join(__dirname, "i18n");
const catalogs = Object.fromEntries(fs.readdirSync(dir).map((f) => [f.replace(/\.json$/, ""), JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"))]));

test("every text the script asks for is in every language", () => {
  const keys = new Set([...script.matchAll(/\btr\("([a-z_]+)"/g)].map((m) => m[1]));
  for (const m of script.matchAll(/"(notify_on|notify_denied|hours|minutes)"/g)) keys.add(m[1]);
  assert.ok(keys.size > 15, `found only ${keys.size} keys`);
  for (const [lang, text] of Object.entries(catalogs)) {
    for (const key of keys) assert.ok(text[key], `${lang}.json lacks ${key}`);
  }
});

test("the script writes no English of its own", () => {
  const literals = [...script.matchAll(/announce\("([^"]*)"/g)].map((m) => m[1]);
  assert.deepEqual(literals, []);
});

test("Intl formats every language's numbers and units", () => {
  for (const lang of Object.keys(catalogs)) {
    const s = new Intl.NumberFormat(lang, { style: "unit", unit: "minute", unitDisplay: "long" }).format(3);
    assert.match(s, /3|٣/, `${lang}: ${s}`);
  }
});
