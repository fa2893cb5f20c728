//! Recording videos of a simulation: headless (`impulse-lab record`, [`record`]) and from
//! the app (record button, F9; [`LabRecordPlugin`]). Both hand RGBA frames to the
//! encoders of [`crate::video`] on an encoding thread.
//!
//! # Frame pacing
//!
//! Rendering (especially software rendering) is much slower than real time, so a
//! recording never follows the wall clock. It runs in lockstep instead: render the
//! world, read the picture back from the GPU, and only then advance the world by exactly
//! one frame interval `1/fps` of simulated time. Played at `fps`, the video therefore
//! shows the simulation at its real speed, however long each frame took to make.
//!
//! The world advances in whole steps of its `dt`, and `1/fps` is in general not a
//! multiple of `dt` (30 fps with dt = 1/240 s is 8 steps per frame, but 24 fps with
//! dt = 1/100 s is 4⅙). [`FramePacer`] keeps the remainder in an accumulator: after each
//! frame it adds `1/fps` and takes as many whole steps as fit, carrying the rest to the
//! next frame. Frame `k` therefore shows the world at simulated time `n_k · dt` with
//! `k/fps − dt < n_k · dt ≤ k/fps` (to rounding): the error is below one step and never
//! accumulates.
//!
//! Before frame 0 a few warm-up frames are rendered and discarded: the first pictures
//! can be incomplete while pipelines compile and meshes upload. Warm-up ends when two
//! successive pictures of the (not yet moving) world are identical, after at most
//! [`MAX_WARMUP_FRAMES`].

use super::capture::{Automation, exit_when_done};
use super::interaction::{OrbitCamera, Requests, Selection, scene_center};
use super::render::{LabRenderPlugin, scene_extent};
use super::simulation::{LabSimulationPlugin, SimControl, Simulation};
use super::ui::UiState;
use crate::video::{self, Frame, Summary, ThreadedSink, VideoFormat};
use bevy::app::PluginsState;
use bevy::camera::{RenderTarget, Viewport};
use bevy::diagnostic::FrameCount;
use bevy::prelude::*;
use bevy::render::RenderPlugin;
use bevy::render::render_resource::{PollType, TextureFormat};
use bevy::render::renderer::RenderDevice;
use bevy::render::view::screenshot::{CapturedScreenshots, Screenshot, ScreenshotCaptured};
use bevy::window::ExitCondition;
use std::path::{Path, PathBuf};
use std::sync::mpsc::TryRecvError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most warm-up frames rendered before frame 0.
pub const MAX_WARMUP_FRAMES: u32 = 30;

/// Where a screenshot observer leaves the captured picture.
type PictureSlot = Arc<Mutex<Option<Image>>>;

/// Where the 3D view is in the window: origin and size (physical pixels).
type ViewRect = ((u32, u32), (u32, u32));

/// Frames queued for the encoder before rendering waits for it.
const ENCODER_QUEUE: usize = 4;

/// Advances the world by one frame interval per captured frame (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct FramePacer {
    interval: f64,
    accumulator: f64,
}

impl FramePacer {
    pub fn new(fps: f64) -> Self {
        FramePacer {
            interval: 1.0 / fps,
            accumulator: 0.0,
        }
    }

    /// The number of steps of `dt` to take after a frame has been captured.
    pub fn steps_after_frame(&mut self, dt: f64) -> u64 {
        self.accumulator += self.interval;
        // A relative tolerance so that a frame interval that is a whole number of steps
        // (1/30 s = 8 × 1/240 s) takes all of them despite rounding.
        let n = (self.accumulator / dt * (1.0 + 1e-9)).floor().max(0.0);
        self.accumulator -= n * dt;
        n as u64
    }
}

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

    /// The orbit camera of this preset for the scene: the app's target and distance,
    /// the preset's direction.
    pub fn orbit(self, sim: &Simulation) -> OrbitCamera {
        let mut orbit = OrbitCamera::framing(scene_center(sim), scene_extent(sim));
        let (yaw, pitch) = match self {
            CameraPreset::Default => (orbit.yaw, orbit.pitch),
            CameraPreset::Front => (-std::f32::consts::FRAC_PI_2, 0.12),
            CameraPreset::Side => (0.0, 0.12),
            // Not exactly vertical: the view keeps +y up on screen.
            CameraPreset::Top => (-std::f32::consts::FRAC_PI_2, 1.5607),
            CameraPreset::Iso => (-std::f32::consts::FRAC_PI_4, (0.5f32).sqrt().atan()),
        };
        orbit.yaw = yaw;
        orbit.pitch = pitch;
        orbit.home = (orbit.target, orbit.distance, yaw, pitch);
        orbit
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

/// What to record headless.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    pub out: PathBuf,
    pub format: VideoFormat,
    /// Simulated (= playing) time (s).
    pub duration: f64,
    pub fps: f64,
    pub size: (u32, u32),
    pub camera: CameraPreset,
}

