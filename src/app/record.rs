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

use super::interaction::{OrbitCamera, scene_center, scene_spheres};
use super::launch::{Automation, asset_dir};
use super::messages::{CaptureRequest, SimCommand, StatusMessage};
use super::render::{LabRenderPlugin, RenderQuality, RenderSettings, scaled_size, scene_extent};
use super::sets::ExitSystems;
use super::simulation::{LabSimulationPlugin, SimControl, Simulation};
use super::view::Selection;
pub use super::view::{CameraPreset, RecordCamera, RecordingView};
use crate::video::{self, Frame, Summary, ThreadedSink, VideoFormat};
use bevy::app::PluginsState;
use bevy::camera::RenderTarget;
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

impl CameraPreset {
    /// The orbit camera of this preset for the scene, in a view of width/height
    /// `aspect`: the preset's direction, and the target and distance at which every body
    /// and container is in view, as the app frames a scene it opens
    /// ([`scene_spheres`], [`OrbitCamera::fit_spheres`]).
    pub fn orbit(self, sim: &Simulation, aspect: f32) -> OrbitCamera {
        let home = OrbitCamera::framing(scene_center(sim), scene_extent(sim));
        let (yaw, pitch) = self.direction().unwrap_or((home.yaw, home.pitch));
        let fov = bevy::camera::PerspectiveProjection::default().fov;
        OrbitCamera::fit_spheres(&scene_spheres(&sim.world), fov, aspect, yaw, pitch)
    }
}

/// The most warm-up frames rendered before frame 0.
pub const MAX_WARMUP_FRAMES: u32 = 30;

/// Where a screenshot observer leaves the captured picture.
type PictureSlot = Arc<Mutex<Option<Image>>>;

/// Frames queued for the encoder before rendering waits for it.
const ENCODER_QUEUE: usize = 4;

/// Whether every pixel of a picture is the same: nothing drawn yet (the app's first
/// frames, while pipelines compile). Such frames are dropped before frame 0.
pub fn is_blank(frame: &Frame) -> bool {
    frame
        .rgba
        .chunks_exact(4)
        .all(|p| p[..3] == frame.rgba[..3])
}

/// Warm-up pictures taken at most before the app's frame 0.
const APP_MAX_WARMUP: u32 = 300;

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
    /// Render quality; `None` chooses from the adapter (fast on a software one).
    pub quality: Option<RenderQuality>,
    /// Render scale (per axis): the picture is rendered at this fraction of `size` and
    /// stretched to it ([`Frame::stretched`]); `None`: the quality's default.
    pub render_scale: Option<f32>,
    /// Draw the caption ([`caption_lines`]) on every frame.
    pub caption: bool,
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
    /// Wall-clock time spent rendering and reading back the recorded frames (not the
    /// warm-up, the stepping or the encoding, which overlaps on its own thread).
    pub render: Duration,
    /// Wall-clock time spent stepping the world between frames.
    pub physics: Duration,
    /// Wall-clock time from frame 0 (the last warm-up picture) to the finished file:
    /// frames 1.. rendered, stepped to and encoded.
    pub after_warmup: Duration,
    /// The size the renderer drew the pictures at (that of the pictures read back),
    /// before they were stretched to the frame size.
    pub rendered: (u32, u32),
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
fn headless_render_app(sim: Simulation, quality: Option<RenderQuality>, scale: Option<f32>) -> App {
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
                file_path: asset_dir(),
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
    .add_plugins((
        LabSimulationPlugin { paused: true },
        LabRenderPlugin { quality, scale },
    ));
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
    let orbit = options
        .camera
        .orbit(&sim, width as f32 / height.max(1) as f32);
    let mut app = headless_render_app(sim, options.quality, options.render_scale);
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
    // One update without a camera chooses the quality from the adapter, and with it the
    // render scale.
    app.update();
    let scale = app.world().resource::<RenderSettings>().render_scale();
    let (rw, rh) = scaled_size(width, height, scale);

    let target = Image::new_target_texture(rw, rh, TextureFormat::Rgba8UnormSrgb, None);
    let target = app.world_mut().resource_mut::<Assets<Image>>().add(target);
    app.world_mut().spawn((
        Camera3d::default(),
        RenderTarget::from(target.clone()),
        orbit.transform(),
        orbit,
    ));

    // Warm-up (see the module doc).
    let mut previous = capture(&mut app, &target)?;
    let rendered = (previous.width, previous.height);
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
    let (mut render, mut physics) = (Duration::ZERO, Duration::ZERO);
    let frame_zero = Instant::now();
    for k in 0..frames {
        let started = Instant::now();
        let mut frame = if k == 0 {
            previous.stretched(width, height)
        } else {
            capture(&mut app, &target)?.stretched(width, height)
        };
        if k > 0 {
            render += started.elapsed();
        }
        if options.caption {
            video::draw_caption(
                &mut frame,
                &caption_lines(app.world().resource::<Simulation>()),
            )?;
        }
        last_frame_time = app.world().resource::<Simulation>().world.time;
        sink.push(frame).map_err(|e| e.to_string())?;
        progress(k + 1, frames);
        if stop(app.world().resource::<Simulation>()) {
            break;
        }
        if k + 1 < frames {
            let started = Instant::now();
            let mut sim = app.world_mut().resource_mut::<Simulation>();
            let steps = pacer.steps_after_frame(sim.world.dt);
            for _ in 0..steps {
                sim.step()?;
            }
            physics += started.elapsed();
        }
    }
    let summary = sink.finish().map_err(|e| e.to_string())?;
    let after_warmup = frame_zero.elapsed();
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
            render,
            physics,
            after_warmup,
            rendered,
        },
        sim,
    ))
}

