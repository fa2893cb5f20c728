//! Capture plugin: screenshots on request (F12, the button) and the automation flags
//! `--screenshot PATH --after-frames N` and `--exit-after-frames N` that scripts and the
//! Xvfb test use.
//!
//! A screenshot is captured asynchronously by the renderer; the app exits only after the
//! requested screenshot has been written, so `--exit-after-frames` never cuts it short.
//!
//! The hidden `gui --script` ([`super::launch::parse_script`]) drives the app for the
//! Xvfb tests: it opens scenes and lessons, runs checks, switches methods and quality,
//! feeds mouse drags and wheel turns as the window system delivers them (cursor, button
//! and wheel messages, aimed at a panel's region: [`super::view::region`]), logs the
//! camera, and writes the texts egui draws with their rectangles (`TextDump`).

use super::interaction::OrbitCamera;
pub use super::launch::Automation;
use super::launch::ScriptAction;
use super::messages::{
    CaptureRequest, MicroscopeRequest, OpenLesson, PlotRequest, SimCommand, StartComparison,
    StatusMessage, ViewRequest,
};
use super::render::RenderSettings;
use super::sets::{ExitSystems, SimulationSystems};
use super::sim_state::{LabMode, SimControl, Simulation};
use bevy::diagnostic::FrameCount;
use bevy::input::ButtonState;
use bevy::input::mouse::{MouseButtonInput, MouseScrollUnit, MouseWheel};
use bevy::input::touch::TouchPhase;
use bevy::prelude::*;
use bevy::render::view::screenshot::{Screenshot, ScreenshotCaptured};
use bevy::window::{CursorMoved, PrimaryWindow, WindowEvent};
use bevy_egui::EguiContexts;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Screenshots requested but not yet written.
#[derive(Resource, Debug, Default, Clone)]
pub(super) struct Pending(Arc<AtomicUsize>);

/// Whether the renderer had no pipeline waiting to be compiled at its last frame (set by
/// the render world, `note_pipelines`). Shaders compile asynchronously; a frame drawn
/// while some are still compiling lacks whatever uses them (on a shared CPU under
/// llvmpipe, every panel and body for the first frames), so the scripted screenshot
/// waits for them as well as for its frame count.
#[derive(Resource, Debug, Default, Clone)]
struct PipelinesReady(Arc<AtomicBool>);

/// Longest the scripted screenshot waits for the pipelines once its frame count is
/// reached; then it is taken as it is, with a warning (a shader that never loads must
/// not keep `--exit-after-frames` from ending the app).
const PIPELINE_WAIT: Duration = Duration::from_secs(30);

#[derive(Resource, Debug, Default)]
pub(super) struct CaptureState {
    scripted_taken: bool,
    /// When the scripted screenshot's frame count was reached (it then waits for the
    /// pipelines, [`PipelinesReady`]).
    counted_at: Option<Instant>,
    manual_count: u32,
    /// With `--exit-after-frames N`: the frame count and time when the measured frames
    /// began (see [`measured_from`]).
    clock: Option<(u32, std::time::Instant)>,
    reported: bool,
    /// The script's next action (index into [`Automation::script`]).
    script_next: usize,
    /// The script waits until this frame (see [`crate::app::launch::parse_script`]).
    hold_until: u32,
}

/// `gui --script texts=PATH`: the file to write this frame's texts to. Each line is one
/// text egui draws: its rectangle, its clip rectangle (x0 y0 x1 y1, egui points) and the
/// text (tab-separated; tabs, newlines and backslashes escaped as `\t`, `\n`, `\\`).
/// A text shows whole where its rectangle lies inside its clip rectangle.
///
/// `gui --script lines=PATH` writes the lines instead: each a line of the file with
/// its colour (r g b a), its point count and its points (x y ..., egui points).
#[derive(Resource, Debug, Default)]
pub(super) struct TextDump(Option<PathBuf>, Option<PathBuf>);

