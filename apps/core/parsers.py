"""Bounded JSON: every request body is read within a size limit, checked for nesting depth
before it is decoded, and holds nothing a database column cannot store.

Python's decoder recurses once per nesting level, so a few kilobytes of brackets end in a
RecursionError; its output can hold NUL characters (PostgreSQL text and jsonb refuse them),
numbers beyond a bigint and `1e999` (infinity). All of these are refused here with a 400 that
names the field, before any view or database sees the document.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import msgspec
from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser
from stackselect_domain.checks import NUL_REFUSED

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# A JSON string, escapes included, found without decoding (UTF-8 never puts ASCII in a
# multi-byte sequence, so scanning the bytes is exact).
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
_ONE_KIND = bytes.maketrans(b"{}", b"[]")
# An object's values, and a list's items, found but left undecoded (C-speed scans).
_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])


class JsonBodyError(ValueError):
    """The body is refused; `field` is the path of the offending value ("body": the whole)."""

    def __init__(self, message: str, *, field: str = "body") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


def _outside_strings(raw: bytes) -> bytes:
    """The bytes of `raw` outside its JSON strings. Without an escaped quote the quotes
    alternate open and close, so splitting on them is exact and far cheaper than the regex
    (a results body has nine keys per record); with one, the regex finds each string."""
    if b'\\"' not in raw:
        return b"".join(raw.split(b'"')[0::2])
    return _STRING.sub(b"", raw)


def check_shape(raw: bytes, *, max_depth: int, max_containers: int | None = None) -> None:
    """Refuse nesting deeper than max_depth (and more objects and arrays than max_containers,
    which cost far more memory than their bytes), in C-speed passes over the brackets alone.

    Each pass removes every innermost pair, which lowers the deepest nesting by exactly one,
    so the brackets are gone after max_depth passes exactly when the nesting is within it.
    """
    brackets = _outside_strings(raw).translate(_ONE_KIND, _NOT_BRACKETS)
    opened = brackets.count(b"[")
    if opened != len(brackets) - opened:
        raise JsonBodyError("not JSON (unbalanced brackets)")
    if max_containers is not None and opened > max_containers:
        raise JsonBodyError(f"more than {max_containers} objects and arrays")
    for _ in range(max_depth):
        if not brackets:
            return
        brackets = brackets.replace(b"[]", b"")
    if brackets:
        raise JsonBodyError(f"nested deeper than {max_depth} levels")


def _refuse_constant(name: str) -> Any:
    raise JsonBodyError(f"{name} is not a number JSON allows")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _scalar_error(value: Any) -> str | None:
    if isinstance(value, str):
        return NUL_REFUSED if "\x00" in value else None
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        return "integer out of range (64-bit)"
    if isinstance(value, float) and not math.isfinite(value):
        return "number out of range"
    return None


def check_values(document: Any, *, skip: frozenset[str] = frozenset()) -> None:
    """Walk the document (without recursion) and refuse the first value no column can hold.

    `skip` names top-level keys whose values a later, column-wise check judges instead.
    """
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if "\x00" in key:
                    raise JsonBodyError(NUL_REFUSED, field=path or "body")
                if not (path == "" and key in skip):
                    stack.append((_join(path, key), item))
        elif isinstance(value, list):
            stack.extend((_join(path, index), item) for index, item in enumerate(value))
        else:
            problem = _scalar_error(value)
            if problem:
                raise JsonBodyError(problem, field=path or "body")


def loads_bounded(
    raw: bytes, *, max_containers: int | None = None, skip: frozenset[str] = frozenset()
) -> Any:
    """Decode a UTF-8 JSON body within the shape limits; JsonBodyError names what is wrong."""
    check_shape(raw, max_depth=settings.API_JSON_MAX_DEPTH, max_containers=max_containers)
    try:
        document = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as error:
        raise JsonBodyError(f"not UTF-8 ({error.reason} at byte {error.start})") from error
    except JsonBodyError:
        raise
    except (ValueError, RecursionError) as error:  # RecursionError: a defence in depth only
        raise JsonBodyError(f"not JSON ({error})") from error
    check_values(document, skip=skip)
    return document


def loads_items_raw(raw: bytes, *, max_containers: int | None, key: str) -> Any:
    """As `loads_bounded(raw, max_containers=..., skip={key})`, but when the body is an object
    whose `key` holds a list, that list's items stay undecoded JSON (msgspec.Raw, each a valid
    JSON value) for a typed decoder to read straight into its own types, instead of becoming
    Python objects first. Any body this does not take (not UTF-8, not an object, `key` not a
    list, NaN, a lone surrogate, more brackets than max_containers, nesting beyond msgspec's
    recursion limit or, outside the items, beyond API_JSON_MAX_DEPTH, ...) goes through
    `loads_bounded`, which refuses exactly what it refused before, with the same message.

    The exact bracket scan (`check_shape`) is not run over the items: it costs a pass over
    every string of the body, an eighth of a large upload. In its place the bracket bytes are
    counted (in strings too, so at least the containers: an upper bound), and the items'
    nesting is left to their typed decoder, which has to bound it anyway (the results records
    of apps/evidence/schema.py nest two levels, and its fallback for records that do not fit
    refuses every nested value but the gap list). msgspec itself stops at Python's recursion
    limit, so no depth reaches the C stack.
    """
    depth = settings.API_JSON_MAX_DEPTH
    brackets = raw.count(b"[") + raw.count(b"{")
    if max_containers is not None and brackets > max_containers:
        return loads_bounded(raw, max_containers=max_containers, skip=frozenset({key}))
    try:
        raw.decode("utf-8")  # the scans below skip strings without checking their bytes
        values = _RAW_OBJECT.decode(raw)
        items = _RAW_LIST.decode(values.pop(key))
        for value in values.values():  # the envelope: its exact depth check, on few bytes
            check_shape(bytes(value), max_depth=depth - 1)
    except (UnicodeDecodeError, KeyError, msgspec.DecodeError, RecursionError, JsonBodyError):
        # msgspec.ValidationError subclasses DecodeError
        return loads_bounded(raw, max_containers=max_containers, skip=frozenset({key}))
    # The other values are few and small: the standard decoder keeps its exact semantics
    # (integers beyond 64 bits stay integers, and are refused below).
    document = {name: json.loads(bytes(value)) for name, value in values.items()}
    check_values(document)
    document[key] = items
    return document


def body_limit(view_name: str | None) -> int:
    """The most bytes a body of this endpoint may have (settings.API_BODY_LIMITS by view)."""
    return settings.API_BODY_LIMITS.get(view_name or "", settings.API_BODY_MAX_BYTES)


def read_limited(stream: Any, *, limit: int, declared: str | None) -> bytes:
    """Read at most `limit` bytes; a larger declared or actual body is a 413."""
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"The request body is over this endpoint's limit of {limit} bytes.")
    raw = stream.read(limit + 1) if stream is not None else b""
    if len(raw) > limit:
        raise BodyTooLarge(f"The request body is over this endpoint's limit of {limit} bytes.")
    return raw


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with the body limit of its endpoint, bounded depth and safe values."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None):
        context = parser_context or {}
        request = context.get("request")
        django_request = getattr(request, "_request", None)
        match = getattr(django_request, "resolver_match", None)
        declared = django_request.META.get("CONTENT_LENGTH") if django_request else None
        raw = read_limited(stream, limit=body_limit(match and match.view_name), declared=declared)
        try:
            return loads_bounded(raw)
        except JsonBodyError as error:
            raise InvalidBody(error) from error


class InvalidBody(ParseError):
    """A 400 {detail, code, field} for a body the bounded parser refused."""

    default_code = "invalid_body"

    def __init__(self, error: JsonBodyError) -> None:
        super().__init__(str(error), code=self.default_code)
        self.field = error.field
