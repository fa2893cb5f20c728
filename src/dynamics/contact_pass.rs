//! Resolve contacts: the contact pass that makes piles come to rest, run by the world
//! after the collision solver (ETM, SQM, SMM or jolt). It follows Guendelman, Bridson
//! and Fedkiw (2003), "Nonconvex rigid bodies with stacking" (paper 000, ref. 54):
//! separate **collision** and **contact** passes.
//!
//! **Why.** Paper 000's methods resolve impacts; on a resting pile every step's gravity
//! kick makes every support contact "approach" at g h (0.016 m/s at h = 1/600), and a
//! sequential method then spends its increments propagating the pile's weight down one
//! layer per sweep (on the 1,080-sphere pile it hits the iteration cap; figures in
//! `docs/results/contact-pass.md`) while leaving small approach velocities that become
//! jitter and sinking. So:
//! - **collision pass** (the method): ETM, SQM and SMM resolve only approaches faster
//!   than `rest_velocity` (`SolverParams::resting_speed`); slower approaches get e = 0
//!   anyway ("restitution only above a velocity threshold") and are left to this pass.
//!   With `rest_velocity = 0` (paper 000's §7 scenes) the methods resolve everything and
//!   this pass only cleans up what they left approaching;
//! - **contact pass** (here), perfectly inelastic with Coulomb friction, in five steps:
//!
//! 1. **Levels** (Guendelman's contact graph): bodies resting on a static container or
//!    a static body (contact normal within 60° of `up`, the direction opposite to
//!    gravity: a wall does not support a column leaning on it) get level 0; a body
//!    touching a level-k body gets level k + 1 (breadth-first over the contacts). Groups
//!    resting on nothing static get no level (they go last).
//! 2. **Order**: contacts bottom up, by the higher level of their two bodies (a static
//!    side ranks below level 0; ties by contact index: deterministic).
//! 3. **Warm start** (Box2D/Rapier; only when `rest_velocity > 0`): each contact gets
//!    the accumulated impulse the same contact point (same pair, same point in a's body
//!    frame within 1 % of the lever arm) carried at the end of the last step, so a
//!    resting pile starts each step almost at its solution.
//! 4. **Projected Gauss-Seidel** sweeps in that order (at most [`PGS_SWEEPS`]), with
//!    accumulated impulses (Catto's sequential impulses): normal λ_n ≥ 0 targeting
//!    u_n⁺ = 0 (u_n⁺ = −gap/h for a speculative contact, gap > 0, which may close its gap
//!    in the step; the gap less what the last projection opened: `speculative_gap`),
//!    then the tangential impulse that stops the slip (Δλ_t = −K_tt⁻¹ u_t), or, when
//!    that leaves the cone |λ_t| ≤ μ λ_n, the cone's impulse nearest to it in K_tt's
//!    metric, which is opposite the slip it leaves (Coulomb with maximum dissipation,
//!    [`nearest_in_disk`]); optionally rolling and spinning resistance
//!    (`SolverParams::rolling_friction`, `spinning_friction`), angular impulses clamped
//!    to μ_r λ_n and μ_s λ_n. Accumulating lets a sweep take back an impulse an earlier
//!    one over-applied, which a one-way "push while approaching" sweep cannot (it
//!    launches bodies: jitter). Only contacts that approach (u_n < −tol) or were warm
//!    started take part, so contacts a converged solver left separating are not
//!    touched. The sweeps are momentum-conserving.
//! 5. **Shock propagation**: one last bottom-up sweep over what still approaches, with
//!    the lower-level body of each pair treated as infinitely heavy (left out of K), so
//!    a support's reaction cannot push the settled layers below back into the ground. It
//!    is a single sweep on purpose: iterated to convergence with frozen supports it
//!    diverges when two frozen bodies squeeze one between them (no finite impulse stops
//!    the approach).
//!
//! Then [`ContactPass::project`] applies paper 001's **position projection** (k_p,
//! eqs. 5.27-5.28, B.18) to what still overlaps, bottom up, for the methods that have
//! none of their own (all but jolt and MDP), over all of a body's contacts at once and
//! with rotation (Cline and Pai's post-stabilisation).
//!
//! Then the pass checks that it dissipated: its exact solution cannot gain kinetic energy,
//! and a result that did (an unconverged one, at high μ) is redone without the warm
//! start or scaled back ([`DISSIPATION_SLACK`]).
//!
//! Energy: the kinetic-energy change of the warm start and the sweeps, Πᵀ(w⁻ + w⁺)/2 for
//! the accumulated impulses Π and their velocities w at the start and end of the pass
//! (paper 000, eq. 16, summed over the contacts; `ContactPass::book_net_work`), is
//! booked, normal part as restitution and tangential part (and rolling/spinning) as
//! friction dissipation, with its sign; each shock-propagation impulse's change
//! P·(v⁻ + v⁺)/2 (v the moving body's point velocity when the other side is frozen) is
//! booked as it is applied. Freezing does not conserve momentum (the support absorbs the
//! reaction, as the ground would). Projection moves bodies without forces: its
//! potential-energy change shows in the ledger's residual.

use super::solver::prepared::PreparedContact;
use super::solver::{ContactFallback, SolverParams, SolverReport, total_kinetic_energy};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::dynamics::warm_start::{CachedImpulse, ImpulseCache, match_tolerance};
use crate::math::{Mat3, Quat, Vec3};

/// Scratch space of the pass (kept between steps to avoid allocation).
///
/// Of it, only the warm-start cache and the last projection's displacements carry over
/// to the next step; the rest is rebuilt before it is read. A clone (a saved state, the
/// app's timeline) copies those two and starts the rest empty, and continues exactly as
/// the original.
#[derive(Default)]
pub struct ContactPass {
    level: Vec<u32>,
    adjacency: Vec<Vec<usize>>,
    order: Vec<(u64, usize)>,
    queue: std::collections::VecDeque<usize>,
    rows: Vec<Row>,
    cache: ImpulseCache,
    projection: Vec<ProjectionRow>,
    /// Per body: the projection's translation Δx and rotation vector Δθ.
    displacement: Vec<(Vec3, Vec3)>,
    /// Per body: v and ω before the pass (see [`DISSIPATION_SLACK`]).
    saved: Vec<(Vec3, Vec3)>,
}

impl Clone for ContactPass {
    fn clone(&self) -> Self {
        ContactPass {
            cache: self.cache.clone(),
            displacement: self.displacement.clone(),
            ..Default::default()
        }
    }
}

/// One contact of the position projection ([`ContactPass::project`]).
#[derive(Clone)]
struct ProjectionRow {
    contact: usize,
    /// s*: the separation the contact must reach.
    target: f64,
    /// 1/(nᵀKn) with the frozen side left out.
    inv_knn: f64,
    /// m⁻¹ of each side (0 if frozen).
    ma: f64,
    mb: f64,
    /// I⁻¹ (r × n) of each side (0 if frozen).
    ja: Vec3,
    jb: Vec3,
    /// Accumulated position impulse (≥ 0).
    lambda: f64,
}

const NO_LEVEL: u32 = u32::MAX;

/// Resting contacts count as approaching when faster than this fraction of
/// `rest_velocity` (see [`ContactPass::run`]).
pub const REST_TOLERANCE: f64 = 1e-3;

/// Most sweeps of projected Gauss-Seidel per step (also capped by
/// `SolverParams::max_iterations`; they stop earlier once no update changes a contact
/// velocity by more than the tolerance); the warm start carries the rest of the
/// convergence across steps and the shock-propagation sweep removes what is left
/// approaching. Box2D's default of 8 is enough for its stacks, not for a 35 m pile of
/// 325 crosses (13 contact levels, long lever arms coupling friction to the normal):
/// at μ = 0.6 under ETM, 12-14 s after the drop, 59-158 crosses still moved by more
/// than 1 cm per second with 25 sweeps, 1-3 with 100.
pub const PGS_SWEEPS: u32 = 100;

