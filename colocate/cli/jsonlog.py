"""Structured logging: one JSON object per line, written to stderr by a background thread.

Every colocate command logs this way; `json_logging(level)` is how the CLI edge turns it on, once
per process, and puts the previous logging set-up back when the command returns (so `main()` can be
called in-process, e.g. by tests, without leaking handlers).

A record is turned into its JSON line where it is logged (orjson makes that a few microseconds) and
the line is queued; a writer thread drains the queue and writes whole batches. Admissions pay
neither for the write nor for the stdlib's record copying, and a slow log pipe never stalls the
event loop.
"""

from __future__ import annotations

import logging
import queue
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

import orjson

ROOT_LOGGER = "colocate"
ADMISSION_LOGGER = "colocate.admission"
#: libraries that log from inside the server (aiohttp's "Unhandled exception", asyncio's errors)
LIBRARY_LOGGERS = ("aiohttp", "asyncio")  # aiohttp: the extender's server and the API clients
LOG_LEVELS = ("debug", "info", "warning", "error")
BATCH_SECONDS = 0.05
#: lines waiting for the writer beyond which new lines are dropped (and counted): a stalled stderr
#: must cost a bounded amount of memory, never the pod
MAX_QUEUED = 10_000
#: longest text of one field (a message, a traceback's tail, an admission's object name)
MAX_FIELD = 4096

_dropped = 0
#: a timestamp's tail for each millisecond of a second: one lookup per line instead of a format
_MILLIS = tuple(f".{ms:03d}Z" for ms in range(1000))


def dropped_lines() -> int:
    """Lines dropped in this process because the queue was full."""
    return _dropped


def _enqueue(lines: queue.SimpleQueue[str | None], line: str) -> None:
    global _dropped
    if lines.qsize() >= MAX_QUEUED:
        _dropped += 1
        return
    lines.put(line)


def _bounded(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_FIELD:
        return value[:MAX_FIELD] + f"...({len(value) - MAX_FIELD} more)"
    return value


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: ts, level, logger, then the record's `fields` (or `msg`)."""

    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._second_text = ""

    def _timestamp(self, created: float) -> str:
        second = int(created)
        if second != self._second:  # strftime once per second, not once per line
            self._second, self._second_text = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        millis = int((created - second) * 1000)
        return self._second_text + (_MILLIS[millis] if millis >= 0 else f".{millis:03d}Z")  # < 0: before 1970

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self._timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if fields:
            entry.update((key, _bounded(value)) for key, value in fields.items())
        else:
            entry["msg"] = _bounded(record.getMessage())
        if record.exc_info:
            error = self.formatException(record.exc_info)  # the tail names the exception
            entry["error"] = error if len(error) <= MAX_FIELD else f"...{error[-MAX_FIELD:]}"
        return orjson.dumps(entry, default=str).decode()


class _LineQueueHandler(logging.Handler):
    """Formats in the caller, queues the line; thread-safe without the handler lock."""

    def __init__(self, lines: queue.SimpleQueue[str | None]) -> None:
        super().__init__()
        self.lines = lines
        self.json = JsonFormatter()
        self.setFormatter(self.json)

    def handle(self, record: logging.LogRecord) -> bool:
        try:
            _enqueue(self.lines, self.json.format(record))
        except Exception:
            self.handleError(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)


class LogWriter:
    """The background thread that writes queued lines; `stop()` flushes what is left."""

    def __init__(self, lines: queue.SimpleQueue[str | None], stream: IO[str]) -> None:
        self.lines = lines
        self.stream = stream
        self.thread = threading.Thread(target=self._run, name="colocate-log-writer", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            batch = [self.lines.get()]
            if batch[0] is None:  # stopped with nothing queued: no need to wait for company
                return
            # Collect for a moment before writing: waking this thread for every line would make it
            # fight the event loop for the GIL on every admission.
            time.sleep(BATCH_SECONDS)
            while True:
                try:
                    batch.append(self.lines.get_nowait())
                except queue.Empty:
                    break
            done = None in batch
            lines = [line for line in batch if line is not None]
            if lines:
                try:
                    self.stream.write("\n".join(lines) + "\n")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass  # a closed or broken stderr must not kill the writer
            if done:
                return

    def stop(self) -> None:
        self.lines.put(None)
        self.thread.join(timeout=5)


def setup_logging(level: str = "info", stream: IO[str] | None = None) -> LogWriter:
    """Route every colocate logger to JSON lines on stderr; returns the writer to `stop()` at exit."""
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    root = logging.getLogger(ROOT_LOGGER)
    handler = _LineQueueHandler(lines)
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
    for name in LIBRARY_LOGGERS:  # their tracebacks become JSON lines too, never plain text
        library = logging.getLogger(name)
        library.handlers[:] = [handler]
        library.propagate = False
    return LogWriter(lines, stream or sys.stderr)


def is_configured() -> bool:
    """Whether JSON logging is already on in this process (the CLI edge turned it on)."""
    return any(isinstance(handler, _LineQueueHandler) for handler in logging.getLogger(ROOT_LOGGER).handlers)


@contextmanager
def json_logging(level: str, stream: IO[str] | None = None) -> Iterator[None]:
    """JSON lines at `level` for the duration of the block, then the previous set-up back.

    A no-op when JSON logging is already on: the edge configured it once, and code below it (a
    server that may also be started on its own, or in a spawned worker) asks for it again.
    """
    if is_configured():
        yield
        return
    loggers = [logging.getLogger(name) for name in (ROOT_LOGGER, *LIBRARY_LOGGERS)]
    saved = [(list(logger.handlers), logger.level, logger.propagate) for logger in loggers]
    writer = setup_logging(level, stream)
    try:
        yield
    finally:
        writer.stop()
        for logger, (handlers, level_, propagate) in zip(loggers, saved, strict=True):
            logger.handlers[:], logger.level, logger.propagate = handlers, level_, propagate


def log_admission(logger: logging.Logger, fields: dict[str, Any]) -> None:
    """One line per admission; the fields become top-level JSON keys.

    This runs for every request, so when the line goes to our own JSON handler it is serialised and
    queued directly, without building a LogRecord; otherwise (a library user's or a test's logging
    set-up) it goes through `logging` like any other record.
    """
    if not logger.isEnabledFor(logging.INFO):
        return
    handler = _direct_handler(logger)
    if handler is not None:
        entry = {"ts": handler.json._timestamp(time.time()), "level": "info", "logger": logger.name}
        entry.update(fields)
        line = orjson.dumps(entry, default=str)
        # A string longer than MAX_FIELD characters takes more than MAX_FIELD bytes of the line, so a
        # short line (every admission's) has nothing to bound and is already the bounded line.
        if len(line) > MAX_FIELD:
            entry.update((key, _bounded(value)) for key, value in fields.items())
            line = orjson.dumps(entry, default=str)
        _enqueue(handler.lines, line.decode())
        return
    logger.handle(logger.makeRecord(logger.name, logging.INFO, "", 0, "admission", (), None, extra={"fields": fields}))


def _direct_handler(logger: logging.Logger) -> _LineQueueHandler | None:
    """Our queue handler when it is the only place `logger`'s records go, else None."""
    current: logging.Logger | None = logger
    while current is not None:
        if current.handlers:
            only = current.handlers[0]
            return (
                only
                if len(current.handlers) == 1
                and isinstance(only, _LineQueueHandler)
                and not current.propagate
                and not logger.filters
                else None
            )
        if not current.propagate:
            return None
        current = current.parent
    return None
