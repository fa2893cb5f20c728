//! Particle velocity-jolt method with position projection (paper 001, Appendix B),
//! generalised from particles to rigid bodies through the collision matrix.
//!
//! Steps, per solver call:
//! 1. For each contact in order, if it is *impacting* (u_n < 0, step b.2) and active
//!    (overlapping, or speculative: gap + h u_n < 0), apply the velocity jolt
//!    j = −(1 + e) m_eff u_n along n (eqs. B.5-B.9) with the friction jolt −μ j t̂
//!    clipped so it never exceeds what stops the tangential slip (step c.4).
//!    For particles m_eff is the reduced mass m_a m_b/(m_a + m_b) (eq. B.6), or m_a
//!    against a static surface (eq. B.11); for rigid bodies it is 1/(nᵀ K n) with the
//!    collision matrix K (paper 000, eq. 9), which reduces to it for central contacts.
//!    Approaches not faster than the resting speed (`SolverParams::resting_speed`) are
//!    left to the contact pass, as ETM, SQM and SMM do: the clipped friction jolt stops
//!    a contact's own slip, but not the slip its normal jolt makes at the other contacts
//!    of an off-centre body (a cube on a slope crept at 5 mm/s).
//! 2. Sweep again while any contact still approaches (a jolt at one contact can make a
//!    neighbour approach), up to `max_iterations` sweeps; "approaches" means faster than
//!    `tolerance` × the fastest approach at the start of the step. Every jolt, first or
//!    repeated, is step c of paper 001 on the contact's *current* normal velocity u_n
//!    (step b.2): it leaves the contact separating at −e u_n, so its normal impulse does
//!    the work j (u_n − e u_n)/2 = −½ (1 − e²) m_eff u_n² ≤ 0 (paper 000, eq. 16): no
//!    energy gained, none lost at e = 1. Approach speeds −u_n up to `rest_velocity` get
//!    e = 0 (resting contact).
//! 3. Position projection (eqs. 5.27-5.28, B.17-B.18): each overlapping pair moves apart
//!    by k_p m_red Δx along n, with m_red,a = m_b/(m_a + m_b) (1 against a static
//!    surface). Stable for k_p < 0.5 (B.22). With the contact pass off, jolt does it
//!    itself, once per pair using its deepest point. With the pass on (the default), the
//!    world's projection after the pass does it (`ContactPass::project`): the same
//!    fraction k_p of every overlap, all of a body's contacts at once and with rotation,
//!    which for a particle with one contact is eq. B.18 itself. A per-pair linear push
//!    cannot undo a tilt, so a stack of faces would keep leaning (figures in
//!    docs/results/fidelity.md, "Stacks").
//!    Under the soft resting model (`SolverParams::resting_model`) the pass's bias
//!    removes overlap instead, and neither projection runs.
//!
//! Energy: the kinetic-energy change of one impulse P is exactly P·(u⁻ + u⁺)/2; its
//! normal part is booked as restitution dissipation and its tangential part as friction
//! dissipation. Projection moves bodies without forces
//! ([`RigidBody::displace`](crate::body::RigidBody::displace): each keeps its linear and
//! angular momentum); its potential-energy change, and the spin change that keeps the
//! angular momentum (`SolverReport::projection_work`), are artificial and the world
//! books them as the ledger's `projection`.

use super::prepared::PreparedContact;
use super::{
    CollisionSolver, Param, SolverContext, SolverError, SolverKind, SolverParams, SolverReport,
};
use crate::collision::relative_velocity;
use crate::dynamics::contact_pass::project_pairs;

#[derive(Clone, Default)]
pub struct JoltSolver {
    /// The contacts that impacted this step, prepared when they first did
    /// (`slot[ci]` is contact ci's index here, [`UNPREPARED`] if it has not impacted).
    prepared: Vec<PreparedContact>,
    slot: Vec<u32>,
    /// The contacts the current sweep still visits and those the next sweep visits, one
    /// bit each: every contact in the first sweep, then those whose bodies an impulse
    /// changed since they were last looked at (a contact found not impacting whose
    /// bodies have not changed has the same u_n). An impulse at contact ci marks the
    /// contacts of its dynamic bodies, those after ci for this sweep and the others
    /// (ci itself among them) for the next.
    visit_now: Vec<u64>,
    visit_next: Vec<u64>,
    /// Per body, whether an impulse has changed its velocity this step.
    changed: Vec<bool>,
    /// Per contact, its relative velocity at the start of the step: the first sweep's
    /// for a contact whose bodies no earlier impulse of that sweep changed.
    start: Vec<crate::math::Vec3>,
}

/// `JoltSolver::slot` of a contact that has not impacted this step.
const UNPREPARED: u32 = u32::MAX;

impl CollisionSolver for JoltSolver {
    fn kind(&self) -> SolverKind {
        SolverKind::Jolt
    }

