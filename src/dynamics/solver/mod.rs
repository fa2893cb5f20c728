//! Collision solvers behind one trait.
//!
//! A solver receives the bodies (with pre-collision velocities, i.e. after the external
//! forces of the step have been applied) and the contacts detected at the current
//! positions, and changes velocities (and, for methods with position projection,
//! positions) so that no contact is left approaching. It reports what it dissipated so
//! the energy ledger can tell physical dissipation from artificial energy.
//!
//! Methods (paper in `../shared/papers`):
//! - `jolt`: particle velocity-jolt with position projection (paper 001) — [`jolt`].
//! - `etm`, `sqm`, `smm`: energy tracking, sequential and simultaneous impulses (paper 000).
//! - `ccp`: cone complementarity, projected fixed point (paper 002).
//! - `mdp`: maximum dissipation, block Gauss-Seidel (paper 003).

pub mod etm;
pub mod jolt;
pub mod prepared;
pub mod smm;
pub mod sqm;

use crate::body::RigidBody;
use crate::collision::Contact;
use crate::math::Vec3;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The collision methods of the papers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SolverKind {
    Etm,
    Sqm,
    Smm,
    Jolt,
    Ccp,
    Mdp,
}

impl SolverKind {
    pub const ALL: [SolverKind; 6] = [
        SolverKind::Etm,
        SolverKind::Sqm,
        SolverKind::Smm,
        SolverKind::Jolt,
        SolverKind::Ccp,
        SolverKind::Mdp,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Etm => "etm",
            SolverKind::Sqm => "sqm",
            SolverKind::Smm => "smm",
            SolverKind::Jolt => "jolt",
            SolverKind::Ccp => "ccp",
            SolverKind::Mdp => "mdp",
        }
    }

    /// Whether this build has the method. Unimplemented methods are refused, not faked.
    pub fn is_implemented(self) -> bool {
        matches!(
            self,
            SolverKind::Etm | SolverKind::Sqm | SolverKind::Smm | SolverKind::Jolt
        )
    }

    /// A fresh solver instance, or an error naming the method if it is not implemented.
    pub fn create(self) -> Result<Box<dyn CollisionSolver>, SolverError> {
        match self {
            SolverKind::Jolt => Ok(Box::new(jolt::JoltSolver::default())),
            SolverKind::Etm => Ok(Box::new(etm::EtmSolver::default())),
            SolverKind::Sqm => Ok(Box::new(sqm::SqmSolver::default())),
            SolverKind::Smm => Ok(Box::new(smm::SmmSolver::default())),
            other => Err(SolverError::NotImplemented(other)),
        }
    }
}

impl fmt::Display for SolverKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SolverKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SolverKind::ALL
            .into_iter()
            .find(|k| k.name() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                let names: Vec<_> = SolverKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown solver '{s}'; expected one of {}", names.join(", "))
            })
    }
}

/// User-tunable solver parameters. Each solver reads the ones that apply to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SolverParams {
    /// Coefficient of restitution e ∈ [0, 1] (Newton's for jolt/SQM/SMM, Stronge's energetic
    /// one for ETM, paper 000 eq. 65). Default: 0.5.
    pub restitution: f64,
    /// Coulomb friction coefficient μ ≥ 0. Default: 0.3.
    pub friction: f64,
    /// ETM's λ ≥ 1 (paper 000, eq. 62): the number of increments the stored elastic energy
    /// is released in. Default: 30.
    pub lambda: f64,
    /// Position-projection factor k_p ∈ [0, 1] (paper 001, eqs. 5.27, B.18); stable for
    /// k_p < 0.5 (eq. B.22). Default: 0.2.
    pub kp: f64,
    /// Iteration cap of iterative solvers (sweeps). Default: 100.
    pub max_iterations: u32,
    /// Convergence tolerance of iterative solvers (relative). Default: 1e-8.
    pub tolerance: f64,
    /// Approach speeds (m/s) below this are treated as resting contact: restitution is not
    /// applied (prevents jitter of resting piles). Default: 0 (always apply e).
    pub rest_velocity: f64,
    /// Run the shock-propagation contact pass after the solver (Guendelman et al. 2003,
    /// see `dynamics::contact_pass`), so that piles come to rest. It touches only
    /// contacts the solver left approaching. Default: true.
    pub contact_pass: bool,
    /// Rolling resistance μ_r (m): the contact pass resists rolling with a torque up to
    /// μ_r × the normal force (the rolling-friction model of discrete-element codes,
    /// e.g. Zhou et al. 1999). Default: 0 (point contacts: a rigid sphere rolls forever).
    pub rolling_friction: f64,
    /// Spinning (torsional) friction μ_s (m): torque about the contact normal up to
    /// μ_s × the normal force (a contact patch; Bullet's spinning friction, MuJoCo's
    /// torsional friction). Default: 0 (a point contact cannot stop a spin about n).
    pub spinning_friction: f64,
}

