//! How the app was launched: the automation flags of scripts and tests, and where its
//! assets are. Read by the capture and recording plugins and the app's builders.

use bevy::prelude::*;
use std::path::PathBuf;

/// Scripted capture and exit.
#[derive(Resource, Debug, Clone, Default)]
pub struct Automation {
    /// Write a screenshot here once `after_frames` frames have been rendered.
    pub screenshot: Option<PathBuf>,
    pub after_frames: u32,
    /// Quit after this many frames (and after the scripted screenshot is written).
    pub exit_after_frames: Option<u32>,
}

/// The folder Bevy reads its assets from: `assets/` in the working directory, else the
/// crate's own.
pub fn asset_dir() -> String {
    let local = PathBuf::from("assets");
    if local.is_dir() {
        "assets".into()
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("assets")
            .display()
            .to_string()
    }
}
