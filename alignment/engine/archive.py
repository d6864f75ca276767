"""The study archive format: a zip of JSON Lines members, a manifest with the sha256 of every
member, and the checks an archive must pass before any of it is read.

Pure Python (no Django): the services in alignment.services.archive decide what goes in and
how rows become database objects; this module says what a well-formed archive is.

- manifest.json names the format and its version and lists every other member with its size,
  row count and sha256; a member missing from the zip, a member the manifest does not list, or
  a digest that does not match is refused by name.
- Sizes are checked from the zip directory before anything is decompressed (a zip bomb is
  refused by its declared sizes and its compression ratio), and reading stops at the declared
  size, so a directory that lies about a size cannot make a member grow past it.
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO

from common import json_text

FORMAT_NAME = "carejury-study-archive"
# The name archives had before the product was renamed (issue 20); they read as before.
FORMER_FORMAT_NAMES = ("healthbench-lab-study-archive",)
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
README = "README.txt"
# Far above what deflate reaches on real members (sandbox snapshots compress about 30:1).
MAX_COMPRESSION_RATIO = 200
MAX_MEMBERS = 200
CHUNK = 1 << 20


class ArchiveError(Exception):
    """The archive cannot be imported; the message names the member and the problem."""


@dataclass(frozen=True)
class Limits:
    total_bytes: int  # uncompressed, every member together
    member_bytes: int  # uncompressed, one member


@dataclass
class MemberRecord:
    """What the manifest says about one member."""

    name: str
    sha256: str
    bytes: int
    rows: int | None = None


@dataclass
class Manifest:
    created_at: str
    app_version: str
    study: dict
    counts: dict[str, int] = field(default_factory=dict)
    members: dict[str, MemberRecord] = field(default_factory=dict)
    with_usernames: bool = False

    def as_json(self) -> str:
        body = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "created_at": self.created_at,
            "app_version": self.app_version,
            "with_usernames": self.with_usernames,
            "study": self.study,
            "counts": self.counts,
            "members": {
                name: {"sha256": m.sha256, "bytes": m.bytes, "rows": m.rows}
                for name, m in sorted(self.members.items())
            },
        }
        return json.dumps(body, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


# --- writing -----------------------------------------------------------------------------------


def json_line(row: dict) -> bytes:
    """One compact JSON Lines row. Keys keep their order (the writer's, or the stored JSON's),
    which is fixed for the same content: sorting big sandbox snapshots would cost more than
    writing them."""
    text = json.dumps(row, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8") + b"\n"


class MemberWriter:
    """Writes one member into an open zip, hashing and counting as it goes (a context
    manager: the member is closed on leaving)."""

    def __init__(self, archive: zipfile.ZipFile, name: str):
        self.name = name
        self._stream = archive.open(name, "w", force_zip64=True)
        self._digest = hashlib.sha256()
        self.bytes = 0
        self.rows = 0

    def write(self, data: bytes) -> None:
        self._stream.write(data)
        self._digest.update(data)
        self.bytes += len(data)

    def row(self, row: dict) -> None:
        self.write(json_line(row))
        self.rows += 1

    def __enter__(self) -> MemberWriter:
        return self

    def __exit__(self, *exc) -> None:
        # Closed on errors too: an open member would hide the error behind the zip's own.
        self._stream.close()

    def record(self, *, counted: bool) -> MemberRecord:
        rows = self.rows if counted else None
        return MemberRecord(self.name, self._digest.hexdigest(), self.bytes, rows)


# --- reading -----------------------------------------------------------------------------------


def open_zip(source: str | IO[bytes]) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(source)
    except zipfile.BadZipFile as error:
        raise ArchiveError(f"not a zip archive, or a truncated one ({error})") from None
    except OSError as error:
        raise ArchiveError(f"cannot read the archive: {error}") from None


def check_directory(archive: zipfile.ZipFile, limits: Limits) -> None:
    """Refuse a zip bomb from the zip directory alone, before anything is decompressed."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveError(
            f"the zip holds {len(infos)} members; an archive has at most {MAX_MEMBERS}"
        )
    total = 0
    for info in infos:
        if info.file_size > limits.member_bytes:
            raise ArchiveError(
                f"{info.filename} would unpack to {info.file_size / 1e6:.0f} MB, over the "
                f"{limits.member_bytes / 1e6:.0f} MB a member may hold: refused as a zip bomb"
            )
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > CHUNK and ratio > MAX_COMPRESSION_RATIO:
            raise ArchiveError(
                f"{info.filename} is compressed {ratio:.0f}:1 (at most {MAX_COMPRESSION_RATIO}:1 "
                "in a real archive): refused as a zip bomb"
            )
        total += info.file_size
    if total > limits.total_bytes:
        raise ArchiveError(
            f"the archive would unpack to {total / 1e6:.0f} MB, over the "
            f"{limits.total_bytes / 1e6:.0f} MB limit: refused as a zip bomb"
        )


