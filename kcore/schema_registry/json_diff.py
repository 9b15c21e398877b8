"""JSON Schema compatibility, by Confluent's rules (``json/diff/``).

The previous schema and the new one are walked side by side and every
difference is named as Confluent names it (TYPE_EXTENDED,
PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL, ...). The new schema is backward
compatible when every difference is in ``COMPATIBLE``, Confluent's strict
set: whatever the previous schema accepted, the new one accepts too. So a
property may be added to a closed content model (``additionalProperties:
false``) but not to an open one, where old data may already hold that
property with any value; a property may be removed from an open model but
not from a closed one; bounds may widen but not narrow; a type may gain
members (``integer`` to ``number``, ``string`` to ``["string",
"null"]``) but not lose them.

``$ref`` is followed on both sides (a pair of schemas already being
compared is taken as compatible, which ends recursive definitions).
Not covered, and compared only for equality: ``patternProperties``,
``if``/``then``/``else``, ``contains``.
"""
from __future__ import annotations

from typing import Any

import referencing
import referencing.exceptions

# referencing's Resolver (not exported by name).
Resolver = Any

# Confluent's COMPATIBLE_CHANGES_STRICT.
COMPATIBLE = frozenset({
    "ID_CHANGED", "DESCRIPTION_CHANGED", "TITLE_CHANGED", "DEFAULT_CHANGED", "SCHEMA_REMOVED",
    "TYPE_EXTENDED", "MAX_LENGTH_INCREASED", "MAX_LENGTH_REMOVED", "MIN_LENGTH_DECREASED",
    "MIN_LENGTH_REMOVED", "PATTERN_REMOVED", "MAXIMUM_INCREASED", "MAXIMUM_REMOVED",
    "MINIMUM_DECREASED", "MINIMUM_REMOVED", "EXCLUSIVE_MAXIMUM_INCREASED", "EXCLUSIVE_MAXIMUM_REMOVED",
    "EXCLUSIVE_MINIMUM_DECREASED", "EXCLUSIVE_MINIMUM_REMOVED", "MULTIPLE_OF_REDUCED",
    "MULTIPLE_OF_REMOVED", "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", "REQUIRED_ATTRIBUTE_REMOVED",
    "DEPENDENCY_ARRAY_NARROWED", "DEPENDENCY_ARRAY_REMOVED", "DEPENDENCY_SCHEMA_REMOVED",
    "MAX_PROPERTIES_INCREASED", "MAX_PROPERTIES_REMOVED", "MIN_PROPERTIES_DECREASED",
    "MIN_PROPERTIES_REMOVED", "ADDITIONAL_PROPERTIES_ADDED", "ADDITIONAL_PROPERTIES_EXTENDED",
    "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", "MAX_ITEMS_INCREASED",
    "MAX_ITEMS_REMOVED", "MIN_ITEMS_DECREASED", "MIN_ITEMS_REMOVED", "UNIQUE_ITEMS_REMOVED",
    "ADDITIONAL_ITEMS_ADDED", "ADDITIONAL_ITEMS_EXTENDED", "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", "ENUM_ARRAY_EXTENDED", "COMBINED_TYPE_EXTENDED",
    "PRODUCT_TYPE_NARROWED", "SUM_TYPE_EXTENDED", "NOT_TYPE_NARROWED",
})

_EMPTY: dict = {}
_FALSE = False
# (keyword, *_INCREASED means wider) per bound; a "min" widens as it decreases.
_UPPER_BOUNDS = {"maxLength": "MAX_LENGTH", "maximum": "MAXIMUM", "exclusiveMaximum": "EXCLUSIVE_MAXIMUM",
                 "maxItems": "MAX_ITEMS", "maxProperties": "MAX_PROPERTIES"}
_LOWER_BOUNDS = {"minLength": "MIN_LENGTH", "minimum": "MINIMUM", "exclusiveMinimum": "EXCLUSIVE_MINIMUM",
                 "minItems": "MIN_ITEMS", "minProperties": "MIN_PROPERTIES"}
_METADATA = {"$id": "ID", "id": "ID", "title": "TITLE", "description": "DESCRIPTION", "default": "DEFAULT"}
_INFERRED = (("object", ("properties", "required", "additionalProperties", "minProperties", "maxProperties")),
             ("array", ("items", "additionalItems", "minItems", "maxItems", "uniqueItems")),
             ("string", ("minLength", "maxLength", "pattern")),
             ("number", ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")))
_ALL_TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})


