//! Contact points produced by the narrow phase and consumed by the solvers.

use crate::math::Vec3;

/// One contact point between body `a` and body `b` (or a static container when `b` is
/// `None`).
///
/// Conventions: the normal `n` is a unit vector pointing from `b` to `a`, so an impulse
/// `+P n` pushes `a` away from `b`; `(t1, t2, n)` is a right-handed orthonormal frame;
/// `gap` is the signed separation along `n` (negative when the shapes overlap); the lever
/// arms `r_a`, `r_b` run from each centre of mass to the contact point. The masses and
/// inertia the solver needs are copied next to the contact at preparation time, as in
/// Box2D, to avoid chasing body indices in the inner loop (see the solvers).
#[derive(Clone, Debug, PartialEq)]
pub struct Contact {
    pub a: usize,
    pub b: Option<usize>,
    /// World contact point: midway between the two surfaces.
    pub point: Vec3,
    pub normal: Vec3,
    pub t1: Vec3,
    pub t2: Vec3,
    pub gap: f64,
    pub r_a: Vec3,
    pub r_b: Vec3,
    /// Which container (index into the world's containers) when `b` is `None`.
    pub container: Option<usize>,
}

/// Relative velocity of `a` with respect to `b` at the contact point.
pub fn relative_velocity(bodies: &[crate::body::RigidBody], c: &Contact) -> Vec3 {
    let va = bodies[c.a].velocity + bodies[c.a].angular_velocity.cross(&c.r_a);
    match c.b {
        Some(b) => va - (bodies[b].velocity + bodies[b].angular_velocity.cross(&c.r_b)),
        None => va,
    }
}
