//! Rows under a header as text: aligned columns for the terminal, a markdown table, or CSV.
//! Every table cosmos prints goes through here, so a cell holding a newline, a comma or a `|`
//! never breaks its row.

use std::fmt::Write as _;

/// Rows under a header as CSV (RFC 4180: a field holding a comma, quote or line break is
/// quoted), by the `csv` crate.
pub fn csv<H: AsRef<str>>(header: &[H], rows: &[Vec<String>]) -> String {
    let mut writer = ::csv::WriterBuilder::new()
        .terminator(::csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to memory fails only on a short record, which the callers never build.
    let _ = writer.write_record(header.iter().map(|h| h.as_ref()));
    for row in rows {
        let _ = writer.write_record(row);
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// Rows under a header, as aligned text columns or a markdown table.
pub fn aligned(out: &mut String, header: &[&str], rows: &[Vec<String>], markdown: bool) {
    // A cell is one line (a task id may hold a newline), and a markdown cell holds no `|`.
    let clean = |cell: &str| {
        let line = cosmos_trajectory::sanitize::one_line(cell, 1 << 16);
        if markdown {
            line.replace('|', "\\|")
        } else {
            line
        }
    };
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| clean(c)).collect())
        .collect();
    let rows = rows.as_slice();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: Vec<String>| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        if markdown {
            format!("| {} |", padded.join(" | "))
        } else {
            padded.join("  ").trim_end().to_string()
        }
    };
    let _ = writeln!(
        out,
        "{}",
        line(header.iter().map(|h| h.to_string()).collect())
    );
    if markdown {
        let _ = writeln!(
            out,
            "|{}|",
            widths
                .iter()
                .map(|w| "-".repeat(w + 2))
                .collect::<Vec<_>>()
                .join("|")
        );
    } else {
        let _ = writeln!(
            out,
            "{}",
            "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1))
        );
    }
    for r in rows {
        let _ = writeln!(out, "{}", line(r.clone()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_with_a_line_break_or_comma_keeps_its_row_in_csv() {
        let rows = vec![
            vec!["a\nb".to_string(), "1,5".into()],
            vec!["say \"hi\"".to_string(), "2".into()],
        ];
        let text = csv(&["name", "value"], &rows);
        assert_eq!(text, "name,value\n\"a\nb\",\"1,5\"\n\"say \"\"hi\"\"\",2\n");
        let mut reader = ::csv::Reader::from_reader(text.as_bytes());
        let back: Vec<Vec<String>> = reader
            .records()
            .map(|r| r.unwrap().iter().map(String::from).collect())
            .collect();
        assert_eq!(back, rows);
    }

    #[test]
    fn a_cell_with_a_line_break_keeps_its_row_in_text_and_markdown() {
        let rows = vec![vec!["a\nb|c".to_string(), "1".into()]];
        for markdown in [false, true] {
            let mut out = String::new();
            aligned(&mut out, &["name", "n"], &rows, markdown);
            assert_eq!(out.lines().count(), 3, "{out}");
        }
    }
}