/// With `--exit-after-frames N`, the frame from which the frame rate printed at exit is
/// measured: the first frames compile shaders and upload meshes and are left out.
pub fn measured_from(n: u32) -> u32 {
    (n / 3).min(30)
}

pub struct LabCapturePlugin {
    pub automation: Automation,
}

impl Plugin for LabCapturePlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(self.automation.clone())
            .init_resource::<Pending>()
            .init_resource::<PipelinesReady>()
            .init_resource::<CaptureState>()
            .add_message::<StatusMessage>()
            .init_resource::<ScriptedInput>()
            .init_resource::<TextDump>()
            .add_message::<PlotRequest>()
            .init_resource::<super::view::Selection>()
            .add_systems(First, inject_scripted_input)
            .add_systems(
                PostUpdate,
                dump_texts
                    .after(bevy_egui::EguiPostUpdateSet::EndPass)
                    .before(bevy_egui::EguiPostUpdateSet::ProcessOutput),
            )
            .add_systems(Update, run_script.before(SimulationSystems))
            .add_systems(
                Last,
                (take_screenshots, exit_when_done.in_set(ExitSystems)).chain(),
            );
    }

    /// The render world reports whether pipelines are still compiling; an app without
    /// one (headless) has nothing to wait for.
    fn finish(&self, app: &mut App) {
        let ready = app.world().resource::<PipelinesReady>().clone();
        match app.get_sub_app_mut(bevy::render::RenderApp) {
            Some(render) => {
                render.insert_resource(ready).add_systems(
                    bevy::render::Render,
                    note_pipelines.in_set(bevy::render::RenderSystems::Cleanup),
                );
            }
            None => ready.0.store(true, Ordering::Relaxed),
        }
    }
}

fn note_pipelines(
    cache: Res<bevy::render::render_resource::PipelineCache>,
    ready: Res<PipelinesReady>,
) {
    ready.0.store(
        cache.waiting_pipelines().next().is_none(),
        Ordering::Relaxed,
    );
}

fn spawn_screenshot(commands: &mut Commands, path: PathBuf, pending: &Pending) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        error!("cannot create {}: {e}", dir.display());
        return;
    }
    pending.0.fetch_add(1, Ordering::SeqCst);
    let counter = pending.0.clone();
    commands
        .spawn(Screenshot::primary_window())
        .observe(move |shot: On<ScreenshotCaptured>| {
            if let Err(e) = save_png(&path, &shot.image) {
                error!("screenshot {}: {e}", path.display());
            }
        })
        .observe(move |_: On<ScreenshotCaptured>| {
            counter.fetch_sub(1, Ordering::SeqCst);
        });
}

/// Mouse input a script feeds in, as the window system would deliver it: what happens at
/// which frame (see [`inject_scripted_input`]).
#[derive(Resource, Debug, Default)]
struct ScriptedInput(Vec<(u32, Synthetic)>);

#[derive(Debug, Clone, Copy)]
enum Synthetic {
    /// The cursor moves to this point (logical pixels).
    Move(Vec2),
    Button(MouseButton, ButtonState),
    /// Wheel lines (positive: away from the user).
    Wheel(f32),
}

impl ScriptedInput {
    /// A left-button drag from `at`: the cursor rests there for three frames (egui sees
    /// what it hovers), the button goes down, six moves of (10, 3.3) px, the button up.
    fn drag(&mut self, frame: u32, at: Vec2) {
        self.0.push((frame + 1, Synthetic::Move(at)));
        self.0.push((
            frame + 4,
            Synthetic::Button(MouseButton::Left, ButtonState::Pressed),
        ));
        for k in 1..=6 {
            let to = at + k as f32 * Vec2::new(10.0, 10.0 / 3.0);
            self.0.push((frame + 4 + k, Synthetic::Move(to)));
        }
        self.0.push((
            frame + 11,
            Synthetic::Button(MouseButton::Left, ButtonState::Released),
        ));
    }

