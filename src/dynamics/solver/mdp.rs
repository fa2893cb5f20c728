//! Maximum-dissipation impacts solved by a blend of non-linear block Gauss-Seidel and
//! weighted non-linear block Jacobi, one block per single-contact problem (paper 003,
//! Preclik, Rüde et al., §3.1 and §5; the paper's inline symbols were lost in extraction,
//! the model is restored in `../shared/papers/README.md`).
//!
//! Steps, per solver call (one time step of the impulse-velocity scheme of §3.1):
//! 1. **Prepare**: for every contact i copy its frame (n, t₁, t₂), lever arms and masses
//!    ([`PreparedContact`]) and, once its pair takes part in the sweeps (all pairs
//!    unless some rest, "Resting contacts" below), its Delassus block in the contact frame,
//!    D_ii = Qᵀ K Q with Q = [n t₁ t₂] and K the collision matrix
//!    K = (1/m_a + 1/m_b) 1 − r̃_a I_a⁻¹ r̃_a − r̃_b I_b⁻¹ r̃_b (paper 003 eq. 2, the same
//!    matrix as paper 000 eq. 9). D_ii is SPD when one body is dynamic; its inverse
//!    (from its Cholesky factor) is kept for the sticking impulse −D_ii⁻¹ b_i. The accumulated impulse λ_i starts at 0.
//!    The contacts are grouped by pair (the same two bodies, or a body and the same
//!    container): the narrow phase emits a pair's contacts together, and where it does
//!    not they are sorted by pair first.
//! 2. **Time stepping** (§3.1): velocities are explicit, positions implicit. The world
//!    has already applied the external forces (v⁻ = vₙ + h M⁻¹ f); the impulses Λ make
//!    v⁺ = v⁻ + M⁻¹ W Λ, and the world then moves x₊ = xₙ + h v⁺. The discrete
//!    non-penetration condition of contact i with gap g_i is
//!    u_n⁺ + g̃_i/h ≥ 0 ⊥ λ_n ≥ 0, where g̃_i = g_i for a gap (g ≥ 0: an open contact
//!    gets no impulse unless it would close within the step) and g̃_i = ε g_i for a
//!    penetration (the error-reduction term, ε = `error_reduction`).
//! 3. **Sweep** the pairs in order (block Gauss-Seidel across pairs). Within a pair, every
//!    contact i is solved from the same velocities (block Jacobi, §5): with
//!    b_i = Qᵀ u_i − D_ii λ_i + (g̃_i/h) e_n its relative velocity with its own impulse
//!    removed (u_i the current relative velocity, other contacts' impulses included) plus
//!    the gap term, solve the **single-contact problem** (§3.2, below) for λ̂_i and set
//!    Δ_i = λ̂_i − λ_i. Then every contact of the pair gets λ_i ← λ_i + ω Δ_i, the change
//!    Q ω Δ_i applied to the two bodies (one impulse per contact, each booked on its
//!    own). A pair of one contact has ω = 1: plain Gauss-Seidel.
//! 4. **Converge**: stop after the first sweep in which no contact's single-contact
//!    solution changed its post-impulse velocity by more than `tolerance` × (the largest
//!    |b_i| at a block's first solve in the step: the first sweep, or the sweep in which
//!    a resting pair joined), max_i ‖D_ii Δ_i‖, or after `max_iterations` sweeps
//!    (reported in [`SolverReport::hit_iteration_cap`]). The report carries the sweeps
//!    and that last largest change as `residual` (m/s). A fixed point has Δ_i = 0 at
//!    every contact whatever ω, so it satisfies eq. 5 at every contact (§3.1: "a solution
//!    of the multi-contact time-step problem satisfies Eq. (5) for all contacts").
//!
//! **Resting contacts** (the split of Guendelman et al. 2003 that ETM, SQM and SMM make,
//! `dynamics::contact_pass`). With the contact pass on and `rest_velocity` v_r > 0
//! ([`SolverParams::resting_speed`](super::SolverParams::resting_speed)), a pair takes
//! part in the sweeps only once one of its contacts needs an impulse: with b_i its
//! relative velocity plus the gap term (λ_i = 0), it approaches faster than v_r
//! (b_n < −v_r), or it closes (b_n < 0) while slipping faster than v_r (‖b_t‖ > v_r).
//! The pairs are checked before the warm start and again at each visit of a sweep, so
//! contacts that an impact drives in join as its impulses pass through a pile; a pair
//! that joined stays in for the step, and a pair that did not has λ = 0. Only pairs in
//! from the start are warm-started. What is left are contacts that neither approach
//! nor slip faster than v_r: on a pile, the support contacts after the gravity kick
//! (g h = 0.016 m/s at h = 1/600 s). The warm-started contact pass resolves them, bottom
//! up, with the scene's rolling and spinning resistance, which lets a settled pile fall
//! asleep.
//! - Where the model's answer is kept: the maximum-dissipation law (eq. 3/5) and the
//!   Coulomb law differ on the cone's boundary only (§4.1: the sliding impulses); a
//!   sticking contact gets −D_ii⁻¹ b_i under both (post-impulse relative velocity 0).
//!   So every contact that approaches or slips faster than v_r, where maximal
//!   dissipation decides the impulse (a block thrown down a slope, Painlevé's rod, an
//!   impact), stays with this solver, and a pair is in or out as a whole, so its
//!   Jacobi update keeps its symmetry. The slip test is what ETM, SQM and SMM do not
//!   need: their contact law on a sliding contact is the pass's.
//! - Why: on a formed pile the sweeps otherwise solve every support contact each step,
//!   carrying the pile's weight one layer per sweep (Gauss-Seidel on a deep stack: the
//!   largest change falls by ~0.95 per sweep, so `max_iterations` is hit), and, since
//!   they leave nothing approaching, the pass never applies its rolling and spinning
//!   resistance and the pile never sleeps (figures in `docs/results/mdp-speed.md`).
//! - Overlap: b_n includes the error-reduction term, so an overlap deeper than
//!   v_r h / ε (0.42 mm at the defaults) brings its pair in, and the error reduction
//!   pushes it out; a shallower one the pass holds at u_n⁺ = 0.
//!
//! With v_r = 0 (or the contact pass off) every pair takes part from the start.
//!
//! **Why Jacobi within a pair.** The contacts of one pair act on the same two bodies;
//! four coplanar corners of a box on a plane carry a redundant normal impulse, so the
//! multi-contact problem has many solutions. Gauss-Seidel picks one by the contacts'
//! order: on a box sliding straight down a slope, an asymmetric one that spins the box
//! about the normal, which nothing in the set-up causes. Solving a pair's blocks from the
//! same velocities and applying their changes with one common weight commutes with any
//! permutation of the pair's contacts, so a mirror-symmetric contact set keeps its
//! symmetry, while across pairs Gauss-Seidel still carries an impulse through a pile
//! one pair per update.
//!
//! **Weight.** For the pair's m blocks let D be its 3m × 3m Delassus matrix and
//! B = blockdiag(D_11, …, D_mm). Two facts fix ω:
//! - D ≤ m B (Cauchy-Schwarz: ‖Σ_i W_i λ_i‖²_{M⁻¹} ≤ m Σ_i ‖W_i λ_i‖²_{M⁻¹}), so the
//!   eigenvalues of B⁻¹D lie in [0, m]; the pair's impulses act on the 6-dimensional
//!   relative motion of its two bodies, so at most 6 are non-zero, and the zero ones
//!   are the redundant impulses (four coplanar corners), which no weight changes.
//!   Where every block sticks the sweep is linear, Δ = −B⁻¹ g, and weighted Jacobi
//!   contracts the error on the non-zero modes by (κ − 1)/(κ + 1) with the weight
//!   ω_J = 2 / (λ_min + λ_max) of the non-zero eigenvalues, the optimal fixed weight
//!   (Richardson's optimal step; Saad, *Iterative Methods for Sparse Linear Systems*,
//!   ch. 4); ω_J ≥ 1/m.
//!   `jacobi_weight` computes them once per pair and step from a 6 × 6 eigenproblem.
//! - f(Λ) = ½ ΛᵀDΛ + Λᵀb (b the pair's free velocities with the gap terms) is the
//!   post-impulse kinetic energy up to a constant, and along the Jacobi direction
//!   f(Λ + ω Δ) = f(Λ) + ω gᵀΔ + ½ ω² ΔᵀDΔ with g = DΛ + b the current post-impulse
//!   velocities (+ gap terms), known from the solve. Its minimiser −gᵀΔ / ΔᵀDΔ is
//!   the best step along Δ when the blocks stick; where a block slides or separates,
//!   its plane of maximum compression (not f) decides λ̂_i, and Δ need not descend f.
//!
//! So ω is that minimiser clamped to [ω_J, 1], ω_J when gᵀΔ ≥ 0, and 1 when at most one
//! block of the pair changes (`pair_weight`). ω ≤ 1 keeps λ_i + ω Δ_i a convex
//! combination of λ_i and λ̂_i, both in contact i's friction cone, so every accumulated
//! impulse stays in its cone with λ_n ≥ 0. ΔᵀDΔ costs one pass over the pair: it is the
//! energy norm of the pair's summed impulse, (1/m_a + 1/m_b)|P|² + L_aᵀ I_a⁻¹ L_a +
//! L_bᵀ I_b⁻¹ L_b.
//!
//! **Single-contact problem** ([`solve_single_contact`], eqs. 3 and 5): minimise the
//! post-impulse kinetic energy f(λ) = ½ λᵀ D λ + λᵀ b over λ = (λ_n, λ_t) subject to
//! ‖λ_t‖ ≤ μ λ_n and, for a colliding contact (b_n < 0), the purely inelastic condition
//! (D λ + b)_n = 0 (the plane of maximum compression):
//! - b_n > 0 (separating): λ = 0 (the pressure condition excludes anything else);
//! - the sticking impulse λ = −D⁻¹ b if it lies in the friction cone (post-impulse
//!   relative velocity 0);
//! - otherwise the unique minimiser of f on the boundary of the conic section, found from
//!   the critical points of f along the boundary curve, a trigonometric polynomial of
//!   degree 2 (the paper's eq. 8, solved as a quartic; derivation at
//!   [`PlaneProblem::boundary_minimiser`]);
//! - b_n = 0 (the plane passes through the origin): the conic section degenerates to the
//!   point 0, a ray or a wedge between two rays (eq. 9); the minimum is on a ray.
//!
//! **Coulomb variant** ([`FrictionLaw::Coulomb`], for comparison as in paper 003 §4): the
//! same sweep with the conventional impulsive Coulomb law per contact: the sticking
//! impulse if it lies in the cone, else an impulse on the cone boundary whose friction
//! directly opposes the post-impulse slip (u_t⁺ = −s λ_t, s > 0). That law can have
//! several solutions ([`PlaneProblem::coulomb_sliding`] finds them all); the solver takes the
//! most dissipative one. A non-colliding contact (b_n ≥ 0) gets λ = 0.
//!
//! Restitution is not applied: the model is purely inelastic (the paper's §5 leaves a
//! restitution hypothesis open). Energy: each impulse change p is booked with
//! ΔK = p·(u⁻ + u⁺)/2 (paper 000, eq. 16), split into normal and tangential parts.

