"""Bytes from an uploaded file as text, or why they are not text. Pure: each caller words the
refusal for its own page."""

from __future__ import annotations

# NUL bytes in the first 64 KB mark a binary file (text formats never hold them).
SNIFF_BYTES = 65536


class NotText(ValueError):
    """`binary` when the bytes hold NULs; otherwise `line` is where UTF-8 decoding failed."""

    def __init__(self, *, binary: bool, line: int = 0):
        super().__init__("binary file" if binary else f"not UTF-8 (line {line})")
        self.binary, self.line = binary, line


def decode_text(data: bytes) -> str:
    if b"\x00" in data[:SNIFF_BYTES]:
        raise NotText(binary=True)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise NotText(binary=False, line=data[: error.start].count(b"\n") + 1) from None
