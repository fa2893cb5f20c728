//! Sequential impulse method (SQM) with Chatterjee's heap ordering (paper 000, Appendix A).
//!
//! Steps, per solver call:
//! 1. **Prepare**: copy each contact's frame, lever arms, masses and collision matrix
//!    K (eq. 9) next to it ([`PreparedContact`]); which contacts touch each dynamic body
//!    is the step's contact graph's (`SolverContext::graph`).
//! 2. **Heap** (Chatterjee): insert every *approaching, active* contact into a min-heap ψ
//!    keyed by its relative normal velocity u_n = n·u. Active means overlapping, or
//!    speculative (gap > 0) with gap + h u_n < 0, as in the jolt solver.
//! 3. **Pop** the contact with the most negative u_n and give it one single-point impulse
//!    (eqs. 71-76):
//!    - static friction first: the target is u⁺ = −e u_n⁻ n (eqs. 72-73) and the impulse
//!      p = K⁻¹ (u⁺ − u⁻) (eq. 8);
//!    - if it lies inside the friction cone, |p_t| ≤ μ p_n (eq. 74, with p_n > 0), keep
//!      it; otherwise use the sliding impulse p = p_n (n + μ q̂) with
//!      p_n = (1 + e)(−u_n) / nᵀK(n + μ q̂) (eqs. 75-76, see "sliding friction" below).
//! 4. **Update** the velocities of the two bodies, then recompute u_n of every contact that
//!    shares a dynamic body with the resolved one and re-key it in ψ (insert it if it now
//!    approaches, remove it if it no longer does). Contacts elsewhere are untouched.
//! 5. **Repeat** 3-4 until ψ is empty (no contact approaches faster than
//!    `tolerance` × the largest approach speed before the first impulse: sequential
//!    impulses on a resting pile only converge geometrically) or the iteration cap
//!    `max_iterations × (number of contacts)` pops is reached; the cap is reported in
//!    [`SolverReport::hit_iteration_cap`]. The paper notes SQM may not terminate in
//!    special cases (its ref. \[16\]); the cap keeps the step bounded.
//!
//! **Resting contacts** (so that piles come to rest, [`crate::settle`]):
//! with the contact pass on and `rest_velocity` > 0, only
//! approaches faster than `rest_velocity` are resolved here (the collision pass of
//! Guendelman et al. 2003); slower ones, which would get e = 0 anyway, are left to the
//! warm-started contact pass (`dynamics::contact_pass`). With `rest_velocity` = 0 (the
//! §7 scenes) nothing changes.
//!
//! **Restitution on re-approach.** A contact resolved once can approach again because a
//! neighbour's impulse moved its bodies. The paper's eq. 72 is written for "the relative
//! velocity before applying the impulse", i.e. every pop applies Newton's law to the
//! approach speed it sees then: [`Reapproach::Newton`] (the default). With it a
//! frictionless impulse with e ≤ 1 never adds energy (its work is p_n u_n⁻ (1 − e)/2 ≤ 0)
//! and e = 1 conserves kinetic energy exactly at every pop, which is what paper 000 §7.4
//! reports for SQM (relative energy error < 8·10⁻³ on elastic sphere piles). The two
//! alternatives are kept for comparison: [`Reapproach::FirstApproach`] restores
//! e × the approach speed first seen at the contact (as the jolt solver does; it can *add*
//! energy when a small re-approach is answered with the first, larger, bounce) and
//! [`Reapproach::Plastic`] gives re-approaches e = 0 (never adds energy, but on the
//! 2×2×1 box of §7.3 it loses most of the kinetic energy of an elastic impact). Approach
//! speeds not above `rest_velocity` get e = 0 in every mode.
//!
//! **Sliding friction (eqs. 75-76).** Eqs. 13-14 define the local frame with
//! t ∝ n × p and q = t × n, so q points along the tangential part of the sticking
//! impulse; eq. 76 then reads p = |p_n| n + μ |p_n| q. Taking Newton's law in the normal
//! direction, nᵀ K p = −(1 + e) u_n, with p = p_n (n + μ q̂) gives
//! p_n = −(1 + e) u_n / nᵀK(n + μ q̂), which is eq. 75 with the sign of u_n and of q
//! absorbed by the paper's absolute values. We take q̂ = −u_t/|u_t|, the direction
//! opposite to the pre-impulse slip, so friction always opposes sliding (Coulomb); for a
//! central contact (K ∝ 1) this is the paper's q exactly. If there is no slip but the
//! sticking impulse still leaves the cone (K couples n and t), q̂ is the direction of the
//! sticking impulse's tangential part. If nᵀK(n + μ q̂) ≤ 0 (friction would drive the
//! contact into the surface faster than the normal impulse separates it, a
//! Painlevé-type jam) the sticking impulse is used when it pushes (p_n > 0) and the
//! frictionless one otherwise.
//!
//! Energy: the kinetic-energy change of one impulse p is exactly p·(u⁻ + u⁺)/2 (eq. 16);
//! its normal part is booked as restitution dissipation and its tangential part as
//! friction dissipation, with their signs (Newton's law with friction can create energy,
//! and the ledger must show it).

