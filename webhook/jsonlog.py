"""Structured logging: one JSON object per line, written to stderr by a background thread.

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
from typing import IO, Any

import orjson

ADMISSION_LOGGER = "colocate.admission"


class JsonFormatter(logging.Formatter):
    def __init__(self) -> None:
        super().__init__()
        self._second = -1
        self._second_text = ""

    def _timestamp(self, created: float) -> str:
        second = int(created)
        if second != self._second:  # strftime once per second, not once per line
            self._second, self._second_text = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._second_text}.{int((created - second) * 1000):03d}Z"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"ts": self._timestamp(record.created), "level": record.levelname.lower(),
                                 "logger": record.name}
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        else:
            entry["msg"] = record.getMessage()
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class _LineQueueHandler(logging.Handler):
    """Formats in the caller, queues the line; thread-safe without the handler lock."""

    def __init__(self, lines: queue.SimpleQueue[str | None]) -> None:
        super().__init__()
        self.lines = lines
        self.formatter = JsonFormatter()

    def handle(self, record: logging.LogRecord) -> bool:  # type: ignore[override]
        try:
            self.lines.put(self.formatter.format(record))  # type: ignore[union-attr]
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
            line = self.lines.get()
            batch = []
            while line is not None:
                batch.append(line)
                try:
                    line = self.lines.get_nowait()
                except queue.Empty:
                    break
            if batch:
                try:
                    self.stream.write("\n".join(batch) + "\n")
                    self.stream.flush()
                except (OSError, ValueError):
                    pass  # a closed or broken stderr must not kill the writer
            if line is None:
                return

    def stop(self) -> None:
        self.lines.put(None)
        self.thread.join(timeout=5)


def setup_logging(level: str = "info", stream: IO[str] | None = None) -> LogWriter:
    """Route every colocate logger to JSON lines on stderr; returns the writer to `stop()` at exit."""
    lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
    root = logging.getLogger("colocate")
    root.handlers[:] = [_LineQueueHandler(lines)]
    root.setLevel(level.upper())
    root.propagate = False
    return LogWriter(lines, stream or sys.stderr)


def log_admission(logger: logging.Logger, fields: dict[str, Any]) -> None:
    """One line per admission; the fields become top-level JSON keys."""
    if logger.isEnabledFor(logging.INFO):
        # makeRecord + handle skips logger.info's caller lookup (a stack walk): this runs per request.
        logger.handle(logger.makeRecord(logger.name, logging.INFO, "", 0, "admission", None, None,
                                        extra={"fields": fields}))
