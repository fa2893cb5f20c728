//! `impulse-lab repose` (a sweep of the angle-of-repose experiment, paper 000 §7.5) and
//! `impulse-lab merge` (joins shard CSVs).
//!
//! The sweep's parameter points are every friction coefficient μ of `--friction` (sorted
//! ascending) × every seed `s₀ + k`, k = 0 .. `--seeds` (s₀ = `--first-seed`, default the
//! scene's seed), in that canonical order
//! (μ, then seed). `--shard K/N` runs the points whose index i in that order has
//! i mod N = K − 1. The runs go in parallel on `--jobs` threads (rayon); each run is one
//! single-threaded [`ReposeExperiment`], so a point's result does not depend on the
//! number of threads, and the rows are written in the canonical order whatever the
//! order the runs finish in (each as soon as the rows before it are written). The CSV is
//! written to a temporary `OUT.XXXXXX.partial` beside `OUT` and renamed to `OUT` when
//! the sweep is complete ([`impulse_lab::output`]); a sweep cut short keeps its first
//! rows there, and one whose runs failed keeps them as `OUT.partial`. `merge` sorts rows by (scene, solver, μ, e, seed), which
//! is the same order, so merged shards equal the unsharded CSV.

use super::{Failure, create_output, load};
use clap::Args;
use impulse_lab::dynamics::solver::SolverKind;
use impulse_lab::output::{self, OutputFile};
use impulse_lab::repose::experiment::DrumGeometry;
use impulse_lab::repose::plot::{self, PlotRun};
use impulse_lab::repose::{Protocol, ROWS, ReposeConfig, ReposeExperiment, ReposeResult};
use impulse_lab::scene::{ReferenceAngle, Scene};
use impulse_lab::shapes::Shape;
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct ReposeArgs {
    /// Scene file, or the name of a bundled scene (e.g. repose_spheres).
    scene: String,
    /// Collision method: etm, sqm, smm, jolt, ccp or mdp (default: the scene's).
    #[arg(long)]
    solver: Option<SolverKind>,
    /// Friction coefficients μ ≥ 0, comma-separated (default: the scene's).
    #[arg(long)]
    friction: Option<String>,
    /// Coefficient of restitution e in [0, 1] (default: the scene's).
    #[arg(long)]
    restitution: Option<f64>,
    /// Number of seeds per μ: first seed, first seed + 1, ...
    #[arg(long, default_value_t = 1)]
    seeds: u64,
    /// The first seed (default: the scene's), e.g. to add seeds to a sweep already run
    /// and `merge` the CSVs.
    #[arg(long)]
    first_seed: Option<u64>,
    /// Parallel runs (default: the number of CPUs).
    #[arg(long)]
    jobs: Option<usize>,
    /// Write one CSV row per run here (default: stdout). The file appears when the sweep
    /// is complete; if runs fail, the rows of the others are kept as FILE.partial.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write each run's statepoint (JSON: scene, method, every parameter, seed, commit,
    /// protocol, result and CSV row) into this directory, created if missing, as the
    /// run ends (default: OUT's name with `.statepoints`, e.g. sweep.statepoints/ for
    /// --out sweep.csv; none when the CSV goes to stdout). `merge` reads them.
    #[arg(long, value_name = "DIR")]
    statepoints: Option<PathBuf>,
    /// Also write each run's bodies as a VTK series for ParaView into
    /// DIR/SCENE_SOLVER_mu{μ}_e{e}_seed{S}/ (created; as `run --vtk-dir`), which appears
    /// whole when the run ends. Not with --video-dir.
    #[arg(long, value_name = "DIR", conflicts_with = "video_dir")]
    vtk_dir: Option<PathBuf>,
    /// A VTK frame every K steps (and the run's last step); default: the steps of 1 s.
    #[arg(long, value_name = "K", requires = "vtk_dir")]
    vtk_every: Option<u64>,
    /// Run only the K-th of N slices of the sweep (1 ≤ K ≤ N), e.g. 3/8.
    #[arg(long)]
    shard: Option<String>,
    /// Also draw the angle against μ (with the paper's error bars) into this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Also record every run as an MP4 in this directory
    /// (SCENE_SOLVER_mu{μ}_seed{S}.mp4, 960x540, 30 fps, the app's camera, playing at
    /// simulated real speed until the pile is measured). Rendering is slow (software
    /// rendering: about a frame a second), and the runs then go one at a time.
    #[arg(long)]
    video_dir: Option<PathBuf>,
    /// Time cap of each phase, packing and slumping (s, simulated). Default: 30 s, and
    /// with `--protocol drum` at least 5 % more than the drum phase's own length (its
    /// start-up half turn and --drum-turns turns).
    #[arg(long)]
    max_time: Option<f64>,
    /// Settled when K/ΔU stays below this for --hold seconds.
    #[arg(long, default_value_t = 1e-6)]
    ke_ratio: f64,
    /// See --ke-ratio (s, simulated).
    #[arg(long, default_value_t = 0.5)]
    hold: f64,
    /// Friction coefficient μ ≥ 0 of the packing phase; the wall's removal brings each
    /// run's μ back. `run`: pack at each run's μ. Default: the scene's `pack_friction`
    /// (the repose scenes: 0.3, as paper 000's Fig. 11), else `run`.
    #[arg(long)]
    pack_friction: Option<String>,
    /// How the pile gets its slope: `wall` (remove the divider, paper 000 §7.5), `tilt`
    /// (keep it and tilt the box until the pile fails), `cylinder` (pack in a
    /// cylinder, lift it off, fit the cone) or `drum` (pack in the drum inscribed in the
    /// box, turn it, average the free surface's dynamic angle); docs/repose.md.
    #[arg(long, default_value = "wall", value_parser = Protocol::parse)]
    protocol: Protocol,
    /// Tilt rate of `--protocol tilt` (°/s, simulated).
    #[arg(long, default_value_t = 1.0)]
    tilt_rate: f64,
    /// Froude number Ω²R/g of `--protocol drum` (its angular velocity Ω from its radius
    /// R), in (0, 0.01].
    #[arg(long, default_value_t = 1e-3)]
    drum_froude: f64,
    /// Turns of `--protocol drum` averaged over, after a start-up half turn. The drum
    /// phase takes (0.5 + turns) · 2π/Ω; --max-time caps it.
    #[arg(long, default_value_t = 2.0)]
    drum_turns: f64,
}

