//! Simultaneous impulse method (SMM): one linear system for all contacts of an island
//! (paper 000, Appendix B).
//!
//! Steps, per solver call:
//! 1. **Prepare** the contacts (frame, lever arms, masses, K of eq. 9) and group them into
//!    **islands** of touching dynamic bodies (union-find over the contacts; static bodies
//!    and containers do not join islands).
//! 2. Per island, the **system** holds every active contact that approaches before the
//!    impact (u_n⁻ < 0; speculative contacts only if gap + h u_n⁻ < 0), faster than the
//!    resting speed when the contact pass runs (see "Resting contacts"). The paper's
//!    unknowns are the velocities after the impact and the impulses (eq. 94); its rows
//!    are:
//!    - momentum of each body, m_j v_j⁺ = m_j v_j⁻ + Σ ±p_i (eqs. 95-98);
//!    - angular momentum, I_j ω_j⁺ = I_j ω_j⁻ + Σ ±r_i × p_i (eqs. 99-102);
//!    - Newton's law at each contact, n·u_i⁺ = −e u_n,i⁻ (eqs. 103-106, 108-109);
//!    - two Coulomb rows per contact (eqs. 87, 92, 107), see "friction rows" below.
//!
//!    Eliminating the velocities with the momentum rows, u_i⁺ = u_i⁻ + Σ_k W_ik p_k with
//!    W = J M⁻¹ Jᵀ the Delassus operator (its diagonal blocks are the K_i of eq. 9), leaves
//!    an impulse-only system A λ = b. We never assemble it: A λ is evaluated matrix-free
//!    (impulses → body velocity changes → contact velocity changes), O(contacts) per
//!    product, and solved by conjugate gradients (A symmetric: frictionless and sticking
//!    rows) or CGLS (CG on the normal equations, for the non-symmetric sliding rows).
//!    CG starts from λ = 0 and CGLS from (A S)ᵀ z₀ (z₀ the last round's dual variables,
//!    `Krylov::cgls`), so both stay in the range of the (scaled) transpose and return
//!    the **minimum-norm** solution when W is singular but the system consistent (a box
//!    flat on the ground: 4 normal rows, rank 3).
//! 3. **Friction** (μ > 0), an active set: all contacts start *sticking*; a contact whose
//!    sticking impulse leaves the cone (|p_t| > μ p_n) switches to *sliding* and the
//!    island is solved again, until no contact switches (contacts only switch from
//!    sticking to sliding, so this ends after at most one round per contact; also capped
//!    at `max_iterations` rounds). Sticking and Newton's law together can over-constrain
//!    a body: a sphere touching floor and wall with e > 0 must keep the distance of its
//!    two contact points, (u₂ − u₁)·(p₂ − p₁) = 0, which zero tangential velocity plus
//!    bouncing normal velocities violate. So when the system is inconsistent, the
//!    sticking contacts whose rows its least-squares solution misses most (by at least a
//!    tenth of the worst contact's miss: the over-constrained bodies' contacts) switch
//!    to sliding (frictionless if they do not slip) and the island is solved again, up
//!    to three times; then every sticking contact of the island switches; if it is
//!    still inconsistent (the sliding directions n + μd fail to span the normal
//!    targets), every sliding contact becomes frictionless, and only if *that* system is
//!    inconsistent is it an error. Each release is counted in
//!    [`SolverReport::friction_released`]. Releasing the whole island at the first
//!    inconsistency instead gives up Coulomb's law at every contact of a forming cube
//!    pile's island for one over-constrained body (on the peer bench's `cubes_325` the
//!    pile then settles 1.8 m, three quarters of an edge, lower than every other
//!    engine's: `docs/results/fidelity.md`).
//! 4. **Growth**: if the impulses make a contact that was not in the system approach
//!    (faster than `tolerance` × the largest pre-impact approach speed, and than the
//!    resting speed), it joins with the same Newton's law u_n⁺ = −e u_n⁻ on its own
//!    pre-impact normal velocity, and the island is solved again (at most
//!    `max_iterations` rounds; hitting either cap sets `hit_iteration_cap`). Its u_n⁻ is
//!    ≥ 0 or a resting approach (≥ −resting speed), so it may leave approaching at
//!    e·u_n⁻ or separating slowly, but the targets stay those of one law for every row,
//!    which keeps the system consistent.
//! 5. **Check and apply**: the true residual ‖b − Aλ‖/‖b‖ must be below
//!    √`tolerance` (or, for a symmetric system, its regularised solution's, and for a
//!    non-symmetric one CGLS's least-squares solution's, below `tolerance`^¼, see
//!    "Ill-conditioned systems"); a larger one means the system is
//!    singular *and inconsistent* (no impulses satisfy all rows), reported as
//!    [`SolverError::Diverged`] rather than applying a least-squares or NaN answer. Otherwise the velocity changes are applied
//!    to the system's bodies.
//! 6. **Next impact**: a contact that joined in step 4 separating (u_n⁻ > 0) leaves
//!    approaching at −e u_n⁻: its Newton row keeps the system consistent, and at e = 1
//!    its work λ (u_n⁻ + u_n⁺)/2 is zero, but it is still closing. If the solution was
//!    applied in full (not scaled back, see "Energy safeguard") and a contact of the
//!    island approaches faster than step 4's threshold, steps 2-5 run again from the
//!    velocities now: a new impact, with Newton's law on each contact's current
//!    approach, so at e = 1 it keeps the energy too (at most `max_iterations` impacts,
//!    then `hit_iteration_cap`). Left to the contact pass instead, such a contact would
//!    be stopped inelastically (−1 % of the kinetic energy of `impulse-lab verify`'s
//!    elastic box in 10 s).
//!
//! **Resting contacts** (so that piles come to rest, [`crate::settle`]):
//! with the contact pass on and `rest_velocity` > 0
//! ([`SolverParams::resting_speed`](super::SolverParams::resting_speed)), a contact
//! enters the system only if it approaches faster than `rest_velocity`, before the impact
//! (step 2) or because the impulses of the system drive it in (step 4); slower
//! approaches are left to the warm-started contact pass (`dynamics::contact_pass`).
//! This is the split of Guendelman et al. 2003 (collision pass, then contact pass) that
//! SQM and ETM make per contact too (their heaps hold only approaches faster than
//! `rest_velocity`), and the restitution rule already treats such contacts as resting
//! (e = 0: "restitution only above a velocity threshold"). SMM's defining property is
//! kept for every contact that takes part in the impact: Newton's law
//! u_n⁺ = −e u_n⁻ (eqs. 103-106, 108-109) and the Coulomb rows (eq. 107) hold
//! simultaneously at all of them, including resting contacts below a landing body that
//! the impulses drive in faster than `rest_velocity` (they join in step 4 with their own
//! u_n⁻, as the wave of the impact passes through the pile in one linear solve). What
//! is left out are contacts that approach slowly and are not driven in faster: on a
//! pile, every support contact approaches at g h after the gravity kick (0.016 m/s at
//! h = 1/600 s). Were they all to join as soon as one body of the island landed faster
//! than `rest_velocity`, a pile would be one island whose system is mostly such resting
//! contacts, growing round after round and solved from zero each time, and they would
//! get the island's e, bouncing the resting pile by e g h at every landing (figures in
//! `docs/results/contact-pass.md`).
//! With `rest_velocity` = 0 (the §7 scenes) or the contact pass off nothing changes:
//! every approaching contact is in the system.
//!
//! **Ill-conditioned systems** (cube piles). Face-to-face and edge contacts of boxes
//! give several nearly redundant contact points per pair; W then has, besides its exact
//! null space (a flat face: 4 normal rows, rank 3), singular values 10⁴-10⁶ times
//! smaller than its largest (measured on `packing_cubes`: σ from 9·10⁻⁴ down to 10⁻⁹,
//! with ‖b‖ consistent to 10⁻⁷-10⁻⁵ only, from round-off and from sticking rows that
//! a rigid motion meets only approximately). CG then either stalls above √`tolerance`
//! within its cap or, once b has a round-off component outside the range of A,
//! diverges (measured ‖r‖/‖b‖ up to 10¹³), and the step would fail with a "singular,
//! inconsistent system" error. So when
//! CG fails on a symmetric system (frictionless or sticking rows), it is solved again
//! regularised, (A + δ diag A) λ = b with δ = √`tolerance` (10⁻⁴ by default): Tikhonov
//! regularisation, the "constraint force mixing" of ODE and the contact compliance of
//! MuJoCo, which bounds the condition number by ~1/δ and damps the impulse components
//! along near-null directions (huge self-equilibrated impulse pairs that the exact
//! solution would need to meet nearly redundant rows to the last digit). Its residual
//! is b − Aλ = δ diag(A) λ: each row misses its target by δ times the velocity change
//! its own impulse alone causes. The solution is accepted, and flagged in
//! [`SolverReport::hit_iteration_cap`], only if ‖b − Aλ‖ ≤ √δ ‖b‖ (1 % by default),
//! i.e. Newton's law and the sticking rows hold to 1 % of the impact's velocity jump;
//! what is left approaching is below the contact pass's reach anyway. The sliding
//! rows' non-symmetric system is held to the same bar: CGLS converges at the rate of
//! κ², so on a forming cube pile it stalls at ‖b − Aλ‖/‖b‖ of 10⁻⁴-10⁻² within its cap
//! (measured on the peer bench's `cubes_325`: 3,755 of 3,833 failed solves over 1,800
//! steps), and its iterates, kept in the range of (A S)ᵀ, are the minimum-norm
//! least-squares solution there; accepted below √δ and flagged like the regularised
//! one. A genuinely inconsistent system (e.g. per-contact restitution targets on a
//! flat box, residual ~30 %) still fails and falls back as in step 3, or is reported.
//!
//! **Stopping.** CG and CGLS stop at ‖b − Aλ‖ ≤ `tolerance` ‖b‖ or, with the contact
//! pass on, at ‖b − Aλ‖ ≤ 10⁻³ `rest_velocity` ([`REST_TOLERANCE`] × the resting speed,
//! in m/s; never looser than √`tolerance` ‖b‖): the rows are velocities, and a contact
//! left approaching at 10⁻³ of the rest velocity is what the contact pass itself counts
//! as resolved (its own stopping rule). The growth threshold (≥ `rest_velocity`) and the
//! friction cone test are not moved by errors of that size. On `pile_spheres_1080`
//! (rest 0.05 m/s) this saves ~20 % of the iterations; with `rest_velocity` = 0 the
//! relative tolerance alone applies, as before.
//!
//! **Friction rows.** The paper's rows (t − μ_t n)·p = 0, (q − μ_q n)·p = 0 (eq. 107)
//! fix the tangential impulse to p_t = μ_t p_n, p_q = μ_q p_n. We read (μ_t, μ_q) as μ
//! times the components of the unit friction direction d: for a *sliding* contact
//! d = −u_t⁻/|u_t⁻| (opposite to the pre-impact slip; if there is none, the direction of
//! the sticking impulse's tangential part), so p = p_n (n + μ d) with |p_t| = μ p_n.
//! A *sticking* contact replaces the two rows by t·u⁺ = 0 and q·u⁺ = 0 (no tangential
//! velocity after the impact), kept only while |p_t| ≤ μ p_n. With μ = 0 every contact
//! has μ_t = μ_q = 0, i.e. p = p_n n: exactly the paper's frictionless system of §7.2.
//! As in the paper the system is linear: impulses may pull (p_n < 0) when Newton's law
//! at all contacts demands it (§7.2's SMM answer does).
//!
//! **Restitution.** Newton's law u_n⁺ = −e u_n⁻ at every row. By default
//! ([`RestitutionRule::PerIsland`]) one e serves a whole island: `restitution` if any of
//! its contacts approaches faster than `rest_velocity`, else 0. Then the targets
//! −(1 + e) u_n⁻ are the normal velocities of a rigid motion (scaled), always in the range
//! of W, so a frictionless system is never inconsistent, however redundant its contacts.
//! [`RestitutionRule::PerContact`] decides e per contact as SQM and jolt do; corners of a
//! box whose approach speeds straddle `rest_velocity` then get targets no rigid motion
//! has, and step 5 reports the inconsistent system.
//!
//! **Energy safeguard.** The linear sliding rows fix each sliding impulse's direction
//! from the slip before the impact, and Newton's law may ask impulses to pull, so a
//! capped or ill-conditioned solution can add kinetic energy (on a forming pile, up to
//! launching bodies: `docs/results/speed.md`). An island's velocity changes that would
//! gain more than the solve's tolerance allows (½ ‖λ‖ ε ‖b‖, the most a residual
//! ‖b − Aλ‖ ≤ ε ‖b‖ can add) plus [`DISSIPATION_SLACK`] of the energy at stake are
//! scaled back to their most dissipative multiple, as the contact pass scales back its
//! own (`SmmSolver::dissipative_scale`); every impulse is scaled alike, so the cone and
//! the rows' proportions hold, and the report counts the island
//! ([`SolverReport::scaled_back`]). At e = 1, μ = 0 the exact solution changes the
//! energy by zero, so the Krylov residual's ± ½ λᵀr is all the check sees: it must not
//! act on it (the most dissipative multiple of an elastic solution is ½, a perfectly
//! inelastic impact).
//!
//! Energy: with simultaneous impulses the kinetic-energy change is exactly
//! Σ_i p_i·(u_i⁻ + u_i⁺)/2; normal parts are booked as restitution dissipation and
//! tangential parts as friction dissipation, with their signs. `iterations` in the report
//! is the total number of CG/CGLS iterations over all islands and rounds.

