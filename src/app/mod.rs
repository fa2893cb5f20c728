//! The desktop app: Bevy plugins around the physics core (feature `app`).
//!
//! One plugin per area, each in its own module with its own resources:
//! - [`simulation::LabSimulationPlugin`]: steps the core's [`crate::World`] on a physics
//!   thread at the speed the machine allows, independent of the frame rate, and
//!   publishes its state once per frame as the [`simulation::Simulation`] resource (the
//!   clock is described in that module); [`timeline`] keeps the run's past states (scrub
//!   bar, ← → keys, save the state as a scene);
//! - [`render::LabRenderPlugin`]: meshes for every shape and container, colouring,
//!   lights, debug drawing of contacts, normals and impulses;
//! - [`interaction::LabInteractionPlugin`]: orbit camera, picking, dragging and throwing,
//!   spawning, keyboard shortcuts;
//! - [`ui::LabUiPlugin`]: the egui panels (run control, solver, scene, energy plot,
//!   inspector);
//! - [`capture::LabCapturePlugin`]: screenshots and the automation flags;
//! - [`crash`]: on a panic, the state shown last is saved as a scene file;
//! - [`repose::LabReposePlugin`]: the angle-of-repose experiment's fitted lines;
//! - [`record::LabRecordPlugin`]: recording an MP4 of the view (F9); the same module
//!   records headless for `impulse-lab record`;
//! - teaching: [`lessons::LessonsPlugin`] (open a lesson, run its check),
//!   [`present::PresentPlugin`] (presentation mode), [`microscope::MicroscopePlugin`]
//!   (one impact iteration by iteration), [`compare::ComparePlugin`] (2-3 solvers in
//!   lockstep), and their panel [`teach::TeachUiPlugin`] and drawing
//!   ([`microscope::MicroscopeRenderPlugin`], [`compare::CompareRenderPlugin`]).
//!
//! What the plugins share lives in small modules that import none of them: [`sets`]
//! (the public system sets every plugin orders its systems against), [`messages`],
//! [`sim_state`] (the [`Simulation`] resource and run control), [`view`] (coordinates,
//! selection, colouring, cameras) and [`launch`]. The modules form layers without import
//! cycles (docs/architecture.md, checked by `tests/app_architecture.rs`).
//!
//! The simulation plugin needs no window or renderer: the headless tests run it under
//! `MinimalPlugins` (see [`headless_app`]).

pub mod capture;
pub mod colorbar;
pub mod compare;
pub mod crash;
pub mod help;
pub mod interaction;
pub mod launch;
pub mod lessons;
pub mod messages;
pub mod microscope;
pub mod plot;
pub mod present;
pub mod quantity;
pub mod record;
pub mod render;
pub mod repose;
pub mod sets;
pub mod sim_state;
pub mod simulation;
pub mod teach;
pub mod timeline;
pub mod ui;
pub mod view;

use crate::dynamics::solver::SolverKind;
use bevy::prelude::*;
use bevy::window::WindowResolution;
use launch::asset_dir;
use simulation::{LabSimulationPlugin, Simulation};
use std::path::PathBuf;

/// What `impulse-lab gui` was asked to do.
#[derive(Clone, Debug)]
pub struct AppOptions {
    /// Scene file, or the name of a bundled scene.
    pub scene: String,
    /// Run with this method instead of the scene's.
    pub solver: Option<SolverKind>,
    /// Start paused.
    pub paused: bool,
    /// Window size in logical pixels.
    pub size: (u32, u32),
    pub automation: capture::Automation,
    /// Record an MP4 of the 3D view into this file from the start (stops at exit).
    pub record: Option<PathBuf>,
    /// Start the angle-of-repose experiment at once under this protocol.
    pub repose: Option<crate::repose::Protocol>,
    /// Open this lesson (name or path) at startup.
    pub lesson: Option<String>,
    /// Start in presentation mode.
    pub present: bool,
    /// Legibility options: projector profile, colour mode and range, labels, help.
    pub view: ViewOptions,
    /// Start in compare mode with these solvers (2-3).
    pub compare: Vec<SolverKind>,
    /// Compare side by side (one viewport per run) rather than overlaid.
    pub split: bool,
    /// Catch the next impact with the collision microscope at startup.
    pub microscope: bool,
    /// Take this many steps at startup (after a lesson or comparison is set up; with
    /// `paused`, the run then stays paused).
    pub steps: Option<u64>,
    /// Render quality; `None` chooses from the adapter (fast on a software one).
    pub quality: Option<render::RenderQuality>,
    /// Render scale of the 3D view (per axis); `None`: the quality's default.
    pub render_scale: Option<f32>,
    /// What `record` records: size, frame rate, duration, caption.
    pub recording: record::AppRecordSettings,
}

impl Default for AppOptions {
    fn default() -> Self {
        AppOptions {
            scene: "pour_mixed".into(),
            solver: None,
            paused: false,
            size: (1280, 800),
            automation: capture::Automation::default(),
            record: None,
            repose: None,
            lesson: None,
            present: false,
            view: ViewOptions::default(),
            compare: Vec::new(),
            split: false,
            microscope: false,
            steps: None,
            quality: None,
            render_scale: None,
            recording: record::AppRecordSettings::default(),
        }
    }
}

