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
//! [`Presentation::projector`] is the projector profile, independent of presentation
//! mode: egui's light theme (a projected dark panel washes out), the same larger text
//! and lines, and a teaching panel of at most [`Presentation::PANEL_FRACTION`] of the
//! window so that the 3D view keeps at least 60 % of the width (with the lesson text
//! collapsed). Toggled by the Projector button or `impulse-lab gui --projector`.
//!
//! Text is enlarged through the egui style's text sizes rather than `pixels_per_point`,
//! so egui points stay the window's logical pixels and the 3D viewport arithmetic of
//! the UI plugin is unchanged.

use super::sets::UiSystems;
use bevy::prelude::*;
use bevy_egui::input::EguiWantsInput;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

/// Whether presentation mode and the projector profile are on.
#[derive(Resource, Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Presentation {
    pub on: bool,
    /// The projector profile (module doc).
    pub projector: bool,
}

impl Presentation {
    /// Text size factor in presentation mode.
    pub const TEXT_SCALE: f32 = 1.5;
    /// Plot line width factor in presentation mode.
    pub const LINE_SCALE: f32 = 2.0;

    pub fn toggle(&mut self) {
        self.on = !self.on;
    }

    /// Largest share of the window's width the teaching panel takes in presentation
    /// mode or the projector profile: the 3D view keeps the rest (≥ 60 %).
    pub const PANEL_FRACTION: f32 = 0.36;

    /// Whether text and lines are enlarged (presentation mode or projector profile).
    pub fn enlarged(&self) -> bool {
        self.on || self.projector
    }

    /// Current text size factor (1 when neither mode is on).
    pub fn text_scale(&self) -> f32 {
        if self.enlarged() {
            Self::TEXT_SCALE
        } else {
            1.0
        }
    }

    /// A plot line width for the current mode.
    pub fn line_width(&self, base: f32) -> f32 {
        if self.enlarged() {
            base * Self::LINE_SCALE
        } else {
            base
        }
    }

    /// egui's theme: light for the projector, dark otherwise.
    pub fn theme(&self) -> egui::Theme {
        if self.projector {
            egui::Theme::Light
        } else {
            egui::Theme::Dark
        }
    }
}

/// Adds [`Presentation`] and its keys (F11, P). Works headless (no keyboard there).
#[derive(Default)]
pub struct PresentPlugin {
    /// Start in presentation mode (`--present`).
    pub on: bool,
    /// Start with the projector profile (`--projector`).
    pub projector: bool,
}

impl Plugin for PresentPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Presentation {
            on: self.on,
            projector: self.projector,
        })
        .add_systems(Update, presentation_keys);
    }
}

/// Applies [`Presentation`]'s theme and text scale to egui (the app's panels; not
/// added headless). Runs before every panel.
pub struct PresentStylePlugin;

impl Plugin for PresentStylePlugin {
    fn build(&self, app: &mut App) {
        app.add_systems(EguiPrimaryContextPass, apply_style.in_set(UiSystems::Style));
    }
}

/// Set egui's theme and scale its text (and widget) sizes when the mode changes.
fn apply_style(
    mut contexts: EguiContexts,
    present: Res<Presentation>,
    mut applied: Local<Option<(f32, egui::Theme)>>,
) -> Result {
    let ctx = contexts.ctx_mut()?;
    let want = (present.text_scale(), present.theme());
    let (have_scale, have_theme) = applied.unwrap_or((1.0, egui::Theme::Dark));
    if applied.is_none() || have_theme != want.1 {
        ctx.set_theme(want.1);
    }
    if (want.0 - have_scale).abs() > 1e-6 {
        let ratio = want.0 / have_scale;
        ctx.all_styles_mut(|s| {
            for font in s.text_styles.values_mut() {
                font.size *= ratio;
            }
            s.spacing.interact_size *= ratio;
            s.spacing.icon_width *= ratio;
            s.spacing.icon_width_inner *= ratio;
            s.spacing.combo_width *= ratio;
        });
    }
    *applied = Some(want);
    Ok(())
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
