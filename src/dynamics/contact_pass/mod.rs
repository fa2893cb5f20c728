//! Resolve contacts: the contact pass that makes piles come to rest, run by the world
//! after the collision solver (ETM, SQM, SMM, MDP or jolt). It follows Guendelman, Bridson
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
//!   than `rest_velocity` (`SolverParams::resting_speed`), and MDP only contacts that
//!   approach or slip faster; slower approaches get e = 0 anyway ("restitution only
//!   above a velocity threshold") and are left to this pass.
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
//!    side ranks below level 0; ties by contact index: deterministic). A large pass
//!    splits into two halves of disjoint bodies that sweep side by side, bottom up
//!    within each (`halves.rs`).
//! 3. **Warm start** (Box2D/Rapier; only when `rest_velocity > 0`): each contact gets
//!    the accumulated impulse the same contact (same pair, same features:
//!    `Contact::feature`) carried at the end of the last step, so a resting pile starts
//!    each step almost at its solution.
//! 4. **Projected Gauss-Seidel** sweeps in that order (at most
//!    `SolverParams::contact_sweeps`), with
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
//!    touched. The sweeps are momentum-conserving. After the first, a sweep visits
//!    only the rows whose bodies an update of this sweep or the last changed by more
//!    than the tolerance (a row whose bodies did not move since its last update is at
//!    its target already); the sweeps stop after a full sweep in which no update
//!    changed a contact velocity by more than the tolerance, as a sweep of every row
//!    would. The points of one manifold (a pair's contacts, consecutive in the order,
//!    up to `MANIFOLD_POINTS`) are updated together (`Row::sweep_manifold`): each
//!    point's update is computed from the same velocities and all are applied with the
//!    weight ω = Σ Δ_i·K_i Δ_i / Σ Δ_i·(D Δ)_i that minimises the contact problem's
//!    quadratic along them, clamped to [1/m, 1] (1/m converges since the manifold's
//!    Delassus block D ≤ m blockdiag(D); MDP weighs a pair the same way). Visited in
//!    turn, the first corner of a face takes all the load, and a rigid body on four
//!    coplanar corners has velocity solutions that tip it about an edge (the loaded
//!    corners at u_n = 0, the others separating with no impulse), which more sweeps do
//!    not undo. Updated together, a mirror-symmetric manifold stays symmetric
//!    (docs/results/fidelity.md, "Stacks").
//! 5. **Shock propagation**: one last bottom-up sweep over what still approaches, with
//!    the lower-level body of each pair treated as infinitely heavy (left out of K), so
//!    a support's reaction cannot push the settled layers below back into the ground. It
//!    is a single sweep on purpose: iterated to convergence with frozen supports it
//!    diverges when two frozen bodies squeeze one between them (no finite impulse stops
//!    the approach). A manifold's points are propagated together, as in step 4, and
//!    iterated until none approaches (`ContactPass::shock_manifold`: one body against
//!    its one frozen support, which converges); one at a time, its first corner would
//!    take all the relative velocity and tip the body.
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
//! potential-energy change (and the spin `RigidBody::displace` hands over) is booked as
//! the ledger's `projection`.
//!
//! **Files.** This module holds the pass's state and its order of work ([`ContactPass::run`]:
//! levels, order, the sweeps and the shock-propagation sweep); `row.rs` one contact's
//! projected Gauss-Seidel update and warm start; `friction.rs` the friction cone's
//! nearest impulse ([`nearest_in_disk`]); `projection.rs` the position projection and
//! the speculative gap it opens; `safeguard.rs` the booking of the pass's work and the
//! fallback when a result gains energy; `halves.rs` the split of a large pass into two
//! halves that sweep on two threads.

use super::solver::prepared::PreparedContact;
use super::solver::{
    ContactFallback, RestingModel, SolverParams, SolverReport, total_kinetic_energy,
};
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::dynamics::graph::ContactGraph;
use crate::dynamics::warm_start::{ContactImpulses, PointImpulse};
use crate::math::Vec3;
use rayon::prelude::*;

mod friction;
mod halves;
mod partner;
mod projection;
mod row;
mod safeguard;

pub use friction::nearest_in_disk;
pub use halves::SPLIT_ROWS;
use partner::{Partner, with_partner};
pub use projection::project_pairs;
use projection::{ProjectionRow, speculative_gap};
use row::{Row, RowCold, ShockRow, freeze_a, freeze_b};

