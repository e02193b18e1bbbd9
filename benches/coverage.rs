//! Prints how often each 95% interval of the report covers the true value (2,000 draws per
//! cell, fixed seeds), the table docs/report-format.md quotes. `cargo bench --bench coverage`.

#![allow(clippy::unwrap_used)] // a bench that cannot set up fails at once

use cosmos_engine::metrics::coverage::{DRAWS, SIZES, cases, coverage};

fn main() {
    println!("coverage of the report's 95% intervals, {DRAWS} draws per cell\n");
    print!("{:<16} {:<58}", "case", "stands for");
    for n in SIZES {
        print!(" n={n:<5}");
    }
    println!();
    for (c, case) in cases().iter().enumerate() {
        print!("{:<16} {:<58}", case.name, case.stands_for);
        for (s, &n) in SIZES.iter().enumerate() {
            // The same seeds as tests/reports/interval_coverage.rs.
            let (covered, _) = coverage(case, n, 1_000 + (c * 10 + s) as u64);
            print!(" {covered:<7.3}");
        }
        println!();
    }
}
