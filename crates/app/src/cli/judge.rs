//! `cosmos judge`: scores runs with MCP-Bench's judge and appends `phase judge`, one `llm_call`
//! per request and `judge_scored` (or the `error` saying why there are no scores) to each
//! run's file.

use crate::cli::output::{errln, outln};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use cosmos_engine::config::Config;
use cosmos_engine::judge::{self, MAX_TRIALS, MCP_BENCH_TRIALS, Settings};
use cosmos_engine::llm::LlmClient;
use cosmos_engine::llm::LlmConfig;
use cosmos_engine::task::Task;
use cosmos_trajectory::event::{EventBody, Phase, Role};
use cosmos_trajectory::reader::collect_files;
use cosmos_trajectory::redact::Redactor;
use cosmos_trajectory::run::Run;
use cosmos_trajectory::sanitize::inert;
use cosmos_trajectory::writer::Writer;

/// How many trials, from which seed, and where older runs' task details are.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct JudgeArgs {
    /// Requests per run, each with its own order of the rubric; the scores are their mean
    /// (default: `[judge] trials` in --config, else 1; with --mcp-bench, 5).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=MAX_TRIALS as i64))]
    trials: Option<u32>,
    /// MCP-Bench's own setting: five trials unless --trials says otherwise.
    #[arg(long)]
    mcp_bench: bool,
    /// Seed of the rubric orders (trial i uses SEED + i), so a judgement's prompts can be
    /// repeated (default: `[judge] seed` in --config, else drawn at random; recorded either way).
    #[arg(long)]
    seed: Option<u64>,
    /// Task file the runs were made from: fills in the concrete task and the dependency
    /// analysis of runs recorded before their header kept them (matched by task id).
    #[arg(long, value_name = "FILE")]
    tasks: Option<PathBuf>,
    /// Print each trial's request (one JSON line per trial: file, seed, rubric order,
    /// messages) instead of sending it; nothing is written and no endpoint is called.
    #[arg(long)]
    print_prompts: bool,
}

impl JudgeArgs {
    /// The settings: the command line over `[judge]` in the config over the defaults.
    fn settings(&self, config: &Config) -> Result<Settings> {
        let table = config.judge;
        let trials = self
            .trials
            .or(self.mcp_bench.then_some(MCP_BENCH_TRIALS))
            .or(table.trials)
            .unwrap_or(1);
        if !(1..=MAX_TRIALS).contains(&trials) {
            bail!("[judge] trials = {trials}: a judgement takes 1 to {MAX_TRIALS} trials");
        }
        Ok(Settings {
            trials,
            seed: self.seed.or(table.seed),
        })
    }
}

