//! Cone complementarity contact with a projected fixed-point iteration and Newmark
//! integration: the DDA contact law of paper 002 (Fan, Huang, Wang, Jin), section 4.
//!
//! Steps, per solver call (paper 002, §4.3, "fixed point iteration algorithm"):
//! 1. **Parameters**: relaxations τ (`ccp_tau`, paper: 1) and ω (`ccp_omega`, paper: 0.2),
//!    iteration cap N_max (`max_iterations`, paper: 3000) and the tolerance of the largest
//!    contact-force increment (`tolerance`, here relative to the largest contact impulse).
//! 2. **Data structures**: one [`CcpBody`] per body (Fig. 12: inverse mass matrix, the
//!    start-of-step and current velocities, from which the displacement increment
//!    Δd = h (vₙ + v)/2 follows) and one [`CcpContact`] per contact pair (Fig. 13: the two
//!    body indices, the local frame [n, s, t], the lever arms that make up h_ja, h_jb of
//!    eq. 54, the step A_j of eq. 52 and the contact impulse p_j).
//! 3. **Initial forces**: p_j⁰ = 0 in the paper; here the impulse of the matching contact
//!    of the previous step when there is one (warm start): the impulse the contact
//!    carries (`SolverContext::impulses`, found by the world by body pair and by the
//!    features that touch, the contact's `FeatureId`), its normal part along this
//!    step's normal and its shear part projected on this step's [s, t], then projected
//!    onto the disc (eqs. 56-57).
//! 4. **Sweep** r = 1 … N_max over the contacts j, Gauss-Seidel (the bodies' velocities,
//!    hence Δd_a, Δd_b, are updated in real time as in the paper's pointer scheme):
//!    - gap increment g_j = h_jaᵀ Δd_a + h_jbᵀ Δd_b (eq. 44), the relative displacement of
//!      the contact point over the step in [n, s, t], less the required normal opening;
//!    - p̃_j = p_j − ω A_j g_j (eq. 52, A_j below);
//!    - projection: p_n ← max(p_n, 0) (eq. 56), then the shear part radially returned
//!      onto the disc of radius μ p_n + c (eq. 57), or μ* p_n when μ* is given (eq. 40).
//!      This is not the Euclidean projection onto the cone C_j: its fixed point keeps
//!      p_n g_n = 0 and the shear force opposite the slip (eqs. 30-32), so a sliding
//!      contact does not lift off by μ|g_T| as the linearised cone of eq. 45 would;
//!    - p_j ← τ Proj{p̃_j} + (1 − τ) p_j; Δp_j is applied to both bodies (Λ_ja, Λ_jb of
//!      eq. 55) and the largest |Δp_j| of the sweep is kept.
//! 5. **Stop** when the largest increment of a sweep is below the tolerance (the paper's
//!    test) and the estimated energy error of the iterate is below `ENERGY_SHARE` × the
//!    tolerance of the energy at stake (see "Stop" below), or at N_max (reported as
//!    `hit_iteration_cap`); the final relative increment is the report's `residual`.
//! 6. **Newmark** (eq. 51, γ = 1, β = ½): the world moves the bodies by
//!    ΔD = h (Vₖ + Vₖ₊₁)/2 ([`PositionUpdate::Newmark`]), Vₖ₊₁ being the velocity this
//!    solver returns.
//!
//! **Impulses, not forces.** The world integrates external forces first (v⁻ = vₙ + h F/m),
//! so eq. 16 becomes v⁺ = v⁻ + M⁻¹ H p with p = h P the contact impulse; eq. 48's
//! N = (h²/2) HᵀM⁻¹H acting on forces is (h/2) HᵀM⁻¹H on impulses, N_jj = (h/2) K_j
//! with the collision matrix K_j (paper 000, eq. 9). The cohesion c is a force, so its
//! impulse limit is c h.
//!
//! **Step matrix.** The paper takes A_j = η_j I with η_j = 3 / Tr(N_jj) (eqs. 53, 55) and
//! ω = 0.2. Here A_j = diag(1/N_nn, a_T, a_T) in [n, s, t], a_T = 2/(N_ss + N_tt), with
//! ω = 1 by default: the normal step is then the exact Gauss-Seidel step of the contact
//! alone (p̃_n makes g_n = 0), the shear step the same on the mean shear stiffness. The
//! fixed points are the paper's, because the projection treats the normal part and the
//! shear part separately and the shear part isotropically: p_n = max(p_n − a g_n, 0) is
//! fixed iff p_n g_n = 0, g_n ≥ 0, p_n ≥ 0 for every a > 0, and the radial return of
//! p_T − a_T g_T is fixed iff g_T = 0 inside the disc or g_T = −k p_T (k ≥ 0) on its
//! rim, whatever a_T > 0. Only the path to them is shorter: a Newton's cradle of five
//! balls (e = 1) that the paper's step leaves at 24 % energy loss after 100 sweeps
//! converges within them. `ccp_omega = 0.2` with this step is the paper's relaxation.
//!
//! **Stop.** The paper's test bounds the last increment, not the error, and the energy
//! error of a stopped iterate is first order in its impulse error: with p* the solution,
//! δp = p* − p and u⁺ the contact velocities of the iterate, the kinetic energy after the
//! solve differs by T(p*) − T(p) = δp·u⁺ + ½ δpᵀ K δp (K the Delassus matrix on
//! impulses), and u⁺ ≠ 0 at an impact (Newmark returns the approach speed), so a chain
//! of elastic balls stopped at a 1e-8 increment loses several times 1e-8 of its energy,
//! booked as dissipation. So the stop also bounds δp·u⁺. The iteration converges
//! linearly: when the largest increments contract at a rate ρ,
//! the increments still to come sum to Δp_r ρ/(1 − ρ), and their first-order work to
//! S_r ρ/(1 − ρ), S_r = Σ_j |Δp_j| |u_j⁺| the work bound of sweep r (Cauchy-Schwarz,
//! u_j⁺ the contact's velocity after its update). Gauss-Seidel on coupled contacts can
//! alternate large and small increments from sweep to sweep, so ρ is measured over two
//! sweeps, ρ₂ = Δp_r/Δp_{r−2}, and the tail is (S_r + S_{r−1}) ρ₂/(1 − ρ₂) (which is
//! S_r ρ/(1 − ρ) when the increments fall steadily by ρ). The second-order term
//! ½ δpᵀ K δp is the energy times the square of the relative impulse error, and is left
//! out. The test asks this estimate to be at
//! most `ENERGY_SHARE` (1/100) × tolerance × E_s, where E_s is the energy at stake: the
//! kinetic energy after the solve plus that of the velocity jump (so a pile at rest,
//! whose kinetic energy is nearly zero, is measured against the energy its contacts
//! exchange in the step, and near-rest contacts, u⁺ ≈ 0, contribute nothing). The share:
//! with the increment test alone the energy error is about 2ρ/(1 − ρ) × tolerance per
//! impact (ρ ≈ 0.65 on a chain), and a run accumulates it at every impact; a hundredth
//! of the tolerance keeps each impact's energy error to 1e-10 of the energy at stake at
//! the default 1e-8, and follows the tolerance when the user loosens it. The test is
//! only evaluated once the increment test holds, so piles that run to the cap pay
//! nothing for it but two norms and a multiply-add per contact and sweep. Increments at the rounding
//! of the impulses (8 ε × the largest) end the iteration: it is then a fixed point to
//! machine precision, and their ratios are noise, not a rate.
//!
//! **Gap of a contact** (eq. 44 measures the displacement of the contact point from its
//! position at the start of the step). A contact that the unconstrained step would close
//! (gap + h (u_n,0 + u_n⁻)/2 < 0) is *active*: g_n ≥ 0, the contact point must not move
//! further in, whatever its current gap; a touching body then leaves with the normal
//! velocity it came with (Newmark's γ = 1, β = ½ is energy-conserving, the paper's
//! "rebound height always 1 m"). A contact the step would not close is *speculative*:
//! g_n ≥ −gap, it may close its gap but not overlap. A speculative contact that the
//! iterate closes (its displacement without its own normal impulse,
//! g_n − N_nn p_n, passes −gap: other contacts' impulses drive it in) is active from
//! then on for the step: held at −gap it would stop its bodies inelastically, doing the
//! work p_n (−gap)/h, where the active law reverses the approach and does none. A
//! contact that turned active stays so (the set only grows), so the sweeps still end. Overlaps left by the linearisation
//! (curved surfaces, rotation) are not corrected through the contact law, which would
//! inject kinetic energy; instead overlaps are reduced by k_p after the solve (position
//! projection as in paper 001, eq. B.18; not part of paper 002): without the contact
//! pass (the paper's scenes) each overlapping pair is moved apart by k_p of its deepest
//! overlap here; with it the world's projection after the pass does it for all of a
//! body's contacts at once and with rotation (a per-pair linear push cannot undo a
//! tilt). Its energy change is booked
//! as the ledger's `projection`.
//!
//! **Manifolds.** At the relaxation-free step (ω = τ = 1, the default) a sweep first
//! solves the normal impulses of each manifold (the contacts of one pair, or of a body
//! and one container) together, with every other impulse fixed: the linear
//! complementarity problem g = c + N p ≥ 0, p ≥ 0, pᵀg = 0 over its contacts that
//! push or are active (at most [`BLOCK_POINTS`]), N_ij = (h/2) n_iᵀ K_ij n_j with K_ij
//! the cross collision matrix of points i and j, solved exactly by enumerating which
//! contacts push; then each contact's own update runs as above (it finds its normal
//! part solved and updates its shear part). A fixed point is the paper's: every
//! contact's normal complementarity holds with the others fixed. Why: two points of
//! one face or edge a distance d apart on a body of size L are coupled with
//! N₁₂² / (N₁₁ N₂₂) ≈ 1 − O((d/L)²), and Gauss-Seidel over them contracts by that
//! factor per sweep; on the elastic box of `verify` 69 of 6,000 steps hit the 100-sweep
//! cap and gained up to 0.6 % of the energy. With friction a manifold whose N is
//! singular (the four coplanar corners of a face) has many normal distributions, each
//! giving its cones other radii: those manifolds stay contact by contact.
//!
//! **Energy.** Each contact's impulse is booked once, at the end, with its work over the
//! step p_j·(u_j,0 + u_j⁺)/2 = p_j·g_j/h: the normal part as restitution dissipation, the
//! shear part as friction dissipation. This is the kinetic-energy change of the solve,
//! J·(u⁻ + u⁺)/2 (paper 000, eq. 16), plus J·(u₀ − u⁻)/2, the work the impulse does
//! through the Newmark drift (`SolverReport::drift_work`, which the world takes out of
//! `integration`), so a resting contact (g_j = 0) books nothing and free flight has no
//! integration error (the trapezoidal drift is exact under constant forces). At a
//! converged solution the normal impulses do no work (p_n g_n = 0, or p_n (−gap) < 0 at
//! a speculative contact) and the radial return makes friction oppose the step's slip
//! (eq. 32), so both parts are dissipations and the solver never creates energy;
//! `restitution` is not used: the Newmark contact is elastic by design.
//!
//! **Lever arms.** Newmark moves a centre by h (vₙ + v⁺)/2, so an impulse P changes the
//! orbital angular momentum about the origin by (xₙ + h vₙ/2) × P: it acts, in effect, on
//! the body at mid-step. Lever arms from the start-of-step centres would then change the
//! total angular momentum by (h/2)(vₙ,a − vₙ,b) × P per contact. So each contact's lever
//! arms run from the mid-step centres xₙ + h vₙ/2 to the contact point carried at the
//! pair's mean start velocity v̄ (the moving body's own for a static partner), a point
//! common to both bodies: r = r₀ + (h/2)(v̄ − vₙ). Angular momentum is then kept to
//! round-off; against a static surface r = r₀ (the contact point moves with the body).
//! A `resolve` called on its own (no [`CollisionSolver::begin_step`], no drift to follow)
//! uses r₀, and keeps the angular momentum about the origin at fixed positions.
//!
//! **Resting contacts** (the split of Guendelman et al. 2003 that every method makes,
//! `dynamics::contact_pass`). With the contact pass on and `rest_velocity` v_r > 0
//! ([`SolverParams::resting_speed`](super::SolverParams::resting_speed)), a contact takes
//! part in the sweeps only once it needs an impulse: its gap increment over h,
//! b = (u₀ + u)/2 − (g_min/h) n (eq. 44 at the current iterate), approaches faster than
//! v_r (b_n < −v_r), or it closes (b_n < 0) while slipping faster than v_r
//! (‖b_T‖ > v_r). The contacts are checked before the warm start and again at each
//! visit of a sweep, so contacts that an impact drives in join as its impulses pass
//! through a pile (a Newton's cradle keeps its energy); a contact that joined stays in
//! for the step, and one that did not has p_j = 0. Only contacts in from the start are
//! warm-started. What is left are the support contacts of a pile after the gravity kick
//! (b_n ≈ −g h/2), which the warm-started contact pass resolves bottom up, perfectly
//! inelastic (u_n⁺ = 0), with the scene's rolling and spinning resistance.
//! - Why: Newmark's active contact returns the approach speed (u⁺_n = −u₀,n), so a body
//!   resting with a small normal velocity ε keeps it as +ε, −ε, … for ever (the
//!   trapezoidal rule's amplification factor −1 on a stiff mode), no island falls
//!   asleep, and every step of a settled pile runs the sweeps to their cap
//!   (`docs/results/ccp-speed.md`). Below v_r the pass's u⁺_n = 0 removes that mode,
//!   as e = 0 below the rest velocity does for the other methods; impacts faster than
//!   v_r keep the Newmark law (the paper's figures are 0.3-4.5 m/s impacts).
//! - The pass's impulses act through the same Newmark drift, and the pass books their
//!   work over the step as this solver books its own (`ContactPass::set_newmark_drift`).
//! - The contacts in the sweeps are this solver's: an active one leaves with its
//!   approach reversed at the contact point, u_n⁺ = −u₀,ₙ, which the pass, whose law is
//!   u_n⁺ ≥ 0, would take for an approach and stop. So the pass is given each engaged
//!   contact's own bound ([`CollisionSolver::pass_floors`]): h (u₀ + u⁺)ₙ/2 ≥ g_min,
//!   i.e. u_n⁺ may fall by the slack of that inequality and no more.
//!
//! With v_r = 0 or the contact pass off (the paper-002 scenes, `contact_pass: false`)
//! every contact takes part from the start, and the results are the paper's method alone.
//!
//! **Start-of-step velocities.** The gap needs vₙ, ωₙ. The world passes them through
//! [`CollisionSolver::begin_step`]; when `resolve` is called on its own (tests), the
//! bodies' velocities are taken as both vₙ and v⁻ (an impact with no force in the step).

