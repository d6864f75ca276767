"""The integer seed sent to a provider with a call, derived from the draw the call belongs to.

A request's `sample` names its independent draw (a conversation's seed, a judge's slot, an
entry); the provider seed is hashed from it and the call's purpose, so the patient and the
agent of one conversation draw with different seeds, every turn of a conversation with the
same one, and a replayed conversation with the same ones again. A call with no sample gets
no seed. Pure: no Django.

Providers promise only best-effort determinism from a seed: the same seed, model, prompt and
settings usually give the same answer while the backend (the response's fingerprint) is the
same, and may not after it changes.
"""

from __future__ import annotations

import hashlib

# Below 2**31: OpenAI, vLLM and llama.cpp's server all take a seed of that size.
SEED_BITS = 31


def provider_seed(sample: str, purpose: str) -> int | None:
    """The seed of a call drawing for `sample` in the role `purpose`; None without a sample."""
    if not sample:
        return None
    digest = hashlib.sha256(f"{sample}\x1f{purpose}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> (32 - SEED_BITS)