use super::prepared::PreparedContact;
use super::{
    CollisionSolver, Param, SolverContext, SolverError, SolverKind, SolverReport, TraceRow,
    has_impact, kinetic_change_terms, most_dissipative_multiple, total_kinetic_energy,
};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::dynamics::contact_pass::{DISSIPATION_SLACK, REST_TOLERANCE};
use crate::math::{Mat3, Vec3};

/// How a contact's impulse is parametrised and which rows it contributes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    /// μ = 0: p = λ n, row n·u⁺ = target.
    Frictionless,
    /// p = λ (n + μ d) (eq. 107 with μ_t, μ_q = μ d·t, μ d·q), row n·u⁺ = target.
    Sliding { dir: Vec3 },
    /// p = λ₀ n + λ₁ t₁ + λ₂ t₂, rows n·u⁺ = target, t₁·u⁺ = 0, t₂·u⁺ = 0.
    Sticking,
}

#[derive(Clone, Debug)]
struct Row {
    contact: usize,
    mode: Mode,
    /// Offset of this contact's unknowns in λ.
    offset: usize,
    /// Relative velocity before the impact.
    u0: Vec3,
    /// Normal velocity after the impact (Newton's law, eqs. 103-106).
    target_n: f64,
    /// The CGLS dual variables of this contact's rows from the last solve (n, then t₁,
    /// t₂ for a sticking contact), its warm start in the next (see [`Krylov::cgls`]).
    dual: [f64; 3],
}