/// How much kinetic energy, relative to its value before the pass, the contact pass may
/// gain to rounding before its result is rejected.
///
/// The pass is perfectly inelastic with Coulomb friction, and its exact solution never
/// gains energy: with P the contacts' impulses, u⁻ and u⁺ their relative velocities
/// before and after, and A the Delassus matrix (u⁺ = u⁻ + A P), summing paper 000's
/// eq. 16 over the contacts gives ΔK = Pᵀ(u⁻ + u⁺)/2 = Pᵀu⁺ − ½ PᵀAP, where
/// λ_n u_n⁺ = 0 (or λ_n ≥ 0 against u_n⁺ = −gap/h < 0 for a speculative contact),
/// λ_t·u_t⁺ ≤ 0 (friction opposes the slip it leaves) and PᵀAP ≥ 0: ΔK ≤ 0. An
/// unconverged pass can gain: at high μ on long-armed bodies (crosses at μ = 5) the
/// sweeps do not converge, the arms couple friction to the normal, and the warm start
/// carries impulses that grow step after step without bound (figures in
/// `docs/results/contact-pass.md`). So a pass that ends with
/// K > (1 + `DISSIPATION_SLACK`) K₀ is redone without the warm start, and if that one
/// gains too, scaled back to its most dissipative multiple
/// (`ContactPass::scale_back`); [`SolverReport::contact_fallback`] says which. When
/// neither triggers, the pass's result is its own, bit for bit.
pub const DISSIPATION_SLACK: f64 = 1e-9;

/// Most projected Gauss-Seidel sweeps of the position projection per step.
pub const PROJECTION_SWEEPS: u32 = 50;

impl ContactPass {
    /// Run the pass over `contacts` (friction μ = `params.friction`, at most
    /// min(`params.max_iterations`, [`PGS_SWEEPS`]) sweeps); adds its dissipation to
    /// `report`.
    ///
    /// A contact counts as approaching (and the sweeps stop when no update changes a
    /// contact velocity by more than) tol = max(`tolerance` × v_ref,
    /// [`REST_TOLERANCE`] × `rest_velocity`), v_ref the fastest approach at the start of
    /// the pass: Gauss-Seidel reaches an exact u_n ≥ 0 only geometrically. A resting
    /// contact left approaching at 10⁻³ of the rest velocity sinks by at most
    /// 10⁻³ `rest_velocity` h per step (0.17 µm at 0.1 m/s and h = 1/600 s), which the
    /// position projection removes, and a body moving at that speed has
    /// ½ m (10⁻⁴ m/s)² of kinetic energy, far below the settle criterion.
    pub fn run(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        params: &SolverParams,
        up: Vec3,
        dt: f64,
        report: &mut SolverReport,
    ) {
        let n = bodies.len();
        self.level.clear();
        self.level.resize(n, NO_LEVEL);
        self.adjacency.resize_with(n, Vec::new);
        for a in &mut self.adjacency {
            a.clear();
        }
        self.queue.clear();
        // 1. levels
        // A static side supports a body when the normal pushes it against gravity
        // (within 60° of `up`); any static contact does without gravity.
        let supports = |n: &Vec3| up == Vec3::zeros() || n.dot(&up) >= 0.5;
        for c in contacts {
            let b_static = c.b.is_none_or(|b| bodies[b].is_static());
            if b_static && !bodies[c.a].is_static() && supports(&c.normal) && self.level[c.a] != 0 {
                self.level[c.a] = 0;
                self.queue.push_back(c.a);
            } else if let Some(b) = c.b {
                if bodies[c.a].is_static()
                    && !bodies[b].is_static()
                    && supports(&-c.normal)
                    && self.level[b] != 0
                {
                    self.level[b] = 0;
                    self.queue.push_back(b);
                }
                if !bodies[c.a].is_static() && !bodies[b].is_static() {
                    self.adjacency[c.a].push(b);
                    self.adjacency[b].push(c.a);
                }
            }
        }
        while let Some(i) = self.queue.pop_front() {
            for k in 0..self.adjacency[i].len() {
                let j = self.adjacency[i][k];
                if self.level[j] == NO_LEVEL {
                    self.level[j] = self.level[i] + 1;
                    self.queue.push_back(j);
                }
            }
        }
        // 2. order: by the higher rank of the pair (the level being solved; the lower
        // side, a support or a static body, is frozen while it is solved).
        self.order.clear();
        for (k, c) in contacts.iter().enumerate() {
            let rb = c.b.map_or(0, |b| self.rank(bodies, b));
            self.order.push((self.rank(bodies, c.a).max(rb), k));
        }
        self.order.sort_unstable();

        // Approach tolerance (see the doc above).
        let mut v_ref: f64 = 0.0;
        self.rows.clear();
        let warm = params.rest_velocity > 0.0;
        // The last projection's displacements (none if it did not run since the last
        // pass, or the bodies changed): a gap it opened is not room to fall into.
        let last = std::mem::take(&mut self.displacement);
        let opened: &[(Vec3, Vec3)] = if last.len() == n { &last } else { &[] };
        for c in contacts {
            let mut p = PreparedContact::new(bodies, c);
            p.gap = speculative_gap(c, opened);
            v_ref = v_ref.max(-p.relative_velocity(bodies).dot(&p.n));
            self.rows.push(Row::new(p, bodies));
        }
        self.displacement = last;
        self.displacement.clear();
        let tol = (params.tolerance * v_ref).max(REST_TOLERANCE * params.rest_velocity);

        // 3-5, then the dissipation check (see `DISSIPATION_SLACK`).
        self.saved.clear();
        self.saved
            .extend(bodies.iter().map(|b| (b.velocity, b.angular_velocity)));
        let k0 = total_kinetic_energy(bodies);
        let booked = (
            report.dissipated_restitution,
            report.dissipated_friction,
            report.impulses,
        );
        let slack = DISSIPATION_SLACK * k0;
        self.solve_rows(bodies, contacts, params, dt, tol, warm, report);
        let mut scale = 1.0;
        if total_kinetic_energy(bodies) > k0 + slack {
            if warm {
                // The warm start carried an unconverged step's impulses: start cold.
                self.restore(bodies);
                (
                    report.dissipated_restitution,
                    report.dissipated_friction,
                    report.impulses,
                ) = booked;
                for row in &mut self.rows {
                    row.reset();
                }
                self.solve_rows(bodies, contacts, params, dt, tol, false, report);
                report.contact_fallback = ContactFallback::Cold;
            }
            if total_kinetic_energy(bodies) > k0 + slack {
                scale = self.scale_back(bodies);
                // The pass's net work, booked whole as friction (the normal/tangential
                // split of the sweeps' bookings no longer applies to the scaled sum).
                report.dissipated_restitution = booked.0;
                report.dissipated_friction = booked.1 + k0 - total_kinetic_energy(bodies);
                report.contact_fallback = ContactFallback::Scaled;
            }
        }
        // Remember the accumulated impulses (as applied) for the next warm start.
        self.cache.clear();
        if warm {
            for (c, row) in contacts.iter().zip(&self.rows) {
                if row.lambda_n > 0.0 && scale > 0.0 {
                    let body_frame = bodies[c.a].orientation.inverse() * c.r_a;
                    let pt = row.lambda_t.x * row.p.t1 + row.lambda_t.y * row.p.t2;
                    self.cache.push(
                        (c.a, c.b, c.container),
                        body_frame,
                        scale * row.lambda_n,
                        scale * pt,
                    );
                }
            }
        }
        self.cache.finish();
    }

    /// Steps 3-5 of the pass over the rows built by [`Self::run`]: the warm start (if
    /// `warm`), the projected Gauss-Seidel sweeps and the shock-propagation sweep.
    #[allow(clippy::too_many_arguments)]
    fn solve_rows(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        params: &SolverParams,
        dt: f64,
        tol: f64,
        warm: bool,
        report: &mut SolverReport,
    ) {
        let friction = params.friction;
        let max_sweeps = params.max_iterations;
        // 3. warm start
        if warm {
            for row in &mut self.rows {
                row.warm_start(bodies, &self.cache, friction, report);
            }
        }
        // 4. projected Gauss-Seidel sweeps over all contacts, bottom up
        for _ in 0..max_sweeps.min(PGS_SWEEPS) {
            report.contact_sweeps += 1;
            let mut change: f64 = 0.0;
            for &(_, k) in &self.order {
                change = change.max(self.rows[k].solve(bodies, friction, dt, tol, report));
                if params.rolling_friction > 0.0 || params.spinning_friction > 0.0 {
                    self.rows[k].resist_rotation(bodies, params);
                }
            }
            if change <= tol {
                break;
            }
        }
        self.book_net_work(bodies, report);
        // 5. one shock-propagation sweep, bottom up, lower side frozen
        for &(_, k) in &self.order {
            let c = &contacts[k];
            let un = self.rows[k].p.relative_velocity(bodies).dot(&c.normal);
            let gap = self.rows[k].p.gap;
            let floor = if gap > 0.0 { -gap / dt } else { 0.0 };
            if un >= floor - tol {
                continue;
            }
            let mut p = self.rows[k].p.clone();
            let mut moving = None;
            if let Some(b) = c.b {
                let (la, lb) = (self.rank(bodies, c.a), self.rank(bodies, b));
                if la < lb {
                    freeze_a(&mut p);
                    moving = Some((b, p.r_b, -1.0));
                } else if lb < la {
                    freeze_b(&mut p);
                    moving = Some((c.a, p.r_a, 1.0));
                }
            }
            let mut row = Row::new(p, bodies);
            row.moving = moving;
            row.book_each = true;
            row.solve(bodies, friction, dt, tol, report);
        }
    }

