//! UI plugin: the egui panels around the 3D view.
//!
//! - top bar: the recording indicator (red "● REC 00:12"), run control (play/pause,
//!   step, step N, reset, time scale) and the stats line (time, bodies, contacts, frame rate, real-time factor, step time by phase);
//! - left panel: scene (bundled scenes, open a file, load errors), solver (method and
//!   its parameters, each with a tooltip giving meaning, unit and paper reference),
//!   containers (remove or restore walls), the angle-of-repose experiment (scenes with
//!   a divider), display, spawning, capture (screenshot, recording an MP4);
//! - right panel: the inspector of the selected body;
//! - bottom panel: the energy plot from the core's ledger, with CSV export.
//!
//! The 3D camera renders only into the rectangle the panels leave free.

use super::interaction::{SpawnSettings, SpawnShape};
use super::messages::StatusMessage;
use super::messages::{CaptureRequest, SimCommand, ViewRequest};
use super::present::Presentation;
use super::record::{APP_FRAME_RATES, Recorder};
use super::sets::UiSystems;
use super::simulation::{EnergyHistory, SceneWatcher, SimControl, Simulation, WallRef};
use super::teach::TeachLayout;
use super::view::{ColorMode, DisplaySettings, MainViewCamera, Selection, ViewRect, mark_region};
use crate::container::{BOX_WALL_NAMES, Container};
use crate::dynamics::solver::param_spec::ParamSpec;
use crate::dynamics::solver::{ContactFallback, Param, SolverKind, SolverParams};
use crate::energy::EnergySample;
use crate::scene;
use bevy::camera::{CameraOutputMode, Viewport, visibility::RenderLayers};
use bevy::prelude::*;
use bevy::render::render_resource::BlendState;
use bevy::window::PrimaryWindow;
use bevy_egui::{
    EguiContexts, EguiGlobalSettings, EguiPlugin, EguiPrimaryContextPass, PrimaryEguiContext, egui,
};
use std::path::PathBuf;

/// State of the panels that is not simulation state.
#[derive(Resource, Debug)]
pub struct UiState {
    /// "Step N" count.
    pub step_n: u64,
    /// Path typed into "open scene file".
    pub open_path: String,
    /// Energy plot time window (s of simulated time; 0 = everything).
    pub plot_window: f64,
    /// Which series the ledger plot shows (same order as [`super::plot::SERIES`]).
    pub series: [bool; super::plot::SERIES.len()],
    /// Where "export CSV" writes.
    pub export_path: String,
    /// Outcome of the last export, screenshot or open, for the status line.
    pub message: Option<(String, bool)>,
    /// The bundled scenes, read when the picker first opens.
    scene_catalog: Option<Vec<SceneEntry>>,
    /// The message on show and when it appeared (s of real time): it fades after
    /// [`MESSAGE_SECONDS`].
    shown: Option<(String, f64)>,
    /// Smoothed frames per second.
    pub fps: f64,
}

impl Default for UiState {
    fn default() -> Self {
        UiState {
            step_n: 60,
            open_path: String::new(),
            plot_window: 10.0,
            series: [true; super::plot::SERIES.len()],
            export_path: "out/energy.csv".into(),
            message: None,
            shown: None,
            scene_catalog: None,
            fps: 0.0,
        }
    }
}

/// Seconds a status message stays over the view.
pub const MESSAGE_SECONDS: f64 = 8.0;

pub struct LabUiPlugin;

impl Plugin for LabUiPlugin {
    fn build(&self, app: &mut App) {
        app.add_plugins(EguiPlugin::default())
            .init_resource::<UiState>()
            .init_resource::<ViewRect>()
            .add_plugins(super::plot::PlotMarkersPlugin)
            .add_plugins(super::quantity::PlotQuantityPlugin)
            .add_systems(Startup, spawn_ui_camera)
            .add_message::<StatusMessage>()
            .add_systems(
                EguiPrimaryContextPass,
                (show_status_messages, panels)
                    .chain()
                    .in_set(UiSystems::Panels),
            );
        UiSystems::configure(app, EguiPrimaryContextPass);
    }
}

/// The status lines other plugins sent since the last frame: the last one is shown.
fn show_status_messages(mut messages: MessageReader<StatusMessage>, mut state: ResMut<UiState>) {
    if let Some(m) = messages.read().last() {
        state.message = Some((m.text.clone(), m.ok));
    }
}

/// egui draws with its own camera on top of the 3D view, which renders only into the
/// part of the window the panels leave free (as in bevy_egui's side-panel example).
fn spawn_ui_camera(mut commands: Commands, mut settings: ResMut<EguiGlobalSettings>) {
    settings.auto_create_primary_context = false;
    commands.spawn((
        PrimaryEguiContext,
        Camera2d,
        RenderLayers::none(),
        Camera {
            order: 1,
            output_mode: CameraOutputMode::Write {
                blend_state: Some(BlendState::ALPHA_BLENDING),
                clear_color: ClearColorConfig::None,
            },
            clear_color: ClearColorConfig::Custom(Color::NONE),
            ..default()
        },
    ));
}

/// Everything the panels read or change.
#[derive(bevy::ecs::system::SystemParam)]
pub struct PanelParams<'w> {
    sim: Res<'w, Simulation>,
    /// Every change to the world goes to the physics thread as a command.
    commands: MessageWriter<'w, SimCommand>,
    view_requests: MessageWriter<'w, ViewRequest>,
    capture: MessageWriter<'w, CaptureRequest>,
    control: ResMut<'w, SimControl>,
    history: ResMut<'w, EnergyHistory>,
    watcher: ResMut<'w, SceneWatcher>,
    display: ResMut<'w, DisplaySettings>,
    selection: ResMut<'w, Selection>,
    spawn: ResMut<'w, SpawnSettings>,
    state: ResMut<'w, UiState>,
    time: Res<'w, Time<Real>>,
    recorder: ResMut<'w, Recorder>,
    /// Presentation mode hides the developer panels (see `present`).
    present: Res<'w, Presentation>,
    /// The teaching panel's width, taken from the right before these panels.
    teach: Res<'w, TeachLayout>,
    /// Where the method, a parameter or the scene changed (drawn in the energy plot).
    markers: Res<'w, super::plot::PlotMarkers>,
    /// The colour range of colour by speed or energy, and body labels.
    color_scale: ResMut<'w, super::colorbar::ColorScale>,
    /// What the stacked plots show, and the runs kept to overlay on them.
    plots: ResMut<'w, super::quantity::Plots>,
}