impl Row {
    fn unknowns(&self) -> usize {
        if self.mode == Mode::Sticking { 3 } else { 1 }
    }
}

/// Which approach speed decides whether a contact gets e or 0 (`rest_velocity`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RestitutionRule {
    /// One e per island: `restitution` if any contact of the island approaches faster
    /// than `rest_velocity`, else 0. Keeps the Newton targets consistent. Default.
    #[default]
    PerIsland,
    /// Each contact by its own approach speed (as SQM and jolt do). Redundant contacts
    /// whose approach speeds straddle `rest_velocity` then give an inconsistent system.
    PerContact,
}

/// Simultaneous impulse solver; see the module doc.
#[derive(Clone, Default)]
pub struct SmmSolver {
    /// How `rest_velocity` selects e (default: per island).
    pub restitution_rule: RestitutionRule,
    prepared: Vec<PreparedContact>,
    /// (island number, contact index), island by island (`dynamics::graph`).
    order: Vec<(usize, usize)>,
    in_system: Vec<bool>,
    rows: Vec<Row>,
    /// Dynamic bodies touched by the system's rows (the only ones whose velocities the
    /// impulses change).
    system_bodies: Vec<usize>,
    /// Slot of each body in `bodies` (global index; `usize::MAX` outside the system).
    slot: Vec<usize>,
    /// The unknowns of the current rows, in the order of λ.
    unknowns: Vec<Unknown>,
    bodies: SystemBodies,
    /// Velocity changes per body (global index; only island bodies are used).
    dv: Vec<Vec3>,
    dw: Vec<Vec3>,
    krylov: Krylov,
}

#[derive(Clone, Default)]
struct Krylov {
    x: Vec<f64>,
    b: Vec<f64>,
    r: Vec<f64>,
    p: Vec<f64>,
    q: Vec<f64>,
    s: Vec<f64>,
    /// CGLS column scaling S (see [`Krylov::cgls`]) and scratch for S p.
    scale: Vec<f64>,
    t: Vec<f64>,
    /// CGLS dual variables z (x = S (A S)ᵀ z) and their search direction.
    z: Vec<f64>,
    zp: Vec<f64>,
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// y += a x.
fn axpy(y: &mut [f64], a: f64, x: &[f64]) {
    for (yi, xi) in y.iter_mut().zip(x) {
        *yi += a * xi;
    }
}

/// p = x + β p.
fn xpby(p: &mut [f64], x: &[f64], beta: f64) {
    for (pi, xi) in p.iter_mut().zip(x) {
        *pi = xi + beta * *pi;
    }
}

/// t = diag(scale) v.
fn scaled(t: &mut [f64], scale: &[f64], v: &[f64]) {
    for ((ti, si), vi) in t.iter_mut().zip(scale).zip(v) {
        *ti = si * vi;
    }
}

/// Impulse on a at the contact of `row` from its unknowns in `x` (the impulse
/// parametrisation B).
fn row_impulse(c: &PreparedContact, row: &Row, x: &[f64]) -> Vec3 {
    let o = row.offset;
    match row.mode {
        Mode::Frictionless => x[o] * c.n,
        Mode::Sliding { dir } => x[o] * dir,
        Mode::Sticking => x[o] * c.n + x[o + 1] * c.t1 + x[o + 2] * c.t2,
    }
}

/// Change of the relative velocity at contact `c` caused by body velocity changes dv, dw.
fn delta_u(dv: &[Vec3], dw: &[Vec3], c: &PreparedContact) -> Vec3 {
    let mut du = Vec3::zeros();
    if c.inv_mass_a > 0.0 {
        du += dv[c.a] + dw[c.a].cross(&c.r_a);
    }
    if let Some(b) = c.b.filter(|_| c.inv_mass_b > 0.0) {
        du -= dv[b] + dw[b].cross(&c.r_b);
    }
    du
}

/// Unit direction of the pre-impact slip u_t/|u_t|, if the contact slips.
fn slip_direction(c: &PreparedContact, u0: &Vec3) -> Option<Vec3> {
    let ut = u0 - c.n.dot(u0) * c.n;
    let slip = ut.norm();
    (slip > 1e-12 * u0.norm()).then(|| ut / slip)
}

/// Switch the sticking rows that `chosen` picks to sliding against their pre-impact slip,
/// or frictionless if they do not slip (step 3's release); returns whether any switched.
fn release_sticking_where(
    rows: &mut [Row],
    prepared: &[PreparedContact],
    mu: f64,
    chosen: impl Fn(&Row) -> bool,
) -> bool {
    let mut any = false;
    for row in rows.iter_mut() {
        if row.mode != Mode::Sticking || !chosen(row) {
            continue;
        }
        let c = &prepared[row.contact];
        row.mode = match slip_direction(c, &row.u0) {
            Some(s) => Mode::Sliding { dir: c.n - mu * s },
            None => Mode::Frictionless,
        };
        any = true;
    }
    any
}

/// The Jacobian of a direction e at a contact. The relative velocity along e is
/// e·u = e·v_a + (r_a × e)·ω_a − e·v_b − (r_b × e)·ω_b, and an impulse λ e on a (−λ e on
/// b) changes the momenta of a and b by λ (e, r_a × e) and −λ (e, r_b × e) (eqs. 95-102):
/// the same three vectors serve the product Wλ (scatter) and the rows (gather).
#[derive(Clone, Copy, Debug, Default)]
struct Jacobian {
    lin: Vec3,
    /// r_a × e.
    ang_a: Vec3,
    /// −r_b × e.
    ang_b: Vec3,
}

impl Jacobian {
    fn new(c: &PreparedContact, e: Vec3) -> Self {
        Jacobian {
            lin: e,
            ang_a: c.r_a.cross(&e),
            ang_b: -c.r_b.cross(&e),
        }
    }
}

/// One unknown λⱼ of the system: its bodies, the Jacobians of its impulse direction
/// (column j of B) and of its row direction (row j of C), and the diagonal entry of A.
#[derive(Clone, Copy, Debug, Default)]
struct Unknown {
    /// Slots of bodies a and b in [`SystemBodies`]; a static body or a container takes
    /// the last slot, whose inverse mass and inertia are zero.
    a: usize,
    b: usize,
    impulse: Jacobian,
    row: Jacobian,
    /// eⱼᵀ K eⱼ (K of eq. 9, eⱼ the row direction): the diagonal entry of A for the
    /// frictionless and sticking rows.
    diag: f64,
}

/// The dynamic bodies of one system, in slots (the last one a static placeholder).
#[derive(Clone, Default)]
struct SystemBodies {
    inv_mass: Vec<f64>,
    /// World-frame inverse inertia.
    inv_inertia: Vec<Mat3>,
    /// Linear and angular impulse sums of a product, turned into the velocity changes
    /// Δv = p/m, Δω = I⁻¹ L in place.
    dv: Vec<Vec3>,
    dw: Vec<Vec3>,
}

/// The matrix-free impulse operator of one island: A λ = Cᵀ W B λ, with B the impulse
/// parametrisation of each contact and C its rows (equal except for sliding contacts).
struct Operator<'a> {
    unknowns: &'a [Unknown],
    bodies: &'a mut SystemBodies,
    /// Regularisation δ ≥ 0: the operator is A + δ diag(A) (see "Ill-conditioned
    /// systems" in the module doc); 0 for the exact system.
    damping: f64,
}