/// The frame rates the app offers.
pub const APP_FRAME_RATES: [u32; 4] = [15, 24, 30, 60];

/// The frame sizes the app offers (the 3D view is rendered at this size off-screen,
/// whatever the window's layout).
pub const APP_FRAME_SIZES: [(u32, u32); 4] = [(640, 360), (1280, 720), (1920, 1080), (1080, 1080)];

/// What the app records (`gui --record-size/--record-fps/--record-duration/--caption`,
/// and the capture panel).
#[derive(Clone, Debug, PartialEq)]
pub struct AppRecordSettings {
    /// Frames per second of video.
    pub fps: u32,
    /// Frame size in pixels (even: H.264).
    pub size: (u32, u32),
    /// Stop after this much video (s); `None`: until stopped (F9, exit).
    pub duration: Option<f64>,
    /// Draw the caption (time, method, e, μ, λ, repose phase) on every frame.
    pub caption: bool,
}

impl Default for AppRecordSettings {
    fn default() -> Self {
        AppRecordSettings {
            fps: 30,
            size: (1280, 720),
            duration: None,
            caption: false,
        }
    }
}

impl AppRecordSettings {
    /// Size, rate and duration are valid for an MP4 of at least one frame.
    pub fn check(&self) -> Result<(), String> {
        video::check_size(VideoFormat::Mp4, self.size.0, self.size.1)?;
        video::check_fps(f64::from(self.fps))?;
        if let Some(d) = self.duration
            && !(d.is_finite() && d * f64::from(self.fps) >= 0.5)
        {
            return Err(format!(
                "recording duration must be at least one frame (1/{} s), got {d}",
                self.fps
            ));
        }
        Ok(())
    }
}

