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
//! - `ccp`: cone complementarity, projected fixed point, Newmark (paper 002) — [`ccp`].
//! - `mdp`: maximum dissipation, block Gauss-Seidel across pairs and weighted Jacobi within
//!   a pair (paper 003) — [`mdp`].

pub mod ccp;
pub mod etm;
pub mod jolt;
pub mod mdp;
pub mod param_spec;
pub mod prepared;
pub mod smm;
pub mod sqm;

use crate::body::RigidBody;
use crate::collision::Contact;
use crate::dynamics::graph::ContactGraph;
use crate::dynamics::warm_start::ContactImpulses;
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

    /// A fresh solver instance.
    pub fn create(self) -> Box<dyn CollisionSolver> {
        match self {
            SolverKind::Jolt => Box::new(jolt::JoltSolver::default()),
            SolverKind::Etm => Box::new(etm::EtmSolver::default()),
            SolverKind::Sqm => Box::new(sqm::SqmSolver::default()),
            SolverKind::Smm => Box::new(smm::SmmSolver::default()),
            SolverKind::Ccp => Box::new(ccp::CcpSolver::default()),
            SolverKind::Mdp => Box::new(mdp::MdpSolver::default()),
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

/// Largest ETM λ accepted: ETM's compression budget per step is λ × the iteration cap
/// × the contacts (paper 000 uses λ = 30).
pub const MAX_LAMBDA: f64 = 1e4;
/// Largest iteration cap accepted (sweeps per step).
pub const MAX_ITERATIONS: u32 = 100_000;
/// Largest contact-pass sweep count accepted.
pub const MAX_CONTACT_SWEEPS: u32 = 10_000;

/// User-tunable solver parameters. Each solver reads the ones that apply to it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SolverParams {
    /// Coefficient of restitution e ∈ [0, 1] (Newton's for jolt/SQM/SMM, Stronge's energetic
    /// one for ETM, paper 000 eq. 65; not used by CCP, whose Newmark contact is elastic).
    /// Default: 0.5.
    pub restitution: f64,
    /// Coulomb friction coefficient μ ≥ 0. Default: 0.3.
    pub friction: f64,
    /// ETM's λ ∈ [1, 10⁴] (paper 000, eq. 62): the number of increments the stored elastic energy
    /// is released in. Default: 30.
    pub lambda: f64,
    /// Position-projection factor k_p ∈ [0, 1] (paper 001, eqs. 5.27, B.18); stable for
    /// k_p < 0.5 (eq. B.22). CCP uses it the same way, on overlaps only. Default: 0.2.
    pub kp: f64,
    /// Iteration cap of iterative solvers (sweeps), 1 to 10⁵. Default: 100.
    pub max_iterations: u32,
    /// Most projected Gauss-Seidel sweeps of the shared contact pass per step
    /// (`dynamics::contact_pass`); the sweeps stop earlier once no update changes a
    /// contact velocity by more than the pass's tolerance, and the warm start carries the
    /// rest of the convergence to the next step. Default: 25 (see
    /// `contact_pass::DEFAULT_SWEEPS`).
    pub contact_sweeps: u32,
    /// Convergence tolerance of iterative solvers (relative). Default: 1e-8.
    pub tolerance: f64,
    /// Approach speeds (m/s) below this are treated as resting contact: restitution is not
    /// applied (prevents jitter of resting piles), and with the contact pass on, the
    /// methods leave these contacts to it, whose Coulomb friction holds a body at rest
    /// within the cone whether or not its contacts approach. 0 makes the methods resolve
    /// every contact themselves (paper 000 §7); a block on a slope then creeps (a gravity
    /// kick of g h bounces with e, and what slip the sequential impulses leave is never
    /// removed). Default: 0.05 (three gravity kicks g h at h = 1/600 s).
    pub rest_velocity: f64,
    /// Run the shock-propagation contact pass after the solver (Guendelman et al. 2003,
    /// see `dynamics::contact_pass`), so that piles come to rest. It touches only
    /// contacts the solver left approaching. Default: true.
    pub contact_pass: bool,
    /// CCP: inner cohesion c ≥ 0 (N) of the contact law (paper 002, eq. 31): the shear
    /// force limit is μ p_n + c (eq. 57). Default: 0.
    pub cohesion: f64,
    /// CCP: equivalent friction factor μ* = μ + c/p_n ≥ 0 (paper 002, eq. 40). When > 0 the
    /// shear limit is μ* p_n, the friction cone C_j of eq. 43, instead of μ p_n + c;
    /// 0 means "derive it from `friction` and `cohesion`". Default: 0.
    pub equivalent_friction: f64,
    /// CCP: relaxation ω ∈ (0, 2) of the fixed-point step P − ω A (N P + b) (paper 002,
    /// eq. 52). With CCP's diagonal step matrix A (`dynamics::solver::ccp`, "Step
    /// matrix"), ω = 1 is the exact Gauss-Seidel step of each contact's normal; the paper
    /// uses 0.2 with its A = 3/Tr(N) I. Default: 1.
    pub ccp_omega: f64,
    /// CCP: relaxation τ ∈ (0, 1] of the update P ← τ Proj{…} + (1 − τ) P (paper 002,
    /// eq. 52; the paper uses 1). Default: 1.
    pub ccp_tau: f64,
    /// MDP's impulsive friction law (paper 003): `MaximumDissipation` (eq. 5, the post-impulse
    /// kinetic energy is minimised over the conic section) or `Coulomb` (friction opposes the
    /// post-impulse slip, for comparison, §4). Default: `MaximumDissipation`.
    pub mdp_friction: mdp::FrictionLaw,
    /// MDP's error-reduction factor ε ∈ [0, 1] (paper 003 §3.1): a penetration g < 0 enters
    /// the non-penetration condition as u_n⁺ ≥ −ε g/h, i.e. the solver pushes the bodies
    /// apart by the fraction ε of the overlap per step. 0 = no position correction (no energy
    /// added), 1 = remove the whole overlap in one step. Dimensionless. Default: 0.2.
    pub error_reduction: f64,
    /// Rolling resistance μ_r (m): the contact pass resists rolling with a torque up to
    /// μ_r × the normal force (the rolling-friction model of discrete-element codes,
    /// e.g. Zhou et al. 1999). Default: 0 (point contacts: a rigid sphere rolls forever).
    pub rolling_friction: f64,
    /// Spinning (torsional) friction μ_s (m): torque about the contact normal up to
    /// μ_s × the normal force (a contact patch; Bullet's spinning friction, MuJoCo's
    /// torsional friction). Default: 0 (a point contact cannot stop a spin about n).
    pub spinning_friction: f64,
    /// How the contact pass holds resting contacts (`dynamics::contact_pass`): `Hard`
    /// (projected Gauss-Seidel sweeps to convergence, shock propagation and paper 001's
    /// position projection) or `Soft` (Box2D v3's soft step at the world's time step:
    /// one biased sweep of soft contacts, one relax sweep, the bias's push-out applied
    /// as a position correction). Impacts stay the method's own either way. `Soft`
    /// needs a positive `rest_velocity` (it relies on the warm start). Default: `Hard`.
    pub resting_model: RestingModel,
    /// Soft resting model: the contacts' natural frequency f (Hz) as a spring-damper
    /// (Box2D v3's `contactHertz`), at most a quarter of the step rate 1/h (Box2D's
    /// limit; above it the soft step is taken at 1/(4h)). Default: 30.
    pub contact_hertz: f64,
    /// Soft resting model: the contacts' damping ratio ζ ≥ 0 (Box2D v3's
    /// `contactDampingRatio`; well over 1: the push-out creeps without bouncing).
    /// Default: 10.
    pub contact_damping_ratio: f64,
    /// Soft resting model: the largest speed (m/s) at which the bias pushes overlapping
    /// bodies apart (Box2D v3's `contactPushMaxVelocity`). Default: 3.
    pub contact_push_speed: f64,
}

/// How the contact pass holds resting contacts ([`SolverParams::resting_model`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RestingModel {
    /// Hard contacts: projected Gauss-Seidel to the pass's tolerance (at most
    /// `contact_sweeps` sweeps), shock propagation, position projection.
    #[default]
    Hard,
    /// Soft contacts (Catto, Box2D v3 "soft step"): one biased sweep of spring-damper
    /// contacts and one relax sweep per step; overlap is removed by the bias.
    Soft,
}