impl Operator<'_> {
    /// Body velocity changes (into `bodies.dv`, `bodies.dw`) caused by the impulses of
    /// λ = `x` through the impulse directions B, or through the row directions C (for
    /// Aᵀ) (momentum rows, eqs. 95-102).
    fn accumulate(&mut self, x: &[f64], through_b: bool) {
        let SystemBodies {
            inv_mass,
            inv_inertia,
            dv,
            dw,
        } = &mut *self.bodies;
        dv.fill(Vec3::zeros());
        dw.fill(Vec3::zeros());
        for (u, &xj) in self.unknowns.iter().zip(x) {
            let e = if through_b { &u.impulse } else { &u.row };
            let p = xj * e.lin;
            dv[u.a] += p;
            dw[u.a] += xj * e.ang_a;
            dv[u.b] -= p;
            dw[u.b] += xj * e.ang_b;
        }
        for (((v, w), m), i) in dv
            .iter_mut()
            .zip(dw.iter_mut())
            .zip(&*inv_mass)
            .zip(&*inv_inertia)
        {
            *v *= *m;
            *w = i * *w;
        }
    }

    /// eⱼᵀ K eⱼ for every unknown j: the diagonal of the frictionless and sticking A.
    fn diagonal(&self, d: &mut [f64]) {
        for (dj, u) in d.iter_mut().zip(self.unknowns) {
            *dj = u.diag;
        }
    }

    /// y = A x (`transpose` = false) or y = Aᵀ x, plus δ diag(A) x when damped.
    fn apply(&mut self, x: &[f64], y: &mut [f64], transpose: bool) {
        self.accumulate(x, !transpose);
        let SystemBodies { dv, dw, .. } = &*self.bodies;
        for ((u, yj), &xj) in self.unknowns.iter().zip(y.iter_mut()).zip(x) {
            let e = if transpose { &u.impulse } else { &u.row };
            *yj = e.lin.dot(&(dv[u.a] - dv[u.b])) + e.ang_a.dot(&dw[u.a]) + e.ang_b.dot(&dw[u.b]);
            if self.damping > 0.0 {
                *yj += self.damping * u.diag * xj;
            }
        }
    }
}

impl Krylov {
    fn resize(&mut self, n: usize) {
        for v in [
            &mut self.x,
            &mut self.b,
            &mut self.r,
            &mut self.p,
            &mut self.q,
            &mut self.s,
            &mut self.scale,
            &mut self.t,
            &mut self.z,
            &mut self.zp,
        ] {
            v.clear();
            v.resize(n, 0.0);
        }
    }

    /// Conjugate gradients for symmetric positive semi-definite A from x = 0 (the
    /// minimum-norm solution when A is singular and b in its range).
    fn cg(&mut self, op: &mut Operator<'_>, cap: u32, tol: f64) -> u32 {
        let Krylov { x, b, r, p, q, .. } = self;
        let b_norm = dot(b, b).sqrt();
        x.fill(0.0);
        r.copy_from_slice(b);
        p.copy_from_slice(b);
        let mut rr = dot(r, r);
        let mut it = 0;
        // ‖r‖ > 10⁴ ‖b‖: CG is diverging on an inconsistent singular system (b outside
        // the range of A); no further iteration will bring it back below √tolerance.
        while it < cap && rr.sqrt() > tol * b_norm && rr.sqrt() <= 1e4 * b_norm {
            op.apply(p, q, false);
            let pq = dot(p, q);
            // pᵀAp ≤ 0 only happens for b outside the range of A (or round-off there).
            if !(pq > 0.0 && pq.is_finite()) {
                break;
            }
            let alpha = rr / pq;
            axpy(x, alpha, p);
            axpy(r, -alpha, q);
            let rr_new = dot(r, r);
            let beta = rr_new / rr;
            xpby(p, r, beta);
            rr = rr_new;
            it += 1;
        }
        it
    }