use super::prepared::PreparedContact;
use super::{
    CollisionSolver, Param, SolverContext, SolverError, SolverKind, SolverReport, TraceRow,
};
use crate::body::RigidBody;
use crate::dynamics::warm_start::{PairKey, PointImpulse};
use crate::math::{Mat3, Vec3, skew};
use nalgebra::{Cholesky, Matrix2, Matrix6, Matrix6x3, SymmetricEigen, U3, Vector2};
use serde::{Deserialize, Serialize};
use std::f64::consts::{PI, TAU};
use std::fmt;
use std::str::FromStr;

/// The impulsive friction law of the MDP solver's single-contact problem.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FrictionLaw {
    /// Maximal dissipation (paper 003 eq. 3/5): the impulse minimises the post-impulse
    /// kinetic energy over the conic section. Unique for a single contact.
    #[default]
    MaximumDissipation,
    /// Conventional impulsive Coulomb friction: friction opposes the post-impulse slip.
    /// Can have several solutions for one contact; the most dissipative is taken.
    Coulomb,
}

impl FrictionLaw {
    pub fn name(self) -> &'static str {
        match self {
            FrictionLaw::MaximumDissipation => "max-dissipation",
            FrictionLaw::Coulomb => "coulomb",
        }
    }
}

impl fmt::Display for FrictionLaw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for FrictionLaw {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "max-dissipation" | "maximum-dissipation" | "maximumdissipation" | "mdp" => {
                Ok(FrictionLaw::MaximumDissipation)
            }
            "coulomb" => Ok(FrictionLaw::Coulomb),
            _ => Err(format!(
                "unknown friction law '{s}'; expected max-dissipation or coulomb"
            )),
        }
    }
}

/// Which branch of the single-contact problem produced an impulse (shown per contact by
/// the collision trace: [`TraceRow::stage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContactState {
    /// b_n > 0 (or non-colliding for the Coulomb law): λ = 0.
    Separating,
    /// The sticking impulse −D⁻¹ b (post-impulse relative velocity 0).
    Sticking,
    /// An impulse on the boundary of the friction cone (sliding after the impulse).
    Sliding,
}

impl ContactState {
    /// The trace's stage name.
    pub fn stage(self) -> &'static str {
        match self {
            ContactState::Separating => "separating",
            ContactState::Sticking => "sticking",
            ContactState::Sliding => "sliding",
        }
    }
}

/// Solution of one single-contact problem, in the contact frame (n, t₁, t₂).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SingleContact {
    pub lambda: Vec3,
    pub state: ContactState,
}

/// Relative rounding tolerance of the cone and plane tests.
const ROUND: f64 = 1e-12;

/// Most Newton steps of [`PlaneProblem::boundary_minimiser_from`] from a nearby
/// problem's minimiser before it falls back to all the roots.
const NEWTON_STEPS: usize = 8;

/// Maximally dissipative impulse of one contact (paper 003 eq. 3/5, §3.2): see the
/// module doc. `d` is the Delassus block (SPD) and `b` the relative velocity with the
/// gap term, both in the contact frame (n, t₁, t₂); `mu` ≥ 0.
pub fn solve_single_contact(d: &Mat3, b: &Vec3, mu: f64) -> SingleContact {
    solve_with_law(d, None, b, mu, FrictionLaw::MaximumDissipation)
}

/// Single-contact impulse under `law`; `chol` is the Cholesky factor of `d` if known.
pub fn solve_with_law(
    d: &Mat3,
    chol: Option<&Cholesky<f64, U3>>,
    b: &Vec3,
    mu: f64,
    law: FrictionLaw,
) -> SingleContact {
    solve_with_stick(d, b, mu, law, &mut Vector2::zeros(), || match chol {
        Some(c) => Some(-c.solve(b)),
        None => d.cholesky().map(|c| -c.solve(b)),
    })
}

/// [`solve_with_law`] with the sticking impulse −D⁻¹ b from `stick` (`None` if D is not
/// SPD), which runs only when the impulse can stick (b_n ≤ 0, μ > 0). `slide` is the
/// unit direction of the tangential impulse of the last maximally dissipative sliding
/// solution of a nearby problem (0 if none), where the search for this one's starts
/// ([`PlaneProblem::boundary_minimiser_from`]); it is replaced by this one's.
#[inline(always)]
fn solve_with_stick(
    d: &Mat3,
    b: &Vec3,
    mu: f64,
    law: FrictionLaw,
    slide: &mut Vector2<f64>,
    stick: impl FnOnce() -> Option<Vec3>,
) -> SingleContact {
    let separating = SingleContact {
        lambda: Vec3::zeros(),
        state: ContactState::Separating,
    };
    let bn = b.x;
    // Separating (pressure condition), or not colliding under the Coulomb law.
    if bn > 0.0 || (law == FrictionLaw::Coulomb && bn >= 0.0) || !bn.is_finite() {
        return separating;
    }
    if mu == 0.0 {
        // Frictionless: the plane of maximum compression meets the cone (a ray) at one
        // point, λ = (−b_n / D_nn) e_n.
        return if bn < 0.0 {
            SingleContact {
                lambda: Vec3::new(-bn / d[(0, 0)], 0.0, 0.0),
                state: ContactState::Sliding,
            }
        } else {
            separating
        };
    }
    // Sticking: the unconstrained minimum −D⁻¹ b (on the plane, since D λ + b = 0).
    let Some(stick) = stick() else {
        return separating;
    };
    // In the cone up to the rounding slack ROUND ‖λ‖; strictly inside (no slack, no
    // square root) decides most sticking contacts.
    let strictly_inside =
        stick.x > 0.0 && stick.y * stick.y + stick.z * stick.z <= (mu * stick.x) * (mu * stick.x);
    let in_cone = |l: &Vec3| {
        let scale = l.norm();
        l.x >= -ROUND * scale && l.yz().norm() <= mu * l.x + ROUND * scale.max(f64::MIN_POSITIVE)
    };
    if strictly_inside || in_cone(&stick) {
        return SingleContact {
            lambda: stick,
            state: ContactState::Sticking,
        };
    }
    let plane = PlaneProblem::new(d, b, mu);
    let x = if bn == 0.0 {
        plane.degenerate_minimiser()
    } else {
        match law {
            FrictionLaw::MaximumDissipation => plane.boundary_minimiser_from(slide),
            FrictionLaw::Coulomb => plane
                .coulomb_sliding()
                .into_iter()
                .min_by(|a, b| plane.g(a).total_cmp(&plane.g(b)))
                // Existence is not guaranteed numerically at tangencies; the maximally
                // dissipative boundary point is the limit of the Coulomb solutions there.
                .unwrap_or_else(|| plane.boundary_minimiser()),
        }
    };
    let lambda = plane.lift(&x);
    if lambda == Vec3::zeros() {
        return separating;
    }
    SingleContact {
        lambda,
        state: ContactState::Sliding,
    }
}

/// The single-contact problem restricted to the plane of maximum compression, written in
/// the tangential impulse x = λ_t ∈ ℝ² (the normal part is eliminated, §3.2):
///
/// λ_n(x) = (−b_n − D_ntᵀ x) / D_nn        (plane: (D λ + b)_n = 0)
/// g(x) = f(λ_n(x), x) = ½ xᵀ A x + pᵀ x + const,
///   A = D_tt − D_tn D_ntᵀ / D_nn (Schur complement, SPD),  p = b_t − D_tn b_n / D_nn,
/// cone: ‖x‖ ≤ μ λ_n(x)  ⇔  ‖x‖ + kᵀ x ≤ c,  k = μ D_nt / D_nn,  c = μ (−b_n) / D_nn.
///
/// The cone boundary is a conic with a focus at x = 0 and eccentricity ‖k‖ (ellipse,
/// parabola or hyperbola branch, the paper's three cases); in polar form
/// x(φ) = r(φ) d(φ), d = (cos φ, sin φ), r = c / (1 + kᵀ d) where 1 + kᵀ d > 0.
/// ∇g(x) = A x + p is the post-impulse tangential velocity u_t⁺ (u_n⁺ = 0 on the plane).
#[derive(Clone, Debug)]
pub struct PlaneProblem {
    pub a: Matrix2<f64>,
    pub p: Vector2<f64>,
    pub k: Vector2<f64>,
    pub c: f64,
    d_nn: f64,
    d_nt: Vector2<f64>,
    b_n: f64,
}

fn dir(phi: f64) -> Vector2<f64> {
    Vector2::new(phi.cos(), phi.sin())
}

#[cfg(test)]
fn perp(v: &Vector2<f64>) -> Vector2<f64> {
    Vector2::new(-v.y, v.x)
}

fn cross2(a: &Vector2<f64>, b: &Vector2<f64>) -> f64 {
    a.x * b.y - a.y * b.x
}

impl PlaneProblem {
    pub fn new(d: &Mat3, b: &Vec3, mu: f64) -> Self {
        let d_nn = d[(0, 0)];
        let d_nt = Vector2::new(d[(0, 1)], d[(0, 2)]);
        let d_tt = Matrix2::new(d[(1, 1)], d[(1, 2)], d[(2, 1)], d[(2, 2)]);
        let b_t = Vector2::new(b.y, b.z);
        PlaneProblem {
            a: d_tt - d_nt * d_nt.transpose() / d_nn,
            p: b_t - d_nt * (b.x / d_nn),
            k: d_nt * (mu / d_nn),
            c: mu * (-b.x) / d_nn,
            d_nn,
            d_nt,
            b_n: b.x,
        }
    }

    /// g(x) up to its constant: ½ xᵀ A x + pᵀ x.
    pub fn g(&self, x: &Vector2<f64>) -> f64 {
        0.5 * x.dot(&(self.a * x)) + self.p.dot(x)
    }