impl RestingModel {
    /// The model's name in scene files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            RestingModel::Hard => "hard",
            RestingModel::Soft => "soft",
        }
    }
}

impl std::str::FromStr for RestingModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "hard" => Ok(RestingModel::Hard),
            "soft" => Ok(RestingModel::Soft),
            _ => Err(format!(
                "unknown resting model '{s}' (expected hard or soft)"
            )),
        }
    }
}

impl Default for SolverParams {
    fn default() -> Self {
        SolverParams {
            restitution: 0.5,
            friction: 0.3,
            lambda: 30.0,
            kp: 0.2,
            max_iterations: 100,
            contact_sweeps: crate::dynamics::contact_pass::DEFAULT_SWEEPS,
            tolerance: 1e-8,
            rest_velocity: 0.05,
            contact_pass: true,
            cohesion: 0.0,
            equivalent_friction: 0.0,
            ccp_omega: 1.0,
            ccp_tau: 1.0,
            mdp_friction: mdp::FrictionLaw::MaximumDissipation,
            error_reduction: 0.2,
            rolling_friction: 0.0,
            spinning_friction: 0.0,
            resting_model: RestingModel::Hard,
            contact_hertz: 30.0,
            contact_damping_ratio: 10.0,
            contact_push_speed: 3.0,
        }
    }
}