    /// CGLS (CG on the normal equations) for general A, with Jacobi column scaling: it
    /// minimises ‖A S y − b‖ with S = diag(1/eⱼᵀK eⱼ) (eⱼ the row direction of unknown
    /// j, K of eq. 9), x = S y, so that every column of A S has a unit diagonal entry.
    /// CGLS converges at the rate of κ(A S)², and the diagonal of A spans a factor ~3.5
    /// between normal and tangential rows of a sphere (2/m vs 7/m) and 2 between
    /// contacts with a wall and with another body.
    ///
    /// It starts from y₀ = (A S)ᵀ z₀, z₀ the dual variables in `z` (the last round's, one
    /// per row; zero for new rows), and keeps y = (A S)ᵀ z along the way (every search
    /// direction is (A S)ᵀ of a direction in z). The iterates so stay in the range of
    /// (A S)ᵀ, and the least-squares solution there is the one of minimum ‖y‖ = ‖S⁻¹x‖,
    /// whatever z₀: a warm start that keeps CGLS's minimum-norm answer (the minimum-norm
    /// one of the scaled unknowns). If y₀ leaves a residual larger than ‖b‖, it starts
    /// from 0. On return `z` holds the final dual variables. Every least-squares solution
    /// gives the same velocities when the system is consistent (A λ = A λ' ⇒ the
    /// impulses differ by a self-equilibrated set).
    ///
    /// Stops at ‖r‖ ≤ `tol` ‖b‖, or when ‖(A S)ᵀ r‖ has fallen below 10⁻³ `ls_tol` of
    /// ‖(A S)ᵀ b‖ (a least-squares solution of an inconsistent system).
    fn cgls(&mut self, op: &mut Operator<'_>, cap: u32, tol: f64, ls_tol: f64) -> u32 {
        let Krylov {
            x,
            b,
            r,
            p,
            q,
            s,
            scale,
            t,
            z,
            zp,
        } = self;
        op.diagonal(scale);
        for v in scale.iter_mut() {
            *v = if *v > 0.0 && v.is_finite() {
                1.0 / *v
            } else {
                1.0
            };
        }
        let b_norm = dot(b, b).sqrt();
        // s = (A S)ᵀ v
        let scaled_transpose = |op: &mut Operator<'_>, v: &[f64], s: &mut [f64]| {
            op.apply(v, s, true);
            s.iter_mut().zip(scale.iter()).for_each(|(v, c)| *v *= c);
        };
        scaled_transpose(op, b, s);
        let s0 = dot(s, s).sqrt();
        let mut warm = z.iter().any(|&v| v != 0.0);
        if warm {
            // y₀ = (A S)ᵀ z₀ (in x until the end), r₀ = b − A S y₀.
            scaled_transpose(op, z, x);
            scaled(t, scale, x);
            op.apply(t, q, false);
            for ((ri, bi), qi) in r.iter_mut().zip(b.iter()).zip(q.iter()) {
                *ri = bi - qi;
            }
            let rr = dot(r, r);
            warm = rr.is_finite() && x.iter().all(|v| v.is_finite()) && rr < b_norm * b_norm;
            if warm {
                scaled_transpose(op, r, s);
            }
        }
        if !warm {
            x.fill(0.0);
            z.fill(0.0);
            r.copy_from_slice(b);
            // s = (A S)ᵀ b from above.
        }
        p.copy_from_slice(s);
        zp.copy_from_slice(r);
        let mut ss = dot(s, s);
        let mut it = 0;
        while it < cap && dot(r, r).sqrt() > tol * b_norm && ss.sqrt() > 1e-3 * ls_tol * s0 {
            scaled(t, scale, p);
            op.apply(t, q, false);
            let qq = dot(q, q);
            if !(qq > 0.0 && qq.is_finite()) {
                break;
            }
            let alpha = ss / qq;
            axpy(x, alpha, p);
            axpy(z, alpha, zp);
            axpy(r, -alpha, q);
            scaled_transpose(op, r, s);
            let ss_new = dot(s, s);
            let beta = ss_new / ss;
            xpby(p, s, beta);
            xpby(zp, r, beta);
            ss = ss_new;
            it += 1;
        }
        x.iter_mut().zip(scale.iter()).for_each(|(v, c)| *v *= c);
        it
    }

    /// Relative true residual ‖b − A x‖/‖b‖ (uses `q` as scratch).
    fn residual(&mut self, op: &mut Operator<'_>) -> f64 {
        let Krylov { x, b, q, .. } = self;
        op.apply(x, q, false);
        let b_norm = dot(b, b).sqrt();
        if b_norm == 0.0 {
            return 0.0;
        }
        b.iter()
            .zip(q.iter())
            .map(|(bi, qi)| (bi - qi) * (bi - qi))
            .sum::<f64>()
            .sqrt()
            / b_norm
    }
}

/// The relative residual ε at which CG and CGLS stop for a right-hand side of norm
/// `b_norm`: `tolerance`, or, with the contact pass on, REST_TOLERANCE × `rest_velocity`
/// / ‖b‖ (never looser than √`tolerance`; see "Stopping" in the module doc).
fn stopping_tolerance(params: &super::SolverParams, b_norm: f64) -> f64 {
    if b_norm > 0.0 {
        params
            .tolerance
            .max(REST_TOLERANCE * params.resting_speed() / b_norm)
            .min(params.tolerance.sqrt())
    } else {
        params.tolerance
    }
}

impl SmmSolver {
    pub fn new(restitution_rule: RestitutionRule) -> Self {
        SmmSolver {
            restitution_rule,
            ..Default::default()
        }
    }

    /// Solve the current rows of one island: assign offsets, build b, run CG or CGLS and
    /// check the residual. `Err` describes a singular inconsistent (or non-finite) system.
    fn solve_rows(
        &mut self,
        params: &super::SolverParams,
        report: &mut SolverReport,
    ) -> Result<(), String> {
        let mut n = 0;
        for row in &mut self.rows {
            row.offset = n;
            n += row.unknowns();
        }
        self.build_system();
        self.krylov.resize(n);
        let symmetric = self
            .rows
            .iter()
            .all(|r| !matches!(r.mode, Mode::Sliding { .. }));
        for row in &self.rows {
            let c = &self.prepared[row.contact];
            let o = row.offset;
            // Newton's law n·u⁺ = target: n·Δu = target − n·u⁻   (eqs. 103-106, 108-109)
            self.krylov.b[o] = row.target_n - c.n.dot(&row.u0);
            if row.mode == Mode::Sticking {
                // Sticking: t·u⁺ = 0, q·u⁺ = 0.
                self.krylov.b[o + 1] = -c.t1.dot(&row.u0);
                self.krylov.b[o + 2] = -c.t2.dot(&row.u0);
            }
        }
        // Convergence: ‖b − Aλ‖ ≤ `tolerance` ‖b‖, or, with the contact pass on, at most
        // REST_TOLERANCE × `rest_velocity` (m/s), the approach speed the contact pass
        // itself counts as resolved (see "Stopping" in the module doc).
        let converged = stopping_tolerance(params, dot(&self.krylov.b, &self.krylov.b).sqrt());
        // CG needs at most n iterations in exact arithmetic; the slack absorbs round-off.
        let cap = params
            .max_iterations
            .saturating_add(u32::try_from(4 * n).unwrap_or(u32::MAX));
        let mut op = Operator {
            unknowns: &self.unknowns,
            bodies: &mut self.bodies,
            damping: 0.0,
        };
        let mut iterations = if symmetric {
            self.krylov.cg(&mut op, cap, converged)
        } else {
            for row in &self.rows {
                let k = row.unknowns();
                self.krylov.z[row.offset..row.offset + k].copy_from_slice(&row.dual[..k]);
            }
            let iterations = self.krylov.cgls(&mut op, cap, converged, params.tolerance);
            for row in &mut self.rows {
                let k = row.unknowns();
                row.dual = [0.0; 3];
                let z = &self.krylov.z[row.offset..row.offset + k];
                if z.iter().all(|v| v.is_finite()) {
                    row.dual[..k].copy_from_slice(z);
                }
            }
            iterations
        };
        let mut residual = self.krylov.residual(&mut op);
        // The bar a solution must meet: √tolerance for the system as posed, √δ =
        // tolerance^¼ for a regularised or least-squares one (see "Ill-conditioned
        // systems" in the module doc).
        let (exact, loose) = (params.tolerance.sqrt(), params.tolerance.sqrt().sqrt());
        let within = |residual: f64, x: &[f64], bar: f64| {
            residual.is_finite() && x.iter().all(|v| v.is_finite()) && residual <= bar
        };
        if symmetric && !within(residual, &self.krylov.x, exact) {
            // Ill-conditioned or slightly inconsistent: the regularised system
            // (A + δ diag A) λ = b, accepted if Newton's law and the sticking rows still
            // hold to √δ of ‖b‖ (see "Ill-conditioned systems" in the module doc).
            op.damping = exact;
            let damped_iterations = self.krylov.cg(&mut op, cap, converged);
            iterations = iterations.saturating_add(damped_iterations);
            op.damping = 0.0;
            let damped_residual = self.krylov.residual(&mut op);
            if within(damped_residual, &self.krylov.x, loose) {
                report.iterations = report.iterations.saturating_add(iterations);
                report.hit_iteration_cap = true;
                return Ok(());
            }
            residual = residual.min(damped_residual);
        }
        if !symmetric
            && !within(residual, &self.krylov.x, exact)
            && within(residual, &self.krylov.x, loose)
        {
            // CGLS stalls at κ² on an ill-conditioned sliding system; its minimum-norm
            // least-squares solution is held to the regularised solution's bar (see
            // "Ill-conditioned systems" in the module doc).
            report.iterations = report.iterations.saturating_add(iterations);
            report.hit_iteration_cap = true;
            return Ok(());
        }
        report.iterations = report.iterations.saturating_add(iterations);
        if !(residual.is_finite() && self.krylov.x.iter().all(|v| v.is_finite())) {
            return Err(format!(
                "non-finite impulses (singular and inconsistent, or badly scaled system) in a system of {} bodies and {} contacts",
                self.system_bodies.len(),
                self.rows.len()
            ));
        }
        if residual > exact {
            return Err(format!(
                "singular, inconsistent system in a system of {} bodies and {} contacts: relative residual {residual:.3e} \
                 after {iterations} {} iterations (no impulses satisfy every contact's row, e.g. redundant contacts with \
                 different restitution targets)",
                self.system_bodies.len(),
                self.rows.len(),
                if symmetric { "CG" } else { "CGLS" }
            ));
        }
        if residual > converged {
            report.hit_iteration_cap = true;
        }
        Ok(())
    }

