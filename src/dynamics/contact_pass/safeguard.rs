//! The pass's energy safeguard and bookkeeping: book the sweeps' net work, and undo or
//! scale back a result that gained kinetic energy (see [`super::DISSIPATION_SLACK`]).

use super::super::solver::{SolverReport, kinetic_change_terms, most_dissipative_multiple};
use super::ContactPass;
use super::row::relative_angular_velocity;
use crate::body::RigidBody;

impl ContactPass {
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
    pub(super) fn book_net_work(&self, bodies: &[RigidBody], report: &mut SolverReport) {
        for (row, cold) in self.rows.iter().zip(&self.cold) {
            if !row.started {
                continue;
            }
            let drift = self.drift_of(cold.a, cold.b);
            let u = 0.5 * (cold.u_start + row.relative_velocity(cold, bodies)) + drift;
            let w = 0.5 * (cold.w_start + relative_angular_velocity(cold, bodies));
            let normal = row.lambda_n * row.n.dot(&u);
            let tangent = row.lambda_t.x * row.t1.dot(&u) + row.lambda_t.y * row.t2.dot(&u);
            let turning = (row.spin * row.n + row.roll).dot(&w);
            report.drift_work +=
                (row.lambda_n * row.n + row.lambda_t.x * row.t1 + row.lambda_t.y * row.t2)
                    .dot(&drift);
            report.dissipated_restitution -= normal;
            report.dissipated_friction -= tangent + turning;
        }
    }

    /// Put back the velocities saved before the pass.
    pub(super) fn restore(&self, bodies: &mut [RigidBody]) {
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
    pub(super) fn scale_back(&self, bodies: &mut [RigidBody]) -> f64 {
        let (mut a, mut c) = (0.0, 0.0);
        for (b, (v0, w0)) in bodies.iter().zip(&self.saved) {
            if b.is_static() {
                continue;
            }
            let (dv, dw) = (b.velocity - v0, b.angular_velocity - w0);
            let (ab, cb) = kinetic_change_terms(b, (v0, w0), (&dv, &dw));
            a += ab;
            c += cb;
        }
        let s = most_dissipative_multiple(a, c);
        for (b, (v0, w0)) in bodies.iter_mut().zip(&self.saved) {
            if b.is_static() {
                continue;
            }
            b.velocity = v0 + s * (b.velocity - v0);
            b.angular_velocity = w0 + s * (b.angular_velocity - w0);
        }
        s
    }
}
