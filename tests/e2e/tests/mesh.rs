//! `kubectl combo mesh` on real nodes: a link cut between two of them with
//! nftables is the first failing path of the table and of the HTML page as
//! headless Chromium renders it (docs/testing.md#the-mesh-page-in-chromium);
//! a node whose pod drops all its traffic is one node-side fault and a
//! closed port one target fault ([`faults`]). Real nodes only: the
//! simulated nodes' pods serve no pod proxy.

#[path = "mesh/faults.rs"]
mod faults;

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, ensure, Context as _, Result};
use combo_api::Category;
use combo_e2e::fixtures::{DebuggerBuilder, PingerBuilder};
use combo_e2e::{
    apply_yaml, client, install_from_registry, kubectl_combo, namespace, pods_on_every_real_node,
    real_cluster_or_skip, real_node_netns, real_nodes, scrape, wait_for, NftTable,
};
use combo_testkit::chromium;

const WAIT: Duration = Duration::from_secs(180);

/// `kubectl combo mesh ARGS`: its stdout, or an error with its stderr.
fn mesh(args: &[&str]) -> Result<String> {
    let out = kubectl_combo(&[&["mesh"], args].concat());
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    ensure!(
        out.status.success(),
        "kubectl combo mesh {}: {}{stdout}{}",
        args.join(" "),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(stdout)
}

/// The table's rows (PROBER TARGET KIND LOSS RTT-AVG RTT-MAX STATE), split
/// into their columns, without the header and the closing line.
fn rows(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .skip_while(|l| !l.starts_with("PROBER"))
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|r| r.len() == 7)
        .collect()
}

/// The state of the ICMP path `from` to `to` in `table`, and whether it is
/// the first row.
fn state_of(table: &str, from: &str, to: &str) -> Option<(String, bool)> {
    rows(table).iter().enumerate().find_map(|(i, r)| {
        ((r[0].as_str(), r[1].as_str(), r[2].as_str()) == (from, to, "icmp"))
            .then(|| (r[6].clone(), i == 0))
    })
}

/// Writes the page of `kubectl combo mesh ARGS --html` into `dir` and,
/// with chromium, checks that its screenshot is made and that the DOM lists
/// `from` to `to` first among the failing paths.
fn page_shows_first(test: &str, args: &[&str], dir: &Path, from: &str, to: &str) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let page = dir.join("mesh.html");
    mesh(&[args, &["--html", page.to_str().context("path")?]].concat())?;
    let Some(browser) = chromium::browser(test) else {
        return Ok(());
    };
    let shown = chromium::render(&browser, &page, dir).map_err(|e| anyhow!(e))?;
    eprintln!(
        "screenshot of the mesh page: {}",
        shown.screenshot.display()
    );
    let png = std::fs::read(&shown.screenshot)?;
    ensure!(
        png.len() > 1024 && chromium::png_size(&png) == Some(chromium::WINDOW),
        "a {}-byte screenshot",
        png.len()
    );
    let first = format!(
        "<ol id=\"failing\"><li class=\"Failing\">{from} \u{2192} {to} (icmp): FAIL, loss "
    );
    ensure!(shown.dom.contains(&first), "{first} not in:\n{}", shown.dom);
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_cut_between_real_nodes_is_the_first_failing_path_of_the_mesh_and_its_page(
) -> Result<()> {
    let test = "a_link_cut_between_real_nodes_is_the_first_failing_path_of_the_mesh_and_its_page";
    if !real_cluster_or_skip(test) {
        return Ok(());
    }
    install_from_registry();
    let ns = namespace("real-mesh").await;
    let c = client().await;
    let pinger = PingerBuilder::new("peers")
        .rounds(1, 500, 1)
        .ping(&[])
        .peers(true)
        .gateway(false);
    apply_yaml(&ns.name, &pinger.yaml())?;
    let dbg = DebuggerBuilder::new("links")
        .cpu("100m")
        .memory("128Mi")
        .categories(&[Category::Mem])
        .pinger("peers");
    apply_yaml(&ns.name, &dbg.yaml())?;
    let pods = pods_on_every_real_node(&c, WAIT, &ns.name, "links").await?;
    let nodes = real_nodes();
    let (from, to) = (nodes[0].as_str(), nodes[1].as_str());
    let to_ip = pods[to]
        .status
        .as_ref()
        .and_then(|s| s.pod_ip.clone())
        .context("the target pod's IP")?;
    let all = ["links", "-n", ns.name.as_str(), "--all"];

    // Before the cut no path fails (a pinger's first probes may be lost
    // while its peers start: lossy is fine).
    wait_for(WAIT, "the mesh's paths, none failing", || async {
        let table = mesh(&all)?;
        let r = rows(&table);
        ensure!(
            r.len() >= 2 && r.iter().all(|r| r[6] != "FAIL"),
            "not yet:\n{table}"
        );
        Ok(true)
    })
    .await?;

    // The peer's series name its node, from the list the operator wrote.
    let series = format!(r#"combo_pinger_target_up{{kind="icmp",target="{to_ip}",node="{to}"}}"#);
    wait_for(WAIT, &format!("{series} on {from}'s pinger"), || async {
        Ok(scrape(&pods[from], 8080)?.contains(&series))
    })
    .await?;

    let cut = NftTable::drop_echo_requests_to(&real_node_netns(to), "kc_mesh", &to_ip)?;
    let failing = wait_for(WAIT, "the cut path first and failing", || async {
        let table = mesh(&all[..3])?;
        let state = state_of(&table, from, to);
        ensure!(state == Some(("FAIL".into(), true)), "not yet:\n{table}");
        Ok(true)
    });
    failing.await?;
    // One way only: the other direction does not fail.
    let table = mesh(&all)?;
    ensure!(
        rows(&table).iter().filter(|r| r[6] == "FAIL").count() == 1
            && state_of(&table, to, from).is_some_and(|(s, _)| s != "FAIL"),
        "one failing path, the other way not:\n{table}"
    );
    let dir = std::env::temp_dir().join(format!("combo-e2e-{}", ns.name));
    page_shows_first(test, &all[..3], &dir, from, to)?;

    // Lifted, the path passes again; its lost probes stay in the window.
    drop(cut);
    wait_for(WAIT, "the cut path lossy", || async {
        let table = mesh(&all)?;
        let state = state_of(&table, from, to).map(|(s, _)| s);
        ensure!(state.as_deref() == Some("lossy"), "not yet:\n{table}");
        Ok(true)
    })
    .await?;
    Ok(())
}