    /// Three wheel clicks toward the user over `at`, after three frames of rest there.
    fn wheel(&mut self, frame: u32, at: Vec2) {
        self.0.push((frame + 1, Synthetic::Move(at)));
        for k in 0..3 {
            self.0.push((frame + 4 + k, Synthetic::Wheel(-1.0)));
        }
    }
}

/// Deliver the scripted input due at this frame (schedule `First`, before Bevy's input
/// systems and egui read it): the messages winit would write, and the window's cursor.
fn inject_scripted_input(
    frames: Res<FrameCount>,
    mut input: ResMut<ScriptedInput>,
    mut window: Query<(Entity, &mut Window), With<PrimaryWindow>>,
    mut events: MessageWriter<WindowEvent>,
    mut moved: MessageWriter<CursorMoved>,
    mut buttons: MessageWriter<MouseButtonInput>,
    mut wheels: MessageWriter<MouseWheel>,
) {
    if input.0.is_empty() {
        return;
    }
    let Ok((entity, mut window)) = window.single_mut() else {
        return;
    };
    let (due, later): (Vec<_>, Vec<_>) = input.0.drain(..).partition(|(f, _)| *f <= frames.0);
    input.0 = later;
    for (_, s) in due {
        match s {
            Synthetic::Move(to) => {
                let delta = window.cursor_position().map(|from| to - from);
                window.set_cursor_position(Some(to));
                let m = CursorMoved {
                    window: entity,
                    position: to,
                    delta,
                };
                moved.write(m.clone());
                events.write(WindowEvent::CursorMoved(m));
            }
            Synthetic::Button(button, state) => {
                let m = MouseButtonInput {
                    button,
                    state,
                    window: entity,
                };
                buttons.write(m);
                events.write(WindowEvent::MouseButtonInput(m));
            }
            Synthetic::Wheel(y) => {
                let m = MouseWheel {
                    unit: MouseScrollUnit::Line,
                    x: 0.0,
                    y,
                    window: entity,
                    phase: TouchPhase::Moved,
                };
                wheels.write(m);
                events.write(WindowEvent::MouseWheel(m));
            }
        }
    }
}