impl Default for SolverParams {
    fn default() -> Self {
        SolverParams {
            restitution: 0.5,
            friction: 0.3,
            lambda: 30.0,
            kp: 0.2,
            max_iterations: 100,
            tolerance: 1e-8,
            rest_velocity: 0.0,
            contact_pass: true,
            rolling_friction: 0.0,
            spinning_friction: 0.0,
        }
    }
}

impl SolverParams {
    /// Approach speed (m/s) up to which a contact counts as *resting* and is left to the
    /// contact pass: `rest_velocity` when the pass runs, else 0 (the solver resolves
    /// everything). ETM, SQM and SMM resolve only faster approaches (the collision pass
    /// of Guendelman et al. 2003), see `dynamics::contact_pass`.
    pub fn resting_speed(&self) -> f64 {
        if self.contact_pass {
            self.rest_velocity
        } else {
            0.0
        }
    }

    /// Range checks; the error names the offending field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let check = |ok: bool, field: &'static str, msg: String| {
            if ok { Ok(()) } else { Err((field, msg)) }
        };
        let e = self.restitution;
        check(
            e.is_finite() && (0.0..=1.0).contains(&e),
            "restitution",
            format!("e must be in [0, 1], got {e}"),
        )?;
        let mu = self.friction;
        check(
            mu.is_finite() && mu >= 0.0,
            "friction",
            format!("μ must be finite and ≥ 0, got {mu}"),
        )?;
        let l = self.lambda;
        check(
            l.is_finite() && l >= 1.0,
            "lambda",
            format!("λ must be finite and ≥ 1, got {l}"),
        )?;
        let kp = self.kp;
        check(
            kp.is_finite() && (0.0..=1.0).contains(&kp),
            "kp",
            format!("k_p must be in [0, 1], got {kp}"),
        )?;
        check(
            self.max_iterations >= 1,
            "max_iterations",
            "max_iterations must be ≥ 1".into(),
        )?;
        let t = self.tolerance;
        check(
            t.is_finite() && t > 0.0,
            "tolerance",
            format!("tolerance must be finite and > 0, got {t}"),
        )?;
        for (field, v) in [
            ("rolling_friction", self.rolling_friction),
            ("spinning_friction", self.spinning_friction),
        ] {
            check(
                v.is_finite() && v >= 0.0,
                field,
                format!("{field} must be finite and ≥ 0, got {v}"),
            )?;
        }
        let rv = self.rest_velocity;
        check(
            rv.is_finite() && rv >= 0.0,
            "rest_velocity",
            format!("rest_velocity must be ≥ 0, got {rv}"),
        )
    }
}

/// What a solver did in one step; the energy ledger consumes the energy fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolverReport {
    /// Kinetic energy removed by the normal (restitution) part of the impulses (J).
    pub dissipated_restitution: f64,
    /// Kinetic energy removed by the tangential (friction) part of the impulses (J).
    pub dissipated_friction: f64,
    /// Elastic energy stored in contacts at the end of the step (J), for solvers that
    /// track it (ETM); 0 otherwise.
    pub elastic: f64,
    /// Iterations (rounds, sweeps) used.
    pub iterations: u32,
    /// Whether the iteration cap was hit before convergence.
    pub hit_iteration_cap: bool,
    /// Number of impulses applied.
    pub impulses: u32,
}

