"""What the OpenAPI document says beyond what drf-spectacular reads from the serializers."""

from __future__ import annotations

from typing import Any


def refuse_unknown_fields(result: dict[str, Any], generator: Any, **kwargs: Any) -> dict[str, Any]:
    """Every request body refuses fields it does not know (StrictSerializer): say so."""
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request") and component.get("type") == "object":
            component["additionalProperties"] = False
    return result
