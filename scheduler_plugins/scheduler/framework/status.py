"""Outcomes are values, not exceptions: a `Status` has a code, reasons and the plugin that
produced it (Kubernetes `framework.Status`)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Any

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


class Code(IntEnum):
    Success = 0
    Error = 1
    Unschedulable = 2
    UnschedulableAndUnresolvable = 3
    Wait = 4
    Skip = 5


@dataclass(frozen=True, slots=True)
class Status:
    code: Code = Code.Success
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def is_success(self) -> bool:
        return self.code is Code.Success

    @property
    def is_skip(self) -> bool:
        return self.code is Code.Skip

    @property
    def is_rejected(self) -> bool:
        return self.code in (Code.Unschedulable, Code.UnschedulableAndUnresolvable)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def with_plugin(self, plugin: str) -> Status:
        return self if self.plugin == plugin else Status(self.code, self.reasons, plugin)

    def as_dict(self) -> dict[str, Any]:
        return {"plugin": self.plugin, "code": self.code.name, "reasons": list(self.reasons)}


SUCCESS = Status()
SKIP = Status(Code.Skip)


def unschedulable(*reasons: str) -> Status:
    return Status(Code.Unschedulable, reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UnschedulableAndUnresolvable, reasons)


def error(*reasons: str) -> Status:
    return Status(Code.Error, reasons)
