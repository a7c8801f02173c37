"""Every slo-controller-config document is one JSON object: text that is not JSON, or JSON that is
not an object, is refused in one line by whichever key it is (the manager reports the line as the
key's config error, the koordlet keeps its last good config)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from policies.apis.slo_config.colocation import decode_colocation
from policies.apis.slo_config.cpu_normalization import load_normalization
from policies.apis.slo_config.nodeslo_config import decode_strategy_config
from policies.apis.slo_config.resource_amplification import load_amplification

DECODERS: dict[str, Callable[[str], Any]] = {
    "colocation": decode_colocation,
    "normalization": load_normalization,
    "amplification": load_amplification,
    "resource-threshold-config": lambda text: decode_strategy_config("resource-threshold-config", text),
}


@pytest.mark.parametrize(
    "decoder, text, message",
    [
        ("colocation", "[1]", "json: cannot unmarshal array into Go value of type ColocationCfg"),
        ("colocation", "{", "invalid JSON: Expecting property name enclosed in double quotes"),
        ("normalization", '"on"', "must be a JSON object"),
        ("amplification", "7", "must be a JSON object"),
        ("resource-threshold-config", "null", "resource-threshold-config: must be a JSON object"),
        ("resource-threshold-config", "{]", "resource-threshold-config: invalid JSON: Expecting property name"),
    ],
)
def test_a_document_that_is_no_json_object_is_refused_in_one_line(decoder: str, text: str, message: str) -> None:
    with pytest.raises(ValueError) as info:
        DECODERS[decoder](text)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