/// Scratch space of the pass (kept between steps to avoid allocation).
///
/// Of it, only the last projection's displacements carry over to the next step (the
/// impulses it warm-starts from are the contacts', `dynamics::warm_start`); the rest is
/// rebuilt before it is read. A clone (a saved state, the app's timeline) copies the
/// displacements and starts the rest empty, and continues exactly as the original.
#[derive(Default)]
pub struct ContactPass {
    level: Vec<u32>,
    order: Vec<(u64, usize)>,
    queue: std::collections::VecDeque<usize>,
    rows: Vec<Row>,
    /// Per row (same positions as `rows`), what the pass reads of it outside the sweeps.
    cold: Vec<RowCold>,
    projection: Vec<ProjectionRow>,
    /// Per body: the projection's translation Δx and rotation vector Δθ.
    displacement: Vec<(Vec3, Vec3)>,
    /// Per body: v and ω before the pass (see [`DISSIPATION_SLACK`]).
    saved: Vec<(Vec3, Vec3)>,
    /// Per body under a Newmark drift, (vₙ − v⁻)/2 (see [`ContactPass::set_newmark_drift`]);
    /// empty under semi-implicit Euler.
    drift: Vec<Vec3>,
    /// Per contact of the step, the method's floor if it gave one
    /// ([`ContactPass::set_method_floors`]).
    method_floors: Vec<Option<f64>>,
    /// The sweeps' velocities (v, ω) of the dynamic bodies the contacts touch, by slot
    /// (`halves.rs`), and each body's slot ([`NO_SLOT`] for a static body or one in no
    /// contact).
    vel: Vec<[Vec3; 2]>,
    /// By slot, as `vel`: the last sweep that changed the slot by more than the
    /// tolerance (`Row::sweep`; 0: none yet).
    moved: Vec<u32>,
    slot: Vec<u32>,
    /// Slots `..left_slots` are the left half's bodies. The rows come in bands of levels
    /// (bottom up); band i ends its rows touching only left bodies at `bands[i][0]`, then
    /// its rows touching only right ones at `bands[i][1]`, then its rows touching both
    /// at `bands[i][2]` (`halves.rs`).
    left_slots: usize,
    bands: Vec<[usize; 3]>,
    /// `bottom_up[j]`: position in `order` and `rows` of the j-th contact bottom up
    /// (empty when the rows are in that order).
    bottom_up: Vec<u32>,
    touched: Vec<usize>,
    /// Per body, its world inverse inertia this step.
    inv_inertia: Vec<crate::math::Mat3>,
    /// By slot, as `vel`: the body's world inverse inertia (`inv_inertia`).
    slot_inertia: Vec<crate::math::Mat3>,
    /// The soft model's biased-sweep velocities, by slot ([`ContactPass::solve_soft`]).
    biased: Vec<[Vec3; 2]>,
    keyed: Vec<(f64, usize)>,
    grouped: Vec<(u32, u8, usize)>,
    reordered: Vec<(u64, usize)>,
    /// Scratch of the counting sort by rank (`ContactPass::sort_order_by_rank`).
    rank_start: Vec<usize>,
    /// One manifold's shock-propagation rows and their bodies' Newmark drift
    /// ([`ContactPass::shock_manifold`]).
    shock: Vec<ShockRow>,
    shock_drift: Vec<Vec3>,
}

impl Clone for ContactPass {
    fn clone(&self) -> Self {
        ContactPass {
            displacement: self.displacement.clone(),
            ..Default::default()
        }
    }
}

const NO_LEVEL: u32 = u32::MAX;

impl ContactPass {
    /// Book the pass's work for a method whose drift moves the bodies by h (vₙ + v⁺)/2
    /// (Newmark, paper 002 eq. 51) instead of h v⁺: `drift[b]` is body b's
    /// (vₙ − v⁻)/2 = −h (g + F/m)/2, half the kick the forces gave it (zero for a static
    /// or sleeping body); an empty slice returns to semi-implicit Euler. It holds until
    /// set again.
    ///
    /// Under such a drift an impulse P changes the step's displacement as well as the
    /// velocity, and its work over the step is P·(u₀ + u⁺)/2, not the kinetic-energy
    /// change P·(u⁻ + u⁺)/2 alone: the difference P·(u₀ − u⁻)/2, linear part
    /// P·(drift_a − drift_b), is the work gravity and the applied forces do along the
    /// displacement the impulse added. The pass books the whole of it as dissipation
    /// (so a resting contact, u₀ = u⁺ = 0, dissipates nothing), and adds the difference
    /// to `SolverReport::drift_work`, which the world takes out of the integration
    /// error, as it does for the method's own impulses.
    pub fn set_newmark_drift(&mut self, drift: &[Vec3]) {
        self.drift.clear();
        self.drift.extend_from_slice(drift);
    }

    /// The method's targets for the contacts it resolved itself
    /// (`CollisionSolver::pass_floors`, indexed as the step's contacts; empty: none).
    /// A hard row of such a contact targets u_n⁺ ≥ the method's floor instead of its
    /// own, so that what the method's law allows (CCP's Newmark contact leaves an
    /// impact's contact point approaching at the end of the step while its displacement
    /// over the step does not close) is not taken for an approach to resolve.
    pub fn set_method_floors(&mut self, floors: &[Option<f64>]) {
        self.method_floors.clear();
        self.method_floors.extend_from_slice(floors);
    }

    /// drift_a − drift_b of a contact's bodies (zero without a Newmark drift, and for a
    /// container side).
    fn drift_of(&self, a: usize, b: Option<usize>) -> Vec3 {
        if self.drift.is_empty() {
            return Vec3::zeros();
        }
        self.drift[a] - b.map_or(Vec3::zeros(), |b| self.drift[b])
    }
}

/// Most points of one manifold the pass updates together (`Row::sweep_manifold`,
/// `ContactPass::shock_manifold`); a pair with more is taken in groups of this many.
pub(super) const MANIFOLD_POINTS: usize = 8;

/// Most Jacobi passes of one manifold's shock propagation.
const SHOCK_PASSES: usize = 50;