impl RecordOptions {
    /// round(duration × fps).
    pub fn frame_count(&self) -> u64 {
        (self.duration * self.fps).round() as u64
    }

    /// Everything that can be checked before rendering: size, rate, duration, output.
    pub fn check(&self) -> Result<(), String> {
        video::check_size(self.format, self.size.0, self.size.1)?;
        video::check_fps(self.fps)?;
        if !(self.duration.is_finite() && self.duration > 0.0) {
            return Err(format!(
                "duration must be a number of seconds above 0, got {}",
                self.duration
            ));
        }
        if self.frame_count() == 0 {
            return Err(format!(
                "{} s at {} fps is less than one frame",
                self.duration, self.fps
            ));
        }
        if self.frame_count() > 1_000_000 {
            return Err(format!(
                "{} frames is too many (at most a million)",
                self.frame_count()
            ));
        }
        Ok(())
    }
}

/// A finished headless recording.
#[derive(Clone, Debug)]
pub struct RecordReport {
    pub summary: Summary,
    pub warmup_frames: u32,
    /// Simulated time at the last frame (s).
    pub last_frame_time: f64,
    pub wall: Duration,
}

/// The picture of a screenshot as a tightly packed RGBA frame.
pub fn image_to_frame(image: &Image) -> Result<Frame, String> {
    let (width, height) = (image.width(), image.height());
    let data = image
        .data
        .as_ref()
        .ok_or("the captured picture has no data")?;
    let mut rgba = match image.texture_descriptor.format {
        TextureFormat::Rgba8UnormSrgb | TextureFormat::Rgba8Unorm => data.clone(),
        TextureFormat::Bgra8UnormSrgb | TextureFormat::Bgra8Unorm => {
            let mut d = data.clone();
            for px in d.chunks_exact_mut(4) {
                px.swap(0, 2);
            }
            d
        }
        _ => image
            .clone()
            .try_into_dynamic()
            .map_err(|e| format!("unsupported picture format: {e}"))?
            .to_rgba8()
            .into_raw(),
    };
    if rgba.len() != 4 * (width as usize) * (height as usize) {
        return Err(format!(
            "picture of {width}x{height} with {} bytes",
            rgba.len()
        ));
    }
    for px in rgba.chunks_exact_mut(4) {
        px[3] = 255;
    }
    Ok(Frame {
        width,
        height,
        rgba,
    })
}

/// The `size` rectangle of `frame` at `origin`, of which only the top-left `visible`
/// part is copied; the rest, and parts outside the frame, are black.
pub fn crop(frame: &Frame, origin: (u32, u32), size: (u32, u32), visible: (u32, u32)) -> Frame {
    let mut out = Frame::filled(size.0, size.1, [0, 0, 0, 255]);
    let w = size
        .0
        .min(visible.0)
        .min(frame.width.saturating_sub(origin.0)) as usize;
    for y in 0..size.1.min(visible.1) {
        let sy = origin.1 + y;
        if sy >= frame.height || w == 0 {
            break;
        }
        let src = 4 * (sy as usize * frame.width as usize + origin.0 as usize);
        let dst = 4 * (y as usize * size.0 as usize);
        out.rgba[dst..dst + 4 * w].copy_from_slice(&frame.rgba[src..src + 4 * w]);
    }
    out
}

