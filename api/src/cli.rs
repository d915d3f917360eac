//! How every binary tells its user that something went wrong: one line on
//! stderr, `<binary>: <message>`, never a Debug dump or a stack trace (unless
//! `RUST_BACKTRACE` asks for one). The exit statuses are documented in
//! `docs/reference.md`, "Exit statuses".

use std::error::Error;

/// Exit status of a usage error: an unknown flag or a value that does not
/// parse (clap's own choice, kept by every binary).
pub const EXIT_USAGE: u8 = 2;

/// The version a binary prints with `--version`: `override_` when it is
/// set and not empty, else `package`. Call it through [`version!`](crate::version!).
pub const fn version_or(override_: Option<&'static str>, package: &'static str) -> &'static str {
    match override_ {
        Some(v) if !v.is_empty() => v,
        _ => package,
    }
}

/// The calling crate's version: `KUBE_COMBO_VERSION` at build time (the
/// release's version, set by deploy/release.sh), else the crate's
/// `CARGO_PKG_VERSION`. A macro so that the value is read where it expands:
/// in a binary's `main.rs`, a new version rebuilds that file only.
#[macro_export]
macro_rules! version {
    () => {
        $crate::cli::version_or(option_env!("KUBE_COMBO_VERSION"), env!("CARGO_PKG_VERSION"))
    };
}

/// Parses the command line like [`clap::Parser::parse`], but a usage error is
/// one line, `<bin>: <what clap found> (see <bin> --help)`, and exit status
/// [`EXIT_USAGE`]. `--help` and `--version` print as usual, `--version` with
/// `version` (the binary's [`version!`](crate::version!)).
pub fn parse_args<P: clap::Parser>(bin: &str, version: &'static str) -> P {
    let parsed = P::command()
        .version(version)
        .try_get_matches()
        .and_then(|m| P::from_arg_matches(&m));
    match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind;
            match e.kind() {
                // Help the user asked for (or a bare command that needs a
                // subcommand) is meant to be read whole.
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
                _ => {
                    eprintln!("{}", usage_line(bin, &e));
                    std::process::exit(i32::from(EXIT_USAGE));
                }
            }
        }
    }
}

/// The one-line form of a clap error: its first line without clap's
/// `error: ` prefix, and, when that line ends with `:` (a list follows,
/// as for missing arguments), the indented lines of the list after it.
pub fn usage_line(bin: &str, e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().skip_while(|l| l.trim().is_empty());
    let first = lines
        .next()
        .map(str::trim)
        .unwrap_or("invalid command line");
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    if msg.ends_with(':') {
        let listed: Vec<&str> = lines
            .take_while(|l| l.starts_with(char::is_whitespace) && !l.trim().is_empty())
            .map(str::trim)
            .collect();
        msg = format!("{msg} {}", listed.join(", "));
    }
    format!("{bin}: {msg} (see {bin} --help)")
}

/// `<bin>: <error>: <source>: ...` on one line: the error's chain joined with
/// `: `, a source left out when the message before already contains it, and
/// line breaks inside messages folded into spaces.
pub fn error_line(bin: &str, err: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = vec![err.to_string()];
    let mut source = err.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        source = s.source();
    }
    let joined = parts.join(": ");
    let folded: Vec<&str> = joined.split_whitespace().collect();
    format!("{bin}: {}", folded.join(" "))
}

/// True when `RUST_BACKTRACE` asks for a backtrace (set and not `0`); the
/// binaries then print the full Debug form of a fatal error instead of
/// [`error_line`].
pub fn backtrace_wanted() -> bool {
    std::env::var_os("RUST_BACKTRACE").is_some_and(|v| v != "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, thiserror::Error)]
    #[error("reading {path}")]
    struct Outer {
        path: &'static str,
        #[source]
        source: std::io::Error,
    }

    #[derive(Parser, Debug)]
    #[command(name = "tool")]
    struct Args {
        #[arg(long)]
        count: u32,
    }

    #[test]
    fn an_error_chain_becomes_one_line_with_the_binary_name() {
        let e = Outer {
            path: "/x",
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such\nfile"),
        };
        assert_eq!(error_line("tool", &e), "tool: reading /x: no such file");
    }

    #[test]
    fn a_source_already_in_the_message_is_not_repeated() {
        let inner = std::io::Error::other("denied");
        let e = Outer {
            path: "denied",
            source: inner,
        };
        assert_eq!(error_line("tool", &e), "tool: reading denied");
    }

    #[test]
    fn a_clap_error_becomes_one_line_pointing_at_help() {
        let e = Args::try_parse_from(["tool", "--bogus"]).unwrap_err();
        let line = usage_line("tool", &e);
        assert_eq!(
            line,
            "tool: unexpected argument '--bogus' found (see tool --help)"
        );
        let e = Args::try_parse_from(["tool", "--count", "x"]).unwrap_err();
        let line = usage_line("tool", &e);
        assert!(
            line.starts_with("tool: invalid value 'x' for '--count <COUNT>'"),
            "{line}"
        );
        assert!(!line.contains('\n'));
    }

    #[test]
    fn a_missing_argument_is_named_on_the_same_line() {
        let e = Args::try_parse_from(["tool"]).unwrap_err();
        assert_eq!(
            usage_line("tool", &e),
            "tool: the following required arguments were not provided: --count <COUNT> (see tool --help)"
        );
    }

    #[test]
    fn a_release_version_replaces_the_package_version_unless_empty() {
        assert_eq!(version_or(Some("0.2.0-rc.1"), "0.1.0"), "0.2.0-rc.1");
        assert_eq!(version_or(Some(""), "0.1.0"), "0.1.0");
        assert_eq!(version_or(None, "0.1.0"), "0.1.0");
    }
}