/// The caption of a frame: simulated time, method and the parameters that set the
/// collision outcome (e and μ; λ for ETM, the only method that uses it), and the phase
/// of the angle-of-repose experiment when one is running.
pub fn caption_lines(sim: &Simulation) -> Vec<String> {
    let w = &sim.world;
    let p = &w.params;
    let kind = w.solver_kind();
    let mut first = format!(
        "t = {:.3} s   {}   e = {:.2}   μ = {:.2}",
        w.time,
        kind.name().to_uppercase(),
        p.restitution,
        p.friction
    );
    if kind == crate::dynamics::solver::SolverKind::Etm {
        first.push_str(&format!("   λ = {:.0}", p.lambda));
    }
    let mut lines = vec![first];
    if let Some(r) = &sim.repose {
        let mut line = format!(
            "angle of repose: {} ({:.2} s)",
            r.phase().name(),
            r.phase_time(w)
        );
        if let Some(m) = &sim.repose_measurement
            && r.phase() == crate::repose::Phase::Done
            && m.angle_deg.is_finite()
        {
            line.push_str(&format!(
                ", angle {:.1}° ± {:.1}°",
                m.angle_deg, m.error_deg
            ));
        }
        lines.push(line);
    }
    lines
}

/// The app's recorder: settings, and the recording in progress.
#[derive(Resource)]
pub struct Recorder {
    /// Frames per second of video (one of [`APP_FRAME_RATES`]).
    pub fps: u32,
    /// Record the whole window (with the panels) instead of the 3D view.
    pub whole_window: bool,
    /// Where the next recording goes; empty: `recordings/impulse-lab-<time>.mp4`.
    pub path: Option<PathBuf>,
    /// Size, duration and caption of the next recording (its `fps` is the field above).
    pub settings: AppRecordSettings,
    active: Option<ActiveRecording>,
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder {
            fps: 30,
            whole_window: false,
            path: None,
            settings: AppRecordSettings::default(),
            active: None,
        }
    }
}

/// Where a recording's pictures come from.
enum Source {
    /// The 3D view rendered off-screen at the frame size by a [`RecordCamera`].
    View {
        target: Handle<Image>,
        camera: Entity,
    },
    /// The window, panels included (cut to the frame size fixed at the start).
    Window,
}

struct ActiveRecording {
    sink: ThreadedSink,
    path: PathBuf,
    fps: f64,
    pacer: FramePacer,
    frames: u64,
    /// Stop after this many frames.
    total: Option<u64>,
    size: (u32, u32),
    source: Source,
    caption: bool,
    /// Warm-up pictures taken so far and the last one (see the module doc); `None` once
    /// frame 0 is recorded.
    warmup: Option<(u32, Option<Frame>)>,
    /// Warm-up: the picture requested and not yet captured, and the app frames waited
    /// for it.
    waiting: Option<(PictureSlot, u32)>,
    /// After warm-up: the pictures requested and not yet encoded, oldest first, each
    /// with the app frames waited for it and its caption (see
    /// [`capture_recording_frame`]).
    in_flight: std::collections::VecDeque<(PictureSlot, u32, Vec<String>)>,
    /// When frame 0 (the last warm-up picture) was encoded.
    frame_zero: Option<Instant>,
    /// App frames to let pass before the first request: the renderer skips a picture of
    /// a target image it has not uploaded yet.
    delay: u32,
}

/// App frames a requested picture may take before it is requested again (the renderer
/// drops a request it cannot serve, e.g. while the target is being created).
const PICTURE_PATIENCE: u32 = 60;

impl Recorder {
    /// Whether a recording is running.
    pub fn is_recording(&self) -> bool {
        self.active.is_some()
    }

    /// Whether the running recording stops by itself after a set duration (the app's
    /// `--exit-after-frames` then waits for it).
    pub fn has_end(&self) -> bool {
        self.active.as_ref().is_some_and(|a| a.total.is_some())
    }

    /// Playing time recorded so far (s): frames recorded / fps.
    pub fn recorded_time(&self) -> f64 {
        self.active
            .as_ref()
            .map_or(0.0, |a| a.frames as f64 / a.fps)
    }

    /// The running recording's frames: encoded so far, the total if it has a set
    /// duration, and the rate since frame 0 (frames/s; `None` during warm-up).
    pub fn frames(&self) -> Option<(u64, Option<u64>, Option<f64>)> {
        let a = self.active.as_ref()?;
        let rate = a.frame_zero.and_then(|t| {
            let secs = t.elapsed().as_secs_f64();
            (a.frames > 1 && secs > 0.0).then(|| (a.frames - 1) as f64 / secs)
        });
        Some((a.frames, a.total, rate))
    }