#[derive(Args)]
pub struct MergeArgs {
    /// CSVs written by `impulse-lab repose` (e.g. shards, `--shard K/N`), statepoint
    /// JSON files, or directories of statepoints (every `*.json` in them).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// The merged CSV.
    #[arg(long)]
    out: PathBuf,
    /// Also draw the merged runs' angle against μ, per shape and solver, into this PNG.
    #[arg(long)]
    plot: Option<PathBuf>,
}

/// Width and height of the `--plot` figure (pixels).
const PLOT_SIZE: (u32, u32) = (1000, 640);

/// The plot's view of CSV rows in the order of [`columns`].
fn plot_runs<'a>(rows: impl Iterator<Item = Vec<&'a str>>) -> Vec<PlotRun> {
    rows.map(|r| {
        let num = |i: usize| r.get(i).and_then(|v| v.parse().ok()).unwrap_or(f64::NAN);
        PlotRun {
            shape: r.get(1).unwrap_or(&"").to_string(),
            solver: r.get(2).unwrap_or(&"").to_string(),
            friction: num(3),
            angle_deg: num(7),
            error_deg: num(8),
            capped: ["packing_settled", "slumping_settled"].iter().any(|name| {
                let i = columns().iter().position(|c| c == name);
                i.and_then(|i| r.get(i)) == Some(&"false")
            }),
        }
    })
    .collect()
}

/// Write the figure of `runs` to `out` (opened before the runs, so a bad path fails
/// before any simulation).
fn write_plot(runs: &[PlotRun], mut out: OutputFile) -> Result<(), Failure> {
    plot::write_png(runs, PLOT_SIZE.0, PLOT_SIZE.1, &mut out)
        .map_err(|e| Failure::runtime(format!("{}: {e}", out.path().display())))?;
    out.commit().map_err(|e| Failure::runtime(e.to_string()))
}

/// Where the sweep's CSV goes: an output file, or stdout.
enum CsvSink {
    File(OutputFile),
    Stdout(std::io::Stdout),
}

impl std::io::Write for CsvSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            CsvSink::File(f) => f.write(buf),
            CsvSink::Stdout(o) => o.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            CsvSink::File(f) => f.flush(),
            CsvSink::Stdout(o) => o.flush(),
        }
    }
}

/// The largest sweep accepted (runs): far beyond any sweep that can finish, and it keeps
/// the list of points small.
const MAX_POINTS: u64 = 1_000_000;

/// One parameter point of the sweep.
#[derive(Clone, Copy, Debug)]
struct Point {
    friction: f64,
    seed: u64,
}

impl Point {
    /// How messages name the run: "μ = 0.3, seed 75".
    fn label(&self) -> String {
        format!("μ = {}, seed {}", self.friction, self.seed)
    }

    /// The sweep's scene with this point's seed and friction.
    fn scene(&self, base: &Scene) -> Scene {
        let mut scene = base.clone();
        scene.seed = self.seed;
        scene.params.friction = self.friction;
        scene
    }
}

/// The CSV columns, in order.
pub fn columns() -> Vec<String> {
    let mut c: Vec<String> = [
        "scene",
        "shape",
        "solver",
        "friction",
        "restitution",
        "seed",
        "bodies",
        "angle_deg",
        "error_deg",
    ]
    .map(String::from)
    .to_vec();
    c.extend((1..=ROWS).map(|j| format!("slope{j}_deg")));
    c.extend(
        [
            "rows_fitted",
            "empty_cells",
            "packing_s",
            "packing_settled",
            "slumping_s",
            "slumping_settled",
            "bodies_lost",
            "pack_friction",
            "protocol",
            "wall_clock_s",
        ]
        .map(String::from),
    );
    c
}