    /// The dynamic bodies of the rows into `system_bodies` and their slots, masses and
    /// inertias into `slot` and `bodies`; the unknowns of the rows into `unknowns`.
    fn build_system(&mut self) {
        for &k in &self.system_bodies {
            self.slot[k] = usize::MAX;
        }
        self.system_bodies.clear();
        let SystemBodies {
            inv_mass,
            inv_inertia,
            dv,
            dw,
        } = &mut self.bodies;
        inv_mass.clear();
        inv_inertia.clear();
        for row in &self.rows {
            let c = &self.prepared[row.contact];
            let b = c.b.filter(|_| c.inv_mass_b > 0.0);
            for (body, m, i) in [
                (
                    (c.inv_mass_a > 0.0).then_some(c.a),
                    c.inv_mass_a,
                    &c.inv_inertia_a,
                ),
                (b, c.inv_mass_b, &c.inv_inertia_b),
            ] {
                if let Some(body) = body.filter(|&k| self.slot[k] == usize::MAX) {
                    self.slot[body] = self.system_bodies.len();
                    self.system_bodies.push(body);
                    inv_mass.push(m);
                    inv_inertia.push(*i);
                }
            }
        }
        // The static placeholder.
        let fixed = self.system_bodies.len();
        inv_mass.push(0.0);
        inv_inertia.push(Mat3::zeros());
        dv.clear();
        dv.resize(fixed + 1, Vec3::zeros());
        dw.clear();
        dw.resize(fixed + 1, Vec3::zeros());

        self.unknowns.clear();
        for row in &self.rows {
            let c = &self.prepared[row.contact];
            let a = if c.inv_mass_a > 0.0 {
                self.slot[c.a]
            } else {
                fixed
            };
            let b =
                c.b.filter(|_| c.inv_mass_b > 0.0)
                    .map_or(fixed, |k| self.slot[k]);
            let unknown = |impulse: Vec3, row: Vec3| Unknown {
                a,
                b,
                impulse: Jacobian::new(c, impulse),
                row: Jacobian::new(c, row),
                diag: row.dot(&(c.k * row)),
            };
            match row.mode {
                Mode::Frictionless => self.unknowns.push(unknown(c.n, c.n)),
                Mode::Sliding { dir } => self.unknowns.push(unknown(dir, c.n)),
                Mode::Sticking => {
                    self.unknowns.push(unknown(c.n, c.n));
                    self.unknowns.push(unknown(c.t1, c.t1));
                    self.unknowns.push(unknown(c.t2, c.t2));
                }
            }
        }
    }

    /// Switch sticking contacts whose impulse leaves the Coulomb cone to sliding
    /// (step 3); returns whether any switched.
    fn update_friction_modes(&mut self, mu: f64) -> bool {
        let mut switched = false;
        for row in &mut self.rows {
            if row.mode != Mode::Sticking {
                continue;
            }
            let c = &self.prepared[row.contact];
            let x = &self.krylov.x[row.offset..row.offset + 3];
            let (pn, pt) = (x[0], x[1] * c.t1 + x[2] * c.t2);
            let pt_norm = pt.norm();
            if pt_norm <= mu * pn + 1e-12 * (pn.abs() + pt_norm) {
                continue;
            }
            let d = match slip_direction(c, &row.u0) {
                Some(s) => -s,
                None if pt_norm > 0.0 => pt / pt_norm,
                None => continue,
            };
            row.mode = Mode::Sliding { dir: c.n + mu * d };
            switched = true;
        }
        switched
    }

    /// Solve the rows ([`Self::solve_rows`]); while the system is inconsistent, fall back
    /// as the module doc says (step 3): the worst-missed sticking rows to sliding, then
    /// all of them, then sliding rows to frictionless, and solve again. `Err` only when the frictionless system is
    /// inconsistent too.
    fn solve_or_release(
        &mut self,
        params: &super::SolverParams,
        report: &mut SolverReport,
    ) -> Result<(), String> {
        let mut targeted = 0;
        loop {
            match self.solve_rows(params, report) {
                Ok(()) => return Ok(()),
                Err(_) if targeted < 3 && self.release_worst_sticking(params.friction) => {
                    targeted += 1;
                    report.friction_released = report.friction_released.saturating_add(1);
                }
                // Sticking plus Newton's law can over-constrain a body, and sliding
                // directions can fail to span the normal targets.
                Err(_) if self.release_sticking(params.friction) || self.release_sliding() => {
                    report.friction_released = report.friction_released.saturating_add(1);
                }
                Err(why) => return Err(why),
            }
        }
    }

    /// Switch the sticking contacts whose rows the failed solve misses most (residual
    /// ‖b − Aλ‖ over the contact's rows at least a tenth of the largest contact's; `q`
    /// holds Aλ after [`Self::solve_rows`]) to sliding, or frictionless if they do not
    /// slip; returns whether any switched.
    fn release_worst_sticking(&mut self, mu: f64) -> bool {
        let miss = |row: &Row, k: &Krylov| -> f64 {
            (row.offset..row.offset + row.unknowns())
                .map(|j| (k.b[j] - k.q[j]).powi(2))
                .sum::<f64>()
                .sqrt()
        };
        let worst = self
            .rows
            .iter()
            .map(|r| miss(r, &self.krylov))
            .fold(0.0, f64::max);
        if !(worst > 0.0 && worst.is_finite()) {
            return false;
        }
        let krylov = &self.krylov;
        release_sticking_where(&mut self.rows, &self.prepared, mu, |r| {
            miss(r, krylov) >= 0.1 * worst
        })
    }

