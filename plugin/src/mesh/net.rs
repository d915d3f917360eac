//! What a node-side fault's node said of its network in the Debugger's
//! latest run (docs/pinger.md#node-target-or-path): its failed `net` items,
//! from its DebuggerReport. The reports come from one paged list of the
//! Debugger's reports, whatever the number of node-side faults;
//! [`net_of`] picks one node's out of it.

use std::collections::BTreeMap;

use combo_api::report::report_name;
use combo_api::{keys, Category, DebuggerReport, DebuggerReportSpec};
use kube::api::ListParams;
use kube::{Api, Client};
use serde::Serialize;

use crate::cluster::api_error;

/// Reports per page of the list, as the operator pages its lists: at
/// about 22 KB a report (docs/runner.md, "Reports: the summary ConfigMap")
/// a page is some 11 MB, and 1,000 nodes take two pages.
pub const PAGE: u32 = 500;

/// The Debugger's reports by object name, or why they could not be read.
pub type Reports = Result<BTreeMap<String, DebuggerReportSpec>, String>;

/// The reports of Debugger `ns/debugger` (label
/// [`keys::LABEL_DEBUGGER`]), listed [`PAGE`] at a time.
pub async fn reports(client: &Client, ns: &str, debugger: &str) -> Reports {
    let api: Api<DebuggerReport> = Api::namespaced(client.clone(), ns);
    let mut params = ListParams::default()
        .labels(&keys::debugger_selector(debugger))
        .limit(PAGE);
    let mut out = BTreeMap::new();
    loop {
        let page = api.list(&params).await.map_err(|e| {
            let what = format!("listing the DebuggerReports of Debugger {ns}/{debugger}");
            format!("{:#}", api_error(e, &what))
        })?;
        out.extend(
            page.items
                .into_iter()
                .filter_map(|r| Some((r.metadata.name?, r.spec))),
        );
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => params = params.continue_token(&c),
            None => return Ok(out),
        }
    }
}

/// One node's net items of the Debugger's latest run.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Net {
    /// The DebuggerReport read, `<debugger>.<node>`.
    pub report: String,
    /// Whether the Debugger has it: false is `no report`.
    pub found: bool,
    /// Why the reports could not be read, else null.
    pub error: Option<String>,
    /// The run the report is of (`runAt`), else null.
    pub run_at: Option<String>,
    /// Whether that run checked `net`.
    pub checked: bool,
    /// Its failed `net` items, by name.
    pub failed: Vec<NetItem>,
}

/// A failed `net` item.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NetItem {
    /// The item.
    pub item: String,
    /// Its `err`.
    pub err: String,
}

/// Node `node`'s [`Net`] in `reports` of Debugger `debugger`.
pub fn net_of(reports: &Reports, debugger: &str, node: &str) -> Net {
    let report = report_name(debugger, node);
    let mut net = Net {
        report,
        found: false,
        error: None,
        run_at: None,
        checked: false,
        failed: Vec::new(),
    };
    let spec = match reports {
        Err(why) => {
            net.error = Some(why.clone());
            return net;
        }
        Ok(reports) => reports.get(&net.report),
    };
    let Some(spec) = spec else {
        return net;
    };
    net.found = true;
    net.run_at = Some(spec.run_at.clone());
    if let Some(items) = spec.categories.get(Category::Net.as_str()) {
        net.checked = true;
        net.failed = items
            .iter()
            .filter_map(|(item, r)| {
                Some(NetItem {
                    item: item.clone(),
                    err: r.err.clone()?,
                })
            })
            .collect();
    }
    net
}

impl Net {
    /// The lines printed under the node-side fault, without indent:
    /// `net: no report`, or the run and each failed item.
    pub fn lines(&self) -> Vec<String> {
        if let Some(why) = &self.error {
            return vec![format!("net: reports not read: {why}")];
        }
        let Some(run) = self.run_at.as_deref().filter(|_| self.found) else {
            return vec!["net: no report".into()];
        };
        if !self.checked {
            return vec![format!("net (run {run}): not checked")];
        }
        if self.failed.is_empty() {
            return vec![format!("net (run {run}): no failed item")];
        }
        self.failed
            .iter()
            .map(|i| format!("net (run {run}): {}: {}", i.item, i.err))
            .collect()
    }
}

#[cfg(test)]
#[path = "net_tests.rs"]
mod tests;