/// `1,2` → [1, 2]: every value finite and ≥ 0, no repeats.
fn parse_frictions(s: &str) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let mu: f64 = part
            .parse()
            .map_err(|_| format!("--friction: '{part}' is not a number"))?;
        if !(mu.is_finite() && mu >= 0.0) {
            return Err(format!("--friction: μ must be finite and ≥ 0, got {part}"));
        }
        if out.contains(&mu) {
            return Err(format!("--friction: μ = {mu} is listed twice"));
        }
        out.push(mu);
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// `K/N` with 1 ≤ K ≤ N.
fn parse_shard(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("--shard: expected K/N with 1 ≤ K ≤ N (e.g. 2/8), got '{s}'");
    let (k, n) = s.split_once('/').ok_or_else(bad)?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || n == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// The scene's body shape for the CSV: `sphere`, `cube`, `cuboid`, `cross`, ... or
/// `mixed`.
fn shape_name(scene: &Scene) -> String {
    let Ok(bodies) = scene.build_world() else {
        return "unknown".into();
    };
    let name = |s: &Shape| match s {
        Shape::Cuboid { half_extents: h }
            if (h.x - h.y).abs() <= 1e-12 * h.x && (h.x - h.z).abs() <= 1e-12 * h.x =>
        {
            "cube"
        }
        s => s.kind_name(),
    };
    let mut names = bodies
        .bodies
        .iter()
        .filter(|b| !b.is_static())
        .map(|b| name(&b.shape));
    match names.next() {
        Some(first) if names.all(|n| n == first) => first.into(),
        Some(_) => "mixed".into(),
        None => "none".into(),
    }
}

pub fn repose(args: ReposeArgs) -> Result<(), Failure> {
    // Every check before any simulation runs.
    let mut scene = load(&args.scene)?;
    if let Some(kind) = args.solver {
        scene.solver = kind;
    }
    let frictions = match &args.friction {
        Some(s) => parse_frictions(s).map_err(Failure::invalid)?,
        None => vec![scene.params.friction],
    };
    if let Some(e) = args.restitution {
        if !(e.is_finite() && (0.0..=1.0).contains(&e)) {
            return Err(Failure::invalid(format!(
                "--restitution: e must be in [0, 1], got {e}"
            )));
        }
        scene.params.restitution = e;
    }
    if args.seeds == 0 {
        return Err(Failure::invalid("--seeds must be ≥ 1"));
    }
    let jobs = match args.jobs {
        Some(0) => return Err(Failure::invalid("--jobs must be ≥ 1")),
        Some(j) => j,
        None => std::thread::available_parallelism().map_or(1, |n| n.get()),
    };
    let (shard_k, shard_n) = match &args.shard {
        Some(s) => parse_shard(s).map_err(Failure::invalid)?,
        None => (1, 1),
    };
    let pack_friction = match args.pack_friction.as_deref() {
        None => scene.pack_friction,
        Some(s) => ReposeConfig::parse_pack_friction(s).map_err(Failure::invalid)?,
    };
    let mut config = ReposeConfig {
        ke_ratio: args.ke_ratio,
        hold: args.hold,
        max_time: args.max_time.unwrap_or(30.0),
        pack_friction,
        protocol: args.protocol,
        tilt_rate: args.tilt_rate,
        drum_froude: args.drum_froude,
        drum_turns: args.drum_turns,
    };
    config
        .validate()
        .map_err(|m| Failure::invalid(format!("--{}", m.replace('_', "-"))))?;
    if let Some(seed) = args.first_seed {
        scene.seed = seed;
    }
    if scene.seed.checked_add(args.seeds).is_none() {
        return Err(Failure::invalid("--seeds: the seeds overflow"));
    }
    if (frictions.len() as u64).saturating_mul(args.seeds) > MAX_POINTS {
        return Err(Failure::invalid(format!(
            "--friction × --seeds: at most {MAX_POINTS} runs per sweep, got {} × {}",
            frictions.len(),
            args.seeds
        )));
    }
    // The setup is checked once on the scene as it is (divider, shapes, sides).
    let world = scene
        .build_world()
        .map_err(|e| Failure::invalid(e.to_string()))?;
    if args.max_time.is_none() {
        config.fit_cap_to_drum(&world);
    }
    ReposeExperiment::new(world, config.clone())
        .map_err(|e| Failure::invalid(format!("{}: {e}", args.scene)))?;
    let mut points = Vec::new();
    for &friction in &frictions {
        for k in 0..args.seeds {
            points.push(Point {
                friction,
                seed: scene.seed + k,
            });
        }
    }
    let points: Vec<Point> = points
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % shard_n == shard_k - 1)
        .map(|(_, p)| p)
        .collect();
    let video_dir = match &args.video_dir {
        Some(dir) => Some(video_dir_checked(dir)?),
        None => None,
    };
    output::check_distinct(args.out.iter().chain(&args.plot).map(PathBuf::as_path))
        .map_err(|e| Failure::invalid(e.to_string()))?;
    let scene_name = std::path::Path::new(&args.scene)
        .file_stem()
        .map_or_else(|| args.scene.clone(), |s| s.to_string_lossy().into_owned());
    let statepoints = match (&args.statepoints, &args.out) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(out)) => Some(out.with_extension("statepoints")),
        (None, None) => None,
    };
    // Opened as temporary files before any run; renamed into place at the end.
    let out = args.out.as_deref().map(create_output).transpose()?;
    let plot_out = args.plot.as_deref().map(create_output).transpose()?;
    if let Some(dir) = &statepoints {
        dir_checked("--statepoints", dir)?;
    }
    if let Some(dir) = &args.vtk_dir {
        dir_checked("--vtk-dir", dir)?;
    }
    let vtk = match &args.vtk_dir {
        None => None,
        Some(dir) => {
            let every = match args.vtk_every {
                Some(0) => return Err(Failure::invalid("--vtk-every must be ≥ 1")),
                Some(k) => k,
                None => (1.0 / scene.dt).round().max(1.0) as u64,
            };
            Some(VtkOut {
                dir: dir.clone(),
                every,
                scene_name: scene_name.clone(),
            })
        }
    };
    // Every check passed: the directories are made.
    if let Some(dir) = &statepoints {
        make_dir("--statepoints", dir)?;
    }
    if let Some(v) = &vtk {
        make_dir("--vtk-dir", &v.dir)?;
    }
    let mut written: Vec<Vec<String>> = Vec::new();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| Failure::runtime(format!("cannot start {jobs} threads: {e}")))?;

    let shape = shape_name(&scene);
    let bars = MultiProgress::with_draw_target(if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    });
    // The overall bar counts simulated time (ms) against every run's cap
    // (`run_budget`): a run advances it as it steps and fills its share when it ends
    // (early if its pile settled), so the time left is estimated from the first run on,
    // as an upper bound at the rate so far.
    let budget = run_budget(&scene, &config);
    let budget_ms = (budget * 1e3).ceil().max(1.0) as u64;
    let overall = bars.add(ProgressBar::new(points.len() as u64 * budget_ms));
    overall.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {msg}, {elapsed} (at most {eta} left)")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    overall.set_prefix(format!("{scene_name} with {}", scene.solver));
    let runs_done = std::sync::atomic::AtomicUsize::new(0);
    let run_ended = |overall: &ProgressBar| {
        let k = runs_done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        overall.set_message(format!("{k}/{} runs", points.len()));
    };
    overall.set_message(format!("0/{} runs", points.len()));
    let mut writer = csv::Writer::from_writer(match out {
        Some(f) => CsvSink::File(f),
        None => CsvSink::Stdout(std::io::stdout()),
    });
    let werr = |e: csv::Error| Failure::runtime(format!("writing CSV: {e}"));
    let ioerr = |e: std::io::Error| Failure::runtime(format!("writing CSV: {e}"));
    writer.write_record(columns()).map_err(werr)?;
    writer.flush().map_err(ioerr)?;

    // The runs send their rows as they finish; this thread writes them in the canonical
    // order as soon as every earlier row is in (a sweep cut short keeps its first rows).
    // Each run sends its CSV row and its messages: warnings (ReposeResult::caveats) and
    // the line beside the scene's reference angle, if it cites one.
    type Row = (Vec<String>, Vec<String>);
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Result<Row, Failure>)>();
    let finished =
        |(p, r, bodies, wall): (Point, ReposeResult, usize, f64)| -> Result<Row, Failure> {
            let mut warnings: Vec<String> = caveats(&config, &r)
                .iter()
                .map(|c| format!("warning: {scene_name}, {}: {c}", p.label()))
                .collect();
            let done = result_line(&scene_name, &p.label(), &r, config.protocol, wall);
            bars.suspend(|| eprintln!("{done}"));
            if let Some(reference) = &scene.reference_angle {
                warnings.push(reference_line(
                    &scene_name,
                    &p.label(),
                    &r,
                    config.protocol,
                    reference,
                ));
            }
            let row = csv_row(
                &scene_name,
                &shape,
                &scene,
                p,
                &r,
                bodies,
                wall,
                config.protocol,
            );
            if let Some(dir) = &statepoints {
                let sp = statepoint(&args.scene, &scene_name, &scene, &config, p, &r, &row);
                let path = dir.join(statepoint_name(&scene_name, &scene, p, config.protocol));
                let text = serde_json::to_string_pretty(&sp)
                    .map_err(|e| Failure::runtime(format!("statepoint: {e}")))?;
                output::write_file(&path, (text + "\n").as_bytes())
                    .map_err(|e| Failure::runtime(format!("--statepoints: {e}")))?;
            }
            Ok((row, warnings))
        };
    let mut failures = Vec::new();
    let mut write_error = None;
    std::thread::scope(|s| {
        let (points, scene, config, bars, overall) = (&points, &scene, &config, &bars, &overall);
        let run_ended = &run_ended;
        let finished = &finished;
        let vtk = vtk.as_ref();
        let scene_name = &scene_name;
        let video_dir = video_dir.as_deref();
        s.spawn(move || {
            if let Some(dir) = video_dir {
                // One renderer at a time: the runs go in order on this thread.
                for (i, p) in points.iter().enumerate() {
                    let row =
                        run_point_recorded(scene, config, *p, dir, scene_name).and_then(finished);
                    overall.inc(budget_ms);
                    run_ended(overall);
                    let _ = tx.send((i, row));
                }
                return;
            }
            pool.install(|| {
                points
                    .par_iter()
                    .enumerate()
                    .for_each_with(tx, |tx, (i, p)| {
                        let row = run_point(scene, config, *p, bars, vtk, (overall, budget_ms))
                            .and_then(finished);
                        run_ended(overall);
                        // The receiver lives until every sender is gone.
                        let _ = tx.send((i, row));
                    })
            })
        });
        let mut pending = std::collections::BTreeMap::new();
        let mut next = 0;
        for (i, row) in rx {
            pending.insert(i, row);
            while let Some(row) = pending.remove(&next) {
                next += 1;
                match row {
                    Ok((row, warnings)) if write_error.is_none() => {
                        for w in &warnings {
                            bars.suspend(|| eprintln!("{w}"));
                        }
                        if let Err(e) = writer
                            .write_record(&row)
                            .map_err(werr)
                            .and_then(|()| writer.flush().map_err(ioerr))
                        {
                            write_error = Some(e);
                        }
                        written.push(row);
                    }
                    Ok(_) => {}
                    Err(f) => failures.push(f.message),
                }
            }
        }
    });
    overall.finish_and_clear();
    if let Some(e) = write_error {
        return Err(e);
    }
    let csv = match writer.into_inner() {
        Ok(CsvSink::File(f)) => Some(f),
        Ok(CsvSink::Stdout(_)) => None,
        Err(e) => return Err(Failure::runtime(format!("writing CSV: {}", e.error()))),
    };
    if !failures.is_empty() {
        // The rows of the runs that finished are kept as OUT.partial; no plot.
        let mut message = failures.join("; ");
        if let Some(f) = csv {
            match f.keep_partial() {
                Ok(p) => message += &format!(" (the rows so far are in {})", p.display()),
                Err(e) => message += &format!(" ({e})"),
            }
        }
        return Err(Failure::runtime(message));
    }
    if let Some(out) = plot_out {
        let runs = plot_runs(
            written
                .iter()
                .map(|r| r.iter().map(String::as_str).collect()),
        );
        write_plot(&runs, out)?;
    }
    if let Some(f) = csv {
        f.commit().map_err(|e| Failure::runtime(e.to_string()))?;
    }
    Ok(())
}