/// How the app starts looking (`gui --projector`, `--color-by`, `--color-range`,
/// `--labels`, `--help-overlay`).
#[derive(Clone, Debug, Default)]
pub struct ViewOptions {
    /// The projector profile (light theme, larger text and lines).
    pub projector: bool,
    /// Colour the bodies by this.
    pub color_mode: render::ColorMode,
    /// The fixed colour range of that mode (m/s or J); default: from the scene.
    pub color_range: Option<[f64; 2]>,
    /// Draw each body's index.
    pub labels: bool,
    /// Open the help overlay.
    pub help: bool,
    /// Frame every body once the startup steps are done (`gui --frame-all`).
    pub frame_all: bool,
}

/// Load the scene and build the windowed app. A scene that does not load is an error
/// here, before any window opens.
pub fn build_app(options: &AppOptions) -> Result<App, String> {
    let mut sim = Simulation::load(&options.scene, options.solver)?;
    if let Some(protocol) = options.repose {
        let mut config = crate::repose::ReposeConfig {
            protocol,
            ..crate::repose::ReposeConfig::for_scene(&sim.scene)
        };
        config.fit_cap_to_drum(&sim.world);
        sim.start_repose(config)
            .map_err(|e| format!("{}: {e}", options.scene))?;
    }
    let title = format!("Impulse Lab — {}", sim.scene.name);
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: Some(Window {
                    title,
                    resolution: WindowResolution::new(options.size.0, options.size.1),
                    ..default()
                }),
                ..default()
            })
            // Our own scene files are read with std::fs; Bevy's asset folder is `assets/`.
            .set(AssetPlugin {
                file_path: asset_dir(),
                ..default()
            }),
    )
    .insert_resource(sim)
    .add_plugins((
        LabSimulationPlugin {
            paused: options.paused,
        },
        render::LabRenderPlugin {
            quality: options.quality,
            scale: options.render_scale,
        },
        repose::LabReposePlugin,
        interaction::LabInteractionPlugin,
        ui::LabUiPlugin,
        capture::LabCapturePlugin {
            automation: options.automation.clone(),
        },
        record::LabRecordPlugin {
            record_at_start: options.record.clone(),
            settings: options.recording.clone(),
        },
        timeline::TimelinePlugin,
    ))
    .add_plugins(teach_plugins(options))
    .add_plugins((
        teach::TeachUiPlugin,
        microscope::MicroscopeRenderPlugin,
        compare::CompareRenderPlugin,
        render::RenderStatsPlugin,
    ))
    .add_plugins(legible_plugins(&options.view));
    if let Some(n) = options.steps {
        app.insert_resource(simulation::StartupSteps(n));
    }
    if options.view.frame_all {
        app.insert_resource(interaction::FrameAllAtStep(options.steps.unwrap_or(0)));
    }
    Ok(app)
}

/// Run the windowed app until its window closes.
pub fn run(options: &AppOptions) -> Result<(), String> {
    let mut app = build_app(options)?;
    // From here on a panic saves the state shown last (`crash`).
    crash::install_hook();
    match app.run() {
        AppExit::Success => Ok(()),
        AppExit::Error(code) => Err(format!("the app exited with code {code}")),
    }
}

/// The simulation plugin alone under `MinimalPlugins`, paused, for headless tests and
/// scripts: drive it with [`simulation::SimControl`] and `app.update()`.
pub fn headless_app(sim: Simulation) -> App {
    let mut app = App::new();
    app.add_plugins(MinimalPlugins)
        .insert_resource(sim)
        .add_plugins(LabSimulationPlugin { paused: true });
    app
}

/// The overlays of a legible view: egui theme and text scale, help overlay, colour bar
/// and body labels, with the start-up choices of `view`.
fn legible_plugins(
    view: &ViewOptions,
) -> (
    present::PresentStylePlugin,
    help::HelpPlugin,
    colorbar::ColorBarPlugin,
    impl Plugin,
) {
    let view = view.clone();
    (
        present::PresentStylePlugin,
        help::HelpPlugin { open: view.help },
        colorbar::ColorBarPlugin,
        move |app: &mut App| {
            app.world_mut()
                .resource_mut::<render::DisplaySettings>()
                .color_mode = view.color_mode;
            let mut scale = app.world_mut().resource_mut::<colorbar::ColorScale>();
            scale.labels = view.labels;
            match (view.color_mode, view.color_range) {
                (render::ColorMode::BySpeed, Some(r)) => scale.speed = Some(r),
                // A logarithmic scale needs a lower end above 0: four decades then.
                (render::ColorMode::ByKineticEnergy, Some([lo, hi])) => {
                    scale.energy = Some([if lo > 0.0 { lo } else { hi * 1e-4 }, hi])
                }
                _ => {}
            }
        },
    )
}

/// The teaching plugins without their panel and drawing (headless tests add these to
/// [`headless_app`]).
pub fn teach_plugins(
    options: &AppOptions,
) -> (
    lessons::LessonsPlugin,
    present::PresentPlugin,
    microscope::MicroscopePlugin,
    compare::ComparePlugin,
) {
    (
        lessons::LessonsPlugin {
            open: options.lesson.clone(),
        },
        present::PresentPlugin {
            on: options.present,
            projector: options.view.projector,
        },
        microscope::MicroscopePlugin {
            catch_at_start: options.microscope,
        },
        compare::ComparePlugin {
            solvers: options.compare.clone(),
            split: options.split,
        },
    )
}
