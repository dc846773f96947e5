"""What the OpenAPI document says beyond what drf-spectacular reads from the serializers."""

from __future__ import annotations

from typing import Any

from drf_spectacular import openapi

# Text the database can store: no NUL character (the edge guard refuses it, and unpaired
# surrogates, which no UTF-8 request can carry anyway).
STORABLE_TEXT = "^[^\\u0000]*$"
# The white space the API trims from text before it checks that it is not blank (DRF's
# CharField, by `str.strip()`): Python's own set, spelled out, since a pattern in the document
# is ECMA-262's and its `\s` is another set.
WHITE_SPACE = (
    "\\t\\n\\u000b\\u000c\\r\\u001c-\\u001f \\u0085\\u00a0\\u1680\\u2000-\\u200a"
    "\\u2028\\u2029\\u202f\\u205f\\u3000"
)
# Text that may not be blank (minLength 1): storable, with a character other than white space.
NON_BLANK_TEXT = f"^[^\\u0000]*[^\\u0000{WHITE_SPACE}][^\\u0000]*$"
FREE_FORM_NOTE = (
    "Any JSON, at most 32 levels deep; no text in it (keys included) may hold a NUL character."
)


def _text(schema: dict[str, Any]) -> None:
    if schema.get("type") == "string" and "enum" not in schema and "format" not in schema:
        blank_refused = schema.get("minLength", 0) >= 1
        schema.setdefault("pattern", NON_BLANK_TEXT if blank_refused else STORABLE_TEXT)
    for child in schema.get("properties", {}).values():
        _text(child)
    if isinstance(schema.get("items"), dict):
        _text(schema["items"])
    if isinstance(schema.get("additionalProperties"), dict):
        _text(schema["additionalProperties"])
    if "type" not in schema and "$ref" not in schema and "allOf" not in schema:
        schema.setdefault("description", FREE_FORM_NOTE)


def refuse_unknown_fields(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    """Every request body refuses fields it does not know (StrictSerializer) and text the
    database cannot store (the edge guard): say so, in the bodies and in the parameters."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
            _text(component)
    for item in result.get("paths", {}).values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                _text(parameter.get("schema", {}))
    return result


class AutoSchema(openapi.AutoSchema):
    """An operation's description is its view method's docstring (drf-spectacular's default),
    each paragraph on one line: the line breaks are the code's, not the document's."""

    def get_description(self) -> str:  # type: ignore[override]  # drf-spectacular's, not DRF's
        paragraphs = super().get_description().split("\n\n")
        return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs)
