//! Rotational integration (paper 004, Appendix B). OWNER: rotation helper.
//!
//! The world's step splits rotation in two phases around collision resolution:
//! [`RotationIntegrator::integrate_angular_velocity`] ("integrate velocities", before the
//! solver) and [`RotationIntegrator::integrate_orientation`] ("integrate positions",
//! after it).
//!
//! Both phases work in the principal body frame *at the start-of-step orientation q₀*
//! (paper 004: "all quantities pertain to a single particle in the principal body frame"):
//! 1. ω₀ᵇ = R₀ᵀ ω₀, τᵇ = R₀ᵀ τ;
//! 2. solve Euler's equations over the step for ω₁ᵇ (explicitly, or by the θ-method with
//!    Newton iteration, eqs. B.1-B.7) and hand the solver ω₁ = R₀ ω₁ᵇ;
//! 3. after the solver, with its ω₁ (still expressed with q₀), advance the orientation
//!    q₁ = q₀ ⊗ exp((0, h ω̄ᵇ/2)) (eqs. B.10-B.14) and give the body R₁ ω₁ᵇ in free flight,
//!    or, when the solver changed ω, the angular velocity whose world momentum is free
//!    flight's plus the solver's r × P
//!    ([`RotationIntegrator::integrate_orientation_with_impulse`]).
//!
//! # Quaternion conventions (paper 004, eqs. B.9-B.11 ↔ nalgebra)
//!
//! The paper writes z = (z₁, z₂, z₃, z₄) with the scalar part last and A(z) (eq. B.9) the
//! *world → body* rotation matrix. Matching B.9 and B.10-B.11 term by term against
//! nalgebra's `UnitQuaternion` q = w + x i + y j + z k (principal frame → world, as
//! [`crate::body::RigidBody::orientation`]) gives
//!
//! w = z₄,  x = z₂,  y = −z₁,  z = z₃      (so A(z) = R(q)ᵀ),
//!
//! and then ż = Ψ z of eq. B.11 with body-frame ω is exactly q̇ = ½ q ⊗ (0, ωᵇ). Hence
//! exp(h Ψ(ω)) z₀ is q₀ ⊗ exp((0, hω/2)) — a rotation of the body by the angle h|ω| about
//! the body axis ω — which is the closed form used here (Ψ² = −¼|ω|² 𝟙, so
//! exp(hΨ) = cos(a) 𝟙 + (sin a / a) hΨ with a = h|ω|/2). [`quat_from_paper_z`] and
//! [`paper_z_from_quat`] convert; `tests/rotation.rs` checks the mapping against B.9 and
//! the closed form against the power series of the 4x4 matrix exponential of eq. B.11.
//!
//! # Why the θ = ½ orientation update uses the Cayley angle
//!
//! See [`RotationIntegrator::Theta`]: with the plain exponential the world-frame angular
//! momentum drifts by O(h²) (measured 9.99e-7 relative over 10 s of a body tumbling through
//! an intermediate-axis flip at |ω| = 2 rad/s, h = 1/600); with the exponential of the
//! Cayley-consistent rotation vector it is conserved to round-off (1.5e-12). The price is
//! a phase lag of (h|ω|)³/12 per step in the spin angle (3.9e-7 rad per step at
//! h|ω| = 1/60), the same order as the phase error the midpoint velocity update already
//! has for a tumbling body.

use crate::math::{Mat3, Quat, Vec3, skew};
use nalgebra::{Quaternion, Vector4};
use serde::{Deserialize, Serialize};

/// Newton iteration (eq. B.4) stops when |δω| ≤ `NEWTON_REL_TOL` · max(|ω|, |ω₀|).
pub const NEWTON_REL_TOL: f64 = 1e-14;
/// Newton iteration cap (convergence is quadratic: a few iterations at h|ω| ≪ 1).
pub const NEWTON_MAX_ITERATIONS: usize = 50;

