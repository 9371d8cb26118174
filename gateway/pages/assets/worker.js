// fairgate proof-of-work worker: solves off the main thread and reports
// progress, so the page stays responsive.
"use strict";
importScripts("pow.js");
self.onmessage = (e) => {
  const { challenge, difficulty } = e.data;
  const step = 8192;
  for (let from = 0; ; from += step) {
    const nonce = self.fairgatePow.solve(challenge, difficulty, from, step);
    if (nonce >= 0) {
      self.postMessage({ done: true, nonce: String(nonce), hashes: nonce + 1 });
      return;
    }
    self.postMessage({ done: false, hashes: from + step });
  }
};