    fn own_parameters(&self) -> &'static [Param] {
        &[
            Param::Restitution,
            Param::Friction,
            Param::Kp,
            Param::MaxIterations,
            Param::Tolerance,
            Param::RestVelocity,
            Param::ContactPass,
        ]
    }

    /// Paper 001's per-pair projection (step 3) runs only without the contact pass; with
    /// it, the world's projection after the pass applies the same eq. B.18 to every
    /// contact of a body at once, with rotation (module doc).
    fn corrects_positions(&self, params: &SolverParams) -> bool {
        !params.contact_pass
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
        self.prepared.clear();
        self.slot.clear();
        self.slot.resize(contacts.len(), UNPREPARED);
        self.changed.clear();
        self.changed.resize(bodies.len(), false);
        let words = contacts.len().div_ceil(64);
        self.visit_now.clear();
        self.visit_now.resize(words, u64::MAX);
        if contacts.len() % 64 != 0 {
            self.visit_now[words - 1] = (1 << (contacts.len() % 64)) - 1;
        }
        self.visit_next.clear();
        self.visit_next.resize(words, 0);
        let mut report = SolverReport::default();

        // Convergence: stop when no contact approaches faster than `tolerance` times the
        // fastest approach at the start of the step.
        self.start.clear();
        self.start
            .extend(contacts.iter().map(|c| relative_velocity(bodies, c)));
        let v_scale = contacts
            .iter()
            .zip(&self.start)
            .map(|(c, u)| -u.dot(&c.normal))
            .fold(0.0, f64::max);
        // Approaches up to the resting speed are the contact pass's (as for ETM, SQM, SMM).
        let v_tol = (params.tolerance * v_scale).max(params.resting_speed());
        for sweep in 1..=params.max_iterations {
            report.iterations = sweep;
            let mut applied = false;
            // The marked contacts in increasing index, including those an impulse of
            // this sweep marks ahead of the current one.
            let mut word = 0;
            while word < words {
                let bits = self.visit_now[word];
                if bits == 0 {
                    word += 1;
                    continue;
                }
                self.visit_now[word] = bits & (bits - 1);
                let ci = 64 * word + bits.trailing_zeros() as usize;
                let c = &contacts[ci];
                // No impulse has changed the bodies since the step began: the velocity is
                // the one computed then.
                let unchanged = !self.changed[c.a] && c.b.is_none_or(|b| !self.changed[b]);
                let u = if unchanged {
                    self.start[ci]
                } else {
                    relative_velocity(bodies, c)
                };
                let un = u.dot(&c.normal);
                if un >= -v_tol || (c.gap > 0.0 && c.gap + dt * un >= 0.0) {
                    continue;
                }
                if self.slot[ci] == UNPREPARED {
                    self.slot[ci] = self.prepared.len() as u32;
                    self.prepared.push(PreparedContact::new(bodies, c));
                }
                let c = &self.prepared[self.slot[ci] as usize];
                // Restitution on the current approach speed (steps b.2, c.2).
                let e = if -un > params.rest_velocity {
                    params.restitution
                } else {
                    0.0
                };
                // The jolt j = −(1 + e) m_eff u_n (eq. B.9): u_n⁺ = −e u_n.
                let m_eff = 1.0 / c.n.dot(&(c.k * c.n));
                let j = -(1.0 + e) * m_eff * un;
                // Friction jolt −μ j t̂, clipped to the impulse that stops the slip (c.4).
                let ut = u - un * c.n;
                let slip = ut.norm();
                let mut p = j * c.n;
                if slip > 1e-14 && params.friction > 0.0 {
                    let t_hat = ut / slip;
                    let jt_stop = slip / t_hat.dot(&(c.k * t_hat));
                    p -= (params.friction * j).min(jt_stop) * t_hat;
                }
                if !(j.is_finite() && p.iter().all(|x| x.is_finite())) {
                    return Err(SolverError::Diverged {
                        solver: SolverKind::Jolt,
                        why: format!("non-finite impulse at contact of body {}", c.a),
                    });
                }
                c.apply_and_book(bodies, &p, &u, ci, &mut report, trace.as_deref_mut());
                for body in std::iter::once(c.a).chain(c.b) {
                    if bodies[body].is_static() {
                        continue; // its velocity stays what it was
                    }
                    self.changed[body] = true;
                    for &cj in graph.body_contacts(body) {
                        let cj = cj as usize;
                        let marks = if cj > ci {
                            &mut self.visit_now
                        } else {
                            &mut self.visit_next
                        };
                        marks[cj / 64] |= 1 << (cj % 64);
                    }
                }
                applied = true;
            }
            if !applied {
                break;
            }
            std::mem::swap(&mut self.visit_now, &mut self.visit_next);
            self.visit_next.fill(0);
            if sweep == params.max_iterations {
                report.hit_iteration_cap = true;
            }
        }

        // Position projection, once per pair with its deepest overlap (eqs. B.17-B.18),
        // without the contact pass; with it the world projects after the pass.
        if params.kp > 0.0 && self.corrects_positions(params) {
            report.projection_work += project_pairs(bodies, contacts, params.kp);
        }
        Ok(report)
    }
}
