//! What a script's stdout says (docs/runner.md, "Scripts"): its item lines
//! up to [`MAX_ITEMS`], and a count of everything it printed that was not
//! taken as an item, so that no line vanishes without a trace.

use combo_api::summary::CUT_MARKER;

use crate::run::output::{parse_line, printable_message, Line};

/// Most item lines taken from one script; the lines past it are counted
/// (see [`Untaken`]).
pub const MAX_ITEMS: usize = 1000;
/// Longest stdout line taken whole; a longer line is cut to this many
/// bytes, its item kept and its message or reason ending with
/// [`CUT_MARKER`].
pub const MAX_LINE: usize = 8 * 1024;
/// Longest quote of a line not in the script format.
pub const MAX_QUOTE: usize = 160;

/// What of a script's stdout was not taken as items.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Untaken {
    /// `err` lines past [`MAX_ITEMS`].
    pub err: u64,
    /// `skip` lines past [`MAX_ITEMS`].
    pub skip: u64,
    /// `ok` lines past [`MAX_ITEMS`].
    pub ok: u64,
    /// Non-blank lines not in the script format (plain output).
    pub plain: u64,
    /// The first of them, made printable and cut to [`MAX_QUOTE`] bytes.
    pub first_plain: String,
}

impl Untaken {
    /// Item lines past [`MAX_ITEMS`].
    pub fn past_limit(&self) -> u64 {
        self.err + self.skip + self.ok
    }
}

/// Takes a script's stdout one line at a time.
#[derive(Clone, Debug, Default)]
pub struct Collector {
    lines: Vec<Line>,
    untaken: Untaken,
    /// The line being read, at most [`MAX_LINE`] bytes of it.
    pending: Vec<u8>,
    /// Whether the line being read went past [`MAX_LINE`].
    cut: bool,
}

impl Collector {
    /// Takes the next bytes of stdout, which may end or begin in the
    /// middle of a line.
    pub fn push(&mut self, bytes: &[u8]) {
        for part in bytes.split_inclusive(|b| *b == b'\n') {
            let (body, complete) = match part.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (part, false),
            };
            let room = MAX_LINE.saturating_sub(self.pending.len());
            self.cut |= body.len() > room;
            self.pending
                .extend_from_slice(&body[..body.len().min(room)]);
            if complete {
                self.end_line();
            }
        }
    }

    /// The item lines taken, in order, and what was not taken, once stdout
    /// has ended (a last line without a newline counts).
    pub fn finish(mut self) -> (Vec<Line>, Untaken) {
        if !self.pending.is_empty() || self.cut {
            self.end_line();
        }
        (self.lines, self.untaken)
    }

    fn end_line(&mut self) {
        let bytes = std::mem::take(&mut self.pending);
        let cut = std::mem::replace(&mut self.cut, false);
        let kept = if cut { whole_chars(&bytes) } else { &bytes[..] };
        let text = String::from_utf8_lossy(kept);
        let mut line = parse_line(&text);
        if cut {
            match &mut line {
                Line::Err { message: m, .. } | Line::Skip { reason: m, .. } => {
                    m.push_str(CUT_MARKER)
                }
                Line::Ok { .. } | Line::Plain => {}
            }
        }
        let u = &mut self.untaken;
        match line {
            Line::Plain if text.trim().is_empty() => {}
            Line::Plain => {
                u.plain += 1;
                if u.plain == 1 {
                    u.first_plain = quote(&text);
                }
            }
            l if self.lines.len() < MAX_ITEMS => self.lines.push(l),
            Line::Err { .. } => u.err += 1,
            Line::Skip { .. } => u.skip += 1,
            Line::Ok { .. } => u.ok += 1,
        }
    }
}

/// `bytes` without an incomplete UTF-8 character at its end (where a cut
/// fell), so the cut does not leave a stray U+FFFD.
fn whole_chars(bytes: &[u8]) -> &[u8] {
    for back in 1..=3.min(bytes.len()) {
        let b = bytes[bytes.len() - back];
        let width = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => continue,
        };
        if width > back {
            return &bytes[..bytes.len() - back];
        }
        break;
    }
    bytes
}

/// `line` trimmed, made printable and cut to [`MAX_QUOTE`] bytes (a line
/// cut to [`MAX_LINE`] is longer, so it is marked too).
fn quote(line: &str) -> String {
    let mut q = printable_message(line.trim());
    combo_api::summary::cut(&mut q, MAX_QUOTE);
    q
}

/// The message of a script's `<script>/output` item when it printed no item
/// line but printed `untaken.plain` lines of other output.
pub fn not_in_format_message(untaken: &Untaken) -> String {
    let n = untaken.plain;
    let lines = if n == 1 { "line" } else { "lines" };
    let first = if n == 1 { "" } else { ", the first" };
    format!(
        "output not in the script format: {n} {lines}{first}: \"{}\"",
        untaken.first_plain
    )
}

#[cfg(test)]
#[path = "stdout_tests.rs"]
mod tests;