    /// Switch every sticking contact to sliding (or frictionless if it does not slip);
    /// returns whether any was sticking.
    fn release_sticking(&mut self, mu: f64) -> bool {
        release_sticking_where(&mut self.rows, &self.prepared, mu, |_| true)
    }

    /// Switch every sliding contact to frictionless; returns whether any was sliding.
    fn release_sliding(&mut self) -> bool {
        let mut any = false;
        for row in self
            .rows
            .iter_mut()
            .filter(|r| matches!(r.mode, Mode::Sliding { .. }))
        {
            row.mode = Mode::Frictionless;
            any = true;
        }
        any
    }

    /// Resolve one island whose contacts are `contacts[order[k].1]` for k in `island`.
    /// Its contacts are prepared (`prepared[k − island.start]`) only if one of them
    /// takes part in an impact ([`has_impact`]).
    #[allow(clippy::too_many_arguments)]
    fn resolve_island(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        island: std::ops::Range<usize>,
        params: &super::SolverParams,
        dt: f64,
        report: &mut SolverReport,
        mut trace: Option<&mut Vec<TraceRow>>,
    ) -> Result<(), SolverError> {
        // Step 2: the contacts approaching before the impact faster than the resting
        // speed; slower ones are the contact pass's (see "Resting contacts").
        let resting = params.resting_speed();
        self.rows.clear();
        let ids = &self.order[island.clone()];
        if !has_impact(bodies, contacts, ids.iter().map(|&(_, ci)| ci), dt, resting) {
            return Ok(());
        }
        self.prepared.clear();
        self.prepared.extend(
            ids.iter()
                .map(|&(_, ci)| PreparedContact::new(bodies, &contacts[ci])),
        );
        self.in_system.clear();
        self.in_system.resize(ids.len(), false);
        // Step 6: rounds of impacts, while the last one left a contact approaching.
        let (mut enter, mut grow) = (resting, None);
        let mut rounds = 0;
        while let Some(g) = self.impact_round(
            bodies,
            island.clone(),
            params,
            dt,
            (enter, grow),
            report,
            trace.as_deref_mut(),
        )? {
            (enter, grow) = (g, Some(g));
            rounds += 1;
            if rounds >= params.max_iterations {
                report.hit_iteration_cap = true;
                break;
            }
        }
        Ok(())
    }

