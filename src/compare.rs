//! Compare mode: one scene run side by side with two or three collision methods.
//!
//! A [`Comparison`] builds the same scene N times (2 ≤ N ≤ [`MAX_RUNS`]), each world with
//! its own [`SolverKind`] and, optionally, its own [`SolverParams`] (otherwise the
//! scene's, shared by all runs), and steps them in lockstep: the same time step h and
//! the same number of steps. Each run is built and stepped exactly as the world of
//! [`Scene::build_world`] stepped alone would be, so run *i* after K steps is
//! bit-identical to that world (`tests/compare.rs`).
//!
//! Per run it keeps the energy ledger's samples ([`EnergySample`], one per step) and a
//! [`Divergence`] against the first run:
//! - position: max over bodies j of |x_j − x_j^ref| (m), and the body attaining it;
//! - orientation: max over bodies of the angle θ_j of the relative rotation
//!   q_j^ref⁻¹ q_j (rad, in [0, π]), computed as θ = 4 atan2(|q − q_ref|, |q + q_ref|)
//!   (sign of q chosen so that q·q_ref ≥ 0), exact 0 for equal orientations;
//! - total energy (kinetic + potential + elastic, the ledger's `total`):
//!   ΔE = E − E^ref (J) and ΔE / |E^ref| (relative; NaN when E^ref = 0).

use crate::dynamics::solver::{SolverError, SolverKind, SolverParams};
use crate::energy::EnergySample;
use crate::scene::{Scene, SceneError};
use crate::world::World;

/// Most runs a comparison holds (the app shows them side by side).
pub const MAX_RUNS: usize = 3;

/// One run of a comparison: the method and, optionally, its own parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSpec {
    pub solver: SolverKind,
    /// Parameters of this run; `None`: the scene's (shared by every run without its own).
    pub params: Option<SolverParams>,
}

impl RunSpec {
    /// A run with `solver` and the scene's parameters.
    pub fn solver(solver: SolverKind) -> Self {
        RunSpec {
            solver,
            params: None,
        }
    }
}

/// One world of the comparison and its energy history.
pub struct Run {
    /// Display label: the solver name, with the run index when a solver repeats.
    pub label: String,
    pub spec: RunSpec,
    pub world: World,
    /// The ledger's sample at step 0 and after every step.
    pub samples: Vec<EnergySample>,
}

/// How far a run has drifted from the first run (module doc for the formulas).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Divergence {
    /// Largest body position difference (m).
    pub position: f64,
    /// The body with that difference (`None` for a world without bodies).
    pub position_body: Option<usize>,
    /// Largest body orientation difference (rad).
    pub orientation: f64,
    /// The body with that difference.
    pub orientation_body: Option<usize>,
    /// Total energy of the run minus that of the first run (J).
    pub energy: f64,
    /// `energy` over |total energy of the first run| (NaN if that is 0).
    pub energy_relative: f64,
}

impl Divergence {
    /// The divergence of `other` from `reference` at their current states, with total
    /// energies `e_other`, `e_reference` (J). Both worlds must hold the same bodies.
    pub fn between(reference: &World, other: &World, e_reference: f64, e_other: f64) -> Self {
        debug_assert_eq!(reference.bodies.len(), other.bodies.len());
        let mut d = Divergence {
            energy: e_other - e_reference,
            energy_relative: if e_reference == 0.0 {
                f64::NAN
            } else {
                (e_other - e_reference) / e_reference.abs()
            },
            ..Default::default()
        };
        for (j, (r, o)) in reference.bodies.iter().zip(&other.bodies).enumerate() {
            let dx = (o.position - r.position).norm();
            if d.position_body.is_none() || dx > d.position {
                d.position = dx;
                d.position_body = Some(j);
            }
            // The relative rotation q_ref⁻¹ q turns by θ = 2φ, φ the 4-D angle between the
            // unit quaternions (q_ref·q = cos φ, sign chosen ≥ 0: q and −q are the same
            // rotation). |q − q_ref| = 2 sin(φ/2), |q + q_ref| = 2 cos(φ/2), so
            // θ = 4 atan2(|q − q_ref|, |q + q_ref|): exactly 0 for equal orientations and
            // well conditioned near 0, unlike acos.
            let (p, mut q) = (r.orientation.coords, o.orientation.coords);
            if p.dot(&q) < 0.0 {
                q = -q;
            }
            let angle = 4.0 * (q - p).norm().atan2((q + p).norm());
            if d.orientation_body.is_none() || angle > d.orientation {
                d.orientation = angle;
                d.orientation_body = Some(j);
            }
        }
        d
    }
}