/// Fewest rows a thread builds at once.
const ROW_CHUNK: usize = 128;

/// No solver slot: a static body (its velocity is zero, `RigidBody::into_static`), or a
/// container side.
const NO_SLOT: u32 = u32::MAX;

/// Resting contacts count as approaching when faster than this fraction of
/// `rest_velocity` (see [`ContactPass::run`]).
pub const REST_TOLERANCE: f64 = 1e-3;

/// Default of `SolverParams::contact_sweeps`, the most projected Gauss-Seidel sweeps
/// of the pass per step; the sweeps stop earlier once no update changes a contact
/// velocity by more than the tolerance, and the warm start carries the rest of the
/// convergence across steps (Box2D and Rapier run 4 substeps of one iteration each and
/// leave the rest to the next step the same way).
///
/// In a forming pile the sweeps rarely reach the tolerance: the largest change falls
/// by 2-5 % a sweep after the first 15-20, so the cap sets the cost of the pass. With
/// 25, a column of 36 cubes under SMM settles in 1.7-4.3 s over eight seeds (100:
/// 2.0-4.4 s; 20: 2.4-6.0 s). Long-armed bodies at high friction need more: 325 crosses
/// at μ = 0.6 keep tens to hundreds of times the kinetic energy they have with 100
/// sweeps 10-16 s after the drop (`docs/results/contact-pass.md`). Scenes that
/// reproduce the papers' piles (repose, packing) set 100 explicitly.
pub const DEFAULT_SWEEPS: u32 = 25;

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
    /// `params.contact_sweeps` sweeps); adds its dissipation to
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
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        graph: &ContactGraph,
        impulses: &mut [ContactImpulses],
        params: &SolverParams,
        up: Vec3,
        dt: f64,
        report: &mut SolverReport,
    ) {
        let n = bodies.len();
        self.level.clear();
        self.level.resize(n, NO_LEVEL);
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
            } else if let Some(b) = c.b
                && bodies[c.a].is_static()
                && !bodies[b].is_static()
                && supports(&-c.normal)
                && self.level[b] != 0
            {
                self.level[b] = 0;
                self.queue.push_back(b);
            }
        }
        // Breadth first over the dynamic bodies (`graph`'s per-body contact lists, in
        // contact order): a body's level is its distance from a supported one.
        while let Some(i) = self.queue.pop_front() {
            for &k in graph.body_contacts(i) {
                let c = &contacts[k as usize];
                let other = if c.a == i { c.b } else { Some(c.a) };
                let Some(j) = other.filter(|&j| !bodies[j].is_static()) else {
                    continue;
                };
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
        self.sort_order_by_rank();
        self.split_halves(bodies, contacts, up);

        // Approach tolerance (see the doc above).
        let warm = params.rest_velocity > 0.0;
        // The last projection's displacements (none if it did not run since the last
        // pass, or the bodies changed): a gap it opened is not room to fall into.
        let last = std::mem::take(&mut self.displacement);
        let opened: &[(Vec3, Vec3)] = if last.len() == n { &last } else { &[] };
        // Rows in the order the sweeps visit them (`rows[i]` is contact `order[i].1`:
        // bottom up, or bottom up within each group of `halves.rs`), so that a sweep
        // reads them front to back. Each row is its contact's alone: built in parallel.
        // Each body's world inverse inertia, once for all its contacts.
        self.inv_inertia.clear();
        self.inv_inertia
            .extend(bodies.iter().map(|b| b.inv_inertia_world()));
        let (shared, slot, inertia) = (&*bodies, &self.slot, &self.inv_inertia);
        let zero = crate::math::Mat3::zeros();
        self.rows.resize_with(self.order.len(), Row::default);
        self.cold.resize_with(self.order.len(), RowCold::default);
        self.rows
            .par_iter_mut()
            .zip(self.cold.par_iter_mut())
            .zip(self.order.par_iter())
            .with_min_len(ROW_CHUNK)
            .for_each(|((row, cold), &(_, k))| {
                let c = &contacts[k];
                let inertia_b = c.b.map_or(&zero, |b| &inertia[b]);
                let gap = speculative_gap(c, opened);
                Row::build(row, cold, shared, c, gap, &inertia[c.a], inertia_b, dt);
                row.slots = [slot[c.a], c.b.map_or(NO_SLOT, |b| slot[b])];
            });
        if !self.method_floors.is_empty() {
            for (row, &(_, k)) in self.rows.iter_mut().zip(&self.order) {
                if let Some(&Some(floor)) = self.method_floors.get(k) {
                    row.floor = floor;
                }
            }
        }
        let v_ref = self
            .rows
            .iter()
            .zip(&self.cold)
            .fold(0.0_f64, |v, (row, cold)| v.max(-cold.u_start.dot(&row.n)));
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
            report.drift_work,
        );
        let slack = DISSIPATION_SLACK * k0;
        let remembered = warm.then_some(&*impulses);
        self.solve_rows(bodies, contacts, params, dt, tol, remembered, report);
        let mut scale = 1.0;
        if total_kinetic_energy(bodies) > k0 + slack {
            if warm {
                // The warm start carried an unconverged step's impulses: start cold.
                self.restore(bodies);
                (
                    report.dissipated_restitution,
                    report.dissipated_friction,
                    report.impulses,
                    report.drift_work,
                ) = booked;
                for row in &mut self.rows {
                    row.reset();
                }
                self.solve_rows(bodies, contacts, params, dt, tol, None, report);
                report.contact_fallback = ContactFallback::Cold;
            }
            if total_kinetic_energy(bodies) > k0 + slack {
                scale = self.scale_back(bodies);
                // The pass's net work, booked whole as friction (the normal/tangential
                // split of the sweeps' bookings no longer applies to the scaled sum),
                // with its share of a Newmark drift (`set_newmark_drift`), Σ m Δv·drift.
                let drift: f64 = if self.drift.is_empty() {
                    0.0
                } else {
                    bodies
                        .iter()
                        .zip(&self.saved)
                        .zip(&self.drift)
                        .map(|((b, (v0, _)), d)| b.mass * (b.velocity - v0).dot(d))
                        .sum()
                };
                report.drift_work = booked.3 + drift;
                report.dissipated_restitution = booked.0;
                report.dissipated_friction = booked.1 + k0 - total_kinetic_energy(bodies) - drift;
                report.contact_fallback = ContactFallback::Scaled;
            }
        }
        // Each contact keeps its accumulated impulse (as applied) for the next warm start.
        for i in impulses.iter_mut() {
            i.pass = None;
        }
        if warm {
            for (&(_, k), row) in self.order.iter().zip(&self.rows) {
                if row.lambda_n > 0.0 && scale > 0.0 {
                    let pt = row.lambda_t.x * row.t1 + row.lambda_t.y * row.t2;
                    impulses[k].pass = Some(PointImpulse {
                        normal: scale * row.lambda_n,
                        tangent: scale * pt,
                    });
                }
            }
        }
    }

    /// Steps 3-5 of the pass over the rows built by [`Self::run`]: the warm start (if
    /// `remembered`: each contact's impulses, aligned with `contacts`), the projected
    /// Gauss-Seidel sweeps and the shock-propagation sweep.
    #[allow(clippy::too_many_arguments)]
    fn solve_rows(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        params: &SolverParams,
        dt: f64,
        tol: f64,
        remembered: Option<&[ContactImpulses]>,
        report: &mut SolverReport,
    ) {
        let friction = params.friction;
        let max_sweeps = params.contact_sweeps;
        // 3. warm start
        if let Some(remembered) = remembered {
            let rows = self.order.iter().zip(&mut self.rows).zip(&self.cold);
            for ((&(_, k), row), cold) in rows {
                row.warm_start(
                    bodies,
                    cold,
                    &self.inv_inertia,
                    remembered[k].pass.as_ref(),
                    friction,
                    report,
                );
            }
        }
        // 4. projected Gauss-Seidel sweeps over all contacts, bottom up (within each
        // half, the halves side by side: `halves.rs`), on the bodies' velocities
        // gathered by slot
        let resist =
            (params.rolling_friction > 0.0 || params.spinning_friction > 0.0).then_some(params);
        self.gather_velocities(bodies, resist.is_some());
        if params.resting_model == RestingModel::Soft {
            self.with_halves(|pass, partner| {
                pass.solve_soft(partner, params, dt, tol, resist, report)
            });
            self.scatter_velocities(bodies);
            self.book_net_work(bodies, report);
            return;
        }
        // The first sweep visits every row. After it, a sweep is partial: it skips the
        // rows whose bodies no update changed by more than the tolerance in this sweep
        // or the last (`Row::sweep`), which Gauss-Seidel would leave (nearly) as they
        // are. Changes below the tolerance still add up at a skipped row, so the pass
        // stops only after a full sweep in which no update changed a contact velocity
        // by more than the tolerance: when a partial sweep gets there, the next sweep is
        // full.
        self.with_halves(|pass, partner| {
            let mut partial = false;
            for k in 1..=max_sweeps {
                report.contact_sweeps += 1;
                let change = pass.sweep_bands(partner, k, partial, friction, tol, resist, report);
                let settled = change <= tol * tol;
                if settled && !partial {
                    break;
                }
                partial = !settled;
            }
        });
        self.scatter_velocities(bodies);
        self.book_net_work(bodies, report);
        // 5. one shock-propagation sweep, bottom up, lower side frozen
        // The points of one manifold (consecutive, up to 8) are propagated together
        // (`Self::shock_manifold`): one at a time, the first corner of a face would take
        // all the relative velocity and tip the body.
        let n_rows = self.rows.len();
        let key = |c: &Contact| (c.a, c.b, c.container);
        let mut skip_to = 0;
        for j in 0..n_rows {
            if j < skip_to {
                continue;
            }
            let k0 = self.order[self.bottom_up(j)].1;
            let mut end = j + 1;
            while end < n_rows
                && end - j < MANIFOLD_POINTS
                && key(&contacts[self.order[self.bottom_up(end)].1]) == key(&contacts[k0])
            {
                end += 1;
            }
            if end - j > 1 {
                skip_to = end;
                // As for a single point: a manifold none of whose points approaches is
                // left as it is.
                if (j..end)
                    .any(|jj| self.still_approaches(bodies, contacts, self.bottom_up(jj), tol))
                {
                    self.shock_manifold(bodies, contacts, j, end, friction, tol, dt, report);
                }
                continue;
            }
            let pos = self.bottom_up(j);
            if !self.still_approaches(bodies, contacts, pos, tol) {
                continue;
            }
            let (mut row, drift) = self.shock_row(bodies, contacts, pos, dt);
            row.solve(bodies, friction, tol, &drift, report);
        }
    }
}