    /// The file being written.
    pub fn current_path(&self) -> Option<&Path> {
        self.active.as_ref().map(|a| a.path.as_path())
    }
}

/// The recording controls of the capture panel: frame size, duration, caption.
pub fn recording_options_ui(ui: &mut bevy_egui::egui::Ui, recorder: &mut Recorder) {
    use bevy_egui::egui;
    let s = &mut recorder.settings;
    ui.horizontal(|ui| {
        ui.label("size");
        egui::ComboBox::from_id_salt("record_size")
            .selected_text(format!("{}×{}", s.size.0, s.size.1))
            .show_ui(ui, |ui| {
                for size in APP_FRAME_SIZES {
                    ui.selectable_value(&mut s.size, size, format!("{}×{}", size.0, size.1));
                }
            })
            .response
            .on_hover_text(
                "The 3D view is rendered off-screen at this size, whatever the panels leave",
            );
        let mut limited = s.duration.is_some();
        ui.checkbox(&mut limited, "stop after");
        let mut secs = s.duration.unwrap_or(10.0);
        ui.add_enabled(
            limited,
            egui::DragValue::new(&mut secs)
                .range(0.1..=3600.0)
                .speed(0.5)
                .suffix(" s"),
        );
        s.duration = limited.then_some(secs);
    });
    ui.checkbox(&mut s.caption, "caption")
        .on_hover_text("Time, method, e, μ, λ and the repose phase on every frame");
}

/// In-app recording: an MP4 of the 3D view rendered off-screen at the recording's size
/// (or of the whole window), with the world advanced one frame interval per captured
/// frame (see the module doc).
pub struct LabRecordPlugin {
    /// Start recording into this file as soon as the panels are laid out (the
    /// automation flag `gui --record FILE`); it stops after its duration, or when the
    /// app exits.
    pub record_at_start: Option<PathBuf>,
    pub settings: AppRecordSettings,
}

/// The scripted recording (`gui --record FILE`) not yet started.
#[derive(Resource, Debug)]
pub(super) struct RecordAtStart(pub(super) Option<PathBuf>);

impl Plugin for LabRecordPlugin {
    fn build(&self, app: &mut App) {
        app.insert_resource(Recorder {
            fps: self.settings.fps,
            settings: self.settings.clone(),
            ..default()
        })
        .insert_resource(RecordAtStart(self.record_at_start.clone()))
        .add_message::<StatusMessage>()
        .add_systems(PreUpdate, hold_world_for_scripted_recording)
        .add_systems(
            PostUpdate,
            follow_main_camera.before(bevy::transform::TransformSystems::Propagate),
        )
        .add_systems(
            Last,
            (
                start_scripted_recording,
                toggle_recording,
                capture_recording_frame,
                stop_recording_at_exit,
            )
                .chain()
                .before(ExitSystems),
        );
    }
}

/// The world waits for the scripted recording (`gui --record`) to start, so that its
/// frame 0 shows the scene's initial state.
fn hold_world_for_scripted_recording(
    at_start: Res<RecordAtStart>,
    mut control: ResMut<SimControl>,
) {
    if at_start.0.is_some() {
        control.lockstep = true;
    }
}

fn start_scripted_recording(
    frames: Res<FrameCount>,
    mut at_start: ResMut<RecordAtStart>,
    mut recorder: ResMut<Recorder>,
    mut requests: MessageWriter<CaptureRequest>,
) {
    // By frame 10 the panels have given the 3D camera its viewport (whole-window
    // recordings need the layout).
    if frames.0 >= 10
        && let Some(path) = at_start.0.take()
    {
        recorder.path = Some(path);
        if !recorder.is_recording() {
            requests.write(CaptureRequest::ToggleRecording);
        }
    }
}

fn default_recording_path() -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    PathBuf::from(format!("recordings/impulse-lab-{stamp}.mp4"))
}

