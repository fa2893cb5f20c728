//! Ray casts against bodies: what the app's mouse picking asks the core.
//!
//! A ray x(t) = o + t d (|d| = 1, t ≥ 0) is cast against each body's exact shape:
//! - sphere of radius r about c: the smallest root of |o + t d − c|² = r²;
//! - ellipsoid with semi-axes (a, b, c) (paper 002, eq. 1): in the body frame, with
//!   S = diag(a, b, c), the ray p + t e becomes the ray S⁻¹p + t S⁻¹e against the unit
//!   sphere; the root t is the same in both spaces (scaling does not change the ray
//!   parameter);
//! - polyhedra, crosses and rods: parry's ray casts on the body's collider.
//!
//! A ray that starts inside a body hits it at t = 0 (solid shapes).

use crate::body::RigidBody;
use crate::collision::Collider;
use crate::math::Vec3;
use parry3d_f64::query::Ray;

/// First hit of the ray `origin + t dir` (t ≥ 0, `dir` need not be unit) on `body`,
/// as the distance t along the unit direction; `None` if the ray misses.
pub fn cast_ray(body: &RigidBody, collider: &Collider, origin: &Vec3, dir: &Vec3) -> Option<f64> {
    let len = dir.norm();
    if !(len.is_finite() && len > 0.0) {
        return None;
    }
    let d = dir / len;
    match collider {
        Collider::Sphere { radius } => {
            unit_sphere_hit(&((origin - body.position) / *radius), &(d / *radius))
        }
        Collider::Ellipsoid { semi_axes } => {
            let p = body
                .orientation
                .inverse_transform_vector(&(origin - body.position));
            let e = body.orientation.inverse_transform_vector(&d);
            unit_sphere_hit(&p.component_div(semi_axes), &e.component_div(semi_axes))
        }
        Collider::Parry { shape, .. } => {
            let ray = Ray::new((*origin).into(), d);
            shape.cast_ray(&body.isometry(), &ray, f64::MAX, true)
        }
    }
}

/// Smallest t ≥ 0 with |p + t e|² = 1, or 0 if p is inside the unit sphere.
fn unit_sphere_hit(p: &Vec3, e: &Vec3) -> Option<f64> {
    let a = e.norm_squared();
    let b = p.dot(e);
    let c = p.norm_squared() - 1.0;
    if c <= 0.0 {
        return Some(0.0);
    }
    let disc = b * b - a * c;
    if disc < 0.0 || b > 0.0 {
        return None;
    }
    // Stable smaller root of a t² + 2 b t + c = 0 with b < 0: t = c / (−b + √disc).
    Some(c / (-b + disc.sqrt()))
}

/// The body whose surface the ray `origin + t dir` meets first, with the hit distance
/// (along the unit direction). Static bodies are skipped when `dynamic_only`.
pub fn pick(
    bodies: &[RigidBody],
    origin: &Vec3,
    dir: &Vec3,
    dynamic_only: bool,
) -> Option<(usize, f64)> {
    let len = dir.norm();
    if !(len.is_finite() && len > 0.0) {
        return None;
    }
    let d = dir / len;
    let mut best: Option<(usize, f64)> = None;
    for (i, b) in bodies.iter().enumerate() {
        if dynamic_only && b.is_static() {
            continue;
        }
        // Bounding-ball rejection before the exact cast.
        let r = b.shape.bounding_radius();
        let to_c = b.position - origin;
        let along = to_c.dot(&d);
        if (to_c - along * d).norm_squared() > r * r || along < -r {
            continue;
        }
        if best.is_some_and(|(_, t)| along - r > t) {
            continue;
        }
        if let Some(t) = cast_ray(b, &Collider::new(&b.shape), origin, &d)
            && best.is_none_or(|(_, tb)| t < tb)
        {
            best = Some((i, t));
        }
    }
    best
}