    /// Book the work of the warm start and the sweeps: the net work of each contact's
    /// accumulated impulses over the pass.
    ///
    /// All of them act through the same Jacobian J (positions do not move in the pass),
    /// so with Π the generalised impulses (λ_n, λ_t at each contact; the rolling and
    /// spinning angular impulses τ) and w = J v their velocities, v⁺ = v⁻ + M⁻¹JᵀΠ and
    /// ΔK = Πᵀ(w⁻ + w⁺)/2 exactly (paper 000, eq. 16, summed over the contacts). Its
    /// normal part λ_n n·(u⁻ + u⁺)/2 is booked as restitution, the rest as friction.
    /// Booking each increment instead gives the same sum, but at high μ, where the warm
    /// start applies large impulses and the sweeps take most of them back, the
    /// increments' normal and tangential parts cancel in their sum only, leaving two
    /// entries orders of magnitude larger than the net work (figures in
    /// `docs/results/contact-pass.md`).
    fn book_net_work(&self, bodies: &[RigidBody], report: &mut SolverReport) {
        for row in &self.rows {
            if !row.started {
                continue;
            }
            let p = &row.p;
            let u = 0.5 * (row.u_start + p.relative_velocity(bodies));
            let w = 0.5 * (row.w_start + relative_angular_velocity(p, bodies));
            let normal = row.lambda_n * p.n.dot(&u);
            let tangent = row.lambda_t.x * p.t1.dot(&u) + row.lambda_t.y * p.t2.dot(&u);
            let turning = (row.spin * p.n + row.roll).dot(&w);
            report.dissipated_restitution -= normal;
            report.dissipated_friction -= tangent + turning;
        }
    }

    /// Put back the velocities saved before the pass.
    fn restore(&self, bodies: &mut [RigidBody]) {
        for (b, (v, w)) in bodies.iter_mut().zip(&self.saved) {
            b.velocity = *v;
            b.angular_velocity = *w;
        }
    }

    /// Scale the pass's velocity change back to the most dissipative multiple of it and
    /// return the factor s ∈ [0, 1].
    ///
    /// With Δv, Δω each body's change since the saved v₀, ω₀, the kinetic energy of
    /// v₀ + s Δv, ω₀ + s Δω is K(s) = K₀ + a s + c s², with
    /// a = Σ (m v₀·Δv + ω₀ᵀ I Δω) and c = ½ Σ (m |Δv|² + Δωᵀ I Δω) ≥ 0. Its minimum
    /// over s ≥ 0 is at s* = −a / (2c) when a < 0, where K(s*) = K₀ − a²/(4c) ≤ K₀; when
    /// a ≥ 0 no multiple dissipates and s = 0 (the pass is undone). Called only when
    /// K(1) > K₀, i.e. a + c > 0, so s* < ½. Every impulse of the pass is scaled by
    /// the same s, which keeps λ_n ≥ 0 and |λ_t| ≤ μ λ_n.
    fn scale_back(&self, bodies: &mut [RigidBody]) -> f64 {
        let (mut a, mut c) = (0.0, 0.0);
        for (b, (v0, w0)) in bodies.iter().zip(&self.saved) {
            if b.is_static() {
                continue;
            }
            let (dv, dw) = (b.velocity - v0, b.angular_velocity - w0);
            let i_dw = b.inertia_world() * dw;
            a += b.mass * v0.dot(&dv) + w0.dot(&i_dw);
            c += 0.5 * (b.mass * dv.norm_squared() + dw.dot(&i_dw));
        }
        let s = if a < 0.0 && c > 0.0 {
            (-a / (2.0 * c)).min(1.0)
        } else {
            0.0
        };
        for (b, (v0, w0)) in bodies.iter_mut().zip(&self.saved) {
            if b.is_static() {
                continue;
            }
            b.velocity = v0 + s * (b.velocity - v0);
            b.angular_velocity = w0 + s * (b.angular_velocity - w0);
        }
        s
    }

    /// Position projection after the last [`Self::run`], over the same `contacts`.
    ///
    /// Paper 001's projection (eqs. 5.27-5.28, B.18) moves each overlapping pair apart
    /// along n by k_p × its overlap. Done pair by pair along one normal, by translation
    /// only, it cannot undo a wedge: a cross whose arm sits between two arms of its
    /// neighbours touches them at three normals about 120° apart, and each pair's push
    /// drives it into the others (measured: crosses kept 2.7-3.8 % of c overlap and never
    /// came to rest). So every contact's target is imposed jointly, with rotation, as
    /// Cline and Pai's post-stabilisation (2003) does: find position "impulses"
    /// λ_k ≥ 0 along n_k such that every contact's separation, linearised in the
    /// displacements,
    ///
    ///   s_k = gap_k + n_k·[(Δx_a + Δθ_a × r_a) − (Δx_b + Δθ_b × r_b)] ≥ s*_k,
    ///   s*_k = (1 − k_p) gap_k if gap_k < 0, else 0,
    ///
    /// with Δx = m⁻¹ Σ λ_k n_k and Δθ = I⁻¹ Σ r_k × λ_k n_k on each body (the same mass
    /// matrix as the velocity pass, paper 000 eq. 9, so a contact's own correction is
    /// (s*_k − s_k)/(n_kᵀ K_k n_k)). For a single contact of two spheres (r × n = 0) this
    /// is eq. 5.27 with the inverse-mass split of eq. B.19. Contacts that do not
    /// overlap (s*_k = 0) only keep the corrections from closing their gap. Solved by
    /// projected Gauss-Seidel over the velocity pass's bottom-up order with accumulated
    /// λ (at most [`PROJECTION_SWEEPS`] sweeps); as there, the lower-ranked side of a
    /// pair is frozen (projection does not push supports down into the floor); pairs of
    /// one rank share it by their masses and inertias. Bodies are then moved by Δx and
    /// turned by Δθ (q ← exp(Δθ/2) q).
    ///
    /// **Momentum.** Each body is moved by [`RigidBody::displace`]: it keeps its linear
    /// momentum and its angular momentum about every fixed point (its spin takes the
    /// change Δx × m v of its orbital moment), so the total P and L are unchanged to
    /// round-off. With v = 0 or Δx ∥ v (a resting pile) an isotropic body's ω is
    /// untouched.
    ///
    /// Returns the energy the projection added (J): the potential change −Σ m g·Δx in
    /// gravity `gravity` plus the rotational kinetic change of the spin update. It is
    /// artificial, and the world books it as the ledger's `projection` term.
    pub fn project(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        kp: f64,
        gravity: &Vec3,
    ) -> f64 {
        let n = bodies.len();
        self.displacement.clear();
        self.displacement.resize(n, (Vec3::zeros(), Vec3::zeros()));
        self.projection.clear();
        // Nothing overlaps (or no projection asked): no rows to build.
        let deepest = contacts.iter().fold(0.0_f64, |d, c| d.max(-c.gap));
        if deepest <= 0.0 || kp == 0.0 {
            return 0.0;
        }
        // Rows in the velocity pass's bottom-up order when it ran on these contacts (it
        // sorted every one of them), else in the contacts' order.
        let bottom_up = self.order.len() == contacts.len();
        for i in 0..contacts.len() {
            let k = if bottom_up { self.order[i].1 } else { i };
            let c = &contacts[k];
            let (ra, rb) = (
                self.rank(bodies, c.a),
                c.b.map_or(0, |b| self.rank(bodies, b)),
            );
            // The velocity pass's prepared data for this contact, if it ran on them.
            let fresh;
            let p = match self.rows.get(k) {
                Some(row) if row.p.a == c.a && row.p.b == c.b => &row.p,
                _ => {
                    fresh = PreparedContact::new(bodies, c);
                    &fresh
                }
            };
            let (wa, wb) = if ra > rb {
                (1.0, 0.0)
            } else if rb > ra {
                (0.0, 1.0)
            } else {
                (1.0, 1.0)
            };
            let (ma, mb) = (wa * p.inv_mass_a, wb * p.inv_mass_b);
            let ja = wa * (p.inv_inertia_a * p.r_a.cross(&p.n));
            let jb = wb * (p.inv_inertia_b * p.r_b.cross(&p.n));
            let knn = ma + mb + p.r_a.cross(&p.n).dot(&ja) + p.r_b.cross(&p.n).dot(&jb);
            if knn <= 0.0 {
                continue;
            }
            self.projection.push(ProjectionRow {
                contact: k,
                target: if c.gap < 0.0 { (1.0 - kp) * c.gap } else { 0.0 },
                inv_knn: 1.0 / knn,
                ma,
                mb,
                ja,
                jb,
                lambda: 0.0,
            });
        }
        // Stop when no sweep changes a separation by more than 10⁻³ of the correction
        // asked of the deepest contact.
        let tol = 1e-3 * kp * deepest;
        for _ in 0..PROJECTION_SWEEPS {
            let mut change: f64 = 0.0;
            for row in &mut self.projection {
                let c = &contacts[row.contact];
                let (oa, ob) = opening(c, &self.displacement);
                let s = c.gap + oa - ob;
                let lambda = (row.lambda + (row.target - s) * row.inv_knn).max(0.0);
                let dl = lambda - row.lambda;
                if dl == 0.0 {
                    continue;
                }
                row.lambda = lambda;
                change = change.max((dl / row.inv_knn).abs());
                let d = &mut self.displacement[c.a];
                d.0 += dl * row.ma * c.normal;
                d.1 += dl * row.ja;
                if let Some(b) = c.b {
                    let d = &mut self.displacement[b];
                    d.0 -= dl * row.mb * c.normal;
                    d.1 -= dl * row.jb;
                }
            }
            if change <= tol {
                break;
            }
        }
        let mut work = 0.0;
        for (b, (dx, dtheta)) in bodies.iter_mut().zip(&self.displacement) {
            if b.is_static() || (dx == &Vec3::zeros() && dtheta == &Vec3::zeros()) {
                continue;
            }
            let q = Quat::new_normalize(
                (crate::dynamics::rotation::quat_exp(&(0.5 * dtheta)) * b.orientation).into_inner(),
            );
            work += b.displace(dx, q) - b.mass * gravity.dot(dx);
        }
        work
    }