fn stop(
    commands: &mut Commands,
    recorder: &mut Recorder,
    control: &mut SimControl,
    status: &mut MessageWriter<StatusMessage>,
) {
    control.lockstep = false;
    let Some(active) = recorder.active.take() else {
        return;
    };
    commands.insert_resource(RecordingView(None));
    if let Source::View { camera, .. } = active.source {
        commands.entity(camera).despawn();
    }
    let message = match active.sink.finish() {
        Ok(s) => (
            format!(
                "recorded {} frames ({:.1} s, {}x{}) to {}{}",
                s.frames,
                s.duration,
                s.width,
                s.height,
                s.path.display(),
                active.frame_zero.map_or(String::new(), |t| format!(
                    "; after warm-up {:.2} frames/s",
                    s.frames.saturating_sub(1) as f64 / t.elapsed().as_secs_f64().max(1e-9)
                ))
            ),
            true,
        ),
        Err(e) => (format!("recording failed: {e}"), false),
    };
    info!("{}", message.0);
    status.write(message.into());
}

#[allow(clippy::too_many_arguments)]
fn toggle_recording(
    mut commands: Commands,
    mut requests: MessageReader<CaptureRequest>,
    mut recorder: ResMut<Recorder>,
    mut control: ResMut<SimControl>,
    mut status: MessageWriter<StatusMessage>,
    mut images: ResMut<Assets<Image>>,
    window: Single<&Window, With<bevy::window::PrimaryWindow>>,
    main: Query<&Transform, With<OrbitCamera>>,
    render: Res<RenderSettings>,
) {
    let toggles = requests
        .read()
        .filter(|r| **r == CaptureRequest::ToggleRecording)
        .count();
    if toggles % 2 == 0 {
        return;
    }
    if recorder.is_recording() {
        stop(&mut commands, &mut recorder, &mut control, &mut status);
        return;
    }
    let whole_window = recorder.whole_window;
    let settings = recorder.settings.clone();
    // H.264 needs even sizes: drop a pixel column or row of the window if needed.
    let size = if whole_window {
        (window.physical_width() & !1, window.physical_height() & !1)
    } else {
        settings.size
    };
    let path = recorder.path.clone().unwrap_or_else(default_recording_path);
    let fps = f64::from(recorder.fps);
    let total = settings.duration.map(|d| ((d * fps).round() as u64).max(1));
    let started = (|| {
        video::check_size(VideoFormat::Mp4, size.0, size.1)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        video::check_output(&path, VideoFormat::Mp4)?;
        video::create_sink(VideoFormat::Mp4, &path, size.0, size.1, fps).map_err(|e| e.to_string())
    })();
    let sink = match started {
        Ok(sink) => sink,
        Err(e) => {
            status.write((format!("cannot record: {e}"), false).into());
            return;
        }
    };
    let source = if whole_window {
        Source::Window
    } else {
        // At the render scale, stretched to the frame size as `record` does.
        let (w, h) = scaled_size(size.0, size.1, render.render_scale());
        let target = images.add(Image::new_target_texture(
            w,
            h,
            TextureFormat::Rgba8UnormSrgb,
            None,
        ));
        let eye = main.iter().next().copied().unwrap_or_default();
        let camera = commands
            .spawn((
                RecordCamera,
                Camera3d::default(),
                Camera {
                    // Before the window's cameras; it has a target of its own.
                    order: -100,
                    ..default()
                },
                RenderTarget::from(target.clone()),
                eye,
            ))
            .id();
        commands.insert_resource(RecordingView(Some(target.clone())));
        Source::View { target, camera }
    };
    control.lockstep = true;
    // No status message here: a longer top bar would move the view while it is
    // recorded (the REC indicator shows the file on hover).
    recorder.active = Some(ActiveRecording {
        sink: ThreadedSink::spawn(sink, ENCODER_QUEUE),
        path,
        fps,
        pacer: FramePacer::new(fps),
        frames: 0,
        total,
        size,
        source,
        caption: settings.caption,
        warmup: Some((0, None)),
        waiting: None,
        in_flight: Default::default(),
        frame_zero: None,
        delay: 3,
    });
}

