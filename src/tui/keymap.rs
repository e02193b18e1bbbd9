//! Keys → commands, with defaults and overrides from `keys.toml` in the XDG config folder
//! (`$XDG_CONFIG_HOME/mcp-cosmos/keys.toml`, else `~/.config/mcp-cosmos/keys.toml`):
//!
//! ```toml
//! [keys]
//! quit = ["q", "ctrl-q"]
//! step_forward = ["l", "Right", "."]
//! ```
//!
//! A command named in the file replaces all its default keys.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;

use super::action::Action;

/// A bindable command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum Command {
    Quit,
    Back,
    Help,
    Up,
    Down,
    PageUp,
    PageDown,
    Open,
    StepBack,
    StepForward,
    JumpStart,
    JumpEnd,
    NextToolCall,
    PrevToolCall,
    NextFailure,
    PrevFailure,
    NextNodeEvent,
    PlayPause,
    Faster,
    Slower,
    FocusNext,
    FocusPrev,
    ExpandAll,
    CollapseAll,
    Search,
    SortNext,
    SortReverse,
    ToggleGroups,
    Mark,
    Compare,
    StopRun,
    Inspect,
}

/// Every command with its default keys and help text, in help order.
const DEFAULTS: &[(Command, &[&str], &str)] = &[
    (Command::Help, &["?"], "show or hide this help"),
    (Command::Quit, &["q", "ctrl-c"], "quit"),
    (Command::Back, &["Esc"], "back / close"),
    (Command::Up, &["Up", "k"], "selection up"),
    (Command::Down, &["Down", "j"], "selection down"),
    (Command::PageUp, &["PageUp", "ctrl-u"], "page up"),
    (Command::PageDown, &["PageDown", "ctrl-d"], "page down"),
    (
        Command::Open,
        &["Enter", "o"],
        "open run / open or close node",
    ),
    (Command::FocusNext, &["Tab"], "next pane"),
    (Command::FocusPrev, &["BackTab"], "previous pane"),
    (
        Command::StepBack,
        &["Left", "h"],
        "timeline: one event back",
    ),
    (
        Command::StepForward,
        &["Right", "l"],
        "timeline: one event forward",
    ),
    (Command::JumpStart, &["Home", "<"], "timeline: to the start"),
    (Command::JumpEnd, &["End", ">"], "timeline: to the end"),
    (
        Command::NextToolCall,
        &["t"],
        "timeline: next real tool call",
    ),
    (
        Command::PrevToolCall,
        &["T"],
        "timeline: previous real tool call",
    ),
    (Command::NextFailure, &["f"], "timeline: next failure"),
    (Command::PrevFailure, &["F"], "timeline: previous failure"),
    (
        Command::NextNodeEvent,
        &["n"],
        "timeline: next event of the selected node",
    ),
    (Command::PlayPause, &["Space"], "play / pause"),
    (Command::Faster, &["+", "="], "play faster"),
    (Command::Slower, &["-"], "play slower"),
    (
        Command::ExpandAll,
        &["E"],
        "tree: open all under the selection",
    ),
    (Command::CollapseAll, &["C"], "tree: close all"),
    (
        Command::Search,
        &["/"],
        "filter runs / find in the timeline",
    ),
    (Command::SortNext, &["s"], "browser: sort by next column"),
    (Command::SortReverse, &["S"], "browser: reverse sort"),
    (Command::ToggleGroups, &["g"], "browser: group table"),
    (Command::Mark, &["m"], "browser: mark run for compare"),
    (
        Command::Compare,
        &["c"],
        "browser: compare marked runs (2–4)",
    ),
    (Command::StopRun, &["x"], "live: stop the run"),
    (
        Command::Inspect,
        &["i"],
        "timeline: inspect the event (also Enter)",
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

fn key_label(key: &Key) -> String {
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
    bindings: Vec<(Key, Command)>,
}

impl Default for Keymap {
    fn default() -> Self {
        Self::with_overrides(&BTreeMap::new()).expect("default keys parse")
    }
}

#[derive(Deserialize)]
struct KeysFile {
    #[serde(default)]
    keys: BTreeMap<Command, Vec<String>>,
}

impl Keymap {
    /// Defaults with some commands rebound.
    pub fn with_overrides(overrides: &BTreeMap<Command, Vec<String>>) -> Result<Self> {
        let mut bindings = Vec::new();
        for (command, keys, _) in DEFAULTS {
            let keys: Vec<&str> = match overrides.get(command) {
                Some(custom) => custom.iter().map(String::as_str).collect(),
                None => keys.to_vec(),
            };
            for k in keys {
                bindings.push((
                    parse_key(k).with_context(|| format!("binding for {command:?}"))?,
                    *command,
                ));
            }
        }
        Ok(Self { bindings })
    }

    /// Reads `path` if it exists; defaults otherwise.
    pub fn load(path: &Path) -> Result<Self> {
        if !path.exists() {
            return Ok(Self::default());
        }
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let file: KeysFile =
            toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        Self::with_overrides(&file.keys).with_context(|| format!("in {}", path.display()))
    }

    /// The default place of the keys file.
    pub fn default_path() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
        Some(base.join("mcp-cosmos").join("keys.toml"))
    }

    /// The command bound to a key press.
    pub fn command(&self, event: &KeyEvent) -> Option<Command> {
        let key = Key::from_event(event);
        self.bindings
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, c)| *c)
    }

    /// The action for a key press, if bound.
    pub fn action(&self, event: &KeyEvent) -> Option<Action> {
        self.command(event).map(to_action)
    }

    /// Help lines: keys and what they do, in help order.
    pub fn help(&self) -> Vec<(String, &'static str)> {
        DEFAULTS
            .iter()
            .map(|(command, _, text)| {
                let keys: Vec<String> = self
                    .bindings
                    .iter()
                    .filter(|(_, c)| c == command)
                    .map(|(k, _)| key_label(k))
                    .collect();
                (keys.join(" "), *text)
            })
            .collect()
    }
}