/// Why a comparison cannot be built or stepped.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("a comparison needs 2 to {MAX_RUNS} runs, got {0}")]
    RunCount(usize),
    #[error("run {run}: {field}: {message}")]
    Params {
        run: usize,
        field: &'static str,
        message: String,
    },
    #[error(transparent)]
    Scene(#[from] SceneError),
    #[error("run {run} ({solver}): {}", source.at_step(*step))]
    Solver {
        run: usize,
        solver: SolverKind,
        step: u64,
        source: SolverError,
    },
}

/// The same scene stepped in lockstep with several methods (module doc).
pub struct Comparison {
    pub runs: Vec<Run>,
}

impl Comparison {
    /// Build one world per spec from `scene` (each at its initial state, ledger started).
    pub fn new(scene: &Scene, specs: &[RunSpec]) -> Result<Self, CompareError> {
        if !(2..=MAX_RUNS).contains(&specs.len()) {
            return Err(CompareError::RunCount(specs.len()));
        }
        let mut runs = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let world = build_run_world(scene, spec).map_err(|e| match e {
                RunBuildError::Params(field, message) => CompareError::Params {
                    run: i,
                    field,
                    message,
                },
                RunBuildError::Scene(e) => CompareError::Scene(e),
            })?;
            let repeated = specs.iter().filter(|s| s.solver == spec.solver).count() > 1;
            let label = if repeated {
                format!("{} #{}", spec.solver, i + 1)
            } else {
                spec.solver.to_string()
            };
            let mut run = Run {
                label,
                spec: spec.clone(),
                world,
                samples: Vec::new(),
            };
            let s0 = run.world.start_ledger();
            run.samples.push(s0);
            runs.push(run);
        }
        Ok(Comparison { runs })
    }

    /// A comparison of `solvers`, all with the scene's parameters.
    pub fn of_solvers(scene: &Scene, solvers: &[SolverKind]) -> Result<Self, CompareError> {
        let specs: Vec<RunSpec> = solvers.iter().map(|&k| RunSpec::solver(k)).collect();
        Comparison::new(scene, &specs)
    }

    /// Steps taken (the same for every run).
    pub fn steps(&self) -> u64 {
        self.runs[0].world.step_index
    }

    /// Simulated time (s).
    pub fn time(&self) -> f64 {
        self.runs[0].world.time
    }

    /// Advance every run by one step of the same h.
    pub fn step(&mut self) -> Result<(), CompareError> {
        for (i, run) in self.runs.iter_mut().enumerate() {
            let sample = run.world.step().map_err(|source| CompareError::Solver {
                run: i,
                solver: run.spec.solver,
                step: run.world.step_index + 1,
                source,
            })?;
            run.samples.push(sample);
        }
        Ok(())
    }

    /// Advance every run by `steps` steps.
    pub fn run(&mut self, steps: u64) -> Result<(), CompareError> {
        for _ in 0..steps {
            self.step()?;
        }
        Ok(())
    }

    /// The divergence of every run from the first at the current step (the first run's
    /// entry is all zeros).
    pub fn divergence(&self) -> Vec<Divergence> {
        let reference = &self.runs[0];
        let e_ref = last_total(reference);
        self.runs
            .iter()
            .map(|r| Divergence::between(&reference.world, &r.world, e_ref, last_total(r)))
            .collect()
    }
}

fn last_total(run: &Run) -> f64 {
    run.samples.last().map_or(0.0, |s| s.total)
}

enum RunBuildError {
    Params(&'static str, String),
    Scene(SceneError),
}

/// The world of one run: `scene` with the run's solver and parameters, built exactly as
/// [`Scene::build_world`] builds it.
fn build_run_world(scene: &Scene, spec: &RunSpec) -> Result<World, RunBuildError> {
    let mut scene = scene.clone();
    scene.solver = spec.solver;
    if let Some(p) = &spec.params {
        p.validate()
            .map_err(|(field, message)| RunBuildError::Params(field, message))?;
        scene.params = p.clone();
    }
    scene.build_world().map_err(RunBuildError::Scene)
}