use super::{
    CollisionSolver, Param, PositionUpdate, SolverContext, SolverError, SolverKind, SolverParams,
    SolverReport, TraceRow,
};
use crate::body::RigidBody;
use crate::dynamics::contact_pass::project_pairs;
use crate::dynamics::solver::prepared::collision_matrix;
use crate::dynamics::warm_start::{ContactImpulses, PointImpulse};
use crate::math::{Mat3, Vec3, skew};

/// Per-body data of the iteration (paper 002, Fig. 12), copied from the bodies once per
/// step so the inner loop reads compact arrays.
#[derive(Clone, Debug)]
pub struct CcpBody {
    pub mass: f64,
    pub inv_mass: f64,
    /// World inverse inertia at the start of the step (m_a⁻¹'s rotational block).
    pub inv_inertia: Mat3,
    /// World inertia (for the kinetic energy of trace rows).
    pub inertia: Mat3,
    /// Start-of-step velocities vₙ, ωₙ.
    pub v0: Vec3,
    pub w0: Vec3,
    /// Current iterate v, ω; Δd = h (vₙ + v)/2 (eq. 51).
    pub v: Vec3,
    pub w: Vec3,
    /// When v, ω last changed, in the solver's count of applied increments (1 for the
    /// start of the solve).
    pub stamp: u64,
}