impl ContactPass {
    /// Whether the contact at position `pos` of the rows still approaches its target by
    /// more than `tol` (what shock propagation takes).
    fn still_approaches(
        &self,
        bodies: &[RigidBody],
        contacts: &[Contact],
        pos: usize,
        tol: f64,
    ) -> bool {
        let row = &self.rows[pos];
        let c = &contacts[self.order[pos].1];
        row.relative_velocity(&self.cold[pos], bodies)
            .dot(&c.normal)
            < row.floor - tol
    }

    /// The shock-propagation row of the contact at position `pos` of the rows: the
    /// lower-level side frozen (left out of K) and the row booking each impulse, with
    /// the moved point's share of a Newmark drift (`set_newmark_drift`).
    fn shock_row(
        &self,
        bodies: &[RigidBody],
        contacts: &[Contact],
        pos: usize,
        dt: f64,
    ) -> (ShockRow, Vec3) {
        let c = &contacts[self.order[pos].1];
        let inertia_b =
            c.b.map_or(crate::math::Mat3::zeros(), |b| self.inv_inertia[b]);
        let mut p = PreparedContact::with_inertia(bodies, c, self.inv_inertia[c.a], inertia_b);
        p.gap = self.cold[pos].gap;
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
        let drift = match moving {
            _ if self.drift.is_empty() => Vec3::zeros(),
            Some((i, _, _)) => self.drift[i],
            None => self.drift_of(c.a, c.b),
        };
        (ShockRow::new(p, moving, dt), drift)
    }

