//! Generated Debugger and Pinger specs against the real API server and the
//! operator (docs/testing.md, "Bad input"): every spec is either refused by
//! the API server with a message, or accepted and then reconciled or
//! reported with a reason (a Warning Event with every reported problem);
//! the operator never restarts, and a sentinel Debugger's workload is never
//! touched. Seeded: `COMBO_BAD_INPUT_SEED` (a number) picks the cases of
//! both tests, `COMBO_BAD_INPUT_CASES` how many (default 1,000 each).

#[path = "bad_input/debugger_specs.rs"]
mod debugger_specs;
#[path = "bad_input/harness.rs"]
mod harness;
#[path = "bad_input/pinger_specs.rs"]
mod pinger_specs;
#[path = "bad_input/pingers.rs"]
mod pingers;
#[path = "bad_input/run.rs"]
mod run;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use combo_api::Debugger;
use combo_e2e::wait_for;
use kube::api::ListParams;
use kube::{Api, ResourceExt};
use serde_json::Value;

use harness::{
    create_all, debugger_verdicts, generate, missing_warnings, numbered, verdict, Refusals,
    Verdicts, REASONS,
};
use pingers::Problems;
use run::Run;

#[tokio::test(flavor = "multi_thread")]
async fn generated_debugger_specs_are_refused_with_a_message_or_reconciled_or_reported(
) -> Result<()> {
    let run = Run::start("Debugger", "bad-input", debugger_specs::PWNED).await?;
    let specs = generate(debugger_specs::spec(), run.seed, 0, run.n);
    let results = create_all(&run.c, &run.ns.name, "Debugger", numbered("case", &specs)).await;

    let mut problems = Vec::new();
    let mut refusals = Refusals::default();
    // Accepted Debuggers: name -> index.
    let mut accepted = BTreeMap::new();
    for (i, r) in results.into_iter().enumerate() {
        match r {
            Ok(_) => {
                accepted.insert(format!("case-{i:04}"), i);
            }
            Err(m) => {
                if !refusals.count(&m) {
                    problems.push(format!(
                        "case {i}: refused without a message ({m}): {}",
                        specs[i]
                    ))
                }
            }
        }
    }
    let verdicts = debugger_verdicts_of(&run, &specs, &accepted, &mut problems).await?;
    // A reported problem is also a Warning Event on the Debugger.
    for m in missing_warnings(&run.c, &run.ns.name, "Debugger", &verdicts.warned).await? {
        let i = m
            .split_whitespace()
            .nth(1)
            .and_then(|name| accepted.get(name.trim_end_matches(':')))
            .copied()
            .unwrap_or_default();
        problems.push(format!("{m}, for {}", specs[i]));
    }
    problems.extend(run.broken().await?);
    eprintln!(
        "bad input: {} Debuggers refused by the API server, {} accepted: {:?}, {} with a Warning Event; refusals such as {:#?}",
        refusals.count,
        accepted.len(),
        verdicts.reasons,
        verdicts.warned.len(),
        refusals.messages,
    );
    run.finish("Debugger", problems.len(), problems).await;
    Ok(())
}

/// Waits up to 5 minutes for a verdict on every accepted Debugger (name ->
/// index in `specs`), then reads them: each must be a reason of the list.
async fn debugger_verdicts_of(
    run: &Run,
    specs: &[Value],
    accepted: &BTreeMap<String, usize>,
    problems: &mut Vec<String>,
) -> Result<Verdicts> {
    // Every accepted spec gets a verdict for its generation.
    let debuggers = Api::<Debugger>::namespaced(run.c.clone(), &run.ns.name);
    let waited = wait_for(
        Duration::from_secs(300),
        "a verdict on every accepted spec",
        || async {
            let all = debuggers.list(&ListParams::default()).await?;
            Ok(all.items.iter().filter(|d| verdict(d).is_some()).count() == accepted.len())
        },
    )
    .await;
    let all = debuggers.list(&ListParams::default()).await?;
    let verdicts = debugger_verdicts(
        &all.items,
        |_, r| REASONS.contains(&r),
        |d, other| {
            let i = accepted.get(&d.name_any()).copied().unwrap_or_default();
            problems.push(format!(
                "{}: verdict {other:?} for {}",
                d.name_any(),
                specs[i]
            ))
        },
    );
    if let Err(e) = waited {
        problems.push(format!("{e:#}"));
    }
    Ok(verdicts)
}

#[tokio::test(flavor = "multi_thread")]
async fn generated_pinger_specs_are_refused_with_a_message_or_reconciled_or_reported() -> Result<()>
{
    let run = Run::start("Pinger", "bad-pinger", pinger_specs::PWNED).await?;
    let specs = generate(pinger_specs::spec(), run.seed, b'P', run.n);
    let pingers = create_all(&run.c, &run.ns.name, "Pinger", numbered("p", &specs)).await;

    let mut problems = Problems::default();
    let mut refusals = Refusals::default();
    let stored = pingers::stored_specs(&pingers, &mut refusals, &mut problems);
    let running = pingers::create_debuggers(&run, &stored, &mut problems).await;
    pingers::wait_for_verdicts(&run, &stored, &mut problems).await;
    let (pinger_verdicts, debugger_verdicts) =
        pingers::check_verdicts(&run, &stored, &mut problems).await?;
    pingers::check_running(&run, &running, &mut problems).await?;

    let global = run.broken().await?;
    eprintln!(
        "bad input: {} Pingers refused by the API server, {} accepted: {:?}; \
         their Debuggers: {:?}, {} Pinger and {} Debugger Warning Events; {} running ({running:?}); \
         refusals such as {:#?}",
        refusals.count,
        stored.len(),
        pinger_verdicts.reasons,
        debugger_verdicts.reasons,
        pinger_verdicts.warned.len(),
        debugger_verdicts.warned.len(),
        running.len(),
        refusals.messages,
    );
    let failed_cases = problems.cases(run.n) + global.len();
    let report = problems.report(&specs).into_iter().chain(global).collect();
    run.finish("Pinger", failed_cases, report).await;
    Ok(())
}
