//! The page `kubectl combo mesh --html` writes: one HTML file with its CSS inline and no external resource, the
//! faults of [`super::classify`] with what is under each, a list of the
//! failing paths and a heat map of prober node (rows) by target (columns).
//! Pure.
//!
//! docs/pinger.md#the-mesh-view

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::classify::{classify, Fault};
use super::paths::{ms, Health, Path};
use super::view::{lines, Nets};

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

const STYLE: &str = "body{font-family:sans-serif;margin:1em}\
table{border-collapse:collapse;font-size:11px}\
th,td{border:1px solid #ccc;padding:2px 4px;text-align:center}\
th.r{text-align:left}\
td.Failing{background:#d73027;color:#fff}td.Lossy{background:#fdae61}\
td.Ok{background:#1a9850;color:#fff}td.Idle{background:#e0e0e0}\
thead th{position:sticky;top:0;background:#fff}";

/// The page for Debugger `title`: `paths` as given by
/// [`super::paths::paths`], `silent` the pingers that did not answer
/// (`node: why`), `tally` the closing line of the text output; the faults
/// classified from `paths`, without the nodes' `net` items.
pub fn page(title: &str, paths: &[Path], silent: &[String], tally: &str) -> String {
    page_of(title, paths, &classify(paths), &Nets::new(), silent, tally)
}

/// [`page`] with `faults` as [`classify`] gave them and each node-side
/// fault's `net` items from `nets`.
pub fn page_of(
    title: &str,
    paths: &[Path],
    faults: &[Fault],
    nets: &Nets,
    silent: &[String],
    tally: &str,
) -> String {
    let mut out = String::new();
    let title = escape(title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>mesh of {title}</title><style>{STYLE}</style></head><body>\n\
<h1>Mesh of {title}</h1>\n<p id=\"tally\">{}</p>\n",
        escape(tally)
    );
    fault_list(&mut out, paths, faults, nets);
    failing_list(&mut out, paths);
    if !silent.is_empty() {
        out.push_str("<h2>Pingers that did not answer</h2>\n<ul id=\"silent\">");
        for s in silent {
            let _ = write!(out, "<li>{}</li>", escape(s));
        }
        out.push_str("</ul>\n");
    }
    heat_map(&mut out, paths);
    out.push_str("</body></html>\n");
    out
}

/// Each fault with the lines under it, node-side faults first.
fn fault_list(out: &mut String, paths: &[Path], faults: &[Fault], nets: &Nets) {
    out.push_str("<h2>Faults</h2>\n");
    if faults.is_empty() {
        out.push_str("<p id=\"faults\">none</p>\n");
        return;
    }
    out.push_str("<ul id=\"faults\">");
    for f in faults {
        let (head, under) = lines(paths, f, nets);
        let _ = write!(out, "<li data-fault=\"{}\">{}", f.word(), escape(&head));
        if !under.is_empty() {
            out.push_str("<ul>");
            for line in under {
                let _ = write!(out, "<li>{}</li>", escape(&line));
            }
            out.push_str("</ul>");
        }
        out.push_str("</li>");
    }
    out.push_str("</ul>\n");
}

fn failing_list(out: &mut String, paths: &[Path]) {
    let bad: Vec<&Path> = paths
        .iter()
        .filter(|p| matches!(p.health, Health::Failing | Health::Lossy))
        .collect();
    out.push_str("<h2>Failing and lossy paths</h2>\n");
    if bad.is_empty() {
        out.push_str("<p id=\"failing\">none</p>\n");
        return;
    }
    out.push_str("<ol id=\"failing\">");
    for p in bad {
        let _ = write!(
            out,
            "<li class=\"{:?}\">{} \u{2192} {} ({}): {}, loss {:.0}%, rtt {}</li>",
            p.health,
            escape(&p.prober),
            escape(&p.target_shown()),
            escape(&p.kind),
            p.health.word(),
            p.loss,
            ms(p.rtt_avg_ms)
        );
    }
    out.push_str("</ol>\n");
}