pub(crate) fn panels(
    mut contexts: EguiContexts,
    mut p: PanelParams,
    mut timeline: ResMut<super::timeline::TimelineView>,
    mut camera: Query<&mut Camera, MainViewCamera>,
    window: Single<&Window, With<PrimaryWindow>>,
    mut view: ResMut<ViewRect>,
) -> Result {
    let dt = p.time.delta_secs_f64();
    if dt > 0.0 {
        let alpha = (dt / 0.5).min(1.0);
        p.state.fps += alpha * (1.0 / dt - p.state.fps);
    }
    let ctx = contexts.ctx_mut()?.clone();
    let mut root = egui::Ui::new(
        ctx.clone(),
        "impulse-lab-root".into(),
        egui::UiBuilder::new()
            .layer_id(egui::LayerId::background())
            .max_rect({
                let mut r = ctx.viewport_rect();
                r.max.x -= p.teach.right;
                r
            }),
    );
    let top = egui::Panel::top("run_control")
        .show(&mut root, |ui| run_control(ui, &mut p))
        .response
        .rect;
    mark_region(&ctx, "run_control", top);
    let top = top.height();
    let left = if p.present.on {
        0.0
    } else {
        let rect = egui::Panel::left("controls")
            .default_size(300.0)
            .resizable(true)
            .show(&mut root, |ui| {
                egui::ScrollArea::vertical().show(ui, |ui| left_panel(ui, &mut p));
            })
            .response
            .rect;
        mark_region(&ctx, "controls", rect);
        rect.width()
    };
    // Each stacked plot adds to the panel's height (a panel of its own id per count, so
    // that its default size applies when a plot is added or removed).
    let stacked = p.plots.layout.len().clamp(1, super::quantity::MAX_PLOTS);
    let bottom = egui::Panel::bottom(match (p.present.enlarged(), stacked) {
        (true, 1) => "energy_large".to_string(),
        (false, 1) => "energy".to_string(),
        (true, n) => format!("energy_large_{n}"),
        (false, n) => format!("energy_{n}"),
    })
    .default_size(if p.present.enlarged() { 280.0 } else { 230.0 } + 130.0 * (stacked - 1) as f32)
    .resizable(true)
    .show(&mut root, |ui| energy_plot(ui, &mut p, &timeline))
    .response
    .rect;
    let bar = egui::Panel::bottom("timeline")
        .show(&mut root, |ui| {
            let mut commands = Vec::new();
            super::timeline::scrub_bar(ui, &mut timeline, &mut commands, p.present.on);
            p.commands.write_batch(commands);
        })
        .response
        .rect;
    mark_region(&ctx, "energy", bottom);
    mark_region(&ctx, "timeline_bar", bar);
    let bottom = bottom.height() + bar.height();
    let right = p.teach.right;
    // Overlays on the 3D view: they never resize it.
    view.0 = egui::Rect::from_min_max(
        egui::pos2(left, top),
        egui::pos2(
            ctx.viewport_rect().right() - right,
            ctx.viewport_rect().bottom() - bottom,
        ),
    );
    mark_region(&ctx, "view", view.0);
    if p.selection.body.is_some() && !p.present.on {
        inspector_overlay(&ctx, view.0, &mut p);
    }
    status_overlay(&ctx, view.0, &mut p);

    // The 3D view gets what is left (physical pixels).
    let scale = window.scale_factor();
    let (w, h) = (window.physical_width(), window.physical_height());
    let pos = UVec2::new((left * scale) as u32, (top * scale) as u32);
    let used = UVec2::new(
        ((left + right) * scale) as u32,
        ((top + bottom) * scale) as u32,
    );
    let size = UVec2::new(w, h).saturating_sub(used).max(UVec2::ONE);
    if let Ok(mut cam) = camera.single_mut()
        && pos.x + size.x <= w
        && pos.y + size.y <= h
    {
        cam.viewport = Some(Viewport {
            physical_position: pos,
            physical_size: size,
            ..default()
        });
    }
    Ok(())
}

/// The REC indicator's progress: frames done (of the total when the duration is set),
/// the rate since frame 0 and, with a total, the time left at that rate.
fn rec_progress(done: u64, total: Option<u64>, rate: Option<f64>) -> String {
    let Some(rate) = rate else {
        return " · warming up".into();
    };
    match total {
        Some(n) => {
            let left = n.saturating_sub(done) as f64 / rate.max(1e-9);
            format!(
                " · {done}/{n} frames · {rate:.1} frames/s · {} left",
                super::timeline::duration(left)
            )
        }
        None => format!(" · {done} frames · {rate:.1} frames/s"),
    }
}