/// The line printed on stderr as each run ends: its angle, protocol, phases (with
/// "time cap" where a phase was cut short) and wall-clock time, e.g. `repose_spheres,
/// μ = 0.3, seed 7: 21.30° ± 1.52° (wall_removal); packing 4.1 s settled, slumping
/// 30.0 s time cap; 48.2 s`.
fn result_line(
    scene_name: &str,
    label: &str,
    r: &ReposeResult,
    protocol: Protocol,
    wall: f64,
) -> String {
    let phase = |name: &str, p: &impulse_lab::repose::PhaseReport| {
        format!(
            "{name} {:.1} s {}",
            p.duration,
            if p.settled { "settled" } else { "time cap" }
        )
    };
    let m = &r.measurement;
    format!(
        "{scene_name}, {label}: {:.2}° ± {:.2}° ({}); {}, {}; {wall:.1} s",
        m.angle_deg,
        m.error_deg,
        protocol.name(),
        phase("packing", &r.packing),
        phase(
            if protocol == Protocol::Drum {
                "turning"
            } else {
                "slumping"
            },
            &r.slumping
        ),
    )
}

/// The line printed (on stderr, beside the run's warnings) after each run of a scene
/// that cites a published angle ([`Scene::reference_angle`]): the measured angle ± the
/// paper's error, the reference and their difference, e.g.
/// `repose_zhou, μ = 0.2, seed 46: 18.31° ± 2.10° (wall_removal); reference 19.7° (Zhou
/// et al. 2002): difference -1.39°`.
fn reference_line(
    scene_name: &str,
    label: &str,
    r: &ReposeResult,
    protocol: Protocol,
    reference: &ReferenceAngle,
) -> String {
    let m = &r.measurement;
    format!(
        "{scene_name}, {label}: {:.2}° ± {:.2}° ({}); reference {}° ({}): difference {:+.2}°",
        m.angle_deg,
        m.error_deg,
        protocol.name(),
        reference.angle_deg,
        reference.source,
        m.angle_deg - reference.angle_deg
    )
}

