"""Watches service calls and the rows they change, to prove each change is audited.

Every Python call is seen through `sys.setprofile`, so a service is observed however its caller
imported it. Every row-changing statement is seen through a database execute wrapper, which
notes the PostgreSQL transaction id it ran in. When a service call returns, each transaction in
which it changed a row must also hold an audit event written during that call.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import CodeType, FrameType
from typing import Any

from django.db import connection

from apps.audit.models import AuditEvent

SERVICE_MODULES = (
    "apps.accounts.services",
    "apps.catalog.services",
    "apps.selections.services",
    "apps.runners.services",
    "apps.benchmarks.services",
    "apps.benchmarks.attempts",
    "apps.benchmarks.dispatch",
    "apps.evidence.services",
    "apps.decisions.services",
    "apps.decisions.retests",
)
AUDIT_TABLE = AuditEvent._meta.db_table
_WRITES = ("insert", "update", "delete")


def service_functions() -> dict[CodeType, str]:
    """Every public function defined in a service module, by its code object."""
    found = {}
    for name in SERVICE_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.startswith("_") or not inspect.isfunction(value):
                continue
            if value.__module__ != name:
                continue
            function = inspect.unwrap(value)
            found[function.__code__] = f"{name}.{attr}"
    return found


@dataclass
class Write:
    table: str
    txid: int


@dataclass
class Call:
    name: str
    writes: list[Write] = field(default_factory=list)


@dataclass
class Observer:
    functions: dict[CodeType, str]
    called: set[str] = field(default_factory=set)
    stack: list[Call] = field(default_factory=list)
    unaudited: dict[str, set[str]] = field(default_factory=dict)

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        name = self.functions.get(frame.f_code)
        if name is None:
            return
        if event == "call":
            self.called.add(name)
            self.stack.append(Call(name))
            return
        call = self.stack.pop()
        if self.stack:
            self.stack[-1].writes.extend(call.writes)
        audited = {write.txid for write in call.writes if write.table == AUDIT_TABLE}
        missing = {w.table for w in call.writes if w.table != AUDIT_TABLE and w.txid not in audited}
        if missing:
            self.unaudited.setdefault(call.name, set()).update(missing)

    def wrapper(self, execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        result = execute(sql, params, many, context)
        words = sql.lstrip().split(None, 3)
        if self.stack and words and words[0].lower() in _WRITES:
            table = _table_of(words)
            if context["cursor"].rowcount:
                with connection.connection.cursor() as raw:
                    raw.execute("SELECT txid_current()")
                    txid = raw.fetchone()[0]
                self.stack[-1].writes.append(Write(table, txid))
        return result


def _table_of(words: list[str]) -> str:
    """The table of `INSERT INTO t`, `UPDATE t`, `DELETE FROM t`."""
    verb = words[0].lower()
    name = words[2] if verb in ("insert", "delete") and len(words) > 2 else words[1]
    return name.strip('"').split('"')[0]


@contextmanager
def observed() -> Iterator[Observer]:
    observer = Observer(service_functions())
    previous = sys.getprofile()
    with connection.execute_wrapper(observer.wrapper):
        sys.setprofile(observer.profile)
        try:
            yield observer
        finally:
            sys.setprofile(previous)
