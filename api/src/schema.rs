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

/// `checkSettings`: an object with one string property per setting of the
/// default checks, each with the pattern of its kind, so that the API
/// server refuses a malformed value at apply. A structural schema cannot
/// also refuse other names (`additionalProperties` is forbidden next to
/// `properties`, `patternProperties` is not supported): the server drops
/// them, `kubectl apply` refuses them as unknown fields, and the operator
/// refuses what reaches it (docs/reference.md, "Debugger").
pub(crate) fn check_settings(_: &mut SchemaGenerator) -> Schema {
    let properties: serde_json::Map<String, serde_json::Value> = crate::settings::SETTINGS
        .iter()
        .map(|s| {
            let mut node = serde_json::json!({
                "type": "string",
                "description": format!("{}; docs/checks.md says what it changes", capitalised(s.kind.description())),
                "pattern": s.kind.pattern(),
            });
            if s.kind == crate::settings::Kind::Hostname {
                node["maxLength"] = 254.into();
            }
            (s.name.to_string(), node)
        })
        .collect();
    json_schema!({"type": "object", "properties": properties})
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}