/// The renderer without a window: no winit, no display needed (Mesa's lavapipe works).
fn headless_render_app(sim: Simulation) -> App {
    let mut app = App::new();
    app.add_plugins(
        DefaultPlugins
            .set(WindowPlugin {
                primary_window: None,
                exit_condition: ExitCondition::DontExit,
                close_when_requested: false,
                ..default()
            })
            .set(RenderPlugin {
                // Every pipeline is ready for the frame that first needs it.
                synchronous_pipeline_compilation: true,
                ..default()
            })
            .set(AssetPlugin {
                file_path: super::asset_dir(),
                ..default()
            })
            .set(bevy::log::LogPlugin {
                level: bevy::log::Level::WARN,
                ..default()
            })
            // The driver below runs one update per call and waits for the GPU; no
            // window loop, and no render thread running a frame behind.
            .disable::<bevy::winit::WinitPlugin>()
            .disable::<bevy::render::pipelined_rendering::PipelinedRenderingPlugin>(),
    )
    .insert_resource(sim)
    .init_resource::<Selection>()
    .add_plugins((LabSimulationPlugin { paused: true }, LabRenderPlugin));
    app
}

/// Render one picture of the world as it is now and read it back.
///
/// One update renders the frame and submits the copy into a mappable buffer; Bevy maps
/// it on a task thread (removing the rows' padding to 256 bytes) and sends the picture
/// through [`CapturedScreenshots`]. It is taken from there directly instead of waiting
/// for the next update to trigger [`ScreenshotCaptured`], which would render the frame
/// again; the observer stays as a fallback.
fn capture(app: &mut App, target: &Handle<Image>) -> Result<Frame, String> {
    let slot: PictureSlot = Arc::default();
    let sink = slot.clone();
    let entity = app
        .world_mut()
        .spawn(Screenshot::image(target.clone()))
        .observe(move |shot: On<ScreenshotCaptured>| {
            *sink.lock().unwrap() = Some(shot.image.clone());
        })
        .id();
    let receiver = app.world().resource::<CapturedScreenshots>().0.clone();
    let start = Instant::now();
    loop {
        app.update();
        app.world()
            .resource::<RenderDevice>()
            .wgpu_device()
            .poll(PollType::Wait {
                submission_index: None,
                timeout: Some(Duration::from_secs(60)),
            })
            .map_err(|e| format!("GPU: {e}"))?;
        let until = Instant::now() + Duration::from_millis(500);
        loop {
            if let Some(image) = slot.lock().unwrap().take() {
                return image_to_frame(&image);
            }
            match receiver.lock().unwrap().try_recv() {
                Ok((e, image)) if e == entity => {
                    app.world_mut().despawn(entity);
                    return image_to_frame(&image);
                }
                Ok(_) => {}
                Err(TryRecvError::Empty) if Instant::now() < until => {
                    std::thread::sleep(Duration::from_micros(500));
                }
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => {
                    return Err("the renderer stopped".into());
                }
            }
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err("the renderer returned no picture within 120 s".into());
        }
    }
}