def incompatible_changes(old: Any, old_resolver: Resolver, new: Any,
                         new_resolver: Resolver) -> list[tuple[str, str]]:
    """(difference, description) of every change that is not backward compatible."""
    diff = _Diff()
    diff.compare((old, old_resolver), (new, new_resolver), "#")
    return [(kind, f"{kind.lower().replace('_', ' ')} at path '{path}'")
            for kind, path in diff.differences if kind not in COMPATIBLE]


Side = tuple[Any, Resolver]


class _Diff:
    """One comparison. Not thread-safe; a fresh one per call."""

    def __init__(self) -> None:
        self.differences: list[tuple[str, str]] = []
        self._in_progress: set[tuple[int, int]] = set()

    def add(self, kind: str, path: str) -> None:
        self.differences.append((kind, path))

    def compatible(self, original: Side, update: Side, path: str) -> bool:
        """Whether ``update`` accepts what ``original`` does, without
        recording the differences."""
        sub = _Diff()
        sub._in_progress = self._in_progress
        sub.compare(original, update, path)
        return all(kind in COMPATIBLE for kind, _ in sub.differences)

    def compare(self, original: Side | None, update: Side | None, path: str) -> None:
        if original is None or update is None:
            if original is not None:
                self.add("SCHEMA_REMOVED", path)
            elif update is not None:
                self.add("SCHEMA_ADDED", path)
            return
        original, update = _deref(original), _deref(update)
        key = (id(original[0]), id(update[0]))
        if original[0] == update[0] or key in self._in_progress:
            return
        self._in_progress.add(key)
        try:
            self._compare_schemas(original, update, path)
        finally:
            self._in_progress.discard(key)

    def _compare_schemas(self, original: Side, update: Side, path: str) -> None:
        old, new = _as_object(original[0]), _as_object(update[0])
        if old is _FALSE or new is _FALSE:
            self.add("TYPE_EXTENDED" if old is _FALSE else "TYPE_NARROWED", path)
            return
        if not old or not new:
            self.add("TYPE_EXTENDED" if not new else "TYPE_NARROWED", path)
            return
        for keyword, name in _METADATA.items():
            if old.get(keyword) != new.get(keyword):
                self.add(f"{name}_CHANGED", path)
        if _combined(old) or _combined(new):
            self._compare_combined(original, update, path)
            return
        self._compare_not(original, update, path)
        self._compare_enum(old, new, path)
        shared = self._compare_types(old, new, path)
        if "object" in shared:
            self._compare_objects(original, update, path)
        if "array" in shared:
            self._compare_arrays(original, update, path)
        self._compare_bounds(old, new, path)
        self._compare_other(old, new, path)

    def _compare_types(self, old: dict, new: dict, path: str) -> set[str]:
        old_types, new_types = _types(old), _types(new)
        if old_types == new_types:
            return set(old_types)
        if _covers(new_types, old_types):
            self.add("TYPE_EXTENDED", path)
        elif _covers(old_types, new_types):
            self.add("TYPE_NARROWED", path)
        else:
            self.add("TYPE_CHANGED", path)
        return set(old_types) & set(new_types) | ({"number"} if "integer" in old_types & new_types else set())

    def _compare_enum(self, old: dict, new: dict, path: str) -> None:
        old_values, new_values = old.get("enum"), new.get("enum")
        if old_values == new_values:
            return
        if new_values is None:
            self.add("ENUM_ARRAY_EXTENDED", path)
        elif old_values is None:
            self.add("ENUM_ARRAY_NARROWED", path)
        elif all(value in new_values for value in old_values):
            self.add("ENUM_ARRAY_EXTENDED", path)
        elif all(value in old_values for value in new_values):
            self.add("ENUM_ARRAY_NARROWED", path)
        else:
            self.add("ENUM_ARRAY_CHANGED", path)

    def _compare_bounds(self, old: dict, new: dict, path: str) -> None:
        for keywords, wider_when_bigger in ((_UPPER_BOUNDS, True), (_LOWER_BOUNDS, False)):
            for keyword, name in keywords.items():
                before, after = old.get(keyword), new.get(keyword)
                if before == after or isinstance(before, bool) or isinstance(after, bool):
                    continue
                if after is None:
                    self.add(f"{name}_REMOVED", path)
                elif before is None:
                    self.add(f"{name}_ADDED", path)
                elif (after > before) == wider_when_bigger:
                    self.add(f"{name}_{'INCREASED' if wider_when_bigger else 'DECREASED'}", path)
                else:
                    self.add(f"{name}_{'DECREASED' if wider_when_bigger else 'INCREASED'}", path)

    def _compare_other(self, old: dict, new: dict, path: str) -> None:
        if old.get("pattern") != new.get("pattern"):
            self.add("PATTERN_REMOVED" if "pattern" not in new else
                     "PATTERN_ADDED" if "pattern" not in old else "PATTERN_CHANGED", path)
        before, after = old.get("multipleOf"), new.get("multipleOf")
        if before != after:
            if after is None:
                self.add("MULTIPLE_OF_REMOVED", path)
            elif before is None:
                self.add("MULTIPLE_OF_ADDED", path)
            elif before % after == 0:
                self.add("MULTIPLE_OF_REDUCED", path)
            elif after % before == 0:
                self.add("MULTIPLE_OF_EXPANDED", path)
            else:
                self.add("MULTIPLE_OF_CHANGED", path)
        if old.get("const") != new.get("const"):
            self.add("CONST_REMOVED" if "const" not in new else
                     "CONST_ADDED" if "const" not in old else "CONST_CHANGED", path)
        if bool(old.get("uniqueItems")) != bool(new.get("uniqueItems")):
            self.add("UNIQUE_ITEMS_ADDED" if new.get("uniqueItems") else "UNIQUE_ITEMS_REMOVED", path)
        for keyword in ("patternProperties", "if", "then", "else", "contains"):
            if old.get(keyword) != new.get(keyword):
                self.add(f"{keyword.upper()}_CHANGED", path)

    def _compare_not(self, original: Side, update: Side, path: str) -> None:
        old, new = original[0].get("not"), update[0].get("not")
        if old == new:
            return
        if old is None or new is None:
            self.add("NOT_TYPE_EXTENDED" if old is None else "NOT_TYPE_NARROWED", path)
        elif self.compatible((new, update[1]), (old, original[1]), f"{path}/not"):
            self.add("NOT_TYPE_NARROWED", path)
        else:
            self.add("NOT_TYPE_EXTENDED", path)

    def _compare_combined(self, original: Side, update: Side, path: str) -> None:
        old_kind, old_parts = _combined(original[0]) or ("", [])
        new_kind, new_parts = _combined(update[0]) or ("", [])
        if not old_kind:
            if new_kind != "allOf" and any(self.compatible(original, (part, update[1]), path)
                                           for part in new_parts):
                self.add("SUM_TYPE_EXTENDED", path)
            else:
                self.add("TYPE_CHANGED", path)
            return
        if old_kind != new_kind:
            self.add("COMBINED_TYPE_CHANGED", path)
            return
        if old_kind == "allOf":
            if len(new_parts) < len(old_parts):
                self.add("PRODUCT_TYPE_NARROWED", path)
            elif len(new_parts) > len(old_parts):
                self.add("PRODUCT_TYPE_EXTENDED", path)
        elif len(new_parts) > len(old_parts):
            self.add("SUM_TYPE_EXTENDED", path)
        elif len(new_parts) < len(old_parts):
            self.add("SUM_TYPE_NARROWED", path)
        old_sides = [(part, original[1]) for part in old_parts]
        new_sides = [(part, update[1]) for part in new_parts]
        if old_kind == "allOf":
            # Every remaining conjunct must be implied by one of the old ones.
            if not all(any(self.compatible(old, new, path) for old in old_sides) for new in new_sides):
                self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path)
            return
        for index, old in enumerate(old_sides):
            where = f"{path}/{old_kind}/{index}"
            if not any(self.compatible(old, new, where) for new in new_sides):
                self.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED", where)

    def _compare_objects(self, original: Side, update: Side, path: str) -> None:
        old, new = original[0], update[0]
        old_required, new_required = set(old.get("required") or ()), set(new.get("required") or ())
        old_properties, new_properties = old.get("properties") or {}, new.get("properties") or {}
        for name in sorted(new_required - old_required):
            with_default = isinstance(new_properties.get(name), dict) and "default" in new_properties[name]
            self.add("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if with_default else "REQUIRED_ATTRIBUTE_ADDED",
                     f"{path}/required/{name}")
        for name in sorted(old_required - new_required):
            self.add("REQUIRED_ATTRIBUTE_REMOVED", f"{path}/required/{name}")
        for name in sorted(old_properties.keys() | new_properties.keys()):
            where = f"{path}/properties/{name}"
            if name not in new_properties:
                self._property_removed(original, update, name, where)
            elif name not in old_properties:
                self._property_added(original, update, name, where)
            else:
                self.compare((old_properties[name], original[1]), (new_properties[name], update[1]), where)
        self._compare_additional(original, update, "additionalProperties", "ADDITIONAL_PROPERTIES", path)

    def _property_removed(self, original: Side, update: Side, name: str, path: str) -> None:
        model = update[0].get("additionalProperties", True)
        if _open(model):
            self.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", path)
        elif model is not False:
            covered = self.compatible((original[0]["properties"][name], original[1]), (model, update[1]), path)
            self.add(f"PROPERTY_REMOVED_{'IS' if covered else 'NOT'}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                     path)
        elif original[0]["properties"][name] is False:
            self.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", path)
        else:
            self.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", path)

    def _property_added(self, original: Side, update: Side, name: str, path: str) -> None:
        model = original[0].get("additionalProperties", True)
        schema = update[0]["properties"][name]
        required = name in (update[0].get("required") or ())
        with_default = isinstance(schema, dict) and "default" in schema
        if _open(model):
            if schema is True or schema == _EMPTY:
                self.add("PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", path)
            elif required:
                self.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL" if with_default
                         else "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", path)
            else:
                self.add("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", path)
        elif model is not False:
            covered = self.compatible((model, original[1]), (schema, update[1]), path)
            self.add(f"PROPERTY_ADDED_{'IS' if covered else 'NOT'}_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                     path)
        elif required:
            self.add("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL" if with_default
                     else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", path)
        else:
            self.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL", path)

    def _compare_additional(self, original: Side, update: Side, keyword: str, name: str, path: str) -> None:
        old, new = original[0].get(keyword, True), update[0].get(keyword, True)
        where = f"{path}/{keyword}"
        if (old is False) != (new is False):
            self.add(f"{name}_{'REMOVED' if new is False else 'ADDED'}", where)
        elif _open(old) and not _open(new):
            self.add(f"{name}_NARROWED", where)
        elif _open(new) and not _open(old):
            self.add(f"{name}_EXTENDED", where)
        elif old is not False and not _open(old):
            self.compare((old, original[1]), (new, update[1]), where)

    def _compare_arrays(self, original: Side, update: Side, path: str) -> None:
        old_items, new_items = original[0].get("items", True), update[0].get("items", True)
        if isinstance(old_items, list) or isinstance(new_items, list):
            old_list = old_items if isinstance(old_items, list) else []
            new_list = new_items if isinstance(new_items, list) else []
            for index in range(max(len(old_list), len(new_list))):
                where = f"{path}/items/{index}"
                if index >= len(new_list):
                    closed = update[0].get("additionalItems", True) is False
                    self.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL" if closed
                             else "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", where)
                elif index >= len(old_list):
                    closed = original[0].get("additionalItems", True) is False
                    self.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL" if closed
                             else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL", where)
                else:
                    self.compare((old_list[index], original[1]), (new_list[index], update[1]), where)
            self._compare_additional(original, update, "additionalItems", "ADDITIONAL_ITEMS", path)
        else:
            self.compare((old_items, original[1]), (new_items, update[1]), f"{path}/items")


def _deref(side: Side, depth: int = 0) -> Side:
    """Follow ``$ref`` (and its chain) to the schema it names."""
    schema, resolver = side
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str) and depth < 32:
        try:
            resolved = resolver.lookup(schema["$ref"])
        except referencing.exceptions.Unresolvable:
            return side
        schema, resolver = resolved.contents, resolved.resolver
        depth += 1
    return schema, resolver


def _as_object(schema: Any) -> Any:
    if schema is True:
        return _EMPTY
    return schema


def _open(model: Any) -> bool:
    return model is True or model == _EMPTY


def _combined(schema: Any) -> tuple[str, list] | None:
    if isinstance(schema, dict):
        for keyword in ("oneOf", "anyOf", "allOf"):
            if isinstance(schema.get(keyword), list):
                return keyword, schema[keyword]
    return None


def _types(schema: dict) -> frozenset[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return frozenset({declared})
    if isinstance(declared, list):
        return frozenset(item for item in declared if isinstance(item, str))
    inferred = {name for name, keywords in _INFERRED if any(keyword in schema for keyword in keywords)}
    return frozenset(inferred) or _ALL_TYPES


def _covers(wider: frozenset[str], narrower: frozenset[str]) -> bool:
    """Every value of ``narrower``'s types is of one of ``wider``'s
    (an integer is a number)."""
    return all(kind in wider or (kind == "integer" and "number" in wider) for kind in narrower)