    /// Rank of body `i` in the bottom-up order: 0 for a static body, level + 1 for a
    /// dynamic one (u64::MAX for a group touching nothing static).
    fn rank(&self, bodies: &[RigidBody], i: usize) -> u64 {
        let level = self.level.get(i).copied().unwrap_or(NO_LEVEL);
        if bodies[i].is_static() {
            0
        } else if level == NO_LEVEL {
            u64::MAX
        } else {
            u64::from(level) + 1
        }
    }
}

/// The gap a speculative contact may close in this step's velocity pass: its detected
/// gap less what the last position projection opened it by.
///
/// A speculative contact (gap g > 0) lets the bodies approach at up to g/h, the speed
/// that closes the gap within the step. That is right for a gap the bodies left
/// themselves, not for one the projection made between the passes. A body wedged
/// between neighbours it overlaps is pushed out of them by the projection, each step,
/// in the one direction left free: off its support. Read as room to fall into, that gap
/// lets the velocity pass keep the body falling at (projection's push)/h, and the drift
/// then brings it back to where it was: the body stands still while its velocity grows
/// under gravity, and its neighbours sink into it (seen on `repose_crosses`; figures in
/// `docs/results/contact-pass.md`). So the gap
/// opened, o = n·[(Δx_a + Δθ_a × r_a) − (Δx_b + Δθ_b × r_b)] with the last projection's
/// displacements (see [`ContactPass::project`]) when it is positive, is taken off:
/// g_eff = max(g − max(o, 0), 0). Overlapping contacts (g ≤ 0) are unchanged; with no
/// projection in the last step, g_eff = g.
fn speculative_gap(c: &Contact, opened: &[(Vec3, Vec3)]) -> f64 {
    if c.gap <= 0.0 || opened.is_empty() {
        return c.gap;
    }
    let (oa, ob) = opening(c, opened);
    (c.gap - (oa - ob).max(0.0)).max(0.0)
}

/// How far the per-body displacements (Δx, Δθ) open contact `c`, linearised, as the
/// two sides' terms: n·(Δx_a + Δθ_a × r_a) and n·(Δx_b + Δθ_b × r_b) (0 for a static
/// side); the opening is their difference (negative: they close it).
fn opening(c: &Contact, displacement: &[(Vec3, Vec3)]) -> (f64, f64) {
    let (da, ta) = displacement[c.a];
    let oa = c.normal.dot(&(da + ta.cross(&c.r_a)));
    let ob = c.b.map_or(0.0, |b| {
        let (db, tb) = displacement[b];
        c.normal.dot(&(db + tb.cross(&c.r_b)))
    });
    (oa, ob)
}

/// The point of the disk |x| ≤ r nearest to `target` x* in the metric of the symmetric
/// positive definite 2 × 2 matrix K: argmin (x − x*)ᵀ K (x − x*) subject to |x| ≤ r.
///
/// It is the exact update of one contact's friction row when the Coulomb cone is
/// active. With the other rows held, an accumulated tangential impulse x leaves the slip
/// u_t⁺ = u_t + K_tt (x − λ_t) = K_tt (x − x*), x* = λ_t − K_tt⁻¹ u_t being the impulse
/// that stops it. The KKT conditions of the problem, K (x − x*) + γ x = 0 with γ ≥ 0 and
/// |x| = r, say x = −u_t⁺/γ: the friction impulse is exactly opposite the slip it
/// leaves, Coulomb's law with the maximum-dissipation principle (the law of paper 003,
/// here for one contact at a time). Scaling x* onto the circle, x* r/|x*| (Catto's
/// sequential impulses), keeps x*'s direction instead; that is the same only when K_tt
/// is isotropic (sphere contacts, r ∥ n). At a contact off the line through the centre
/// of mass K_tt is not, and the friction then leans sideways: a cube sliding on a face
/// at μ = 0.2 decelerated at 0.187 g instead of 0.2 g.
///
/// x(γ) = (K + γ I)⁻¹ K x*, and γ solves the secular equation 1/|x(γ)| = 1/r, whose
/// left side is concave and increasing in γ: Newton's method from any γ₀ below the
/// root climbs to it from below without overshooting (Moré and Sorensen, 1983). γ₀ is
/// the lower bound |K x*|/r − κ_max (or 0), which is nearly the root when K is nearly
/// isotropic. The result is scaled onto the circle exactly.
pub fn nearest_in_disk(
    k: &nalgebra::Matrix2<f64>,
    target: &nalgebra::Vector2<f64>,
    r: f64,
) -> nalgebra::Vector2<f64> {
    let norm = target.norm();
    if norm <= r {
        return *target;
    }
    if r <= 0.0 {
        return nalgebra::Vector2::zeros();
    }
    let radial = target * (r / norm);
    // Isotropic K (to rounding): the radial scaling is the answer.
    let kx = k * target;
    let along = kx.dot(target) / (norm * norm);
    if (kx - along * target).norm() <= 1e-12 * kx.norm() {
        return radial;
    }
    // Start from a lower bound of the root: |x(γ)| ≥ |K x*| / (κ_max + γ), κ_max the
    // larger eigenvalue of K, so |x(γ₀)| ≥ r at γ₀ = |K x*|/r − κ_max (when positive)
    // and Newton still climbs from below; for a nearly isotropic K, γ₀ is nearly the
    // root.
    let (a, b, d) = (k[(0, 0)], 0.5 * (k[(0, 1)] + k[(1, 0)]), k[(1, 1)]);
    let kappa_max = 0.5 * (a + d) + (0.25 * (a - d) * (a - d) + b * b).sqrt();
    let mut gamma = (kx.norm() / r - kappa_max).max(0.0);
    let mut x = *target;
    for _ in 0..50 {
        let shifted = k + nalgebra::Matrix2::identity() * gamma;
        let Some(inv) = shifted.try_inverse() else {
            return radial;
        };
        x = inv * kx;
        let nx = x.norm();
        if !(nx.is_finite() && nx > 0.0) {
            return radial;
        }
        if (nx - r).abs() <= 1e-12 * r {
            break;
        }
        // ψ(γ) = 1/|x(γ)|, ψ'(γ) = xᵀ (K + γI)⁻¹ x / |x|³.
        let slope = x.dot(&(inv * x)) / (nx * nx * nx);
        if !(slope.is_finite() && slope > 0.0) {
            return radial;
        }
        gamma += (1.0 / r - 1.0 / nx) / slope;
    }
    x * (r / x.norm())
}