    /// Shock propagation for the points `j..end` (bottom-up positions) of one manifold:
    /// its lower side frozen, the points updated together (Jacobi with
    /// `row::manifold_weight`) until none approaches by more than `tol`, so that a
    /// symmetric face contact stays symmetric.
    #[allow(clippy::too_many_arguments)]
    fn shock_manifold(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        j: usize,
        end: usize,
        friction: f64,
        tol: f64,
        dt: f64,
        report: &mut SolverReport,
    ) {
        let mut rows = std::mem::take(&mut self.shock);
        let mut drifts = std::mem::take(&mut self.shock_drift);
        rows.clear();
        drifts.clear();
        for jj in j..end {
            let (r, drift) = self.shock_row(bodies, contacts, self.bottom_up(jj), dt);
            rows.push(r);
            drifts.push(drift);
        }
        // A handful of Jacobi passes settle one body against its frozen support; the cap
        // only bounds a pathological case.
        for _ in 0..SHOCK_PASSES {
            let mut deltas = [(0.0, nalgebra::Vector2::zeros(), 0.0); MANIFOLD_POINTS];
            let mut active = [false; MANIFOLD_POINTS];
            let mut m = 0;
            let mut change: f64 = 0.0;
            for (i, r) in rows.iter_mut().enumerate() {
                if r.row.normal_mass == 0.0 {
                    continue;
                }
                let u = r.p.relative_velocity(bodies);
                if let Some(d) = r.row.update(u, friction, tol) {
                    deltas[i] = d;
                    active[i] = true;
                    m += 1;
                }
            }
            if m == 0 {
                break;
            }
            let (w, _) = row::manifold_weight(&rows, &deltas, &active, m, true);
            for (i, r) in rows.iter_mut().enumerate() {
                if !active[i] {
                    continue;
                }
                let (dn, dtt, c) = deltas[i];
                if w < 1.0 {
                    r.row.lambda_n -= (1.0 - w) * dn;
                    r.row.lambda_t -= (1.0 - w) * dtt;
                }
                let (dn, dtt) = (w * dn, w * dtt);
                let imp = dn * r.p.n + dtt.x * r.p.t1 + dtt.y * r.p.t2;
                r.apply(bodies, &imp, &drifts[i], report);
                change = change.max(w * w * c);
            }
            if change <= tol * tol {
                break;
            }
        }
        self.shock = rows;
        self.shock_drift = drifts;
    }
}

impl ContactPass {
    /// Copy the touched bodies' (v, ω) into the sweeps' slots, and clear the slots'
    /// change stamps; with `inertia`, their world inverse inertias too (for rolling and
    /// spinning resistance).
    fn gather_velocities(&mut self, bodies: &[RigidBody], inertia: bool) {
        self.vel.clear();
        self.vel.resize(self.touched.len(), [Vec3::zeros(); 2]);
        for &i in &self.touched {
            self.vel[self.slot[i] as usize] = [bodies[i].velocity, bodies[i].angular_velocity];
        }
        self.moved.clear();
        self.moved.resize(self.touched.len(), 0);
        if inertia {
            self.slot_inertia.clear();
            self.slot_inertia
                .resize(self.touched.len(), crate::math::Mat3::zeros());
            for &i in &self.touched {
                self.slot_inertia[self.slot[i] as usize] = self.inv_inertia[i];
            }
        }
    }

