//! The view's shared vocabulary: the boundary between the core's f64 coordinates and
//! Bevy's f32 ones, the selected body, how bodies are coloured, the cameras and where
//! the panels left the 3D view.
//!
//! Read by the render, interaction, colour-bar, compare, recording and UI plugins; it
//! imports nothing from them. The core's world is z-up in metres and so is the scene:
//! positions pass to Bevy unchanged, converted from f64 to f32 at this boundary only.

use crate::math::Vec3 as DVec3;
use bevy::prelude::*;
use bevy_egui::egui;

// Coordinates.

/// f64 core vector → f32 render vector.
pub fn to_render(v: &DVec3) -> Vec3 {
    Vec3::new(v.x as f32, v.y as f32, v.z as f32)
}

/// f32 render vector → f64 core vector.
pub fn to_core(v: Vec3) -> DVec3 {
    DVec3::new(v.x.into(), v.y.into(), v.z.into())
}

// The selection.

/// The selected body (shown in the inspector and outlined in the view).
#[derive(Resource, Debug, Default)]
pub struct Selection {
    pub body: Option<usize>,
}

// Colouring.

/// How bodies are coloured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ColorMode {
    /// A colour per shape kind, varied per body.
    #[default]
    ByBody,
    /// Speed |v| of the centre of mass, on a blue → yellow ramp.
    BySpeed,
    /// Kinetic energy ½m|v|² + ½ωᵀIω, on a logarithmic ramp over four decades.
    ByKineticEnergy,
}

impl ColorMode {
    pub const ALL: [ColorMode; 3] = [
        ColorMode::ByBody,
        ColorMode::BySpeed,
        ColorMode::ByKineticEnergy,
    ];
    pub fn label(self) -> &'static str {
        match self {
            ColorMode::ByBody => "body",
            ColorMode::BySpeed => "speed",
            ColorMode::ByKineticEnergy => "kinetic energy",
        }
    }
}

/// Display options (set from the UI).
#[derive(Resource, Debug, Clone)]
pub struct DisplaySettings {
    pub color_mode: ColorMode,
    /// Draw contact points.
    pub contact_points: bool,
    /// Draw contact normals.
    pub contact_normals: bool,
    /// Draw the impulse of each contact in the last step (records the solver trace every
    /// step while on, which slows large scenes).
    pub contact_impulses: bool,
    /// Draw the edges of containers.
    pub container_edges: bool,
    /// Upper end of the colour ramp (m/s for speed, J for kinetic energy); follows the
    /// largest value seen, decaying slowly.
    pub color_scale: f64,
}

impl Default for DisplaySettings {
    fn default() -> Self {
        DisplaySettings {
            color_mode: ColorMode::ByBody,
            contact_points: false,
            contact_normals: false,
            contact_impulses: false,
            container_edges: true,
            color_scale: 0.0,
        }
    }
}

/// A perceptually ordered ramp (dark blue → teal → yellow, after viridis) for x in [0, 1].
pub fn ramp(x: f32) -> Color {
    const STOPS: [[f32; 3]; 5] = [
        [0.267, 0.005, 0.329],
        [0.230, 0.322, 0.546],
        [0.128, 0.567, 0.551],
        [0.369, 0.789, 0.383],
        [0.993, 0.906, 0.144],
    ];
    let x = x.clamp(0.0, 1.0) * 4.0;
    let i = (x.floor() as usize).min(3);
    let f = x - i as f32;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    Color::srgb(
        a[0] + f * (b[0] - a[0]),
        a[1] + f * (b[1] - a[1]),
        a[2] + f * (b[2] - a[2]),
    )
}

// Cameras and the 3D view.

/// Where the camera looks from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CameraPreset {
    /// The app's framing of the scene.
    #[default]
    Default,
    /// From −y, level, looking along +y.
    Front,
    /// From +x, level.
    Side,
    /// From above.
    Top,
    /// Isometric: azimuth 45° between front and side, elevation 35.26°.
    Iso,
}

