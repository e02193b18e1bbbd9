//! Keys → commands, per mode, from one table ([`COMMANDS`]): the defaults, the help and the
//! overrides in `keys.toml` (XDG config folder: `$XDG_CONFIG_HOME/mcp-cosmos/keys.toml`, else
//! `~/.config/mcp-cosmos/keys.toml`) all read it:
//!
//! ```toml
//! [keys]
//! quit = ["q", "ctrl-q"]        # a command, in every mode it has
//! [keys.run]
//! step_forward = ["l", "Right", "."]   # a command in one mode
//! ```
//!
//! A command named in the file replaces all its default keys (in the modes named). Two
//! commands on one key in the same mode (a mode's keys include the global ones) is an error at
//! start that names both.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;

/// A bindable command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Command {
    /// Leave the explorer (a live run asks first).
    Quit,
    /// Ctrl-C: stop what is running at once (a live run, a sweep), then leave; quits when
    /// nothing runs. Never asks: the agent must not make another request while a question waits.
    Interrupt,
    /// Back to the view before.
    Back,
    /// The keys of the view in front.
    Help,
    /// The row or line above.
    Up,
    /// The row or line below.
    Down,
    /// A page up.
    PageUp,
    /// A page down.
    PageDown,
    /// The first row.
    Top,
    /// The last row.
    Bottom,
    /// Open the selected run, node or link.
    Open,
    /// The cursor one event back.
    StepBack,
    /// The cursor one event on.
    StepForward,
    /// The next real tool call.
    NextToolCall,
    /// The previous real tool call.
    PrevToolCall,
    /// The next failure.
    NextFailure,
    /// The previous failure.
    PrevFailure,
    /// The next search match.
    NextMatch,
    /// The previous search match.
    PrevMatch,
    /// Replay the events, or pause.
    PlayPause,
    /// Replay faster.
    Faster,
    /// Replay slower.
    Slower,
    /// Focus the next pane.
    FocusNext,
    /// Focus the previous pane.
    FocusPrev,
    /// Expand every node.
    ExpandAll,
    /// Collapse every node.
    CollapseAll,
    /// Search the view.
    Search,
    /// Sort by the next column.
    SortNext,
    /// Reverse the sort.
    SortReverse,
    /// Rows as groups of runs, or runs.
    ToggleGroups,
    /// Scroll left.
    ScrollLeft,
    /// Scroll right.
    ScrollRight,
    /// Mark a run to compare.
    Mark,
    /// Compare the marked runs.
    Compare,
    /// Stop the live run.
    StopRun,
    /// The selected node or event in full.
    Inspect,
    /// The run's own story: its header, why the plan was chosen, how its searches went.
    About,
    /// Write a note on the selected node or the event at the cursor.
    Annotate,
    /// The run's notes, to read and go to.
    Notes,
    /// A proxy session's protocol: each JSON-RPC message between client and proxy.
    Wire,
    /// Open the run a recorded call came from, at the call (wm-eval).
    OpenSource,
    /// The next link.
    NextLink,
    /// The previous link.
    PrevLink,
    /// Leave a live run running in the background.
    LeaveRunning,
    /// Ask world models what the selected node's call would return.
    Probe,
    /// Make the selected node's call for real (read-only tools).
    ProbeReal,
    /// Fork the run from a step (`cosmos fork` from the explorer).
    Branch,
    /// Answer yes to a question.
    Yes,
}

/// Where a binding holds: everywhere, or while a kind of view is in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// In every view (unless the view's own mode binds the key).
    Global,
    /// The run browser.
    Browser,
    /// One run.
    Run,
    /// Runs compared, or world models (a wm-eval file).
    Compare,
    /// An inspector or the help: text to read, with links.
    Reader,
    /// A question (leave a live run?).
    Confirm,
    /// A sweep's matrix.
    Sweep,
    /// A short list to choose from: the run's notes, the probe's world models.
    List,
}