/// The recording camera sees what the app's orbit camera sees.
fn follow_main_camera(
    main: Query<&Transform, (With<OrbitCamera>, Without<RecordCamera>)>,
    mut record: Query<&mut Transform, With<RecordCamera>>,
) {
    let Some(eye) = main.iter().next() else {
        return;
    };
    for mut t in &mut record {
        if *t != *eye {
            *t = *eye;
        }
    }
}

/// Pictures requested ahead of the encoder after warm-up: each frame's picture is
/// requested in the frame that shows it, and arrives a few app frames later.
const MAX_IN_FLIGHT: usize = 4;

/// Request a picture when the world is where the next frame shows it, and step the world
/// to the next frame at once; encode the pictures in order as they arrive.
///
/// Warm-up (module doc) goes one picture at a time: pictures of the still world are
/// taken until two agree (off-screen view) or one is not blank (window), as [`record`]
/// does. After it the recording is pipelined like `record`: a picture requested in
/// `Last` is of the state this frame drew (the renderer extracts the world after
/// `Last`), so the world may take the next frame's steps in the next frame
/// ([`SimCommand::StepNow`]: the frame waits for them) while the picture is read
/// back. One video frame per app frame, in order; a picture the renderer never returns
/// stops the recording with an error rather than leave a frame out.
#[allow(clippy::too_many_arguments)]
fn capture_recording_frame(
    mut commands: Commands,
    mut recorder: ResMut<Recorder>,
    mut control: ResMut<SimControl>,
    mut status: MessageWriter<StatusMessage>,
    mut sim_commands: MessageWriter<SimCommand>,
    sim: Res<Simulation>,
) {
    let Some(active) = recorder.active.as_mut() else {
        return;
    };
    if active.warmup.is_some() {
        if let Some((slot, waited)) = &mut active.waiting {
            let Some(image) = slot.lock().unwrap().take() else {
                *waited += 1;
                if *waited > PICTURE_PATIENCE {
                    active.waiting = None;
                }
                return;
            };
            active.waiting = None;
            let frame = match picture_to_frame(active, &image) {
                Ok(f) => f,
                Err(e) => return fail(&mut commands, &mut recorder, &mut control, &mut status, e),
            };
            let Some((taken, previous)) = &mut active.warmup else {
                unreachable!("in warm-up")
            };
            *taken += 1;
            let ready = match active.source {
                Source::View { .. } => *taken >= 3 && previous.as_ref() == Some(&frame),
                Source::Window => !is_blank(&frame),
            };
            if !ready && *taken < APP_MAX_WARMUP {
                *previous = Some(frame);
                return;
            }
            // This picture is frame 0.
            active.warmup = None;
            active.frame_zero = Some(Instant::now());
            match encode(active, frame, &caption_lines(&sim)) {
                Err(e) => return fail(&mut commands, &mut recorder, &mut control, &mut status, e),
                Ok(true) => {
                    return finish(&mut commands, &mut recorder, &mut control, &mut status);
                }
                Ok(false) => {}
            }
            sim_commands.write(SimCommand::StepNow(
                active.pacer.steps_after_frame(sim.world.dt),
            ));
            return;
        }
        if active.delay > 0 {
            active.delay -= 1;
            return;
        }
        active.waiting = Some((request_picture(&mut commands, &active.source), 0));
        return;
    }

    // Encode what has arrived, in order.
    while let Some((slot, waited, _)) = active.in_flight.front_mut() {
        let Some(image) = slot.lock().unwrap().take() else {
            *waited += 1;
            if *waited > PICTURE_PATIENCE {
                let e = format!(
                    "the renderer returned no picture for frame {} within {PICTURE_PATIENCE} app frames",
                    active.frames
                );
                return fail(&mut commands, &mut recorder, &mut control, &mut status, e);
            }
            break;
        };
        let (_, _, caption) = active.in_flight.pop_front().unwrap();
        let frame = match picture_to_frame(active, &image) {
            Ok(f) => f,
            Err(e) => return fail(&mut commands, &mut recorder, &mut control, &mut status, e),
        };
        match encode(active, frame, &caption) {
            Err(e) => return fail(&mut commands, &mut recorder, &mut control, &mut status, e),
            Ok(true) => {
                return finish(&mut commands, &mut recorder, &mut control, &mut status);
            }
            Ok(false) => {}
        }
    }
    // The next picture: the world is at the next frame (its steps were taken this
    // frame), unless the run is paused (the recording pauses with it).
    let requested = active.frames + active.in_flight.len() as u64;
    let more = active.total.is_none_or(|n| requested < n);
    if more && !control.paused && active.in_flight.len() < MAX_IN_FLIGHT {
        let slot = request_picture(&mut commands, &active.source);
        let caption = if active.caption {
            caption_lines(&sim)
        } else {
            Vec::new()
        };
        active.in_flight.push_back((slot, 0, caption));
        sim_commands.write(SimCommand::StepNow(
            active.pacer.steps_after_frame(sim.world.dt),
        ));
    }
}