impl SolverParams {
    /// Approach speed (m/s) up to which a contact counts as *resting* and is left to the
    /// contact pass: `rest_velocity` when the pass runs, else 0 (the solver resolves
    /// everything). ETM, SQM and SMM resolve only faster approaches (the collision pass
    /// of Guendelman et al. 2003), see `dynamics::contact_pass`; MDP also keeps contacts
    /// that slip faster (`mdp`, "Resting contacts").
    pub fn resting_speed(&self) -> f64 {
        if self.contact_pass {
            self.rest_velocity
        } else {
            0.0
        }
    }

    /// Parameters that are set but cannot act in this configuration, each with its field
    /// and a sentence for the user (`validate`, `run` and the app print them; they are
    /// not errors). Rolling and spinning resistance live in the contact pass, which
    /// resolves only contacts slower than `rest_velocity` (`resting_speed`): with a rest
    /// velocity of 0 or the pass off, the methods resolve every contact themselves and
    /// leave none to it, so μ_r and μ_s never act.
    pub fn inert(&self) -> Vec<(&'static str, String)> {
        let mut notes = Vec::new();
        if self.resting_speed() == 0.0 {
            let why = if self.contact_pass {
                "rest_velocity is 0"
            } else {
                "the contact pass is off"
            };
            for (field, value) in [
                ("rolling_friction", self.rolling_friction),
                ("spinning_friction", self.spinning_friction),
            ] {
                if value > 0.0 {
                    notes.push((
                        field,
                        format!(
                            "{field} = {value} m has no effect: {why}, so every contact is the \
                             method's and none reaches the contact pass, where rolling and \
                             spinning resistance act (set rest_velocity > 0, e.g. 0.05 m/s, \
                             with the contact pass on)"
                        ),
                    ));
                }
            }
        }
        notes
    }

    /// Range checks (the bounds above which the work per step is out of proportion:
    /// [`MAX_LAMBDA`], [`MAX_ITERATIONS`], [`MAX_CONTACT_SWEEPS`]); the error names the
    /// offending field (the first of
    /// [`SolverParams::problems`]).
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        match self.problems().into_iter().next() {
            Some(p) => Err(p),
            None => Ok(()),
        }
    }

    /// Every field out of range ([`param_spec::PARAMS`]), in declaration order, with its
    /// message; then the soft resting model's requirement.
    pub fn problems(&self) -> Vec<(&'static str, String)> {
        let mut problems = Vec::new();
        for spec in param_spec::PARAMS {
            let Some(v) = self.value(spec.field) else {
                continue;
            };
            if !spec.domain.contains(v) {
                let name = if spec.symbol.is_empty() {
                    spec.field
                } else {
                    spec.symbol
                };
                problems.push((
                    spec.field,
                    format!("{name} must be {}, got {v}", spec.domain.text()),
                ));
            }
        }
        let mut check = |ok: bool, field: &'static str, msg: String| {
            if !ok {
                problems.push((field, msg));
            }
        };
        let rv = self.rest_velocity;
        check(
            self.resting_model == RestingModel::Hard || (self.contact_pass && rv > 0.0),
            "resting_model",
            "resting_model Soft needs the contact pass on and rest_velocity > 0 (its \
             contacts converge across steps through the warm start, which only runs then)"
                .to_string(),
        );
        problems
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
    /// Final residual of an iterative solver, 0 for methods without one. CCP: the largest
    /// contact impulse increment of the last sweep relative to the largest contact
    /// impulse (the paper 002 §4.3 stopping test). MDP: the largest change of a contact's
    /// post-impulse relative velocity in the last sweep, ‖D_ii Δλ_i‖ (m/s).
    pub residual: f64,
    pub drift_work: f64,
    /// Rotational kinetic energy added by a solver's own position correction (J): the
    /// spin change that keeps each moved body's angular momentum
    /// (`RigidBody::displace`). The world adds the correction's potential-energy change
    /// and books both as the ledger's `projection`.
    pub projection_work: f64,
    /// Sweeps of the contact pass's projected Gauss-Seidel this step, its fallback's
    /// included (0 when the pass did not run; `dynamics::contact_pass`).
    pub contact_sweeps: u32,
    /// Whether the contact pass had to fall back because its result gained kinetic
    /// energy (see `dynamics::contact_pass::DISSIPATION_SLACK`).
    pub contact_fallback: ContactFallback,
    /// Islands whose simultaneous solution would have gained kinetic energy and was
    /// scaled back to its most dissipative multiple (SMM, `smm`, "Energy safeguard").
    pub scaled_back: u32,
    /// Times an island's system was inconsistent with its friction rows and was solved
    /// again with them released, sticking rows to sliding or sliding rows to
    /// frictionless (SMM, `smm`, step 3): impacts where Coulomb's law was given up.
    pub friction_released: u32,
}

