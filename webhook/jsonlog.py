"""Structured logging: one JSON object per line, written by a background thread.

Formatting and writing to stderr happen off the event loop (a QueueHandler hands records to a
QueueListener thread), so a slow log pipe never stalls admissions.
"""
from __future__ import annotations

import logging
import logging.handlers
import queue
import sys
import time
from typing import Any

import orjson

ADMISSION_LOGGER = "colocate.admission"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        fields = getattr(record, "fields", None)
        if fields:
            entry.update(fields)
        else:
            entry["msg"] = record.getMessage()
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def setup_logging(level: str = "info") -> logging.handlers.QueueListener:
    """Route every colocate logger through a queue to a JSON stderr writer; returns the listener."""
    records: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    writer = logging.StreamHandler(sys.stderr)
    writer.setFormatter(JsonFormatter())
    listener = logging.handlers.QueueListener(records, writer, respect_handler_level=False)
    root = logging.getLogger("colocate")
    root.handlers[:] = [logging.handlers.QueueHandler(records)]
    root.setLevel(level.upper())
    root.propagate = False
    listener.start()
    return listener


def log_admission(logger: logging.Logger, fields: dict[str, Any]) -> None:
    """One line per admission; the fields become top-level JSON keys."""
    if logger.isEnabledFor(logging.INFO):
        logger.info("admission", extra={"fields": fields})
