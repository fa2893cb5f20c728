//! Command-line interface: argument parsing and the commands `run`, `validate`, `scenes`,
//! `impact`, `lessons`, `lesson`, `repose` and `merge`, plus, with the `app` feature,
//! `gui` (the default command) and `record`. Everything physical is delegated to the
//! library core.

mod repose;

use clap::{Args, Parser, Subcommand};
use impulse_lab::World;
use impulse_lab::dynamics::rotation::RotationIntegrator;
use impulse_lab::dynamics::solver::mdp::FrictionLaw;
use impulse_lab::dynamics::solver::{ContactFallback, SolverKind, TraceRow};
use impulse_lab::energy::EnergySample;
use impulse_lab::lesson;
use impulse_lab::microscope;
use impulse_lab::output::{self, OutputFile};
use impulse_lab::scene::{self, Scene};
use impulse_lab::settle::{
    KE_RATIO_SETTLED, PENETRATION_RATIO_MAX, SettleMonitor, max_penetration_ratio,
};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// The scene `cargo run` opens when no command is given (in the app, or headless when
/// built without the `app` feature).
pub const DEFAULT_SCENE: &str = "pour_mixed";

#[derive(Parser)]
#[command(
    name = "impulse-lab",
    version,
    about = "Rigid-body collision methods sandbox (ETM, SQM, SMM, jolt, CCP, MDP)"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Most bodies a scene may hold (explicit plus generated); larger scenes are refused
    /// before anything is built. A scene needing more memory than the machine has
    /// available is refused whatever this says.
    #[arg(long, global = true, value_name = "N", default_value_t = scene::MAX_BODIES)]
    max_bodies: usize,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scene headless and write its energy trace and final state.
    #[command(after_help = impulse_lab::dynamics::solver::param_spec::help_table())]
    Run(Box<RunArgs>),
    /// Check a scene file and report every problem (up to 20), each with file, line,
    /// column and field.
    Validate {
        /// Scene file, or the name of a bundled scene (see `impulse-lab scenes`).
        scene: String,
    },
    /// List the bundled scenes with a one-line description.
    Scenes,
    /// Collision microscope: step a scene until the next impact (of one body, if given)
    /// and print its contacts and summary; optionally write its iterations as CSV.
    Impact(ImpactArgs),
    /// List the lessons (`lessons/*.ron`) with their titles.
    Lessons,
    /// Run a lesson's check headless: print the measured figures against the expected
    /// ones (exit 1 if the check fails).
    Lesson {
        /// Lesson file, or the name of a bundled lesson (see `impulse-lab lessons`).
        lesson: String,
    },
    /// Angle-of-repose sweep (paper 000 §7.5): pack, remove the wall, settle, measure;
    /// one CSV row per (μ, seed).
    Repose(Box<repose::ReposeArgs>),
    /// Join shard CSVs of `repose --shard K/N` in the sweep's canonical order.
    Merge(repose::MergeArgs),
    /// Fidelity matrix: every method (or the chosen ones) against momentum conservation,
    /// elastic energy, static and sliding friction, sliding into rolling and rebound
    /// heights; prints measured, expected and pass/fail (exit 1 if a row fails).
    Verify {
        /// Methods to check (default: all), e.g. --solver sqm,ccp.
        #[arg(long, value_delimiter = ',')]
        solver: Vec<SolverKind>,
    },
    /// Open the desktop app (the default command).
    #[cfg(feature = "app")]
    Gui(GuiArgs),
    /// Render a scene off-screen into a video (MP4, GIF or PNG frames) that plays at
    /// simulated real speed. Needs no display (software Vulkan works).
    #[cfg(feature = "app")]
    Record(Box<RecordArgs>),
}

#[cfg(feature = "app")]
#[derive(Args, Default)]
struct GuiArgs {
    /// Scene file, or the name of a bundled scene (default: pour_mixed).
    scene: Option<String>,
    /// Collision method: etm, sqm, smm, jolt, ccp or mdp (default: the scene's).
    #[arg(long)]
    solver: Option<SolverKind>,
    /// Start paused.
    #[arg(long)]
    paused: bool,
    /// Window size in logical pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x800", value_parser = parse_size)]
    size: (u32, u32),
    /// Write a PNG screenshot of the window here ...
    #[arg(long)]
    screenshot: Option<PathBuf>,
    /// ... once this many frames have been rendered.
    #[arg(long, default_value_t = 300, requires = "screenshot")]
    after_frames: u32,
    /// Quit after this many frames (after the screenshot, if one was asked for).
    #[arg(long)]
    exit_after_frames: Option<u32>,
    /// Record an MP4 of the 3D view into this file from the start (F9 stops it; it is
    /// finished when the app exits).
    #[arg(long)]
    record: Option<PathBuf>,
    /// Start the angle-of-repose experiment at once (scenes with a removable wall).
    #[arg(long)]
    repose: bool,
    /// With --repose: the protocol, wall, tilt, cylinder or drum (as `repose
    /// --protocol`; default wall)
    #[arg(long, value_name = "PROTOCOL", requires = "repose")]
    protocol: Option<String>,
    /// Open this lesson (a name from `impulse-lab lessons`, or a file); its scene
    /// replaces SCENE.
    #[arg(long)]
    lesson: Option<String>,
    /// Start in presentation mode (large text, developer panels hidden; F11 or P).
    #[arg(long)]
    present: bool,
    /// Projector profile: light theme, larger text and lines, narrow side panel.
    #[arg(long)]
    projector: bool,
    /// Colour the bodies by: body, speed or energy (kinetic).
    #[arg(long, value_name = "MODE", value_parser = parse_color_mode)]
    color_by: Option<impulse_lab::app::render::ColorMode>,
    /// Fixed colour range MIN,MAX (m/s for speed, J for energy; default: from the scene).
    #[arg(long, value_name = "MIN,MAX", value_parser = parse_range)]
    color_range: Option<[f64; 2]>,
    /// Draw each body's index in the view.
    #[arg(long)]
    labels: bool,
    /// Open the keys-and-mouse help overlay (F1) at startup.
    #[arg(long)]
    help_overlay: bool,
    /// Start in compare mode with these 2-3 solvers, e.g. etm,sqm,smm.
    #[arg(long, value_delimiter = ',')]
    compare: Vec<SolverKind>,
    /// With --compare: one viewport per run, side by side (default: overlay).
    #[arg(long)]
    split: bool,
    /// Catch the next impact with the collision microscope at startup.
    #[arg(long)]
    microscope: bool,
    /// Take N steps at startup (with --paused the run then stays paused).
    #[arg(long, value_name = "N")]
    steps: Option<u64>,
    /// Frame every body once the startup steps are done (as the `f` key does).
    #[arg(long)]
    frame_all: bool,
    /// Render quality: fast (no shadows, no anti-aliasing, low-poly meshes, batched
    /// bodies) or full (default: fast on a software renderer, full on a GPU; F8 switches).
    #[arg(long)]
    quality: Option<impulse_lab::app::render::RenderQuality>,
    /// Render scale of the 3D view, 0.25 to 1 per axis: it is drawn at this fraction of
    /// its size and stretched to fit (default: 0.5 at fast quality, 1 at full). Also
    /// applies to recordings.
    #[arg(long, value_name = "S", value_parser = impulse_lab::app::render::parse_render_scale)]
    render_scale: Option<f32>,
    /// Frame size of recordings (F9, --record), WIDTHxHEIGHT, even; the 3D view is
    /// rendered off-screen at this size.
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    record_size: (u32, u32),
    /// Frames per second of recordings.
    #[arg(long, default_value_t = 30)]
    record_fps: u32,
    /// Stop recordings after this many seconds of video (then --exit-after-frames waits
    /// for the recording to finish).
    #[arg(long, value_name = "SECONDS")]
    record_duration: Option<f64>,
    /// Draw a caption (time, method, e, μ, λ, repose phase) on recorded frames.
    #[arg(long)]
    caption: bool,
    /// Scripted actions for tests: FRAME:ACTION items, comma-separated (quality,
    /// scene=NAME, solver=KIND, reset, shot=PATH, panic, drag=REGION, wheel=REGION, camera,
    /// lesson=NAME, check, wait, texts=PATH);
    /// see `app::launch::parse_script`.
    #[arg(long, hide = true, value_parser = impulse_lab::app::launch::parse_script)]
    script: Option<impulse_lab::app::launch::Script>,
}