/// One contact of the pass: its prepared data and accumulated impulses.
#[derive(Clone)]
struct Row {
    p: PreparedContact,
    /// 1/(nᵀKn), 0 if the contact cannot take an impulse.
    normal_mass: f64,
    /// K_tt, the tangent-plane block of K in (t₁, t₂), and its inverse if invertible.
    tangent_k: nalgebra::Matrix2<f64>,
    tangent_mass: Option<nalgebra::Matrix2<f64>>,
    /// Whether the contact takes part (it approached, or was warm started).
    started: bool,
    lambda_n: f64,
    lambda_t: nalgebra::Vector2<f64>,
    /// Accumulated spinning (about n) and rolling (tangent plane) angular impulses.
    spin: f64,
    roll: Vec3,
    /// (body, lever arm, sign of P on it) of the single moving side, if one is frozen.
    moving: Option<(usize, Vec3, f64)>,
    /// Relative velocity and relative angular velocity ω_a − ω_b at the start of the
    /// pass (for [`ContactPass::book_net_work`]).
    u_start: Vec3,
    w_start: Vec3,
    /// Book each impulse's work as it is applied (the shock-propagation rows), instead
    /// of the net work of the accumulated impulses at the end of the sweeps.
    book_each: bool,
    /// K t₁, K t₂ and (t₁·Kn, t₂·Kn), copied next to the row so that a sweep does no
    /// 3 × 3 product (Box2D keeps its rows' effective masses the same way).
    k_t: [Vec3; 2],
    kn_t: nalgebra::Vector2<f64>,
    /// I⁻¹ (r × d) of side a and of side b for d = n, t₁, t₂: the change of ω per unit
    /// impulse along d (zero for a static or frozen side).
    turn_a: [Vec3; 3],
    turn_b: [Vec3; 3],
}

impl Row {
    fn new(p: PreparedContact, bodies: &[RigidBody]) -> Self {
        let knn = p.n.dot(&(p.k * p.n));
        let (t1, t2) = (p.t1, p.t2);
        let ktt = nalgebra::Matrix2::new(
            t1.dot(&(p.k * t1)),
            t1.dot(&(p.k * t2)),
            t2.dot(&(p.k * t1)),
            t2.dot(&(p.k * t2)),
        );
        let usable = knn > 0.0 && knn.is_finite();
        let k_n = p.k * p.n;
        let dirs = [p.n, t1, t2];
        let turn_a = dirs.map(|d| p.inv_inertia_a * p.r_a.cross(&d));
        let turn_b = dirs.map(|d| p.inv_inertia_b * p.r_b.cross(&d));
        Row {
            k_t: [p.k * t1, p.k * t2],
            kn_t: nalgebra::Vector2::new(t1.dot(&k_n), t2.dot(&k_n)),
            turn_a,
            turn_b,
            normal_mass: if usable { 1.0 / knn } else { 0.0 },
            tangent_mass: ktt
                .try_inverse()
                .filter(|m| m.iter().all(|x| x.is_finite())),
            tangent_k: ktt,
            started: false,
            lambda_n: 0.0,
            lambda_t: nalgebra::Vector2::zeros(),
            spin: 0.0,
            roll: Vec3::zeros(),
            moving: None,
            u_start: p.relative_velocity(bodies),
            w_start: relative_angular_velocity(&p, bodies),
            book_each: false,
            p,
        }
    }

    /// Forget the accumulated impulses (for a pass that starts again).
    fn reset(&mut self) {
        self.started = false;
        self.lambda_n = 0.0;
        self.lambda_t = nalgebra::Vector2::zeros();
        self.spin = 0.0;
        self.roll = Vec3::zeros();
    }

    /// Apply the impulse the same contact point carried at the end of the last step
    /// (matched by pair and by position in a's body frame, within 1 % of the lever arm).
    fn warm_start(
        &mut self,
        bodies: &mut [RigidBody],
        cache: &ImpulseCache,
        mu: f64,
        report: &mut SolverReport,
    ) {
        if self.normal_mass == 0.0 {
            return;
        }
        let p = &self.p;
        let here = bodies[p.a].orientation.inverse() * p.r_a;
        let Some(&CachedImpulse {
            normal: ln,
            tangent: pt,
            ..
        }) = cache.find((p.a, p.b, p.container), &here, match_tolerance(&p.r_a))
        else {
            return;
        };
        let mut lt = nalgebra::Vector2::new(pt.dot(&p.t1), pt.dot(&p.t2));
        if mu == 0.0 {
            lt = nalgebra::Vector2::zeros();
        } else if lt.norm() > mu * ln {
            lt *= mu * ln / lt.norm();
        }
        self.started = true;
        self.lambda_n = ln;
        self.lambda_t = lt;
        let impulse = ln * p.n + lt.x * p.t1 + lt.y * p.t2;
        self.apply(bodies, &impulse, report);
    }

    /// One projected Gauss-Seidel update (see the module doc); returns the largest
    /// velocity change it made at the contact (m/s).
    fn solve(
        &mut self,
        bodies: &mut [RigidBody],
        mu: f64,
        dt: f64,
        tol: f64,
        report: &mut SolverReport,
    ) -> f64 {
        if self.normal_mass == 0.0 {
            return 0.0;
        }
        let p = &self.p;
        let u = p.relative_velocity(bodies);
        let un = u.dot(&p.n);
        // Speculative contact: it may close its gap within the step, u_n ≥ −gap/h.
        let floor = if p.gap > 0.0 { -p.gap / dt } else { 0.0 };
        if !self.started {
            if un >= floor - tol {
                return 0.0;
            }
            self.started = true;
        }
        // Normal row: λ_n ≥ 0, u_n⁺ = floor while pushing.
        let new_n = (self.lambda_n + self.normal_mass * (floor - un)).max(0.0);
        let dn = new_n - self.lambda_n;
        self.lambda_n = new_n;
        let mut change = (dn / self.normal_mass).abs();
        // Tangent rows: stop the slip, |λ_t| ≤ μ λ_n; if the cone does not allow it,
        // the nearest impulse of the cone in K_tt's metric (friction opposite the slip
        // it leaves: see `nearest_in_disk`). The slip after the normal impulse is
        // u_t + dn (t·K n).
        let mut dt = nalgebra::Vector2::zeros();
        if mu > 0.0
            && let Some(m) = self.tangent_mass
        {
            let ut = nalgebra::Vector2::new(u.dot(&p.t1), u.dot(&p.t2)) + dn * self.kn_t;
            let mut new_t = self.lambda_t - m * ut;
            let limit = mu * self.lambda_n;
            if new_t.norm_squared() > limit * limit {
                new_t = nearest_in_disk(&self.tangent_k, &new_t, limit);
            }
            dt = new_t - self.lambda_t;
            self.lambda_t = new_t;
            change = change.max((dt.x * self.k_t[0] + dt.y * self.k_t[1]).norm());
        }
        if dn == 0.0 && dt == nalgebra::Vector2::zeros() {
            return 0.0;
        }
        if self.book_each {
            let impulse = dn * p.n + dt.x * p.t1 + dt.y * p.t2;
            self.apply(bodies, &impulse, report);
        } else {
            self.apply_components(bodies, dn, dt, report);
        }
        change
    }

    /// Apply the impulse dn n + dt₁ t₁ + dt₂ t₂ (on a; its opposite on b) through the
    /// row's copied I⁻¹ (r × d), without booking (the sweeps book their net work).
    fn apply_components(
        &self,
        bodies: &mut [RigidBody],
        dn: f64,
        dt: nalgebra::Vector2<f64>,
        report: &mut SolverReport,
    ) {
        let p = &self.p;
        report.impulses += 1;
        let impulse = dn * p.n + dt.x * p.t1 + dt.y * p.t2;
        let ba = &mut bodies[p.a];
        ba.velocity += impulse * p.inv_mass_a;
        ba.angular_velocity += dn * self.turn_a[0] + dt.x * self.turn_a[1] + dt.y * self.turn_a[2];
        if let Some(b) = p.b {
            let bb = &mut bodies[b];
            bb.velocity -= impulse * p.inv_mass_b;
            bb.angular_velocity -=
                dn * self.turn_b[0] + dt.x * self.turn_b[1] + dt.y * self.turn_b[2];
        }
    }

