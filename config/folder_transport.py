"""kombu's filesystem transport (the embedded queue), safe with several processes at once.

kombu (5.7) writes a message in place: it creates the file in the queue folder, then locks
and writes it, while a reader in another process never takes that lock. A worker listing the
folder in between takes an empty or half-written file, cannot decode it and stops with
"Unrecoverable error: JSONDecodeError"; so does every worker that meets an empty or cut-off
`.msg` file. Here:

- A message is written whole to a hidden file in the queue folder (`.<name>.part`; readers
  take only names ending in `.<queue>.msg`), flushed to disk, then renamed to kombu's own
  name (the time first, so messages are still taken in order). A rename is atomic: a reader
  sees the whole file or none.
- A reader claims a file by renaming it into the processed folder, beside the queue folder
  on the same filesystem, so exactly one of several racing readers gets it. kombu moved it
  into the system temporary folder with `shutil.move`, which copies and deletes when that is
  another filesystem, and then two readers can both deliver it.
- A claimed file that holds no message (empty, cut off, not JSON, not kombu's envelope) is
  moved into the bad folder and logged with its name and why; the reader goes on with the
  next message.
- An exchange's table of bindings (control folder) is written the same way, whole and
  renamed into place, by one process at a time (a lock file beside it). kombu created it in
  place too: a worker starting beside the web process could read it empty and stop with the
  same JSONDecodeError, and two processes creating it at once kept only one's binding or
  left it cut off.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from queue import Empty
from time import monotonic, sleep

from kombu.exceptions import ChannelError
from kombu.transport import TRANSPORT_ALIASES, filesystem, virtual
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps, loads
from kombu.utils.objects import cached_property

logger = logging.getLogger(__name__)


class BadMessageFile(Exception):
    """A file in the queue folder that holds no message; the text says why."""


def message_payload(raw: bytes) -> dict:
    """The message a queue file holds, or BadMessageFile saying why it holds none."""
    if not raw:
        raise BadMessageFile("empty file")
    try:
        payload = loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadMessageFile("not UTF-8 text") from None
    except ValueError as error:
        raise BadMessageFile(f"not valid JSON: {error}") from None
    properties = payload.get("properties") if isinstance(payload, dict) else None
    if not isinstance(properties, dict) or "delivery_tag" not in properties:
        raise BadMessageFile("JSON, but not a kombu message (no properties.delivery_tag)")
    return payload


def write_whole(path: str, data: bytes) -> None:
    """Make `path` appear with all of `data` or not at all."""
    folder, name = os.path.split(path)
    staged = os.path.join(folder, f".{name}.part")
    file = open(staged, "xb")  # noqa: SIM115 - closed below, before the rename
    try:
        with file:
            file.write(data)
            file.flush()
            # Without it, a power cut can leave the renamed file empty (the rename reaches the
            # disk before the data). The folder itself is not synced: a message lost with a
            # power cut is sent again by its job's watch, the work being in the database.
            os.fsync(file.fileno())
        os.replace(staged, path)
    except BaseException:
        # (A writer killed outright leaves its .part file: harmless, no reader takes it.)
        os.remove(staged)
        raise


class Channel(filesystem.Channel):
    def __init__(self, connection, **kwargs):
        super().__init__(connection, **kwargs)
        # Without it every claim would fail as if another reader had been faster.
        os.makedirs(self.processed_folder, exist_ok=True)

    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"  # kombu's naming
        path = os.path.join(self.data_folder_out, name)
        try:
            write_whole(path, str_to_bytes(dumps(payload)))
        except OSError as error:
            raise ChannelError(f"Cannot add file {path!r} to directory") from error

    def _get(self, queue):
        for name in self._message_names(queue):
            claimed = self._claim(name)
            if claimed is None:
                continue
            try:
                return self._read(claimed)
            except BadMessageFile as problem:
                self._set_aside(claimed, reason=str(problem))
        raise Empty()

    def _message_names(self, queue) -> list[str]:
        ending = f"{queue}.msg"
        names = os.listdir(self.data_folder_in)
        return sorted(name for name in names if name.partition(".")[2] == ending)

    def _claim(self, name: str) -> str | None:
        """Move the file out of the queue folder; None if another reader took it first."""
        claimed = os.path.join(self.processed_folder, name)
        try:
            os.rename(os.path.join(self.data_folder_in, name), claimed)
        except FileNotFoundError:
            return None
        except OSError as error:
            raise ChannelError(
                f"Cannot move {name!r} from {self.data_folder_in!r} to {self.processed_folder!r} "
                "(they must be on one filesystem)"
            ) from error
        return claimed

    def _read(self, claimed: str) -> dict:
        # Every writer renames a whole file into place, so a file that fails to decode is
        # broken, not still being written: it is set aside at once rather than waited for
        # (waiting would hold up every message behind it, for a writer that does not exist).
        # Set aside, not deleted: a process of an older version, still writing in place,
        # goes on writing into the moved file, and its message can be put back by hand.
        try:
            with open(claimed, "rb") as file:
                raw = file.read()
        except OSError as error:
            raise ChannelError(f"Cannot read file {claimed!r} from queue.") from error
        payload = message_payload(raw)
        if not self.store_processed:
            os.remove(claimed)
        return payload

    def _set_aside(self, claimed: str, *, reason: str) -> None:
        name = os.path.basename(claimed)
        os.makedirs(self.bad_folder, exist_ok=True)
        # Onto a file of that name, should the same file have been put back and set aside again.
        shutil.move(claimed, os.path.join(self.bad_folder, name))
        logger.warning(
            "Set aside the queue file %s (%s) in %s; going on with the next message.",
            name,
            reason,
            self.bad_folder,
        )

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._table_lock(exchange):
            table = self.get_table(exchange)
            if binding not in table:
                self._table_write(exchange, [binding, *table])

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        # kombu's: purge the queue (virtual), then drop the binding from the table.
        virtual.Channel._delete(self, queue, exchange, routing_key, pattern, *args, **kwargs)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        with self._table_lock(exchange):
            table = self.get_table(exchange)
            if binding in table:
                self._table_write(exchange, [entry for entry in table if entry != binding])

    @contextmanager
    def _table_lock(self, exchange: str) -> Iterator[None]:
        # Not a lock on the table itself: a replaced file is another file, and two writers
        # would each hold the lock of their own.
        table_file = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        with open(table_file.with_name(f".{table_file.name}.lock"), "a") as lock_file:
            fcntl.flock(lock_file, fcntl.LOCK_EX)
            yield  # closing the file releases the lock

    def _table_write(self, exchange: str, table: list) -> None:
        path = str(self._exchange_file(exchange))
        try:
            write_whole(path, str_to_bytes(dumps(table)))
        except OSError as error:
            raise ChannelError(f"Cannot write {path!r}") from error

    @cached_property
    def bad_folder(self) -> str:
        default = os.path.join(os.path.dirname(os.path.abspath(self.data_folder_in)), "bad")
        return self.transport_options.get("bad_folder", default)


class Transport(filesystem.Transport):
    Channel = Channel

    def drain_events(self, connection, timeout=None):
        """kombu's wait for a message, polling the folder, except that it ends at the next
        poll once this process is a Celery worker told to stop. Celery's worker loop waits 2 s
        at a time, notices a warm shutdown only between waits and then waits once more: up
        to 4 s of every stop spent listening for messages it will no longer take."""
        started = monotonic()
        while True:
            try:
                return self.cycle.get(self._deliver, timeout=timeout)
            except Empty:
                waited = monotonic() - started
                if _worker_stopping() or (timeout is not None and waited >= timeout):
                    raise TimeoutError from None  # socket.timeout, which Celery waits for
                if self.polling_interval is not None:
                    remaining = float("inf") if timeout is None else timeout - waited
                    sleep(min(self.polling_interval, remaining))


def _worker_stopping() -> bool:
    # Set by the worker's SIGTERM (warm) and SIGQUIT (cold) handlers to an exit code, which
    # may be 0; never set in a process that only sends messages.
    from celery.worker import state

    flags = (state.should_stop, state.should_terminate)
    return any(flag is not None and flag is not False for flag in flags)  # 0 == False


def use_for_filesystem_urls() -> None:
    """Make filesystem:// broker URLs use this transport (before any connection)."""
    TRANSPORT_ALIASES["filesystem"] = f"{__name__}:Transport"