#[cfg(feature = "app")]
#[derive(Args)]
struct RecordArgs {
    /// Scene file, or the name of a bundled scene (see `impulse-lab scenes`).
    scene: String,
    /// Output: FILE.mp4, FILE.gif, or a directory for PNG frames (frame_00000.png, ...).
    #[arg(long)]
    out: PathBuf,
    /// mp4, gif or png (default: from the extension of --out; none means png).
    #[arg(long)]
    format: Option<String>,
    /// Simulated time to record (s); the video lasts as long.
    #[arg(long, default_value_t = 5.0, allow_negative_numbers = true)]
    duration: f64,
    /// Frames per second of video; the world advances 1/fps of simulated time per frame.
    #[arg(long, default_value_t = 30.0, allow_negative_numbers = true)]
    fps: f64,
    /// Frame size in pixels, WIDTHxHEIGHT (even for MP4).
    #[arg(long, default_value = "1280x720", value_parser = parse_size)]
    size: (u32, u32),
    /// Collision method: etm, sqm, smm, jolt, ccp or mdp (default: the scene's).
    #[arg(long)]
    solver: Option<SolverKind>,
    /// Camera: default (the app's framing), front, side, top or iso.
    #[arg(long, default_value = "default")]
    camera: impulse_lab::app::record::CameraPreset,
    /// Render quality: fast (no shadows, no anti-aliasing, low-poly meshes, batched
    /// bodies) or full (default: fast on a software renderer, full on a GPU).
    #[arg(long)]
    quality: Option<impulse_lab::app::render::RenderQuality>,
    /// Render scale, 0.25 to 1 per axis: the 3D view is drawn at this fraction of the
    /// frame size and stretched to it before the caption is drawn (default: 0.5 at fast
    /// quality, 1 at full).
    #[arg(long, value_name = "S", value_parser = impulse_lab::app::render::parse_render_scale)]
    render_scale: Option<f32>,
    /// Draw a caption (time, method, e, μ, λ, repose phase) on every frame.
    #[arg(long)]
    caption: bool,
}

#[cfg(feature = "app")]
fn record(args: RecordArgs) -> Result<(), Failure> {
    use impulse_lab::app::record::{self, RecordOptions};
    use impulse_lab::app::simulation::Simulation;
    use impulse_lab::video::{self, VideoFormat};
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::io::IsTerminal;

    // Everything is checked before any rendering starts.
    let format = match &args.format {
        Some(f) => VideoFormat::parse(f),
        None => VideoFormat::from_path(&args.out),
    }
    .map_err(Failure::invalid)?;
    let options = RecordOptions {
        out: args.out.clone(),
        format,
        duration: args.duration,
        fps: args.fps,
        size: args.size,
        camera: args.camera,
        quality: args.quality,
        render_scale: args.render_scale,
        caption: args.caption,
    };
    options.check().map_err(Failure::invalid)?;
    let scene = load(&args.scene)?;
    let path = scene::resolve_scene(&args.scene);
    let sim = Simulation::from_scene(scene, Some(path), args.solver).map_err(Failure::invalid)?;
    video::check_output(&args.out, format).map_err(Failure::invalid)?;

    let frames = options.frame_count();
    let bar = ProgressBar::new(frames);
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} frames, {per_sec}, {elapsed} ({eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(format!("{} → {}", sim.scene.name, args.out.display()));
    // Bevy panics when it finds no GPU adapter (not even a software one): report that as
    // a failed run, not a crash.
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        record::record(sim, &options, &mut |done, _| bar.set_position(done))
    }))
    .unwrap_or_else(|_| {
        Err("the renderer failed (is a Vulkan driver installed? Mesa's lavapipe works)".into())
    });
    bar.finish_and_clear();
    match result {
        Ok(r) => {
            let s = &r.summary;
            let secs = r.wall.as_secs_f64();
            println!(
                "{}: {} frames of {}x{} ({}), {:.3} s of video at {} fps; simulated t = {:.4} s at the last frame; {} warm-up frames; {:.1} s wall-clock ({:.2} frames/s; after warm-up {:.2} frames/s; rendering {:.2} frames/s, physics {:.1} s; encoding {:.1} frames/s; drawn at {}x{})",
                s.path.display(),
                s.frames,
                s.width,
                s.height,
                s.format,
                s.duration,
                options.fps,
                r.last_frame_time,
                r.warmup_frames,
                secs,
                s.frames as f64 / secs,
                s.frames.saturating_sub(1) as f64 / r.after_warmup.as_secs_f64().max(1e-9),
                // Frame 0 is the last warm-up picture: rendered frames are 1.. .
                (s.frames.saturating_sub(1)) as f64 / r.render.as_secs_f64().max(1e-9),
                r.physics.as_secs_f64(),
                s.frames as f64 / s.encode_time.as_secs_f64().max(1e-9),
                r.rendered.0,
                r.rendered.1,
            );
            Ok(())
        }
        // The encoders write under a temporary name: nothing is left at --out.
        Err(e) => Err(Failure::runtime(format!("recording failed: {e}"))),
    }
}