/// Record `sim` off-screen into `options.out` (checked beforehand with
/// [`RecordOptions::check`] and [`video::check_output`]). `progress(done, total)` is
/// called after every frame.
pub fn record(
    sim: Simulation,
    options: &RecordOptions,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RecordReport, String> {
    record_until(sim, options, &|_| false, progress).map(|(report, _)| report)
}

/// As [`record`], but the video ends early at the first frame after which `stop` holds
/// (e.g. the angle-of-repose experiment has measured its pile); `options.duration` is
/// then the cap. Returns the simulation as it stands at the last frame.
pub fn record_until(
    sim: Simulation,
    options: &RecordOptions,
    stop: &dyn Fn(&Simulation) -> bool,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<(RecordReport, Simulation), String> {
    let start = Instant::now();
    options.check()?;
    let (width, height) = options.size;
    let frames = options.frame_count();
    let orbit = options.camera.orbit(&sim);
    let mut app = headless_render_app(sim);
    // As Bevy's schedule runner does: wait for the renderer to initialise.
    let ready_by = Instant::now() + Duration::from_secs(120);
    while app.plugins_state() == PluginsState::Adding {
        if Instant::now() > ready_by {
            return Err("the renderer did not start within 120 s".into());
        }
        bevy::tasks::tick_global_task_pools_on_main_thread();
        std::thread::sleep(Duration::from_millis(1));
    }
    app.finish();
    app.cleanup();

    let target = Image::new_target_texture(width, height, TextureFormat::Rgba8UnormSrgb, None);
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(target);
    app.world_mut().spawn((
        Camera3d::default(),
        RenderTarget::from(target.clone()),
        orbit.transform(),
        orbit,
    ));

    // Warm-up (see the module doc).
    let mut previous = capture(&mut app, &target)?;
    let mut warmup = 1;
    while warmup < MAX_WARMUP_FRAMES {
        let next = capture(&mut app, &target)?;
        warmup += 1;
        let same = next == previous;
        previous = next;
        if same && warmup >= 3 {
            break;
        }
    }

    let sink = video::create_sink(options.format, &options.out, width, height, options.fps)
        .map_err(|e| e.to_string())?;
    let mut sink = ThreadedSink::spawn(sink, ENCODER_QUEUE);
    let mut pacer = FramePacer::new(options.fps);
    let mut last_frame_time = 0.0;
    for k in 0..frames {
        let frame = if k == 0 {
            previous.clone()
        } else {
            capture(&mut app, &target)?
        };
        last_frame_time = app.world().resource::<Simulation>().world.time;
        sink.push(frame).map_err(|e| e.to_string())?;
        progress(k + 1, frames);
        if stop(app.world().resource::<Simulation>()) {
            break;
        }
        if k + 1 < frames {
            let mut sim = app.world_mut().resource_mut::<Simulation>();
            let steps = pacer.steps_after_frame(sim.world.dt);
            for _ in 0..steps {
                sim.step()?;
            }
        }
    }
    let summary = sink.finish().map_err(|e| e.to_string())?;
    let sim = app
        .world_mut()
        .remove_resource::<Simulation>()
        .ok_or("the recording lost its simulation")?;
    Ok((
        RecordReport {
            summary,
            warmup_frames: warmup,
            last_frame_time,
            wall: start.elapsed(),
        },
        sim,
    ))
}

/// The frame rates the app offers.
pub const APP_FRAME_RATES: [u32; 4] = [15, 24, 30, 60];

/// The app's recorder: settings, and the recording in progress.
#[derive(Resource)]
pub struct Recorder {
    /// Frames per second of video (one of [`APP_FRAME_RATES`]).
    pub fps: u32,
    /// Record the whole window (with the panels) instead of the 3D view.
    pub whole_window: bool,
    /// Where the next recording goes; empty: `recordings/impulse-lab-<time>.mp4`.
    pub path: Option<PathBuf>,
    active: Option<ActiveRecording>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            fps: 30,
            whole_window: false,
            path: None,
            active: None,
        }
    }
}

struct ActiveRecording {
    sink: ThreadedSink,
    path: PathBuf,
    fps: f64,
    pacer: FramePacer,
    frames: u64,
    /// Frame size, fixed for the recording (the 3D view's size when it started).
    size: (u32, u32),
    whole_window: bool,
    /// Leading pictures still allowed to be dropped as blank (see [`is_blank`]).
    warmup_left: u32,
    /// The picture requested and not yet captured, and where in the window the view
    /// was when it was requested (origin, size).
    waiting: Option<(PictureSlot, ViewRect)>,
}

/// Whether every pixel of a picture is the same: nothing drawn yet (the app's first
/// frames, while pipelines compile). Such frames are dropped before frame 0.
pub fn is_blank(frame: &Frame) -> bool {
    frame
        .rgba
        .chunks_exact(4)
        .all(|p| p[..3] == frame.rgba[..3])
}

/// Leading blank pictures dropped at most (see [`is_blank`]).
const APP_MAX_WARMUP: u32 = 300;

impl Recorder {
    /// Whether a recording is running.
    pub fn is_recording(&self) -> bool {
        self.active.is_some()
    }

    /// Playing time recorded so far (s).
    pub fn recorded_time(&self) -> f64 {
        self.active
            .as_ref()
            .map_or(0.0, |a| a.frames as f64 / a.fps)
    }

    /// The file being written.
    pub fn current_path(&self) -> Option<&Path> {
        self.active.as_ref().map(|a| a.path.as_path())
    }
}

/// In-app recording: an MP4 of the 3D view (or the whole window), with the world
/// advanced one frame interval per captured frame (see the module doc).
pub struct LabRecordPlugin {
    /// Start recording into this file as soon as the panels are laid out (the
    /// automation flag `gui --record FILE`); it stops when the app exits.
    pub record_at_start: Option<PathBuf>,
}

#[derive(Resource, Debug)]
struct RecordAtStart(Option<PathBuf>);