use super::prepared::PreparedContact;
use super::{
    CollisionSolver, Param, SolverContext, SolverError, SolverKind, SolverReport, approaching,
    resolvable,
};
use crate::body::RigidBody;
use crate::collision::{Contact, relative_velocity};
use crate::dynamics::queue::{ContactOrder, ContactQueue};
use crate::math::{Mat3, Vec3};

/// `SqmSolver::slot` of a contact not popped yet this step.
const UNPREPARED: u32 = u32::MAX;

/// Which approach speed Newton's law restores when a contact approaches again within
/// the same step (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reapproach {
    /// u_n⁺ = −e u_n⁻ with the approach speed of this pop (paper 000, eq. 72). Default.
    #[default]
    Newton,
    /// u_n⁺ = e × (approach speed at the contact's first pop in this step).
    FirstApproach,
    /// u_n⁺ = 0 for every pop after the first (perfectly plastic re-approach).
    Plastic,
}

/// Sequential impulse solver; see the module doc. `Q` orders the contacts (ψ); tests run
/// the method with other orders through it.
#[derive(Clone)]
pub struct SqmSolver<Q: ContactOrder = ContactQueue> {
    /// Restitution rule for contacts that approach again (default: paper's eq. 72).
    pub reapproach: Reapproach,
    /// The contacts popped this step, prepared (K of eq. 9) at their first pop
    /// (`slot[ci]` is contact ci's index here, [`UNPREPARED`] before), and K⁻¹ of each
    /// (only with friction), for the sticking impulse of eq. 8. A contact that is never
    /// popped needs neither: its key is its relative normal velocity alone.
    prepared: Vec<PreparedContact>,
    k_inv: Vec<Option<Mat3>>,
    slot: Vec<u32>,
    /// Approach speed −u_n at each contact's first pop this step (0 = not popped yet).
    first_approach: Vec<f64>,
    /// ψ: the approaching contacts by (u_n, index); the others have key +∞.
    heap: Q,
    /// Contact indices 0..n (scratch for building ψ) and their initial keys.
    ids: Vec<usize>,
    keys: Vec<f64>,
}

impl SqmSolver {
    pub fn new(reapproach: Reapproach) -> Self {
        SqmSolver {
            reapproach,
            ..Default::default()
        }
    }
}

impl Default for SqmSolver {
    fn default() -> Self {
        SqmSolver::with_order(ContactQueue::default())
    }
}

impl<Q: ContactOrder> SqmSolver<Q> {
    /// A solver whose ψ is `order` (re-approach rule [`Reapproach::Newton`]).
    pub fn with_order(order: Q) -> Self {
        SqmSolver {
            reapproach: Reapproach::default(),
            prepared: Vec::new(),
            k_inv: Vec::new(),
            slot: Vec::new(),
            first_approach: Vec::new(),
            heap: order,
            ids: Vec::new(),
            keys: Vec::new(),
        }
    }
}

