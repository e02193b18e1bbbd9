//! Reading runs into [`RunRecord`]s for tables: one streaming pass per file.
//!
//! Runs read into records for the tables, files on every core
//! (`parallel::map`: one file per worker at a time, results in file order); each file's header
//! as a `ReportHeader`, its events as briefs with their spans (`EventStream::next_brief`).

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::group::RunRecord;
use super::run::RunAccumulator;
use cosmos_trajectory::listing::Recount;
use cosmos_trajectory::reader::{EventStream, collect_files};
use cosmos_trajectory::report_header::ReportHeader;

/// What reading one file gave.
enum Read {
    /// Its record.
    Record(Box<RunRecord>),
    /// Why it was passed over.
    Skipped(String),
}

/// One record per readable run under `paths`, in the files' order; unreadable files come back
/// with their reason, and so does a file whose run another file already is (a copy). Files are read on every core (`cosmos_trajectory::parallel`; each worker streams one
/// file at a time, so memory stays that of a few files); an I/O error ends the whole read.
pub fn read_records(paths: &[PathBuf]) -> Result<(Vec<RunRecord>, Vec<String>)> {
    read_all(paths, true)
}

/// [`read_records`], with a copy of a run kept as a record of its own unless `once`.
fn read_all(paths: &[PathBuf], once: bool) -> Result<(Vec<RunRecord>, Vec<String>)> {
    let found = collect_files(paths)?;
    let read = cosmos_trajectory::parallel::map(&found.files, |file| read_one(file));
    let mut records = Vec::with_capacity(found.files.len());
    let mut unreadable = found.skipped;
    // A plain copy of a run (its `run_id` the same, its bytes the same) is the same run:
    // counted once, the copy said, never silently twice. Two files of one id that differ are
    // counted both (older versions could give two runs started in the same millisecond one
    // id).
    let mut seen: rustc_hash::FxHashMap<String, PathBuf> = Default::default();
    for one in read {
        match one? {
            Read::Record(r) => {
                if once
                    && !r.run_id.is_empty()
                    && let Some(first) = seen.get(&r.run_id)
                    && same_bytes(first, &r.path)
                {
                    unreadable.push(format!(
                        "{}: the same run as {} (run_id {}), counted once",
                        r.path.display(),
                        first.display(),
                        r.run_id
                    ));
                    continue;
                }
                seen.insert(r.run_id.clone(), r.path.clone());
                records.push(*r)
            }
            Read::Skipped(why) => unreadable.push(why),
        }
    }
    Ok((records, unreadable))
}

/// True when the files at `a` and `b` hold the same bytes (compared a block at a time).
fn same_bytes(a: &Path, b: &Path) -> bool {
    use std::io::Read as _;
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    if ma.len() != mb.len() {
        return false;
    }
    let (Ok(mut fa), Ok(mut fb)) = (std::fs::File::open(a), std::fs::File::open(b)) else {
        return false;
    };
    let (mut ba, mut bb) = (vec![0u8; 64 << 10], vec![0u8; 64 << 10]);
    loop {
        let Ok(n) = fa.read(&mut ba) else {
            return false;
        };
        if n == 0 {
            return true;
        }
        if fb.read_exact(&mut bb[..n]).is_err() || ba[..n] != bb[..n] {
            return false;
        }
    }
}

/// Today's totals of the runs under `paths`, by the same reading as `report` (for listings
/// whose stored totals were written by an older metrics version).
pub fn recount(paths: &[PathBuf]) -> Result<Vec<Recount>> {
    // Every file its own totals, a copy's too: a listing shows files.
    let (records, _) = read_all(paths, false)?;
    Ok(records
        .into_iter()
        .map(|r| Recount {
            totals: r.metrics.totals(0),
            path: r.path,
        })
        .collect())
}

/// One file's record.
fn read_one(file: &Path) -> Result<Read> {
    let mut stream = match EventStream::<ReportHeader>::open_as(file) {
        Ok(s) => s,
        Err(e) => return Ok(Read::Skipped(format!("{e:#}"))),
    };
    // A wm-eval file is not an agent's run: its calls are copies, scored by wm-eval.
    if stream.header().agent == cosmos_trajectory::event::AgentKind::WmEval {
        return Ok(Read::Skipped(format!(
            "{}: a wm-eval file, not a run (its leaderboard: cosmos wm-eval)",
            file.display()
        )));
    }
    // A simulation is kept as where its line lies and read back only if a real call pairs
    // with it: a big search simulates far more nodes than it calls.
    let mut acc = RunAccumulator::of_report(stream.header()).reading_back(file.to_path_buf());
    while let Some((event, span)) = stream.next_brief()? {
        acc.take_at(event, span);
    }
    let mut record = RunRecord::new(file.to_path_buf(), stream.header(), acc.metrics());
    // Lines that were read past (too long, too deep, not an event, a seq written twice): the
    // report says so, never counting them silently.
    record.skipped_lines = stream
        .problems()
        .iter()
        .filter(|p| p.skipped)
        .map(|p| p.to_string())
        .collect();
    Ok(Read::Record(Box::new(record)))
}