/// Per-contact data of the iteration (paper 002, Fig. 13).
#[derive(Clone, Debug)]
pub struct CcpContact {
    /// Index of the contact in the step's contact list.
    pub index: usize,
    pub a: usize,
    pub b: Option<usize>,
    pub container: Option<usize>,
    /// Contact frame [n, s, t] (eq. 22); n points from b to a.
    pub n: Vec3,
    pub s: Vec3,
    pub t: Vec3,
    /// Lever arms from the centres of mass to the contact point (the T_a, T_b of eq. 21),
    /// at mid-step (see "Lever arms" in the module doc).
    pub r_a: Vec3,
    pub r_b: Vec3,
    /// The contact's own lever arms (start of step, as the narrow phase gave them),
    /// with which the contact pass measures its velocity.
    pub r_a0: Vec3,
    pub r_b0: Vec3,
    /// Collision matrix K (u⁺ = u⁻ + K P, paper 000 eq. 9).
    pub k: Mat3,
    /// The diagonal of the step matrix A_j of eq. 52 in [n, s, t]: (1/N_nn, a_T, a_T) with
    /// a_T = 2/(N_ss + N_tt) (see "Step matrix" in the module doc).
    pub step: Vec3,
    /// Smallest allowed normal displacement over the step (m): 0 for an active or
    /// overlapping contact, −gap for a speculative one.
    pub g_min: f64,
    /// Relative contact velocity at the start of the step, in [n, s, t].
    pub u0: Vec3,
    /// Relative contact velocity before the solve (after the external forces), world.
    pub u_minus: Vec3,
    /// Contact impulse p_j = (p_n, p_s, p_t) (N s).
    pub p: Vec3,
    pub gap: f64,
    /// Whether the contact takes part in the sweeps this step (see "Resting contacts" in
    /// the module doc); a contact that is not has p_j = 0.
    pub engaged: bool,
    /// For a contact not engaged: when it was last found to need no impulse, in the
    /// count of [`CcpBody::stamp`] (0: not yet). While neither body has changed since,
    /// its velocity, and so the answer, is the same, and the sweeps do not ask again.
    pub checked: u64,
}

impl CcpContact {
    fn to_world(&self, p: &Vec3) -> Vec3 {
        p.x * self.n + p.y * self.s + p.z * self.t
    }

    fn to_local(&self, v: &Vec3) -> Vec3 {
        Vec3::new(v.dot(&self.n), v.dot(&self.s), v.dot(&self.t))
    }

    /// Relative velocity (world) of a with respect to b at the contact point.
    fn relative_velocity(&self, bodies: &[CcpBody]) -> Vec3 {
        let ba = &bodies[self.a];
        let va = ba.v + ba.w.cross(&self.r_a);
        match self.b {
            Some(b) => va - (bodies[b].v + bodies[b].w.cross(&self.r_b)),
            None => va,
        }
    }