impl Plugin for LabRecordPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<Recorder>()
            .insert_resource(RecordAtStart(self.record_at_start.clone()))
            .add_systems(
                Last,
                (
                    start_scripted_recording,
                    toggle_recording,
                    capture_recording_frame,
                    stop_recording_at_exit,
                )
                    .chain()
                    .before(exit_when_done),
            );
    }
}

fn start_scripted_recording(
    frames: Res<FrameCount>,
    mut at_start: ResMut<RecordAtStart>,
    mut recorder: ResMut<Recorder>,
    mut requests: ResMut<Requests>,
) {
    // By frame 10 the panels have given the 3D camera its viewport.
    if frames.0 >= 10
        && let Some(path) = at_start.0.take()
    {
        recorder.path = Some(path);
        if !recorder.is_recording() {
            requests.record = true;
        }
    }
}

fn default_recording_path() -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("recordings/impulse-lab-{stamp}.mp4"))
}

fn stop(recorder: &mut Recorder, control: &mut SimControl, ui: &mut UiState) {
    control.lockstep = false;
    let Some(active) = recorder.active.take() else {
        return;
    };
    ui.message = Some(match active.sink.finish() {
        Ok(s) => (
            format!(
                "recorded {} frames ({:.1} s, {}x{}) to {}",
                s.frames,
                s.duration,
                s.width,
                s.height,
                s.path.display()
            ),
            true,
        ),
        Err(e) => (format!("recording failed: {e}"), false),
    });
}

fn toggle_recording(
    mut requests: ResMut<Requests>,
    mut recorder: ResMut<Recorder>,
    mut control: ResMut<SimControl>,
    mut ui: ResMut<UiState>,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
    camera: Query<&Camera, With<Camera3d>>,
) {
    if !std::mem::take(&mut requests.record) {
        return;
    }
    if recorder.is_recording() {
        stop(&mut recorder, &mut control, &mut ui);
        return;
    }
    let viewport = view_rect(&window, &camera, recorder.whole_window);
    // H.264 needs even sizes: drop a pixel column or row if needed.
    let size = (viewport.physical_size.x & !1, viewport.physical_size.y & !1);
    let path = recorder.path.clone().unwrap_or_else(default_recording_path);
    let fps = f64::from(recorder.fps);
    let started = (|| {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        video::check_output(&path, VideoFormat::Mp4)?;
        video::create_sink(VideoFormat::Mp4, &path, size.0, size.1, fps).map_err(|e| e.to_string())
    })();
    match started {
        Ok(sink) => {
            control.lockstep = true;
            // No status message here: a longer top bar would move the view while it is
            // recorded (the REC indicator shows the file on hover).
            recorder.active = Some(ActiveRecording {
                sink: ThreadedSink::spawn(sink, ENCODER_QUEUE),
                path,
                fps,
                pacer: FramePacer::new(fps),
                frames: 0,
                size,
                whole_window: recorder.whole_window,
                warmup_left: APP_MAX_WARMUP,
                waiting: None,
            });
        }
        Err(e) => ui.message = Some((format!("cannot record: {e}"), false)),
    }
}

/// The part of the window recorded: the 3D view (the rectangle the panels leave), or the
/// whole window.
fn view_rect(
    window: &Window,
    camera: &Query<&Camera, With<Camera3d>>,
    whole_window: bool,
) -> Viewport {
    let whole = Viewport {
        physical_position: UVec2::ZERO,
        physical_size: UVec2::new(window.physical_width(), window.physical_height()),
        ..default()
    };
    if whole_window {
        return whole;
    }
    camera
        .iter()
        .find_map(|c| c.viewport.clone())
        .unwrap_or(whole)
}

