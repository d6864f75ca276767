"""Debian's Chromium as the browser tests and the docs' screenshot script launch it.

Playwright cannot download a browser here: it drives the system's, headless, with what keeps it
quiet and offline (no sandbox as root, no GPU, no update or sync traffic, no QUIC)."""

import shutil

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