/// How the contact pass ended (see `dynamics::contact_pass::DISSIPATION_SLACK`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContactFallback {
    /// Its result did not gain kinetic energy (or it did not run).
    #[default]
    None,
    /// The warm-started pass gained; it was redone from zero impulses.
    Cold,
    /// The pass without warm start gained too; it was scaled back to its most
    /// dissipative multiple.
    Scaled,
}

/// A solver failure the caller must not paper over (e.g. a singular system, divergence).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SolverError {
    #[error("solver '{solver}' diverged: {why}")]
    Diverged { solver: SolverKind, why: String },
    /// After step `step` (1-based), a body's state or an energy is NaN or infinite; the
    /// world's state is not usable any more. `body` is `None` when every body is finite
    /// but an energy is not (e.g. the elastic energy stored in contacts).
    #[error(
        "step {step}: {} {quantity} became non-finite ({value})",
        body.map_or_else(|| "the world's".to_string(), |b| format!("body {b}'s"))
    )]
    NonFinite {
        step: u64,
        body: Option<usize>,
        quantity: &'static str,
        value: String,
    },
}

impl SolverError {
    /// The message of an error returned by the step that was to be step `step`
    /// (1-based), naming that step once.
    pub fn at_step(&self, step: u64) -> String {
        match self {
            SolverError::NonFinite { .. } => self.to_string(),
            SolverError::Diverged { .. } => format!("step {step}: {self}"),
        }
    }
}

/// One recorded iteration of a solver's inner loop: the data of paper 000's Fig. 4 and
/// Fig. 6b for ETM, the impulse sequence for SQM/SMM, the iterations of CCP/MDP.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceRow {
    /// Iteration counter s_k within the step (0-based, increasing); for MDP the
    /// Gauss-Seidel sweep.
    pub iteration: u32,
    /// Stage of the method, e.g. "compression", "restitution", "separation" (ETM),
    /// "impulse" (jolt, SQM, SMM); for MDP the branch of the contact's single-contact
    /// problem: "sticking", "sliding" (cone-boundary solution) or "separating".
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

/// Whether a contact of gap `gap` with normal velocity `un` must be resolved in a step
/// of length `dt`: it approaches faster than `threshold` (≥ 0) and either overlaps or,
/// if speculative (gap > 0), would close its gap within the step.
pub(super) fn approaching(gap: f64, un: f64, dt: f64, threshold: f64) -> bool {
    un < -threshold && (gap <= 0.0 || gap + dt * un < 0.0)
}

/// Whether contact `c` can receive an impulse at all (at least one dynamic body).
pub(super) fn resolvable(bodies: &[RigidBody], c: &Contact) -> bool {
    bodies[c.a].inv_mass + c.b.map_or(0.0, |b| bodies[b].inv_mass) > 0.0
}

/// Whether any of the contacts `ids` takes part in an impact: it is [`resolvable`] and
/// [`approaching`] faster than `resting`,
/// tested on the contacts as the narrow phase gave them, so that a method can skip
/// preparing a step or an island at rest (K of paper 000's eq. 9 per contact); also true
/// when a relative velocity is not finite, which the method's own test reports.
pub(super) fn has_impact(
    bodies: &[RigidBody],
    contacts: &[Contact],
    mut ids: impl Iterator<Item = usize>,
    dt: f64,
    resting: f64,
) -> bool {
    ids.any(|ci| {
        let c = &contacts[ci];
        let u = crate::collision::relative_velocity(bodies, c);
        if !u.iter().all(|v| v.is_finite()) {
            return true;
        }
        resolvable(bodies, c) && approaching(c.gap, u.dot(&c.normal), dt, resting)
    })
}

