//! Hand-written schema fragments for fields whose constraints derive cannot
//! express (ranges, patterns, enums of plain strings). Kubernetes 1.20's
//! structural schemas know no CEL, so everything here is classic OpenAPI v3.

use schemars::{json_schema, Schema, SchemaGenerator};

/// An integer `min..=max` with a default.
pub(crate) fn int_range(min: i64, max: i64, default: i64) -> Schema {
    json_schema!({"type": "integer", "format": "int32", "minimum": min, "maximum": max, "default": default})
}

/// A list of strings, each matching `pattern`.
pub(crate) fn string_list(pattern: &str) -> Schema {
    json_schema!({
        "type": "array",
        "items": {"type": "string", "pattern": pattern, "minLength": 1, "maxLength": 261},
    })
}

/// A Kubernetes resource quantity such as `100m` or `128Mi`.
pub(crate) fn quantity(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "pattern": r"^([0-9]+(\.[0-9]+)?)(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$",
    })
}