impl CameraPreset {
    pub const ALL: [CameraPreset; 5] = [
        CameraPreset::Default,
        CameraPreset::Front,
        CameraPreset::Side,
        CameraPreset::Top,
        CameraPreset::Iso,
    ];

    pub fn name(self) -> &'static str {
        match self {
            CameraPreset::Default => "default",
            CameraPreset::Front => "front",
            CameraPreset::Side => "side",
            CameraPreset::Top => "top",
            CameraPreset::Iso => "iso",
        }
    }

    /// The preset's (yaw, pitch) in rad; `None` for the app's own framing.
    pub fn direction(self) -> Option<(f32, f32)> {
        match self {
            CameraPreset::Default => None,
            CameraPreset::Front => Some((-std::f32::consts::FRAC_PI_2, 0.12)),
            CameraPreset::Side => Some((0.0, 0.12)),
            // Not exactly vertical: the view keeps +y up on screen.
            CameraPreset::Top => Some((-std::f32::consts::FRAC_PI_2, 1.5607)),
            CameraPreset::Iso => Some((-std::f32::consts::FRAC_PI_4, (0.5f32).sqrt().atan())),
        }
    }
}

impl std::str::FromStr for CameraPreset {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                format!("unknown camera preset '{s}' (expected default, front, side, top or iso)")
            })
    }
}

impl std::fmt::Display for CameraPreset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The camera that renders the 3D view off-screen for a recording, at the recording's
/// size; it follows the app's orbit camera.
#[derive(Component, Debug)]
pub struct RecordCamera;

/// While the 3D view is recorded: the image the [`RecordCamera`] draws, which the window
/// shows as its 3D view (fitted, letterboxed) instead of drawing the scene a second time.
/// The view on screen is then the recording's picture, drawn as `impulse-lab record`
/// draws it.
#[derive(Resource, Debug, Default, Clone)]
pub struct RecordingView(pub Option<Handle<Image>>);

/// The camera of run `0` (≥ 1) in side-by-side view.
#[derive(Component, Debug, Clone, Copy)]
pub struct CompareCamera(pub usize);

/// The app's own 3D camera: not egui's, not a compare camera, not the off-screen one.
pub type MainViewCamera = (
    With<Camera3d>,
    Without<bevy_egui::PrimaryEguiContext>,
    Without<CompareCamera>,
    Without<RecordCamera>,
    Without<ScaledViewCamera>,
);

/// The camera that draws the 3D view off-screen at the render scale (`render.rs`'s
/// module doc); it sees what the app's orbit camera sees.
#[derive(Component, Debug)]
pub struct ScaledViewCamera;

/// The rectangle of the 3D view in egui points (window logical pixels), as the panels
/// left it this frame: overlays (inspector, status, colour bar, labels) are drawn in it.
#[derive(Resource, Debug, Clone, Copy)]
pub struct ViewRect(pub egui::Rect);

impl Default for ViewRect {
    fn default() -> Self {
        ViewRect(egui::Rect::NOTHING)
    }
}

/// Named screen regions of the panels in egui points (`"run_control"`, `"controls"`,
/// `"energy"`, `"plot"`, `"timeline"`, `"timeline_bar"`, `"teach"`, `"view"`), kept in
/// egui's memory as drawn last, so that scripted input (`gui --script drag=timeline`)
/// aims at a widget as a user's mouse would.
pub fn mark_region(ctx: &egui::Context, name: &'static str, rect: egui::Rect) {
    ctx.data_mut(|d| d.insert_temp(region_id(name), rect));
}

/// The rectangle [`mark_region`] last stored under `name`, if it was drawn.
pub fn region(ctx: &egui::Context, name: &str) -> Option<egui::Rect> {
    ctx.data(|d| d.get_temp(region_id(name)))
}

fn region_id(name: &str) -> egui::Id {
    egui::Id::new(("impulse_lab_region", name))
}