/// One body's terms of K(s) = K₀ + a s + c s², the kinetic energy after a multiple s of
/// velocity changes (Δv, Δω) from (v, ω): a = m v·Δv + ωᵀ I Δω,
/// c = ½ (m |Δv|² + Δωᵀ I Δω) ≥ 0 (I the world inertia).
pub(crate) fn kinetic_change_terms(
    b: &RigidBody,
    (v, w): (&Vec3, &Vec3),
    (dv, dw): (&Vec3, &Vec3),
) -> (f64, f64) {
    let i_dw = b.inertia_world() * dw;
    (
        b.mass * v.dot(dv) + w.dot(&i_dw),
        0.5 * (b.mass * dv.norm_squared() + dw.dot(&i_dw)),
    )
}

/// The s ∈ [0, 1] that minimises K(s) = K₀ + a s + c s² over s ≥ 0 (see
/// [`kinetic_change_terms`]): −a/(2c) when a < 0, where K(s) = K₀ − a²/(4c) ≤ K₀, capped
/// at 1; else 0 (no multiple dissipates).
pub(crate) fn most_dissipative_multiple(a: f64, c: f64) -> f64 {
    if a < 0.0 && c > 0.0 {
        (-a / (2.0 * c)).min(1.0)
    } else {
        0.0
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
    /// The contact graph of `contacts` (islands, per-body contact lists:
    /// [`crate::dynamics::graph`]), built by the world once a step.
    pub graph: &'a ContactGraph,
    /// Per contact (aligned with `contacts`), the impulses it ended the last step with
    /// (`dynamics::warm_start`). A method that keeps impulses
    /// ([`CollisionSolver::keeps_impulses`]) starts from `method` and leaves in it what
    /// the contact ends this step with (`None` for nothing); the others leave it alone.
    /// `pass` is the contact pass's.
    pub impulses: &'a mut [ContactImpulses],
    pub params: &'a SolverParams,
    /// Time step (s).
    pub dt: f64,
    /// When `Some`, the solver appends one [`TraceRow`] per inner iteration.
    pub trace: Option<&'a mut Vec<TraceRow>>,
}

/// How the world's phase 4 moves the centres of mass from xₙ to xₙ₊₁.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PositionUpdate {
    /// xₙ₊₁ = xₙ + h vₙ₊₁.
    SemiImplicitEuler,
    /// Newmark with γ = 1, β = ½ (paper 002, eq. 51): Δx = h (vₙ + vₙ₊₁)/2, and the
    /// orientation from the rotation integrator as for every solver.
    Newmark,
}

/// One user-tunable field of [`SolverParams`], named so that panels and command lines
/// can show only the parameters a method reads ([`SolverKind::parameters`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Param {
    Restitution,
    Friction,
    Lambda,
    Kp,
    MaxIterations,
    ContactSweeps,
    Tolerance,
    RestVelocity,
    ContactPass,
    RollingFriction,
    SpinningFriction,
    Cohesion,
    EquivalentFriction,
    CcpOmega,
    CcpTau,
    MdpFriction,
    ErrorReduction,
    /// `resting_model` (its soft model's `contact_hertz`, `contact_damping_ratio` and
    /// `contact_push_speed` are set in the scene file).
    RestingModel,
}

/// What the world's shared contact pass reads ([`crate::dynamics::contact_pass`]).
const CONTACT_PASS_PARAMS: [Param; 8] = [
    Param::ContactPass,
    Param::Friction,
    Param::ContactSweeps,
    Param::Tolerance,
    Param::RestVelocity,
    Param::RollingFriction,
    Param::SpinningFriction,
    Param::RestingModel,
];

impl SolverKind {
    /// Every parameter a step with this method reads: the method's own
    /// ([`CollisionSolver::own_parameters`]), the contact pass's when the method uses it
    /// ([`CollisionSolver::uses_contact_pass`]) and k_p when the world's position
    /// projection runs after it at the defaults ([`CollisionSolver::corrects_positions`]). In the order
    /// of [`SolverParams`]' fields.
    pub fn parameters(self) -> Vec<Param> {
        let solver = self.create();
        let mut read: Vec<Param> = solver.own_parameters().to_vec();
        if solver.uses_contact_pass() {
            read.extend(CONTACT_PASS_PARAMS);
            if !solver.corrects_positions(&SolverParams::default()) {
                read.push(Param::Kp);
            }
        }
        let order = |p: &Param| p.field_order();
        read.sort_by_key(order);
        read.dedup();
        read
    }
}

