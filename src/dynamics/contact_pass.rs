//! Resolve contacts: the shock-propagation contact pass of Guendelman, Bridson and Fedkiw
//! (2003), "Nonconvex rigid bodies with stacking" (paper 000, ref. 54), run after the
//! collision solver so that piles come to rest.
//!
//! A sequential solver capped at a finite number of sweeps leaves small approach
//! velocities deep in a stack (Gauss-Seidel propagates the weight of the pile down by one
//! layer per sweep); those become penetration, projection and jitter. The pass fixes that
//! in one sweep, bottom up:
//! 1. **Levels**: bodies touching a static container or a static body get level 0; a body
//!    touching a level-k body gets level k + 1 (breadth-first over the contacts). Groups
//!    touching nothing static get no level.
//! 2. **Order**: contacts are visited by the lower level of their two bodies (ties by
//!    contact index: deterministic).
//! 3. **Inelastic impulse**: a contact still approaching (u_n < 0; speculative contacts
//!    only if gap + h u_n < 0) gets the perfectly inelastic impulse with Coulomb friction:
//!    sticking P = −K⁻¹u if |P_t| ≤ μ P_n, else sliding P = P_n (n − μ t̂) with
//!    P_n = −u_n / nᵀK(n − μ t̂) (paper 000, eqs. 72-76 with e = 0). The lower-level body
//!    of the pair is treated as infinitely heavy (its inverse mass and inertia are left
//!    out of K), so the support's reaction does not disturb the layers already settled.
//!
//! Contacts a converged solver left separating or resting are not touched, so the pass
//! does not change the solvers' results on isolated collisions. Freezing the lower body
//! does not conserve momentum (the support absorbs the reaction, as the ground would);
//! its kinetic-energy change is booked as restitution (normal) and friction
//! (tangential) dissipation like any impulse.

use super::solver::SolverReport;
use super::solver::prepared::PreparedContact;
use crate::body::RigidBody;
use crate::collision::Contact;
use crate::math::{Mat3, Vec3};

/// Scratch space of the pass (kept between steps to avoid allocation).
#[derive(Default)]
pub struct ContactPass {
    level: Vec<u32>,
    adjacency: Vec<Vec<usize>>,
    order: Vec<(u32, usize)>,
    queue: std::collections::VecDeque<usize>,
}

const NO_LEVEL: u32 = u32::MAX;

impl ContactPass {
    /// Run the pass over `contacts`; adds its dissipation to `report`.
    pub fn run(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        friction: f64,
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
        for c in contacts {
            let b_static = c.b.is_none_or(|b| bodies[b].is_static());
            if b_static && !bodies[c.a].is_static() && self.level[c.a] != 0 {
                self.level[c.a] = 0;
                self.queue.push_back(c.a);
            } else if let Some(b) = c.b {
                if bodies[c.a].is_static() && !bodies[b].is_static() && self.level[b] != 0 {
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
        // 2. order: by the lower level of the pair (a static side counts as below 0).
        self.order.clear();
        for (k, c) in contacts.iter().enumerate() {
            let la = self.level[c.a];
            let lb = c.b.map_or(0, |b| {
                if bodies[b].is_static() {
                    0
                } else {
                    self.level[b]
                }
            });
            self.order.push((la.min(lb), k));
        }
        self.order.sort_unstable();

        // 3. inelastic impulses, lower body frozen
        for &(_, k) in &self.order {
            let c = &contacts[k];
            let mut p = PreparedContact::new(bodies, c);
            let u = p.relative_velocity(bodies);
            let un = u.dot(&p.n);
            if un >= 0.0 || (c.gap > 0.0 && c.gap + dt * un >= 0.0) {
                continue;
            }
            if let Some(b) = c.b {
                let (la, lb) = (self.level[c.a], self.level[b]);
                if la < lb {
                    freeze_a(&mut p, bodies);
                } else if lb < la {
                    freeze_b(&mut p);
                }
            }
            let Some(impulse) = inelastic_impulse(&p.k, &u, &p.n, friction) else {
                continue;
            };
            p.apply_impulse(bodies, &impulse);
            let u_after = u + p.k * impulse;
            let w_normal = impulse.dot(&p.n) * 0.5 * (un + u_after.dot(&p.n));
            let w_total = impulse.dot(&(0.5 * (u + u_after)));
            report.dissipated_restitution -= w_normal;
            report.dissipated_friction -= w_total - w_normal;
            report.impulses += 1;
        }
    }
}

/// Leave body a out of the contact's collision matrix (treat it as infinitely heavy).
fn freeze_a(p: &mut PreparedContact, bodies: &[RigidBody]) {
    let _ = bodies;
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

/// The perfectly inelastic impulse with Coulomb friction for relative velocity `u`
/// (sticking if inside the cone, else sliding on its edge); `None` if K is degenerate.
pub fn inelastic_impulse(k: &Mat3, u: &Vec3, n: &Vec3, mu: f64) -> Option<Vec3> {
    let un = u.dot(n);
    // Sticking: bring the whole relative velocity to zero, P = −K⁻¹ u.
    if let Some(k_inv) = k.try_inverse() {
        let p = -(k_inv * u);
        let pn = p.dot(n);
        if pn >= 0.0 && (p - pn * n).norm() <= mu * pn && p.iter().all(|x| x.is_finite()) {
            return Some(p);
        }
    }
    // Sliding: P = P_n (n − μ t̂), t̂ the slip direction, with u_n⁺ = 0.
    let ut = u - un * n;
    let slip = ut.norm();
    let dir = if slip > 1e-14 * u.norm().max(1e-300) && mu > 0.0 {
        n - mu * ut / slip
    } else {
        *n
    };
    let denom = n.dot(&(k * dir));
    if denom <= 0.0 || !denom.is_finite() {
        return None;
    }
    let pn = -un / denom;
    Some(pn * dir)
}