/// Every mode.
pub const MODES: [Mode; 8] = [
    Mode::Global,
    Mode::Browser,
    Mode::Run,
    Mode::Compare,
    Mode::Reader,
    Mode::Confirm,
    Mode::Sweep,
    Mode::List,
];

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Global => "global",
            Mode::Browser => "browser",
            Mode::Run => "run",
            Mode::Compare => "compare",
            Mode::Reader => "reader",
            Mode::Confirm => "confirm",
            Mode::Sweep => "sweep",
            Mode::List => "list",
        }
    }
}

/// Every command, the mode it holds in, its default keys and its help, in help order.
pub const COMMANDS: &[(Command, Mode, &[&str], &str)] = &[
    (
        Command::Help,
        Mode::Global,
        &["?"],
        "show or hide this help",
    ),
    (
        Command::Quit,
        Mode::Global,
        &["q"],
        "quit (asks first while a run is going)",
    ),
    (
        Command::Interrupt,
        Mode::Global,
        &["ctrl-c"],
        "stop a live run at once (it ends interrupted, its file kept), then quit",
    ),
    (Command::Back, Mode::Global, &["Esc"], "back / close"),
    (Command::Up, Mode::Global, &["Up", "k"], "up"),
    (Command::Down, Mode::Global, &["Down", "j"], "down"),
    (
        Command::PageUp,
        Mode::Global,
        &["PageUp", "ctrl-u"],
        "page up",
    ),
    (
        Command::PageDown,
        Mode::Global,
        &["PageDown", "ctrl-d"],
        "page down",
    ),
    (Command::Top, Mode::Global, &["Home", "<"], "to the start"),
    (Command::Bottom, Mode::Global, &["End", ">"], "to the end"),
    (
        Command::Open,
        Mode::Browser,
        &["Enter", "o"],
        "open the run",
    ),
    (
        Command::Search,
        Mode::Browser,
        &["/"],
        "filter (words, all must match)",
    ),
    (
        Command::NextFailure,
        Mode::Browser,
        &["f"],
        "next run with a failure",
    ),
    (
        Command::PrevFailure,
        Mode::Browser,
        &["F"],
        "previous run with a failure",
    ),
    (
        Command::SortNext,
        Mode::Browser,
        &["s"],
        "sort by the next column",
    ),
    (
        Command::SortReverse,
        Mode::Browser,
        &["S"],
        "reverse the sort",
    ),
    (Command::ToggleGroups, Mode::Browser, &["g"], "group table"),
    (
        Command::ScrollLeft,
        Mode::Browser,
        &["Left", "h"],
        "group table: scroll left",
    ),
    (
        Command::ScrollRight,
        Mode::Browser,
        &["Right", "l"],
        "group table: scroll right",
    ),
    (
        Command::Mark,
        Mode::Browser,
        &["m"],
        "mark (or unmark) the run for compare, and move down",
    ),
    (
        Command::Compare,
        Mode::Browser,
        &["c"],
        "compare marked runs (2–4)",
    ),
    (
        Command::Branch,
        Mode::Browser,
        &["b"],
        "fork links: a fork's original, or a run's first fork (⑂)",
    ),
    (
        Command::Open,
        Mode::Run,
        &["Enter", "o"],
        "tree: open or close node · timeline: inspect",
    ),
    (
        Command::Inspect,
        Mode::Run,
        &["i"],
        "inspect the node (tree) or event",
    ),
    (
        Command::Annotate,
        Mode::Run,
        &["A"],
        "note on the selected node (tree) or the event: appended to the run's file",
    ),
    (
        Command::Notes,
        Mode::Run,
        &["L"],
        "list the run's notes; Enter goes to what a note is about",
    ),
    (
        Command::Wire,
        Mode::Run,
        &["W"],
        "a proxy session's protocol: each JSON-RPC message, its size and latency",
    ),
    (
        Command::About,
        Mode::Run,
        &["a"],
        "about the run: task, settings, models, servers, why this plan",
    ),
    (Command::FocusNext, Mode::Run, &["Tab"], "next pane"),
    (Command::FocusPrev, Mode::Run, &["BackTab"], "previous pane"),
    (
        Command::StepBack,
        Mode::Run,
        &["Left", "h"],
        "one event back",
    ),
    (
        Command::StepForward,
        Mode::Run,
        &["Right", "l"],
        "one event forward",
    ),
    (
        Command::NextToolCall,
        Mode::Run,
        &["t"],
        "next real tool call",
    ),
    (
        Command::PrevToolCall,
        Mode::Run,
        &["T"],
        "previous real tool call",
    ),
    (Command::NextFailure, Mode::Run, &["f"], "next failure"),
    (Command::PrevFailure, Mode::Run, &["F"], "previous failure"),
    (
        Command::Search,
        Mode::Run,
        &["/"],
        "find events (tools, arguments, results, reasons)",
    ),
    (
        Command::NextMatch,
        Mode::Run,
        &["n"],
        "next find hit, else next event of the node",
    ),
    (
        Command::PrevMatch,
        Mode::Run,
        &["N"],
        "previous find hit, else previous event of the node",
    ),
    (
        Command::PlayPause,
        Mode::Run,
        &["Space"],
        "play / pause (live: follow / pause)",
    ),
    (Command::Faster, Mode::Run, &["+", "="], "play faster"),
    (Command::Slower, Mode::Run, &["-"], "play slower"),
    (
        Command::ExpandAll,
        Mode::Run,
        &["E"],
        "tree: open all under the selection",
    ),
    (Command::CollapseAll, Mode::Run, &["C"], "tree: close all"),
    (Command::StopRun, Mode::Run, &["x"], "live: stop the run"),
    (
        Command::Probe,
        Mode::Run,
        &["p"],
        "tree: simulate the node's call with a world model you pick",
    ),
    (
        Command::ProbeReal,
        Mode::Run,
        &["P"],
        "tree: make the node's call for real (asks first)",
    ),
    (
        Command::Branch,
        Mode::Run,
        &["b"],
        "fork the run from the selected step (or the one after the cursor): how, in a form",
    ),
    (
        Command::Open,
        Mode::Compare,
        &["Enter", "o"],
        "open the selected call (in its run, or whole in wm-eval)",
    ),
    (
        Command::FocusNext,
        Mode::Compare,
        &["Tab"],
        "compare: keys move the metrics table, or the calls",
    ),
    (
        Command::StepBack,
        Mode::Compare,
        &["Left", "h"],
        "compare: previous run column",
    ),
    (
        Command::StepForward,
        Mode::Compare,
        &["Right", "l"],
        "compare: next run column",
    ),
    (
        Command::OpenSource,
        Mode::Compare,
        &["r"],
        "wm-eval: open the run the call came from, at the call",
    ),
    (
        Command::SortNext,
        Mode::Compare,
        &["s"],
        "wm-eval: calls nobody got right first / by step",
    ),
    (
        Command::About,
        Mode::Compare,
        &["a"],
        "wm-eval: calibration (reliability diagram, selective curve)",
    ),
    (
        Command::Open,
        Mode::Sweep,
        &["Enter", "o"],
        "open the cell's run (followed while it runs)",
    ),
    (
        Command::StepBack,
        Mode::Sweep,
        &["Left", "h"],
        "previous configuration",
    ),
    (
        Command::StepForward,
        Mode::Sweep,
        &["Right", "l"],
        "next configuration",
    ),
    (
        Command::NextFailure,
        Mode::Sweep,
        &["f"],
        "next cell that failed",
    ),
    (
        Command::PrevFailure,
        Mode::Sweep,
        &["F"],
        "previous cell that failed",
    ),
    (Command::StopRun, Mode::Sweep, &["x"], "stop the sweep"),
    (
        Command::Open,
        Mode::List,
        &["Enter", "o"],
        "choose the selected row (a note: go to what it is about)",
    ),
    (Command::NextLink, Mode::Reader, &["Tab", "n"], "next link"),
    (
        Command::PrevLink,
        Mode::Reader,
        &["BackTab", "N"],
        "previous link",
    ),
    (
        Command::Open,
        Mode::Reader,
        &["Enter"],
        "follow the link (jump to the event)",
    ),
    (Command::Inspect, Mode::Reader, &["i"], "close"),
    (Command::About, Mode::Reader, &["a"], "close"),
    (
        Command::StopRun,
        Mode::Confirm,
        &["s"],
        "stop the run, then leave",
    ),
    (Command::Yes, Mode::Confirm, &["y"], "yes, make the call"),
    (
        Command::LeaveRunning,
        Mode::Confirm,
        &["l"],
        "leave; the run finishes without the view",
    ),
];