    /// The full impulse (λ_n(x), x) on the plane.
    pub fn lift(&self, x: &Vector2<f64>) -> Vec3 {
        let ln = (-self.b_n - self.d_nt.dot(x)) / self.d_nn;
        Vec3::new(ln.max(0.0), x.x, x.y)
    }

    /// The boundary point at angle φ, if the boundary reaches that direction.
    pub fn boundary_point(&self, phi: f64) -> Option<Vector2<f64>> {
        self.boundary_point_along(&dir(phi))
    }

    /// The boundary point along the unit direction `d`, if the boundary reaches it.
    fn boundary_point_along(&self, d: &Vector2<f64>) -> Option<Vector2<f64>> {
        let den = 1.0 + self.k.dot(d);
        (den > 1e-12).then(|| d * (self.c / den))
    }

    /// Minimiser of g on the boundary of the conic section (b_n < 0, sticking impulse
    /// outside the cone).
    ///
    /// Derivation (paper 003 eqs. 7-8). Along x(φ) = r d with r = c/(1 + kᵀd),
    /// dx/dφ = r' d + r d⊥ with r' = −c kᵀd⊥/(1 + kᵀd)², so
    /// dx/dφ ∝ (1 + kᵀd) d⊥ − (kᵀd⊥) d = d⊥ + k⊥ (expand the components; d⊥ = (−sin, cos),
    /// k⊥ = (−k₂, k₁)). A critical point of G(φ) = g(x(φ)) satisfies (A x + p)ᵀ(d⊥ + k⊥) = 0;
    /// multiplied by the positive 1 + kᵀd:
    ///
    /// T(φ) = c (A d)ᵀ(d⊥ + k⊥) + (1 + kᵀd) pᵀ(d⊥ + k⊥) = 0,
    ///
    /// a trigonometric polynomial of degree 2 in φ (the paper's eq. 8), i.e. a quartic in
    /// tan(φ/2). Its at most 4 real roots are all the critical points of G on the
    /// boundary; the minimiser is the one with the least g (G → ∞ at the open ends of a
    /// parabola or hyperbola, so it is an interior critical point). It is unique: the
    /// conic section is convex and g strictly convex (A is SPD).
    pub fn boundary_minimiser(&self) -> Vector2<f64> {
        match self.isotropic_minimiser() {
            Some(x) => x,
            None => self.boundary_minimiser_by_roots().0,
        }
    }

    /// Fast path of [`Self::boundary_minimiser`], central contacts (spheres): k = 0 and
    /// A = α 1 make the boundary a circle of radius c and g isotropic: x = −c p/‖p‖.
    fn isotropic_minimiser(&self) -> Option<Vector2<f64>> {
        let iso = self.a[(0, 1)].abs() + (self.a[(0, 0)] - self.a[(1, 1)]).abs();
        (self.k.norm() <= ROUND && iso <= ROUND * self.a.trace() && self.p.norm() > 0.0)
            .then(|| -self.p * (self.c / self.p.norm()))
    }

    /// [`Self::boundary_minimiser`] started from the unit direction `slide` (0: none) of
    /// a nearby problem's minimiser, which is replaced by this one's direction.
    ///
    /// The minimiser is the only point of the boundary where the KKT conditions of
    /// min g(x) subject to h(x) = ‖x‖ + kᵀx − c ≤ 0 hold: the problem is convex (h is
    /// convex, g strictly convex), so a boundary point with ∇g = −ν ∇h, ν ≥ 0, is its
    /// minimiser. At a root of T (see [`Self::boundary_minimiser`]) ∇g ∥ ∇h = d + k, and
    /// ν ≥ 0 ⇔ ∇gᵀ(d + k) ≤ 0. So Newton's method on T from `slide` (a few steps when
    /// the problem moved little) gives the minimiser whenever the root it reaches passes
    /// that test; otherwise all the roots are found as in [`Self::boundary_minimiser`].
    pub fn boundary_minimiser_from(&self, slide: &mut Vector2<f64>) -> Vector2<f64> {
        if let Some(x) = self.isotropic_minimiser() {
            return x;
        }
        if *slide != Vector2::zeros()
            && let Some((x, d)) = self.kkt_root_near(slide)
        {
            *slide = d;
            return x;
        }
        let (x, d) = self.boundary_minimiser_by_roots();
        *slide = d;
        x
    }

    /// The root of T nearest the unit direction `d0` by Newton's method, as the boundary
    /// point x and its direction d, if it converges and satisfies the KKT test of
    /// [`Self::boundary_minimiser_from`]. In ψ = φ − φ0 (φ0 the angle of d0, so the
    /// rotation needs no trigonometric function) and t = tan(ψ/2), T is the quartic of
    /// [`trig2_roots`] over (1 + t²)², and Newton starts at t = 0.
    fn kkt_root_near(&self, d0: &Vector2<f64>) -> Option<(Vector2<f64>, Vector2<f64>)> {
        let (c0, s0) = (d0.x, d0.y);
        let q = self
            .boundary_poly()
            .rotated((c0, s0, (c0 - s0) * (c0 + s0), 2.0 * s0 * c0));
        let (e4, e3, e2, e1, e0) = (
            q.a0 - q.a1 + q.a2,
            2.0 * q.b1 - 4.0 * q.b2,
            2.0 * q.a0 - 6.0 * q.a2,
            2.0 * q.b1 + 4.0 * q.b2,
            q.a0 + q.a1 + q.a2,
        );
        let mut t: f64 = 0.0;
        let mut converged = false;
        for _ in 0..NEWTON_STEPS {
            let f = (((e4 * t + e3) * t + e2) * t + e1) * t + e0;
            if f == 0.0 {
                converged = true;
                break;
            }
            let df = ((4.0 * e4 * t + 3.0 * e3) * t + 2.0 * e2) * t + e1;
            let step = f / df;
            // |ψ| < π/2 keeps t in [−1, 1], where the quartic is well conditioned.
            if !step.is_finite() || (t - step).abs() > 1.0 {
                return None;
            }
            t -= step;
            if step.abs() <= 1e-15 * (1.0 + t.abs()) {
                converged = true;
                break;
            }
        }
        if !converged {
            return None;
        }
        let w = 1.0 / (1.0 + t * t);
        let (c, s) = ((1.0 - t * t) * w, 2.0 * t * w);
        let d = Vector2::new(c0 * c - s0 * s, s0 * c + c0 * s);
        let x = self.boundary_point_along(&d)?;
        ((self.a * x + self.p).dot(&(d + self.k)) <= 0.0).then_some((x, d))
    }

    /// [`Self::boundary_minimiser`] from all the roots of T, with the minimiser's unit
    /// direction (0 from the dense scan).
    fn boundary_minimiser_by_roots(&self) -> (Vector2<f64>, Vector2<f64>) {
        let mut best: Option<(f64, Vector2<f64>)> = None;
        let consider = |phi: f64, best: &mut Option<(f64, Vector2<f64>)>| {
            if let Some(x) = self.boundary_point(phi) {
                let v = self.g(&x);
                if best.is_none_or(|(b, _)| v < b) {
                    *best = Some((v, x));
                }
            }
        };
        let (dirs, count) = trig2_root_directions(&self.boundary_poly());
        let mut best_dir = Vector2::zeros();
        for d in &dirs[..count] {
            if let Some(x) = self.boundary_point_along(d) {
                let v = self.g(&x);
                if best.is_none_or(|(b, _)| v < b) {
                    best = Some((v, x));
                    best_dir = *d;
                }
            }
        }
        match best {
            Some((_, x)) => (x, best_dir),
            // Not reached for a valid problem (G has a minimum on the boundary); a dense
            // scan keeps the answer feasible if the root finder ever fails.
            None => {
                let mut best = None;
                for j in 0..720 {
                    consider(TAU * j as f64 / 720.0, &mut best);
                }
                (best.map_or(Vector2::zeros(), |(_, x)| x), Vector2::zeros())
            }
        }
    }

    /// The coefficients of [`Self::boundary_minimiser`]'s
    /// T(φ) = c (A d)ᵀ(d⊥ + k⊥) + (1 + kᵀd) pᵀ(d⊥ + k⊥), d = (cos φ, sin φ). With
    /// A = [a₁₁ a₁₂; a₁₂ a₂₂] and κ = pᵀk⊥ = k₁p₂ − k₂p₁: (A d)ᵀd⊥ = a₁₂ cos 2φ +
    /// ½(a₂₂ − a₁₁) sin 2φ, (A d)ᵀk⊥ = (k₁a₁₂ − k₂a₁₁) cos φ + (k₁a₂₂ − k₂a₁₂) sin φ, and
    /// (1 + k₁ cos φ + k₂ sin φ)(κ + p₂ cos φ − p₁ sin φ) expands with cos² = (1 + cos 2φ)/2,
    /// sin² = (1 − cos 2φ)/2, sin cos = ½ sin 2φ.
    fn boundary_poly(&self) -> TrigPoly2 {
        let (a11, a12, a22) = (self.a[(0, 0)], self.a[(0, 1)], self.a[(1, 1)]);
        let (k1, k2) = (self.k.x, self.k.y);
        let (p1, p2) = (self.p.x, self.p.y);
        let c = self.c;
        let kappa = k1 * p2 - k2 * p1;
        TrigPoly2 {
            a0: 1.5 * kappa,
            a1: c * (k1 * a12 - k2 * a11) + p2 + k1 * kappa,
            b1: c * (k1 * a22 - k2 * a12) - p1 + k2 * kappa,
            a2: c * a12 + 0.5 * (k1 * p2 + k2 * p1),
            b2: 0.5 * (c * (a22 - a11) - k1 * p1 + k2 * p2),
        }
    }

    /// All impulsive Coulomb sliding solutions on the cone boundary (b_n < 0): the
    /// boundary points x(φ) whose post-impulse slip u_t⁺ = A x + p directly opposes the
    /// friction d: u_t⁺ × d = 0 and u_t⁺ᵀ d < 0. With x = r d and the positive factor
    /// 1 + kᵀd the first condition is the degree-2 trigonometric polynomial
    /// W(φ) = (c A d + (1 + kᵀd) p) × d = 0 (the quartic of Bonnefon and Daviet, paper 003
    /// ref. 3), so there are at most 4.
    pub fn coulomb_sliding(&self) -> Vec<Vector2<f64>> {
        let w = |phi: f64| {
            let d = dir(phi);
            cross2(&(self.a * d * self.c + self.p * (1.0 + self.k.dot(&d))), &d)
        };
        let poly = TrigPoly2::fit(w);
        let scale = poly.scale();
        let mut out: Vec<Vector2<f64>> = Vec::new();
        for phi in trig2_roots(&poly) {
            let Some(x) = self.boundary_point(phi) else {
                continue;
            };
            let d = dir(phi);
            let u = self.a * x + self.p;
            // A genuine root (not a near-real pair of complex roots), opposing the slip.
            if poly.eval(phi).abs() <= 1e-9 * scale
                && u.dot(&d) < 0.0
                && !out.iter().any(|y| (y - x).norm() <= 1e-9 * x.norm())
            {
                out.push(x);
            }
        }
        out
    }