def read_manifest(archive: zipfile.ZipFile) -> Manifest:
    names = set(archive.namelist())
    if MANIFEST not in names:
        raise ArchiveError(f"{MANIFEST} is missing: this is not a study archive")
    try:
        body = json_text.loads(_read_whole(archive, MANIFEST))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ArchiveError(f"{MANIFEST} is not valid JSON ({error})") from None
    if not isinstance(body, dict) or body.get("format") not in (FORMAT_NAME, *FORMER_FORMAT_NAMES):
        raise ArchiveError(
            f"{MANIFEST} does not name the format {FORMAT_NAME!r}: this is not a study archive"
        )
    version = body.get("format_version")
    if version != FORMAT_VERSION:
        raise ArchiveError(f"format version {version!r}; this site reads version {FORMAT_VERSION}")
    try:
        members = {
            name: MemberRecord(name, entry["sha256"], int(entry["bytes"]), entry.get("rows"))
            for name, entry in body["members"].items()
        }
        manifest = Manifest(
            created_at=str(body["created_at"]),
            app_version=str(body["app_version"]),
            study=dict(body["study"]),
            counts=dict(body["counts"]),
            members=members,
            with_usernames=bool(body.get("with_usernames")),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise ArchiveError(f"{MANIFEST} is incomplete ({error!r} missing or malformed)") from None
    unlisted = sorted(names - set(members) - {MANIFEST})
    if unlisted:
        raise ArchiveError(f"{', '.join(unlisted)}: in the zip but not in the manifest")
    missing = sorted(set(members) - names)
    if missing:
        raise ArchiveError(f"{', '.join(missing)}: listed in the manifest but missing")
    return manifest


def verify_members(
    archive: zipfile.ZipFile, manifest: Manifest, progress=lambda name, done: None
) -> None:
    """Read every member once and compare its size and sha256 with the manifest."""
    for name, record in sorted(manifest.members.items()):
        digest, size = hashlib.sha256(), 0
        for chunk in _chunks(archive, name):
            digest.update(chunk)
            size += len(chunk)
        if size != record.bytes or digest.hexdigest() != record.sha256:
            raise ArchiveError(
                f"{name} does not match its sha256 in the manifest: the "
                "archive was changed or damaged"
            )
        progress(name, size)


def read_rows(archive: zipfile.ZipFile, name: str) -> Iterator[tuple[int, dict]]:
    """(line number, row) of a JSON Lines member; a line that is not a JSON object is refused."""
    pending = b""
    line = 0
    for chunk in _chunks(archive, name):
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for text in lines:
            line += 1
            yield line, _row(name, line, text)
    if pending.strip():
        yield line + 1, _row(name, line + 1, pending)


def read_text(archive: zipfile.ZipFile, name: str) -> str:
    return _read_whole(archive, name)


def _row(name: str, line: int, text: bytes) -> dict:
    try:
        row = json_text.loads(text.decode("utf-8"))
    except json.JSONDecodeError as error:
        raise ArchiveError(
            f"{name} line {line}: not a JSON object ({error.msg}, column {error.colno})"
        ) from None
    except UnicodeDecodeError as error:
        raise ArchiveError(f"{name} line {line}: not a JSON object ({error})") from None
    if not isinstance(row, dict):
        raise ArchiveError(f"{name} line {line}: not a JSON object")
    return row


def _chunks(archive: zipfile.ZipFile, name: str) -> Iterator[bytes]:
    info = archive.getinfo(name)
    read = 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(CHUNK):
                read += len(chunk)
                if read > info.file_size:
                    raise ArchiveError(f"{name} unpacks past its declared size: refused")
                yield chunk
    except (zipfile.BadZipFile, EOFError, OSError, ValueError) as error:
        raise ArchiveError(f"{name} is damaged or truncated ({error})") from None


def _read_whole(archive: zipfile.ZipFile, name: str) -> str:
    try:
        return b"".join(_chunks(archive, name)).decode("utf-8")
    except UnicodeDecodeError:
        raise ArchiveError(f"{name} is not UTF-8 text") from None


# --- names -------------------------------------------------------------------------------------


def person_keys(annotators: list[int], staff: list[int]) -> dict[int, str]:
    """Pseudonyms in id order: annotators A1, A2, ..., everybody else S1, S2, ..."""
    keys = {person: f"A{n}" for n, person in enumerate(sorted(annotators), start=1)}
    keys |= {person: f"S{n}" for n, person in enumerate(sorted(staff), start=1)}
    return keys


def unique_name(name: str, taken, *, separator: str = " ", limit: int = 200) -> str:
    """`name`, or `name (2)`, `name (3)`, ... (usernames: `name-2`) - the first one not taken."""
    if name not in taken:
        return name
    number = 2
    while True:
        tail = f"{separator}({number})" if separator == " " else f"{separator}{number}"
        candidate = name[: limit - len(tail)] + tail
        if candidate not in taken:
            return candidate
        number += 1


IMPORTED = " (imported)"


def imported_name(name: str, taken, *, limit: int = 200) -> str:
    """What an imported project, jury, run, set or distribution is called: `name (imported)`
    (kept as it is when it says so already), `name (imported) (2)` when that is taken too."""
    marked = name if name.endswith(IMPORTED) else name[: limit - len(IMPORTED)] + IMPORTED
    return unique_name(marked, taken, limit=limit)


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def file_stem(text: str) -> str:
    """A file-name-safe version of a study name."""
    return _SAFE.sub("-", text).strip("-")[:60] or "study"