fn run_control(ui: &mut egui::Ui, p: &mut PanelParams) {
    ui.horizontal_wrapped(|ui| {
        ui.strong("Impulse Lab");
        ui.separator();
        if p.recorder.is_recording() {
            let t = p.recorder.recorded_time();
            let label = format!(
                "REC {:02}:{:02}{}{}",
                (t / 60.0) as u64,
                (t % 60.0) as u64,
                p.recorder
                    .frames()
                    .map_or(String::new(), |(done, total, rate)| {
                        rec_progress(done, total, rate)
                    }),
                if p.control.paused { " (paused)" } else { "" }
            );
            let red = egui::Color32::from_rgb(220, 30, 30);
            // A painted dot: the default fonts have no "●".
            let size = ui.text_style_height(&egui::TextStyle::Body);
            let (rect, _) = ui.allocate_exact_size(egui::vec2(size, size), egui::Sense::hover());
            ui.painter().circle_filled(rect.center(), 0.35 * size, red);
            ui.label(egui::RichText::new(label).strong().color(red))
                .on_hover_text(format!(
                    "Recording to {} (F9 stops); the video plays at simulated real speed",
                    p.recorder
                        .current_path()
                        .map_or(String::new(), |p| p.display().to_string())
                ));
            ui.separator();
        }
        let label = if p.control.paused {
            "▶ Play"
        } else {
            "⏸ Pause"
        };
        if ui
            .button(label)
            .on_hover_text("Play or pause (space)")
            .clicked()
        {
            p.control.paused = !p.control.paused;
        }
        if ui
            .button("Step")
            .on_hover_text("One time step (.)")
            .clicked()
        {
            p.control.paused = true;
            p.commands.write(SimCommand::Step(1));
        }
        // Presenting: fewer controls, so that the time scale fits beside the side panel.
        if !p.present.on {
            ui.add(egui::DragValue::new(&mut p.state.step_n).range(1..=100_000));
            if ui
                .button("Step N")
                .on_hover_text("Take N time steps, then pause")
                .clicked()
            {
                p.control.paused = true;
                p.commands.write(SimCommand::Step(p.state.step_n));
            }
        }
        if ui
            .button("⟲ Reset")
            .on_hover_text(
                "Back to the scene's initial state, keeping the solver and parameters (r)",
            )
            .clicked()
        {
            p.commands.write(SimCommand::Reset);
        }
        ui.separator();
        ui.add(
            egui::Slider::new(&mut p.control.time_scale, 0.01..=4.0)
                .logarithmic(true)
                .text("time scale"),
        )
        .on_hover_text(
            "Simulated seconds per real second: 1 is real time, 0.01 is 100× slow motion",
        );
        impact_toggle(ui, &mut p.control, p.sim.world.step_index);
    });
    ui.horizontal_wrapped(|ui| {
        if p.present.on {
            let w = &p.sim.world;
            ui.monospace(format!("t = {:.3} s | step {}", w.time, w.step_index));
            return;
        }
        let w = &p.sim.world;
        let t = &w.last_times;
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let stats = &p.control.stats;
        ui.monospace(format!(
            "t = {:.3} s | step {} | {} bodies ({} asleep) | {} contacts | {:.1} FPS | render {:.1} ms, physics {:.1} ms per frame | {}{} | {} steps/frame | detect {:.2} ms, solve {:.2} ms, contact pass {:.2} ms, integrate {:.2} ms",
            w.time,
            w.step_index,
            w.bodies.len(),
            w.sleeping_bodies(),
            w.contacts.len(),
            p.state.fps,
            ms(stats.render_time()),
            ms(stats.physics_last_frame),
            if p.control.paused {
                "paused".to_string()
            } else {
                format!("{} real time", super::sim_state::rate_text(stats.real_time_factor))
            },
            if stats.over_budget { " (solver slower than requested)" } else { "" },
            stats.steps_last_frame,
            ms(t.broad_phase + t.narrow_phase),
            ms(t.solve),
            ms(t.contact_pass),
            ms(t.integrate),
        ));
    });
}

/// The "pause at impact" toggle and, while paused there, which impact it was.
fn impact_toggle(ui: &mut egui::Ui, control: &mut SimControl, step_index: u64) {
    ui.checkbox(&mut control.pause_at_impact, "pause at impact")
        .on_hover_text(
            "Pause the run at the next impact: a step in which a contact changes a body's \
             velocity sharply (not resting, sliding or rolling contact)",
        );
    if let Some((step, body)) = control
        .impact_paused
        .filter(|&(step, _)| control.paused && step == step_index)
    {
        ui.label(format!("impact: body {body}, step {step}"));
    }
}

/// Status messages over the top-left corner of the 3D view, so that they never move
/// the layout: the simulation's error while it lasts, the last export, screenshot or
/// recording message for [`MESSAGE_SECONDS`] (hover keeps it; click dismisses it).
fn status_overlay(ctx: &egui::Context, view: egui::Rect, p: &mut PanelParams) {
    let now = p.time.elapsed_secs_f64();
    let current = p.state.message.as_ref().map(|(m, _)| m.clone());
    if current.as_ref() != p.state.shown.as_ref().map(|(m, _)| m) {
        p.state.shown = current.map(|m| (m, now));
    }
    let error = p.sim.error.clone();
    let message = p
        .state
        .shown
        .as_ref()
        .filter(|(_, at)| now - at < MESSAGE_SECONDS)
        .and_then(|_| p.state.message.clone());
    if error.is_none() && message.is_none() {
        return;
    }
    let red = egui::Color32::from_rgb(200, 30, 30);
    let green = egui::Color32::from_rgb(30, 130, 40);
    let response = egui::Area::new(egui::Id::new("status_overlay"))
        .order(egui::Order::Foreground)
        .fixed_pos(view.left_top() + egui::vec2(8.0, 8.0))
        .show(ctx, |ui| {
            ui.set_max_width((view.width() - 16.0).max(100.0));
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                if let Some(e) = &error {
                    ui.colored_label(red, format!("Paused: {e}"));
                }
                if let Some((msg, ok)) = &message {
                    ui.colored_label(if *ok { green } else { red }, msg);
                }
            });
        })
        .response;
    if response.hovered()
        && let Some((_, at)) = p.state.shown.as_mut()
    {
        *at = now;
    }
    if response.clicked() {
        p.state.message = None;
    }
}

fn left_panel(ui: &mut egui::Ui, p: &mut PanelParams) {
    egui::CollapsingHeader::new("Scene")
        .default_open(true)
        .show(ui, |ui| scene_section(ui, p));
    egui::CollapsingHeader::new("Solver")
        .default_open(true)
        .show(ui, |ui| solver_section(ui, p));
    if p.sim
        .world
        .containers
        .iter()
        .any(|c| matches!(c, Container::Box { .. }))
    {
        egui::CollapsingHeader::new("Containers")
            .default_open(true)
            .show(ui, |ui| container_section(ui, p));
    }
    // Only where an experiment runs or the scene can run a protocol.
    if super::repose::offered(ui.ctx(), &p.sim) {
        egui::CollapsingHeader::new("Angle of repose")
            .default_open(true)
            .show(ui, |ui| {
                let mut commands = Vec::new();
                super::repose::section(ui, &p.sim, &p.control, &mut commands);
                p.commands.write_batch(commands);
            });
    }
    egui::CollapsingHeader::new("Display")
        .default_open(false)
        .show(ui, |ui| display_section(ui, p));
    egui::CollapsingHeader::new("Spawn and capture")
        .default_open(false)
        .show(ui, |ui| spawn_section(ui, p));
}