#[cfg(feature = "app")]
fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let (w, h) = s
        .split_once('x')
        .ok_or_else(|| format!("expected WIDTHxHEIGHT, got '{s}'"))?;
    let parse = |x: &str| {
        x.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| (64..=8192).contains(v))
            .ok_or_else(|| format!("size must be two whole numbers from 64 to 8192, got '{s}'"))
    };
    Ok((parse(w)?, parse(h)?))
}

#[cfg(feature = "app")]
fn parse_color_mode(s: &str) -> Result<impulse_lab::app::render::ColorMode, String> {
    use impulse_lab::app::render::ColorMode;
    match s.trim() {
        "body" => Ok(ColorMode::ByBody),
        "speed" => Ok(ColorMode::BySpeed),
        "energy" => Ok(ColorMode::ByKineticEnergy),
        _ => Err(format!("expected body, speed or energy, got '{s}'")),
    }
}

/// `MIN,MAX` with 0 ≤ MIN < MAX, both finite.
#[cfg(feature = "app")]
fn parse_range(s: &str) -> Result<[f64; 2], String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| format!("expected MIN,MAX, got '{s}'"))?;
    let parse = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("expected two finite numbers ≥ 0, got '{s}'"))
    };
    let (a, b) = (parse(a)?, parse(b)?);
    if a < b {
        Ok([a, b])
    } else {
        Err(format!("MIN must be below MAX, got '{s}'"))
    }
}

#[cfg(feature = "app")]
fn gui(args: GuiArgs) -> Result<(), Failure> {
    use impulse_lab::app::{AppOptions, capture::Automation};
    // Without a display server the windowing library panics: say so instead.
    if cfg!(target_os = "linux")
        && std::env::var_os("DISPLAY").is_none_or(|d| d.is_empty())
        && std::env::var_os("WAYLAND_DISPLAY").is_none_or(|d| d.is_empty())
    {
        return Err(Failure::invalid(
            "no display (neither DISPLAY nor WAYLAND_DISPLAY is set): the app needs a window; `impulse-lab record SCENE --out video.mp4` renders a video without one, and `impulse-lab run SCENE` runs the physics headless",
        ));
    }
    if let Some(path) = &args.screenshot {
        // Fail before opening a window if the screenshot cannot be written.
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| {
            Failure::invalid(format!("{}: cannot write screenshot: {e}", path.display()))
        })?;
        // A probe: the temporary file is removed again.
        create_output(path)?;
    }
    let scene = match &args.lesson {
        Some(name) => {
            let path = impulse_lab::lesson::resolve_lesson(name);
            let lesson = impulse_lab::lesson::load_lesson(&path)
                .map_err(|e| Failure::invalid(e.to_string()))?;
            lesson.scene_path().display().to_string()
        }
        None => args.scene.unwrap_or_else(|| DEFAULT_SCENE.into()),
    };
    if !args.compare.is_empty()
        && !(2..=impulse_lab::compare::MAX_RUNS).contains(&args.compare.len())
    {
        return Err(Failure::invalid(format!(
            "--compare needs 2 to {} solvers, got {}",
            impulse_lab::compare::MAX_RUNS,
            args.compare.len()
        )));
    }
    let loaded = load(&scene)?;
    let protocol = match &args.protocol {
        Some(p) => impulse_lab::repose::Protocol::parse(p).map_err(Failure::invalid)?,
        None => Default::default(),
    };
    if args.repose {
        // Not a scene for the protocol (no removable wall, no drum): say so before any
        // window opens.
        let mut world = loaded
            .build_world()
            .map_err(|e| Failure::invalid(e.to_string()))?;
        let config = impulse_lab::repose::ReposeConfig {
            protocol,
            ..Default::default()
        };
        impulse_lab::repose::ReposeTracker::new(&mut world, config)
            .map_err(|e| Failure::invalid(format!("--repose: {scene}: {e}")))?;
    }
    if let Some(path) = &args.record {
        use impulse_lab::video::{VideoFormat, check_output};
        if VideoFormat::from_path(path) != Ok(VideoFormat::Mp4) {
            return Err(Failure::invalid(format!(
                "{}: the app records MP4 (.mp4)",
                path.display()
            )));
        }
        check_output(path, VideoFormat::Mp4).map_err(Failure::invalid)?;
    }
    let recording = impulse_lab::app::record::AppRecordSettings {
        fps: args.record_fps,
        size: args.record_size,
        duration: args.record_duration,
        caption: args.caption,
    };
    recording.check().map_err(Failure::invalid)?;
    let options = AppOptions {
        scene,
        solver: args.solver,
        paused: args.paused,
        size: args.size,
        automation: Automation {
            screenshot: args.screenshot,
            after_frames: args.after_frames,
            exit_after_frames: args.exit_after_frames,
            script: args.script.unwrap_or_default(),
        },
        record: args.record,
        repose: args.repose.then_some(protocol),
        lesson: args.lesson,
        present: args.present,
        view: impulse_lab::app::ViewOptions {
            projector: args.projector,
            color_mode: args.color_by.unwrap_or_default(),
            color_range: args.color_range,
            labels: args.labels,
            help: args.help_overlay,
            frame_all: args.frame_all,
        },
        compare: args.compare,
        split: args.split,
        microscope: args.microscope,
        steps: args.steps,
        quality: args.quality,
        render_scale: args.render_scale,
        recording,
    };
    impulse_lab::app::run(&options).map_err(Failure::runtime)
}