/// Single-point SQM impulse (paper 000, eqs. 71-76) bringing the normal velocity from
/// `un` to `target_n` with Coulomb friction `mu`; `u` is the relative velocity.
fn sqm_impulse(
    c: &PreparedContact,
    k_inv: Option<&Mat3>,
    u: &Vec3,
    un: f64,
    target_n: f64,
    mu: f64,
) -> Vec3 {
    let n = c.n;
    let knn = n.dot(&(c.k * n));
    let frictionless = (target_n - un) / knn * n;
    if mu == 0.0 {
        return frictionless;
    }
    // Static friction: u⁺ = −e u_n⁻ n (eqs. 72-73), p = K⁻¹ (u⁺ − u⁻)   (eq. 8)
    let du = target_n * n - u;
    let Some(k_inv) = k_inv else {
        return frictionless;
    };
    let p_stick = k_inv * du;
    let pn = p_stick.dot(&n);
    let pt = p_stick - pn * n;
    let pt_norm = pt.norm();
    // |p_t| < μ |p_n|   (eq. 74), for a pushing impulse
    if pn > 0.0 && pt_norm <= mu * pn {
        return p_stick;
    }
    // Sliding: p = p_n (n + μ q̂), p_n = (1 + e)(−u_n) / nᵀK(n + μ q̂)   (eqs. 75-76)
    let ut = u - un * n;
    let slip = ut.norm();
    let q_hat = if slip > 1e-12 * u.norm() {
        -ut / slip
    } else if pt_norm > 0.0 {
        pt / pt_norm
    } else {
        return frictionless;
    };
    let dir = n + mu * q_hat;
    let denom = n.dot(&(c.k * dir));
    if denom > 1e-12 * knn {
        (target_n - un) / denom * dir
    } else if pn > 0.0 {
        p_stick
    } else {
        frictionless
    }
}