fn scene_section(ui: &mut egui::Ui, p: &mut PanelParams) {
    ui.label(egui::RichText::new(&p.sim.scene.name).strong());
    if !p.sim.scene.description.is_empty() {
        ui.label(&p.sim.scene.description);
    }
    let current = p.sim.scene_path.clone();
    let mut chosen: Option<PathBuf> = None;
    let catalog = &mut p.state.scene_catalog;
    egui::ComboBox::from_id_salt("bundled_scenes")
        .selected_text(p.sim.scene.name.clone())
        .width(ui.available_width().min(260.0))
        .height(600.0)
        .show_ui(ui, |ui| {
            ui.set_min_width(340.0);
            let entries = catalog.get_or_insert_with(scene_catalog);
            for group in SceneGroup::ALL {
                ui.label(egui::RichText::new(group.title()).strong().underline());
                for e in entries.iter().filter(|e| e.group == group) {
                    let selected = current.as_deref() == Some(e.path.as_path());
                    let stem = e
                        .path
                        .file_stem()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    if ui
                        .add(
                            egui::Button::selectable(selected, &e.title)
                                .right_text(egui::RichText::new(stem).small().weak()),
                        )
                        .on_hover_text(&e.description)
                        .clicked()
                    {
                        chosen = Some(e.path.clone());
                    }
                }
            }
        })
        .response
        .on_hover_text("The bundled scenes in scenes/, grouped: hover one for its description");
    ui.horizontal(|ui| {
        ui.add(
            egui::TextEdit::singleline(&mut p.state.open_path)
                .hint_text("path/to/scene.ron")
                .desired_width(170.0),
        );
        if ui.button("Open").clicked() && !p.state.open_path.trim().is_empty() {
            chosen = Some(scene::resolve_scene(p.state.open_path.trim()));
        }
    });
    if let Some(path) = chosen {
        open_scene(p, &path);
    }
    if let Some(path) = &p.sim.scene_path {
        ui.small(format!(
            "{} (reloads when the file changes)",
            path.display()
        ));
    }
    if let Some(e) = &p.watcher.error {
        ui.colored_label(
            egui::Color32::from_rgb(200, 30, 30),
            format!("Scene not loaded, the previous one keeps running:\n{e}"),
        );
    }
}

/// A group of the scene picker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SceneGroup {
    /// Reproduces a figure or section of a paper (its description starts "Paper").
    Papers,
    /// Everything else: piles, pours, hoppers.
    Sandbox,
    /// Made for a lesson (file name `lesson_*`).
    Lessons,
}

impl SceneGroup {
    pub const ALL: [SceneGroup; 3] = [SceneGroup::Papers, SceneGroup::Sandbox, SceneGroup::Lessons];

    pub fn title(self) -> &'static str {
        match self {
            SceneGroup::Papers => "Papers",
            SceneGroup::Sandbox => "Sandbox",
            SceneGroup::Lessons => "Lessons",
        }
    }

    /// The group of a scene from its file stem and description.
    pub fn of(stem: &str, description: &str) -> SceneGroup {
        if stem.starts_with("lesson_") {
            SceneGroup::Lessons
        } else if description.starts_with("Paper ") {
            SceneGroup::Papers
        } else {
            SceneGroup::Sandbox
        }
    }
}

/// A bundled scene as the picker lists it.
#[derive(Clone, Debug)]
pub struct SceneEntry {
    pub path: PathBuf,
    pub group: SceneGroup,
    pub title: String,
    pub description: String,
}

/// The bundled scenes with their titles and descriptions, sorted by title within
/// each group; a scene that does not load is listed under its file name with the error
/// as its description.
pub fn scene_catalog() -> Vec<SceneEntry> {
    let mut entries: Vec<SceneEntry> = scene::bundled_scenes()
        .unwrap_or_default()
        .into_iter()
        .map(|path| {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (title, description) = match scene::load_scene(&path) {
                Ok(s) => (s.name, s.description),
                Err(e) => (stem.clone(), format!("does not load: {e}")),
            };
            SceneEntry {
                group: SceneGroup::of(&stem, &description),
                path,
                title,
                description,
            }
        })
        .collect();
    entries.sort_by(|a, b| a.title.cmp(&b.title));
    entries
}

/// Open the scene file at `path`; on failure the current scene keeps running and the
/// error (file, line, field) is shown.
pub fn open_scene(p: &mut PanelParams, path: &std::path::Path) {
    match Simulation::from_file(path) {
        Ok(next) => {
            p.watcher.error = None;
            p.spawn.size = 2.0 * super::render::typical_size(&next);
            p.commands.write(SimCommand::Open(Box::new(next)));
            p.view_requests.write(ViewRequest::Reframe);
        }
        Err(e) => p.watcher.error = Some(e),
    }
}