    /// The gap increment g_j of eq. 44 over h at the current iterate, in [n, s, t]: the
    /// mean relative velocity (u₀ + u)/2 less the required normal opening g_min/h.
    fn mean_approach(&self, u: &Vec3, h: f64) -> Vec3 {
        let mut b = 0.5 * (self.u0 + self.to_local(u));
        b.x -= self.g_min / h;
        b
    }

    /// Whether the contact needs an impulse of the sweeps at resting speed v_r
    /// (`resting`, m/s): its mean normal velocity over the step (with the gap term)
    /// approaches faster than v_r, or it closes while its mean slip is faster than v_r.
    /// A non-finite velocity needs one too, so that the sweeps report it.
    fn needs_impulse(&self, u: &Vec3, h: f64, resting: f64) -> bool {
        let b = self.mean_approach(u, h);
        !b.iter().all(|x| x.is_finite())
            || b.x < -resting
            || (b.x < 0.0 && b.y * b.y + b.z * b.z > resting * resting)
    }

    /// Apply the world impulse `dp` to a and −`dp` to b (Δd += Λ Δp, eq. 55), counted
    /// in `applied` (the solve's count of increments, [`CcpBody::stamp`]).
    fn apply(&self, bodies: &mut [CcpBody], dp: &Vec3, applied: &mut u64) {
        *applied += 1;
        let stamp = *applied;
        let ba = &mut bodies[self.a];
        ba.v += dp * ba.inv_mass;
        ba.w += ba.inv_inertia * self.r_a.cross(dp);
        ba.stamp = stamp;
        if let Some(b) = self.b {
            let bb = &mut bodies[b];
            bb.v -= dp * bb.inv_mass;
            bb.w -= bb.inv_inertia * self.r_b.cross(dp);
            bb.stamp = stamp;
        }
    }

    /// A contact not engaged whose bodies have not changed since it was last found to
    /// need no impulse (it still needs none).
    fn still_quiet(&self, bodies: &[CcpBody]) -> bool {
        !self.engaged
            && self.checked >= bodies[self.a].stamp
            && self.b.is_none_or(|b| self.checked >= bodies[b].stamp)
    }
}

/// CCP solver state: scratch arrays (the previous step's impulses are the contacts'
/// own, `SolverContext::impulses`).
#[derive(Clone, Default)]
pub struct CcpSolver {
    bodies: Vec<CcpBody>,
    contacts: Vec<CcpContact>,
    /// Start-of-step (v, ω) from [`CollisionSolver::begin_step`], consumed by `resolve`.
    start: Vec<(Vec3, Vec3)>,
    have_start: bool,
    /// Contacts of the last step that were warm-started (diagnostics).
    pub warm_started: usize,
    /// Per contact of the last step, the contact pass's floor
    /// ([`CollisionSolver::pass_floors`]).
    floors: Vec<Option<f64>>,
    /// The step's manifolds: ranges of `contacts` with the same pair (or body and
    /// container), which the narrow phase lists together.
    manifolds: Vec<std::ops::Range<usize>>,
    /// Increments applied in this solve, from 1 ([`CcpBody::stamp`]).
    applied: u64,
}

/// Smallest pivot of a manifold's matrix N, relative to its largest diagonal entry,
/// for the manifold to be solved as a block: two contact points of one face d apart on
/// a body of size L give pivots of order (d/L)², 1e-6 at d = L/1000.
const SINGULAR: f64 = 1e-10;

/// Most contacts of a manifold whose normal impulses a sweep solves together
/// ("Manifolds" in the module doc); larger manifolds are swept contact by contact.
pub const BLOCK_POINTS: usize = 4;

/// The normal impulses p ≥ 0 of a manifold's m ≤ [`BLOCK_POINTS`] contacts that solve
/// the linear complementarity problem g = c + N p ≥ 0, p ≥ 0, pᵀg = 0 (`n[i][j]`, N
/// symmetric positive semi-definite), by enumeration of the contacts that push (the
/// largest sets first, skipping sets whose N_SS is singular). g is unique; p is unique
/// when N is positive definite. With `unique`, `None` if N is singular (a pivot below
/// [`SINGULAR`] of its largest diagonal entry: e.g. the four coplanar corners of a
/// face, or three points along an edge). `None` too if no set gives a solution to within
/// `eps` (relative to the scale of c).
fn manifold_lcp(
    n: &[[f64; BLOCK_POINTS]; BLOCK_POINTS],
    c: &[f64],
    eps: f64,
    unique: bool,
) -> Option<[f64; BLOCK_POINTS]> {
    let m = c.len();
    let scale = c.iter().fold(0.0f64, |a, x| a.max(x.abs()));
    let diag = (0..m).fold(0.0f64, |a, i| a.max(n[i][i]));
    if !(scale > 0.0 && diag > 0.0) {
        return None;
    }
    // Cholesky of N: every pivot above SINGULAR × the largest diagonal entry.
    let mut l = [[0.0f64; BLOCK_POINTS]; BLOCK_POINTS];
    for i in (0..m).take_while(|_| unique) {
        for j in 0..=i {
            let s = n[i][j] - (0..j).map(|k| l[i][k] * l[j][k]).sum::<f64>();
            if i == j {
                // (NaN fails too)
                if s.partial_cmp(&(SINGULAR * diag)) != Some(std::cmp::Ordering::Greater) {
                    return None;
                }
                l[i][i] = s.sqrt();
            } else {
                l[i][j] = s / l[j][j];
            }
        }
    }
    let sets = (1..=m as u32)
        .rev()
        .flat_map(|k| (1..(1u32 << m)).filter(move |s| s.count_ones() == k));
    'set: for set in sets {
        let mut idx = [0usize; BLOCK_POINTS];
        let mut k = 0;
        for i in (0..m).filter(|i| set & (1 << i) != 0) {
            idx[k] = i;
            k += 1;
        }
        let idx = &idx[..k];
        // Solve N_SS x = −c_S by Gaussian elimination with partial pivoting.
        let mut a = [[0.0f64; BLOCK_POINTS + 1]; BLOCK_POINTS];
        for (r, &i) in idx.iter().enumerate() {
            for (q, &j) in idx.iter().enumerate() {
                a[r][q] = n[i][j];
            }
            a[r][k] = -c[i];
        }
        for col in 0..k {
            let piv = (col..k)
                .max_by(|&x, &y| a[x][col].abs().total_cmp(&a[y][col].abs()))
                .unwrap_or(col);
            if a[piv][col].abs() <= SINGULAR * diag {
                continue 'set;
            }
            a.swap(col, piv);
            let pivot_row = a[col];
            for row in a.iter_mut().take(k).skip(col + 1) {
                let f = row[col] / pivot_row[col];
                for (x, y) in row.iter_mut().zip(&pivot_row).take(k + 1).skip(col) {
                    *x -= f * y;
                }
            }
        }
        let mut x = [0.0f64; BLOCK_POINTS];
        for r in (0..k).rev() {
            let mut v = a[r][k];
            for q in r + 1..k {
                v -= a[r][q] * x[q];
            }
            x[r] = v / a[r][r];
        }
        let mut p = [0.0f64; BLOCK_POINTS];
        for (r, &i) in idx.iter().enumerate() {
            // (NaN fails too)
            if x[r].is_nan() || x[r] < 0.0 {
                continue 'set;
            }
            p[i] = x[r];
        }
        for i in (0..m).filter(|i| set & (1 << i) == 0) {
            let g = c[i] + (0..m).map(|j| n[i][j] * p[j]).sum::<f64>();
            if g < -eps * scale {
                continue 'set;
            }
        }
        return Some(p);
    }
    None
}

