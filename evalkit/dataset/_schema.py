"""``dataset.schema.json``: strict JSON, a valid JSON Schema, and closed over its own file.

A ``$ref`` resolves only inside ``dataset.schema.json`` itself (its ``#`` fragments and the
``$id`` resources it embeds), the bundled entry envelope and the JSON Schema metaschemas. Lint
never fetches anything and never reads a file other than the dataset's: a reference to the
network, to another file or outside the dataset folder is a named violation, so the dataset
digest (which covers this one schema file) covers every rule applied.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit
from urllib.request import url2pathname

import jsonschema
from jsonschema.exceptions import SchemaError
from jsonschema_specifications import REGISTRY as METASCHEMAS
from referencing import Registry, Resource
from referencing.exceptions import NoSuchResource, Unresolvable
from referencing.jsonschema import DRAFT202012

from evalkit.dataset._envelope import ENVELOPE
from evalkit.dataset._json import read_document
from evalkit.dataset._violations import Collector, json_pointer, json_type

_REF_KEYWORDS = frozenset({"$ref", "$dynamicRef"})
# Keywords whose values are data, not subschemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
_FIX_INLINE = ("copy the referenced subschema into dataset.schema.json under $defs and refer to "
               "it as '#/$defs/NAME'")


def _refuse(uri: str) -> Resource[Any]:
    """The registry's retrieval: nothing outside what it was given is ever fetched or read."""
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # attrs field, unseen by mypy


def load_project_schema(path: Path, found: Collector) -> tuple[bytes | None, Any]:
    """The schema file's bytes (for the digest) and a validator, or None if it is unusable."""
    if not _readable(path, found):
        return None, None
    raw = path.read_bytes()
    usable, schema = read_document(path, raw, found)
    cls = _validator_class(path, schema, found) if usable else None
    if cls is None:
        return raw, None
    root = Resource.from_contents(schema, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry(  # type: ignore[call-arg]  # attrs alias, unseen by mypy
        retrieve=_refuse).with_resource(
        ENVELOPE["$id"], Resource.from_contents(ENVELOPE))
    everything = METASCHEMAS.combine(registry).with_resource(root.id() or "", root).crawl()
    broken = 0
    for pointer, base, ref in _refs(schema, root.id() or ""):
        try:
            everything.resolver(base_uri=base).lookup(ref)
        except Unresolvable:
            broken += 1
            keyword = pointer.rsplit("/", 1)[1]
            found.add(path, pointer, *_unresolvable(f"{keyword} {ref!r}", urljoin(base, ref),
                                                    everything, path.parent))
    return raw, None if broken else cls(schema, registry=registry)


def _readable(path: Path, found: Collector) -> bool:
    """Whether the schema file is a regular file of the dataset folder (if not, reported)."""
    if path.is_symlink() and not path.resolve().is_relative_to(path.parent.resolve()):
        found.add(path, "", "dataset.schema.json is a symlink to a file outside the dataset "
                  "folder (not read)", "replace the symlink with the schema file itself")
        return False
    if not path.is_file():
        found.add(path, "", "dataset.schema.json is missing" if not path.exists() else
                  "dataset.schema.json is not a regular file",
                  "add the dataset's JSON Schema next to README.md")
        return False
    return True


def _validator_class(path: Path, schema: Any, found: Collector) -> Any:
    """The validator class of the schema's draft, if the schema is valid against its
    metaschema; None if not (reported)."""
    if not isinstance(schema, dict | bool):
        found.add(path, "", f"not a valid JSON Schema: found {json_type(schema)}",
                  "make the schema a JSON object, e.g. {\"type\": \"object\"}")
        return None
    if isinstance(schema, dict) and not isinstance(schema.get("$schema", ""), str):
        found.add(path, "/$schema", "not a valid JSON Schema: $schema must be a URI string",
                  "set it to \"https://json-schema.org/draft/2020-12/schema\"")
        return None
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except SchemaError as err:
        found.add(path, json_pointer(err.absolute_path), f"not a valid JSON Schema: {err.message}",
                  "correct the schema so that it validates against its metaschema")
        return None
    return cls


def _refs(schema: Any, base: str, parts: tuple[Any, ...] = ()) -> Iterator[tuple[str, str, str]]:
    """(pointer, base URI, reference) of every ``$ref``/``$dynamicRef`` in the schema, the base
    following the ``$id`` of the enclosing subschemas."""
    if isinstance(schema, dict):
        if isinstance(schema.get("$id"), str):
            base = urljoin(base, schema["$id"])
        for key, value in schema.items():
            if key in _REF_KEYWORDS and isinstance(value, str):
                yield json_pointer([*parts, key]), base, value
            elif key not in _DATA_KEYWORDS:
                yield from _refs(value, base, (*parts, key))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _refs(value, base, (*parts, index))


def _unresolvable(ref: str, target: str, registry: Registry[Any],
                  folder: Path) -> tuple[str, str]:
    """Message and fix for a reference (``ref``: keyword and value) that did not resolve, by
    where it points (``target``)."""
    document = urldefrag(target).url
    if document in registry:
        return (f"{ref} points nowhere in the schema",
                "define the referenced subschema (e.g. under $defs) or correct the $ref")
    scheme = urlsplit(target).scheme
    if scheme in ("http", "https"):
        return (f"{ref} points to the network; lint never fetches a schema",
                _FIX_INLINE)
    if scheme in ("file", ""):
        local = url2pathname(urlsplit(target).path) if scheme else unquote(urlsplit(target).path)
        inside = os.path.normpath(os.path.join(os.path.abspath(folder), local))
        if os.path.commonpath([inside, os.path.abspath(folder)]) != os.path.abspath(folder):
            return (f"{ref} points outside the dataset folder; lint reads nothing there",
                    _FIX_INLINE)
        return (f"{ref} points to another file; only references within "
                "dataset.schema.json and the evalkit envelope resolve", _FIX_INLINE)
    return (f"{ref} uses the scheme {scheme!r}; lint resolves no external reference",
            _FIX_INLINE)