    /// Rolling and spinning resistance (see `SolverParams::rolling_friction`): angular
    /// impulses τ on a (−τ on b) that stop the relative rotation, clamped to
    /// |τ_n| ≤ μ_s λ_n about the normal and |τ_t| ≤ μ_r λ_n about the tangent plane.
    /// Their work τ·(ω_rel⁻ + ω_rel⁺)/2 is booked as friction dissipation, with the
    /// pass's net work ([`ContactPass::book_net_work`]).
    fn resist_rotation(&mut self, bodies: &mut [RigidBody], params: &SolverParams) {
        if self.lambda_n <= 0.0 {
            return;
        }
        let p = &self.p;
        let inv = p.inv_inertia_a + p.inv_inertia_b;
        let w = relative_angular_velocity(p, bodies);
        let n = p.n;
        let mut tau = Vec3::zeros();
        // Spin about n.
        let kn = n.dot(&(inv * n));
        if params.spinning_friction > 0.0 && kn > 0.0 {
            let limit = params.spinning_friction * self.lambda_n;
            let new = (self.spin - n.dot(&w) / kn).clamp(-limit, limit);
            tau += (new - self.spin) * n;
            self.spin = new;
        }
        // Rolling about the tangent plane.
        let wt = w - n.dot(&w) * n;
        let slip = wt.norm();
        if params.rolling_friction > 0.0 && slip > 0.0 {
            let d = wt / slip;
            let kt = d.dot(&(inv * d));
            if kt > 0.0 {
                let limit = params.rolling_friction * self.lambda_n;
                let mut new = self.roll - wt / kt;
                if new.norm() > limit {
                    new *= limit / new.norm();
                }
                tau += new - self.roll;
                self.roll = new;
            }
        }
        if tau == Vec3::zeros() {
            return;
        }
        bodies[p.a].angular_velocity += p.inv_inertia_a * tau;
        if let Some(b) = p.b {
            bodies[b].angular_velocity -= p.inv_inertia_b * tau;
        }
    }

    /// Apply `impulse` and book its work against the moving side's point velocity (one
    /// side frozen) or the relative velocity: ΔK = P·(v⁻ + v⁺)/2 (paper 000, eq. 16).
    fn apply(&self, bodies: &mut [RigidBody], impulse: &Vec3, report: &mut SolverReport) {
        let p = &self.p;
        report.impulses += 1;
        if !self.book_each {
            p.apply_impulse(bodies, impulse);
            return;
        }
        let moving = self.moving;
        let point_velocity = |bodies: &[RigidBody]| match moving {
            Some((i, r, _)) => bodies[i].velocity + bodies[i].angular_velocity.cross(&r),
            None => p.relative_velocity(bodies),
        };
        let sign = moving.map_or(1.0, |m| m.2);
        let v_before = point_velocity(bodies);
        p.apply_impulse(bodies, impulse);
        // The moving point's velocity changes by K (sign P) (the row's K has the frozen
        // side left out), so the mean of before and after is v⁻ + ½ K (sign P).
        let pw = sign * impulse;
        let pn = pw.dot(&p.n) * p.n;
        let avg = v_before + 0.5 * (p.k * pw);
        let w_normal = pn.dot(&avg);
        let w_total = pw.dot(&avg);
        report.dissipated_restitution -= w_normal;
        report.dissipated_friction -= w_total - w_normal;
    }
}

/// ω_a − ω_b of a contact's bodies (ω_b = 0 for a container).
fn relative_angular_velocity(p: &PreparedContact, bodies: &[RigidBody]) -> Vec3 {
    bodies[p.a].angular_velocity - p.b.map_or(Vec3::zeros(), |b| bodies[b].angular_velocity)
}

/// Leave body a out of the contact's collision matrix (treat it as infinitely heavy).
fn freeze_a(p: &mut PreparedContact) {
    p.inv_mass_a = 0.0;
    p.inv_inertia_a = Mat3::zeros();
    let rb = crate::math::skew(&p.r_b);
    p.k = Mat3::identity() * p.inv_mass_b - rb * p.inv_inertia_b * rb;
}

/// Leave body b out of the contact's collision matrix (treat it as infinitely heavy).
fn freeze_b(p: &mut PreparedContact) {
    p.inv_mass_b = 0.0;
    p.inv_inertia_b = Mat3::zeros();
    let ra = crate::math::skew(&p.r_a);
    p.k = Mat3::identity() * p.inv_mass_a - ra * p.inv_inertia_a * ra;
}

/// The part of the pass that carries over to the next step (see [`ContactPass`]): a
/// saved state writes it and a loaded one puts it back (`scene::save`).
impl ContactPass {
    /// The warm-start impulses and the last projection's per-body displacements (Δx, Δθ;
    /// empty, or one per body of the world the pass last ran on).
    pub fn warm_state(&self) -> (&ImpulseCache, &[(Vec3, Vec3)]) {
        (&self.cache, &self.displacement)
    }

    /// Replace what [`Self::warm_state`] returns.
    pub fn set_warm_state(&mut self, cache: ImpulseCache, displacement: Vec<(Vec3, Vec3)>) {
        self.cache = cache;
        self.displacement = displacement;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::container::Container;
    use crate::dynamics::solver::SolverKind;
    use crate::shapes::Shape;
    use crate::world::World;

    use nalgebra::{Matrix2, Vector2};

    #[test]
    fn nearest_in_disk_scales_radially_for_an_isotropic_metric_and_keeps_inner_points() {
        let k = Matrix2::identity() * 3.0;
        let x = nearest_in_disk(&k, &Vector2::new(3.0, 4.0), 2.0);
        assert!((x - Vector2::new(1.2, 1.6)).norm() < 1e-15, "{x:?}");
        let inside = Vector2::new(0.3, -0.4);
        assert_eq!(nearest_in_disk(&k, &inside, 2.0), inside);
        assert_eq!(nearest_in_disk(&k, &inside, 0.0), Vector2::zeros());
    }

    /// Against the KKT conditions and a brute-force search of the circle, on metrics up
    /// to 10⁴ : 1 anisotropic (a contact far off the line of the centre of mass).
    #[test]
    fn nearest_in_disk_opposes_the_slip_it_leaves_and_is_the_minimum() {
        for (i, (a, b, d)) in [
            (1.0, 0.0, 4.0),
            (2.0, 0.9, 1.0),
            (1.0, -0.999, 1.0),
            (1e4, 3.0, 1.0),
        ]
        .into_iter()
        .enumerate()
        {
            let k = Matrix2::new(a, b, b, d);
            for target in [
                Vector2::new(5.0, 1.0),
                Vector2::new(-0.3, 2.0),
                Vector2::new(0.7, -0.7),
            ] {
                let r = 0.4 * target.norm();
                let x = nearest_in_disk(&k, &target, r);
                assert!(
                    (x.norm() - r).abs() < 1e-12 * r,
                    "case {i}: |x| = {}, r = {r}",
                    x.norm()
                );
                // The slip left, K (x − x*), is opposite x.
                let slip = k * (x - target);
                let cross = slip.x * x.y - slip.y * x.x;
                assert!(
                    cross.abs() < 1e-9 * slip.norm() * r && slip.dot(&x) < 0.0,
                    "case {i}: slip {slip:?} not opposite x {x:?}"
                );
                let cost = |y: Vector2<f64>| (y - target).dot(&(k * (y - target)));
                let best = (0..100_000)
                    .map(|j| {
                        let phi = j as f64 * std::f64::consts::TAU / 100_000.0;
                        cost(Vector2::new(r * phi.cos(), r * phi.sin()))
                    })
                    .fold(f64::INFINITY, f64::min);
                assert!(
                    cost(x) <= best * (1.0 + 1e-9),
                    "case {i}: {} > {best}",
                    cost(x)
                );
            }
        }
    }

    /// A 1 m cube in a 4 m box (walls on), at `position` turned by `orientation`.
    fn cube_in_box(position: Vec3, orientation: Quat) -> World {
        let mut w = World::new(
            Vec3::new(0.0, 0.0, -9.81),
            1.0 / 600.0,
            SolverKind::Sqm,
            SolverParams::default(),
        )
        .unwrap();
        w.add_container(Container::Box {
            center: Vec3::zeros(),
            half_size: [2.0, 2.0],
            height: 4.0,
            walls: [true; 4],
            dividers: vec![],
        });
        let shape = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        };
        w.add_body(RigidBody::new(&shape, 1000.0, position, orientation));
        w
    }