impl CcpSolver {
    /// The block update of a manifold's normal impulses ("Manifolds" in the module
    /// doc): the engaged contacts of `range` (2 to [`BLOCK_POINTS`] of them, each made
    /// active first if the step closes it, as a sweep does) get the normal impulses
    /// that solve their complementarity problem together, with every other impulse
    /// fixed. Returns, per contact of the range that changed, (index, Δp_n), and how
    /// many there are (0 if the manifold is not solved as a block).
    fn block_normal(
        &mut self,
        range: std::ops::Range<usize>,
        h: f64,
        resting: f64,
        frictionless: bool,
    ) -> ([(usize, f64); BLOCK_POINTS], usize) {
        let none = ([(0, 0.0); BLOCK_POINTS], 0);
        let mut idx = [0usize; BLOCK_POINTS];
        let mut m = 0;
        for j in range {
            if self.contacts[j].still_quiet(&self.bodies) {
                continue;
            }
            let u = self.contacts[j].relative_velocity(&self.bodies);
            let c = &mut self.contacts[j];
            if !c.engaged {
                if !c.needs_impulse(&u, h, resting) {
                    c.checked = self.applied;
                    continue;
                }
                c.engaged = true;
            }
            let raw = 0.5 * h * (c.u0.x + u.dot(&c.n));
            if c.g_min < 0.0 && raw - c.p.x / c.step.x < c.g_min {
                c.g_min = 0.0;
            }
            // An open speculative contact with no impulse stays out (the sweep that
            // follows makes it active if the block closes it).
            if c.g_min < 0.0 && c.p.x == 0.0 {
                continue;
            }
            if m == BLOCK_POINTS {
                return none;
            }
            idx[m] = j;
            m += 1;
        }
        if m < 2 {
            return none;
        }
        let idx = &idx[..m];
        // N_ij = (h/2) n_iᵀ K_ij n_j, K_ij the change of contact i's relative velocity
        // per unit impulse at contact j (paper 000, eq. 9, with two lever arms).
        let first = &self.contacts[idx[0]];
        let (a, b) = (first.a, first.b);
        let (ima, ia) = (self.bodies[a].inv_mass, self.bodies[a].inv_inertia);
        let (imb, ib) = b.map_or((0.0, Mat3::zeros()), |b| {
            (self.bodies[b].inv_mass, self.bodies[b].inv_inertia)
        });
        let mut n = [[0.0f64; BLOCK_POINTS]; BLOCK_POINTS];
        let mut c = [0.0f64; BLOCK_POINTS];
        for (r, &i) in idx.iter().enumerate() {
            let ci = &self.contacts[i];
            for (q, &j) in idx.iter().enumerate() {
                let cj = &self.contacts[j];
                let k_ij = Mat3::identity() * (ima + imb)
                    - skew(&ci.r_a) * ia * skew(&cj.r_a)
                    - skew(&ci.r_b) * ib * skew(&cj.r_b);
                n[r][q] = 0.5 * h * ci.n.dot(&(k_ij * cj.n));
            }
        }
        for (r, &i) in idx.iter().enumerate() {
            let ci = &self.contacts[i];
            let u = ci.relative_velocity(&self.bodies);
            let g = 0.5 * h * (ci.u0.x + u.dot(&ci.n)) - ci.g_min;
            c[r] = g - idx
                .iter()
                .enumerate()
                .map(|(q, &j)| n[r][q] * self.contacts[j].p.x)
                .sum::<f64>();
        }
        // With friction a singular manifold's normal impulses, which are not unique,
        // set the radii of its cones: left to the contact-by-contact sweep.
        let Some(p) = manifold_lcp(&n, &c[..m], 1e-12, !frictionless) else {
            return none;
        };
        let (mut changed, mut count) = none;
        for (r, &i) in idx.iter().enumerate() {
            let dn = p[r] - self.contacts[i].p.x;
            if dn != 0.0 {
                let ci = &self.contacts[i];
                ci.apply(&mut self.bodies, &(dn * ci.n), &mut self.applied);
                self.contacts[i].p.x = p[r];
                changed[count] = (i, dn);
                count += 1;
            }
        }
        (changed, count)
    }

    /// The contact data of the last `resolve` (in the step's contact order, without
    /// contacts between two immovable objects), e.g. to read the contact impulses p_j.
    pub fn contacts(&self) -> &[CcpContact] {
        &self.contacts
    }

    fn kinetic_energy(&self) -> f64 {
        self.bodies
            .iter()
            .filter(|b| b.inv_mass > 0.0)
            .map(|b| 0.5 * (b.mass * b.v.norm_squared() + b.w.dot(&(b.inertia * b.w))))
            .sum()
    }