/// Judges every run under `paths`; already judged runs are skipped unless `force`.
pub fn run(
    paths: &[PathBuf],
    config: Option<PathBuf>,
    force: bool,
    args: &JudgeArgs,
) -> Result<ExitCode> {
    let config = Config::load(config.as_deref())?;
    let settings = args.settings(&config)?;
    let tasks = match &args.tasks {
        Some(path) => cosmos_engine::task::load(path)?,
        None => Vec::new(),
    };
    let found = collect_files(paths)?;
    for skipped in &found.skipped {
        errln!("cosmos: skipped {}", inert(skipped));
    }
    let files = found.files;
    if files.is_empty() {
        bail!("no *.jsonl files to judge");
    }
    if args.print_prompts {
        return print_prompts(&files, &tasks, settings);
    }
    let judge = Judge::new(&config.llm, settings, tasks, force);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let failures = runtime.block_on(judge.files(&files, None));
    Ok(if failures > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--print-prompts`: every trial's request for every file, as JSON lines.
fn print_prompts(files: &[PathBuf], tasks: &[Task], settings: Settings) -> Result<ExitCode> {
    let seeds = settings.trial_seeds();
    for file in files {
        let run = Run::open(file)?;
        let task = tasks.iter().find(|t| t.id == run.header.task.id);
        let evidence = judge::Evidence::of(&run, task);
        for (i, &trial_seed) in seeds.iter().enumerate() {
            let (messages, order) = judge::prompt(&evidence, trial_seed);
            let line = serde_json::json!({
                "file": file.display().to_string(),
                "trial": i + 1,
                "seed": trial_seed,
                "order": order,
                "evidence": evidence.facts(),
                "messages": messages,
            });
            outln!("{}", inert(&line.to_string()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The judge role's client with its settings: what `cosmos judge` and a sweep's `judge = true`
/// judge files with.
pub struct Judge {
    client: LlmClient,
    redactor: Redactor,
    settings: Settings,
    tasks: Vec<Task>,
    force: bool,
    /// Say so of a run judged already (`cosmos judge`); a sweep, which passes its judged cells
    /// on every run, does not.
    say_already_judged: bool,
}

/// What judging a file came to.
pub enum Judged {
    /// Judged now: the line to print.
    Now(String),
    /// It had a judgement already (and `--force` was not given).
    Already(String),
}

impl Judge {
    /// The judge of `llm`'s judge role.
    pub fn new(llm: &LlmConfig, settings: Settings, tasks: Vec<Task>, force: bool) -> Self {
        Self {
            client: LlmClient::new(llm.endpoint(Role::Judge).clone()),
            redactor: Redactor::with_secrets(llm.secrets()),
            settings,
            tasks,
            force,
            say_already_judged: true,
        }
    }

    /// The judge of a configuration file's judge role, with its `[judge]` settings (a
    /// sweep's): runs already judged are left as they are.
    pub fn from_config(config: Option<&Path>) -> Result<Self> {
        let config = Config::load(config)?;
        let settings = JudgeArgs::default().settings(&config)?;
        Ok(Self {
            say_already_judged: false,
            ..Self::new(&config.llm, settings, Vec::new(), false)
        })
    }

    /// Judges `files` in order, printing a line each (errors to stderr); stops before the next
    /// file once `stop` says so. Returns how many could not be judged.
    pub async fn files(
        &self,
        files: &[PathBuf],
        stop: Option<&tokio::sync::watch::Receiver<bool>>,
    ) -> usize {
        let mut failures = 0;
        for file in files {
            if stop.is_some_and(|s| *s.borrow()) {
                break;
            }
            match self.file(file).await {
                Ok(Judged::Now(line)) => outln!("{}", inert(&line)),
                Ok(Judged::Already(line)) if self.say_already_judged => {
                    outln!("{}", inert(&line))
                }
                Ok(Judged::Already(_)) => {}
                Err(e) => {
                    failures += 1;
                    errln!("cosmos: {}: {}", file.display(), inert(&format!("{e:#}")));
                }
            }
        }
        failures
    }

    /// Judges one file and appends the judgement.
    pub async fn file(&self, file: &Path) -> Result<Judged> {
        let run = Run::open(file)?;
        if run.judge_at(run.len()).is_some() && !self.force {
            return Ok(Judged::Already(format!(
                "{}: already judged (--force to judge again)",
                file.display()
            )));
        }
        if run.finish_at(run.len()).is_none() {
            bail!("the run has not finished; judge it when it has");
        }
        let task = self.tasks.iter().find(|t| t.id == run.header.task.id);
        let judgement = judge::judge(&self.client, &run, task, self.settings).await;
        let mut writer =
            Writer::append(file, self.redactor.clone()).context("appending the judgement")?;
        let t = run.briefs().last().map_or(0, |e| e.t_ms);
        let model = self.client.endpoint().model.clone();
        writer.write(
            t,
            EventBody::Phase {
                phase: Phase::Judge,
            },
        )?;
        for call in &judgement.calls {
            writer.write(
                t,
                cosmos_engine::agent::llm_call_event(Role::Judge, &model, call.as_ref()),
            )?;
        }
        match judgement.outcome {
            Ok((scores, judging)) => {
                let summary = cosmos_engine::metrics::run::JudgeSummary::of(
                    cosmos_trajectory::event::JudgeRecord {
                        model: &model,
                        scores: &scores,
                        judging: Some(&judging),
                    },
                );
                let answered = judging.answered().count();
                let asked = judging.trials.len();
                let compressed = judging.evidence.compressed.is_some();
                writer.write(
                    t,
                    EventBody::JudgeScored {
                        model,
                        scores: Box::new(scores),
                        judging: Some(Box::new(judging)),
                    },
                )?;
                Ok(Judged::Now(format!(
                    "{}: task completion {:.1}, tool selection {:.1}, planning {:.1}, overall {:.1} \
                     ({answered} of {asked} trial{}{})",
                    file.display(),
                    summary.task_completion,
                    summary.tool_selection,
                    summary.planning_effectiveness,
                    summary.overall,
                    if asked == 1 { "" } else { "s" },
                    if compressed {
                        "; the history was compressed to fit the judge's context"
                    } else {
                        ""
                    }
                )))
            }
            Err(e) => {
                writer.write(
                    t,
                    EventBody::Error {
                        source: cosmos_trajectory::event::ErrorSource::Llm,
                        name: Some("judge".into()),
                        message: e.clone(),
                        stderr_tail: None,
                        step: None,
                    },
                )?;
                bail!("not judged: {e}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(args: &JudgeArgs, toml: &str) -> Result<Settings> {
        let config = Config::from_text(toml, Some(Path::new("cosmos.toml")), |_| None)?;
        args.settings(&config)
    }

    #[test]
    fn the_command_line_wins_over_the_config_and_too_many_trials_are_refused() {
        let none = JudgeArgs::default();
        assert_eq!(settings(&none, "").unwrap().trials, 1);
        let from_file = settings(&none, "[judge]\ntrials = 3\nseed = 9\n").unwrap();
        assert_eq!((from_file.trials, from_file.seed), (3, Some(9)));
        let parity = JudgeArgs {
            mcp_bench: true,
            ..JudgeArgs::default()
        };
        assert_eq!(
            settings(&parity, "[judge]\ntrials = 3\n").unwrap().trials,
            5
        );
        let err = settings(&none, "[judge]\ntrials = 50\n").unwrap_err();
        assert!(err.to_string().contains("1 to 20 trials"), "{err}");
        let seeds = Settings {
            trials: 3,
            seed: Some(u64::MAX),
        }
        .trial_seeds();
        assert_eq!(seeds, [u64::MAX, 0, 1], "consecutive, wrapping");
    }
}