fn to_action(c: Command) -> Action {
    match c {
        Command::Quit => Action::Quit,
        Command::Back => Action::Back,
        Command::Help => Action::ToggleHelp,
        Command::Up => Action::Up,
        Command::Down => Action::Down,
        Command::PageUp => Action::PageUp,
        Command::PageDown => Action::PageDown,
        Command::Open => Action::Open,
        Command::StepBack => Action::StepBack,
        Command::StepForward => Action::StepForward,
        Command::JumpStart => Action::JumpStart,
        Command::JumpEnd => Action::JumpEnd,
        Command::NextToolCall => Action::NextToolCall,
        Command::PrevToolCall => Action::PrevToolCall,
        Command::NextFailure => Action::NextFailure,
        Command::PrevFailure => Action::PrevFailure,
        Command::NextNodeEvent => Action::NextNodeEvent,
        Command::PlayPause => Action::PlayPause,
        Command::Faster => Action::Faster,
        Command::Slower => Action::Slower,
        Command::FocusNext => Action::FocusNext,
        Command::FocusPrev => Action::FocusPrev,
        Command::ExpandAll => Action::ExpandAll,
        Command::CollapseAll => Action::CollapseAll,
        Command::Search => Action::Search,
        Command::SortNext => Action::SortNext,
        Command::SortReverse => Action::SortReverse,
        Command::ToggleGroups => Action::ToggleGroups,
        Command::Mark => Action::Mark,
        Command::Compare => Action::Compare,
        Command::StopRun => Action::StopRun,
        Command::Inspect => Action::Inspect,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::{KeyEventKind, KeyEventState};

    fn press(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent {
            code,
            modifiers,
            kind: KeyEventKind::Press,
            state: KeyEventState::NONE,
        }
    }

    #[test]
    fn defaults_and_overrides() {
        let km = Keymap::default();
        assert_eq!(
            km.command(&press(KeyCode::Char('l'), KeyModifiers::NONE)),
            Some(Command::StepForward)
        );
        assert_eq!(
            km.command(&press(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::Quit)
        );
        assert_eq!(
            km.command(&press(KeyCode::Char('T'), KeyModifiers::SHIFT)),
            Some(Command::PrevToolCall)
        );
        let file: KeysFile = toml::from_str("[keys]\nstep_forward = [\".\"]\n").unwrap();
        let km = Keymap::with_overrides(&file.keys).unwrap();
        assert_eq!(
            km.command(&press(KeyCode::Char('.'), KeyModifiers::NONE)),
            Some(Command::StepForward)
        );
        assert_eq!(
            km.command(&press(KeyCode::Char('l'), KeyModifiers::NONE)),
            None,
            "override replaces defaults"
        );
    }

    #[test]
    fn bad_files_are_clear_errors() {
        assert!(toml::from_str::<KeysFile>("[keys]\nfly = [\"x\"]\n").is_err());
        let file: KeysFile = toml::from_str("[keys]\nquit = [\"Hyper-Q\"]\n").unwrap();
        let err = format!("{:#}", Keymap::with_overrides(&file.keys).unwrap_err());
        assert!(err.contains("unknown key \"Hyper-Q\""), "{err}");
    }

    #[test]
    fn help_lists_every_command() {
        let help = Keymap::default().help();
        assert_eq!(help.len(), DEFAULTS.len());
        assert!(
            help.iter()
                .any(|(k, t)| k == "→ l" && t.contains("forward"))
        );
    }
}
