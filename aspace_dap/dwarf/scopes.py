"""Qualified names of DIEs: the namespaces and classes that enclose them, as gdb prefixes a function's name.

DWARF gives a function its plain name (`store<float>`) and places its declaration inside the
DW_TAG_namespace and class DIEs of its scope; gdb prints `lib::detail::store<float>`. The scope of
a concrete or inlined function is that of the last DIE its abstract_origin / specification chain
reaches (an out-of-line member's declaration inside its class). A DIE knows no parent, so the path
to it is found from its unit's top, skipping the subtrees that cannot hold it, once per DIE.
"""

from __future__ import annotations

from .dies import (AT_NAME, MAX_DEPTH, TAG_CLASS_TYPE, TAG_ENUMERATION_TYPE, TAG_MODULE, TAG_NAMESPACE,
                   TAG_STRUCTURE_TYPE, TAG_UNION_TYPE, Die, DieReader)

_SCOPE_TAGS = (TAG_NAMESPACE, TAG_MODULE, TAG_CLASS_TYPE, TAG_STRUCTURE_TYPE, TAG_UNION_TYPE, TAG_ENUMERATION_TYPE)


def enclosing(reader: DieReader, die: Die) -> list[Die] | None:
    """The DIEs that enclose `die` in its unit, outermost first (the unit's own DIE left out);
    None when the walk does not find it (a DIE the unit's tree does not hold)."""
    path: list[Die] = []
    node = die.unit.top
    target = die.offset
    for _ in range(MAX_DEPTH):
        for child in reader.children(node):
            if child.offset == target:
                return path
            if child.has_children and child.offset < target < reader._skip_subtree(child):
                path.append(child)
                node = child
                break
        else:
            return None
    return None


def scope_prefix(reader: DieReader, die: Die) -> str | None:
    """`lib::detail::` for a DIE declared in those namespaces ('' at the unit's level); None where a
    scope has no name gdb would print from DWARF alone (a lambda's class, a function-local class)."""
    cache = reader.__dict__.setdefault("_scope_prefixes", {})
    if die.offset in cache:
        return cache[die.offset]
    path = enclosing(reader, die)
    prefix: str | None = None
    if path is not None:
        parts = []
        for scope in path:
            if scope.tag not in _SCOPE_TAGS:
                parts = None
                break
            name = scope.get(AT_NAME)
            if not isinstance(name, str) or not name:
                if scope.tag != TAG_NAMESPACE:
                    parts = None
                    break
                name = "(anonymous namespace)"
            parts.append(name)
        prefix = "".join(p + "::" for p in parts) if parts is not None else None
    cache[die.offset] = prefix
    return prefix


def qualified_name(reader: DieReader, chain: list[Die]) -> str | None:
    """The qualified name of the function whose DIE and abstract_origin / specification DIEs are `chain`;
    None when it has no name or its scope cannot be named."""
    name = next((d.get(AT_NAME) for d in chain if AT_NAME in d.raw), None)
    if not isinstance(name, str) or not name:
        return None
    prefix = scope_prefix(reader, chain[-1])
    return None if prefix is None else prefix + name
