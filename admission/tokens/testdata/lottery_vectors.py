#!/usr/bin/env python3
"""Lottery-number test vectors from an independent implementation.

Seed 002's formula, written with Python's hmac module:
    v = int.from_bytes(HMAC-SHA256(key, lot)[:8], "big") / 2**64
with lot the base64 text exactly as it appears in the token.

Regenerate with:  python3 admission/tokens/testdata/lottery_vectors.py > admission/tokens/testdata/lottery_vectors.json
"""
import base64
import hashlib
import hmac
import json

KEYS = [
    bytes(range(32)),
    hashlib.sha256(b"fairgate lottery key 2").digest(),
]
LOTS = [
    base64.b64encode(bytes(16)).decode(),
    base64.b64encode(bytes([0xFF] * 16)).decode(),
    base64.b64encode(bytes(range(16))).decode(),
    base64.b64encode(hashlib.sha256(b"ticket 3").digest()[:16]).decode(),
    base64.b64encode(hashlib.sha256(b"ticket 4").digest()[:16]).decode(),
    "not base64 at all: the formula hashes the text",
]

vectors = []
for key in KEYS:
    for lot in LOTS:
        digest = hmac.new(key, lot.encode("utf-8"), hashlib.sha256).digest()
        vectors.append({
            "key": base64.b64encode(key).decode(),
            "lot": lot,
            "v": repr(int.from_bytes(digest[:8], "big") / 2**64),
        })
print(json.dumps(vectors, indent=2))
