//! The app's messages between plugins (Bevy `Message`s: written with `MessageWriter`,
//! read with `MessageReader`), so that a plugin does not reach into another's resources.

use bevy::prelude::*;

/// A line for the status bar over the 3D view: the outcome of a screenshot or a
/// recording (`ok`: success). Written by the capture and recording plugins, shown by the
/// UI plugin (the last one of a frame wins).
#[derive(Message, Debug, Clone, PartialEq)]
pub struct StatusMessage {
    pub text: String,
    pub ok: bool,
}

impl From<(String, bool)> for StatusMessage {
    fn from((text, ok): (String, bool)) -> Self {
        StatusMessage { text, ok }
    }
}

/// A request to the plots (`app::quantity`): written by the plot's buttons and by
/// scripts, carried out by the plot plugin.
#[derive(Message, Debug, Clone, PartialEq)]
pub enum PlotRequest {
    /// Pin the current run, to overlay it on the next runs.
    Pin,
    /// Show quantity `quantity` (an id of `app::quantity::QUANTITIES`) in stacked plot
    /// `plot` (0 = top; one past the last adds a plot).
    Show { plot: usize, quantity: String },
}