    /// Copy the sweeps' slots back into the touched bodies.
    fn scatter_velocities(&self, bodies: &mut [RigidBody]) {
        for &i in &self.touched {
            [bodies[i].velocity, bodies[i].angular_velocity] = self.vel[self.slot[i] as usize];
        }
    }

    /// Runs `body` with a [`Partner`] thread for the right halves of the sweeps when the
    /// pass split into halves (`halves.rs`) and the pool has a second thread
    /// (`partner.rs`); otherwise every join runs its halves in turn.
    fn with_halves<R: Send>(
        &mut self,
        body: impl FnOnce(&mut Self, &Partner<'_>) -> R + Send,
    ) -> R {
        if self.bands.iter().any(|&[a_end, b_end, _]| b_end > a_end) {
            with_partner(|partner| body(self, partner))
        } else {
            body(self, &Partner::alone())
        }
    }

    /// Sweep `k` over every row (only the rows a recent change reached when `partial`,
    /// see [`Row::sweep`]), band by band, each band's two halves side by side
    /// (`halves.rs`); returns the largest squared velocity change and counts the
    /// impulses in `report`.
    #[allow(clippy::too_many_arguments)]
    fn sweep_bands(
        &mut self,
        partner: &Partner<'_>,
        k: u32,
        partial: bool,
        friction: f64,
        tol: f64,
        resist: Option<&SolverParams>,
        report: &mut SolverReport,
    ) -> f64 {
        let inertia = &self.slot_inertia;
        let sweep = |rows: &mut [Row], vel: &mut [[Vec3; 2]], moved: &mut [u32], offset| {
            let (mut change, mut impulses) = (0.0_f64, 0);
            let mut i = 0;
            while i < rows.len() {
                let mut j = i + 1;
                while j < rows.len() && j - i < MANIFOLD_POINTS && rows[j].slots == rows[i].slots {
                    j += 1;
                }
                change = change.max(if j - i > 1 {
                    Row::sweep_manifold(
                        &mut rows[i..j],
                        vel,
                        moved,
                        offset,
                        k,
                        partial,
                        friction,
                        tol,
                        resist,
                        inertia,
                        &mut impulses,
                    )
                } else {
                    let mut c: f64 = 0.0;
                    for row in &mut rows[i..j] {
                        c = c.max(row.sweep(
                            vel,
                            moved,
                            offset,
                            k,
                            partial,
                            friction,
                            tol,
                            resist,
                            inertia,
                            &mut impulses,
                        ));
                    }
                    c
                });
                i = j;
            }
            (change, impulses)
        };
        let mut change: f64 = 0.0;
        let mut start = 0;
        for &[a_end, b_end, c_end] in &self.bands {
            let (ab, c) = self.rows[start..c_end].split_at_mut(b_end - start);
            let (a, b) = ab.split_at_mut(a_end - start);
            let (left, right) = self.vel.split_at_mut(self.left_slots);
            let (left_moved, right_moved) = self.moved.split_at_mut(self.left_slots);
            let ((ca, ia), (cb, ib)) = if b.is_empty() {
                (sweep(a, left, left_moved, 0), (0.0, 0))
            } else {
                let offset = self.left_slots;
                partner.join(
                    || sweep(a, left, left_moved, 0),
                    || sweep(b, right, right_moved, offset),
                )
            };
            let (cc, ic) = sweep(c, &mut self.vel, &mut self.moved, 0);
            report.impulses += ia + ib + ic;
            change = change.max(ca).max(cb).max(cc);
            start = c_end;
        }
        change
    }

    /// The soft resting model ([`RestingModel::Soft`]): Box2D v3's soft step (Catto,
    /// "Solver2D", 2024; `b2SolveContact` with and without bias) with one substep at the
    /// world's step h, on the velocities gathered by slot, after the warm start.
    ///
    /// Each contact is a spring-damper of natural frequency f = min(`contact_hertz`,
    /// 1/(4h)) and damping ratio ζ (`contact_damping_ratio`). With ω = 2πf,
    /// a₁ = 2ζ + hω, a₂ = hω a₁ and a₃ = 1/(1 + a₂) (Box2D's `b2MakeSoft`), the
    /// implicit spring's update of a contact of overlap d = −gap ≥ 0 is
    ///
    ///   Δλ_n = m_s (1/(nᵀKn)) (b − u_n) − i_s λ_n,   λ_n ≥ 0,
    ///
    /// with the bias b = min(ω/a₁ · d, `contact_push_speed`), the mass scale m_s = a₂ a₃ and
    /// the impulse scale i_s = a₃: a fraction of the overlap is removed per step, at
    /// most at the push speed, without the stiffness of a hard constraint. A speculative
    /// contact (gap > 0) keeps the hard target u_n⁺ ≥ −gap/h. Friction and rolling
    /// resistance are the hard pass's.
    ///
    /// 1. **Biased sweep:** one sweep of every contact with those targets (velocities
    ///    v_b).
    /// 2. **Relax sweep:** one sweep with the bias taken off, to the hard pass's targets
    ///    (u_n⁺ ≥ 0, or ≥ −gap/h for a speculative contact; velocities v_r). Box2D
    ///    targets the separation after the drift, −max(s, 0)/h with s = gap + h u_n(v_b),
    ///    which lets a contact the bias opened approach again: measured on a settling
    ///    pile of 27 spheres under jolt, every sphere kept falling at 0.4 g h while the
    ///    push-out held it in place (K/ΔU 2·10⁻⁵, never settled).
    /// 3. **Push-out:** Box2D integrates positions with v_b between the two sweeps and
    ///    keeps v_r as the velocity; the world drifts with the final velocity, so the
    ///    pass records each body's displacement h (v_b − v_r), h (ω_b − ω_r), which
    ///    [`Self::push_out`] applies as a position correction (booked as `projection`).
    ///
    /// Every contact takes part (Box2D solves every manifold point), and there is no
    /// shock propagation or position projection. The accumulated impulses are warm
    /// started and remembered as the hard pass's are.
    fn solve_soft(
        &mut self,
        partner: &Partner<'_>,
        params: &SolverParams,
        dt: f64,
        tol: f64,
        resist: Option<&SolverParams>,
        report: &mut SolverReport,
    ) {
        let friction = params.friction;
        let soft = Softness::new(params.contact_hertz, params.contact_damping_ratio, dt);
        let rows = self.rows.iter_mut().zip(&self.order).zip(&self.cold);
        for ((row, &(_, k)), cold) in rows {
            row.started = true;
            if cold.gap <= 0.0 && !matches!(self.method_floors.get(k), Some(Some(_))) {
                row.floor = (soft.bias_rate * -cold.gap).min(params.contact_push_speed);
                row.mass_scale = soft.mass_scale;
                row.impulse_scale = soft.impulse_scale;
            }
        }
        report.contact_sweeps += 1;
        self.sweep_bands(partner, 1, false, friction, tol, resist, report);
        self.biased.clear();
        self.biased.extend_from_slice(&self.vel);
        let rows = self.rows.iter_mut().zip(&self.order).zip(&self.cold);
        for ((row, &(_, k)), cold) in rows {
            row.floor = match self.method_floors.get(k) {
                Some(&Some(floor)) => floor,
                _ => Row::hard_floor(cold.gap, dt),
            };
            row.mass_scale = 1.0;
            row.impulse_scale = 0.0;
        }
        report.contact_sweeps += 1;
        self.sweep_bands(partner, 2, false, friction, tol, resist, report);
        let n = self.slot.len();
        self.displacement.clear();
        self.displacement.resize(n, (Vec3::zeros(), Vec3::zeros()));
        for &i in &self.touched {
            let s = self.slot[i] as usize;
            let ([vb, wb], [vr, wr]) = (self.biased[s], self.vel[s]);
            self.displacement[i] = (dt * (vb - vr), dt * (wb - wr));
        }
    }

    /// Apply the soft model's push-out (`ContactPass::solve_soft`) recorded by the last
    /// [`Self::run`]: each body is moved by its Δx and turned by its Δθ with
    /// [`RigidBody::displace`] (linear and angular momentum kept). Returns the energy
    /// it added (J): −Σ m g·Δx plus the spin update's kinetic change, the ledger's
    /// `projection`. Nothing to do after a hard pass.
    pub fn push_out(&mut self, bodies: &mut [RigidBody], gravity: &Vec3) -> f64 {
        if self.displacement.len() != bodies.len() {
            return 0.0;
        }
        projection::displace_all(bodies, &self.displacement, gravity)
    }
}

/// The spring-damper scales of a soft contact (Box2D v3's `b2Softness`, `b2MakeSoft`):
/// natural frequency f (capped at a quarter of the step rate, as Box2D caps its
/// `contactHertz`), damping ratio ζ, step h.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Softness {
    /// ω/a₁ (1/s): the bias velocity per metre of overlap.
    pub bias_rate: f64,
    /// a₂ a₃: the fraction of the hard impulse a soft update applies.
    pub mass_scale: f64,
    /// a₃: the fraction of the accumulated impulse a soft update relaxes.
    pub impulse_scale: f64,
}