#[derive(Args)]
struct RunArgs {
    /// Scene file, or the name of a bundled scene (see `impulse-lab scenes`).
    scene: String,
    /// Collision method: etm, sqm, smm, jolt, ccp or mdp (default: the scene's).
    #[arg(long)]
    solver: Option<SolverKind>,
    /// Number of steps to run.
    #[arg(long, conflicts_with = "duration")]
    steps: Option<u64>,
    /// Simulated time to run (s); default: the scene's duration.
    #[arg(long)]
    duration: Option<f64>,
    /// Time step (s).
    #[arg(long)]
    dt: Option<f64>,
    /// Coefficient of restitution e in [0, 1].
    #[arg(long)]
    restitution: Option<f64>,
    /// Friction coefficient μ ≥ 0.
    #[arg(long)]
    friction: Option<f64>,
    /// ETM's λ ≥ 1 (paper 000, eq. 62).
    #[arg(long)]
    lambda: Option<f64>,
    /// Position-projection factor k_p in [0, 1] (paper 001).
    #[arg(long)]
    kp: Option<f64>,
    /// Rotation integrator: `theta:θ` with θ in [0, 1] (paper 004; 0.5 = implicit
    /// midpoint) or `symplectic` (default: the scene's).
    #[arg(long, value_parser = parse_rotation)]
    rotation: Option<RotationIntegrator>,
    /// MDP's impulsive friction law: max-dissipation or coulomb (paper 003).
    #[arg(long)]
    mdp_friction: Option<FrictionLaw>,
    /// MDP's error-reduction factor ε in [0, 1] (paper 003 §3.1).
    #[arg(long)]
    error_reduction: Option<f64>,
    /// Set any solver parameter, as the scene's params would (repeatable; the table
    /// below lists them): e.g. --set rest_velocity=0.1 --set resting_model=Soft.
    #[arg(long = "set", value_name = "FIELD=VALUE")]
    set: Vec<String>,
    /// How the contact pass holds resting contacts: hard (sweeps to convergence, the
    /// papers' model) or soft (Box2D's soft step: two sweeps a step; needs
    /// rest_velocity > 0). Default: the scene's.
    #[arg(long, value_name = "hard|soft")]
    resting_model: Option<impulse_lab::dynamics::solver::RestingModel>,
    /// Write the per-step energy trace (CSV) here. Every output appears only when the
    /// run succeeds; if it fails part way or is stopped with Ctrl-C, the trace so far is
    /// kept as FILE.partial.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write the final state of every body (JSON) here.
    #[arg(long)]
    final_state: Option<PathBuf>,
    /// Write the bodies as a VTK series for ParaView into this directory (created;
    /// an earlier series there is replaced): bodies.pvd, bodies_NNNNNN.vtu per frame,
    /// containers.vtu (see docs/recording.md). It appears only when the run succeeds.
    #[arg(long, value_name = "DIR")]
    vtk_dir: Option<PathBuf>,
    /// A VTK frame every K steps (and the last step); default: the steps of 1/30 s.
    #[arg(long, value_name = "K", requires = "vtk_dir")]
    vtk_every: Option<u64>,
    /// Record the solver's inner iterations during this step (1-based) ...
    #[arg(long, requires = "trace_out")]
    trace_collision: Option<u64>,
    /// ... into this CSV file (one row per iteration: stage, contact, normal velocity,
    /// impulse, elastic, kinetic and total energy).
    #[arg(long, requires = "trace_collision")]
    trace_out: Option<PathBuf>,
    /// Print the settle metrics at the end (kinetic energy / potential-energy range,
    /// deepest penetration / body size, time to settle; see `impulse_lab::settle`).
    #[arg(long)]
    settle: bool,
    /// Disable island sleeping (bodies at rest keep being simulated).
    #[arg(long)]
    no_sleep: bool,
    /// Most work a run may take, in body-steps (steps × bodies; about 1 µs each on one
    /// core): a longer run is refused with its estimate before it starts.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_BODY_STEPS)]
    max_body_steps: u64,
    /// Most rows the energy trace (--out) may get, one per step (about 250 bytes each):
    /// a longer run with --out is refused before it starts.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_TRACE_ROWS)]
    max_trace_rows: u64,
}

/// Default of `run --max-trace-rows`: 10⁷ rows, about 2.5 GB of CSV.
const DEFAULT_MAX_TRACE_ROWS: u64 = 10_000_000;

/// Default of `run --max-body-steps`: 3.6 · 10⁹ body-steps, about an hour.
const DEFAULT_MAX_BODY_STEPS: u64 = 3_600_000_000;

/// Rough cost of one body-step (s), for the estimates in messages.
const SECONDS_PER_BODY_STEP: f64 = 1e-6;

/// A duration in words: "3.2 s", "4.1 h", "2.0e289 years".
fn human_duration(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("{seconds:.1} s")
    } else if seconds < 7200.0 {
        format!("{:.1} min", seconds / 60.0)
    } else if seconds < 86400.0 * 365.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.1e} years", seconds / (86400.0 * 365.25))
    }
}

/// Refuse a run of `steps` steps (asked for by `flag`) of a world with `bodies` bodies
/// that starts after step `start`, if it would pass [`scene::MAX_STEPS`] or cost more
/// than `max_body_steps`.
fn check_work(
    flag: &str,
    steps: f64,
    start: u64,
    bodies: usize,
    max_body_steps: u64,
) -> Result<u64, Failure> {
    let end = start as f64 + steps;
    if !(steps >= 0.0 && end <= scene::MAX_STEPS as f64) {
        // Exact while it fits (a resumed run near the limit), else in exponent form.
        let end = match (steps < 1e19)
            .then(|| start.checked_add(steps as u64))
            .flatten()
        {
            Some(e) => e.to_string(),
            None => format!("{end:e}"),
        };
        return Err(Failure::invalid(format!(
            "{flag}: the run would end at step {end} (from step {start}), past the last step \
             a run may reach, {} (2⁵³: step counts and times t = step × dt stay exact)",
            scene::MAX_STEPS
        )));
    }
    let work = steps * bodies.max(1) as f64;
    if work > max_body_steps as f64 {
        return Err(Failure::invalid(format!(
            "{flag}: the run is {steps:e} steps of {bodies} bodies, {work:e} body-steps \
             (roughly {} at {SECONDS_PER_BODY_STEP:e} s per body-step), more than the limit \
             of {max_body_steps} body-steps (about {}); --max-body-steps N allows more",
            human_duration(work * SECONDS_PER_BODY_STEP),
            human_duration(max_body_steps as f64 * SECONDS_PER_BODY_STEP)
        )));
    }
    Ok(steps as u64)
}