/// Rows: prober nodes, those with a failing path first; columns: peer
/// nodes, then the other targets. A cell shows the loss in percent and
/// holds the details in its title.
fn heat_map(out: &mut String, paths: &[Path]) {
    let mut rows: BTreeMap<&str, Health> = BTreeMap::new();
    let mut cols: BTreeMap<(bool, &str), ()> = BTreeMap::new();
    let mut cells: BTreeMap<(&str, &str), &Path> = BTreeMap::new();
    for p in paths {
        let worst = rows.entry(&p.prober).or_insert(Health::Idle);
        *worst = (*worst).min(p.health);
        cols.insert((!p.peer, &p.target), ());
        // The worst kind of a pair shows (paths come worst first).
        cells.entry((&p.prober, &p.target)).or_insert(p);
    }
    let mut rows: Vec<(&str, Health)> = rows.into_iter().collect();
    rows.sort_by_key(|(node, worst)| (*worst, *node));
    out.push_str("<h2>Heat map</h2>\n<table id=\"heatmap\"><thead><tr><th>prober \\ target</th>");
    for (_, target) in cols.keys() {
        let _ = write!(out, "<th>{}</th>", escape(target));
    }
    out.push_str("</tr></thead><tbody>\n");
    for (prober, _) in rows {
        let _ = write!(out, "<tr><th class=\"r\">{}</th>", escape(prober));
        for (_, target) in cols.keys() {
            match cells.get(&(prober, *target)) {
                Some(p) => {
                    let _ = write!(
                        out,
                        "<td class=\"{:?}\" title=\"{} \u{2192} {} ({}): {}, loss {:.1}%, rtt avg {} max {}\">{:.0}</td>",
                        p.health,
                        escape(prober),
                        escape(target),
                        escape(&p.kind),
                        p.health.word(),
                        p.loss,
                        ms(p.rtt_avg_ms),
                        ms(p.rtt_max_ms),
                        p.loss
                    );
                }
                None => out.push_str("<td></td>"),
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::paths::{paths, tests as data};

    fn sample() -> String {
        let p = paths(&data::probers(), &data::answers());
        page("ops/<mesh>", &p, &["node-2: timed out".into()], "5 paths")
    }

    #[test]
    fn the_page_lists_the_failing_path_first_and_colours_its_cell() {
        let html = sample();
        let failing = html.find("<ol id=\"failing\">").expect("a failing list");
        let first = &html[failing..];
        assert!(
            first.starts_with(
                "<ol id=\"failing\"><li class=\"Failing\">node-1 \u{2192} node-3 [10.0.0.3] (icmp): FAIL, loss 100%"
            ),
            "{first}"
        );
        assert!(html.contains(
            "<td class=\"Failing\" title=\"node-1 \u{2192} node-3 (icmp): FAIL, loss 100.0%, rtt avg - max -\">100</td>"
        ));
        assert!(html.contains("<li>node-2: timed out</li>"));
    }

    #[test]
    fn the_page_names_a_node_side_fault_once_with_its_net_items_under_it() {
        use crate::mesh::net::{net_of, Reports};
        let mut p = paths(&data::probers(), &data::answers());
        // node-1 loses node-2 as well: both its peers; node-3 still
        // reaches it, with some loss.
        p.iter_mut()
            .filter(|p| p.prober == "node-1")
            .for_each(|p| p.health = Health::Failing);
        let faults = classify(&p);
        let reports: Reports = Ok(Default::default());
        let nets = Nets::from([("node-1".to_string(), net_of(&reports, "mesh", "node-1"))]);
        let html = page_of("ops/mesh", &p, &faults, &nets, &[], "2 failing");
        assert!(
            html.contains(
                "<ul id=\"faults\"><li data-fault=\"node-side\">node-side fault at node-1: \
                 2 failing paths; as prober 2 of 2 targets fail, as target 0 of 1 probers fail\
                 <ul><li>lost: node-3 [10.0.0.3] (icmp), node-2 (icmp)</li>\
                 <li>net: no report</li></ul></li></ul>"
            ),
            "{html}"
        );
        assert!(html.find("id=\"faults\"") < html.find("id=\"failing\""));
        let healthy: Vec<Path> = p
            .into_iter()
            .filter(|p| p.health != Health::Failing)
            .collect();
        assert!(page("ops/mesh", &healthy, &[], "ok").contains("<p id=\"faults\">none</p>"));
    }

    #[test]
    fn the_page_is_one_well_formed_document_with_nothing_from_elsewhere() {
        let html = sample();
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(
            html.contains("<title>mesh of ops/&lt;mesh&gt;</title>"),
            "escaped"
        );
        for external in ["src=", "href=", "@import", "url(", "http://", "https://"] {
            assert!(!html.contains(external), "{external}");
        }
        for tag in [
            "html", "head", "body", "table", "thead", "tbody", "tr", "ol", "ul", "style",
        ] {
            assert_eq!(
                html.matches(&format!("<{tag}>")).count()
                    + html.matches(&format!("<{tag} ")).count(),
                html.matches(&format!("</{tag}>")).count(),
                "<{tag}> opened and closed alike"
            );
        }
        // Rows: node-1 (failing) first; columns: the peer nodes, then the
        // other targets; every row has one cell per column.
        let rows: Vec<&str> = html.split("<tr>").skip(2).collect();
        assert!(
            rows[0].starts_with("<th class=\"r\">node-1</th>"),
            "{}",
            rows[0]
        );
        assert!(html.contains(
            "<th>node-1</th><th>node-2</th><th>node-3</th><th>10.0.0.9</th><th>10.96.0.10:53</th>"
        ));
        for r in &rows {
            assert_eq!(r.matches("<td").count(), 5, "{r}");
        }
    }
}
