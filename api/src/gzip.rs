//! Compressed exposition text: a [`fmt::Write`] that gzips what it is
//! given as it goes, so a scrape of 100,000 series never holds its whole
//! text, and the reading of a request's `Accept-Encoding`
//! (docs/reference.md, "Metrics endpoints").

use std::fmt;
use std::io::Write as _;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Text gathered before it goes to the compressor: the exposition is
/// written in pieces of a few bytes, which the compressor takes slowly one
/// by one.
const CHUNK: usize = 32 * 1024;

/// Gzips the text written into it.
pub struct GzipText {
    pending: String,
    out: GzEncoder<Vec<u8>>,
}

impl GzipText {
    /// An empty stream whose compressed output starts with room for
    /// `capacity` bytes (the last one's size, say).
    pub fn with_capacity(capacity: usize) -> Self {
        GzipText {
            pending: String::with_capacity(CHUNK),
            // The fastest level: about a tenth of the text's size, at a
            // fraction of the CPU the default level takes.
            out: GzEncoder::new(Vec::with_capacity(capacity), Compression::fast()),
        }
    }

    fn flush_pending(&mut self) -> std::io::Result<()> {
        self.out.write_all(self.pending.as_bytes())?;
        self.pending.clear();
        Ok(())
    }

    /// The gzip stream of everything written.
    pub fn finish(mut self) -> Vec<u8> {
        // Writing into a Vec cannot fail.
        self.flush_pending().expect("compressing into memory");
        self.out.finish().expect("compressing into memory")
    }
}

impl fmt::Write for GzipText {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.pending.len() + s.len() > CHUNK {
            self.flush_pending().map_err(|_| fmt::Error)?;
        }
        if s.len() > CHUNK {
            self.out.write_all(s.as_bytes()).map_err(|_| fmt::Error)
        } else {
            self.pending.push_str(s);
            Ok(())
        }
    }
}

/// Whether an `Accept-Encoding` value takes gzip: `gzip` (or `x-gzip`)
/// with a weight above zero, or, when gzip is not named, `*` with one.
pub fn accepted(header: &str) -> bool {
    let mut star = false;
    for item in header.split(',') {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or_default().trim();
        let weighted = parts.all(|p| {
            let p = p.trim();
            match p.strip_prefix("q=").or_else(|| p.strip_prefix("Q=")) {
                Some(q) => q.trim().parse::<f32>().is_ok_and(|q| q > 0.0),
                None => true,
            }
        });
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            return weighted;
        }
        if coding == "*" {
            star = weighted;
        }
    }
    star
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt::Write as _;
    use std::io::Read as _;

    fn gunzip(bytes: &[u8]) -> String {
        let mut out = String::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_string(&mut out)
            .unwrap();
        out
    }

    #[test]
    fn what_is_written_in_pieces_of_any_size_comes_back_whole() {
        let mut text = String::new();
        let mut z = GzipText::with_capacity(0);
        for i in 0..20_000 {
            let piece = format!("combo_series{{node=\"node-{i}\"}} 1\n");
            text.push_str(&piece);
            z.write_str(&piece).unwrap();
        }
        let long = "x".repeat(CHUNK * 2 + 7);
        text.push_str(&long);
        z.write_str(&long).unwrap();
        let bytes = z.finish();
        assert_eq!(gunzip(&bytes), text);
        assert!(
            bytes.len() * 5 < text.len(),
            "{} bytes for {}",
            bytes.len(),
            text.len()
        );
    }

    #[test]
    fn nothing_written_is_an_empty_stream() {
        assert_eq!(gunzip(&GzipText::with_capacity(16).finish()), "");
    }

    #[test]
    fn gzip_is_taken_when_named_with_a_weight_above_zero_or_by_a_star() {
        for yes in [
            "gzip",
            "GZIP",
            "deflate, gzip",
            "gzip;q=0.5",
            "gzip; q=1",
            "x-gzip",
            "*",
            "br, *;q=0.1",
            "identity, gzip, deflate",
        ] {
            assert!(accepted(yes), "{yes}");
        }
        for no in [
            "",
            "identity",
            "deflate, br",
            "gzip;q=0",
            "gzip;q=0.0, *",
            "*;q=0",
            "gzip;q=nope",
            "gzipped",
        ] {
            assert!(!accepted(no), "{no}");
        }
    }
}
