//! Metrics per run and per group of runs (docs/design.md, "Metrics").

pub mod calibration;
pub mod coverage;
pub mod fidelity;
pub mod figure;
pub mod group;
pub mod leaderboard;
pub mod mean;
pub mod paired;
pub mod paper_tables;
pub mod recalibration;
pub mod records;
pub mod routing_bound;
pub mod routing_file;
pub mod run;
pub mod state_match;
pub mod stats;
pub mod table;
pub mod text_table;