    /// The energy at stake in the solve (J): the kinetic energy after it plus that of the
    /// velocity jump, ½ Σ m|v − v⁻|² + ½ Σ (ω − ω⁻)ᵀ I (ω − ω⁻), with v⁻, ω⁻ the
    /// velocities before the solve (`before`, not yet written back).
    fn energy_scale(&self, before: &[RigidBody]) -> f64 {
        let jump: f64 = self
            .bodies
            .iter()
            .zip(before)
            .filter(|(b, _)| b.inv_mass > 0.0)
            .map(|(b, o)| {
                let (dv, dw) = (b.v - o.velocity, b.w - o.angular_velocity);
                0.5 * (b.mass * dv.norm_squared() + dw.dot(&(b.inertia * dw)))
            })
            .sum();
        self.kinetic_energy() + jump
    }

    /// The impulse contact `c` ended the previous step with (`remembered`: the
    /// contacts' impulses), in `c`'s frame [n, s, t] (before projection).
    fn warm_impulse(c: &CcpContact, remembered: &[ContactImpulses]) -> Option<Vec3> {
        let e = remembered[c.index].method?;
        Some(Vec3::new(
            e.normal,
            e.tangent.dot(&c.s),
            e.tangent.dot(&c.t),
        ))
    }
}

/// Share of the tolerance that the energy test allows the remaining sweeps, relative to
/// the energy at stake (see "Stop" in the module doc).
pub const ENERGY_SHARE: f64 = 1e-2;

/// Increments below this × the largest impulse are rounding (a few ulp): the iterate is
/// a fixed point to machine precision, whatever rate its noise shows.
const ROUNDING: f64 = 8.0 * f64::EPSILON;

/// Estimated kinetic-energy error of the iterate of sweep `r`: the work bound of the
/// sweeps still to come, (S_r + S_{r−1}) ρ₂/(1 − ρ₂) with the two-sweep rate
/// ρ₂ = Δp_r/Δp_{r−2} (one-sweep (S_r ρ/(1 − ρ)), ρ = Δp_r/Δp_{r−1}, at r = 2);
/// infinite when no rate is known yet (r = 1) or the increments do not contract.
/// `last` is (Δp_r, S_r), `history` the same for sweeps r − 1 and r − 2.
fn remaining_energy(r: u32, last: (f64, f64), history: [(f64, f64); 2]) -> f64 {
    let (dp, s) = last;
    let [(dp1, s1), (dp2, _)] = history;
    let tail = |rho: f64, sum: f64| {
        if rho < 1.0 {
            sum * rho / (1.0 - rho)
        } else {
            f64::INFINITY
        }
    };
    match r {
        0 | 1 => f64::INFINITY,
        2 => tail(dp / dp1, s),
        _ => tail(dp / dp2, s + s1),
    }
}

/// The projection of eqs. 56-57: p_n clamped at 0, then the shear part radially returned
/// onto the disc of radius `limit(p_n)`.
fn project(p: &Vec3, mu: f64, cohesion_impulse: f64, mu_star: f64) -> Vec3 {
    let pn = p.x.max(0.0); // eq. 56
    let limit = if mu_star > 0.0 {
        mu_star * pn // the cone C_j with the equivalent friction factor (eqs. 40, 43)
    } else {
        mu * pn + cohesion_impulse // eq. 57
    };
    let shear = (p.y * p.y + p.z * p.z).sqrt();
    if shear <= limit {
        Vec3::new(pn, p.y, p.z)
    } else {
        // radial return onto the friction cone (eq. 57)
        let k = limit / shear;
        Vec3::new(pn, p.y * k, p.z * k)
    }
}

impl CollisionSolver for CcpSolver {
    fn kind(&self) -> SolverKind {
        SolverKind::Ccp
    }