/// Ask the renderer for a picture of what this frame draws.
fn request_picture(commands: &mut Commands, source: &Source) -> PictureSlot {
    let slot: PictureSlot = Arc::default();
    let sink = slot.clone();
    let shot = match source {
        Source::View { target, .. } => Screenshot::image(target.clone()),
        Source::Window => Screenshot::primary_window(),
    };
    commands
        .spawn(shot)
        .observe(move |shot: On<ScreenshotCaptured>| {
            *sink.lock().unwrap() = Some(shot.image.clone());
        });
    slot
}

/// A captured picture as a video frame of the recording's size.
fn picture_to_frame(active: &ActiveRecording, image: &Image) -> Result<Frame, String> {
    let size = active.size;
    image_to_frame(image).map(|f| match active.source {
        Source::View { .. } => f.stretched(size.0, size.1),
        Source::Window if (f.width, f.height) == size => f,
        Source::Window => crop(&f, (0, 0), size, size),
    })
}

/// Caption (if asked for: the lines of the state the picture shows) and hand a frame to
/// the encoder; `true` when that was the recording's last frame.
fn encode(
    active: &mut ActiveRecording,
    mut frame: Frame,
    caption: &[String],
) -> Result<bool, String> {
    if active.caption
        && let Err(e) = video::draw_caption(&mut frame, caption)
    {
        warn!("caption: {e}");
    }
    active.sink.push(frame).map_err(|e| e.to_string())?;
    active.frames += 1;
    Ok(active.total.is_some_and(|n| active.frames >= n))
}

/// A recording with a set duration is done: the file is finished at once (as F9 would).
fn finish(
    commands: &mut Commands,
    recorder: &mut Recorder,
    control: &mut SimControl,
    status: &mut MessageWriter<StatusMessage>,
) {
    stop(commands, recorder, control, status);
}

fn fail(
    commands: &mut Commands,
    recorder: &mut Recorder,
    control: &mut SimControl,
    status: &mut MessageWriter<StatusMessage>,
    e: String,
) {
    stop(commands, recorder, control, status);
    status.write((format!("recording failed: {e}"), false).into());
}

/// Finish the file when the app is about to exit (`--exit-after-frames`, window closed).
/// A recording with a set duration holds `--exit-after-frames` back until it is done
/// (see `capture::exit_when_done`); a window closed still finishes it early.
fn stop_recording_at_exit(
    mut commands: Commands,
    mut exits: MessageReader<AppExit>,
    mut recorder: ResMut<Recorder>,
    mut control: ResMut<SimControl>,
    mut status: MessageWriter<StatusMessage>,
    frames: Res<FrameCount>,
    automation: Res<Automation>,
) {
    let exiting = exits.read().count() > 0
        || (automation.exit_after_frames.is_some_and(|n| frames.0 >= n) && !recorder.has_end());
    if exiting && recorder.is_recording() {
        stop(&mut commands, &mut recorder, &mut control, &mut status);
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
