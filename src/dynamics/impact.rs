//! Impulses at the moment of impact for speculative contacts.
//!
//! A method that resolves an active speculative contact (gap g > 0 that the step would
//! close) as if it touched at the start of the step applies restitution a few
//! millimetres above the surface, to the velocity after the whole step's kick, and loses
//! the part of the approach that remained: a ball dropped with e = 0.5 at h = 1/600 s
//! rebounded to 0.265 of its height instead of 0.25. With `World::impact_timing` on, the
//! world times the impulse.
//!
//! Semi-implicit Euler under a constant acceleration a is exact read as leapfrog: the
//! positions xₙ lie on the parabola whose velocity at mid-step is the stored v⁻ (after
//! the kick), x(s) = xₙ + v⁻ s + ½ a s (s − h) for s ∈ [0, h]. Along it the contact
//! closes at the root τ ∈ (0, h] of g + u⁻ τ + ½ aₙ τ (τ − h) = 0 (u⁻ the relative normal
//! velocity, aₙ the relative normal acceleration), with the velocity
//! ṽ(τ) = v⁻ + a (τ − h/2). So, for each body, τ is its earliest impact in the step, and
//! 1. before the solver: v ← v⁻ + a (τ − h/2), the velocity at the impact, which is what
//!    the method's restitution law sees;
//! 2. after it, with Δv = the solver's velocity change: v⁺ ← v − a (τ − h/2) (back to
//!    mid-step), and the body is moved by Δx = −τ Δv, since it went at v⁻ until τ and at
//!    v⁺ after: x₁ = xₙ + τ v⁻ + (h − τ) v⁺ = xₙ + h v⁺ − τ Δv;
//!    The lever arm is unchanged: against a static surface the contact point moves
//!    with the body.
//!
//! A ball then leaves the floor at e ṽ(τ) from the floor, on the parabola of the exact
//! bounce. Only impacts on static surfaces (containers, static bodies) of bodies with no
//! other contact in the step are timed: two moving bodies brought into contact at τ
//! leave their rotating surfaces overlapping by the linearisation error, which the
//! position projection then removes without keeping the angular momentum (measured:
//! 1e-6 relative in the verify cluster), and a body in a pile would be moved by −τ Δv
//! with Δv its neighbours' pushes too, into them (µm overlaps that the projection
//! removes, its energy in the ledger's residual). Elsewhere the impulse stays at the
//! start of the step. Bodies with no impacting speculative contact (τ = 0), resting contacts
//! (approach not faster than the resting speed) and the orientation are left as they
//! are. The kinetic-energy changes of steps 1 and 2 and the potential-energy change of Δx
//! are the time discretisation of the external forces: the world books them with the
//! kick, as integration; the solver books its impulses' work at ṽ(τ), the velocity of
//! the impact.

use crate::body::RigidBody;
use crate::collision::{Contact, relative_velocity};
use crate::math::Vec3;

/// Per-body impact timing of one step (scratch kept between steps).
#[derive(Clone, Default)]
pub struct ImpactTiming {
    /// Earliest impact time τ in the step (0: none).
    tau: Vec<f64>,
    /// a (τ − h/2) added before the solver.
    shift: Vec<Vec3>,
    /// Velocity handed to the solver.
    given: Vec<Vec3>,
    /// Bodies with a contact that is not a timed impact.
    blocked: Vec<bool>,
    any: bool,
}

/// The root in (0, h] of g + u τ + ½ a τ (τ − h) = 0 closest to 0, for g > 0 and a
/// contact that closes within the step (g + h u < 0).
fn impact_time(gap: f64, u: f64, a: f64, h: f64) -> f64 {
    // ½ a τ² + (u − a h/2) τ + g = 0
    let (qa, qb, qc) = (0.5 * a, u - 0.5 * a * h, gap);
    let linear = -qc / qb;
    let tau = if qa.abs() <= 1e-12 * qb.abs() / h {
        linear
    } else {
        let disc = qb * qb - 4.0 * qa * qc;
        if disc < 0.0 {
            linear
        } else {
            // The smaller positive root, in the cancellation-free form.
            let q = -0.5 * (qb + qb.signum() * disc.sqrt());
            let (r1, r2) = (q / qa, qc / q);
            [r1, r2]
                .into_iter()
                .filter(|r| *r > 0.0)
                .fold(f64::INFINITY, f64::min)
        }
    };
    if tau.is_finite() {
        tau.clamp(0.0, h)
    } else {
        0.0
    }
}