/// Rotational time-integration scheme.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RotationIntegrator {
    /// Explicit gyroscopic term at ω₀, orientation advanced with the end-of-step ω:
    ///
    /// ω₁ᵇ = ω₀ᵇ + h I⁻¹ (τᵇ − ω₀ᵇ × I ω₀ᵇ),  q₁ = q₀ ⊗ exp((0, h ω₁ᵇ/2)).
    ///
    /// First order; energy and |L| drift (O(h) per unit time), no Newton solve.
    SymplecticEuler,
    /// θ-method (paper 004, eqs. B.1-B.7, gyroscopic term at ω_θ = θω + (1−θ)ω₀, solved by
    /// Newton iteration) with the quaternion exponential update z = exp(Δt Ψ_θ) z₀
    /// (eqs. B.9-B.14). θ = 1/2 is the implicit midpoint rule; θ = 1 is eq. B.1 as printed.
    ///
    /// **Velocity** (body frame at q₀): solve
    ///
    /// r(ω) = τᵇ − I (ω − ω₀)/h − ω_θ × I ω_θ = 0                 (B.1, B.3 generalised)
    ///
    /// by Newton, ω⁽⁰⁾ = ω₀, J δω = r, J = −∂r/∂ω = I/h + θ (ω̃_θ I − (I ω_θ)~)   (B.4, B.7)
    ///
    /// (at θ = 1 this is θΔt · J̄ of eq. B.7; the paper's off-diagonal 1/θ comes from its
    /// gyroscopic term at ω rather than ω_θ). Stops at |δω| ≤ [`NEWTON_REL_TOL`] · max(|ω|, |ω₀|) or
    /// after [`NEWTON_MAX_ITERATIONS`]; deterministic (fixed start, fixed operations).
    ///
    /// **Orientation**: eq. B.13 with Ψ linear in ω gives Ψ_θ = Ψ(ω_θ), ω_θ built from ω₀ᵇ and
    /// the post-collision ω₁ᵇ; z = exp(h Ψ(ω̄)) z₀ (B.14) is applied in closed form as
    /// q₁ = q₀ ⊗ exp((0, h ω̄/2)), i.e. a rotation by h|ω̄| about ω_θ, with
    ///
    /// ω̄ = ω_θ · 2 atan(h|ω_θ|/2) / (h|ω_θ|)      (= ω_θ (1 − h²|ω_θ|²/12 + …)).
    ///
    /// Why not ω̄ = ω_θ as printed: at θ = ½ the velocity update rotates the body-frame
    /// momentum, L₁ᵇ = cay(−h ω̃_θ) L₀ᵇ with the Cayley map
    /// cay(A) = (𝟙 − A/2)⁻¹(𝟙 + A/2), whose angle is 2 atan(h|ω_θ|/2), not h|ω_θ|. The
    /// world momentum R₁ L₁ᵇ equals R₀ L₀ᵇ exactly iff R₁ = R₀ cay(h ω̃_θ), which is the
    /// rotation above. The plain exponential leaves an O(h³) angle mismatch per step
    /// (h³|ω|³/12) that accumulates into an O(h²) drift of the world-frame L. The
    /// rescaling is itself an O(h³) change per step, so it is still a second-order choice of
    /// the quadrature ∫Ψ ds ≈ h Ψ(ω̄) in eq. B.12 (the paper notes "several choices of
    /// updating z exist"); it is applied for every θ (for θ ≠ ½ nothing is exact anyway).
    /// Equivalently z₁ = (𝟙 + hΨ_θ) z₀ / |(𝟙 + hΨ_θ) z₀|.
    Theta { theta: f64 },
}

impl Default for RotationIntegrator {
    fn default() -> Self {
        RotationIntegrator::Theta { theta: 0.5 }
    }
}

impl RotationIntegrator {
    /// Phase 1. Given principal inertia `inertia`, orientation `q0`, world angular velocity
    /// `omega0` and world torque `torque`, return the world angular velocity at the end of
    /// the step, expressed with the start-of-step orientation `q0` (what the collision
    /// solver sees: ω₁ʷ = R₀ ω₁ᵇ).
    ///
    /// `inertia` must be positive (a dynamic body). With `dt == 0` ω is unchanged.
    pub fn integrate_angular_velocity(
        &self,
        inertia: &Vec3,
        q0: &Quat,
        omega0: &Vec3,
        torque: &Vec3,
        dt: f64,
    ) -> Vec3 {
        debug_assert!(
            inertia.iter().all(|i| i.is_finite() && *i > 0.0),
            "principal inertia must be positive and finite, got {inertia:?}"
        );
        if dt == 0.0 {
            return *omega0;
        }
        let w0 = q0.inverse_transform_vector(omega0);
        let tau = q0.inverse_transform_vector(torque);
        let w1 = match *self {
            // ω₁ = ω₀ + h I⁻¹ (τ − ω₀ × I ω₀)   (Euler's equations, explicit)
            RotationIntegrator::SymplecticEuler => {
                w0 + (dt * (tau - w0.cross(&inertia.component_mul(&w0)))).component_div(inertia)
            }
            RotationIntegrator::Theta { theta } => solve_theta(inertia, &w0, &tau, theta, dt),
        };
        q0.transform_vector(&w1)
    }