/// The run's caveats ([`ReposeResult::caveats`]), and under `--protocol tilt` a pile
/// that did not fail before the box stood on end. The bare-floor caveat is the wall
/// protocol's: the tilted pile keeps to its side of the divider, and a cone's outer
/// rings are sparse by nature.
fn caveats(config: &ReposeConfig, r: &ReposeResult) -> Vec<String> {
    let mut out = r.caveats();
    if config.protocol != Protocol::Wall {
        out.retain(|c| !c.contains("bare floor"));
    }
    if config.protocol == Protocol::Tilt && r.measurement.angle_deg.is_nan() {
        out.push("the pile did not fail before the tilt reached 90°: no angle".into());
    }
    out
}

/// The tilt protocol's slope after the avalanche: the mean of the rows' angles in the
/// frame of gravity (NaN if no row has a line).
fn slope_after_tilt(r: &ReposeResult) -> f64 {
    let a: Vec<f64> = r
        .measurement
        .row_angles_deg
        .iter()
        .copied()
        .filter(|a| !a.is_nan())
        .collect();
    a.iter().sum::<f64>() / a.len() as f64
}

/// The CSV row of one run, in the order of [`columns`].
#[allow(clippy::too_many_arguments)]
fn csv_row(
    scene_name: &str,
    shape: &str,
    scene: &Scene,
    p: Point,
    result: &ReposeResult,
    bodies: usize,
    wall: f64,
    protocol: Protocol,
) -> Vec<String> {
    let m = &result.measurement;
    let mut row = vec![
        scene_name.to_string(),
        shape.to_string(),
        scene.solver.to_string(),
        p.friction.to_string(),
        scene.params.restitution.to_string(),
        p.seed.to_string(),
        bodies.to_string(),
        m.angle_deg.to_string(),
        m.error_deg.to_string(),
    ];
    row.extend(m.row_angles_deg.iter().map(|a| a.to_string()));
    row.extend([
        m.rows_fitted.to_string(),
        m.empty_cells.to_string(),
        result.packing.duration.to_string(),
        result.packing.settled.to_string(),
        result.slumping.duration.to_string(),
        result.slumping.settled.to_string(),
        result.bodies_lost.to_string(),
        result.pack_friction.to_string(),
        protocol.name().to_string(),
        format!("{wall:.3}"),
    ]);
    row
}

/// The `format` field of a statepoint: what reads it checks this first.
pub const STATEPOINT_FORMAT: &str = "impulse-lab repose statepoint 1";

/// The commit the binary was built from (build.rs), or "unknown".
fn commit() -> &'static str {
    option_env!("IMPULSE_LAB_COMMIT").unwrap_or("unknown")
}

/// Check that an output directory (`--statepoints`, `--vtk-dir`) can be made or
/// written: an existing directory, or a missing one whose parent is a directory; each
/// proven writable by a temporary file (removed at once). Creates nothing.
fn dir_checked(flag: &str, dir: &Path) -> Result<(), Failure> {
    let bad = |why: String| Failure::invalid(format!("{flag} {}: {why}", dir.display()));
    let probe_in = if dir.exists() {
        if !dir.is_dir() {
            return Err(bad("exists and is not a directory".into()));
        }
        dir
    } else {
        let parent = output::parent_dir(dir);
        if !parent.is_dir() {
            return Err(bad(format!("no directory {}", parent.display())));
        }
        parent
    };
    OutputFile::create(&probe_in.join("probe"))
        .map(drop)
        .map_err(|e| bad(e.why))
}

/// Create a checked output directory ([`dir_checked`]) if it is missing.
fn make_dir(flag: &str, dir: &Path) -> Result<(), Failure> {
    match std::fs::create_dir(dir) {
        // Another task of the sweep (a shard) may have made it meanwhile.
        Err(_) if dir.is_dir() => Ok(()),
        Err(e) => Err(Failure::invalid(format!("{flag} {}: {e}", dir.display()))),
        Ok(()) => Ok(()),
    }
}

/// A run's name in file names: its merge key, `SCENE_SOLVER_mu{μ}_e{e}_seed{S}`, then
/// `_{protocol}` for a protocol other than the wall's (so runs of two protocols into one
/// directory keep their own files).
fn run_name(scene_name: &str, scene: &Scene, p: Point, protocol: Protocol) -> String {
    let name = format!(
        "{scene_name}_{}_mu{}_e{}_seed{}",
        scene.solver, p.friction, scene.params.restitution, p.seed
    );
    match protocol {
        Protocol::Wall => name,
        other => format!("{name}_{}", other.name()),
    }
}

/// A run's statepoint file name: `run_name.json`.
fn statepoint_name(scene_name: &str, scene: &Scene, p: Point, protocol: Protocol) -> String {
    run_name(scene_name, scene, p, protocol) + ".json"
}

