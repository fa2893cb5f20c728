//! Presentation mode: the app for a projector in a lecture.
//!
//! [`Presentation::on`] hides the developer panels (scene, solver parameters, display,
//! spawn and capture, the inspector, the stats line), draws every egui text
//! [`Presentation::TEXT_SCALE`] times larger and the plot lines
//! [`Presentation::LINE_SCALE`] times wider; the run controls (play/pause, step,
//! reset, time scale), the energy plot and the teaching panel (lesson text, microscope,
//! compare) stay. Toggled by the button in the teaching panel, F11 or P, or
//! `impulse-lab gui --present`.
//!
//! Text is enlarged through the egui style's text sizes rather than `pixels_per_point`,
//! so egui points stay the window's logical pixels and the 3D viewport arithmetic of
//! the UI plugin is unchanged.

use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;

/// Whether presentation mode is on.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Presentation {
    pub on: bool,
}

impl Presentation {
    /// Text size factor in presentation mode.
    pub const TEXT_SCALE: f32 = 1.5;
    /// Plot line width factor in presentation mode.
    pub const LINE_SCALE: f32 = 2.0;

    pub fn toggle(&mut self) {
        self.on = !self.on;
    }

    /// Current text size factor (1 when off).
    pub fn text_scale(&self) -> f32 {
        if self.on { Self::TEXT_SCALE } else { 1.0 }
    }

    /// A plot line width for the current mode.
    pub fn line_width(&self, base: f32) -> f32 {
        if self.on {
            base * Self::LINE_SCALE
        } else {
            base
        }
    }
}

/// Adds [`Presentation`] and its keys (F11, P). Works headless (no keyboard there).
#[derive(Default)]
pub struct PresentPlugin {
    /// Start in presentation mode (`--present`).
    pub on: bool,
}

impl Plugin for PresentPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Presentation { on: self.on })
            .add_systems(Update, presentation_keys);
    }
}

fn presentation_keys(
    keys: Option<Res<ButtonInput<KeyCode>>>,
    wants: Option<Res<EguiWantsInput>>,
    mut present: ResMut<Presentation>,
) {
    let Some(keys) = keys else {
        return;
    };
    if wants.is_some_and(|w| w.wants_keyboard_input()) {
        return;
    }
    if keys.just_pressed(KeyCode::F11) || keys.just_pressed(KeyCode::KeyP) {
        present.toggle();
    }
}