/// The controls of the parameters method `kind` reads ([`SolverKind::parameters`]),
/// numeric ones as sliders from the parameter table (`param_spec::PARAMS`). Returns
/// the fields it drew, in order.
fn parameter_controls(
    ui: &mut egui::Ui,
    kind: SolverKind,
    params: &mut SolverParams,
) -> Vec<&'static str> {
    let chosen = kind;
    // Only the parameters the method reads, as the method states them.
    let read = chosen.parameters();
    let reads = |p: Param| read.contains(&p);
    let mut drawn = Vec::new();
    // The numeric parameters, with the ranges, labels and meanings of the parameter
    // table (`param_spec::PARAMS`), in its order.
    for (param, value) in [
        (Param::Restitution, &mut params.restitution),
        (Param::Friction, &mut params.friction),
        (Param::Lambda, &mut params.lambda),
        (Param::Kp, &mut params.kp),
        (Param::Tolerance, &mut params.tolerance),
        (Param::RestVelocity, &mut params.rest_velocity),
        (Param::Cohesion, &mut params.cohesion),
        (Param::EquivalentFriction, &mut params.equivalent_friction),
        (Param::CcpOmega, &mut params.ccp_omega),
        (Param::CcpTau, &mut params.ccp_tau),
        (Param::ErrorReduction, &mut params.error_reduction),
        (Param::RollingFriction, &mut params.rolling_friction),
        (Param::SpinningFriction, &mut params.spinning_friction),
    ] {
        if reads(param) {
            param_slider(ui, param.spec(), value);
            drawn.push(param.spec().field);
        }
    }
    for (param, value) in [
        (Param::MaxIterations, &mut params.max_iterations),
        (Param::ContactSweeps, &mut params.contact_sweeps),
    ] {
        if reads(param) {
            param_slider(ui, param.spec(), value);
            drawn.push(param.spec().field);
        }
    }
    if reads(Param::MdpFriction) {
        drawn.push(Param::MdpFriction.spec().field);
        use crate::dynamics::solver::mdp::FrictionLaw;
        ui.horizontal(|ui| {
            ui.label("friction law");
            ui.radio_value(&mut params.mdp_friction, FrictionLaw::MaximumDissipation, "max. dissipation")
                .on_hover_text("The impulse minimises the post-impulse kinetic energy over the friction cone (paper 003, eq. 5): unique for one contact.");
            ui.radio_value(&mut params.mdp_friction, FrictionLaw::Coulomb, "Coulomb")
                .on_hover_text("Friction opposes the post-impulse slip: can have several solutions (paper 003, §4.1); the most dissipative is taken.");
        });
    }
    if reads(Param::ContactPass) {
        drawn.push(Param::ContactPass.spec().field);
        ui.checkbox(&mut params.contact_pass, "contact pass")
            .on_hover_text("After the method, a warm-started contact pass (projected Gauss-Seidel, then shock propagation: Guendelman et al. 2003, paper 000 ref. 54) takes the resting contacts, so piles come to rest. Every method leaves its contacts slower than the rest velocity to it.");
    }
    if reads(Param::RestingModel) {
        drawn.push(Param::RestingModel.spec().field);
        use crate::dynamics::solver::RestingModel;
        ui.horizontal(|ui| {
            ui.label("resting contacts");
            ui.radio_value(&mut params.resting_model, RestingModel::Hard, "hard")
                .on_hover_text("The contact pass sweeps resting contacts to its tolerance (at most the contact sweeps), then shock propagation and position projection: the papers' model.");
            ui.radio_value(&mut params.resting_model, RestingModel::Soft, "soft")
                .on_hover_text("Box2D's soft step: one biased sweep of spring-damper contacts (30 Hz, damping ratio 10) and one relax sweep per step; overlap is pushed out by the springs. Several times faster on piles; a resting body sits about 0.3 mm deep per weight it carries. Needs a rest velocity above 0.");
        });
    }
    drawn
}

fn solver_section(ui: &mut egui::Ui, p: &mut PanelParams) {
    let current = p.sim.world.solver_kind();
    let mut chosen = current;
    egui::ComboBox::from_id_salt("solver")
        .selected_text(solver_label(current))
        .show_ui(ui, |ui| {
            for k in SolverKind::ALL {
                ui.selectable_value(&mut chosen, k, solver_label(k));
            }
        })
        .response
        .on_hover_text("Switching takes effect on the next step; the bodies keep their state");
    if chosen != current {
        p.commands.write(SimCommand::Solver(chosen));
    }
    let mut edited: SolverParams = p.sim.world.params.clone();
    let params = &mut edited;
    parameter_controls(ui, chosen, params);
    if params.validate().is_err() {
        *params = p.sim.world.params.clone();
    }
    if *params != p.sim.world.params {
        p.commands.write(SimCommand::Params(params.clone()));
    }
    let inert = params.inert();
    if !inert.is_empty() {
        let fields: Vec<&str> = inert.iter().map(|(field, _)| *field).collect();
        let notes: Vec<String> = inert.into_iter().map(|(_, note)| note).collect();
        ui.colored_label(
            egui::Color32::from_rgb(230, 160, 40),
            format!("⚠ no effect here: {}", fields.join(", ")),
        )
        .on_hover_text(notes.join("\n\n"));
    }
    let mut dt_ms = p.sim.world.dt * 1e3;
    if ui
        .add(
            egui::Slider::new(&mut dt_ms, 0.1..=20.0)
                .logarithmic(true)
                .text("time step (ms)"),
        )
        .on_hover_text("The fixed time step h of the world (paper 000 uses 1/600 s).")
        .changed()
        && dt_ms.is_finite()
        && dt_ms > 0.0
    {
        p.commands.write(SimCommand::TimeStep(dt_ms * 1e-3));
    }
    let mut sleep = p.sim.world.sleep.clone();
    if ui.checkbox(&mut sleep.enabled, "sleep islands at rest")
        .on_hover_text("Islands whose bodies have all been slower than 0.01 m/s for 0.5 s stop being simulated until something touches them or a wall is removed (as in Box2D and Rapier).")
        .changed()
    {
        p.commands.write(SimCommand::Sleep(sleep));
    }
    let r = &p.sim.world.last_report;
    ui.small(format!(
        "last step: {} impulses, {} iterations{}{}",
        r.impulses,
        r.iterations,
        if r.hit_iteration_cap {
            " (cap hit)"
        } else {
            ""
        },
        match r.contact_fallback {
            ContactFallback::None => "",
            ContactFallback::Cold => "; contact pass redone without warm start",
            ContactFallback::Scaled => "; contact pass scaled back",
        }
    ));
}

fn solver_label(k: SolverKind) -> &'static str {
    match k {
        SolverKind::Etm => "ETM – energy tracking (paper 000)",
        SolverKind::Sqm => "SQM – sequential impulses (000, App. A)",
        SolverKind::Smm => "SMM – simultaneous impulses (000, App. B)",
        SolverKind::Jolt => "jolt – velocity jolt (paper 001)",
        SolverKind::Ccp => "CCP – cone complementarity (paper 002)",
        SolverKind::Mdp => "MDP – maximum dissipation (paper 003)",
    }
}