    /// Project once with k_p and return (gaps before, gaps after), matched by contact
    /// order (the same features are found again after a small move).
    fn project_once(w: &mut World, kp: f64) -> (Vec<f64>, Vec<f64>) {
        let before: Vec<Contact> = w.detect().to_vec();
        ContactPass::default().project(&mut w.bodies, &before, kp, &Vec3::zeros());
        let after: Vec<f64> = w.detect().iter().map(|c| c.gap).collect();
        (before.iter().map(|c| c.gap).collect(), after)
    }

    /// The sweeps stop once no update changes a separation by more than 10⁻³ k_p of
    /// the deepest overlap: what a test may ask of the solution (with a factor 2).
    fn sweep_tolerance(kp: f64, deepest: f64) -> f64 {
        2e-3 * kp * deepest
    }

    /// Wedged in the corner of the box, 2 cm into the floor and 3 cm into the −x wall:
    /// every contact leaves by k_p of its overlap, s = (1 − k_p) gap. Moving along the
    /// deepest normal only (a per-pair projection) would leave the floor overlap as it
    /// is.
    #[test]
    fn a_cube_wedged_in_a_corner_leaves_both_faces() {
        let mut w = cube_in_box(Vec3::new(-1.53, 0.0, 0.48), Quat::identity());
        let (before, after) = project_once(&mut w, 0.2);
        assert_eq!(before.len(), 8, "4 floor and 4 wall corners: {before:?}");
        assert_eq!(after.len(), before.len());
        let tol = sweep_tolerance(0.2, 0.03);
        for (g0, g1) in before.iter().zip(&after) {
            assert!(*g0 < 0.0);
            assert!(
                (g1 - 0.8 * g0).abs() < tol,
                "gap {g0} -> {g1}, want {}",
                0.8 * g0
            );
        }
        // Translation by (+0.2 × 3 cm, 0, +0.2 × 2 cm); no turn to speak of.
        let b = &w.bodies[0];
        assert!((b.position - Vec3::new(-1.524, 0.0, 0.484)).norm() < tol);
        assert!(b.orientation.angle() < tol);
    }

    /// Tilted by 0.1 rad about y, 2 cm into the floor: only its lowest edge overlaps
    /// (two corners). The projection lifts and turns it (the least motion in the mass
    /// metric, K of paper 000 eq. 9), and both corners reach s = (1 − k_p) gap to second
    /// order in the turn Δθ (a corner at r moves by (R − 1) r = Δθ × r + O(½ Δθ² r)).
    #[test]
    fn a_tilted_cube_is_lifted_and_turned_at_its_lowest_edge() {
        let tilt = 0.1_f64;
        let q = Quat::from_axis_angle(&Vec3::y_axis(), tilt);
        // Lowest corner height above the centre: −(0.5 cos θ + 0.5 sin θ).
        let low = 0.5 * (tilt.cos() + tilt.sin());
        let mut w = cube_in_box(Vec3::new(0.0, 0.0, low - 0.02), q);
        let (before, after) = project_once(&mut w, 0.3);
        assert_eq!(before.len(), 2, "{before:?}");
        // It turned (towards lying flat: the lever arm of the edge is off-centre).
        let turned = w.bodies[0].orientation.angle_to(&q);
        assert!(turned > 1e-4, "turned by {turned} rad");
        let corner = 0.75_f64.sqrt();
        let tol = sweep_tolerance(0.3, 0.02) + turned * turned * corner;
        for (g0, g1) in before.iter().zip(&after) {
            assert!((g0 + 0.02).abs() < 1e-9, "{g0}");
            assert!(
                (g1 - 0.7 * g0).abs() < tol,
                "gap {g0} -> {g1}, want {}",
                0.7 * g0
            );
        }
    }

    /// A contact that does not overlap (gap > 0) only keeps the others' corrections
    /// from closing it: a cube 1 cm into the floor and 1 mm clear of the −x wall moves
    /// up and does not reach the wall.
    #[test]
    fn projection_does_not_close_a_clear_gap() {
        let mut w = cube_in_box(Vec3::new(-1.499 + 0.0, 0.0, 0.49), Quat::identity());
        let (before, after) = project_once(&mut w, 0.5);
        assert!(before.iter().any(|g| *g > 0.0), "{before:?}");
        for (g0, g1) in before.iter().zip(&after) {
            let want = if *g0 < 0.0 { 0.5 * g0 } else { *g0 };
            let tol = sweep_tolerance(0.5, 0.01);
            assert!((g1 - want).abs() < tol, "gap {g0} -> {g1}, want {want}");
        }
    }

    /// A contact of body 0 with a static side, at offset `r` from its centre.
    fn static_contact(bodies: &[RigidBody], r: Vec3, normal: Vec3, gap: f64) -> Contact {
        let p = bodies[0].position + r;
        crate::collision::make_contact(bodies, 0, None, p, p, normal, gap)
    }