    fn own_parameters(&self) -> &'static [Param] {
        &[
            Param::Friction,
            Param::Kp,
            Param::MaxIterations,
            Param::Tolerance,
            Param::Cohesion,
            Param::EquivalentFriction,
            Param::CcpOmega,
            Param::CcpTau,
        ]
    }

    /// Without the contact pass CCP moves overlapping pairs apart inside
    /// [`CollisionSolver::resolve`] (k_p, see the module doc); with it the world's
    /// position projection runs after the pass.
    fn corrects_positions(&self, params: &SolverParams) -> bool {
        !params.contact_pass
    }

    fn begin_step(&mut self, bodies: &[RigidBody]) {
        self.start.clear();
        self.start
            .extend(bodies.iter().map(|b| (b.velocity, b.angular_velocity)));
        self.have_start = true;
    }

    fn position_update(&self) -> PositionUpdate {
        PositionUpdate::Newmark
    }

    fn keeps_impulses(&self) -> bool {
        true
    }

    /// The engaged contacts' Newmark bound ("Resting contacts" in the module doc): the
    /// pass takes the others alone.
    fn pass_floors(&self) -> &[Option<f64>] {
        &self.floors
    }

    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError> {
        let SolverContext {
            bodies,
            contacts,
            impulses,
            params,
            dt: h,
            mut trace,
            ..
        } = ctx;
        let mut report = SolverReport::default();
        let use_start = std::mem::take(&mut self.have_start) && self.start.len() == bodies.len();
        // Contacts slower than this are left to the contact pass ("Resting contacts").
        let resting = params.resting_speed();

        // 2. Body data (Fig. 12).
        self.bodies.clear();
        self.bodies.extend(bodies.iter().enumerate().map(|(i, b)| {
            let (v0, w0) = if use_start {
                self.start[i]
            } else {
                (b.velocity, b.angular_velocity)
            };
            CcpBody {
                mass: b.mass,
                inv_mass: b.inv_mass,
                inv_inertia: b.inv_inertia_world(),
                inertia: if b.is_static() {
                    Mat3::zeros()
                } else {
                    b.inertia_world()
                },
                v0,
                w0,
                v: b.velocity,
                w: b.angular_velocity,
                stamp: 1,
            }
        }));
        self.applied = 1;

        // 2. Contact data (Fig. 13).
        self.contacts.clear();
        for (index, c) in contacts.iter().enumerate() {
            let (ba, bb) = (&self.bodies[c.a], c.b.map(|b| &self.bodies[b]));
            let (inv_mass_b, inv_inertia_b) =
                bb.map_or((0.0, Mat3::zeros()), |b| (b.inv_mass, b.inv_inertia));
            // Lever arms at mid-step (see "Lever arms" in the module doc).
            let dynamic_b = bb.filter(|b| b.inv_mass > 0.0);
            let v_mid = match (ba.inv_mass > 0.0, dynamic_b) {
                (true, Some(b)) => 0.5 * (ba.v0 + b.v0),
                (true, None) => ba.v0,
                (false, Some(b)) => b.v0,
                (false, None) => Vec3::zeros(),
            };
            let shift = |v0: &Vec3| {
                if use_start {
                    0.5 * h * (v_mid - v0)
                } else {
                    Vec3::zeros()
                }
            };
            let r_a = c.r_a + shift(&ba.v0);
            let r_b = c.r_b + bb.map_or(Vec3::zeros(), |b| shift(&b.v0));
            let k = collision_matrix(
                ba.inv_mass + inv_mass_b,
                &r_a,
                &ba.inv_inertia,
                &r_b,
                &inv_inertia_b,
            );
            // A_j = diag(1/N_nn, a_T, a_T), N_jj = (h/2) K_j on impulses   (eqs. 48, 52)
            let n_nn = 0.5 * h * c.normal.dot(&(k * c.normal));
            let n_shear = 0.5 * h * (c.t1.dot(&(k * c.t1)) + c.t2.dot(&(k * c.t2)));
            if !(n_nn.is_finite() && n_nn > 0.0 && n_shear.is_finite() && n_shear > 0.0) {
                continue; // two immovable objects: nothing to solve
            }
            let rel =
                |v: &Vec3, w: &Vec3, vb: Vec3, wb: Vec3| v + w.cross(&r_a) - (vb + wb.cross(&r_b));
            let (vb0, wb0, vbm, wbm) = bb.map_or(
                (Vec3::zeros(), Vec3::zeros(), Vec3::zeros(), Vec3::zeros()),
                |b| (b.v0, b.w0, b.v, b.w),
            );
            let u0 = rel(&ba.v0, &ba.w0, vb0, wb0);
            let u_minus = rel(&ba.v, &ba.w, vbm, wbm);
            // Active if the unconstrained step would close the gap: gap + h (u₀ + u⁻)ₙ/2 < 0.
            let closing = c.gap + 0.5 * h * (u0 + u_minus).dot(&c.normal);
            let g_min = if c.gap <= 0.0 || closing < 0.0 {
                0.0
            } else {
                -c.gap
            };
            let mut cc = CcpContact {
                index,
                a: c.a,
                b: c.b,
                container: c.container,
                n: c.normal,
                s: c.t1,
                t: c.t2,
                r_a,
                r_b,
                r_a0: c.r_a,
                r_b0: c.r_b,
                k,
                step: Vec3::new(1.0 / n_nn, 2.0 / n_shear, 2.0 / n_shear),
                g_min,
                u0: Vec3::zeros(),
                u_minus,
                p: Vec3::zeros(),
                gap: c.gap,
                engaged: true,
                checked: 0,
            };
            cc.u0 = cc.to_local(&u0);
            if resting > 0.0 {
                cc.engaged = cc.needs_impulse(&u_minus, h, resting);
            }
            self.contacts.push(cc);
        }

        let mu = params.friction;
        let mu_star = params.equivalent_friction;
        let cohesion_impulse = params.cohesion * h;
        let (omega, tau) = (params.ccp_omega, params.ccp_tau);

        // 3. Initial forces: the previous step's impulse where the contact persists.
        self.warm_started = 0;
        for j in 0..self.contacts.len() {
            let c = &self.contacts[j];
            if !c.engaged {
                continue;
            }
            let Some(p_local) = Self::warm_impulse(c, impulses) else {
                continue;
            };
            let p = project(&p_local, mu, cohesion_impulse, mu_star);
            if p == Vec3::zeros() {
                continue;
            }
            let c = &self.contacts[j];
            let dp = c.to_world(&p);
            c.apply(&mut self.bodies, &dp, &mut self.applied);
            report.impulses += 1;
            self.contacts[j].p = p;
            self.warm_started += 1;
        }

        // 4-5. Projected Gauss-Seidel sweeps (eq. 52), stopped by the impulse test and
        // the energy test (see "Stop" in the module doc).
        let mut residual = 0.0;
        let mut converged = self.contacts.is_empty();
        let mut sweep = 0;
        // The largest increment and the work bound S of the last two sweeps.
        let mut history = [(0.0f64, 0.0f64); 2];
        // The manifolds (contacts of one pair are listed together), solved as blocks at
        // the paper's relaxation-free step ("Manifolds" in the module doc).
        self.manifolds.clear();
        let mut start = 0;
        for j in 1..=self.contacts.len() {
            let key = |c: &CcpContact| (c.a, c.b, c.container);
            if j == self.contacts.len() || key(&self.contacts[j]) != key(&self.contacts[start]) {
                self.manifolds.push(start..j);
                start = j;
            }
        }
        let blocks = omega == 1.0 && tau == 1.0;
        let frictionless = mu == 0.0 && cohesion_impulse == 0.0 && mu_star == 0.0;
        while !converged && sweep < params.max_iterations {
            sweep += 1;
            let mut dp_max = 0.0f64;
            let mut p_max = 0.0f64;
            // S_r = Σ_j |Δp_j| |u_j⁺|: bounds, to first order, the kinetic-energy change
            // of this sweep's increments.
            let mut work = 0.0f64;
            let mut next_manifold = 0;
            for j in 0..self.contacts.len() {
                if blocks
                    && let Some(range) = self.manifolds.get(next_manifold).cloned()
                    && range.start == j
                {
                    next_manifold += 1;
                    if range.len() >= 2 {
                        let (changed, count) = self.block_normal(range, h, resting, frictionless);
                        for &(i, dn) in &changed[..count] {
                            let c = &self.contacts[i];
                            let u_after = c.relative_velocity(&self.bodies);
                            dp_max = dp_max.max(dn.abs());
                            p_max = p_max.max(c.p.amax());
                            work += dn.abs() * u_after.norm();
                            report.impulses = report.impulses.saturating_add(1);
                            if let Some(rows) = trace.as_deref_mut() {
                                let dp = dn * c.n;
                                let kinetic_energy = self.kinetic_energy();
                                rows.push(TraceRow {
                                    iteration: sweep - 1,
                                    stage: "ccp",
                                    contact: c.index,
                                    normal_velocity: u_after.dot(&c.n),
                                    impulse: [dp.x, dp.y, dp.z],
                                    elastic_energy: 0.0,
                                    elastic_total: 0.0,
                                    kinetic_energy,
                                    total_energy: kinetic_energy,
                                });
                            }
                        }
                    }
                }
                let c = &self.contacts[j];
                if c.still_quiet(&self.bodies) {
                    continue;
                }
                let u = c.relative_velocity(&self.bodies);
                if !c.engaged {
                    if !c.needs_impulse(&u, h, resting) {
                        self.contacts[j].checked = self.applied;
                        continue;
                    }
                    self.contacts[j].engaged = true;
                }
                // g_j = h_jaᵀ Δd_a + h_jbᵀ Δd_b with Δd = h (vₙ + v)/2   (eqs. 44, 51)
                let mut g = 0.5 * h * (self.contacts[j].u0 + self.contacts[j].to_local(&u));
                // A speculative contact that the step would close without its own
                // normal impulse is active from now on ("Gap of a contact").
                {
                    let c = &mut self.contacts[j];
                    if c.g_min < 0.0 && g.x - c.p.x / c.step.x < c.g_min {
                        c.g_min = 0.0;
                    }
                }
                let c = &self.contacts[j];
                g.x -= c.g_min;
                let trial = c.p - omega * c.step.component_mul(&g); // eq. 52
                let projected = project(&trial, mu, cohesion_impulse, mu_star); // eqs. 56-57
                let p_new = tau * projected + (1.0 - tau) * c.p;
                let dp_local = p_new - c.p;
                let dp_abs = dp_local.amax();
                p_max = p_max.max(p_new.amax());
                if dp_abs == 0.0 {
                    continue;
                }
                if !dp_abs.is_finite() || dp_abs > 1e100 {
                    return Err(SolverError::Diverged {
                        solver: SolverKind::Ccp,
                        why: format!(
                            "contact impulse of bodies {}–{:?} not finite at sweep {sweep}",
                            c.a, c.b
                        ),
                    });
                }
                dp_max = dp_max.max(dp_abs);
                let dp = c.to_world(&dp_local);
                c.apply(&mut self.bodies, &dp, &mut self.applied);
                let u_after = u + c.k * dp;
                work += dp.norm() * u_after.norm();
                report.impulses = report.impulses.saturating_add(1);
                let (n, index) = (c.n, c.index);
                self.contacts[j].p = p_new;
                if let Some(rows) = trace.as_deref_mut() {
                    let kinetic_energy = self.kinetic_energy();
                    rows.push(TraceRow {
                        iteration: sweep - 1,
                        stage: "ccp",
                        contact: index,
                        normal_velocity: u_after.dot(&n),
                        impulse: [dp.x, dp.y, dp.z],
                        elastic_energy: 0.0,
                        elastic_total: 0.0,
                        kinetic_energy,
                        total_energy: kinetic_energy,
                    });
                }
            }
            residual = if p_max > 0.0 { dp_max / p_max } else { 0.0 };
            converged = dp_max <= params.tolerance * p_max
                && (dp_max <= ROUNDING * p_max
                    || remaining_energy(sweep, (dp_max, work), history)
                        <= ENERGY_SHARE * params.tolerance * self.energy_scale(bodies));
            history = [(dp_max, work), history[0]];
        }
        // Work of each contact's impulse over the step, p_j·(u_j,0 + u_j⁺)/2 = p_j·g_j/h
        // (eqs. 44, 51): its normal part is p_n g_n/h, 0 at a converged active contact
        // (eq. 56's complementarity), its shear part −|p_T||g_T|/h by the radial return
        // (eqs. 32, 57). It equals the velocity jump's J·(u⁻ + u⁺)/2 (the kinetic-energy
        // change of the solve) plus J·(u₀ − u⁻)/2, the impulse's share of the drift.
        for c in &self.contacts {
            let p = c.to_world(&c.p);
            let u_plus = c.relative_velocity(&self.bodies);
            let u_mean = 0.5 * (c.to_world(&c.u0) + u_plus);
            let (w_total, w_normal) = (p.dot(&u_mean), c.p.x * u_mean.dot(&c.n));
            report.dissipated_restitution -= w_normal;
            report.dissipated_friction -= w_total - w_normal;
            report.drift_work += p.dot(&(0.5 * (c.to_world(&c.u0) - c.u_minus)));
        }
        report.iterations = sweep;
        report.residual = residual;
        report.hit_iteration_cap = !converged;

        // The pass's floors: an engaged contact's law is h (u₀ + u⁺)ₙ/2 ≥ g_min, so the
        // pass may lower its u_n⁺ by the slack (2/h)(h (u₀ + u⁺)ₙ/2 − g_min) and no more,
        // measured with the contact's own lever arms.
        self.floors.clear();
        self.floors.resize(contacts.len(), None);
        for c in self.contacts.iter().filter(|c| c.engaged) {
            let u_plus = c.relative_velocity(&self.bodies).dot(&c.n);
            let slack = (c.u0.x + u_plus) - 2.0 * c.g_min / h;
            let ba = &self.bodies[c.a];
            let mut u_own = ba.v + ba.w.cross(&c.r_a0);
            if let Some(b) = c.b {
                let bb = &self.bodies[b];
                u_own -= bb.v + bb.w.cross(&c.r_b0);
            }
            self.floors[c.index] = Some(u_own.dot(&c.n) - slack);
        }

        // Write back v⁺, ω⁺.
        for (b, cb) in bodies.iter_mut().zip(&self.bodies) {
            if !b.is_static() {
                b.velocity = cb.v;
                b.angular_velocity = cb.w;
            }
        }

        // Each contact keeps its impulse for the next step's warm start.
        for i in impulses.iter_mut() {
            i.method = None;
        }
        for c in self.contacts.iter().filter(|c| c.p != Vec3::zeros()) {
            impulses[c.index].method = Some(PointImpulse {
                normal: c.p.x,
                tangent: c.p.y * c.s + c.p.z * c.t,
            });
        }

        // Position projection of overlaps, once per pair at its deepest point (paper 001,
        // eq. B.18): not part of paper 002, see the module doc. With the contact pass
        // the world projects after it instead.
        if params.kp > 0.0 && self.corrects_positions(params) {
            report.projection_work += project_pairs(bodies, contacts, params.kp);
        }
        Ok(report)
    }
}