impl Softness {
    pub fn new(hertz: f64, zeta: f64, h: f64) -> Self {
        let omega = 2.0 * std::f64::consts::PI * hertz.min(0.25 / h);
        let a1 = 2.0 * zeta + h * omega;
        let a2 = h * omega * a1;
        let a3 = 1.0 / (1.0 + a2);
        Softness {
            bias_rate: omega / a1,
            mass_scale: a2 * a3,
            impulse_scale: a3,
        }
    }
}

impl ContactPass {
    /// Sort `self.order` (pairs (rank, contact index), the indices ascending as built)
    /// by rank, ties in index order: what `sort_unstable` gives for these distinct
    /// pairs, by one counting pass over the ranks (0 and level + 1 are at most the body
    /// count plus one; `u64::MAX`, unsupported, comes last).
    fn sort_order_by_rank(&mut self) {
        debug_assert!(self.order.windows(2).all(|w| w[0].1 < w[1].1));
        let bucket = |rank: u64, top: usize| {
            if rank == u64::MAX { top } else { rank as usize }
        };
        let top = self
            .order
            .iter()
            .filter(|o| o.0 != u64::MAX)
            .map(|o| o.0 as usize + 1)
            .max()
            .unwrap_or(0);
        self.rank_start.clear();
        self.rank_start.resize(top + 2, 0);
        for o in &self.order {
            self.rank_start[bucket(o.0, top) + 1] += 1;
        }
        for r in 1..self.rank_start.len() {
            self.rank_start[r] += self.rank_start[r - 1];
        }
        self.reordered.clear();
        self.reordered.resize(self.order.len(), (0, 0));
        for &o in &self.order {
            let at = &mut self.rank_start[bucket(o.0, top)];
            self.reordered[*at] = o;
            *at += 1;
        }
        std::mem::swap(&mut self.order, &mut self.reordered);
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

/// The part of the pass that carries over to the next step (see [`ContactPass`]): a
/// saved state writes it and a loaded one puts it back (`scene::save`).
impl ContactPass {
    /// The last projection's per-body displacements (Δx, Δθ; empty, or one per body of
    /// the world the pass last ran on).
    pub fn displacement(&self) -> &[(Vec3, Vec3)] {
        &self.displacement
    }

    /// Replace what [`Self::displacement`] returns.
    pub fn set_displacement(&mut self, displacement: Vec<(Vec3, Vec3)>) {
        self.displacement = displacement;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::Shape;

    use crate::math::Quat;

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
        pass.project(&mut projected, &[wall], 0.2, 0.0, &Vec3::zeros());
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
            let support = [support];
            run(
                pass,
                &mut bodies,
                &support,
                &mut vec![ContactImpulses::default(); support.len()],
                &params,
                dt,
                &mut report,
            );
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
            .enumerate()
            .map(|(k, &(x, y))| {
                let mut c = static_contact(&bodies, Vec3::new(x, y, -0.5), Vec3::z(), 0.0);
                c.feature.a = k as u64; // the cube's corner
                c
            })
            .collect();
        (bodies, contacts)
    }

    /// The impulses the cube's `contacts` carry into a pass: at each, the normal impulse
    /// `normal` and a tangential one of `ratio` × `normal` turning the cube about z (at
    /// the cone's edge when `ratio` = μ).
    fn runaway_warm_start(contacts: &[Contact], normal: f64, ratio: f64) -> Vec<ContactImpulses> {
        contacts
            .iter()
            .map(|c| ContactImpulses {
                method: None,
                pass: Some(PointImpulse {
                    normal,
                    tangent: ratio * normal * Vec3::z().cross(&c.r_a).normalize(),
                }),
            })
            .collect()
    }

    /// [`ContactPass::run`] over `contacts` with the graph they make, from `impulses`
    /// (aligned with `contacts`), `up` = +z.
    pub(crate) fn run(
        pass: &mut ContactPass,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        impulses: &mut [ContactImpulses],
        params: &SolverParams,
        dt: f64,
        report: &mut SolverReport,
    ) {
        let graph = ContactGraph::of(bodies, contacts);
        pass.run(
            bodies,
            contacts,
            &graph,
            impulses,
            params,
            Vec3::z(),
            dt,
            report,
        );
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
            contact_sweeps: 1,
            ..SolverParams::default()
        };
        let (bodies, contacts) = kicked_cube(dt);
        let weight_impulse = bodies[0].mass * 9.81 * dt;
        let k0 = kinetic(&bodies);

        // The cold pass: nothing to warm-start from.
        let mut cold = bodies.clone();
        let mut report = SolverReport::default();
        run(
            &mut ContactPass::default(),
            &mut cold,
            &contacts,
            &mut vec![ContactImpulses::default(); contacts.len()],
            &params,
            dt,
            &mut report,
        );
        assert_eq!(report.contact_fallback, ContactFallback::None);
        assert!(kinetic(&cold) <= k0);

        // Runaway impulses at the same four points: 10³ times the weight's, tangential
        // at the cone's edge, all turning the cube the same way about z.
        let mut impulses = runaway_warm_start(&contacts, 1e3 * weight_impulse, 5.0);
        let mut pass = ContactPass::default();
        let mut warm = bodies.clone();
        let mut report = SolverReport::default();
        run(
            &mut pass,
            &mut warm,
            &contacts,
            &mut impulses,
            &params,
            dt,
            &mut report,
        );
        assert_eq!(report.contact_fallback, ContactFallback::Cold);
        assert!(kinetic(&warm) <= k0, "{} > {k0}", kinetic(&warm));
        assert_eq!(warm[0].velocity, cold[0].velocity);
        assert_eq!(warm[0].angular_velocity, cold[0].angular_velocity);
        let remembered: f64 = impulses
            .iter()
            .filter_map(|i| i.pass)
            .map(|i| i.normal)
            .sum();
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
            // Two steps (the second warm-started from the impulses the first left on
            // the same contacts), booked into one report.
            let mut impulses = vec![ContactImpulses::default(); contacts.len()];
            for _ in 0..2 {
                run(
                    &mut pass,
                    &mut bodies,
                    &contacts,
                    &mut impulses,
                    &params,
                    dt,
                    &mut report,
                );
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
        let mut impulses = runaway_warm_start(&contacts, 1e3 * weight_impulse, 0.4);
        let mut pass = ContactPass::default();
        let k0 = kinetic(&bodies);
        let mut report = SolverReport::default();
        run(
            &mut pass,
            &mut bodies,
            &contacts,
            &mut impulses,
            &params,
            dt,
            &mut report,
        );
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