impl<Q: ContactOrder> CollisionSolver for SqmSolver<Q> {
    fn kind(&self) -> SolverKind {
        SolverKind::Sqm
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

    fn sequential(&self) -> bool {
        true
    }

    fn resolves_speculative_as_touching(&self) -> bool {
        true
    }

    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError> {
        let SolverContext {
            bodies,
            contacts,
            graph,
            params,
            dt,
            mut trace,
            ..
        } = ctx;
        let SqmSolver {
            reapproach,
            prepared,
            k_inv,
            slot,
            first_approach,
            heap,
            ids,
            keys,
        } = self;
        let n_contacts = contacts.len();
        // `PreparedContact::approaching` of the unprepared contact.
        let approaches =
            |c: &Contact, un: f64, threshold: f64| approaching(c.gap, un, dt, threshold);
        // One pass over the contacts' normal velocities (kept in `keys` until they
        // become the keys): whether any contact must be resolved and, for the
        // convergence test, the largest approach speed before the first impulse (a
        // contact counts as approaching only if faster than tolerance × that: without it
        // a resting pile converges only geometrically towards u_n = 0 and never stops).
        let resting = params.resting_speed();
        let (mut impact, mut v_ref) = (false, 0.0f64);
        keys.clear();
        for c in contacts {
            let u = relative_velocity(bodies, c);
            let un = u.dot(&c.normal);
            if !u.iter().all(|v| v.is_finite()) {
                impact = true;
            } else if resolvable(bodies, c) {
                impact |= approaches(c, un, resting);
                if approaches(c, un, 0.0) {
                    v_ref = v_ref.max(-un);
                }
            }
            keys.push(un);
        }
        // Step 2 finds no contact to resolve when none approaches faster than the
        // resting speed (its threshold is at least that): such a step (most steps of a
        // pile at rest) returns before any contact is prepared.
        if !impact {
            return Ok(SolverReport::default());
        }
        prepared.clear();
        k_inv.clear();
        slot.clear();
        slot.resize(n_contacts, UNPREPARED);
        first_approach.clear();
        first_approach.resize(n_contacts, 0.0);
        heap.reset(n_contacts);
        let mut report = SolverReport::default();

        let diverged = |why: String| SolverError::Diverged {
            solver: SolverKind::Sqm,
            why,
        };
        // Resting contacts (approach ≤ `rest_velocity`) are the contact pass's.
        let threshold = (params.tolerance * v_ref).max(resting);
        // The key of contact `ci` in ψ from its normal velocity u_n: u_n if it
        // approaches, else +∞ (steps 2 and 4).
        let key_of = |c: &Contact, ci: usize, un: f64| -> Result<f64, SolverError> {
            if !un.is_finite() {
                return Err(diverged(format!(
                    "non-finite relative normal velocity at contact {ci} (body {})",
                    c.a
                )));
            }
            Ok(if approaches(c, un, threshold) {
                un
            } else {
                f64::INFINITY
            })
        };
        let key = |bodies: &[RigidBody], c: &Contact, ci: usize| {
            key_of(c, ci, relative_velocity(bodies, c).dot(&c.normal))
        };
        for (ci, c) in contacts.iter().enumerate() {
            keys[ci] = if resolvable(bodies, c) {
                key_of(c, ci, keys[ci])?
            } else {
                f64::INFINITY
            };
        }
        ids.clear();
        ids.extend(0..n_contacts);
        heap.build(ids, |ci| keys[ci]);

        let cap = u64::from(params.max_iterations) * n_contacts.max(1) as u64;
        let mut pops: u64 = 0;
        while let Some((ci, _)) = heap.min().filter(|&(_, k)| k < f64::INFINITY) {
            if pops >= cap {
                report.hit_iteration_cap = true;
                break;
            }
            pops += 1;
            if slot[ci] == UNPREPARED {
                slot[ci] = prepared.len() as u32;
                let c = PreparedContact::new(bodies, &contacts[ci]);
                if params.friction > 0.0 {
                    k_inv.push(c.k.cholesky().map(|ch| ch.inverse()));
                }
                prepared.push(c);
            }
            let at = slot[ci] as usize;
            let c = &prepared[at];
            let u = c.relative_velocity(bodies);
            let un = u.dot(&c.n);
            let approach = -un;
            let first_pop = first_approach[ci] == 0.0;
            if first_pop {
                first_approach[ci] = approach;
            }
            let e = |speed: f64| {
                if speed > params.rest_velocity {
                    params.restitution
                } else {
                    0.0
                }
            };
            // Target normal velocity u_n⁺ (eq. 72; see "Restitution on re-approach").
            let target_n = match reapproach {
                Reapproach::Newton => e(approach) * approach,
                Reapproach::FirstApproach => e(first_approach[ci]) * first_approach[ci],
                Reapproach::Plastic if first_pop => e(approach) * approach,
                Reapproach::Plastic => 0.0,
            };
            let p = sqm_impulse(
                c,
                k_inv.get(at).and_then(Option::as_ref),
                &u,
                un,
                target_n,
                params.friction,
            );
            if !p.iter().all(|x| x.is_finite()) {
                return Err(diverged(format!(
                    "non-finite impulse at contact {ci} (body {})",
                    c.a
                )));
            }
            // ΔK = p·(u⁻ + u⁺)/2 (eq. 16), split into normal and tangential parts.
            c.apply_and_book(bodies, &p, &u, ci, &mut report, trace.as_deref_mut());
            // Step 4: re-key the contacts sharing a dynamic body with this one (itself
            // included); b's contacts that also touch a were already re-keyed with a's.
            for body in [Some(c.a), c.b].into_iter().flatten() {
                for &cj in graph.body_contacts(body) {
                    let cj = cj as usize;
                    let other = &contacts[cj];
                    if body != c.a
                        && (other.a == c.a || other.b == Some(c.a))
                        && !bodies[c.a].is_static()
                    {
                        continue;
                    }
                    heap.update(cj, key(bodies, other, cj)?);
                }
            }
        }
        report.iterations = u32::try_from(pops).unwrap_or(u32::MAX);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dynamics::queue::TournamentTree;
    use crate::dynamics::queue::legacy::SqmHeap;
    use crate::dynamics::queue::problems::problems;

    /// The shared queue against the binary heap SQM used before, whose ties already
    /// fell by contact index: the same (u_n, index) order, so bit-identical post-solve
    /// velocities on 300 random collisions and 150 degenerate ones (ties, stacks,
    /// four-point faces), under each re-approach rule.
    #[test]
    fn shared_queue_gives_the_old_heaps_solution() {
        for p in problems(0x5A1, 300) {
            for reapproach in [
                Reapproach::Newton,
                Reapproach::FirstApproach,
                Reapproach::Plastic,
            ] {
                let mut new = SqmSolver::new(reapproach);
                let mut old = SqmSolver::with_order(SqmHeap::default());
                old.reapproach = reapproach;
                let mut tree = SqmSolver::with_order(TournamentTree::default());
                tree.reapproach = reapproach;
                let v = p.solve(&mut new);
                assert_eq!(
                    v,
                    p.solve(&mut old),
                    "{} ({reapproach:?}): same order, same velocities",
                    p.name
                );
                assert_eq!(v, p.solve(&mut tree), "{} ({reapproach:?}): tree", p.name);
            }
        }
    }
}