    /// One impact of the island (steps 2-5): the contacts approaching faster than
    /// `enter` form the rows, with Newton's law on their velocities now; contacts the
    /// impulses drive in faster than the growth threshold join. The first round's
    /// growth threshold is `tolerance` × its fastest approach (at least the resting
    /// speed); `grow` passes it on to the later rounds. Returns `None` when no contact
    /// approaches, else the growth threshold, after applying the impulses.
    #[allow(clippy::too_many_arguments)]
    fn impact_round(
        &mut self,
        bodies: &mut [RigidBody],
        island: std::ops::Range<usize>,
        params: &super::SolverParams,
        dt: f64,
        (enter, grow): (f64, Option<f64>),
        report: &mut SolverReport,
        trace: Option<&mut Vec<TraceRow>>,
    ) -> Result<Option<f64>, SolverError> {
        let initial_mode = if params.friction > 0.0 {
            Mode::Sticking
        } else {
            Mode::Frictionless
        };
        let resting = params.resting_speed();
        self.rows.clear();
        self.in_system.fill(false);
        let mut v_ref: f64 = 0.0;
        for k in island.clone() {
            let ci = self.order[k].1;
            let l = k - island.start;
            let c = &self.prepared[l];
            let u0 = c.relative_velocity(bodies);
            let un = u0.dot(&c.n);
            if !u0.iter().all(|v| v.is_finite()) {
                return Err(SolverError::Diverged {
                    solver: SolverKind::Smm,
                    why: format!(
                        "non-finite relative velocity at contact {ci} (body {})",
                        c.a
                    ),
                });
            }
            if c.resolvable() && c.approaching(un, dt, enter) {
                v_ref = v_ref.max(-un);
                self.in_system[l] = true;
                self.rows.push(Row {
                    contact: l,
                    mode: initial_mode,
                    offset: 0,
                    u0,
                    target_n: 0.0,
                    dual: [0.0; 3],
                });
            }
        }
        if self.rows.is_empty() {
            return Ok(None);
        }
        // Restitution (see "Restitution" in the module doc).
        let e_island = if v_ref > params.rest_velocity {
            params.restitution
        } else {
            0.0
        };
        let rule = self.restitution_rule;
        // Newton's law u_n⁺ = −e u_n⁻   (eqs. 83, 103-106)
        let target = move |un0: f64| -> f64 {
            let e = match rule {
                RestitutionRule::PerIsland => e_island,
                RestitutionRule::PerContact if -un0 > params.rest_velocity => params.restitution,
                RestitutionRule::PerContact => 0.0,
            };
            -e * un0
        };
        for row in &mut self.rows {
            row.target_n = target(self.prepared[row.contact].n.dot(&row.u0));
        }

        let grow_threshold = grow.unwrap_or((params.tolerance * v_ref).max(resting));
        let mut growth_rounds = 0;
        loop {
            // Step 3: friction active set.
            let mut friction_rounds = 0;
            loop {
                friction_rounds += 1;
                self.solve_or_release(params, report)
                    .map_err(|why| SolverError::Diverged {
                        solver: SolverKind::Smm,
                        why,
                    })?;
                if params.friction == 0.0 || !self.update_friction_modes(params.friction) {
                    break;
                }
                if friction_rounds >= params.max_iterations {
                    // The modes changed after the last solve: solve once more with them.
                    self.solve_or_release(params, report)
                        .map_err(|why| SolverError::Diverged {
                            solver: SolverKind::Smm,
                            why,
                        })?;
                    report.hit_iteration_cap = true;
                    break;
                }
            }
            // Step 4: contacts outside the system that the impulses make approach.
            self.accumulate_solution();
            let mut grew = false;
            for l in 0..island.len() {
                let c = &self.prepared[l];
                if self.in_system[l] || !c.resolvable() {
                    continue;
                }
                let u0 = c.relative_velocity(bodies);
                let un_after = (u0 + delta_u(&self.dv, &self.dw, c)).dot(&c.n);
                // Round-off approach speeds (below tolerance × the largest approach speed
                // before the impact) do not count, nor resting ones (≤ the resting speed,
                // the contact pass's).
                if c.approaching(un_after, dt, grow_threshold) {
                    self.in_system[l] = true;
                    let target_n = target(c.n.dot(&u0));
                    self.rows.push(Row {
                        contact: l,
                        mode: initial_mode,
                        offset: 0,
                        u0,
                        target_n,
                        dual: [0.0; 3],
                    });
                    grew = true;
                }
            }
            if !grew {
                break;
            }
            growth_rounds += 1;
            if growth_rounds >= params.max_iterations {
                report.hit_iteration_cap = true;
                self.solve_or_release(params, report)
                    .map_err(|why| SolverError::Diverged {
                        solver: SolverKind::Smm,
                        why,
                    })?;
                self.accumulate_solution();
                break;
            }
        }

        // Energy safeguard (module doc): a solution that would gain kinetic energy is
        // scaled back to its most dissipative multiple.
        let s = self.dissipative_scale(bodies, params);
        let applied_in_full = s == 1.0;
        if s < 1.0 {
            report.scaled_back += 1;
            self.krylov.x.iter_mut().for_each(|x| *x *= s);
            for &k in &self.system_bodies {
                self.dv[k] *= s;
                self.dw[k] *= s;
            }
        }
        // Step 5: apply, book the energy of each impulse, trace.
        let mut impulses = Vec::with_capacity(if trace.is_some() { self.rows.len() } else { 0 });
        for row in &self.rows {
            let c = &self.prepared[row.contact];
            let p = row_impulse(c, row, &self.krylov.x);
            let u_after = row.u0 + delta_u(&self.dv, &self.dw, c);
            // ΔK = Σ p_i·(u_i⁻ + u_i⁺)/2, split into normal and tangential parts.
            let un0 = c.n.dot(&row.u0);
            let w_normal = p.dot(&c.n) * 0.5 * (un0 + u_after.dot(&c.n));
            let w_total = p.dot(&(0.5 * (row.u0 + u_after)));
            report.dissipated_restitution -= w_normal;
            report.dissipated_friction -= w_total - w_normal;
            report.impulses = report.impulses.saturating_add(1);
            if trace.is_some() {
                impulses.push((
                    self.order[island.start + row.contact].1,
                    p,
                    u_after.dot(&c.n),
                ));
            }
            self.in_system[row.contact] = false;
        }
        for &k in &self.system_bodies {
            bodies[k].velocity += self.dv[k];
            bodies[k].angular_velocity += self.dw[k];
        }
        if let Some(rows) = trace {
            let kinetic_energy = total_kinetic_energy(bodies);
            for (contact, p, normal_velocity) in impulses {
                rows.push(TraceRow {
                    iteration: rows.len() as u32,
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
        // A scaled-back solution does not meet the rows: what it leaves approaching is
        // not a new impact, and a further round would meet the same rows again.
        Ok(applied_in_full.then_some(grow_threshold))
    }

    /// The factor s ∈ [0, 1] the island's velocity changes (dv, dw) are scaled by so
    /// that they gain no kinetic energy beyond what the solve's tolerance allows: 1 when
    /// they do not, else the most dissipative multiple.
    ///
    /// K(s) = K₀ + a s + c s² summed over the island's bodies
    /// ([`kinetic_change_terms`], [`most_dissipative_multiple`]). What the solve's
    /// tolerance allows: every row j of a solution λ with residual r = b − Aλ ends at
    /// its target less r_j, so the work of the impulses (paper 000, eq. 16) is, for rows
    /// whose impulse and row directions agree (frictionless, sticking),
    /// ΔK = Σ_j λ_j (C_j u⁻ + target_j)/2 − ½ λᵀr: the rows' law (zero at e = 1, μ = 0,
    /// where u_n⁺ = −u_n⁻) plus the residual's −½ λᵀr (a sliding row adds its friction
    /// work, λ_j μ d·(u⁻ + u⁺)/2, to the law's part). A converged solve has
    /// ‖r‖ ≤ ε ‖b‖ (ε its stopping tolerance, [`stopping_tolerance`]), so its residual
    /// gains at most ½ ‖λ‖ ε ‖b‖ (Cauchy-Schwarz); only a gain beyond that, and beyond
    /// [`DISSIPATION_SLACK`] of the energy at stake, is the law's own and scaled back.
    fn dissipative_scale(&self, bodies: &[RigidBody], params: &super::SolverParams) -> f64 {
        let (mut k0, mut a, mut c) = (0.0, 0.0, 0.0);
        for &k in &self.system_bodies {
            let b = &bodies[k];
            if b.is_static() {
                continue;
            }
            let (ab, cb) = kinetic_change_terms(
                b,
                (&b.velocity, &b.angular_velocity),
                (&self.dv[k], &self.dw[k]),
            );
            k0 += b.kinetic_energy_translational() + b.kinetic_energy_rotational();
            a += ab;
            c += cb;
        }
        let (x, b) = (&self.krylov.x, &self.krylov.b);
        let b_norm = dot(b, b).sqrt();
        let residual_allowance =
            0.5 * dot(x, x).sqrt() * stopping_tolerance(params, b_norm) * b_norm;
        if a + c <= residual_allowance + DISSIPATION_SLACK * (k0 + c) {
            return 1.0;
        }
        most_dissipative_multiple(a, c)
    }

    /// Body velocity changes (into dv, dw) of the current solution λ.
    fn accumulate_solution(&mut self) {
        let mut op = Operator {
            unknowns: &self.unknowns,
            bodies: &mut self.bodies,
            damping: 0.0,
        };
        op.accumulate(&self.krylov.x, true);
        for (&k, (v, w)) in self
            .system_bodies
            .iter()
            .zip(self.bodies.dv.iter().zip(&self.bodies.dw))
        {
            self.dv[k] = *v;
            self.dw[k] = *w;
        }
    }
}

impl CollisionSolver for SmmSolver {
    fn kind(&self) -> SolverKind {
        SolverKind::Smm
    }

    fn own_parameters(&self) -> &'static [Param] {
        &[
            Param::Restitution,
            Param::Friction,
            Param::MaxIterations,
            Param::Tolerance,
            Param::RestVelocity,
            Param::ContactPass,
        ]
    }

    fn resolves_speculative_as_touching(&self) -> bool {
        true
    }

    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError> {
        let SolverContext {
            bodies,
            contacts,
            graph,
            impulses: _,
            params,
            dt,
            mut trace,
        } = ctx;
        let nb = bodies.len();
        self.dv.clear();
        self.dv.resize(nb, Vec3::zeros());
        self.dw.clear();
        self.dw.resize(nb, Vec3::zeros());
        self.slot.clear();
        self.slot.resize(nb, usize::MAX);
        self.system_bodies.clear();

        // Step 1: islands of touching dynamic bodies (`dynamics::graph`), as runs of
        // `order` with the same island number.
        self.order.clear();
        for (k, ids) in graph.islands().enumerate() {
            self.order.extend(ids.iter().map(|&ci| (k, ci)));
        }

        let mut report = SolverReport::default();
        let mut start = 0;
        while start < self.order.len() {
            let root = self.order[start].0;
            let mut end = start + 1;
            while end < self.order.len() && self.order[end].0 == root {
                end += 1;
            }
            self.resolve_island(
                bodies,
                contacts,
                start..end,
                params,
                dt,
                &mut report,
                trace.as_deref_mut(),
            )?;
            start = end;
        }
        Ok(report)
    }
}
