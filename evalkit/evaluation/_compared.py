"""``COMPARED_FIELDS``: the part of an object output that repeatability and bias compare, and
the refusal to compare a field that no output has.

A compared field that none of a type's object outputs carries compares ``null`` with ``null``
on every entry: it would pass whatever the component returned, so a renamed field (``reply``
become ``answer``) would hide an unstable answer behind a perfect score. evalkit cannot tell
such a field from an optional one that happened never to appear, so the type's entries are
left unscored with the reason (they fail) rather than passed on a comparison of nothing. The
outputs are known only once the calls are made; they stay recorded, so a fixed
``COMPARED_FIELDS`` is applied to them by ``evalkit rescore`` without calling again.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from evalkit.records import as_object


def compared_part(output: Any, fields: tuple[str, ...] | None) -> Any:
    """The part of ``output`` that repeatability and bias compare: the named fields of an
    object (``None`` for a missing one), or the whole output when it is not an object."""
    if fields is None:
        return output
    value = as_object(output)
    if value is None:
        return output
    return {name: value.get(name) for name in fields}


def absent_fields_problem(test_type: str, outputs: Iterable[Any],
                          fields: tuple[str, ...] | None) -> str | None:
    """Why ``test_type`` cannot be scored on these outputs: the compared fields that none of
    its object outputs has, with the fields they do have; ``None`` when every compared field
    is in some output, or when no output is an object (those are compared whole)."""
    if fields is None:
        return None
    objects = [o for o in map(as_object, outputs) if o is not None]
    present = {name for o in objects for name in o}
    absent = [name for name in fields if name not in present]
    if not objects or not absent:
        return None
    named = ", ".join(repr(name) for name in absent)
    return (f"COMPARED_FIELDS names {named}, which none of the {len(objects)} {test_type} "
            f"outputs has (they have: {', '.join(sorted(present)) or 'no field'}), so any "
            "answer would pass: not scored. Name fields the outputs have, then score them "
            "again without calling: evalkit rescore RUN_ID")

