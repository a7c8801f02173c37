"""The JSON log lines an operator's log pipeline parses."""

import io
import json
import logging
import queue
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import colocate.cli.jsonlog
from colocate.cli.jsonlog import LIBRARY_LOGGERS, MAX_FIELD, dropped_lines, log_admission, setup_logging


@pytest.fixture(autouse=True)
def restore_logging():
    """setup_logging reconfigures process-wide loggers (colocate, aiohttp, asyncio); put them back."""
    loggers = [logging.getLogger(name) for name in ("colocate", *LIBRARY_LOGGERS)]
    saved = [(list(logger.handlers), logger.level, logger.propagate) for logger in loggers]
    yield
    for logger, (handlers, level, propagate) in zip(loggers, saved, strict=True):
        logger.handlers[:], logger.level, logger.propagate = handlers, level, propagate


def test_library_tracebacks_are_json_lines_with_a_bounded_tail():
    stream = io.StringIO()
    writer = setup_logging("info", stream)
    try:
        try:
            raise RuntimeError("x" * (3 * MAX_FIELD))
        except RuntimeError:
            logging.getLogger("aiohttp.server").exception("Unhandled exception")
        log_admission(logging.getLogger("colocate.admission"), {"uid": "u", "object": "n" * (3 * MAX_FIELD)})
    finally:
        writer.stop()
    error, admission = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert error["logger"] == "aiohttp.server" and error["msg"] == "Unhandled exception"
    assert error["error"].startswith("...") and len(error["error"]) <= MAX_FIELD + 3
    assert len(admission["object"]) < MAX_FIELD + 32


def test_lines_beyond_the_queue_bound_are_dropped_and_counted(monkeypatch):
    monkeypatch.setattr(colocate.cli.jsonlog, "MAX_QUEUED", 5)
    monkeypatch.setattr(colocate.cli.jsonlog, "BATCH_SECONDS", 1.0)  # the writer waits: the queue fills
    stream = io.StringIO()
    before = dropped_lines()
    writer = setup_logging("info", stream)
    try:
        for i in range(50):
            log_admission(logging.getLogger("colocate.admission"), {"uid": f"u{i}"})
    finally:
        writer.stop()
    written = stream.getvalue().splitlines()
    assert 5 <= len(written) <= 6  # the bound, give or take the one line the writer had taken
    assert dropped_lines() - before == 50 - len(written)


def test_admission_and_ordinary_lines_are_one_json_object_each():
    stream = io.StringIO()
    writer = setup_logging("info", stream)
    try:
        log_admission(
            logging.getLogger("colocate.admission"), {"uid": "u1", "allowed": False, "matchedProfiles": ["a"]}
        )
        logging.getLogger("colocate.state").warning("cannot load %s", "x.yaml")
        logging.getLogger("colocate.state").debug("not shown at info")
    finally:
        writer.stop()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert len(lines) == 2
    admission, warning = lines
    assert admission["logger"] == "colocate.admission" and admission["level"] == "info"
    assert admission["uid"] == "u1" and admission["allowed"] is False and admission["matchedProfiles"] == ["a"]
    assert admission["ts"].endswith("Z") and "T" in admission["ts"]
    assert warning == {"ts": warning["ts"], "level": "warning", "logger": "colocate.state", "msg": "cannot load x.yaml"}


def test_admission_lines_are_dropped_below_info():
    stream = io.StringIO()
    writer = setup_logging("warning", stream)
    log_admission(logging.getLogger("colocate.admission"), {"uid": "u1"})
    writer.stop()
    assert stream.getvalue() == ""


class Tag(str):
    pass


FIELD_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.lists(st.text(max_size=3), max_size=2),
    st.builds(lambda n, c: c * n, st.integers(0, 2 * MAX_FIELD), st.sampled_from('aé\n"')),
    st.builds(Tag, st.text(max_size=3)),
    st.builds(lambda n: ["x" * 1500] * n, st.integers(0, 4)),
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["uid", "object", "message", "ts", "level", "code", "matchedProfiles"]),
        FIELD_VALUES,
        max_size=5,
    )
)
def test_an_admission_line_is_the_formatters_line_with_every_string_bounded(monkeypatch_fields):
    fields = monkeypatch_fields
    lines = queue.SimpleQueue()
    handler = colocate.cli.jsonlog._LineQueueHandler(lines)
    logger = logging.getLogger("colocate.admission.agreement")
    logger.handlers[:], logger.propagate, logger.level = [handler], False, logging.INFO
    try:
        log_admission(logger, fields)
    finally:
        logger.handlers[:] = []
    line = lines.get_nowait()
    entry = json.loads(line)
    expected = {"ts": entry["ts"], "level": "info", "logger": logger.name}
    expected.update((key, colocate.cli.jsonlog._bounded(value)) for key, value in fields.items())
    assert line == orjson.dumps(expected, default=str).decode()


@given(st.floats(min_value=0, max_value=4e9, allow_nan=False) | st.integers(0, 4 * 10**9).map(lambda s: s + 0.9999))
def test_timestamps_are_utc_to_the_millisecond(created):
    second = int(created)
    expected = f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(second))}.{int((created - second) * 1000):03d}Z"
    assert colocate.cli.jsonlog.JsonFormatter()._timestamp(created) == expected