/// A solver failure the caller must not paper over (e.g. a singular system, divergence).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolverError {
    #[error("solver '{0}' is not implemented yet")]
    NotImplemented(SolverKind),
    #[error("solver '{solver}' diverged: {why}")]
    Diverged { solver: SolverKind, why: String },
}

/// One recorded iteration of a solver's inner loop: the data of paper 000's Fig. 4 and
/// Fig. 6b for ETM, the impulse sequence for SQM/SMM, the iterations of CCP/MDP.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceRow {
    /// Iteration counter s_k within the step (0-based, increasing).
    pub iteration: u32,
    /// Stage of the method, e.g. "compression", "restitution", "separation" (ETM),
    /// "impulse" (jolt, SQM, SMM).
    pub stage: &'static str,
    /// Index of the contact acted on (into the step's contact list).
    pub contact: usize,
    /// Relative normal velocity at that contact after the iteration (m/s).
    pub normal_velocity: f64,
    /// Impulse applied at that contact in this iteration (N s, world frame), on body a.
    pub impulse: [f64; 3],
    /// Elastic energy stored at that contact after the iteration (J); 0 if not tracked.
    pub elastic_energy: f64,
    /// Elastic energy stored in all contacts after the iteration (J).
    pub elastic_total: f64,
    /// Kinetic energy of all bodies after the iteration (J).
    pub kinetic_energy: f64,
    /// kinetic_energy + elastic_total (J).
    pub total_energy: f64,
}

impl SolverReport {
    /// Book the work of one impulse `p` (normal `n`) that changed the relative contact
    /// velocity from `u` to `u_after`: ΔK = p·(u⁻ + u⁺)/2 (paper 000, eq. 16), its normal
    /// part (eq. 18) as restitution dissipation and the rest as friction dissipation.
    /// Counts the impulse.
    pub fn book_impulse(&mut self, n: &Vec3, p: &Vec3, u: &Vec3, u_after: &Vec3) {
        let w_normal = p.dot(n) * 0.5 * (u.dot(n) + u_after.dot(n));
        let w_total = p.dot(&(0.5 * (u + u_after)));
        self.dissipated_restitution -= w_normal;
        self.dissipated_friction -= w_total - w_normal;
        self.impulses = self.impulses.saturating_add(1);
    }
}

/// Append an "impulse" trace row (methods that store no elastic energy) for impulse `p`
/// at contact `contact`, leaving normal velocity `normal_velocity`.
pub fn trace_impulse(
    trace: Option<&mut Vec<TraceRow>>,
    bodies: &[RigidBody],
    iteration: u32,
    contact: usize,
    normal_velocity: f64,
    p: &Vec3,
) {
    if let Some(rows) = trace {
        let kinetic_energy = total_kinetic_energy(bodies);
        rows.push(TraceRow {
            iteration,
            stage: "impulse",
            contact,
            normal_velocity,
            impulse: [p.x, p.y, p.z],
            elastic_energy: 0.0,
            elastic_total: 0.0,
            kinetic_energy,
            total_energy: kinetic_energy,
        });
    }
}

/// Kinetic energy of all bodies (for trace rows).
pub fn total_kinetic_energy(bodies: &[RigidBody]) -> f64 {
    bodies
        .iter()
        .map(|b| b.kinetic_energy_translational() + b.kinetic_energy_rotational())
        .sum()
}

/// Everything a solver may read or change in one step.
pub struct SolverContext<'a> {
    pub bodies: &'a mut [RigidBody],
    pub contacts: &'a [Contact],
    pub params: &'a SolverParams,
    /// Time step (s).
    pub dt: f64,
    /// When `Some`, the solver appends one [`TraceRow`] per inner iteration.
    pub trace: Option<&'a mut Vec<TraceRow>>,
}

/// A collision-resolution method.
pub trait CollisionSolver: Send {
    fn kind(&self) -> SolverKind;
    /// Resolve the step's contacts (see the module doc).
    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError>;
}
