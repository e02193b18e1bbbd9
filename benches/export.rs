//! Export benchmark: prints figures, asserts nothing. `cargo bench --bench export` (`-- --quick`
//! for a tenth of the data). A run of about 10^6 events (`target/bench-data/`), exported as
//! JSON, as Markdown and as transitions: events per second and peak memory of each, beside
//! opening the run as the explorer and `report` read it.

mod common;

use std::io::sink;

use common::{big_run_file, ms, peak_mb, reset_peak, scale, time, warm};
use mcp_cosmos::export::{account, transitions};
use mcp_cosmos::trajectory::run::Run;

fn main() {
    let scale = scale();
    let big = big_run_file(scale);
    warm(&big);

    reset_peak();
    let (run, t_open) = time(|| Run::open(&big).unwrap());
    let events = run.len();
    println!(
        "open the run ({events} events): {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB",
        ms(t_open),
        events as f64 / t_open.as_secs_f64() / 1e3,
        peak_mb()
    );

    for (name, write) in [
        (
            "json",
            account::json as fn(&Run, &mut dyn std::io::Write) -> anyhow::Result<()>,
        ),
        ("markdown", account::markdown),
    ] {
        reset_peak();
        let ((), t) = time(|| write(&run, &mut sink()).unwrap());
        println!(
            "export {name} of the open run: {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB (the open run included)",
            ms(t),
            events as f64 / t.as_secs_f64() / 1e3,
            peak_mb()
        );
    }
    drop(run);

    reset_peak();
    let out = tempfile::tempdir().unwrap();
    let spec = transitions::Spec {
        paths: vec![big.clone()],
        out: out.path().to_path_buf(),
        format: transitions::Format::Chat,
        split: 0.0,
    };
    let (written, t) =
        time(|| transitions::export(&spec, &mcp_cosmos::export::redactor()).unwrap());
    println!(
        "export transitions ({} real calls, {} examples): {:.0} ms = {:.0} k events/s   peak RSS {:.0} MB",
        written.calls,
        written.train,
        ms(t),
        events as f64 / t.as_secs_f64() / 1e3,
        peak_mb()
    );
}