impl ImpactTiming {
    /// Step 1: find each body's earliest impact among `contacts` (speculative, closing
    /// within the step, approaching faster than `resting_speed`) with the bodies'
    /// external accelerations `accel`, and move its velocity to the impact's. Returns
    /// the kinetic-energy change.
    pub fn begin(
        &mut self,
        bodies: &mut [RigidBody],
        contacts: &[Contact],
        accel: &[Vec3],
        resting_speed: f64,
        h: f64,
    ) -> f64 {
        let n = bodies.len();
        self.tau.clear();
        self.tau.resize(n, f64::INFINITY);
        self.any = false;
        self.blocked.clear();
        self.blocked.resize(n, false);
        for c in contacts {
            // Impacts on static surfaces only, of bodies with no other contact (see the
            // module doc).
            let against_static = c.b.is_none_or(|b| bodies[b].is_static());
            let un = relative_velocity(bodies, c).dot(&c.normal);
            if c.gap <= 0.0 || !against_static || un >= -resting_speed || c.gap + h * un >= 0.0 {
                for i in std::iter::once(c.a).chain(c.b) {
                    self.blocked[i] = true;
                }
                continue;
            }
            let acc = |i: usize| {
                if bodies[i].is_static() {
                    Vec3::zeros()
                } else {
                    accel[i]
                }
            };
            let an = c.normal.dot(&(acc(c.a) - c.b.map_or(Vec3::zeros(), acc)));
            let tau = impact_time(c.gap, un, an, h);
            for i in std::iter::once(c.a).chain(c.b) {
                if !bodies[i].is_static() && tau < self.tau[i] {
                    self.tau[i] = tau;
                    self.any = true;
                }
            }
        }
        for (tau, &blocked) in self.tau.iter_mut().zip(&self.blocked) {
            if blocked {
                *tau = f64::INFINITY;
            }
        }
        self.any = self.tau.iter().any(|t| t.is_finite());
        self.shift.clear();
        self.given.clear();
        if !self.any {
            return 0.0;
        }
        let mut dk = 0.0;
        for (i, b) in bodies.iter_mut().enumerate() {
            let tau = if self.tau[i].is_finite() {
                self.tau[i]
            } else {
                0.0
            };
            self.tau[i] = tau;
            let shift = if tau > 0.0 {
                accel[i] * (tau - 0.5 * h)
            } else {
                Vec3::zeros()
            };
            let k0 = b.kinetic_energy_translational();
            b.velocity += shift;
            dk += b.kinetic_energy_translational() - k0;
            self.shift.push(shift);
            self.given.push(b.velocity);
        }
        dk
    }

    /// Step 2 after the solver: back to mid-step velocities and the displacement −τ Δv. `gravity` gives the potential energy
    /// −m g·x. Returns the kinetic plus potential energy change.
    pub fn finish(&mut self, bodies: &mut [RigidBody], gravity: &Vec3) -> f64 {
        if !self.any {
            return 0.0;
        }
        let mut de = 0.0;
        for (i, b) in bodies.iter_mut().enumerate() {
            let tau = self.tau[i];
            if tau == 0.0 || b.is_static() {
                continue;
            }
            let k0 = b.kinetic_energy_translational() + b.kinetic_energy_rotational();
            let dv = b.velocity - self.given[i];
            b.velocity -= self.shift[i];
            let dx = -tau * dv;
            b.position += dx;
            de += b.kinetic_energy_translational() + b.kinetic_energy_rotational()
                - k0
                - b.mass * gravity.dot(&dx);
        }
        de
    }
}

#[cfg(test)]
mod tests {
    use super::impact_time;

    #[test]
    fn impact_time_solves_the_leapfrog_parabola() {
        let h = 1.0 / 600.0;
        for (gap, u, a) in [
            (0.004, -4.0, -9.81),
            (0.001, -1.0, 0.0),
            (0.003, -2.0, 9.81),
        ] {
            let tau = impact_time(gap, u, a, h);
            assert!(tau > 0.0 && tau <= h);
            let s = gap + u * tau + 0.5 * a * tau * (tau - h);
            assert!(s.abs() < 1e-15, "{gap} {u} {a}: s({tau}) = {s}");
        }
    }
}