fn container_section(ui: &mut egui::Ui, p: &mut PanelParams) {
    let mut changes = Vec::new();
    for (ci, c) in p.sim.world.containers.iter().enumerate() {
        if let Container::Box {
            walls, dividers, ..
        } = c
        {
            ui.label(format!("box {ci}: walls present"));
            ui.horizontal(|ui| {
                for (k, name) in BOX_WALL_NAMES.iter().enumerate() {
                    let mut present = walls[k];
                    if ui.checkbox(&mut present, *name).changed() {
                        changes.push((ci, WallRef::Side(k), present));
                    }
                }
            });
            for (d, div) in dividers.iter().enumerate() {
                let mut present = div.present;
                let label = format!("divider at x = {:.2} m", div.x);
                if ui
                    .checkbox(&mut present, label)
                    .on_hover_text(
                        "The angle-of-repose experiment removes this wall from a settled pile",
                    )
                    .changed()
                {
                    changes.push((ci, WallRef::Divider(d), present));
                }
            }
        }
    }
    for (container, wall, present) in changes {
        p.commands.write(SimCommand::Wall {
            container,
            wall,
            present,
        });
    }
}

fn display_section(ui: &mut egui::Ui, p: &mut PanelParams) {
    ui.horizontal(|ui| {
        ui.label("colour by");
        for m in ColorMode::ALL {
            ui.radio_value(&mut p.display.color_mode, m, m.label());
        }
    });
    ui.checkbox(&mut p.display.contact_points, "contact points");
    ui.checkbox(&mut p.display.contact_normals, "contact normals");
    ui.checkbox(&mut p.display.contact_impulses, "contact impulses")
        .on_hover_text("Records the solver's trace every step to sum each contact's impulse: slows large scenes");
    ui.checkbox(&mut p.display.container_edges, "container edges");
    if p.sim.world.record_trace != p.display.contact_impulses {
        p.commands
            .write(SimCommand::RecordTrace(p.display.contact_impulses));
    }
    super::colorbar::display_controls(
        ui,
        p.display.color_mode,
        &mut p.color_scale,
        &p.sim,
        p.display.color_scale,
    );
}

fn spawn_section(ui: &mut egui::Ui, p: &mut PanelParams) {
    egui::ComboBox::from_id_salt("spawn_shape")
        .selected_text(p.spawn.shape.label())
        .show_ui(ui, |ui| {
            for s in SpawnShape::ALL {
                ui.selectable_value(&mut p.spawn.shape, s, s.label());
            }
        });
    ui.add(
        egui::Slider::new(&mut p.spawn.size, 0.02..=10.0)
            .logarithmic(true)
            .text("size (m)"),
    );
    ui.label("Press b with the cursor over the view to drop one there.");
    ui.separator();
    if ui.button("Screenshot (F12)").clicked() {
        p.capture.write(CaptureRequest::Screenshot);
    }
    ui.separator();
    let recording = p.recorder.is_recording();
    ui.add_enabled_ui(!recording, |ui| {
        ui.horizontal(|ui| {
            ui.label("video");
            egui::ComboBox::from_id_salt("record_fps")
                .selected_text(format!("{} fps", p.recorder.fps))
                .show_ui(ui, |ui| {
                    for fps in APP_FRAME_RATES {
                        ui.selectable_value(&mut p.recorder.fps, fps, format!("{fps} fps"));
                    }
                });
            ui.checkbox(&mut p.recorder.whole_window, "whole window")
                .on_hover_text("Record the window with its panels instead of the 3D view");
        });
        super::record::recording_options_ui(ui, &mut p.recorder);
    });
    let label = if recording {
        "Stop recording (F9)"
    } else {
        "Record MP4 (F9)"
    };
    if ui
        .button(label)
        .on_hover_text(
            "Record an MP4 into recordings/. While recording, the world advances one frame \
             interval per captured frame, so the video plays at simulated real speed \
             however slowly the app renders.",
        )
        .clicked()
    {
        p.capture.write(CaptureRequest::ToggleRecording);
    }
}

/// The inspector as a window over the top-right corner of the 3D view (movable,
/// collapsible): selecting a body never shrinks the view.
fn inspector_overlay(ctx: &egui::Context, view: egui::Rect, p: &mut PanelParams) {
    let Some(i) = p.selection.body else {
        return;
    };
    let mut open = true;
    egui::Window::new(format!("Body {i}"))
        .id(egui::Id::new("inspector"))
        .open(&mut open)
        .collapsible(true)
        .resizable(false)
        .default_pos(view.right_top() + egui::vec2(-8.0, 8.0))
        .pivot(egui::Align2::RIGHT_TOP)
        .constrain_to(view)
        .frame(egui::Frame::window(&ctx.global_style()).multiply_with_opacity(0.92))
        .show(ctx, |ui| inspector(ui, p));
    if !open {
        p.selection.body = None;
    }
}

fn inspector(ui: &mut egui::Ui, p: &mut PanelParams) {
    let Some(i) = p.selection.body else {
        return;
    };
    let Some(b) = p.sim.world.bodies.get(i) else {
        p.selection.body = None;
        return;
    };
    let v3 = |v: &crate::math::Vec3| format!("({:+.3}, {:+.3}, {:+.3})", v.x, v.y, v.z);
    let contacts = p
        .sim
        .world
        .contacts
        .iter()
        .filter(|c| c.a == i || c.b == Some(i))
        .count();
    egui::Grid::new("inspector_grid")
        .num_columns(2)
        .show(ui, |ui| {
            let mut row = |k: &str, v: String| {
                ui.label(k);
                ui.monospace(v);
                ui.end_row();
            };
            row("shape", b.shape.kind_name().to_string());
            row("mass", format!("{:.4} kg", b.mass));
            row("position", format!("{} m", v3(&b.position)));
            row("velocity", format!("{} m/s", v3(&b.velocity)));
            row("|v|", format!("{:.4} m/s", b.velocity.norm()));
            row("ω", format!("{} rad/s", v3(&b.angular_velocity)));
            row(
                "KE (trans.)",
                format!("{:.4e} J", b.kinetic_energy_translational()),
            );
            row(
                "KE (rot.)",
                format!("{:.4e} J", b.kinetic_energy_rotational()),
            );
            row("contacts", contacts.to_string());
            row("static", b.is_static().to_string());
        });
    if ui.button("Deselect").clicked() {
        p.selection.body = None;
    }
}

