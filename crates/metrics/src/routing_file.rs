//! A routing file (`cosmos wm-eval --routing-out`, written by `routing_bound::routing_file`)
//! read back for a run: per tool, the confidence at or above which the world model's
//! predictions are trusted; a tool the file does not trust, or does not name, never is. A
//! tool with a recalibration has its confidence mapped by it and held to the threshold on
//! that scale (`metrics::recalibration`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::recalibration::Recalibration;

/// Largest routing file read (a few KiB per hundred tools).
const MAX_BYTES: u64 = 4 << 20;

/// A routing file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct RoutingFile {
    /// The path as given.
    pub path: String,
    /// `sha256:` of its bytes, recorded in each run that used it.
    pub digest: String,
    /// The world model the thresholds were chosen for.
    pub world_model: String,
    /// Per tool (`SERVER:TOOL`), its threshold on the raw confidence, or `None`: never
    /// trusted.
    pub thresholds: BTreeMap<String, Option<f64>>,
    /// Per trusted tool with a recalibration: the curve and the threshold on its scale.
    pub recalibrated: BTreeMap<String, (Recalibration, f64)>,
}

impl RoutingFile {
    /// Reads `path` (at most 4 MiB, a regular file: a pipe or a device is refused before it
    /// is opened, as opening it could wait forever).
    pub fn load(path: &Path) -> Result<Self> {
        let kind = std::fs::metadata(path)
            .with_context(|| format!("reading the routing file {}", path.display()))?;
        if !kind.is_file() {
            bail!(
                "the routing file {} is not a regular file (a pipe, a device or a folder)",
                path.display()
            );
        }
        let bytes = cosmos_trajectory::small_file::read_within(path, MAX_BYTES)
            .with_context(|| format!("reading the routing file {}", path.display()))?;
        let text = std::str::from_utf8(&bytes)
            .with_context(|| format!("{} is not UTF-8 text", path.display()))?;
        let mut file =
            Self::parse(text).with_context(|| format!("the routing file {}", path.display()))?;
        file.path = path.display().to_string();
        file.digest = format!("sha256:{:x}", Sha256::digest(&bytes));
        Ok(file)
    }

    /// The file's TOML: its world model and each `[tools."SERVER:TOOL"]` with `go_real_below`
    /// (a confidence from 0 to 1) or `trust = false`.
    pub fn parse(text: &str) -> Result<Self> {
        let doc: toml::Table = text.parse().context("not TOML")?;
        let world_model = doc
            .get("world_model")
            .and_then(toml::Value::as_str)
            .context("no `world_model`: which world model were its thresholds chosen for?")?
            .to_string();
        let mut thresholds = BTreeMap::new();
        let mut recalibrated = BTreeMap::new();
        if let Some(tools) = doc.get("tools").and_then(toml::Value::as_table) {
            for (tool, entry) in tools {
                let threshold = match (entry.get("go_real_below"), entry.get("trust")) {
                    (Some(x), _) => {
                        let x = number(x)
                            .with_context(|| format!("tool {tool}: go_real_below is no number"))?;
                        if !(0.0..=1.0).contains(&x) {
                            bail!("tool {tool}: go_real_below {x} is no confidence (0 to 1)");
                        }
                        Some(x)
                    }
                    (None, Some(toml::Value::Boolean(false))) => None,
                    _ => bail!("tool {tool}: neither go_real_below nor trust = false"),
                };
                thresholds.insert(tool.clone(), threshold);
                if let (Some(raw), Some(table)) = (threshold, entry.get("recalibration")) {
                    let curve = recalibration(tool, raw, table)?;
                    recalibrated.insert(tool.clone(), curve);
                }
            }
        }
        Ok(Self {
            path: String::new(),
            digest: String::new(),
            world_model,
            thresholds,
            recalibrated,
        })
    }

    /// True when a prediction of `tool` with `confidence` is trusted: the file names the tool
    /// with a threshold and the confidence is at least it. No confidence: not trusted.
    pub fn trusts(&self, tool: &str, confidence: Option<f64>) -> bool {
        match (self.thresholds.get(tool), confidence) {
            (Some(Some(x)), Some(c)) => match self.recalibrated.get(tool) {
                Some((curve, on_scale)) => curve.apply(c) >= *on_scale,
                None => c >= *x,
            },
            _ => false,
        }
    }

    /// The tool's threshold on the raw confidence (`None`: never trusted), which a recorded
    /// confidence is held against: a recalibrated tool's threshold on its scale trusts
    /// exactly the confidences at or above this one.
    pub fn threshold(&self, tool: &str) -> Option<f64> {
        self.thresholds.get(tool).copied().flatten()
    }

    /// What a run header records of it: the file, its digest, its world model and every
    /// tool's threshold (`null`: never trusted).
    pub fn recorded(&self) -> Value {
        json!({
            "file": self.path,
            "digest": self.digest,
            "world_model": self.world_model,
            "thresholds": self.thresholds,
            "recalibrated": self
                .recalibrated
                .iter()
                .map(|(tool, (curve, on_scale))| {
                    (tool.clone(), json!({
                        "slope": curve.slope,
                        "intercept": curve.intercept,
                        "go_real_below": on_scale,
                    }))
                })
                .collect::<BTreeMap<_, _>>(),
        })
    }
}