    /// b_n = 0: the plane of maximum compression passes through the origin and the conic
    /// section is ‖x‖ ≤ −kᵀx: the point 0 if ‖k‖ < 1, else the wedge between the rays
    /// along the directions where 1 + kᵀd = 0 (paper 003 eq. 9; one ray if ‖k‖ = 1). The
    /// sticking impulse was outside it, so the minimum of g is on a ray:
    /// x = s e, s = max(0, −pᵀe / eᵀAe).
    pub fn degenerate_minimiser(&self) -> Vector2<f64> {
        let kn = self.k.norm();
        if kn < 1.0 {
            return Vector2::zeros();
        }
        let axis = -self.k / kn;
        let half = (1.0 / kn).clamp(-1.0, 1.0).acos();
        let mut best = (0.0, Vector2::zeros());
        for sign in [-1.0, 1.0] {
            let (s, c) = (sign * half).sin_cos();
            let e = Vector2::new(c * axis.x - s * axis.y, s * axis.x + c * axis.y);
            let t = (-self.p.dot(&e) / e.dot(&(self.a * e))).max(0.0);
            let x = e * t;
            let v = self.g(&x);
            if v < best.0 {
                best = (v, x);
            }
        }
        best.1
    }
}

/// A real trigonometric polynomial of degree 2:
/// T(φ) = a0 + a1 cos φ + b1 sin φ + a2 cos 2φ + b2 sin 2φ.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrigPoly2 {
    pub a0: f64,
    pub a1: f64,
    pub b1: f64,
    pub a2: f64,
    pub b2: f64,
}

impl TrigPoly2 {
    /// The coefficients of `f`, which must be a trigonometric polynomial of degree ≤ 2,
    /// from 5 equally spaced samples (a discrete Fourier transform is exact for it).
    pub fn fit(f: impl Fn(f64) -> f64) -> Self {
        let mut c = TrigPoly2 {
            a0: 0.0,
            a1: 0.0,
            b1: 0.0,
            a2: 0.0,
            b2: 0.0,
        };
        for j in 0..5 {
            let phi = TAU * j as f64 / 5.0;
            let v = f(phi);
            c.a0 += v / 5.0;
            c.a1 += 0.4 * v * phi.cos();
            c.b1 += 0.4 * v * phi.sin();
            c.a2 += 0.4 * v * (2.0 * phi).cos();
            c.b2 += 0.4 * v * (2.0 * phi).sin();
        }
        c
    }

    pub fn eval(&self, phi: f64) -> f64 {
        self.a0
            + self.a1 * phi.cos()
            + self.b1 * phi.sin()
            + self.a2 * (2.0 * phi).cos()
            + self.b2 * (2.0 * phi).sin()
    }

    pub fn derivative(&self, phi: f64) -> f64 {
        -self.a1 * phi.sin() + self.b1 * phi.cos() - 2.0 * self.a2 * (2.0 * phi).sin()
            + 2.0 * self.b2 * (2.0 * phi).cos()
    }

    /// Sum of the coefficients' magnitudes (bounds |T|).
    pub fn scale(&self) -> f64 {
        self.a0.abs() + self.a1.abs() + self.b1.abs() + self.a2.abs() + self.b2.abs()
    }

    /// T(φ) and T'(φ) from one sine and cosine (the double angles by
    /// sin 2φ = 2 sin φ cos φ, cos 2φ = (cos φ − sin φ)(cos φ + sin φ)).
    fn eval_with_derivative(&self, phi: f64) -> (f64, f64) {
        let (s, c) = phi.sin_cos();
        let (s2, c2) = (2.0 * s * c, (c - s) * (c + s));
        (
            self.a0 + self.a1 * c + self.b1 * s + self.a2 * c2 + self.b2 * s2,
            -self.a1 * s + self.b1 * c + 2.0 * (self.b2 * c2 - self.a2 * s2),
        )
    }

    /// The same polynomial in ψ = φ − φ0, given (cos φ0, sin φ0, cos 2φ0, sin 2φ0).
    fn rotated(&self, (c1, s1, c2, s2): (f64, f64, f64, f64)) -> Self {
        TrigPoly2 {
            a0: self.a0,
            a1: self.a1 * c1 + self.b1 * s1,
            b1: -self.a1 * s1 + self.b1 * c1,
            a2: self.a2 * c2 + self.b2 * s2,
            b2: -self.a2 * s2 + self.b2 * c2,
        }
    }
}

/// Real roots φ ∈ (−π, π] of a degree-2 trigonometric polynomial (at most 4).
///
/// With t = tan(ψ/2), cos ψ = (1 − t²)/(1 + t²), sin ψ = 2t/(1 + t²) and the double-angle
/// forms,
///
/// (1 + t²)² T = (a0 − a1 + a2) t⁴ + (2b1 − 4b2) t³ + (2a0 − 6a2) t² + (2b1 + 4b2) t + (a0 + a1 + a2).
///
/// The variable is first rotated (ψ = φ − φ0, φ0 a multiple of π/4) so that
/// |T(φ0 + π)|, the leading coefficient, is the largest of 8 samples: no root sits at
/// t = ∞. The quartic's four complex roots come from Ferrari's factorisation
/// (`quartic_roots`); those with a small imaginary part are polished by Newton's
/// method on T itself. Near-real complex pairs may yield extra candidates; callers
/// evaluate or check each one.
pub fn trig2_roots(poly: &TrigPoly2) -> Vec<f64> {
    let (roots, count) = trig2_root_array(poly);
    roots[..count].to_vec()
}

/// (cos θ, sin θ, cos 2θ, sin 2θ) at θ = jπ/4, j = 0…7: the candidate rotations of
/// [`trig2_roots`].
const EIGHTHS: [(f64, f64, f64, f64); 8] = {
    const H: f64 = std::f64::consts::FRAC_1_SQRT_2;
    [
        (1.0, 0.0, 1.0, 0.0),
        (H, H, 0.0, 1.0),
        (0.0, 1.0, -1.0, 0.0),
        (-H, H, 0.0, -1.0),
        (-1.0, 0.0, 1.0, 0.0),
        (-H, -H, 0.0, 1.0),
        (0.0, -1.0, -1.0, 0.0),
        (H, -H, 0.0, -1.0),
    ]
};

/// The rotation and the monic quartic of [`trig2_roots`]: the index j0 of the rotation
/// φ0 = j0 π/4 in [`EIGHTHS`] and the coefficients (c3, c2, c1, c0) of
/// t⁴ + c3 t³ + c2 t² + c1 t + c0, t = tan((φ − φ0)/2); `None` when T vanishes
/// identically to rounding.
fn rotated_quartic(poly: &TrigPoly2) -> Option<(usize, [f64; 4])> {
    let scale = poly.scale();
    if scale == 0.0 || !scale.is_finite() {
        return None;
    }
    // T(θ + π) = a0 − a1 cos θ − b1 sin θ + a2 cos 2θ + b2 sin 2θ.
    let opposite = |&(c1, s1, c2, s2): &(f64, f64, f64, f64)| {
        (poly.a0 - poly.a1 * c1 - poly.b1 * s1 + poly.a2 * c2 + poly.b2 * s2).abs()
    };
    let (mut j0, mut largest) = (0, opposite(&EIGHTHS[0]));
    for (j, angle) in EIGHTHS.iter().enumerate().skip(1) {
        let v = opposite(angle);
        if v > largest {
            (j0, largest) = (j, v);
        }
    }
    let q = poly.rotated(EIGHTHS[j0]);
    let lead = q.a0 - q.a1 + q.a2;
    if lead.abs() <= 1e-14 * scale {
        // |T| ≤ 1e-14 scale at 8 points spread over the circle: T vanishes identically
        // to rounding (no isolated roots).
        return None;
    }
    let inv = 1.0 / lead;
    Some((
        j0,
        [
            (2.0 * q.b1 - 4.0 * q.b2) * inv,
            (2.0 * q.a0 - 6.0 * q.a2) * inv,
            (2.0 * q.b1 + 4.0 * q.b2) * inv,
            (q.a0 + q.a1 + q.a2) * inv,
        ],
    ))
}

/// Whether a complex root (re, im) of the quartic counts as a real candidate: a small
/// imaginary part may be rounding of a real (double) root.
fn near_real(re: f64, im: f64) -> bool {
    re.is_finite() && im.is_finite() && im.abs() <= 1e-3 * (1.0 + (re * re + im * im).sqrt())
}

/// The unit directions d(φ) = (cos φ, sin φ) at the real roots of `poly`, without
/// trigonometric functions: each near-real root t of [`rotated_quartic`] is polished by
/// Newton's method on the quartic itself, and d is the rotation by φ0 of
/// ((1 − t²), 2t)/(1 + t²). At most 4; a near-real complex pair may yield extra
/// candidates (the caller evaluates each one).
fn trig2_root_directions(poly: &TrigPoly2) -> ([Vector2<f64>; 4], usize) {
    let mut dirs = [Vector2::zeros(); 4];
    let mut count = 0;
    let Some((j0, [c3, c2, c1, c0])) = rotated_quartic(poly) else {
        return (dirs, count);
    };
    let (cos0, sin0, _, _) = EIGHTHS[j0];
    for (re, im) in quartic_roots(c3, c2, c1, c0) {
        if !near_real(re, im) {
            continue;
        }
        let mut t = re;
        for _ in 0..8 {
            let f = (((t + c3) * t + c2) * t + c1) * t + c0;
            let df = ((4.0 * t + 3.0 * c3) * t + 2.0 * c2) * t + c1;
            if df == 0.0 || f == 0.0 {
                break;
            }
            let step = f / df;
            if !step.is_finite() || step.abs() > 0.5 * (1.0 + t.abs()) {
                break;
            }
            t -= step;
            if step.abs() <= 1e-15 * (1.0 + t.abs()) {
                break;
            }
        }
        let w = 1.0 / (1.0 + t * t);
        let (c, s) = ((1.0 - t * t) * w, 2.0 * t * w);
        dirs[count] = Vector2::new(cos0 * c - sin0 * s, sin0 * c + cos0 * s);
        count += 1;
    }
    (dirs, count)
}

