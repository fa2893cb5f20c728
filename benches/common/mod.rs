//! Pieces shared by the bench programs (`pile`, `peer`): command-line arguments, the
//! thread pool the worlds step in, per-phase timing of [`World::step`] and the CSV
//! output directory.

use impulse_lab::World;
use impulse_lab::collision::ManifoldCounts;
use impulse_lab::dynamics::solver::SolverKind;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

/// The world step's phases, in [`impulse_lab::world::PhaseTimes`] order (`src/world.rs`:
/// broad phase, narrow phase, solve = velocity kick + collision solver, contact pass =
/// contact pass + position projection, integrate = drift + sleeping, measure).
pub const PHASE_COLUMNS: &str =
    "broad_phase_us,narrow_phase_us,solve_us,contact_pass_us,integrate_us,measure_us";

/// Arguments after `cargo bench --bench NAME --`: positional `SCENE[,SCENE...] [STEPS]
/// [SOLVER...]` and `--NAME VALUE` options (`--bench`, added by cargo, is dropped).
pub struct BenchArgs {
    positional: Vec<String>,
    options: Vec<(String, String)>,
}

impl BenchArgs {
    /// The process arguments; `known` lists the option names accepted (without `--`).
    pub fn from_env(known: &[&str]) -> Result<Self, String> {
        let mut positional = Vec::new();
        let mut options = Vec::new();
        let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
        while let Some(a) = args.next() {
            if let Some(name) = a.strip_prefix("--") {
                if !known.contains(&name) {
                    return Err(format!(
                        "unknown option --{name}; known: {}",
                        known
                            .iter()
                            .map(|k| format!("--{k}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                let value = args
                    .next()
                    .ok_or_else(|| format!("--{name} needs a value"))?;
                options.push((name.to_string(), value));
            } else {
                positional.push(a);
            }
        }
        Ok(BenchArgs {
            positional,
            options,
        })
    }

    /// The comma-separated scene list (first positional argument), or `default`.
    pub fn scenes(&self, default: &[&str]) -> Vec<String> {
        match self.positional.first() {
            Some(s) => s.split(',').map(str::to_string).collect(),
            None => default.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The step count (second positional argument), or `default`.
    pub fn steps(&self, default: u64) -> Result<u64, String> {
        match self.positional.get(1) {
            Some(s) => match s.parse() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(format!("steps must be a whole number > 0, got '{s}'")),
            },
            None => Ok(default),
        }
    }

    /// The solvers named after the step count, or every implemented one.
    pub fn solvers(&self) -> Result<Vec<SolverKind>, String> {
        if self.positional.len() > 2 {
            self.positional[2..].iter().map(|s| s.parse()).collect()
        } else {
            Ok(SolverKind::ALL.into_iter().collect())
        }
    }

    /// The value of option `--name`, or `default`.
    pub fn option<T: FromStr>(&self, name: &str, default: T) -> Result<T, String> {
        match self.options.iter().rev().find(|(n, _)| n == name) {
            Some((_, v)) => v
                .parse()
                .map_err(|_| format!("--{name}: cannot read '{v}'")),
            None => Ok(default),
        }
    }
}

/// A rayon pool of `threads` threads: the worlds step inside it (`pool.install`), so any
/// parallel work of the world uses exactly that many threads.
pub fn thread_pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap_or_else(|e| panic!("cannot build a pool of {threads} threads: {e}"))
}

/// `target/bench` of the source tree (created), where the benches write their CSV.
pub fn out_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench");
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// Sums over the steps of one world: wall time of [`World::step`] and its phases,
/// contacts, solver iterations (sweeps for jolt, CCP, MDP; pops for SQM; rounds for ETM
/// and SMM) and the steps that hit the iteration cap.
#[derive(Clone, Debug, Default)]
pub struct PhaseSums {
    pub steps: u64,
    /// Wall time of the whole `step` calls.
    pub wall: Duration,
    phases: [Duration; 6],
    contacts: u64,
    iterations: u64,
    pub capped: u64,
    /// Contact-pass sweeps (`SolverReport::contact_sweeps`).
    pass_sweeps: u64,
    /// Per step: how the flat-faced pairs got their manifolds (`World::manifold_counts`).
    pub manifolds: Vec<ManifoldCounts>,
}

impl PhaseSums {
    /// Book one step that took `wall` and left `contacts` contacts, without phases (for
    /// an engine that does not time them).
    pub fn add_step(&mut self, wall: Duration, contacts: usize) {
        self.steps += 1;
        self.wall += wall;
        self.contacts += contacts as u64;
    }

    /// Book one step of `world` that took `wall` (call right after `world.step()`).
    pub fn add(&mut self, world: &World, wall: Duration) {
        self.add_step(wall, world.contacts.len());
        let t = world.last_times;
        for (s, d) in self.phases.iter_mut().zip([
            t.broad_phase,
            t.narrow_phase,
            t.solve,
            t.contact_pass,
            t.integrate,
            t.measure,
        ]) {
            *s += d;
        }
        self.iterations += u64::from(world.last_report.iterations);
        self.capped += u64::from(world.last_report.hit_iteration_cap);
        self.pass_sweeps += u64::from(world.last_report.contact_sweeps);
        self.manifolds.push(world.manifold_counts());
    }

    /// Recycled flat-faced pairs over all flat-faced pairs, in percent, over the steps
    /// from `from` on (`None` when there was none).
    pub fn recycled_percent(&self, from: usize) -> Option<f64> {
        let c: ManifoldCounts = self.manifolds.iter().skip(from).copied().sum();
        let all = c.recycled + c.recomputed + c.new;
        (all > 0).then(|| 100.0 * c.recycled as f64 / all as f64)
    }

    fn per_step(&self, d: Duration) -> f64 {
        d.as_secs_f64() * 1e6 / self.steps.max(1) as f64
    }

    /// Mean µs per step of each phase, in [`PHASE_COLUMNS`] order.
    pub fn phase_us(&self) -> [f64; 6] {
        self.phases.map(|d| self.per_step(d))
    }

    /// Mean µs per step of the whole step.
    pub fn step_us(&self) -> f64 {
        self.per_step(self.wall)
    }

    /// Steps per second of wall time.
    pub fn rate(&self) -> f64 {
        self.steps as f64 / self.wall.as_secs_f64()
    }

    pub fn mean_contacts(&self) -> f64 {
        self.contacts as f64 / self.steps.max(1) as f64
    }

    pub fn iterations_per_step(&self) -> f64 {
        self.iterations as f64 / self.steps.max(1) as f64
    }

    /// Mean contact-pass sweeps per step.
    pub fn pass_sweeps_per_step(&self) -> f64 {
        self.pass_sweeps as f64 / self.steps.max(1) as f64
    }

    /// The phase columns as CSV fields (µs per step, 2 decimals).
    pub fn phase_csv(&self) -> String {
        self.phase_us().map(|x| format!("{x:.2}")).join(",")
    }
}
