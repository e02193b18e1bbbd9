//! `cosmos judge`: scores runs with the MCP-Bench rubric and appends `phase judge`, the
//! judge's `llm_call` and `judge_scored` to each run's file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::judge;
use crate::llm::client::LlmClient;
use crate::llm::config::LlmConfig;
use crate::sanitize::inert;
use crate::trajectory::event::{EventBody, Phase, Role};
use crate::trajectory::reader::collect_files;
use crate::trajectory::redact::Redactor;
use crate::trajectory::run::Run;
use crate::trajectory::writer::Writer;

/// Judges every run under `paths`; already judged runs are skipped unless `force`.
pub fn run(paths: &[PathBuf], config: Option<PathBuf>, force: bool) -> Result<ExitCode> {
    let llm = LlmConfig::load(config.as_deref())?;
    let client = LlmClient::new(llm.endpoint(Role::Judge).clone());
    let redactor = Redactor::with_secrets(llm.secrets());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let found = collect_files(paths)?;
    for skipped in &found.skipped {
        eprintln!("cosmos: skipped {}", inert(skipped));
    }
    let files = found.files;
    if files.is_empty() {
        bail!("no *.jsonl files to judge");
    }
    let mut failures = 0;
    for file in files {
        match judge_file(&runtime, &client, &redactor, &file, force) {
            Ok(line) => println!("{}", inert(&line)),
            Err(e) => {
                failures += 1;
                eprintln!("cosmos: {}: {}", file.display(), inert(&format!("{e:#}")));
            }
        }
    }
    Ok(if failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn judge_file(
    runtime: &tokio::runtime::Runtime,
    client: &LlmClient,
    redactor: &Redactor,
    file: &Path,
    force: bool,
) -> Result<String> {
    let run = Run::open(file)?;
    if run.judge_at(run.len()).is_some() && !force {
        return Ok(format!(
            "{}: already judged (--force to judge again)",
            file.display()
        ));
    }
    if run.finish_at(run.len()).is_none() {
        bail!("the run has not finished; judge it when it has");
    }
    let (completion, scores) = runtime.block_on(judge::judge(client, &run));
    let mut writer = Writer::append(file, redactor.clone()).context("appending the judgement")?;
    let t = run.briefs().last().map_or(0, |e| e.t_ms);
    let model = client.endpoint().model.clone();
    writer.write(
        t,
        EventBody::Phase {
            phase: Phase::Judge,
        },
    )?;
    let llm_call = crate::agent::llm_call_event(Role::Judge, &model, completion.as_ref());
    writer.write(t, llm_call)?;
    match scores {
        Ok(scores) => {
            let summary = crate::metrics::run::JudgeSummary::from_scores(&scores);
            writer.write(
                t,
                EventBody::JudgeScored {
                    model,
                    scores: Box::new(scores),
                },
            )?;
            Ok(format!(
                "{}: task completion {:.1}, tool selection {:.1}, planning {:.1}, overall {:.1}",
                file.display(),
                summary.task_completion,
                summary.tool_selection,
                summary.planning_effectiveness,
                summary.overall
            ))
        }
        Err(e) => {
            writer.write(
                t,
                EventBody::Error {
                    source: "llm".into(),
                    name: Some("judge".into()),
                    message: e.clone(),
                    stderr_tail: None,
                },
            )?;
            bail!("not judged: {e}")
        }
    }
}
