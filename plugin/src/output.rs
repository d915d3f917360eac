//! `-o json|yaml` (docs/reference.md, "`kubectl-combo`"): a command's
//! answer as one document instead of its table. The views are their
//! commands' (`summary::View`, `status::View`, `mesh::View`); this renders
//! them. Pure.

use serde::Serialize;

use crate::cli::Output;

/// `value` as one JSON (pretty, ending with a newline) or YAML document.
pub fn document(format: Output, value: &impl Serialize) -> String {
    match format {
        Output::Json => {
            let mut s = serde_json::to_string_pretty(value)
                .expect("a view is always representable as JSON");
            s.push('\n');
            s
        }
        Output::Yaml => {
            serde_yaml::to_string(value).expect("a view is always representable as YAML")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Sample {
        failed_items: u32,
    }

    #[test]
    fn json_and_yaml_hold_the_same_fields() {
        let v = Sample { failed_items: 2 };
        assert_eq!(document(Output::Json, &v), "{\n  \"failedItems\": 2\n}\n");
        assert_eq!(document(Output::Yaml, &v), "failedItems: 2\n");
    }
}
