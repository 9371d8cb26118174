// Node tests of the browser's proof of work: `node --test gateway/pages/assets/`.
"use strict";
const test = require("node:test");
const assert = require("node:assert");
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const vm = require("node:vm");

vm.runInThisContext(fs.readFileSync(path.join(__dirname, "pow.js"), "utf8"));
const { sha256, leadingZeroBits, solve } = globalThis.fairgatePow;

function hex(words) {
  return Array.from(words, (w) => (w >>> 0).toString(16).padStart(8, "0")).join("");
}

test("sha256 agrees with node:crypto on every length across block boundaries", () => {
  for (let len = 0; len < 200; len++) {
    const bytes = crypto.randomBytes(len);
    const want = crypto.createHash("sha256").update(bytes).digest("hex");
    assert.strictEqual(hex(sha256(bytes, len)), want, `length ${len}`);
  }
});

test("solutions verify as the Go gateway does", () => {
  for (const difficulty of [0, 4, 8, 12]) {
    const challenge = crypto.randomBytes(16).toString("base64url");
    const nonce = solve(challenge, difficulty, 0, 1 << 24);
    assert.ok(nonce >= 0);
    const digest = crypto.createHash("sha256").update(`${challenge}:${nonce}`).digest();
    let bits = 0;
    for (const b of digest) {
      if (b === 0) { bits += 8; continue; }
      bits += Math.clz32(b) - 24;
      break;
    }
    assert.ok(bits >= difficulty, `difficulty ${difficulty}: ${bits} bits`);
    // The first solution: the nonce before it must fail.
    if (nonce > 0) assert.strictEqual(solve(challenge, difficulty, nonce - 1, 1), -1);
  }
});

test("the Go CLI's vector: fairgate solve abc 12 prints 4959", () => {
  assert.strictEqual(solve("abc", 12, 0, 100000), 4959);
  assert.ok(leadingZeroBits(sha256(Buffer.from("abc:4959"), 8)) >= 12);
});