    /// Phase 2. Given `q0`, the start-of-step world angular velocity `omega0` and the
    /// post-collision world angular velocity `omega1` (both in the `q0` frame), return the
    /// new orientation q₁ and the world angular velocity carried by the body,
    /// R₁ R₀ᵀ ω₁.
    ///
    /// q₁ = q₀ ⊗ exp((0, h ω̄ᵇ/2)), renormalised, with ω̄ᵇ = ω₁ᵇ for
    /// [`RotationIntegrator::SymplecticEuler`] and the Cayley-scaled ω_θ for
    /// [`RotationIntegrator::Theta`] (eqs. B.13-B.14, see there).
    pub fn integrate_orientation(
        &self,
        q0: &Quat,
        omega0: &Vec3,
        omega1: &Vec3,
        dt: f64,
    ) -> (Quat, Vec3) {
        let w1 = q0.inverse_transform_vector(omega1);
        let rotation_vector = match *self {
            RotationIntegrator::SymplecticEuler => dt * w1,
            RotationIntegrator::Theta { theta } => {
                // ω_θ = θ ω₁ + (1 − θ) ω₀, so Ψ_θ = θΨ + (1−θ)Ψ₀ = Ψ(ω_θ)   (eq. B.13)
                let w0 = q0.inverse_transform_vector(omega0);
                cayley_rotation_vector(&(dt * (theta * w1 + (1.0 - theta) * w0)))
            }
        };
        // z = exp(hΨ) z₀ ⇔ q₁ = q₀ ⊗ exp((0, hω̄/2))   (eq. B.14, module doc)
        let mut q1 = q0 * quat_exp(&(0.5 * rotation_vector));
        q1.renormalize();
        (q1, q1.transform_vector(&w1))
    }

    /// Phase 2 when the collision solver changed the angular velocity: given the principal
    /// `inertia`, `q0`, the start-of-step `omega0`, the kick's result `omega_kick` (phase 1,
    /// before the solver) and the solver's `omega1` (all world vectors expressed with q₀),
    /// return q₁ and the body's world angular velocity, such that the world angular
    /// momentum is exactly the free flight's plus the solver's change.
    ///
    /// The solver applies impulses with the world inertia at q₀, so it changes the world
    /// angular momentum about the centre of mass by ΔL = R₀ I (ω₁ᵇ − ωₖᵇ) = Σ r × P
    /// exactly. Free flight (phase 1 then [`Self::integrate_orientation`] with
    /// ω₁ = ωₖ) ends with L_f = R_f I ωₖᵇ, R_f its own end orientation; for θ = ½ this
    /// is R₀ I ω₀ᵇ (+ the torque's impulse) to round-off (the Cayley identity, see
    /// [`RotationIntegrator::Theta`]), and for symplectic Euler when I is isotropic.
    /// The body ends with
    ///
    /// q₁ as in [`Self::integrate_orientation`] with (ω₀, ω₁),
    /// L₁ = L_f + ΔL,   ω = R₁ I⁻¹ R₁ᵀ L₁.
    ///
    /// Handing back R₁ ω₁ᵇ instead, as free flight does, would rotate the impulse's ΔL
    /// with the body by R₁ R₀ᵀ: an O(h |ω| |ΔL|) error per impact. With ω₁ = ωₖ (no
    /// impulse) the result is [`Self::integrate_orientation`]'s, bit for bit.
    pub fn integrate_orientation_with_impulse(
        &self,
        inertia: &Vec3,
        q0: &Quat,
        omega0: &Vec3,
        omega_kick: &Vec3,
        omega1: &Vec3,
        dt: f64,
    ) -> (Quat, Vec3) {
        if omega1 == omega_kick {
            return self.integrate_orientation(q0, omega0, omega1, dt);
        }
        let (q1, _) = self.integrate_orientation(q0, omega0, omega1, dt);
        let (q_free, _) = self.integrate_orientation(q0, omega0, omega_kick, dt);
        let wk = q0.inverse_transform_vector(omega_kick);
        let w1 = q0.inverse_transform_vector(omega1);
        // L₁ = R_f I ωₖᵇ + R₀ I (ω₁ᵇ − ωₖᵇ)
        let l1 = q_free.transform_vector(&inertia.component_mul(&wk))
            + q0.transform_vector(&inertia.component_mul(&(w1 - wk)));
        let w = q1.inverse_transform_vector(&l1).component_div(inertia);
        (q1, q1.transform_vector(&w))
    }
}