/// [`trig2_roots`] without allocating: the distinct roots are the first `count` of the
/// array (a quartic has at most 4).
fn trig2_root_array(poly: &TrigPoly2) -> ([f64; 4], usize) {
    let mut roots = [0.0; 4];
    let mut count = 0;
    let Some((j0, [c3, c2, c1, c0])) = rotated_quartic(poly) else {
        return (roots, count);
    };
    let phi0 = j0 as f64 * std::f64::consts::FRAC_PI_4;
    for (re, im) in quartic_roots(c3, c2, c1, c0) {
        if !near_real(re, im) {
            continue;
        }
        let mut phi = phi0 + 2.0 * re.atan();
        for _ in 0..8 {
            let (v, dv) = poly.eval_with_derivative(phi);
            if dv == 0.0 || v == 0.0 {
                break;
            }
            let step = v / dv;
            if !step.is_finite() || step.abs() > 0.5 {
                break;
            }
            phi -= step;
            if step.abs() <= 1e-15 * (1.0 + phi.abs()) {
                break;
            }
        }
        let phi = (phi + PI).rem_euclid(TAU) - PI;
        if !roots[..count]
            .iter()
            .any(|r: &f64| ((r - phi + PI).rem_euclid(TAU) - PI).abs() < 1e-12)
        {
            roots[count] = phi;
            count += 1;
        }
    }
    (roots, count)
}

/// The four complex roots (re, im) of the monic quartic t⁴ + a t³ + b t² + c t + d
/// (Ferrari). With t = y − a/4 it is y⁴ + p y² + q y + r, which factors as
/// (y² + α y + β)(y² − α y + γ) with β + γ = p + α², α (γ − β) = q, β γ = r;
/// eliminating β and γ leaves the resolvent cubic in m = α²/2,
/// m³ + p m² + (p²/4 − r) m − q²/8 = 0, whose largest root is ≥ 0 (the cubic is −q²/8 ≤ 0
/// at m = 0). γ − β is taken as q/α or as ±√((p + α²)² − 4r) (the roots of
/// s² − (p + α²) s + r, sign of q), whichever matches the factorisation's equations
/// better: the first loses accuracy as α → 0, the second where its root is a
/// cancellation. Rounding errors of the roots are left to the caller's polish.
fn quartic_roots(a: f64, b: f64, c: f64, d: f64) -> [(f64, f64); 4] {
    let shift = -0.25 * a;
    let a2 = a * a;
    let p = b - 0.375 * a2;
    let q = c - 0.5 * a * b + 0.125 * a2 * a;
    let r = d - 0.25 * a * c + a2 * b / 16.0 - 3.0 * a2 * a2 / 256.0;
    let m = largest_cubic_root(p, 0.25 * p * p - r, -0.125 * q * q).max(0.0);
    let alpha = (2.0 * m).sqrt();
    let sum = p + 2.0 * m;
    // (γ − β) candidates and the factorisation's residual for each.
    let residual = |diff: f64| {
        let (beta, gamma) = (0.5 * (sum - diff), 0.5 * (sum + diff));
        (
            (alpha * diff - q).abs() + (beta * gamma - r).abs(),
            beta,
            gamma,
        )
    };
    let mut best = (f64::INFINITY, 0.5 * sum, 0.5 * sum);
    if alpha > 0.0 {
        best = residual(q / alpha);
    }
    let disc = sum * sum - 4.0 * r;
    if disc >= 0.0 {
        let candidate = residual(disc.sqrt().copysign(q));
        if candidate.0 < best.0 {
            best = candidate;
        }
    }
    let (_, beta, gamma) = best;
    let [y0, y1] = quadratic_roots(alpha, beta);
    let [y2, y3] = quadratic_roots(-alpha, gamma);
    [y0, y1, y2, y3].map(|(re, im)| (re + shift, im))
}

/// The two complex roots (re, im) of y² + s y + t.
fn quadratic_roots(s: f64, t: f64) -> [(f64, f64); 2] {
    let disc = s * s - 4.0 * t;
    if disc >= 0.0 {
        // −(s ± √disc)/2 without cancellation: the larger root, then t over it.
        let big = -0.5 * (s + disc.sqrt().copysign(s));
        let small = if big != 0.0 { t / big } else { 0.0 };
        [(big, 0.0), (small, 0.0)]
    } else {
        let im = 0.5 * (-disc).sqrt();
        [(-0.5 * s, im), (-0.5 * s, -im)]
    }
}

/// The largest real root of the monic cubic m³ + b m² + c m + d (Cardano, or the
/// trigonometric form when all three roots are real), polished by two Newton steps.
fn largest_cubic_root(b: f64, c: f64, d: f64) -> f64 {
    // m = z − b/3: z³ + P z + Q.
    let third = b / 3.0;
    let pp = c - b * third;
    let qq = (2.0 / 27.0) * b * b * b - c * third + d;
    let disc = 0.25 * qq * qq + pp * pp * pp / 27.0;
    let z = if disc > 0.0 {
        let u = -(0.5 * qq.abs() + disc.sqrt()).cbrt().copysign(qq);
        if u != 0.0 { u - pp / (3.0 * u) } else { 0.0 }
    } else {
        let rho = (-pp / 3.0).sqrt();
        if rho > 0.0 {
            let cos3 = (-qq / (2.0 * rho * rho * rho)).clamp(-1.0, 1.0);
            2.0 * rho * (cos3.acos() / 3.0).cos()
        } else {
            0.0
        }
    };
    let mut m = z - third;
    for _ in 0..2 {
        let f = ((m + b) * m + c) * m + d;
        let df = (3.0 * m + 2.0 * b) * m + c;
        if df == 0.0 || f == 0.0 {
            break;
        }
        let next = m - f / df;
        if !next.is_finite() {
            break;
        }
        m = next;
    }
    m
}

/// All impulsive Coulomb solutions of one contact (paper 003 §4.1, Fig. 1's impulsive
/// constraints with a purely inelastic impact), in the contact frame: λ = 0 when
/// b_n ≥ 0 (no collision; for b_n = 0 the sticking impulse is also one when it lies in
/// the cone, paper §4.2), else the sticking impulse if it lies in the cone plus every
/// sliding solution on the cone boundary. For comparing the friction laws.
pub fn coulomb_solutions(d: &Mat3, b: &Vec3, mu: f64) -> Vec<Vec3> {
    let mut out = Vec::new();
    if b.x >= 0.0 {
        out.push(Vec3::zeros());
    }
    if b.x > 0.0 {
        return out;
    }
    let Some(chol) = d.cholesky() else {
        return out;
    };
    let stick = -chol.solve(b);
    let scale = stick.norm();
    if stick.x >= 0.0 && stick.yz().norm() <= mu * stick.x + ROUND * scale && stick != Vec3::zeros()
    {
        out.push(stick);
    }
    if b.x < 0.0 {
        if mu == 0.0 {
            out.push(Vec3::new(-b.x / d[(0, 0)], 0.0, 0.0));
        } else {
            let plane = PlaneProblem::new(d, b, mu);
            out.extend(plane.coulomb_sliding().iter().map(|x| plane.lift(x)));
        }
    }
    out
}

/// Per-contact data of the sweep, next to the [`PreparedContact`].
#[derive(Clone, Debug)]
struct BlockRow {
    /// Delassus block in the contact frame (n, t₁, t₂).
    d: Mat3,
    /// D⁻¹ (from its Cholesky factor), `None` for a contact between two static sides.
    /// Both set when the contact's pair joins the sweeps (`join`).
    d_inv: Option<Mat3>,
    /// Accumulated impulse in the contact frame.
    lambda: Vec3,
    /// g̃/h: the gap (or error-reduction) term of the normal velocity (m/s).
    bias: f64,
    /// Whether the contact's pair takes part in the sweeps (module doc, "Resting
    /// contacts"); the same for every contact of a pair. An inactive contact has λ = 0.
    active: bool,
    /// Unit direction of the tangential impulse of the contact's last sliding solution
    /// in this step (0 before the first), where the next one's search starts
    /// ([`PlaneProblem::boundary_minimiser_from`]).
    slide: Vector2<f64>,
}

/// One block's single-contact solution, waiting for the rest of its pair.
#[derive(Clone, Copy, Debug)]
struct Pending {
    ci: usize,
    /// Relative velocity from which the block was solved, in the contact frame.
    local: Vec3,
    /// D_ii Δ_i: the change of that velocity if Δ_i is applied in full.
    d_delta: Vec3,
    /// (D Λ + b)_i: that velocity in the contact frame plus the gap term.
    g: Vec3,
    /// b_i: the velocity the block starts from (its norm scales the convergence test).
    b: Vec3,
    /// The single-contact solution and its change from the accumulated impulse.
    lambda: Vec3,
    delta: Vec3,
    state: ContactState,
}

/// Weight of a pair's Jacobi step (module doc, "Weight"): the minimiser of the pair's
/// f(Λ + ω Δ) = f(Λ) + ω gᵀΔ + ½ ω² ΔᵀDΔ over ω, clamped to [ω_J, 1] with ω_J the
/// pair's spectral weight (`jacobi_weight`); ω_J when Δ is no descent direction of f;
/// 1 when at most one block changes. ΔᵀDΔ = (1/m_a + 1/m_b)|P|² + L_aᵀ I_a⁻¹ L_a +
/// L_bᵀ I_b⁻¹ L_b for the pair's summed impulse P = Σ Q_i Δ_i and its moments
/// L = Σ r_i × Q_i Δ_i (one pair: the same two bodies at every block).
fn pair_weight(prepared: &[PreparedContact], pending: &[Pending], omega_j: f64) -> f64 {
    if pending
        .iter()
        .filter(|job| job.delta != Vec3::zeros())
        .count()
        <= 1
    {
        return 1.0;
    }
    let (mut p, mut l_a, mut l_b, mut slope) = (Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), 0.0);
    for job in pending {
        let c = &prepared[job.ci];
        let q = to_world(c, &job.delta);
        p += q;
        l_a += c.r_a.cross(&q);
        l_b += c.r_b.cross(&q);
        slope += job.g.dot(&job.delta);
    }
    let c = &prepared[pending[0].ci];
    let curvature = p.norm_squared() * (c.inv_mass_a + c.inv_mass_b)
        + l_a.dot(&(c.inv_inertia_a * l_a))
        + l_b.dot(&(c.inv_inertia_b * l_b));
    let omega = -slope / curvature;
    if slope < 0.0 && curvature > 0.0 && omega.is_finite() {
        omega.clamp(omega_j, 1.0)
    } else {
        omega_j
    }
}