/// A key with its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    code: KeyCode,
    ctrl: bool,
}

impl Key {
    fn from_event(e: &KeyEvent) -> Self {
        // Shifted letters arrive as upper-case chars; SHIFT itself is not part of the key.
        Self {
            code: e.code,
            ctrl: e.modifiers.contains(KeyModifiers::CONTROL),
        }
    }
}

/// Parses `q`, `?`, `Enter`, `ctrl-u`, `F1`….
pub fn parse_key(spec: &str) -> Result<Key> {
    let (ctrl, name) = match spec
        .strip_prefix("ctrl-")
        .or_else(|| spec.strip_prefix("C-"))
    {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let code = match name {
        "Enter" => KeyCode::Enter,
        "Esc" => KeyCode::Esc,
        "Tab" => KeyCode::Tab,
        "BackTab" => KeyCode::BackTab,
        "Space" => KeyCode::Char(' '),
        "Backspace" => KeyCode::Backspace,
        "Left" => KeyCode::Left,
        "Right" => KeyCode::Right,
        "Up" => KeyCode::Up,
        "Down" => KeyCode::Down,
        "Home" => KeyCode::Home,
        "End" => KeyCode::End,
        "PageUp" => KeyCode::PageUp,
        "PageDown" => KeyCode::PageDown,
        f if f.len() >= 2 && f.starts_with('F') && f[1..].parse::<u8>().is_ok() => {
            KeyCode::F(f[1..].parse()?)
        }
        c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
        other => bail!(
            "unknown key \"{other}\" (use a character, Enter, Esc, Tab, Space, Left, PageUp, F1, ctrl-x…)"
        ),
    };
    Ok(Key { code, ctrl })
}

/// How a key is shown in the help: `→`, `Ctrl-u`, `Space`.
pub fn key_label(key: &Key) -> String {
    let base = match key.code {
        KeyCode::Char(' ') => "Space".to_string(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::F(n) => format!("F{n}"),
        KeyCode::Left => "←".into(),
        KeyCode::Right => "→".into(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::BackTab => "Shift-Tab".into(),
        other => format!("{other:?}"),
    };
    if key.ctrl {
        format!("Ctrl-{base}")
    } else {
        base
    }
}

/// The bindings in force.
#[derive(Debug, Clone)]
pub struct Keymap {
    /// One row per binding: key, mode, command.
    bindings: Vec<(Key, Mode, Command)>,
}

impl Default for Keymap {
    fn default() -> Self {
        Self::with_overrides(&Overrides::default()).expect("the default keys parse and agree")
    }
}

/// Rebindings from `keys.toml`: per command in every mode it has, or per mode.
#[derive(Debug, Default)]
pub struct Overrides {
    everywhere: BTreeMap<Command, Vec<String>>,
    per_mode: BTreeMap<(Mode, Command), Vec<String>>,
}

impl Overrides {
    /// Parses the file's text.
    pub fn parse(text: &str) -> Result<Self> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Entry {
            Keys(Vec<String>),
            Mode(BTreeMap<Command, Vec<String>>),
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct File {
            #[serde(default)]
            keys: BTreeMap<String, Entry>,
        }
        let file: File = toml::from_str(text)?;
        let mut out = Self::default();
        for (name, entry) in file.keys {
            match entry {
                Entry::Keys(keys) => {
                    let command: Command = serde_plain(&name)
                        .with_context(|| format!("[keys] {name}: no such command"))?;
                    out.everywhere.insert(command, keys);
                }
                Entry::Mode(commands) => {
                    let mode: Mode = serde_plain(&name).with_context(|| {
                        format!(
                            "[keys.{name}]: no such mode (one of {})",
                            MODES.map(Mode::name).join(", ")
                        )
                    })?;
                    for (command, keys) in commands {
                        if !COMMANDS
                            .iter()
                            .any(|(c, m, ..)| *c == command && *m == mode)
                        {
                            bail!("[keys.{name}]: {command:?} is not a command of that mode");
                        }
                        out.per_mode.insert((mode, command), keys);
                    }
                }
            }
        }
        Ok(out)
    }
}

/// A name from the file read as a snake_case enum variant.
fn serde_plain<T: serde::de::DeserializeOwned>(name: &str) -> Result<T> {
    Ok(T::deserialize(serde::de::value::StrDeserializer::<
        serde::de::value::Error,
    >::new(name))?)
}

impl Keymap {
    /// Defaults with some commands rebound; an error when two commands share a key in a mode.
    pub fn with_overrides(overrides: &Overrides) -> Result<Self> {
        let mut bindings = Vec::new();
        for (command, mode, keys, _) in COMMANDS {
            let keys: Vec<&str> = match overrides
                .per_mode
                .get(&(*mode, *command))
                .or_else(|| overrides.everywhere.get(command))
            {
                Some(custom) => custom.iter().map(String::as_str).collect(),
                None => keys.to_vec(),
            };
            for k in keys {
                let key = parse_key(k).with_context(|| format!("binding for {command:?}"))?;
                bindings.push((key, *mode, *command));
            }
        }
        let map = Self { bindings };
        map.check_conflicts()?;
        Ok(map)
    }

    fn check_conflicts(&self) -> Result<()> {
        for (i, (key, mode, command)) in self.bindings.iter().enumerate() {
            for (other_key, other_mode, other) in &self.bindings[i + 1..] {
                let overlap =
                    mode == other_mode || *mode == Mode::Global || *other_mode == Mode::Global;
                if key == other_key && overlap && command != other {
                    bail!(
                        "the key {} is bound to both {command:?} ({}) and {other:?} ({}); \
                         rebind one in keys.toml",
                        key_label(key),
                        mode.name(),
                        other_mode.name()
                    );
                }
            }
        }
        Ok(())
    }

    /// Reads `path` if it exists; defaults otherwise.
    pub fn load(path: &Path) -> Result<Self> {
        if !path.exists() {
            return Ok(Self::default());
        }
        let text = cosmos_trajectory::small_file::read_string_within(
            path,
            cosmos_trajectory::small_file::CONFIG_BYTES,
        )
        .with_context(|| format!("reading {}", path.display()))?;
        let overrides =
            Overrides::parse(&text).with_context(|| format!("parsing {}", path.display()))?;
        Self::with_overrides(&overrides).with_context(|| format!("in {}", path.display()))
    }

    /// The default place of the keys file.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("mcp-cosmos").join("keys.toml"))
    }

    /// The command bound to a key press in `mode` (its own keys first, then the global ones).
    pub fn command(&self, mode: Mode, event: &KeyEvent) -> Option<Command> {
        let key = Key::from_event(event);
        let find = |m: Mode| {
            self.bindings
                .iter()
                .find(|(k, bm, _)| *k == key && *bm == m)
                .map(|(_, _, c)| *c)
        };
        find(mode).or_else(|| find(Mode::Global))
    }
    /// Help lines for `mode`: its own commands, then the global ones; keys and what they do.
    pub fn help(&self, mode: Mode) -> Vec<(String, &'static str)> {
        let of = |m: Mode| {
            COMMANDS
                .iter()
                .filter(move |(_, cm, ..)| *cm == m)
                .map(move |(command, _, _, text)| {
                    let keys: Vec<String> = self
                        .bindings
                        .iter()
                        .filter(|(_, bm, c)| c == command && *bm == m)
                        .map(|(k, ..)| key_label(k))
                        .collect();
                    (keys.join(" "), *text)
                })
        };
        let own: Vec<_> = if mode == Mode::Global {
            Vec::new()
        } else {
            of(mode).collect()
        };
        own.into_iter().chain(of(Mode::Global)).collect()
    }

    /// The first key of `command` in `mode` (or global), for hints drawn on screen.
    pub fn hint(&self, mode: Mode, command: Command) -> String {
        self.bindings
            .iter()
            .find(|(_, m, c)| *c == command && (*m == mode || *m == Mode::Global))
            .map_or_else(|| "?".to_string(), |(k, ..)| key_label(k))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn defaults_per_mode_and_overrides() {
        let km = Keymap::default();
        let l = press(KeyCode::Char('l'), KeyModifiers::NONE);
        assert_eq!(km.command(Mode::Run, &l), Some(Command::StepForward));
        assert_eq!(km.command(Mode::Confirm, &l), Some(Command::LeaveRunning));
        let x = press(KeyCode::Char('x'), KeyModifiers::NONE);
        assert_eq!(km.command(Mode::Run, &x), Some(Command::StopRun));
        assert_eq!(
            km.command(Mode::Browser, &x),
            None,
            "x stops runs only in the run view"
        );
        let ctrl_c = press(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(km.command(Mode::Browser, &ctrl_c), Some(Command::Interrupt));
        let n = press(KeyCode::Char('N'), KeyModifiers::SHIFT);
        assert_eq!(km.command(Mode::Run, &n), Some(Command::PrevMatch));
        assert_eq!(km.command(Mode::Reader, &n), Some(Command::PrevLink));

        let o =
            Overrides::parse("[keys]\nstep_forward = [\".\"]\n[keys.browser]\nmark = [\"M\"]\n")
                .unwrap();
        let km = Keymap::with_overrides(&o).unwrap();
        let dot = press(KeyCode::Char('.'), KeyModifiers::NONE);
        assert_eq!(km.command(Mode::Run, &dot), Some(Command::StepForward));
        assert_eq!(
            km.command(Mode::Run, &l),
            None,
            "an override replaces the defaults"
        );
        let m = press(KeyCode::Char('M'), KeyModifiers::SHIFT);
        assert_eq!(km.command(Mode::Browser, &m), Some(Command::Mark));
    }

    #[test]
    fn bad_files_and_conflicts_are_clear_errors() {
        let err = format!(
            "{:#}",
            Overrides::parse("[keys]\nfly = [\"x\"]\n").unwrap_err()
        );
        assert!(err.contains("fly: no such command"), "{err}");
        let err = format!(
            "{:#}",
            Overrides::parse("[keys.space]\nquit = [\"x\"]\n").unwrap_err()
        );
        assert!(err.contains("no such mode"), "{err}");
        let o = Overrides::parse("[keys]\nquit = [\"Hyper-Q\"]\n").unwrap();
        let err = format!("{:#}", Keymap::with_overrides(&o).unwrap_err());
        assert!(err.contains("unknown key \"Hyper-Q\""), "{err}");
        // `t` is the run view's next tool call: binding stop to it is a conflict there.
        let o = Overrides::parse("[keys.run]\nstop_run = [\"t\"]\n").unwrap();
        let err = format!("{:#}", Keymap::with_overrides(&o).unwrap_err());
        assert!(
            err.contains("bound to both")
                && err.contains("NextToolCall")
                && err.contains("StopRun"),
            "{err}"
        );
        // A global key taken by a mode's command is a conflict in that mode.
        let o = Overrides::parse("[keys.browser]\nmark = [\"q\"]\n").unwrap();
        assert!(Keymap::with_overrides(&o).is_err());
    }

    #[test]
    fn help_lists_a_modes_commands_then_the_global_ones() {
        let km = Keymap::default();
        let help = km.help(Mode::Run);
        let run = COMMANDS.iter().filter(|(_, m, ..)| *m == Mode::Run).count();
        let global = COMMANDS
            .iter()
            .filter(|(_, m, ..)| *m == Mode::Global)
            .count();
        assert_eq!(help.len(), run + global);
        assert!(
            help.iter()
                .any(|(k, t)| k == "→ l" && t.contains("forward"))
        );
        assert!(!help.iter().any(|(_, t)| t.contains("sort")));
        assert_eq!(km.hint(Mode::Confirm, Command::LeaveRunning), "l");
    }
}
