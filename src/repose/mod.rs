//! The angle-of-repose experiment of paper 000, section 7.5 (Figs. 11-15): bodies pack
//! behind a removable wall in a box, the wall is removed, the pile slumps and settles,
//! and the slope of its free surface is measured on an 8 × 16 grid over the floor.
//!
//! - [`measure`]: the paper's measurement (grid, highest point per cell, eight
//!   least-squares lines, their mean angle and the paper's error);
//! - [`experiment`]: the scripted run as a state machine over a [`crate::World`]
//!   (pack, settle, remove the wall, settle, measure);
//! - [`plot`]: the sweep's figure, angle against μ per shape and solver (Fig. 15).
//!
//! No Bevy types: the CLI's `repose` sweep and the app's repose panel both drive
//! [`ReposeExperiment`].

pub mod experiment;
pub mod measure;
pub mod plot;

pub use experiment::{
    Phase, PhaseReport, Protocol, ReposeConfig, ReposeError, ReposeExperiment, ReposeResult,
    ReposeTracker, RunProgress,
};
pub use measure::{COLUMNS, ROWS, ReposeGrid, ReposeMeasurement};