#[cold]
fn diverged(why: String) -> SolverError {
    SolverError::Diverged {
        solver: SolverKind::Mdp,
        why,
    }
}

/// Solves contact `ci`'s single-contact problem (paper 003 eq. 5) from the bodies'
/// current velocities; `None` for a contact between two static sides. Only the row's
/// sliding direction (`BlockRow::slide`) changes.
#[inline(always)]
fn solve_block(
    ci: usize,
    c: &PreparedContact,
    row: &mut BlockRow,
    bodies: &[RigidBody],
    mu: f64,
    law: FrictionLaw,
) -> Result<Option<Pending>, SolverError> {
    let Some(d_inv) = row.d_inv.as_ref() else {
        return Ok(None);
    };
    let u = c.relative_velocity(bodies);
    // b_i: own impulse removed, gap term added, and g_i = (D Λ + b)_i: the
    // post-impulse velocity with the gap term   (paper 003 eq. 5)
    let local = to_local(c, &u);
    let mut b = local - row.d * row.lambda;
    b.x += row.bias;
    let mut g = local;
    g.x += row.bias;
    if !b.iter().all(|x| x.is_finite()) {
        return Err(diverged(format!(
            "non-finite relative velocity at contact {ci} (body {})",
            c.a
        )));
    }
    let sol = solve_with_stick(&row.d, &b, mu, law, &mut row.slide, || Some(-(d_inv * b)));
    let delta = sol.lambda - row.lambda;
    if !delta.iter().all(|x| x.is_finite()) {
        return Err(diverged(format!(
            "non-finite impulse at contact {ci} (body {})",
            c.a
        )));
    }
    Ok(Some(Pending {
        ci,
        local,
        d_delta: row.d * delta,
        g,
        b,
        lambda: sol.lambda,
        delta,
        state: sol.state,
    }))
}

/// Brings pair `members` into the sweeps: each contact's Delassus block
/// D_ii = Qᵀ K Q, Q = [n t₁ t₂] (paper 003 eq. 2) and, when a body is dynamic, its inverse
/// from its Cholesky factor; returns the pair's Jacobi weight (`jacobi_weight`).
fn join(
    prepared: &[PreparedContact],
    rows: &mut [BlockRow],
    members: &[usize],
) -> Result<f64, SolverError> {
    for &ci in members {
        let (c, row) = (&prepared[ci], &mut rows[ci]);
        let q = Mat3::from_columns(&[c.n, c.t1, c.t2]);
        row.d = q.transpose() * c.k * q;
        row.d_inv = if c.resolvable() {
            Some(row.d.cholesky().map(|c| c.inverse()).ok_or_else(|| {
                diverged(format!(
                    "Delassus block of contact {ci} (body {}) is not positive definite",
                    c.a
                ))
            })?)
        } else {
            None
        };
        row.active = true;
    }
    Ok(jacobi_weight(prepared, rows, members))
}

/// Whether contact `c` (impulse still 0) needs the sweeps (module doc, "Resting
/// contacts"): with b its relative velocity plus the gap term in the contact frame, it
/// approaches faster than `resting` (b_n < −v_r), or it closes (b_n < 0) while slipping
/// faster than `resting` (|b_t| > v_r), or its velocity is not finite. A contact between
/// two static sides never does.
#[inline(always)]
fn needs_impulse(c: &PreparedContact, row: &BlockRow, bodies: &[RigidBody], resting: f64) -> bool {
    if !c.resolvable() {
        return false;
    }
    let mut b = to_local(c, &c.relative_velocity(bodies));
    b.x += row.bias;
    // A non-finite velocity joins too, so that the solve reports it.
    !b.iter().all(|x| x.is_finite())
        || b.x < -resting
        || (b.x < 0.0 && b.y * b.y + b.z * b.z > resting * resting)
}

/// Moves contact `job.ci`'s accumulated impulse by ω Δ (to λ̂ itself when ω = 1), applies
/// that change to the bodies, whose relative velocity at the contact is `local` (contact
/// frame), books its work and writes its trace row. In the contact frame the impulse
/// ω Δ changes that velocity by ω D_ii Δ (D_ii = Qᵀ K Q), so its work
/// ω Δ·(u⁻ + u⁺)/2 (paper 000 eq. 16) is booked there, e_n the normal.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn apply_block(
    c: &PreparedContact,
    row: &mut BlockRow,
    job: &Pending,
    omega: f64,
    local: &Vec3,
    bodies: &mut [RigidBody],
    report: &mut SolverReport,
    trace: &mut Option<&mut Vec<TraceRow>>,
    sweep: u32,
) {
    let (delta, d_delta) = if omega == 1.0 {
        row.lambda = job.lambda;
        (job.delta, job.d_delta)
    } else {
        let step = job.delta * omega;
        row.lambda += step;
        (step, job.d_delta * omega)
    };
    if delta == Vec3::zeros() && trace.is_none() {
        return;
    }
    let p = to_world(c, &delta);
    c.apply_impulse(bodies, &p);
    let after = local + d_delta;
    report.book_impulse(&Vec3::x(), &delta, local, &after);
    if let Some(rows) = trace.as_deref_mut() {
        let kinetic_energy = super::total_kinetic_energy(bodies);
        rows.push(TraceRow {
            iteration: sweep - 1,
            stage: job.state.stage(),
            contact: job.ci,
            normal_velocity: after.x,
            impulse: [p.x, p.y, p.z],
            elastic_energy: 0.0,
            elastic_total: 0.0,
            kinetic_energy,
            total_energy: kinetic_energy,
        });
    }
}

/// Weight of weighted block Jacobi for one pair from its spectrum: 2 / (λ_min + λ_max) of
/// the non-zero eigenvalues of blockdiag(D)⁻¹ D (module doc, "Weight"). With
/// J_i = [Q_i; r̃_a,i Q_i] (6 × 3: the wrench (P, L_a) of a local impulse about body a's
/// centre) and G the pair's 6 × 6 compliance, ΔᵀDΔ = (Σ J_i Δ_i)ᵀ G (Σ J_i Δ_i),
/// D_ij = J_iᵀ G J_j, and the non-zero eigenvalues of blockdiag(D)⁻¹ D are those of
/// Cᵀ S C with S = Σ_i J_i D_ii⁻¹ J_iᵀ and G = C Cᵀ.
fn jacobi_weight(prepared: &[PreparedContact], rows: &[BlockRow], members: &[usize]) -> f64 {
    let m = members.len();
    if m <= 1 {
        return 1.0;
    }
    let floor = 1.0 / m as f64;
    match pair_spectrum(prepared, rows, members) {
        Some((min, max)) if (2.0 / (min + max)).is_finite() => {
            (2.0 / (min + max)).clamp(floor, 1.0)
        }
        _ => floor,
    }
}

/// The least and the largest non-zero eigenvalue of blockdiag(D)⁻¹ D for a pair's
/// contacts `members` (`jacobi_weight`); `None` if the compliance G is singular.
fn pair_spectrum(
    prepared: &[PreparedContact],
    rows: &[BlockRow],
    members: &[usize],
) -> Option<(f64, f64)> {
    let c0 = &prepared[*members.first()?];
    let mut s = Matrix6::<f64>::zeros();
    for &ci in members {
        let (c, row) = (&prepared[ci], &rows[ci]);
        let Some(d_inv) = row.d_inv.as_ref() else {
            continue;
        };
        let q = Mat3::from_columns(&[c.n, c.t1, c.t2]);
        let mut j = Matrix6x3::<f64>::zeros();
        j.fixed_view_mut::<3, 3>(0, 0).copy_from(&q);
        j.fixed_view_mut::<3, 3>(3, 0)
            .copy_from(&(skew(&c.r_a) * q));
        s += j * d_inv * j.transpose();
    }
    // (P, L_a) ↦ ½ ΔᵀDΔ: L_b = L_a + d × P with d = x_a − x_b = r_b − r_a.
    let d = skew(&(c0.r_b - c0.r_a));
    let ib = c0.inv_inertia_b;
    let mut g = Matrix6::<f64>::zeros();
    let translation = Mat3::identity() * (c0.inv_mass_a + c0.inv_mass_b);
    g.fixed_view_mut::<3, 3>(0, 0)
        .copy_from(&(translation + d.transpose() * ib * d));
    g.fixed_view_mut::<3, 3>(0, 3)
        .copy_from(&(d.transpose() * ib));
    g.fixed_view_mut::<3, 3>(3, 0).copy_from(&(ib * d));
    g.fixed_view_mut::<3, 3>(3, 3)
        .copy_from(&(c0.inv_inertia_a + ib));
    let l = g.cholesky()?.l();
    let eig = SymmetricEigen::try_new(l.transpose() * s * l, 1e-12, 100)?;
    let max = eig.eigenvalues.max();
    let min = eig
        .eigenvalues
        .iter()
        .copied()
        .filter(|&e| e > 1e-9 * max)
        .fold(f64::INFINITY, f64::min);
    Some((min, max))
}

/// Orders the contacts pair by pair: `order[ends[g − 1]..ends[g]]` are the indices of
/// pair g's contacts (same bodies a and b, or body a and the same container). The narrow
/// phase emits each pair's contacts together; then `order` is the identity and the pairs
/// keep their order. Otherwise the contacts are sorted by pair (stable: a pair's
/// contacts keep theirs). `runs` is scratch.
fn group_by_pair(
    prepared: &[PreparedContact],
    order: &mut Vec<usize>,
    ends: &mut Vec<usize>,
    runs: &mut Vec<PairKey>,
) {
    let key = |c: &PreparedContact| -> PairKey { (c.a, c.b, c.container) };
    order.clear();
    order.extend(0..prepared.len());
    ends.clear();
    runs.clear();
    for (i, c) in prepared.iter().enumerate() {
        if i > 0 && !c.same_pair(&prepared[i - 1]) {
            ends.push(i);
        }
        if i == 0 || !c.same_pair(&prepared[i - 1]) {
            runs.push(key(c));
        }
    }
    if !prepared.is_empty() {
        ends.push(prepared.len());
    }
    runs.sort_unstable();
    if runs.windows(2).all(|w| w[0] != w[1]) {
        return;
    }
    order.sort_by_key(|&i| key(&prepared[i]));
    ends.clear();
    for i in 1..order.len() {
        if !prepared[order[i]].same_pair(&prepared[order[i - 1]]) {
            ends.push(i);
        }
    }
    ends.push(order.len());
}

