//! Rotational integration (paper 004, Appendix B). OWNER: rotation helper.
//!
//! The world's step splits rotation in two phases around collision resolution:
//! [`RotationIntegrator::integrate_angular_velocity`] ("integrate velocities", before the
//! solver) and [`RotationIntegrator::integrate_orientation`] ("integrate positions",
//! after it).

use crate::math::{Quat, Vec3};
use serde::{Deserialize, Serialize};

/// Rotational time-integration scheme.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RotationIntegrator {
    /// Explicit gyroscopic term at ω₀, orientation advanced with the end-of-step ω.
    SymplecticEuler,
    /// θ-method (paper 004, eqs. B.1-B.7, gyroscopic term at ω_θ = θω + (1−θ)ω₀, solved by
    /// Newton iteration) with the quaternion exponential update z = exp(Δt Ψ_θ) z₀
    /// (eqs. B.9-B.14). θ = 1/2 is the implicit midpoint rule; θ = 1 is eq. B.1 as printed.
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
    pub fn integrate_angular_velocity(&self, inertia: &Vec3, q0: &Quat, omega0: &Vec3, torque: &Vec3, dt: f64) -> Vec3 {
        let _ = (inertia, q0, omega0, torque, dt);
        unimplemented!("rotation helper")
    }

    /// Phase 2. Given `q0`, the start-of-step world angular velocity `omega0` and the
    /// post-collision world angular velocity `omega1` (both in the `q0` frame), return the
    /// new orientation q₁ and the world angular velocity carried by the body,
    /// R₁ R₀ᵀ ω₁.
    pub fn integrate_orientation(&self, q0: &Quat, omega0: &Vec3, omega1: &Vec3, dt: f64) -> (Quat, Vec3) {
        let _ = (q0, omega0, omega1, dt);
        unimplemented!("rotation helper")
    }
}
