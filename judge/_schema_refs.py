"""Every ``$ref`` of a tool schema must resolve inside the schema, checked when it is compiled.

``jsonschema`` resolves references lazily, during validation: a dangling ``$ref``
(``#/definitions/missing``) raised a ``referencing`` error out of the first call that reached
it, mid-stream, and a remote one (``https://example.com/schema.json``) was *fetched over the
network* (jsonschema's deprecated default). A tool schema is configuration, so both are
configuration errors, found once, when the schema is given.

Validators are built with :data:`OFFLINE_REGISTRY`: jsonschema adds the official meta-schemas
to it, and it retrieves nothing, so no reference can ever reach the network. :func:`bad_reference`
then walks every subschema (following ``$id`` changes of base URI as jsonschema does) and
resolves each ``$ref`` / ``$dynamicRef`` once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import referencing.jsonschema
from jsonschema.protocols import Validator
from jsonschema_specifications import REGISTRY as META_SCHEMAS  # type: ignore[import-untyped]
from referencing import Registry, Resource, Specification
from referencing.exceptions import Unresolvable

if TYPE_CHECKING:
    from referencing._core import Resolver  # not re-exported by referencing

__all__ = ["OFFLINE_REGISTRY", "bad_reference", "offline_root"]

#: The registry every validator is built with: no resource of its own, and no retrieval.
OFFLINE_REGISTRY: Registry[Any] = Registry()

_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef")


def _describe(keyword: str, ref: str, error: Exception) -> str:
    """Why ``ref`` cannot be used, in one clause."""
    if type(error) is Unresolvable:  # the document itself is unknown (subclasses: a part of it)
        return (
            f"{keyword} {ref!r} points to another document; toolwire never fetches schemas, so "
            "put its definitions in the tool's schema (under $defs) and point there"
        )
    if isinstance(error, Unresolvable):
        return f"{keyword} {ref!r} points to nothing in the schema"
    return f"{keyword} {ref!r} is not a usable reference ({error})"


def offline_root(
    schema: Mapping[str, Any], validator_class: type[Validator]
) -> tuple[Specification[Any], Resource[Any], Resolver[Any]]:
    """``schema``'s specification (the dialect of ``validator_class``, as jsonschema itself
    derives it: each meta-schema names its own dialect in ``$schema``), its resource, and a
    resolver rooted at it that knows the meta-schemas and fetches nothing: what every walk of
    its references starts from."""
    dialect = validator_class.META_SCHEMA.get("$schema")
    specification: Specification[Any] = referencing.jsonschema.specification_with(
        dialect if isinstance(dialect, str) else "urn:unknown-dialect",
        default=Specification.OPAQUE,
    )
    root = specification.create_resource(schema)
    return specification, root, META_SCHEMAS.combine(OFFLINE_REGISTRY).resolver_with_root(root)


def bad_reference(schema: Mapping[str, Any], validator_class: type[Validator]) -> str | None:
    """Why a reference in ``schema`` cannot be resolved offline, or ``None`` when all can.

    ``schema`` must already be valid against its meta-schema (so that its keywords have the
    shapes the walk expects).
    """
    _, root, resolver = offline_root(schema, validator_class)
    stack = [(root, resolver)]
    while stack:
        resource, resolver = stack.pop()
        contents = resource.contents
        if isinstance(contents, Mapping):
            for keyword in _REFERENCE_KEYWORDS:
                ref = contents.get(keyword)
                if not isinstance(ref, str):
                    continue
                try:
                    target = resolver.lookup(ref).contents
                except (Unresolvable, ValueError) as error:
                    return _describe(keyword, ref, error)
                if not isinstance(target, Mapping | bool):
                    return f"{keyword} {ref!r} points to something that is not a schema"
        for subresource in resource.subresources():
            stack.append((subresource, resolver.in_subresource(subresource)))
    return None