/// Maximum-dissipation (or Coulomb) block solver, Gauss-Seidel over pairs and weighted
/// Jacobi within a pair; see the module doc.
#[derive(Clone, Default)]
pub struct MdpSolver {
    prepared: Vec<PreparedContact>,
    rows: Vec<BlockRow>,
    /// Contact indices pair by pair, and where each pair's run ends ([`group_by_pair`]).
    order: Vec<usize>,
    ends: Vec<usize>,
    runs: Vec<PairKey>,
    /// Each pair's Jacobi weight (`jacobi_weight`).
    weights: Vec<f64>,
    /// The current pair's single-contact solutions.
    pending: Vec<Pending>,
    /// Per body, the last sweep in which it received an impulse, and per pair, the last
    /// sweep in which a resting pair was checked (`needs_impulse`): an unchanged pair is
    /// not checked again.
    moved: Vec<u32>,
    checked: Vec<u32>,
}

fn to_local(c: &PreparedContact, v: &Vec3) -> Vec3 {
    Vec3::new(c.n.dot(v), c.t1.dot(v), c.t2.dot(v))
}

fn to_world(c: &PreparedContact, l: &Vec3) -> Vec3 {
    c.n * l.x + c.t1 * l.y + c.t2 * l.z
}

impl CollisionSolver for MdpSolver {
    fn kind(&self) -> SolverKind {
        SolverKind::Mdp
    }