/// Where and how often a sweep writes VTK series (`--vtk-dir`, `--vtk-every`).
struct VtkOut {
    dir: PathBuf,
    every: u64,
    scene_name: String,
}

/// One run's statepoint: what was run (scene, method, every parameter, seed, protocol,
/// commit), what came out, and its CSV row by column name (`merge` rebuilds the CSV
/// from these strings, so the rebuilt rows are the sweep's, byte for byte).
fn statepoint(
    scene_arg: &str,
    scene_name: &str,
    scene: &Scene,
    config: &ReposeConfig,
    p: Point,
    r: &ReposeResult,
    row: &[String],
) -> serde_json::Value {
    let run = p.scene(scene);
    let m = &r.measurement;
    let phase = |ph: &impulse_lab::repose::PhaseReport| {
        serde_json::json!({
            "duration_s": ph.duration,
            "settled": ph.settled,
            "ke_ratio": ph.ke_ratio,
        })
    };
    let csv: serde_json::Map<String, serde_json::Value> = columns()
        .into_iter()
        .zip(row.iter().map(|v| serde_json::Value::String(v.clone())))
        .collect();
    serde_json::json!({
        "format": STATEPOINT_FORMAT,
        "scene": scene_name,
        "scene_file": scene_arg,
        "protocol": config.protocol.name(),
        "solver": run.solver.to_string(),
        "seed": p.seed,
        "friction": p.friction,
        "restitution": run.params.restitution,
        "dt": run.dt,
        "gravity": run.gravity,
        "params": run.params,
        "rotation": format!("{:?}", run.rotation),
        "settle": {
            "ke_ratio": config.ke_ratio,
            "hold_s": config.hold,
            "max_time_s": config.max_time,
            "pack_friction": config.pack_friction,
        },
        "tilt_rate_deg_per_s": (config.protocol == Protocol::Tilt).then_some(config.tilt_rate),
        "drum": r.drum.as_ref().map(|d| serde_json::json!({
            "froude": d.froude,
            "omega_rad_per_s": d.omega,
            "radius_m": d.radius,
            "turns": d.turns,
            "turns_measured": d.turns_measured,
            "samples": d.samples,
            "mean_deg": d.mean_deg,
            "std_deg": d.std_deg,
        })),
        "reference_angle": scene.reference_angle,
        "commit": commit(),
        "version": env!("CARGO_PKG_VERSION"),
        "result": {
            "angle_deg": m.angle_deg,
            "error_deg": m.error_deg,
            "row_angles_deg": m.row_angles_deg,
            "rows_fitted": m.rows_fitted,
            "empty_cells": m.empty_cells,
            "packing": phase(&r.packing),
            "slumping": phase(&r.slumping),
            "bodies_lost": r.bodies_lost,
            "pack_friction": r.pack_friction,
            "caveats": caveats(config, r),
            "slope_after_tilt_deg": (config.protocol == Protocol::Tilt).then(|| slope_after_tilt(r)),
        },
        "csv": csv,
    })
}

/// The CSV row a statepoint holds, in the order of [`columns`].
fn statepoint_row(path: &Path) -> Result<csv::StringRecord, Failure> {
    let file = path.display();
    let bad = |why: String| Failure::invalid(format!("{file}: {why}"));
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    if v["format"] != STATEPOINT_FORMAT {
        return Err(bad(format!(
            "not a repose statepoint (its format is not \"{STATEPOINT_FORMAT}\")"
        )));
    }
    let csv = v["csv"]
        .as_object()
        .ok_or_else(|| bad("the statepoint has no csv object".into()))?;
    let columns = columns();
    if let Some(extra) = csv.keys().find(|k| !columns.contains(k)) {
        return Err(bad(format!("unknown CSV column {extra}")));
    }
    let fields = columns
        .iter()
        .map(|c| match csv.get(c) {
            Some(serde_json::Value::String(s)) => Ok(s.as_str()),
            Some(_) => Err(bad(format!("csv.{c} is not a string"))),
            None => Err(bad(format!("csv.{c} is missing"))),
        })
        .collect::<Result<Vec<&str>, Failure>>()?;
    Ok(csv::StringRecord::from(fields))
}

/// One experiment: (point, result, number of bodies, wall-clock seconds).
/// The most simulated time one run of `scene` under `config` can take (s;
/// [`ReposeTracker::run_cap`]), the drum's period from the scene's drum.
fn run_budget(scene: &Scene, config: &ReposeConfig) -> f64 {
    let period = scene
        .build_world()
        .ok()
        .and_then(|w| {
            let (_, drum) = DrumGeometry::of_world(&w).ok()?;
            let omega = (config.drum_froude * w.gravity.norm() / drum.radius).sqrt();
            Some(std::f64::consts::TAU / omega)
        })
        .unwrap_or(f64::INFINITY);
    impulse_lab::repose::ReposeTracker::run_cap(config, period)
}

