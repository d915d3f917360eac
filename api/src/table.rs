//! The one table printer of the command lines (`kubectl combo`, `combo-runner
//! --once`): left-aligned columns, like kubectl's.

/// `rows` under `header` as left-aligned columns `gap` spaces apart. The
/// last column is not padded and no line ends in blanks. Pure.
pub fn table(header: &[&str], rows: &[Vec<String>], gap: usize) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            out.push_str(cell);
            if i != last {
                let pad = w.saturating_sub(cell.chars().count()) + gap;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.trim_end().to_string() + "\n"
    };
    let mut out = line(header.to_vec());
    for row in rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_under_the_header_without_trailing_blanks() {
        let rows = vec![
            vec!["node-1".to_string(), "disk".to_string(), String::new()],
            vec!["n".to_string(), "mémoire".to_string(), "x".to_string()],
        ];
        let t = table(&["NODE", "CATEGORY", "ERROR"], &rows, 2);
        assert_eq!(
            t,
            "NODE    CATEGORY  ERROR\nnode-1  disk\nn       mémoire   x\n"
        );
    }
}