    fn own_parameters(&self) -> &'static [Param] {
        &[
            Param::Friction,
            Param::MaxIterations,
            Param::Tolerance,
            Param::RestVelocity,
            Param::ContactPass,
            Param::MdpFriction,
            Param::ErrorReduction,
        ]
    }

    fn corrects_positions(&self, _: &super::SolverParams) -> bool {
        true
    }

    fn keeps_impulses(&self) -> bool {
        true
    }

    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError> {
        let SolverContext {
            bodies,
            contacts,
            impulses,
            params,
            dt,
            mut trace,
            ..
        } = ctx;
        let mu = params.friction;
        let law = params.mdp_friction;
        let eps = params.error_reduction;
        self.prepared.clear();
        self.prepared
            .extend(contacts.iter().map(|c| PreparedContact::new(bodies, c)));
        self.rows.clear();
        self.rows.extend(self.prepared.iter().map(|c| BlockRow {
            d: Mat3::zeros(),
            d_inv: None,
            lambda: Vec3::zeros(),
            bias: if c.gap >= 0.0 { c.gap } else { eps * c.gap } / dt,
            active: false,
            slide: Vector2::zeros(),
        }));
        let mut report = SolverReport::default();
        group_by_pair(
            &self.prepared,
            &mut self.order,
            &mut self.ends,
            &mut self.runs,
        );
        // Resting pairs (module doc, "Resting contacts") start out of the sweeps, their
        // Delassus blocks and weight not yet computed; with the contact pass off or
        // `rest_velocity` = 0 every pair takes part from the start.
        let resting = params.resting_speed();
        self.weights.clear();
        let mut start = 0;
        for &end in &self.ends {
            let members = &self.order[start..end];
            start = end;
            let joins = resting == 0.0
                || members
                    .iter()
                    .any(|&ci| needs_impulse(&self.prepared[ci], &self.rows[ci], bodies, resting));
            self.weights.push(if joins {
                join(&self.prepared, &mut self.rows, members)?
            } else {
                0.0
            });
        }
        // Warm start: each contact of an active pair that carried an impulse at the end
        // of the last step (same pair, same features: the contact's `FeatureId`) starts
        // from it, pulled into the friction cone. It is a starting point of the sweeps
        // only: their fixed points are the same.
        for ((c, row), remembered) in self
            .prepared
            .iter()
            .zip(self.rows.iter_mut())
            .zip(&*impulses)
        {
            if row.d_inv.is_none() || !row.active {
                continue;
            }
            let Some(e) = remembered.method else {
                continue;
            };
            let mut lambda = Vec3::new(e.normal, e.tangent.dot(&c.t1), e.tangent.dot(&c.t2));
            let shear = lambda.y.hypot(lambda.z);
            if shear > mu * lambda.x {
                let k = if shear > 0.0 {
                    mu * lambda.x / shear
                } else {
                    0.0
                };
                lambda.y *= k;
                lambda.z *= k;
            }
            if !(lambda.x > 0.0 && lambda.iter().all(|x| x.is_finite())) {
                continue;
            }
            let u = c.relative_velocity(bodies);
            let p = to_world(c, &lambda);
            c.apply_impulse(bodies, &p);
            report.book_impulse(&c.n, &p, &u, &(u + c.k * p));
            row.lambda = lambda;
        }
        let MdpSolver {
            prepared,
            rows,
            order,
            ends,
            pending,
            weights,
            moved,
            checked,
            ..
        } = self;
        moved.clear();
        moved.resize(bodies.len(), 0);
        checked.clear();
        checked.resize(ends.len(), 0);
        let mut v_ref: f64 = 0.0;
        for sweep in 1..=params.max_iterations {
            report.iterations = sweep;
            // The largest ‖D_ii Δ_i‖², its square root taken once per sweep.
            let mut change_sq: f64 = 0.0;
            let mut start = 0;
            for ((&end, weight), checked) in
                ends.iter().zip(weights.iter_mut()).zip(checked.iter_mut())
            {
                let members = &order[start..end];
                start = end;
                let (a, b) = (prepared[members[0]].a, prepared[members[0]].b);
                // A resting pair joins once its contacts need an impulse (module doc,
                // "Resting contacts"); its impulses are 0 until then. Its velocities, so
                // the test, change only when a body of it receives an impulse.
                let fresh = sweep == 1 || !rows[members[0]].active;
                if !rows[members[0]].active {
                    let changed = sweep == 1
                        || moved[a] >= *checked
                        || b.is_some_and(|b| moved[b] >= *checked);
                    if !changed {
                        continue;
                    }
                    *checked = sweep;
                    if !members
                        .iter()
                        .any(|&ci| needs_impulse(&prepared[ci], &rows[ci], bodies, resting))
                    {
                        continue;
                    }
                    *weight = join(prepared, rows, members)?;
                }
                let weight = *weight;
                moved[a] = sweep;
                if let Some(b) = b {
                    moved[b] = sweep;
                }
                if let [ci] = *members {
                    // A pair of one contact: plain Gauss-Seidel.
                    let (c, row) = (&prepared[ci], &mut rows[ci]);
                    let Some(job) = solve_block(ci, c, row, bodies, mu, law)? else {
                        continue;
                    };
                    if fresh {
                        v_ref = v_ref.max(job.b.norm());
                    }
                    change_sq = change_sq.max(job.d_delta.norm_squared());
                    let local = job.local;
                    apply_block(
                        c,
                        row,
                        &job,
                        1.0,
                        &local,
                        bodies,
                        &mut report,
                        &mut trace,
                        sweep,
                    );
                    continue;
                }
                // Jacobi within the pair: every block solved from the same velocities.
                // A block whose impulse does not change applies nothing: it is left out
                // of the weight's sums (it adds only zeros) and of the update (unless
                // traced), so the first block that changes still sees the velocities it
                // was solved from.
                pending.clear();
                for &ci in members {
                    if let Some(job) =
                        solve_block(ci, &prepared[ci], &mut rows[ci], bodies, mu, law)?
                    {
                        if fresh {
                            v_ref = v_ref.max(job.b.norm());
                        }
                        change_sq = change_sq.max(job.d_delta.norm_squared());
                        if job.delta != Vec3::zeros() || trace.is_some() {
                            pending.push(job);
                        }
                    }
                }
                let omega = pair_weight(prepared, pending, weight);
                for (k, job) in pending.iter().enumerate() {
                    let c = &prepared[job.ci];
                    // The first block's velocity is still current; later ones see the
                    // pair's impulses applied before them (each booked on its own).
                    let local = if k == 0 {
                        job.local
                    } else {
                        to_local(c, &c.relative_velocity(bodies))
                    };
                    apply_block(
                        c,
                        &mut rows[job.ci],
                        job,
                        omega,
                        &local,
                        bodies,
                        &mut report,
                        &mut trace,
                        sweep,
                    );
                }
            }
            let change = change_sq.sqrt();
            report.residual = change;
            if change <= params.tolerance * v_ref {
                break;
            }
            if sweep == params.max_iterations {
                report.hit_iteration_cap = true;
            }
        }
        // Each contact keeps its impulse for the next step's warm start.
        for ((c, row), kept) in self
            .prepared
            .iter()
            .zip(&self.rows)
            .zip(impulses.iter_mut())
        {
            kept.method = (row.lambda.x > 0.0).then(|| PointImpulse {
                normal: row.lambda.x,
                tangent: c.t1 * row.lambda.y + c.t2 * row.lambda.z,
            });
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted(mut v: Vec<f64>) -> Vec<f64> {
        v.sort_by(f64::total_cmp);
        v
    }

    #[test]
    fn trig2_roots_finds_known_roots() {
        // cos 2φ: ±π/4, ±3π/4.
        let p = TrigPoly2::fit(|phi| (2.0 * phi).cos());
        let r = sorted(trig2_roots(&p));
        let want = [-0.75 * PI, -0.25 * PI, 0.25 * PI, 0.75 * PI];
        assert_eq!(r.len(), 4, "{r:?}");
        for (a, b) in r.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{r:?}");
        }
        // cos φ − ½ + 0.3 sin 2φ: compare with a dense sign-change scan.
        let f = |phi: f64| phi.cos() - 0.5 + 0.3 * (2.0 * phi).sin();
        let p = TrigPoly2::fit(f);
        let r = sorted(trig2_roots(&p));
        let n = 100_000;
        let mut scan = Vec::new();
        for j in 0..n {
            let (a, b) = (
                -PI + TAU * j as f64 / n as f64,
                -PI + TAU * (j + 1) as f64 / n as f64,
            );
            if f(a).signum() != f(b).signum() {
                scan.push(0.5 * (a + b));
            }
        }
        assert_eq!(r.len(), scan.len(), "{r:?} vs {scan:?}");
        for (a, b) in r.iter().zip(&scan) {
            assert!(
                (a - b).abs() < 1e-4 && f(*a).abs() < 1e-14,
                "{r:?} vs {scan:?}"
            );
        }
        // No real root: 2 + cos φ.
        assert!(trig2_roots(&TrigPoly2::fit(|phi| 2.0 + phi.cos())).is_empty());
    }

    /// Prescribed roots: T(φ) = Π_i sin((φ − φ_i)/2) over four angles (a product of two
    /// degree-1 trigonometric polynomials, sin(φ/2 − α) sin(φ/2 − β) =
    /// ½ (cos(α − β) − cos(φ − α − β))), and two roots times a positive factor. Roots
    /// at least 10⁻³ rad apart are simple and well separated in the quartic's variable,
    /// and Newton's polish (on T, or on the quartic for the directions) ends at rounding:
    /// every prescribed root found to 1e-9 rad and nothing else.
    #[test]
    fn trig2_roots_finds_prescribed_roots() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(27);
        let wrap = |x: f64| (x + PI).rem_euclid(TAU) - PI;
        for case in 0..20_000 {
            let four = case % 2 == 0;
            let n = if four { 4 } else { 2 };
            let want: Vec<f64> = loop {
                let r: Vec<f64> = (0..n).map(|_| rng.random_range(-PI..PI)).collect();
                let separated = r
                    .iter()
                    .enumerate()
                    .all(|(i, a)| r[..i].iter().all(|b| wrap(a - b).abs() > 1e-3));
                if separated {
                    break sorted(r);
                }
            };
            let (tilt, lift) = (rng.random_range(-PI..PI), rng.random_range(0.0..0.99));
            let poly = TrigPoly2::fit(|phi| {
                let roots: f64 = want.iter().map(|r| (0.5 * (phi - r)).sin()).product();
                if four {
                    roots
                } else {
                    roots * (1.0 + lift * (phi - tilt).cos())
                }
            });
            let got = sorted(trig2_roots(&poly));
            assert_eq!(got.len(), n, "case {case}: {got:?} vs {want:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(wrap(g - w).abs() < 1e-9, "case {case}: {got:?} vs {want:?}");
            }
            // The same roots as unit directions, without trigonometric functions.
            let (dirs, count) = trig2_root_directions(&poly);
            assert_eq!(count, n, "case {case}: {:?}", &dirs[..count]);
            for w in &want {
                assert!(
                    dirs[..count].iter().any(|d| (d - dir(*w)).norm() < 1e-9),
                    "case {case}: {w} not among {:?}",
                    &dirs[..count]
                );
            }
        }
    }

    /// [`PlaneProblem::boundary_poly`]'s closed-form coefficients are those of T(φ)
    /// sampled and fitted (exact for a degree-2 polynomial) on random problems, to
    /// rounding (1e-12 of the coefficients' size).
    #[test]
    fn boundary_poly_matches_its_definition() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for case in 0..1000 {
            let l = Mat3::from_fn(|_, _| rng.random_range(-1.0..1.0));
            let d = l * l.transpose() + Mat3::identity() * 0.1;
            let b = Vec3::new(
                rng.random_range(-1.0..0.0),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            let plane = PlaneProblem::new(&d, &b, rng.random_range(0.0..2.0));
            let fitted = TrigPoly2::fit(|phi| {
                let d = dir(phi);
                let tau = perp(&d) + perp(&plane.k);
                plane.c * (plane.a * d).dot(&tau) + (1.0 + plane.k.dot(&d)) * plane.p.dot(&tau)
            });
            let closed = plane.boundary_poly();
            let scale = fitted.scale();
            for (x, y) in [
                (closed.a0, fitted.a0),
                (closed.a1, fitted.a1),
                (closed.b1, fitted.b1),
                (closed.a2, fitted.a2),
                (closed.b2, fitted.b2),
            ] {
                assert!(
                    (x - y).abs() <= 1e-12 * scale,
                    "case {case}: {closed:?} vs {fitted:?}"
                );
            }
        }
    }

    /// The Newton search from a direction (`boundary_minimiser_from`) accepts only the
    /// minimiser that all the roots give: from any direction (the KKT test rejects the
    /// other critical points), and from a slightly changed problem's minimiser, where it
    /// must also accept nearly always.
    #[test]
    fn boundary_search_from_a_direction_finds_the_minimiser() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (mut cases, mut nearby, mut nearby_accepted, mut any_accepted) = (0, 0, 0, 0);
        while cases < 20_000 {
            let l = Mat3::from_fn(|_, _| rng.random_range(-1.0..1.0));
            let d = l * l.transpose() + Mat3::identity() * 0.05;
            let b = Vec3::new(
                rng.random_range(-1.0..-1e-3),
                rng.random_range(-1.0..1.0),
                rng.random_range(-1.0..1.0),
            );
            let mu = rng.random_range(0.05..2.0);
            let Some(chol) = d.cholesky() else { continue };
            let stick = -chol.solve(&b);
            if stick.yz().norm() <= mu * stick.x {
                continue;
            }
            let plane = PlaneProblem::new(&d, &b, mu);
            if plane.isotropic_minimiser().is_some() {
                continue;
            }
            cases += 1;
            let (x, _) = plane.boundary_minimiser_by_roots();
            assert_eq!(x, plane.boundary_minimiser(), "case {cases}");
            let close = |y: &Vector2<f64>| (x - y).norm() <= 1e-10 * x.norm().max(plane.c);
            if let Some((y, _)) = plane.kkt_root_near(&dir(rng.random_range(-PI..PI))) {
                any_accepted += 1;
                assert!(close(&y), "case {cases}, any start: {x} vs {y}");
            }
            // From the minimiser of the same problem with b changed by up to 1e-4.
            let nudged = b + Vec3::from_fn(|_, _| rng.random_range(-1e-4..1e-4));
            let (_, start) = PlaneProblem::new(&d, &nudged, mu).boundary_minimiser_by_roots();
            if start == Vector2::zeros() {
                continue;
            }
            nearby += 1;
            if let Some((z, _)) = plane.kkt_root_near(&start) {
                nearby_accepted += 1;
                assert!(close(&z), "case {cases}, nearby start: {x} vs {z}");
            }
        }
        eprintln!("accepted: {nearby_accepted} of {nearby} nearby, {any_accepted} of {cases} any");
        assert!(
            nearby_accepted >= nearby * 95 / 100,
            "{nearby_accepted} of {nearby}"
        );
    }

    /// A contact of body `a` with `b` or `container` at lever arm `r` from a (the 1 m cubes
    /// of [`cubes`] sit 2 m apart along x), normal +z.
    fn contact(
        bodies: &[RigidBody],
        a: usize,
        b: Option<usize>,
        container: Option<usize>,
        r: Vec3,
    ) -> PreparedContact {
        let c = crate::collision::Contact {
            a,
            b,
            point: r,
            normal: Vec3::z(),
            t1: Vec3::x(),
            t2: Vec3::y(),
            gap: 0.0,
            r_a: r,
            r_b: r + bodies[a].position - b.map_or(bodies[a].position, |b| bodies[b].position),
            container,
            feature: Default::default(),
        };
        PreparedContact::new(bodies, &c)
    }

    fn cubes(n: usize) -> Vec<RigidBody> {
        let shape = crate::shapes::Shape::Cuboid {
            half_extents: Vec3::repeat(0.5),
        };
        (0..n)
            .map(|i| {
                RigidBody::new(
                    &shape,
                    1000.0,
                    Vec3::new(2.0 * i as f64, 0.0, 0.0),
                    crate::math::Quat::identity(),
                )
            })
            .collect()
    }

    fn block(c: &PreparedContact) -> BlockRow {
        let q = Mat3::from_columns(&[c.n, c.t1, c.t2]);
        let d = q.transpose() * c.k * q;
        BlockRow {
            d,
            d_inv: d.cholesky().map(|c| c.inverse()),
            lambda: Vec3::zeros(),
            bias: 0.0,
            active: true,
            slide: Vector2::zeros(),
        }
    }

    #[test]
    fn contacts_are_grouped_by_pair_contiguous_or_not() {
        let bodies = cubes(3);
        let r = Vec3::new(0.5, 0.5, -0.5);
        let (mut order, mut ends, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        // As the narrow phase emits them: each pair's contacts together.
        let together = [
            contact(&bodies, 0, Some(1), None, r),
            contact(&bodies, 0, Some(1), None, -r),
            contact(&bodies, 2, None, Some(0), r),
        ];
        group_by_pair(&together, &mut order, &mut ends, &mut runs);
        assert_eq!(
            (order.as_slice(), ends.as_slice()),
            (&[0, 1, 2][..], &[2, 3][..])
        );
        // Pair (0, 1) split by another pair: sorted by pair, each pair's order kept.
        let split = [
            contact(&bodies, 2, None, Some(0), r),
            contact(&bodies, 0, Some(1), None, r),
            contact(&bodies, 2, None, Some(0), -r),
            contact(&bodies, 0, Some(1), None, -r),
        ];
        group_by_pair(&split, &mut order, &mut ends, &mut runs);
        assert_eq!(
            (order.as_slice(), ends.as_slice()),
            (&[1, 3, 0, 2][..], &[2, 4][..])
        );
        group_by_pair(&[], &mut order, &mut ends, &mut runs);
        assert!(order.is_empty() && ends.is_empty());
    }

    /// m contacts at one point: B⁻¹D = (1 1ᵀ) ⊗ 1₃ has eigenvalues m (three times) and 0, so
    /// ω_J = 2/(m + m) = 1/m, the Cauchy-Schwarz bound D ≤ m B attained. One contact: 1.
    /// Against a container and against a second body (B comes from the collision matrix K,
    /// D's spectrum from the pair's compliance G: they agree only if G is right).
    #[test]
    fn jacobi_weight_of_coincident_contacts_is_one_over_m() {
        let bodies = cubes(2);
        let r = Vec3::new(0.5, 0.3, -0.5);
        for (m, other) in (1..=4).flat_map(|m| [(m, None), (m, Some(1))]) {
            let container = other.is_none().then_some(0);
            let prepared: Vec<_> = (0..m)
                .map(|_| contact(&bodies, 0, other, container, r))
                .collect();
            let rows: Vec<_> = prepared.iter().map(block).collect();
            let members: Vec<usize> = (0..m).collect();
            let w = jacobi_weight(&prepared, &rows, &members);
            assert!((w - 1.0 / m as f64).abs() < 1e-12, "m = {m}: ω_J = {w}");
            let (min, max) = pair_spectrum(&prepared, &rows, &members).unwrap();
            let mf = m as f64;
            assert!(
                (min - mf).abs() < 1e-12 * mf && (max - mf).abs() < 1e-12 * mf,
                "m = {m}, {other:?}: spectrum [{min}, {max}]"
            );
        }
    }

    #[test]
    fn friction_law_names_round_trip() {
        for law in [FrictionLaw::MaximumDissipation, FrictionLaw::Coulomb] {
            assert_eq!(law.name().parse::<FrictionLaw>(), Ok(law));
        }
        assert!("stiction".parse::<FrictionLaw>().is_err());
    }
}