/// One run of the sweep. `overall` is the sweep's bar and this run's share of it (ms of
/// simulated time, [`run_budget`]): the run advances it as it steps and fills its share
/// when it ends.
fn run_point(
    scene: &Scene,
    config: &ReposeConfig,
    p: Point,
    bars: &MultiProgress,
    vtk: Option<&VtkOut>,
    (overall, share_ms): (&ProgressBar, u64),
) -> Result<(Point, ReposeResult, usize, f64), Failure> {
    let label = p.label();
    let start = Instant::now();
    let scene = p.scene(scene);
    let world = scene
        .build_world()
        .map_err(|e| Failure::invalid(format!("{label}: {e}")))?;
    let bodies = world.bodies.iter().filter(|b| !b.is_static()).count();
    let steps_per_phase = (config.max_time / world.dt).ceil().max(1.0) as u64;
    let mut exp = ReposeExperiment::new(world, config.clone())
        .map_err(|e| Failure::invalid(format!("{label}: {e}")))?;
    let bar = bars.add(ProgressBar::new(2 * steps_per_phase));
    bar.set_style(
        ProgressStyle::with_template("  {prefix:>24} {msg:<34} [{bar:20}] {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_prefix(label.clone());
    let verr = |e: std::io::Error| Failure::runtime(format!("{label}: --vtk-dir: {e}"));
    let vtk_out = vtk
        .map(|v| {
            output::OutputDir::create(
                &v.dir
                    .join(run_name(&v.scene_name, &scene, p, config.protocol)),
                impulse_lab::vtk::is_series_file,
            )
            .map_err(|e| Failure::runtime(format!("{label}: --vtk-dir: {e}")))
        })
        .transpose()?;
    let mut series = vtk_out
        .as_ref()
        .map(|d| impulse_lab::vtk::VtkSeries::new(d.dir()));
    let mut vtk_error = None;
    let mut last_frame = None;
    // Of this run's share of the overall bar, what it has reported (ms).
    let mut reported_ms = 0u64;
    if let Some(s) = series.as_mut() {
        s.frame(&exp.world).map_err(verr)?;
        last_frame = Some(exp.world.step_index);
    }
    let result = exp
        .run(|e| {
            if let (Some(s), Some(v)) = (series.as_mut(), vtk)
                && vtk_error.is_none()
                && e.world.step_index % v.every == 0
            {
                match s.frame(&e.world) {
                    Ok(()) => last_frame = Some(e.world.step_index),
                    Err(err) => vtk_error = Some(err),
                }
            }
            if e.world.step_index % 60 == 0 {
                let run_cap = share_ms as f64 * 1e-3;
                let done_ms =
                    ((run_cap - e.tracker.progress(&e.world).left_at_most()).max(0.0) * 1e3) as u64;
                let done_ms = done_ms.min(share_ms);
                overall.inc(done_ms.saturating_sub(reported_ms));
                reported_ms = reported_ms.max(done_ms);
                // Packing fills the bar's first half, slumping the second.
                let done = match e.phase() {
                    impulse_lab::repose::Phase::Packing => 0,
                    _ => steps_per_phase,
                };
                bar.set_position(done + (e.phase_time() / e.world.dt).round() as u64);
                let tilt = e.tracker.tilt_deg(&e.world);
                bar.set_message(format!(
                    "{}{} t={:.1}s K/ΔU={:.1e}",
                    e.phase().name(),
                    if e.tracker.tilt().is_some() {
                        format!(" tilt {tilt:.1}°")
                    } else if e.tracker.drum().is_some() {
                        format!(" drum {:.2} turns", e.tracker.drum_turns(&e.world))
                    } else {
                        String::new()
                    },
                    e.phase_time(),
                    e.ke_ratio()
                ));
            }
        })
        .cloned()
        .map_err(|e| Failure::runtime(format!("{label}: {e}")));
    bar.finish_and_clear();
    bars.remove(&bar);
    overall.inc(share_ms.saturating_sub(reported_ms));
    let result = result?;
    if let Some(e) = vtk_error {
        return Err(verr(e));
    }
    if let (Some(mut s), Some(dir)) = (series, vtk_out) {
        if last_frame != Some(exp.world.step_index) {
            s.frame(&exp.world).map_err(verr)?;
        }
        s.finish(&exp.world).map_err(verr)?;
        dir.commit()
            .map_err(|e| Failure::runtime(format!("{label}: --vtk-dir: {e}")))?;
    }
    Ok((p, result, bodies, start.elapsed().as_secs_f64()))
}

/// The video file of one run.
#[cfg(feature = "app")]
fn video_path(dir: &Path, scene_name: &str, scene: &Scene, p: Point) -> PathBuf {
    dir.join(format!(
        "{scene_name}_{}_mu{}_seed{}.mp4",
        scene.solver, p.friction, p.seed
    ))
}

/// `--video-dir`: the directory exists or is created, and a video can be written in it
/// (checked before any run).
#[cfg(feature = "app")]
fn video_dir_checked(dir: &Path) -> Result<PathBuf, Failure> {
    use impulse_lab::video::{VideoFormat, check_output};
    std::fs::create_dir_all(dir).map_err(|e| {
        Failure::invalid(format!("--video-dir {}: cannot create: {e}", dir.display()))
    })?;
    // A probe file, removed again: the videos themselves are written run by run.
    let probe = dir.join(".impulse-lab-write-test.mp4");
    check_output(&probe, VideoFormat::Mp4)
        .map_err(|e| Failure::invalid(format!("--video-dir: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir.to_path_buf())
}

#[cfg(not(feature = "app"))]
fn video_dir_checked(_: &Path) -> Result<PathBuf, Failure> {
    Err(Failure::invalid(
        "--video-dir needs the app (build with the default `app` feature)",
    ))
}

/// One experiment recorded as a video (`--video-dir`): the app's simulation with the
/// repose tracker, rendered off-screen one frame per 1/30 s of simulated time until the
/// pile is measured. The steps are those of [`run_point`] (the tracker sees every world
/// step), so the row is the same as without the video.
#[cfg(feature = "app")]
fn run_point_recorded(
    scene: &Scene,
    config: &ReposeConfig,
    p: Point,
    dir: &Path,
    scene_name: &str,
) -> Result<(Point, ReposeResult, usize, f64), Failure> {
    use impulse_lab::app::record::{self, CameraPreset, RecordOptions};
    use impulse_lab::app::simulation::Simulation;
    use impulse_lab::repose::Phase;
    use impulse_lab::video::VideoFormat;
    let label = p.label();
    let start = Instant::now();
    let scene = p.scene(scene);
    let out = video_path(dir, scene_name, &scene, p);
    let mut sim = Simulation::from_scene(scene.clone(), None, None)
        .map_err(|e| Failure::invalid(format!("{label}: {e}")))?;
    let bodies = sim.world.bodies.iter().filter(|b| !b.is_static()).count();
    sim.start_repose(config.clone())
        .map_err(|e| Failure::invalid(format!("{label}: {e}")))?;
    let options = RecordOptions {
        out,
        format: VideoFormat::Mp4,
        // Both phases at their cap, and a second to spare.
        duration: 2.0 * config.max_time + 1.0,
        fps: 30.0,
        size: (960, 540),
        camera: CameraPreset::Default,
        // Chosen from the adapter (fast on a software renderer).
        quality: None,
        render_scale: None,
        // The phase and parameters on every frame: the video documents the run.
        caption: true,
    };
    let done = |s: &Simulation| s.repose.as_ref().is_some_and(|t| t.phase() == Phase::Done);
    let (_, sim) = record::record_until(sim, &options, &done, &mut |_, _| {})
        .map_err(|e| Failure::runtime(format!("{label}: recording: {e}")))?;
    let result = sim
        .repose
        .as_ref()
        .and_then(|t| t.result().cloned())
        .ok_or_else(|| {
            Failure::runtime(format!(
                "{label}: the video ended before the pile was measured"
            ))
        })?;
    Ok((p, result, bodies, start.elapsed().as_secs_f64()))
}

#[cfg(not(feature = "app"))]
fn run_point_recorded(
    _: &Scene,
    _: &ReposeConfig,
    _: Point,
    _: &Path,
    _: &str,
) -> Result<(Point, ReposeResult, usize, f64), Failure> {
    Err(Failure::invalid("--video-dir needs the app"))
}

/// The merge key: (scene, solver, μ, e, seed, protocol), the sweep's canonical order.
type MergeKey = (String, String, f64, f64, u64, String);

/// A row's [`MergeKey`].
fn key(r: &csv::StringRecord, file: &str) -> Result<MergeKey, Failure> {
    let field = |i: usize| r.get(i).unwrap_or("");
    let num = |i: usize, name: &str| {
        field(i)
            .parse::<f64>()
            .map_err(|_| Failure::invalid(format!("{file}: {name} '{}' is not a number", field(i))))
    };
    Ok((
        field(0).to_string(),
        field(2).to_string(),
        num(3, "friction")?,
        num(4, "restitution")?,
        field(5).parse().map_err(|_| {
            Failure::invalid(format!("{file}: seed '{}' is not a whole number", field(5)))
        })?,
        field(
            columns()
                .iter()
                .position(|c| c == "protocol")
                .unwrap_or(usize::MAX),
        )
        .to_string(),
    ))
}

pub fn merge(args: MergeArgs) -> Result<(), Failure> {
    let header = columns();
    let mut rows = Vec::new();
    let mut statepoints = Vec::new();
    let mut csvs = Vec::new();
    for path in &args.inputs {
        if path.is_dir() {
            let entries = std::fs::read_dir(path)
                .map_err(|e| Failure::invalid(format!("{}: cannot read: {e}", path.display())))?;
            let mut found: Vec<PathBuf> = Vec::new();
            for e in entries {
                let e = e.map_err(|e| Failure::invalid(format!("{}: {e}", path.display())))?;
                let p = e.path();
                if p.extension().is_some_and(|x| x == "json") && p.is_file() {
                    found.push(p);
                }
            }
            if found.is_empty() {
                return Err(Failure::invalid(format!(
                    "{}: no statepoint (*.json) in the directory",
                    path.display()
                )));
            }
            found.sort();
            statepoints.extend(found);
        } else if path.extension().is_some_and(|x| x == "json") {
            statepoints.push(path.clone());
        } else {
            csvs.push(path);
        }
    }
    for path in &statepoints {
        let r = statepoint_row(path)?;
        rows.push((key(&r, &path.display().to_string())?, r));
    }
    for path in csvs {
        let file = path.display().to_string();
        let mut reader = csv::Reader::from_path(path)
            .map_err(|e| Failure::invalid(format!("{file}: cannot read: {e}")))?;
        let h = reader
            .headers()
            .map_err(|e| Failure::invalid(format!("{file}: {e}")))?;
        if h.iter().collect::<Vec<_>>() != header.iter().map(String::as_str).collect::<Vec<_>>() {
            return Err(Failure::invalid(format!(
                "{file}: not a `impulse-lab repose` CSV (its header differs)"
            )));
        }
        for r in reader.records() {
            let r = r.map_err(|e| Failure::invalid(format!("{file}: {e}")))?;
            rows.push((key(&r, &file)?, r));
        }
    }
    rows.sort_by(|(a, _), (b, _)| {
        (&a.0, &a.1)
            .cmp(&(&b.0, &b.1))
            .then(a.2.total_cmp(&b.2))
            .then(a.3.total_cmp(&b.3))
            .then(a.4.cmp(&b.4))
            .then(a.5.cmp(&b.5))
    });
    if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
        let k = &w[0].0;
        return Err(Failure::invalid(format!(
            "the run ({}, {}, μ = {}, e = {}, seed {}, protocol {}) appears twice",
            k.0, k.1, k.2, k.3, k.4, k.5
        )));
    }
    output::check_distinct(
        std::iter::once(&args.out)
            .chain(&args.plot)
            .map(PathBuf::as_path),
    )
    .map_err(|e| Failure::invalid(e.to_string()))?;
    let plot_out = args.plot.as_deref().map(create_output).transpose()?;
    let mut writer = csv::Writer::from_writer(create_output(&args.out)?);
    let werr = |e: csv::Error| Failure::runtime(format!("writing {}: {e}", args.out.display()));
    writer.write_record(&header).map_err(werr)?;
    for (_, r) in &rows {
        writer.write_record(r).map_err(werr)?;
    }
    let csv = writer
        .into_inner()
        .map_err(|e| Failure::runtime(format!("writing {}: {}", args.out.display(), e.error())))?;
    if let Some(out) = plot_out {
        let runs = plot_runs(rows.iter().map(|(_, r)| r.iter().collect()));
        write_plot(&runs, out)?;
    }
    csv.commit().map_err(|e| Failure::runtime(e.to_string()))
}
