//! Rigid bodies: state, mass properties and derived kinematic quantities.

use crate::math::{Mat3, Quat, Vec3};
use crate::shapes::Shape;
use serde::{Deserialize, Serialize};

/// A rigid body. Its shape is stored in the body's principal frame (centre of mass at the
/// origin, principal axes along x, y, z), so the body-frame inertia is diagonal.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RigidBody {
    /// Shape in the principal frame.
    pub shape: Shape,
    /// Mass (kg); `inv_mass = 0` for a static body.
    pub mass: f64,
    pub inv_mass: f64,
    /// Principal moments of inertia (kg m²), body frame.
    pub inertia: Vec3,
    /// Inverse principal moments (0 for a static body).
    pub inv_inertia: Vec3,
    /// World position of the centre of mass (m).
    pub position: Vec3,
    /// Orientation: principal frame → world.
    pub orientation: Quat,
    /// Linear velocity of the centre of mass (m/s, world frame).
    pub velocity: Vec3,
    /// Angular velocity (rad/s, world frame).
    pub angular_velocity: Vec3,
}

impl RigidBody {
    /// A dynamic body of uniform `density` whose shape frame is placed at `position` with
    /// `orientation`. The shape is moved to its principal frame; the body position is the
    /// world centre of mass.
    pub fn new(shape: &Shape, density: f64, position: Vec3, orientation: Quat) -> Self {
        let p = shape.principal(density);
        let world_orientation = orientation * p.rotation;
        RigidBody {
            shape: p.shape,
            mass: p.mass,
            inv_mass: 1.0 / p.mass,
            inertia: p.inertia,
            inv_inertia: p.inertia.map(|i| 1.0 / i),
            position: position + orientation * p.center_of_mass,
            orientation: world_orientation,
            velocity: Vec3::zeros(),
            angular_velocity: Vec3::zeros(),
        }
    }

    /// Make the body static (infinite mass and inertia): it never moves.
    pub fn into_static(mut self) -> Self {
        self.inv_mass = 0.0;
        self.inv_inertia = Vec3::zeros();
        self.velocity = Vec3::zeros();
        self.angular_velocity = Vec3::zeros();
        self
    }

    pub fn is_static(&self) -> bool {
        self.inv_mass == 0.0
    }

    /// World-frame inverse inertia tensor `R diag(1/I) Rᵀ`.
    pub fn inv_inertia_world(&self) -> Mat3 {
        // Isotropic inertia (spheres, cubes, crosses, regular tetrahedra): R (s 1) Rᵀ = s 1.
        let d = self.inv_inertia;
        if d.x == d.y && d.y == d.z {
            return Mat3::from_diagonal_element(d.x);
        }
        let r = self.orientation.to_rotation_matrix();
        r.matrix() * Mat3::from_diagonal(&self.inv_inertia) * r.matrix().transpose()
    }

    /// World-frame inertia tensor `R diag(I) Rᵀ`.
    pub fn inertia_world(&self) -> Mat3 {
        let d = self.inertia;
        if d.x == d.y && d.y == d.z {
            return Mat3::from_diagonal_element(d.x);
        }
        let r = self.orientation.to_rotation_matrix();
        r.matrix() * Mat3::from_diagonal(&self.inertia) * r.matrix().transpose()
    }

    /// Velocity of the material point at world position `p`: v + ω × (p − x).
    pub fn velocity_at(&self, p: &Vec3) -> Vec3 {
        self.velocity + self.angular_velocity.cross(&(p - self.position))
    }

    /// ½ m |v|² (0 for a static body).
    pub fn kinetic_energy_translational(&self) -> f64 {
        if self.is_static() {
            0.0
        } else {
            0.5 * self.mass * self.velocity.norm_squared()
        }
    }

    /// ½ ωᵀ I_world ω, evaluated in the body frame as ½ Σ I_k ω_k².
    pub fn kinetic_energy_rotational(&self) -> f64 {
        if self.is_static() {
            return 0.0;
        }
        let wb = self
            .orientation
            .inverse_transform_vector(&self.angular_velocity);
        0.5 * (self.inertia.x * wb.x * wb.x
            + self.inertia.y * wb.y * wb.y
            + self.inertia.z * wb.z * wb.z)
    }

    /// Angular momentum about the world origin: x × m v + I_world ω.
    pub fn angular_momentum(&self) -> Vec3 {
        if self.is_static() {
            return Vec3::zeros();
        }
        self.position.cross(&(self.mass * self.velocity))
            + self.inertia_world() * self.angular_velocity
    }

    /// Apply an impulse `p` at world point `at`: Δv = p/m, Δω = I⁻¹ (r × p).
    pub fn apply_impulse(&mut self, p: &Vec3, at: &Vec3) {
        if self.is_static() {
            return;
        }
        self.velocity += p * self.inv_mass;
        self.angular_velocity += self.inv_inertia_world() * (at - self.position).cross(p);
    }

    /// Move the body by `dx` and turn it to `orientation` without a force (a position
    /// correction): its linear momentum m v is unchanged, and so is its angular momentum
    /// about every fixed point, x × m v + R I Rᵀ ω. Moving the centre changes the orbital
    /// part by Δx × m v and turning an anisotropic body with ω held would change the
    /// spin, so the spin takes both:
    ///
    ///   ω' = (R' I R'ᵀ)⁻¹ (R I Rᵀ ω − Δx × m v).
    ///
    /// No internal impulse could restore a total changed by moving bodies, so this is
    /// the correction that keeps the total angular momentum of a system exact. Returns
    /// the change of rotational kinetic energy (J). Does nothing to a static body.
    pub fn displace(&mut self, dx: &Vec3, orientation: Quat) -> f64 {
        if self.is_static() {
            return 0.0;
        }
        let rotational = self.kinetic_energy_rotational();
        let spin =
            self.inertia_world() * self.angular_velocity - self.mass * dx.cross(&self.velocity);
        self.position += dx;
        self.orientation = orientation;
        self.angular_velocity = self.inv_inertia_world() * spin;
        self.kinetic_energy_rotational() - rotational
    }

    /// World pose as an isometry (principal frame → world).
    pub fn isometry(&self) -> crate::math::Iso3 {
        crate::math::Iso3::from_parts(self.position.into(), self.orientation)
    }
}

/// Total linear momentum Σ mᵢ vᵢ of the dynamic bodies.
pub fn total_linear_momentum(bodies: &[RigidBody]) -> Vec3 {
    bodies
        .iter()
        .filter(|b| !b.is_static())
        .map(|b| b.mass * b.velocity)
        .sum()
}

/// Total angular momentum about the world origin, Σ (xᵢ × mᵢ vᵢ + I_world ωᵢ).
pub fn total_angular_momentum(bodies: &[RigidBody]) -> Vec3 {
    bodies.iter().map(|b| b.angular_momentum()).sum()
}