fn energy_plot(ui: &mut egui::Ui, p: &mut PanelParams, timeline: &super::timeline::TimelineView) {
    use super::quantity::{MAX_PLOTS, QUANTITIES, Source};
    if !p.present.on {
        ui.horizontal_wrapped(|ui| {
            plot_pickers(ui, &mut p.plots.layout);
            ui.add(
                egui::Slider::new(&mut p.state.plot_window, 0.0..=120.0)
                    .text("window (s, 0 = all)"),
            );
            if ui
                .button("Pin run")
                .on_hover_text(
                    "Keep this run's curves to compare with the next runs (change e, μ or \
                     the method, reset, and both are drawn). The energy ledger shows the \
                     current run only: pinning from it plots the kinetic energy.",
                )
                .clicked()
            {
                pin_current_run(p);
            }
            ui.add(egui::TextEdit::singleline(&mut p.state.export_path).desired_width(140.0));
            if ui
                .button("Export CSV")
                .on_hover_text(
                    "Write what the plots show: with only the ledger, every column of the \
                     ledger over the time window; else each plotted curve's points",
                )
                .clicked()
            {
                export_shown(p, ui.visuals());
            }
            // Kept whole: it goes to the next row rather than breaking.
            ui.add(
                egui::Label::new(
                    egui::RichText::new(
                        "hover: values · drag: pan · wheel: zoom · double-click: fit",
                    )
                    .small(),
                )
                .wrap_mode(egui::TextWrapMode::Extend),
            );
        });
    }
    pinned_legend(ui, p);
    let width = p.present.line_width(1.5);
    let n = p.plots.layout.len().clamp(1, MAX_PLOTS);
    let label = super::quantity::run_label(&p.sim);
    let current = super::quantity::current_view(&label, &p.sim, &p.history);
    let body = p.control.probe_body;
    let spacing = ui.spacing().item_spacing.y;
    for k in 0..n {
        let q = &QUANTITIES[p.plots.layout[k].min(QUANTITIES.len() - 1)];
        let curves = if matches!(q.source, Source::Ledger) {
            super::plot::legend_strip(ui, &mut p.state.series, width);
            let samples = visible(&p.history, p.state.plot_window);
            super::plot::ledger_curves(&samples, current.pe0, &p.state.series, ui.visuals())
        } else {
            super::quantity::run_curves(
                q,
                &current,
                body,
                &p.plots.pins,
                p.state.plot_window,
                ui.visuals(),
            )
        };
        // The plots below share what is left equally.
        let left = (n - 1 - k) as f32;
        let below = if left > 0.0 {
            left * (ui.available_height() + spacing) / (left + 1.0)
        } else {
            0.0
        };
        let id = if k == 0 {
            "energy_plot".to_string()
        } else {
            format!("energy_plot_{k}")
        };
        // Stacked plots, and body quantities (which body), say what they show.
        if let (Source::Body(_), Some(i)) = (q.source, body) {
            ui.small(format!("{} of body {i}", q.label));
        } else if n > 1 {
            ui.small(q.label);
        }
        let rect = super::plot::curve_plot(
            ui,
            super::plot::PlotAxes {
                id: &id,
                unit: q.unit,
                height: (n > 1).then_some(below),
            },
            curves,
            super::plot::TimeMarks {
                markers: &p.markers.markers,
                cursor: super::timeline::plot_cursor(timeline, &p.sim),
                run: p.sim.run,
            },
            p.state.plot_window,
            width,
        );
        mark_region(ui.ctx(), if k == 0 { "plot" } else { "plot2" }, rect);
    }
}

/// The quantity picker of each stacked plot, and the buttons that add and remove plots.
fn plot_pickers(ui: &mut egui::Ui, plots: &mut Vec<usize>) {
    use super::quantity::{MAX_PLOTS, QUANTITIES};
    if plots.is_empty() {
        plots.push(0);
    }
    let mut remove = None;
    for (k, q) in plots.iter_mut().enumerate() {
        egui::ComboBox::from_id_salt(("plot_quantity", k))
            .selected_text(QUANTITIES[(*q).min(QUANTITIES.len() - 1)].label)
            .show_ui(ui, |ui| {
                for (i, quantity) in QUANTITIES.iter().enumerate() {
                    ui.selectable_value(q, i, quantity.label);
                }
            })
            .response
            .on_hover_text(
                "What this plot shows. Body quantities follow the selected body (click \
                 one; else the first moving body), from when it was first shown.",
            );
        if k > 0
            && ui
                .small_button("×")
                .on_hover_text("Remove this plot")
                .clicked()
        {
            remove = Some(k);
        }
    }
    if let Some(k) = remove {
        plots.remove(k);
    }
    if plots.len() < MAX_PLOTS
        && ui
            .small_button("+ plot")
            .on_hover_text("Stack another plot below (its own quantity, same time axis)")
            .clicked()
    {
        plots.push(super::quantity::quantity_by_id("body_height").unwrap_or(0));
    }
}

/// Pin the current run ([`super::quantity::Plots::pin_current`]).
fn pin_current_run(p: &mut PanelParams) {
    let said = p.plots.pin_current(&p.sim, &p.history);
    p.state.message = Some((said, true));
}

/// The runs' legend, shown while runs are pinned: one entry per pinned run (click:
/// hide or show; × unpins it) and one for the current run, in the colours their curves
/// have on the plots of one quantity.
fn pinned_legend(ui: &mut egui::Ui, p: &mut PanelParams) {
    if p.plots.pins.is_empty() {
        return;
    }
    let visuals = ui.visuals().clone();
    let mut unpin = None;
    let swatch = |ui: &mut egui::Ui, color: egui::Color32| {
        let h = ui.text_style_height(&egui::TextStyle::Small);
        let (rect, sample) = ui.allocate_exact_size(egui::vec2(2.2 * h, h), egui::Sense::click());
        ui.painter().line_segment(
            [rect.left_center(), rect.right_center()],
            egui::Stroke::new(2.0, color),
        );
        sample
    };
    ui.horizontal_wrapped(|ui| {
        ui.small("runs:");
        for (k, run) in p.plots.pins.iter_mut().enumerate() {
            let color = super::quantity::PIN_COLORS[run.color % super::quantity::PIN_COLORS.len()]
                .resolve(&visuals);
            let sample = swatch(
                ui,
                if run.shown {
                    color
                } else {
                    visuals.weak_text_color()
                },
            );
            let name = format!("{}{}", run.trace.label, run.scene_note(&p.sim.scene.name));
            let mut text = egui::RichText::new(name).small();
            if !run.shown {
                text = text.weak().strikethrough();
            }
            let label = ui
                .add(egui::Label::new(text).sense(egui::Sense::click()))
                .on_hover_text("click: hide or show this run");
            if sample.clicked() || label.clicked() {
                run.shown = !run.shown;
            }
            if !p.present.on && ui.small_button("×").on_hover_text("Unpin").clicked() {
                unpin = Some(k);
            }
            ui.add_space(8.0);
        }
        swatch(ui, super::plot::SeriesColor::Text.resolve(&visuals));
        ui.small(format!("now: {}", super::quantity::run_label(&p.sim)));
    });
    if let Some(k) = unpin {
        p.plots.pins.remove(k);
    }
}