/// Carry out the actions of `gui --script` that are due at this frame (before the
/// frame's physics sync, as keys and buttons are).
#[allow(clippy::too_many_arguments)]
fn run_script(
    mut commands: Commands,
    frames: Res<FrameCount>,
    automation: Res<Automation>,
    pending: Res<Pending>,
    mut state: ResMut<CaptureState>,
    mut settings: ResMut<RenderSettings>,
    sim: Res<Simulation>,
    mut sim_commands: MessageWriter<SimCommand>,
    mut view: MessageWriter<ViewRequest>,
    mut contexts: EguiContexts,
    mut input: ResMut<ScriptedInput>,
    cameras: Query<&OrbitCamera>,
    mut lessons: ResMut<super::lessons::Lessons>,
    mut plots: PlotScript,
) {
    while let Some((at, action)) = automation.script.0.get(state.script_next) {
        if *at > frames.0 || frames.0 < state.hold_until {
            return;
        }
        if matches!(action, ScriptAction::Wait) {
            let running = lessons.check.as_ref().is_some_and(|c| c.result().is_none());
            if running {
                return;
            }
            state.hold_until = frames.0 + 10;
        }
        state.script_next += 1;
        info!("script, frame {}: {action:?}", frames.0);
        match action {
            ScriptAction::ToggleQuality => {
                let q = settings.quality.toggled();
                settings.quality = q;
                settings.chosen = true;
            }
            ScriptAction::Scene(name) => {
                let path = crate::scene::resolve_scene(name);
                match Simulation::from_file(&path) {
                    Ok(next) => {
                        sim_commands.write(SimCommand::Open(Box::new(next)));
                        view.write(ViewRequest::Reframe);
                    }
                    Err(e) => error!("script: {e}"),
                }
            }
            ScriptAction::Solver(kind) => {
                sim_commands.write(SimCommand::Solver(*kind));
            }
            ScriptAction::Reset => {
                sim_commands.write(SimCommand::Reset);
            }
            ScriptAction::Screenshot(path) => {
                spawn_screenshot(&mut commands, path.clone(), &pending);
                state.hold_until = frames.0 + 5;
            }
            ScriptAction::Panic => panic!("scripted panic at frame {} (gui --script)", frames.0),
            ScriptAction::Drag(name) | ScriptAction::Wheel(name) => {
                let rect = contexts
                    .ctx_mut()
                    .ok()
                    .and_then(|ctx| super::view::region(ctx, name));
                let Some(rect) = rect else {
                    error!("script: no screen region '{name}' drawn");
                    continue;
                };
                let at = Vec2::new(rect.center().x, rect.center().y);
                info!("script: {action:?} at {at} in {rect:?}");
                if matches!(action, ScriptAction::Drag(_)) {
                    input.drag(frames.0, at);
                } else {
                    input.wheel(frames.0, at);
                }
                state.hold_until = frames.0 + 14;
            }
            ScriptAction::Lesson(name) => {
                plots.lessons.write(OpenLesson(name.clone()));
                state.hold_until = frames.0 + 10;
            }
            ScriptAction::Check => lessons.start_check(),
            ScriptAction::Wait => {}
            ScriptAction::Texts(path) => {
                plots.dump.0 = Some(path.clone());
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Lines(path) => {
                plots.dump.1 = Some(path.clone());
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Set(field, value) => {
                let mut params = sim.world.params.clone();
                match params.set(field, value) {
                    Ok(()) => {
                        sim_commands.write(SimCommand::Params(params));
                    }
                    Err(e) => error!("script: set {field}: {e}"),
                }
            }
            ScriptAction::Pin => {
                plots.requests.write(PlotRequest::Pin);
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Plot(plot, quantity) => {
                plots.requests.write(PlotRequest::Show {
                    plot: *plot,
                    quantity: quantity.clone(),
                });
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Select(i) => plots.selection.body = Some(*i),
            ScriptAction::Compare(solvers) => {
                plots.modes.comparisons.write(StartComparison {
                    solvers: solvers.clone(),
                    run_params: None,
                    lesson_scene: None,
                });
                state.hold_until = frames.0 + 4;
            }
            ScriptAction::Sandbox => {
                plots.modes.next.set(LabMode::Sandbox);
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Microscope => {
                plots
                    .modes
                    .microscope
                    .write(MicroscopeRequest::CatchNextImpact);
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Seek(step) => {
                sim_commands.write(SimCommand::Seek(*step));
            }
            ScriptAction::Play => plots.modes.control.paused = false,
            ScriptAction::Pause => plots.modes.control.paused = true,
            ScriptAction::Steps(n) => {
                sim_commands.write(SimCommand::StepNow(*n));
                state.hold_until = frames.0 + 2;
            }
            ScriptAction::Camera => {
                for c in &cameras {
                    info!(
                        "script camera: target {:?} distance {:?} yaw {:?} pitch {:?} \
                         (run paused: {})",
                        c.target.to_array(),
                        c.distance,
                        c.yaw,
                        c.pitch,
                        plots.modes.control.paused
                    );
                }
            }
        }
    }
}

/// What the plot and selection actions of a script write.
#[derive(bevy::ecs::system::SystemParam)]
struct PlotScript<'w> {
    dump: ResMut<'w, TextDump>,
    requests: MessageWriter<'w, PlotRequest>,
    selection: ResMut<'w, super::view::Selection>,
    lessons: MessageWriter<'w, OpenLesson>,
    modes: ScriptModes<'w>,
}

/// What the script's mode and run actions write.
#[derive(bevy::ecs::system::SystemParam)]
struct ScriptModes<'w> {
    comparisons: MessageWriter<'w, StartComparison>,
    microscope: MessageWriter<'w, MicroscopeRequest>,
    next: ResMut<'w, NextState<LabMode>>,
    control: ResMut<'w, SimControl>,
}

/// Write the lines of this frame's egui output ([`TextDump`]), whole or not at all.
fn dump_lines(dump: &mut TextDump, outputs: &Query<&bevy_egui::EguiFullOutput>) {
    use bevy_egui::egui::{Color32, Pos2, Shape, epaint::ColorMode};
    fn line(color: Color32, points: &[Pos2], out: &mut String) {
        let [r, g, b, a] = color.to_array();
        out.push_str(&format!("{r} {g} {b} {a}\t{}\t", points.len()));
        let xy: Vec<String> = points.iter().map(|p| format!("{} {}", p.x, p.y)).collect();
        out.push_str(&xy.join(" "));
        out.push('\n');
    }
    fn lines(shape: &Shape, out: &mut String) {
        match shape {
            Shape::Vec(shapes) => shapes.iter().for_each(|s| lines(s, out)),
            Shape::Path(p) => {
                if let ColorMode::Solid(c) = p.stroke.color {
                    line(c, &p.points, out);
                }
            }
            Shape::LineSegment { points, stroke } => line(stroke.color, points, out),
            _ => {}
        }
    }
    let Some(path) = dump.1.take() else {
        return;
    };
    let mut out = String::new();
    for output in outputs {
        for clipped in output.0.iter().flat_map(|o| &o.shapes) {
            lines(&clipped.shape, &mut out);
        }
    }
    match crate::output::write_file(&path, out.as_bytes()) {
        Ok(()) => info!("script: lines written to {}", path.display()),
        Err(e) => error!("script: lines {}: {e}", path.display()),
    }
}

/// Write the texts of this frame's egui output ([`TextDump`]), whole or not at all.
fn dump_texts(mut dump: ResMut<TextDump>, outputs: Query<&bevy_egui::EguiFullOutput>) {
    dump_lines(&mut dump, &outputs);
    use bevy_egui::egui::{Rect, Shape};
    fn texts(shape: &Shape, clip: Rect, out: &mut String) {
        match shape {
            Shape::Vec(shapes) => shapes.iter().for_each(|s| texts(s, clip, out)),
            Shape::Text(t) => {
                let r = t.galley.rect.translate(t.pos.to_vec2());
                let text = t
                    .galley
                    .text()
                    .replace('\\', "\\\\")
                    .replace('\t', "\\t")
                    .replace('\n', "\\n");
                out.push_str(&format!(
                    "{} {} {} {}\t{} {} {} {}\t{text}\n",
                    r.min.x,
                    r.min.y,
                    r.max.x,
                    r.max.y,
                    clip.min.x,
                    clip.min.y,
                    clip.max.x,
                    clip.max.y
                ));
            }
            _ => {}
        }
    }
    let Some(path) = dump.0.take() else {
        return;
    };
    let mut out = String::new();
    for output in &outputs {
        for clipped in output.0.iter().flat_map(|o| &o.shapes) {
            texts(&clipped.shape, clipped.clip_rect, &mut out);
        }
    }
    match crate::output::write_file(&path, out.as_bytes()) {
        Ok(()) => info!("script: texts written to {}", path.display()),
        Err(e) => error!("script: texts {}: {e}", path.display()),
    }
}

#[allow(clippy::too_many_arguments)]
fn take_screenshots(
    mut commands: Commands,
    frames: Res<FrameCount>,
    automation: Res<Automation>,
    pending: Res<Pending>,
    ready: Res<PipelinesReady>,
    mut state: ResMut<CaptureState>,
    mut requests: MessageReader<CaptureRequest>,
    mut status: MessageWriter<StatusMessage>,
) {
    if let Some(path) = &automation.screenshot
        && !state.scripted_taken
        && frames.0 >= automation.after_frames
    {
        let since = *state.counted_at.get_or_insert_with(Instant::now);
        let waited_out = since.elapsed() >= PIPELINE_WAIT;
        if ready.0.load(Ordering::Relaxed) || waited_out {
            if waited_out {
                warn!(
                    "screenshot: render pipelines still compiling after {} s; taken as it is",
                    PIPELINE_WAIT.as_secs()
                );
            }
            state.scripted_taken = true;
            spawn_screenshot(&mut commands, path.clone(), &pending);
        }
    }
    for _ in requests
        .read()
        .filter(|r| **r == CaptureRequest::Screenshot)
    {
        state.manual_count += 1;
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let path = PathBuf::from(format!(
            "screenshots/impulse-lab-{stamp}-{}.png",
            state.manual_count
        ));
        status.write((format!("screenshot: {}", path.display()), true).into());
        spawn_screenshot(&mut commands, path, &pending);
    }
}

/// Quit once `--exit-after-frames` frames are done (and the scripted screenshot is
/// written), printing the frame rate of the frames after [`measured_from`] so that a
/// run can serve as a rendering benchmark, and the size the 3D view is drawn at.
#[allow(clippy::too_many_arguments)]
pub(super) fn exit_when_done(
    frames: Res<FrameCount>,
    automation: Res<Automation>,
    pending: Res<Pending>,
    recorder: Res<super::record::Recorder>,
    record_at_start: Res<super::record::RecordAtStart>,
    mut state: ResMut<CaptureState>,
    mut exit: MessageWriter<AppExit>,
    views: Query<(&Camera, Has<super::view::ScaledViewCamera>), With<Camera3d>>,
    dump: Res<TextDump>,
) {
    let Some(n) = automation.exit_after_frames else {
        return;
    };
    if state.clock.is_none() && frames.0 >= measured_from(n) {
        state.clock = Some((frames.0, std::time::Instant::now()));
    }
    // Every screenshot asked for (the scripted one, the script's, F12) is written.
    let screenshot_done = (automation.screenshot.is_none() || state.scripted_taken)
        && pending.0.load(Ordering::SeqCst) == 0;
    // The scripted recording is started, and one with a set duration finished, first.
    let recording_done = record_at_start.0.is_none() && !recorder.has_end();
    // The script has run to its end (a `wait` holds it), and its text dump is written.
    let script_done = state.script_next >= automation.script.0.len() && dump.0.is_none();
    if frames.0 >= n && screenshot_done && recording_done && script_done {
        if !state.reported
            && let Some((from, t0)) = state.clock
        {
            state.reported = true;
            let secs = t0.elapsed().as_secs_f64();
            let measured = frames.0 - from;
            info!(
                "frames {from}..{}: {measured} frames in {secs:.2} s, {:.2} frames/s",
                frames.0,
                f64::from(measured) / secs.max(1e-9)
            );
            info!("{}", view_sizes(&views));
        }
        exit.write(AppExit::Success);
    }
}

/// The size of the 3D view in the window and the size its pixels are drawn at, as the
/// renderer sees them: the orbit camera's viewport and the scaled view camera's target
/// (see `render`'s render scale), e.g. "3D view 980x500, drawn at 490x250".
fn view_sizes(
    views: &Query<(&Camera, Has<super::view::ScaledViewCamera>), With<Camera3d>>,
) -> String {
    let size = |s: Option<UVec2>| s.map_or("?".into(), |s| format!("{}x{}", s.x, s.y));
    let shown = views
        .iter()
        .find(|(c, scaled)| !scaled && c.viewport.is_some())
        .and_then(|(c, _)| c.viewport.as_ref().map(|v| v.physical_size));
    let drawn = views
        .iter()
        .find(|(_, scaled)| *scaled)
        .and_then(|(c, _)| c.physical_target_size())
        .or(shown);
    format!("3D view {}, drawn at {}", size(shown), size(drawn))
}

/// Write a captured picture as an RGBA PNG, whole or not at all ([`crate::output`]).
fn save_png(path: &std::path::Path, image: &bevy::image::Image) -> Result<(), String> {
    let frame = super::record::image_to_frame(image)?;
    let mut out = crate::output::OutputFile::create(path).map_err(|e| e.to_string())?;
    let mut encoder = png::Encoder::new(&mut out, frame.width, frame.height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer
        .write_image_data(&frame.rgba)
        .map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    out.commit().map_err(|e| e.to_string())
}
