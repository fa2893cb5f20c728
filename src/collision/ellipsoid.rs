//! Ellipsoid contacts through SAGI (paper 002). Filled in when SAGI lands.

use super::Contact;
use super::collider::Collider;
use super::containers::Surface;
use crate::body::RigidBody;
use crate::math::Vec3;

pub fn body_body(
    bodies: &[RigidBody],
    colliders: &[Collider],
    a: usize,
    b: usize,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    let _ = (bodies, colliders, a, b, margin, out);
}

pub fn body_surface(
    bodies: &[RigidBody],
    i: usize,
    semi_axes: &Vec3,
    s: &Surface,
    margin: f64,
    out: &mut Vec<Contact>,
) {
    let _ = (bodies, i, semi_axes, s, margin, out);
}