/// "Export CSV": the ledger's columns when the ledger is all that is shown, else the
/// points of every curve of every plot.
fn export_shown(p: &mut PanelParams, visuals: &egui::Visuals) {
    use super::quantity::{QUANTITIES, Source};
    let path = PathBuf::from(p.state.export_path.trim());
    let only_ledger = p.plots.layout.iter().all(|&q| q == 0);
    let result = if only_ledger {
        export_csv(&path, &visible(&p.history, p.state.plot_window))
    } else {
        let label = super::quantity::run_label(&p.sim);
        let current = super::quantity::current_view(&label, &p.sim, &p.history);
        let samples = visible(&p.history, p.state.plot_window);
        let plots: Vec<_> = p
            .plots
            .layout
            .iter()
            .map(|&i| {
                let q = &QUANTITIES[i.min(QUANTITIES.len() - 1)];
                let curves = if matches!(q.source, Source::Ledger) {
                    super::plot::ledger_curves(&samples, current.pe0, &p.state.series, visuals)
                } else {
                    super::quantity::run_curves(
                        q,
                        &current,
                        p.control.probe_body,
                        &p.plots.pins,
                        p.state.plot_window,
                        visuals,
                    )
                };
                (q, curves)
            })
            .collect();
        super::quantity::export_curves(&path, &plots)
    };
    p.state.message = Some(match result {
        Ok(n) => (format!("wrote {n} rows to {}", path.display()), true),
        Err(e) => (format!("export failed: {e}"), false),
    });
}

/// The samples within the last `window` seconds (all if `window` is 0).
fn visible(history: &EnergyHistory, window: f64) -> Vec<EnergySample> {
    let end = history.samples.back().map_or(0.0, |s| s.time);
    history
        .samples
        .iter()
        .filter(|s| window <= 0.0 || s.time >= end - window)
        .copied()
        .collect()
}

/// Write `samples` as CSV (the CLI's trace columns); returns the row count.
pub fn export_csv(path: &std::path::Path, samples: &[EnergySample]) -> Result<usize, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let out = crate::output::OutputFile::create(path).map_err(|e| e.to_string())?;
    let mut w = csv::Writer::from_writer(out);
    for s in samples {
        w.serialize(s)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    w.into_inner()
        .map_err(|e| format!("{}: {}", path.display(), e.error()))?
        .commit()
        .map_err(|e| e.to_string())?;
    Ok(samples.len())
}

/// A slider on a logarithmic scale with a label and a hover text (the Solver panel's
/// iteration counts, tolerances and λ).
/// A slider for a numeric parameter with its row of the parameter table: the slider's
/// range, the label ([`ParamSpec::label`]) and, on hover, its meaning and valid values.
fn param_slider<N: egui::emath::Numeric>(ui: &mut egui::Ui, spec: &ParamSpec, value: &mut N) {
    let Some(range) = spec.slider else {
        return;
    };
    ui.add(
        egui::Slider::new(value, N::from_f64(range.min)..=N::from_f64(range.max))
            .logarithmic(range.log)
            .text(spec.label()),
    )
    .on_hover_text(format!(
        "{}. {}{}.",
        capitalised(spec.summary),
        spec.domain.text(),
        if spec.unit.is_empty() {
            String::new()
        } else {
            format!(" ({})", spec.unit)
        }
    ));
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or(String::new(), |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Solver panel draws a control for exactly the parameters each method reads,
    /// and nothing else (the parameter table's rows; tests/params.rs checks the table
    /// against validation, the CLI and the docs).
    #[test]
    fn the_panel_draws_exactly_the_parameters_a_method_reads() {
        let ctx = egui::Context::default();
        for kind in SolverKind::ALL {
            let mut params = SolverParams::default();
            let mut drawn = Vec::new();
            let mut output = ctx.run_ui(egui::RawInput::default(), |ui| {
                drawn = parameter_controls(ui, kind, &mut params);
            });
            // No renderer here: the font atlas upload is dropped.
            output.textures_delta.clear();
            let mut read: Vec<&str> = kind.parameters().iter().map(|p| p.spec().field).collect();
            read.sort_unstable();
            drawn.sort_unstable();
            assert_eq!(drawn, read, "{kind}");
            assert_eq!(
                params,
                SolverParams::default(),
                "{kind}: drawing changed a value"
            );
        }
    }

    /// Status lines sent as messages by other plugins (screenshots, recordings) reach the
    /// status line; of several in one frame the last is shown, as when they were written
    /// into the panel state directly.
    #[test]
    fn status_messages_reach_the_status_line() {
        let mut app = App::new();
        app.add_message::<StatusMessage>()
            .init_resource::<UiState>()
            .add_systems(Update, show_status_messages);
        app.update();
        assert_eq!(app.world().resource::<UiState>().message, None);
        app.world_mut()
            .write_message(StatusMessage::from(("first".to_string(), true)));
        app.world_mut()
            .write_message(StatusMessage::from(("recording failed".to_string(), false)));
        app.update();
        assert_eq!(
            app.world().resource::<UiState>().message,
            Some(("recording failed".to_string(), false))
        );
        // Read once: a message the panels cleared does not come back.
        app.world_mut().resource_mut::<UiState>().message = None;
        app.update();
        assert_eq!(app.world().resource::<UiState>().message, None);
    }
}