/// A TOML number, integer or float, as a float.
fn number(value: &toml::Value) -> Option<f64> {
    value
        .as_float()
        .or_else(|| value.as_integer().map(|i| i as f64))
}

/// A trusted tool's `recalibration` table: its curve (slope above 0) and the threshold on its
/// scale, which must be the curve of the raw threshold `raw` (else the two disagree on what is
/// trusted).
fn recalibration(tool: &str, raw: f64, table: &toml::Value) -> Result<(Recalibration, f64)> {
    let number = |key: &str| -> Result<f64> {
        let x = table
            .get(key)
            .with_context(|| format!("tool {tool}: its recalibration has no {key}"))?;
        number(x)
            .filter(|x| x.is_finite())
            .with_context(|| format!("tool {tool}: its recalibration's {key} is no number"))
    };
    let curve = Recalibration {
        slope: number("slope")?,
        intercept: number("intercept")?,
    };
    ensure!(
        curve.slope > 0.0,
        "tool {tool}: its recalibration's slope {} is not above 0 (the curve must rise)",
        curve.slope
    );
    let on_scale = number("go_real_below")?;
    ensure!(
        (curve.apply(raw) - on_scale).abs() <= 1e-12,
        "tool {tool}: the recalibrated go_real_below {on_scale} is not the curve's value at \
         go_real_below {raw} ({}): the two would trust different predictions",
        curve.apply(raw)
    );
    Ok((curve, on_scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_tool_by_tool() {
        use crate::routing_bound::{Choice, routing_file};
        let mut choices = BTreeMap::new();
        choices.insert(
            "time:convert".to_string(),
            Choice::Trusted {
                threshold: 0.4375,
                n: 300,
                poor: 12,
                bound: 0.06,
            },
        );
        choices.insert(
            "time:now".to_string(),
            Choice::Untrusted {
                why: "confidently wrong".into(),
                more_needed: None,
            },
        );
        let text = routing_file(
            "memory",
            0.1,
            0.1,
            0.8,
            &["runs".into()],
            &choices,
            &Default::default(),
        );
        let file = RoutingFile::parse(&text).unwrap();
        assert_eq!(file.world_model, "memory");
        assert_eq!(file.threshold("time:convert"), Some(0.4375));
        assert!(file.trusts("time:convert", Some(0.4375)));
        assert!(!file.trusts("time:convert", Some(0.4374)));
        assert!(!file.trusts("time:convert", None));
        assert!(!file.trusts("time:now", Some(1.0)), "never trusted");
        assert!(
            !file.trusts("time:unnamed", Some(1.0)),
            "a tool not named never is"
        );
    }

    #[test]
    fn a_pipe_a_folder_or_a_huge_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("routing.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a path of our own, made once.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = format!("{:#}", RoutingFile::load(&fifo).unwrap_err());
        assert!(e.contains("not a regular file"), "{e}");
        let e = format!("{:#}", RoutingFile::load(dir.path()).unwrap_err());
        assert!(e.contains("not a regular file"), "{e}");
        let huge = dir.path().join("huge.toml");
        std::fs::File::create(&huge)
            .unwrap()
            .set_len(MAX_BYTES + 1)
            .unwrap();
        let e = format!("{:#}", RoutingFile::load(&huge).unwrap_err());
        assert!(e.contains("larger than"), "{e}");
        // A link to a good file is read as that file.
        let good = dir.path().join("good.toml");
        std::fs::write(&good, "world_model = \"m\"\n").unwrap();
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&good, &link).unwrap();
        assert_eq!(RoutingFile::load(&link).unwrap().world_model, "m");
    }

    #[test]
    fn a_file_that_says_nothing_usable_is_refused_saying_why() {
        for (text, says) in [
            ("[tools.\"a:b\"]\ngo_real_below = 0.5", "world_model"),
            (
                "world_model = \"m\"\n[tools.\"a:b\"]\ngo_real_below = 1.5",
                "no confidence",
            ),
            ("world_model = \"m\"\n[tools.\"a:b\"]\nn = 3", "neither"),
            ("not toml at all [", "TOML"),
            (
                "world_model = \"m\"\n[tools.\"a:b\"]\ngo_real_below = 0.5\n\
                 [tools.\"a:b\".recalibration]\nslope = -1.0\nintercept = 0.0\ngo_real_below = 0.5",
                "not above 0",
            ),
            (
                "world_model = \"m\"\n[tools.\"a:b\"]\ngo_real_below = 0.5\n\
                 [tools.\"a:b\".recalibration]\nslope = 1.0\nintercept = 0.0\ngo_real_below = 0.4",
                "would trust different predictions",
            ),
            (
                "world_model = \"m\"\n[tools.\"a:b\"]\ngo_real_below = 0.5\n\
                 [tools.\"a:b\".recalibration]\nslope = 1.0\nintercept = 0.0",
                "has no go_real_below",
            ),
        ] {
            let e = format!("{:#}", RoutingFile::parse(text).unwrap_err());
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