/// Request a picture when the world is where the next frame shows it; when it arrives,
/// encode it and schedule the steps to the next frame. The frame size is fixed when the
/// recording starts; each picture is cut from where the view is when it is requested
/// (the panels can change size while recording), padded with black if the view shrank.
fn capture_recording_frame(
    mut commands: Commands,
    mut recorder: ResMut<Recorder>,
    mut control: ResMut<SimControl>,
    mut ui: ResMut<UiState>,
    sim: Res<Simulation>,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
    camera: Query<&Camera, With<Camera3d>>,
) {
    let Some(active) = recorder.active.as_mut() else {
        return;
    };
    if let Some((slot, view)) = &active.waiting {
        let (origin, visible) = *view;
        let Some(image) = slot.lock().unwrap().take() else {
            return;
        };
        active.waiting = None;
        let frame = image_to_frame(&image).map(|f| crop(&f, origin, active.size, visible));
        if active.frames == 0 && active.warmup_left > 0 && frame.as_ref().is_ok_and(is_blank) {
            // Nothing drawn yet: try again next frame, the world unchanged.
            active.warmup_left -= 1;
            return;
        }
        let pushed = frame.and_then(|f| active.sink.push(f).map_err(|e| e.to_string()));
        if let Err(e) = pushed {
            stop(&mut recorder, &mut control, &mut ui);
            ui.message = Some((format!("recording failed: {e}"), false));
            return;
        }
        active.frames += 1;
        control.pending_steps += active.pacer.steps_after_frame(sim.world.dt);
        return;
    }
    // Paused, or steps still to take: no frame yet.
    if control.paused || control.pending_steps > 0 {
        return;
    }
    let slot: PictureSlot = Arc::default();
    let sink = slot.clone();
    commands
        .spawn(Screenshot::primary_window())
        .observe(move |shot: On<ScreenshotCaptured>| {
            *sink.lock().unwrap() = Some(shot.image.clone());
        });
    let view = view_rect(&window, &camera, active.whole_window);
    let origin = (view.physical_position.x, view.physical_position.y);
    let visible = (view.physical_size.x, view.physical_size.y);
    active.waiting = Some((slot, (origin, visible)));
}

/// Finish the file when the app is about to exit (`--exit-after-frames`, window closed).
fn stop_recording_at_exit(
    frames: Res<FrameCount>,
    automation: Res<Automation>,
    mut exits: MessageReader<AppExit>,
    mut recorder: ResMut<Recorder>,
    mut control: ResMut<SimControl>,
    mut ui: ResMut<UiState>,
) {
    let exiting =
        exits.read().count() > 0 || automation.exit_after_frames.is_some_and(|n| frames.0 >= n);
    if exiting && recorder.is_recording() {
        stop(&mut recorder, &mut control, &mut ui);
        if let Some((msg, _)) = &ui.message {
            info!("{msg}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pacer_takes_whole_steps_and_carries_the_rest() {
        // 30 fps, dt = 1/240: exactly 8 steps per frame.
        let mut p = FramePacer::new(30.0);
        assert!((0..100).all(|_| p.steps_after_frame(1.0 / 240.0) == 8));
        // 24 fps, dt = 1/100: 4⅙ steps per frame → 4,4,4,4,4,5 and the simulated time
        // of frame k stays within one step of k/24.
        let mut p = FramePacer::new(24.0);
        let dt = 0.01;
        let mut steps = 0u64;
        for k in 1..=240u64 {
            steps += p.steps_after_frame(dt);
            let t = steps as f64 * dt;
            let ideal = k as f64 / 24.0;
            assert!(
                t <= ideal + 1e-12 && ideal - t < dt,
                "frame {k}: {t} vs {ideal}"
            );
        }
        assert_eq!(steps, 1000);
    }

    #[test]
    fn crop_pads_outside() {
        let mut f = Frame::filled(4, 3, [10, 20, 30, 255]);
        f.rgba[4 * 5..4 * 6].copy_from_slice(&[1, 2, 3, 255]); // (1, 1)
        let c = crop(&f, (1, 1), (4, 4), (4, 4));
        assert_eq!(&c.rgba[..4], &[1, 2, 3, 255]);
        assert_eq!(&c.rgba[4..8], &[10, 20, 30, 255]);
        assert_eq!(&c.rgba[12..16], &[0, 0, 0, 255]); // x = 4 is outside
        assert_eq!(&c.rgba[4 * 12..4 * 13], &[0, 0, 0, 255]); // y = 4 is outside
        // Only the visible part of the view is copied.
        let c = crop(&f, (0, 0), (4, 3), (2, 3));
        assert_eq!(&c.rgba[4..8], &[10, 20, 30, 255]);
        assert_eq!(&c.rgba[8..12], &[0, 0, 0, 255]);
    }

    #[test]
    fn presets_parse() {
        for p in CameraPreset::ALL {
            assert_eq!(p.name().parse::<CameraPreset>(), Ok(p));
        }
        assert!(
            "fisheye"
                .parse::<CameraPreset>()
                .unwrap_err()
                .contains("fisheye")
        );
    }
}