    /// The ghost-velocity loop [`speculative_gap`] breaks. A 1 m cube is pushed out of
    /// a wall tilted 45° (normal n₁ up and to +x, 2 cm deep) by the projection, which
    /// lifts it by Δz. Next step a support below it is found Δz away, the cube falling
    /// at Δz/h. With the projection's opening taken off, the
    /// velocity pass stops the fall (u_n⁺ = 0); read as free space it would let the cube
    /// fall back where it was, at Δz/h, step after step, its velocity growing under
    /// gravity while it stands still. A gap the projection did not make (a fresh pass)
    /// still lets the cube land within the step.
    #[test]
    fn a_gap_the_projection_opened_is_not_room_to_fall_into() {
        let dt = 1.0 / 600.0;
        let shape = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        };
        let alpha = 45f64.to_radians();
        let n1 = Vec3::new(alpha.cos(), 0.0, alpha.sin());
        let cube = || {
            vec![RigidBody::new(
                &shape,
                1000.0,
                Vec3::new(0.0, 0.0, 1.0),
                Quat::identity(),
            )]
        };
        // The projection: out of the tilted wall, through the cube's −x face centre.
        let mut projected = cube();
        let wall = static_contact(&projected, Vec3::new(-0.5, 0.0, 0.0), n1, -0.02);
        let mut pass = ContactPass::default();
        pass.project(&mut projected, &[wall], 0.2, &Vec3::zeros());
        let lift = projected[0].position.z - 1.0;
        // k_p × 2 cm = 4 mm along n₁, 57 % of it as translation (the rest turns the
        // cube): Δz = 4 mm × 0.57 × sin 45° = 1.6 mm.
        assert!(lift > 1e-3 && lift < 5e-3, "lift {lift}");
        // The next step: a support under the cube's centre, `lift` below it, the cube
        // falling at lift/h. Returns the cube's vertical velocity after the pass.
        let fall = |pass: &mut ContactPass, mut bodies: Vec<RigidBody>| {
            bodies[0].velocity = Vec3::new(0.0, 0.0, -lift / dt);
            let support = static_contact(&bodies, Vec3::new(0.0, 0.0, -0.5), Vec3::z(), lift);
            let params = SolverParams {
                rest_velocity: 0.1,
                ..SolverParams::default()
            };
            let mut report = SolverReport::default();
            pass.run(&mut bodies, &[support], &params, Vec3::z(), dt, &mut report);
            bodies[0].velocity.z
        };
        let vz = fall(&mut pass, projected);
        assert!(
            vz.abs() < 1e-12,
            "the fall into the opened gap was not stopped: {vz}"
        );
        // Without the projection the same gap is real: the cube may close it.
        let vz = fall(&mut ContactPass::default(), cube());
        assert!(
            (vz + lift / dt).abs() < 1e-12,
            "a real gap must stay room to land in: {vz}"
        );
    }

    /// A unit cube resting flat on the floor (a static support under each bottom
    /// corner, gap 0) after a step's gravity kick, at μ = 5.
    fn kicked_cube(dt: f64) -> (Vec<RigidBody>, Vec<Contact>) {
        let shape = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 0.5, 0.5),
        };
        let mut bodies = vec![RigidBody::new(
            &shape,
            1000.0,
            Vec3::new(0.0, 0.0, 0.5),
            Quat::identity(),
        )];
        bodies[0].velocity = Vec3::new(0.0, 0.0, -9.81 * dt);
        let contacts = [(-0.5, -0.5), (0.5, -0.5), (0.5, 0.5), (-0.5, 0.5)]
            .iter()
            .map(|&(x, y)| static_contact(&bodies, Vec3::new(x, y, -0.5), Vec3::z(), 0.0))
            .collect();
        (bodies, contacts)
    }

    /// A pass whose warm start holds, at each of the cube's `contacts`, the normal
    /// impulse `normal` and a tangential one of `ratio` × `normal` turning the cube
    /// about z (at the cone's edge when `ratio` = μ).
    fn runaway_warm_start(contacts: &[Contact], normal: f64, ratio: f64) -> ContactPass {
        let mut pass = ContactPass::default();
        for c in contacts {
            let turn = Vec3::z().cross(&c.r_a).normalize();
            pass.cache
                .push((0, None, None), c.r_a, normal, ratio * normal * turn);
        }
        pass.cache.finish();
        pass
    }

    fn kinetic(bodies: &[RigidBody]) -> f64 {
        total_kinetic_energy(bodies)
    }

    /// A warm start carrying impulses that grew without bound (as an unconverged pass
    /// leaves them at μ = 5) and one sweep to take them back: the pass's result would
    /// gain kinetic energy, so it is redone from zero impulses, bit for bit the pass
    /// with nothing to warm-start from, and what is remembered for the next step is
    /// that pass's impulses, not the runaway ones.
    #[test]
    fn a_warm_start_that_gains_energy_is_dropped() {
        let dt = 1.0 / 600.0;
        let params = SolverParams {
            rest_velocity: 0.1,
            friction: 5.0,
            max_iterations: 1,
            ..SolverParams::default()
        };
        let (bodies, contacts) = kicked_cube(dt);
        let weight_impulse = bodies[0].mass * 9.81 * dt;
        let k0 = kinetic(&bodies);

        // The cold pass: nothing to warm-start from.
        let mut cold = bodies.clone();
        let mut report = SolverReport::default();
        ContactPass::default().run(&mut cold, &contacts, &params, Vec3::z(), dt, &mut report);
        assert_eq!(report.contact_fallback, ContactFallback::None);
        assert!(kinetic(&cold) <= k0);

        // Runaway impulses at the same four points: 10³ times the weight's, tangential
        // at the cone's edge, all turning the cube the same way about z.
        let mut pass = runaway_warm_start(&contacts, 1e3 * weight_impulse, 5.0);
        let mut warm = bodies.clone();
        let mut report = SolverReport::default();
        pass.run(&mut warm, &contacts, &params, Vec3::z(), dt, &mut report);
        assert_eq!(report.contact_fallback, ContactFallback::Cold);
        assert!(kinetic(&warm) <= k0, "{} > {k0}", kinetic(&warm));
        assert_eq!(warm[0].velocity, cold[0].velocity);
        assert_eq!(warm[0].angular_velocity, cold[0].angular_velocity);
        let remembered: f64 = pass.cache.entries.iter().map(|e| e.normal).sum();
        assert!(
            remembered <= 2.0 * weight_impulse,
            "remembered {remembered}, the weight's impulse is {weight_impulse}"
        );
    }

    /// K(s) = ½ m |v₀ + sΔv|² + ½ (ω₀ + sΔω)ᵀ I (ω₀ + sΔω) is smallest at
    /// s* = −a/(2c); a pass whose change only adds energy (a ≥ 0) is undone.
    #[test]
    fn scale_back_takes_the_most_dissipative_multiple() {
        let shape = Shape::Cuboid {
            half_extents: Vec3::new(0.5, 1.0, 1.5),
        };
        let mut bodies = vec![RigidBody::new(
            &shape,
            1000.0,
            Vec3::zeros(),
            Quat::from_axis_angle(&Vec3::x_axis(), 0.3),
        )];
        let (v0, w0) = (Vec3::new(1.0, 0.0, 2.0), Vec3::new(0.0, 1.0, 0.0));
        let (dv, dw) = (Vec3::new(-3.0, 0.0, -6.0), Vec3::new(0.0, -3.0, 0.0));
        let pass = ContactPass {
            saved: vec![(v0, w0)],
            ..ContactPass::default()
        };
        let set = |bodies: &mut Vec<RigidBody>, s: f64| {
            bodies[0].velocity = v0 + s * dv;
            bodies[0].angular_velocity = w0 + s * dw;
        };
        // Δ = −3 × (v₀, ω₀): K(s) = (1 − 3s)² K₀, smallest (0) at s = 1/3.
        set(&mut bodies, 1.0);
        let k0 = 0.5 * bodies[0].mass * v0.norm_squared()
            + 0.5 * w0.dot(&(bodies[0].inertia_world() * w0));
        assert!(kinetic(&bodies) > k0);
        let s = pass.scale_back(&mut bodies);
        assert!((s - 1.0 / 3.0).abs() < 1e-15, "s = {s}");
        assert!(kinetic(&bodies) <= 1e-28 * k0, "{}", kinetic(&bodies));
        // Δ = +(v₀, ω₀) only adds energy: s = 0, the saved velocities come back.
        bodies[0].velocity = 2.0 * v0;
        bodies[0].angular_velocity = 2.0 * w0;
        assert_eq!(pass.scale_back(&mut bodies), 0.0);
        assert_eq!((bodies[0].velocity, bodies[0].angular_velocity), (v0, w0));
    }

    /// The booked restitution and friction work add up to the pass's kinetic-energy
    /// change (rolling and spinning resistance included), and without friction nothing
    /// is booked as friction. A cube landing flat while it slides and spins.
    #[test]
    fn booked_work_is_the_kinetic_energy_the_pass_removes() {
        let dt = 1.0 / 600.0;
        for (mu, rolling) in [(0.0, 0.0), (0.4, 0.0), (0.4, 0.05), (5.0, 0.05)] {
            let params = SolverParams {
                rest_velocity: 0.1,
                friction: mu,
                rolling_friction: rolling,
                spinning_friction: rolling,
                ..SolverParams::default()
            };
            let (mut bodies, contacts) = kicked_cube(dt);
            bodies[0].velocity = Vec3::new(0.7, -0.2, -0.5);
            bodies[0].angular_velocity = Vec3::new(0.3, 0.1, 2.0);
            let k0 = kinetic(&bodies);
            let mut report = SolverReport::default();
            let mut pass = ContactPass::default();
            // Two steps (the second warm-started), booked into one report.
            for _ in 0..2 {
                pass.run(&mut bodies, &contacts, &params, Vec3::z(), dt, &mut report);
            }
            let booked = report.dissipated_restitution + report.dissipated_friction;
            assert!(
                (booked - (k0 - kinetic(&bodies))).abs() <= 1e-12 * k0,
                "μ = {mu}: booked {booked}, removed {}",
                k0 - kinetic(&bodies)
            );
            assert!(report.dissipated_restitution > 0.0);
            if mu == 0.0 {
                assert_eq!(report.dissipated_friction, 0.0);
            } else {
                assert!(report.dissipated_friction > 0.0, "μ = {mu}");
            }
        }
    }

    /// A warm start 10³ times too large that the sweeps take back (they converge, so the
    /// pass stands): booked increment by increment, its normal and tangential parts
    /// would cancel only in their sum (±10¹ J here, a pass that removes 10⁻² J); the
    /// net work of the accumulated impulses splits into a restitution and a friction
    /// part that are each a dissipation no larger than what the pass removed.
    #[test]
    fn a_warm_start_taken_back_leaves_no_trace_in_the_split() {
        let dt = 1.0 / 600.0;
        let params = SolverParams {
            rest_velocity: 0.1,
            friction: 0.4,
            ..SolverParams::default()
        };
        let (mut bodies, contacts) = kicked_cube(dt);
        bodies[0].velocity.x = 0.05;
        let weight_impulse = bodies[0].mass * 9.81 * dt;
        let mut pass = runaway_warm_start(&contacts, 1e3 * weight_impulse, 0.4);
        let k0 = kinetic(&bodies);
        let mut report = SolverReport::default();
        pass.run(&mut bodies, &contacts, &params, Vec3::z(), dt, &mut report);
        assert_eq!(report.contact_fallback, ContactFallback::None);
        let removed = k0 - kinetic(&bodies);
        let (r, f) = (report.dissipated_restitution, report.dissipated_friction);
        assert!(removed > 0.0 && (r + f - removed).abs() <= 1e-9 * k0);
        for part in [r, f] {
            assert!(
                part >= -1e-9 * k0 && part <= removed + 1e-9 * k0,
                "restitution {r}, friction {f}, removed {removed}"
            );
        }
    }
}
