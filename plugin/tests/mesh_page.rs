//! The page of `kubectl combo mesh --html` in a real browser: headless
//! Chromium renders it and shows the failing path it was given
//! (docs/testing.md#the-mesh-page-in-chromium).

use combo_api::recent::Recent;
use combo_testkit::chromium;
use kubectl_combo::mesh;
use kubectl_combo::mesh::paths::Prober;

/// Three nodes; node-1's probes of node-3 are all lost, every other peer
/// answers; node-2 also probes a DNS server. The summaries are parsed from
/// JSON as the pingers serve it.
fn sample() -> (Vec<Prober>, Vec<(usize, Recent)>) {
    let probers = (1..=3)
        .map(|i| Prober {
            pod: format!("mesh-{i}"),
            node: format!("node-{i}"),
            ips: vec![format!("10.0.0.{i}")],
        })
        .collect();
    let peer = |ip: &str, lost: u64| {
        let up = lost == 0;
        let rtt = if up {
            r#","rttAvgMs":0.4,"rttMaxMs":1.2"#
        } else {
            ""
        };
        format!(r#"{{"kind":"icmp","target":"{ip}","sent":60,"lost":{lost},"up":{up}{rtt}}}"#)
    };
    let dns = r#"{"kind":"dns","target":"10.96.0.10:53","sent":60,"lost":0,"up":true,"rttAvgMs":2.0,"rttMaxMs":4.0}"#;
    let recent = |targets: Vec<String>| -> Recent {
        serde_json::from_str(&format!(
            r#"{{"windowSeconds":300,"targets":[{}]}}"#,
            targets.join(",")
        ))
        .expect("a pinger's summary")
    };
    let answers = vec![
        (0, recent(vec![peer("10.0.0.2", 0), peer("10.0.0.3", 60)])),
        (
            1,
            recent(vec![peer("10.0.0.1", 0), peer("10.0.0.3", 0), dns.into()]),
        ),
        (2, recent(vec![peer("10.0.0.1", 0), peer("10.0.0.2", 0)])),
    ];
    (probers, answers)
}

#[test]
fn chromium_renders_the_mesh_page_with_its_failing_path() {
    let test = "chromium_renders_the_mesh_page_with_its_failing_path";
    let Some(browser) = chromium::browser(test) else {
        return;
    };
    let (probers, answers) = sample();
    let paths = mesh::paths::paths(&probers, &answers);
    let tally = mesh::paths::tally(&paths, 300, answers.len(), probers.len());
    let html = mesh::html::page("ops/mesh", &paths, &[], &tally);

    let dir = std::env::temp_dir().join(format!("combo-mesh-page-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let page = dir.join("mesh.html");
    std::fs::write(&page, html).expect("page written");
    let shown = chromium::render(&browser, &page, &dir).expect("chromium renders the page");
    eprintln!(
        "screenshot of the mesh page: {}",
        shown.screenshot.display()
    );

    let png = std::fs::read(&shown.screenshot).expect("a screenshot");
    assert!(png.len() > 1024, "{} bytes", png.len());
    assert_eq!(
        chromium::png_size(&png),
        Some(chromium::WINDOW),
        "a PNG of the window"
    );

    // The DOM as the browser built it: the failing path is the one item of
    // the failing list, its heat-map cell is coloured as failing, and the
    // list comes before the map.
    let dom = &shown.dom;
    let failing =
        "<li class=\"Failing\">node-1 \u{2192} node-3 (icmp): FAIL, loss 100%, rtt -</li>";
    assert!(dom.contains(failing), "{dom}");
    assert_eq!(dom.matches("<li class=").count(), 1, "{dom}");
    assert!(
        dom.contains("<td class=\"Failing\" title=\"node-1 \u{2192} node-3 (icmp): FAIL"),
        "{dom}"
    );
    assert_eq!(dom.matches("<td class=\"Failing\"").count(), 1, "{dom}");
    assert_eq!(dom.matches("<td class=\"Ok\"").count(), 6, "{dom}");
    let list = dom.find(failing).expect("listed");
    let map = dom.find("<table id=\"heatmap\">").expect("a heat map");
    assert!(list < map, "the failing list comes first");
    assert!(
        dom.contains("7 paths over the last 5 minutes: 1 failing, 0 lossy, 6 ok, 0 idle; 3 of 3 pingers answered"),
        "{dom}"
    );
}
