"""Derive independent integer seeds from names, the same on every machine and process.

Python's hash() is salted per process and a shared global random is not thread-safe, so
every unit of work gets its own seed hashed from what identifies it.
"""

import hashlib


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from the parts' text (fits a signed 64-bit database column)."""
    text = "\x1f".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") >> 1
