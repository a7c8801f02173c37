"""The JSON log lines an operator's log pipeline parses."""
import io
import json
import logging

import pytest

from cli.jsonlog import log_admission, setup_logging


@pytest.fixture(autouse=True)
def restore_logging():
    """setup_logging reconfigures the process-wide `colocate` logger; put it back for other tests."""
    logger = logging.getLogger("colocate")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved


def test_admission_and_ordinary_lines_are_one_json_object_each():
    stream = io.StringIO()
    writer = setup_logging("info", stream)
    try:
        log_admission(logging.getLogger("colocate.admission"),
                      {"uid": "u1", "allowed": False, "matchedProfiles": ["a"]})
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