/// Exit status of a run stopped with Ctrl-C (128 + SIGINT, as shells report it).
const EXIT_INTERRUPTED: u8 = 130;

/// Set by `run`'s Ctrl-C handler; the step loop stops before its next step.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Let Ctrl-C stop a run between two steps (see [`INTERRUPTED`]); a second Ctrl-C
/// exits at once, leaving the outputs' temporary `NAME.XXXXXX.partial` files.
fn stop_on_ctrl_c() {
    // Without a handler (it cannot be installed) Ctrl-C ends the process as before.
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(EXIT_INTERRUPTED.into());
        }
    });
}

/// The progress bar of a run of `steps` steps: step and time left, on stderr when it is
/// a terminal (hidden otherwise, so logs and pipes get no control characters).
fn run_progress(steps: u64) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::io::IsTerminal;
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(steps), target);
    bar.set_style(
        ProgressStyle::with_template(
            "{human_pos}/{human_len} steps [{bar:20}] ETA {eta}, Ctrl-C stops",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar
}

/// A failure with its exit code: 2 for invalid input, 1 for a run-time failure, 130 for
/// a run stopped with Ctrl-C.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    fn invalid(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }
    fn runtime(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    scene::set_body_limit(cli.max_bodies);
    let result = match cli.command {
        Some(Command::Run(args)) => run(*args),
        Some(Command::Validate { scene }) => validate(&scene),
        Some(Command::Scenes) => list_scenes(),
        Some(Command::Impact(args)) => impact(args),
        Some(Command::Lessons) => list_lessons(),
        Some(Command::Lesson { lesson }) => run_lesson(&lesson),
        Some(Command::Repose(args)) => repose::repose(*args),
        Some(Command::Merge(args)) => repose::merge(args),
        Some(Command::Verify { solver }) => verify(&solver),
        #[cfg(feature = "app")]
        Some(Command::Gui(args)) => gui(args),
        #[cfg(feature = "app")]
        Some(Command::Record(args)) => record(*args),
        #[cfg(feature = "app")]
        None => gui(GuiArgs {
            size: (1280, 800),
            ..GuiArgs::default()
        }),
        #[cfg(not(feature = "app"))]
        None => run(RunArgs {
            scene: DEFAULT_SCENE.into(),
            solver: None,
            steps: None,
            duration: None,
            dt: None,
            restitution: None,
            friction: None,
            lambda: None,
            kp: None,
            rotation: None,
            mdp_friction: None,
            error_reduction: None,
            resting_model: None,
            set: Vec::new(),
            out: None,
            final_state: None,
            vtk_dir: None,
            vtk_every: None,
            trace_collision: None,
            trace_out: None,
            settle: false,
            no_sleep: false,
            max_body_steps: DEFAULT_MAX_BODY_STEPS,
            max_trace_rows: DEFAULT_MAX_TRACE_ROWS,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("impulse-lab: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn load(name: &str) -> Result<Scene, Failure> {
    let path = scene::resolve_scene(name);
    if !path.exists() {
        return Err(Failure::invalid(format!(
            "{}: no such scene file (bundled scenes: `impulse-lab scenes`)",
            path.display()
        )));
    }
    scene::load_scene(&path).map_err(scene_failure)
}

/// A scene error as a failure: every error the file has, one a line, then their count.
fn scene_failure(e: scene::SceneError) -> Failure {
    let mut message = e.to_string();
    if e.count() > 1 {
        message += &format!("\n{}: {} errors", e.file, e.count());
    }
    Failure {
        code: e.exit_code() as u8,
        message,
    }
}

fn validate(name: &str) -> Result<(), Failure> {
    // Loading checks everything (fields, then overlaps of the expanded bodies).
    let scene = load(name)?;
    let bodies = scene.bodies.len()
        + scene
            .generators
            .iter()
            .map(|g| match g {
                scene::GeneratorSpec::Lattice { count, .. } => *count,
            })
            .sum::<usize>();
    println!(
        "{}: ok ({} bodies, {} containers)",
        scene::resolve_scene(name).display(),
        bodies,
        scene.containers.len()
    );
    for (field, note) in scene.params.inert() {
        println!("note: params.{field}: {note}");
    }
    Ok(())
}

fn list_scenes() -> Result<(), Failure> {
    let entries = scene::bundled_scenes()
        .map_err(|e| Failure::runtime(format!("{}: {e}", scene::scenes_dir().display())))?;
    for p in entries {
        let name = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match scene::load_scene(&p) {
            Ok(s) => println!("{name:<28} {}", s.description),
            Err(e) => println!("{name:<28} (invalid: {e})"),
        }
    }
    println!(
        "guided experiments on these scenes: {}/*.ron (`impulse-lab lessons`)",
        lesson::lessons_dir().display()
    );
    Ok(())
}

#[derive(Args)]
struct ImpactArgs {
    /// Scene file, or the name of a bundled scene.
    scene: String,
    /// Collision method (default: the scene's).
    #[arg(long)]
    solver: Option<SolverKind>,
    /// Only an impact involving this body (index in the scene's body list).
    #[arg(long)]
    body: Option<usize>,
    /// Give up after this many steps (default: the scene's duration).
    #[arg(long)]
    max_steps: Option<u64>,
    /// Write the impact's trace rows with cumulative impulses (CSV) here.
    #[arg(long)]
    out: Option<PathBuf>,
}

fn impact(args: ImpactArgs) -> Result<(), Failure> {
    let mut scene = load(&args.scene)?;
    if let Some(kind) = args.solver {
        scene.solver = kind;
    }
    let mut world = scene
        .build_world()
        .map_err(|e| Failure::invalid(e.to_string()))?;
    if let Some(b) = args.body
        && b >= world.bodies.len()
    {
        return Err(Failure::invalid(format!(
            "--body {b}: the scene has {} bodies",
            world.bodies.len()
        )));
    }
    let out = args.out.as_deref().map(create_output).transpose()?;
    world.start_ledger();
    let (flag, max_steps) = match args.max_steps {
        Some(n) => ("--max-steps".to_string(), n as f64),
        None => (
            format!(
                "duration {} of the scene",
                scene::short_number(scene.duration)
            ),
            (scene.duration / world.dt).ceil().max(1.0),
        ),
    };
    let max_steps = check_work(
        &flag,
        max_steps,
        world.step_index,
        world.bodies.len(),
        DEFAULT_MAX_BODY_STEPS,
    )?;
    let record = microscope::catch_next_impact(&mut world, args.body, max_steps)
        .map_err(|e| Failure::runtime(e.at_step(world.step_index + 1)))?;
    let Some(r) = record else {
        println!("no impact within {max_steps} steps");
        return Ok(());
    };
    let s = &r.summary;
    println!(
        "{}: impact in step {} (t = {:.6} s) with {}: {} contacts, {} trace rows, {} iterations",
        scene.name,
        r.step,
        r.time,
        r.solver,
        r.contacts.len(),
        r.rows.len(),
        r.iterations.len()
    );
    let totals = r.total_impulses();
    for (i, (c, p)) in r.contacts.iter().zip(&totals).enumerate() {
        let b = c.b.map_or_else(
            || format!("container {}", c.container.unwrap_or(0)),
            |b| format!("body {b}"),
        );
        println!(
            "  contact {i}: body {} – {b} at ({:.4}, {:.4}, {:.4}) n = ({:.4}, {:.4}, {:.4}) gap {:.3e} m | u_n {:.6} → {:.6} m/s | impulse ({:.6e}, {:.6e}, {:.6e}) N s",
            c.a,
            c.point.x,
            c.point.y,
            c.point.z,
            c.normal.x,
            c.normal.y,
            c.normal.z,
            c.gap,
            c.normal_velocity_before,
            c.normal_velocity_after,
            p.x,
            p.y,
            p.z
        );
    }
    println!(
        "  kinetic {:.9e} → {:.9e} J | elastic peak {:.9e} J | kinetic at max compression {} | drift of K + W {:.3e} J ({:.3e} relative) | compression increments {}",
        s.kinetic_before,
        s.kinetic_after,
        s.elastic_peak,
        s.kinetic_at_max_compression
            .map_or("-".into(), |k| format!("{k:.9e} J")),
        s.energy_drift,
        s.energy_drift_relative,
        s.compression_iterations
    );
    if !s.resolution_order.is_empty() {
        println!("  resolution order: {:?}", s.resolution_order);
    }
    if let Some(mut out) = out {
        r.write_csv(&mut out)
            .map_err(|e| Failure::runtime(format!("writing impact CSV: {e}")))?;
        out.commit().map_err(|e| Failure::runtime(e.to_string()))?;
    }
    Ok(())
}

fn list_lessons() -> Result<(), Failure> {
    let entries = lesson::bundled_lessons()
        .map_err(|e| Failure::runtime(format!("{}: {e}", lesson::lessons_dir().display())))?;
    for p in entries {
        let name = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match lesson::load_lesson(&p) {
            Ok(l) => println!("{name:<22} {} (scene {})", l.title, l.scene),
            Err(e) => println!("{name:<22} (invalid: {e})"),
        }
    }
    println!("run one with `impulse-lab lesson NAME`");
    Ok(())
}

fn run_lesson(name: &str) -> Result<(), Failure> {
    let path = lesson::resolve_lesson(name);
    if !path.exists() {
        return Err(Failure::invalid(format!(
            "{}: no such lesson file (lessons: `impulse-lab lessons`)",
            path.display()
        )));
    }
    let l = lesson::load_lesson(&path).map_err(|e| Failure {
        code: e.exit_code() as u8,
        message: e.to_string(),
    })?;
    println!("{}\n  scene: {}", l.title, l.scene_path().display());
    println!(
        "  expected: {}\n  source: {}",
        l.expected.figure, l.expected.source
    );
    println!("  check {}:", l.check.name());
    let outcome = l
        .run_check()
        .map_err(|e| Failure::runtime(format!("{}: {e}", path.display())))?;
    println!("{outcome}");
    if outcome.passed() {
        Ok(())
    } else {
        Err(Failure::runtime(format!(
            "{}: the check failed",
            path.display()
        )))
    }
}

fn verify(methods: &[SolverKind]) -> Result<(), Failure> {
    let methods = if methods.is_empty() {
        &SolverKind::ALL[..]
    } else {
        methods
    };
    let rows: Vec<_> = methods
        .iter()
        .flat_map(|&k| impulse_lab::verify::checks(k))
        .collect();
    let (table, all) = impulse_lab::verify::table(&rows);
    print!("{table}");
    let failed = rows.iter().filter(|r| !r.passed()).count();
    if all {
        println!("all {} checks passed", rows.len());
        Ok(())
    } else {
        Err(Failure::runtime(format!(
            "{failed} of {} checks failed",
            rows.len()
        )))
    }
}

/// Open an output now (as a temporary file next to it, see [`impulse_lab::output`]), so
/// an unwritable path fails before any simulation work.
fn create_output(path: &Path) -> Result<OutputFile, Failure> {
    OutputFile::create(path).map_err(|e| Failure::invalid(e.to_string()))
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let mut scene = load(&args.scene)?;
    // The override replaces the scene's method before the world is built.
    if let Some(kind) = args.solver {
        scene.solver = kind;
    }
    let mut world = scene
        .build_world()
        .map_err(|e| Failure::invalid(e.to_string()))?;
    apply_overrides(&mut world, &args)?;
    for (field, note) in world.params.inert() {
        eprintln!("note: params.{field}: {note}");
    }
    if let Some(dt) = args.dt {
        let bodies = scene.expand_bodies().map_err(scene_failure)?;
        scene::check_dt(dt, scene.dt_bodies(&bodies))
            .map_err(|why| Failure::invalid(format!("--dt: {why}")))?;
    }
    let (flag, steps) = match (args.steps, args.duration) {
        (Some(n), _) => ("--steps".to_string(), n as f64),
        (None, d) => {
            let flag = match d {
                Some(d) => format!("--duration {}", scene::short_number(d)),
                None => format!(
                    "duration {} of the scene",
                    scene::short_number(scene.duration)
                ),
            };
            let d = d.unwrap_or(scene.duration);
            if !(d.is_finite() && d >= 0.0) {
                return Err(Failure::invalid(format!(
                    "--duration must be finite and ≥ 0, got {d}"
                )));
            }
            (flag, (d / world.dt).round())
        }
    };
    let steps = check_work(
        &flag,
        steps,
        world.step_index,
        world.bodies.len(),
        args.max_body_steps,
    )?;
    if let Some(out) = &args.out
        && steps.saturating_add(1) > args.max_trace_rows
    {
        return Err(Failure::invalid(format!(
            "--out {}: the trace would have {} rows, about {:.1} GB, more than the limit of {} rows; --max-trace-rows N allows more",
            out.display(),
            steps.saturating_add(1),
            steps as f64 * 250e-9,
            args.max_trace_rows
        )));
    }
    if let Some(k) = args.trace_collision {
        let (first, last) = (world.step_index + 1, world.step_index + steps);
        if !(first..=last).contains(&k) {
            return Err(Failure::invalid(if steps == 0 {
                format!("--trace-collision {k}: the run takes no steps")
            } else {
                format!(
                    "--trace-collision {k}: the run takes steps {first} to {last} (steps are numbered from 1)"
                )
            }));
        }
    }
    output::check_distinct(
        [&args.out, &args.trace_out, &args.final_state, &args.vtk_dir]
            .into_iter()
            .flatten()
            .map(PathBuf::as_path),
    )
    .map_err(|e| Failure::invalid(e.to_string()))?;
    // Every output is opened (as a temporary file) before the first step.
    let mut trace = args
        .out
        .as_deref()
        .map(create_output)
        .transpose()?
        .map(csv::Writer::from_writer);
    let mut collision_trace = args
        .trace_out
        .as_deref()
        .map(create_output)
        .transpose()?
        .map(csv::Writer::from_writer);
    let state_out = args.final_state.as_deref().map(create_output).transpose()?;
    let vtk_every = match args.vtk_every {
        Some(0) => return Err(Failure::invalid("--vtk-every must be ≥ 1")),
        Some(k) => k,
        None => vtk_default_every(world.dt),
    };
    let vtk_out = args
        .vtk_dir
        .as_deref()
        .map(|d| {
            output::OutputDir::create(d, impulse_lab::vtk::is_series_file)
                .map_err(|e| Failure::invalid(format!("--vtk-dir: {e}")))
        })
        .transpose()?;
    let mut vtk = vtk_out
        .as_ref()
        .map(|d| impulse_lab::vtk::VtkSeries::new(d.dir()));
    let verr = |e: std::io::Error| Failure::runtime(format!("writing the VTK series: {e}"));

    let mut sample = world.start_ledger();
    let mut settle = SettleMonitor::start(&world);
    let mut capped = 0u64;
    let mut fallbacks = 0u64;
    let first = world.step_index;
    let bar = run_progress(steps);
    stop_on_ctrl_c();
    let mut steps_run = || -> Result<(), Failure> {
        let mut write = |s: &EnergySample| -> Result<(), Failure> {
            if let Some(t) = trace.as_mut() {
                t.serialize(s)
                    .map_err(|e| Failure::runtime(format!("writing trace: {e}")))?;
            }
            Ok(())
        };
        write(&sample)?;
        if let Some(v) = vtk.as_mut() {
            v.frame(&world).map_err(verr)?;
        }
        for k in 1..=steps {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Err(Failure {
                    code: EXIT_INTERRUPTED,
                    message: format!(
                        "interrupted (Ctrl-C) after step {} of steps {} to {}",
                        world.step_index,
                        first + 1,
                        first + steps
                    ),
                });
            }
            let tracing = args.trace_collision == Some(world.step_index + 1);
            world.record_trace = tracing;
            let next = world.step_index + 1;
            sample = world
                .step()
                .map_err(|e| Failure::runtime(e.at_step(next)))?;
            capped += u64::from(world.last_report.hit_iteration_cap);
            fallbacks += u64::from(world.last_report.contact_fallback != ContactFallback::None);
            if args.settle {
                settle.sample(&world);
            }
            write(&sample)?;
            if let Some(v) = vtk.as_mut()
                && (k % vtk_every == 0 || k == steps)
            {
                v.frame(&world).map_err(verr)?;
            }
            if tracing && let Some(t) = collision_trace.as_mut() {
                for row in &world.trace {
                    t.serialize(TraceCsvRow::from(row))
                        .map_err(|e| Failure::runtime(format!("writing collision trace: {e}")))?;
                }
            }
            bar.inc(1);
        }
        Ok(())
    };
    // The steps run on a worker of a rayon pool, so that detection's parallel loops fork
    // from inside the pool. Called from outside, each loop hands its work to the pool's
    // threads and waits to be woken (on pour_mixed with one thread: 7 futex waits and 25
    // yields a step).
    let stepped = match rayon::ThreadPoolBuilder::new().build() {
        Ok(pool) => pool.install(&mut steps_run),
        Err(_) => steps_run(),
    };
    bar.finish_and_clear();
    if let Err(mut f) = stepped {
        // The energy trace up to the failure is kept as TRACE.partial; the other
        // outputs are dropped (their temporary files removed).
        if let Some(t) = trace
            && let Ok(out) = t.into_inner()
        {
            match out.keep_partial() {
                Ok(p) => f.message += &format!(" (the trace so far is in {})", p.display()),
                Err(e) => f.message += &format!(" ({e})"),
            }
        }
        return Err(f);
    }
    let commit_csv = |w: Option<csv::Writer<OutputFile>>| -> Result<(), Failure> {
        if let Some(w) = w {
            w.into_inner()
                .map_err(|e| Failure::runtime(format!("writing output: {}", e.error())))?
                .commit()
                .map_err(|e| Failure::runtime(e.to_string()))?;
        }
        Ok(())
    };
    if let Some(mut out) = state_out {
        serde_json::to_writer_pretty(&mut out, &final_state(&world))
            .map_err(|e| Failure::runtime(format!("writing final state: {e}")))?;
        out.commit().map_err(|e| Failure::runtime(e.to_string()))?;
    }
    if let (Some(v), Some(dir)) = (vtk, vtk_out) {
        v.finish(&world).map_err(verr)?;
        dir.commit()
            .map_err(|e| Failure::runtime(format!("--vtk-dir: {e}")))?;
    }
    commit_csv(trace)?;
    commit_csv(collision_trace)?;
    println!(
        "{}: {} steps of {} s with {} | bodies {} | contacts {} | kinetic {:.6e} J | total {:.6e} J | residual {:.3e} J{}{}",
        scene.name,
        steps,
        world.dt,
        world.solver_kind(),
        world.bodies.len(),
        sample.contacts,
        sample.kinetic,
        sample.total,
        sample.residual,
        if capped > 0 {
            format!(" | iteration cap hit in {capped} steps")
        } else {
            String::new()
        },
        if fallbacks > 0 {
            format!(
                " | contact pass redone in {fallbacks} steps (its first result gained kinetic energy)"
            )
        } else {
            String::new()
        }
    );
    if args.settle {
        print_settle(&mut world, &settle);
    }
    Ok(())
}

/// Default VTK frame interval: the steps in 1/30 s of simulated time (at least 1), as
/// `record`'s default 30 frames a second.
fn vtk_default_every(dt: f64) -> u64 {
    ((1.0 / 30.0) / dt).round().max(1.0) as u64
}

/// `theta:θ` (θ ∈ [0, 1]) or `symplectic`.
fn parse_rotation(s: &str) -> Result<RotationIntegrator, String> {
    let lower = s.to_ascii_lowercase();
    if lower == "symplectic" || lower == "symplectic-euler" {
        return Ok(RotationIntegrator::SymplecticEuler);
    }
    let theta = lower
        .strip_prefix("theta:")
        .ok_or_else(|| format!("expected theta:θ or symplectic, got '{s}'"))?
        .parse::<f64>()
        .map_err(|e| format!("θ in '{s}': {e}"))?;
    if !(theta.is_finite() && (0.0..=1.0).contains(&theta)) {
        return Err(format!("θ must be in [0, 1], got {theta}"));
    }
    Ok(RotationIntegrator::Theta { theta })
}

/// Print the settle metrics of a finished run (the criteria of [`impulse_lab::settle`]).
fn print_settle(world: &mut World, m: &SettleMonitor) {
    let last = m.last;
    // Penetration at the final positions (the step's contacts are those at its start).
    world.detect();
    let final_penetration = max_penetration_ratio(&world.bodies, &world.contacts);
    let sleeping = world.sleeping_bodies();
    println!(
        "settle: t = {:.3} s | KE {:.6e} J | PE range (PE at release − PE now) {:.6e} J | KE/PE-range {:.3e} (criterion < {:e}) | max penetration/size: now {:.3e}, after settling {:.3e}, whole run {:.3e} (criterion < {}) | time to settle {} | sleeping bodies {}/{} | {}",
        last.time,
        last.kinetic,
        last.potential_range,
        last.ke_ratio,
        KE_RATIO_SETTLED,
        final_penetration,
        m.max_penetration_after_settling(),
        m.max_penetration,
        PENETRATION_RATIO_MAX,
        m.time_to_settle()
            .map_or("not settled".to_string(), |t| format!("{t:.3} s")),
        sleeping,
        world.bodies.iter().filter(|b| !b.is_static()).count(),
        if m.settled() && final_penetration < PENETRATION_RATIO_MAX {
            "SETTLED"
        } else {
            "NOT SETTLED"
        }
    );
}

fn apply_overrides(world: &mut World, args: &RunArgs) -> Result<(), Failure> {
    if let Some(dt) = args.dt {
        if !(dt.is_finite() && dt > 0.0) {
            return Err(Failure::invalid(format!(
                "--dt must be finite and > 0, got {dt}"
            )));
        }
        world.dt = dt;
    }
    if let Some(r) = args.rotation {
        world.rotation = r;
    }
    let p = &mut world.params;
    if let Some(law) = args.mdp_friction {
        p.mdp_friction = law;
    }
    if let Some(er) = args.error_reduction {
        p.error_reduction = er;
    }
    if let Some(e) = args.restitution {
        p.restitution = e;
    }
    if let Some(mu) = args.friction {
        p.friction = mu;
    }
    if let Some(l) = args.lambda {
        p.lambda = l;
    }
    if let Some(kp) = args.kp {
        p.kp = kp;
    }
    if let Some(model) = args.resting_model {
        p.resting_model = model;
    }
    for assignment in &args.set {
        let (field, value) = assignment.split_once('=').ok_or_else(|| {
            Failure::invalid(format!(
                "--set takes FIELD=VALUE (e.g. --set rest_velocity=0.1), got '{assignment}'"
            ))
        })?;
        p.set(field.trim(), value)
            .map_err(|why| Failure::invalid(format!("--set {assignment}: {why}")))?;
    }
    if args.no_sleep {
        world.sleep.enabled = false;
    }
    let p = &world.params;
    p.validate()
        .map_err(|(field, msg)| Failure::invalid(format!("--{field}: {msg}")))
}

/// A collision-trace row flattened for CSV (the impulse as three columns).
#[derive(Serialize)]
struct TraceCsvRow {
    iteration: u32,
    stage: &'static str,
    contact: usize,
    normal_velocity: f64,
    impulse_x: f64,
    impulse_y: f64,
    impulse_z: f64,
    elastic_energy: f64,
    elastic_total: f64,
    kinetic_energy: f64,
    total_energy: f64,
}

impl From<&TraceRow> for TraceCsvRow {
    fn from(r: &TraceRow) -> Self {
        TraceCsvRow {
            iteration: r.iteration,
            stage: r.stage,
            contact: r.contact,
            normal_velocity: r.normal_velocity,
            impulse_x: r.impulse[0],
            impulse_y: r.impulse[1],
            impulse_z: r.impulse[2],
            elastic_energy: r.elastic_energy,
            elastic_total: r.elastic_total,
            kinetic_energy: r.kinetic_energy,
            total_energy: r.total_energy,
        }
    }
}

#[derive(Serialize)]
struct BodyState {
    id: usize,
    shape: &'static str,
    position: [f64; 3],
    /// (w, x, y, z)
    orientation: [f64; 4],
    velocity: [f64; 3],
    angular_velocity: [f64; 3],
}

#[derive(Serialize)]
struct FinalState {
    step: u64,
    time: f64,
    bodies: Vec<BodyState>,
}

fn final_state(world: &World) -> FinalState {
    let v = |x: &impulse_lab::math::Vec3| [x.x, x.y, x.z];
    FinalState {
        step: world.step_index,
        time: world.time,
        bodies: world
            .bodies
            .iter()
            .enumerate()
            .map(|(id, b)| {
                let q = b.orientation.quaternion();
                BodyState {
                    id,
                    shape: b.shape.kind_name(),
                    position: v(&b.position),
                    orientation: [q.w, q.i, q.j, q.k],
                    velocity: v(&b.velocity),
                    angular_velocity: v(&b.angular_velocity),
                }
            })
            .collect(),
    }
}
