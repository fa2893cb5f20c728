//! The help overlay: every key and mouse binding of the app, opened with F1 or `?`
//! (or the Help button), closed with the same keys or Escape.
//!
//! [`KEYS`] names the Bevy key codes each entry covers; a test reads `src/app` and
//! fails when a `KeyCode` is bound there that the overlay does not list.

use super::sets::UiSystems;
use bevy::prelude::*;
use bevy_egui::{EguiContexts, EguiPrimaryContextPass, egui};

/// Whether the overlay is open.
#[derive(Resource, Debug, Default, Clone, Copy)]
pub struct HelpOverlay {
    pub open: bool,
}

/// A key binding: the keys as shown, the Bevy `KeyCode` names it covers, what it does.
pub struct KeyHelp {
    pub keys: &'static str,
    pub codes: &'static [&'static str],
    pub action: &'static str,
}

/// The keyboard bindings (ignored while a text field has the keyboard).
pub const KEYS: &[KeyHelp] = &[
    KeyHelp {
        keys: "Space",
        codes: &["Space"],
        action: "play / pause",
    },
    KeyHelp {
        keys: ".",
        codes: &["Period"],
        action: "one time step (pauses)",
    },
    KeyHelp {
        keys: "← / →",
        codes: &["ArrowLeft", "ArrowRight"],
        action: "timeline: one stored step back / forward (pauses; Play resumes from there)",
    },
    KeyHelp {
        keys: "R",
        codes: &["KeyR"],
        action: "reset the scene to its initial state (keeps method and parameters)",
    },
    KeyHelp {
        keys: "C",
        codes: &["KeyC"],
        action: "camera back to the scene's home view",
    },
    KeyHelp {
        keys: "F / shift+F",
        codes: &["KeyF", "ShiftLeft", "ShiftRight"],
        action: "frame every body / the selected body (keeps the direction)",
    },
    KeyHelp {
        keys: "T",
        codes: &["KeyT"],
        action: "camera follows the selected body (again, or with nothing selected: stops)",
    },
    KeyHelp {
        keys: "I",
        codes: &["KeyI"],
        action: "pause at the next impact on / off (run controls: \"pause at impact\")",
    },
    KeyHelp {
        keys: "1 2 3 4",
        codes: &["Digit1", "Digit2", "Digit3", "Digit4"],
        action: "look from the front, the side, the top, or at an isometric angle",
    },
    KeyHelp {
        keys: "B",
        codes: &["KeyB"],
        action: "drop a body where the cursor points (Spawn panel: shape, size)",
    },
    KeyHelp {
        keys: "F11 or P",
        codes: &["F11", "KeyP"],
        action: "presentation mode",
    },
    KeyHelp {
        keys: "F9",
        codes: &["F9"],
        action: "start / stop recording an MP4 into recordings/",
    },
    KeyHelp {
        keys: "F8",
        codes: &["F8"],
        action: "render quality: fast (no shadows, no MSAA, low-poly) / full",
    },
    KeyHelp {
        keys: "F12",
        codes: &["F12"],
        action: "screenshot into screenshots/",
    },
    KeyHelp {
        keys: "F1 or ?",
        codes: &[],
        action: "this help (Escape closes it)",
    },
];

/// The mouse bindings: (gesture, what it does).
pub const MOUSE: &[(&str, &str)] = &[
    (
        "left-drag a body",
        "grab it with a spring; release to throw",
    ),
    (
        "left-click a body",
        "select it: its inspector opens over the view",
    ),
    ("left-drag empty space", "orbit the camera"),
    ("left-click empty space", "deselect"),
    ("right- or middle-drag", "pan the camera"),
    ("wheel", "zoom toward the point under the cursor"),
    ("plot: hover", "time and every energy at that step"),
    (
        "plot: drag / wheel",
        "pan / zoom the plot; double-click fits it again",
    ),
    (
        "plot: click a legend entry",
        "hide or show that series (above the plot)",
    ),
];

pub struct HelpPlugin {
    /// Open at startup (`gui --help-overlay`, for screenshots).
    pub open: bool,
}

impl Plugin for HelpPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(HelpOverlay { open: self.open })
            .add_systems(
                EguiPrimaryContextPass,
                help_overlay.in_set(UiSystems::Overlays),
            );
    }
}

fn help_overlay(mut contexts: EguiContexts, mut help: ResMut<HelpOverlay>) -> Result {
    let ctx = contexts.ctx_mut()?.clone();
    if !ctx.egui_wants_keyboard_input() {
        let (toggle, escape) = ctx.input(|i| {
            (
                i.key_pressed(egui::Key::F1) || i.key_pressed(egui::Key::Questionmark),
                i.key_pressed(egui::Key::Escape),
            )
        });
        if toggle {
            help.open = !help.open;
        } else if escape {
            help.open = false;
        }
    }
    if !help.open {
        return Ok(());
    }
    let mut open = true;
    egui::Window::new("Keys and mouse")
        .open(&mut open)
        .collapsible(false)
        .resizable(false)
        .anchor(egui::Align2::CENTER_CENTER, egui::Vec2::ZERO)
        .show(&ctx, |ui| {
            egui::Grid::new("help_keys")
                .num_columns(2)
                .striped(true)
                .spacing([16.0, 4.0])
                .show(ui, |ui| {
                    ui.strong("key");
                    ui.strong("does");
                    ui.end_row();
                    for k in KEYS {
                        ui.monospace(k.keys);
                        ui.label(k.action);
                        ui.end_row();
                    }
                });
            ui.add_space(8.0);
            egui::Grid::new("help_mouse")
                .num_columns(2)
                .striped(true)
                .spacing([16.0, 4.0])
                .show(ui, |ui| {
                    ui.strong("mouse");
                    ui.strong("does");
                    ui.end_row();
                    for (gesture, action) in MOUSE {
                        ui.label(*gesture);
                        ui.label(*action);
                        ui.end_row();
                    }
                });
            ui.add_space(6.0);
            ui.small("Every slider and field has a tooltip: hover it for meaning, unit and paper.");
        });
    help.open &= open;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `KeyCode::X` that a module of the app binds is in the overlay.
    #[test]
    fn overlay_lists_every_key_bound_in_the_app() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
        let mut bound = std::collections::BTreeSet::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "rs") || path.ends_with("help.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, _) in text.match_indices("KeyCode::") {
                let name: String = text[i + "KeyCode::".len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric())
                    .collect();
                bound.insert((
                    name,
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                ));
            }
        }
        assert!(bound.len() >= 9, "found only {bound:?}");
        let listed: Vec<&str> = KEYS.iter().flat_map(|k| k.codes.iter().copied()).collect();
        let missing: Vec<_> = bound
            .iter()
            .filter(|(name, _)| !listed.contains(&name.as_str()))
            .collect();
        assert!(
            missing.is_empty(),
            "keys bound but not in the help overlay: {missing:?}"
        );
    }
}