/// θ-method velocity update in the principal body frame (paper 004, eqs. B.1-B.7 with the
/// gyroscopic term at ω_θ): Newton on r(ω) = τ − I(ω − ω₀)/h − ω_θ × I ω_θ from ω⁽⁰⁾ = ω₀.
fn solve_theta(inertia: &Vec3, w0: &Vec3, tau: &Vec3, theta: f64, h: f64) -> Vec3 {
    let i_mat = Mat3::from_diagonal(inertia);
    let mut w = *w0;
    for _ in 0..NEWTON_MAX_ITERATIONS {
        let wt = theta * w + (1.0 - theta) * w0;
        let iwt = inertia.component_mul(&wt);
        // r(ω_k) = m₀ − I (ω_k − ω₀)/Δt − ω_θ × I ω_θ   (eq. B.3)
        let r = tau - inertia.component_mul(&(w - w0)) / h - wt.cross(&iwt);
        // J = −∂r/∂ω = I/Δt + θ (ω̃_θ I − (I ω_θ)~)   (eq. B.7 times θΔt at θ = 1)
        let j = i_mat / h + theta * (skew(&wt) * i_mat - skew(&iwt));
        // Singular only for absurd h|ω| (or non-positive inertia): keep the last iterate.
        let Some(j_inv) = j.try_inverse() else { break };
        let dw = j_inv * r;
        w += dw; // eq. B.4
        if dw.norm() <= NEWTON_REL_TOL * w.norm().max(w0.norm()) {
            break;
        }
    }
    w
}

/// The rotation vector φ̄ = φ · 2 atan(|φ|/2)/|φ| whose exponential is the Cayley rotation
/// cay(φ̃) = (𝟙 − φ̃/2)⁻¹(𝟙 + φ̃/2): same axis, angle 2 atan(|φ|/2).
fn cayley_rotation_vector(phi: &Vec3) -> Vec3 {
    let a = phi.norm();
    if a == 0.0 {
        *phi
    } else {
        phi * (2.0 * (0.5 * a).atan() / a)
    }
}

/// Exponential of the pure quaternion (0, u): cos|u| + sin|u| û, the rotation by the angle
/// 2|u| about u. Unit to round-off for every u (sin x / x has no cancellation).
pub fn quat_exp(u: &Vec3) -> Quat {
    let a = u.norm();
    let sinc = if a == 0.0 { 1.0 } else { a.sin() / a };
    let v = u * sinc;
    Quat::new_unchecked(Quaternion::new(a.cos(), v.x, v.y, v.z))
}

/// nalgebra orientation (principal → world) from the paper's z = (z₁, z₂, z₃, z₄) of
/// eqs. B.9-B.11: w = z₄, x = z₂, y = −z₁, z = z₃ (normalised).
pub fn quat_from_paper_z(z: &Vector4<f64>) -> Quat {
    Quat::new_normalize(Quaternion::new(z[3], z[1], -z[0], z[2]))
}

/// The paper's z = (z₁, z₂, z₃, z₄) = (−y, x, z, w) of a nalgebra orientation q = w + xi + yj + zk
/// (inverse of [`quat_from_paper_z`]).
pub fn paper_z_from_quat(q: &Quat) -> Vector4<f64> {
    Vector4::new(-q.j, q.i, q.k, q.w)
}