impl Param {
    /// Position of the field in [`SolverParams`].
    fn field_order(&self) -> u8 {
        *self as u8
    }
}

/// A collision-resolution method.
///
/// Besides resolving contacts, a method states what the world must do around it
/// (capabilities), so that the world, the app and the CLI ask the method instead of
/// matching its name.
///
/// A solver is `Clone` (through [`SolverClone`]): its warm-start state is part of a
/// world's state, and a cloned world continues exactly as the original would.
pub trait CollisionSolver: Send + Sync + SolverClone {
    fn kind(&self) -> SolverKind;
    /// The [`SolverParams`] fields [`Self::resolve`] reads.
    fn own_parameters(&self) -> &'static [Param];
    /// Whether the world runs the shared contact pass after this method (when
    /// `SolverParams::contact_pass` is on). Default: true. Every method now leaves its
    /// resting contacts to the pass; a method whose answer the pass must not touch says
    /// no.
    fn uses_contact_pass(&self) -> bool {
        true
    }
    /// Whether the method removes overlap itself inside [`Self::resolve`] under `params`
    /// (MDP's error reduction, paper 003 §3.1; jolt's and CCP's per-pair projection,
    /// paper 001 eq. B.18, when the contact pass is off), so the world's position
    /// projection after the contact pass does not run. Default: false.
    fn corrects_positions(&self, params: &SolverParams) -> bool {
        let _ = params;
        false
    }
    /// Whether each recorded [`TraceRow`] is one impulse applied in turn, so the rows'
    /// order is the order in which contacts were resolved. Default: false.
    fn sequential(&self) -> bool {
        false
    }
    /// Resolve the step's contacts (see the module doc).
    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError>;
    /// Called by the world at the start of a step, before external forces act, with the
    /// bodies at (xₙ, vₙ, ωₙ). Methods whose contact law needs the start-of-step
    /// velocities (CCP's Newmark gap, paper 002 eqs. 44, 51) keep them. Default: nothing.
    fn begin_step(&mut self, _bodies: &[RigidBody]) {}
    /// The position update this method is formulated with. Default: semi-implicit Euler.
    fn position_update(&self) -> PositionUpdate {
        PositionUpdate::SemiImplicitEuler
    }
    /// The contact pass's target for each contact the method resolved itself under a
    /// law other than the pass's own (u_n⁺ ≥ 0, or −gap/h for a speculative contact),
    /// indexed as the step's contacts (`None`: the pass's floor): the lowest
    /// end-of-step normal velocity u_n⁺ at which the method's law still holds, measured
    /// with the contact's own lever arms. The pass then neither undoes nor re-solves the
    /// method's answer, and stops a contact that its own impulses elsewhere drive in at
    /// the method's bound. Empty (the default): the pass's floor everywhere.
    fn pass_floors(&self) -> &[Option<f64>] {
        &[]
    }
    /// Whether the method resolves an active speculative contact (a gap the step would
    /// close) as if it touched, applying its restitution law to the approach velocity.
    /// The world then times the impulse at the moment of impact
    /// (`dynamics::impact`). Default: false (the method lets the contact close its gap
    /// within the step itself, as MDP does, or is formulated with Newmark, as CCP).
    fn resolves_speculative_as_touching(&self) -> bool {
        false
    }
    /// Whether the method warm-starts from the impulses its contacts ended the last
    /// step with (`SolverContext::impulses`, `method`; `dynamics::warm_start`): part of
    /// the world's state, which a saved state carries (`scene::save`). Default: false
    /// (the method starts every step from zero).
    fn keeps_impulses(&self) -> bool {
        false
    }
}

/// Cloning a boxed solver with its state; implemented for every `Clone` solver.
pub trait SolverClone {
    fn box_clone(&self) -> Box<dyn CollisionSolver>;
}

impl<T: CollisionSolver + Clone + 'static> SolverClone for T {
    fn box_clone(&self) -> Box<dyn CollisionSolver> {
        Box::new(self.clone())
    }
}

impl Clone for Box<dyn CollisionSolver> {
    fn clone(&self) -> Self {
        self.box_clone()
    }
}
