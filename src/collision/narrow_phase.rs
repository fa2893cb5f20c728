//! Narrow phase between bodies: exact sphere–sphere, parry contact manifolds for
//! polyhedra, rods and crosses (compounds of convex bars), SAGI for ellipsoids.
//!
//! parry's manifolds and workspace are scratch of the caller's ([`ParryScratch`], one per
//! parallel chunk), so a convex pair allocates nothing once they have grown. They are
//! emptied before each pair (parry would otherwise move the last points with the
//! bodies, `try_update_contacts`, or start GJK from the last normal): the contacts are
//! a function of the two poses and the prediction distance alone, whatever pair came
//! before and whatever happened in earlier steps.

use super::collider::Collider;
use super::{Contact, FeatureId};
use crate::body::RigidBody;
use crate::math::{Iso3, Vec3, tangent_basis};
use parry3d_f64::query::{
    ContactManifold, ContactManifoldsWorkspace, DefaultQueryDispatcher, PersistentQueryDispatcher,
};
use parry3d_f64::shape::{Ball, Shape as ParryShape};

/// parry's scratch for the pairs it handles (module doc).
#[derive(Clone, Default)]
pub struct ParryScratch {
    manifolds: Vec<ContactManifold<(), ()>>,
    workspace: Option<ContactManifoldsWorkspace>,
}

impl ParryScratch {
    /// Ready for a new pair: nothing of the last one may reach parry. One convex
    /// manifold keeps its buffer; a compound's manifolds and workspace (which name
    /// the last pair's parts) go.
    fn reset(&mut self) {
        if self.workspace.is_some() || self.manifolds.len() > 1 {
            self.manifolds.clear();
            self.workspace = None;
        }
        for m in &mut self.manifolds {
            m.points.clear();
            m.local_n1 = Vec3::zeros();
            m.local_n2 = Vec3::zeros();
            m.subshape1 = 0;
            m.subshape2 = 0;
            m.subshape_pos1 = None;
            m.subshape_pos2 = None;
        }
    }
}

/// Whether detecting the pair costs more than copying its last contacts: every pair
/// but two spheres (parry's manifolds, SAGI).
pub fn costly(colliders: &[Collider], a: usize, b: usize) -> bool {
    !matches!(
        (&colliders[a], &colliders[b]),
        (Collider::Sphere { .. }, Collider::Sphere { .. })
    )
}

/// Build a contact from the two surface points `pa` (on a) and `pb` (on b), the unit
/// normal `n` pointing from b to a and the signed gap.
pub fn make_contact(
    bodies: &[RigidBody],
    a: usize,
    b: Option<usize>,
    pa: Vec3,
    pb: Vec3,
    n: Vec3,
    gap: f64,
) -> Contact {
    debug_assert!(
        (n.norm() - 1.0).abs() < 1e-9 && gap.is_finite(),
        "bad contact n = {n:?}, gap = {gap}"
    );
    let point = 0.5 * (pa + pb);
    let (t1, t2) = tangent_basis(&n);
    Contact {
        a,
        b,
        point,
        normal: n,
        t1,
        t2,
        gap,
        r_a: point - bodies[a].position,
        r_b: b.map_or(Vec3::zeros(), |b| point - bodies[b].position),
        container: None,
        feature: FeatureId::default(),
    }
}

/// Contacts between bodies `a` and `b` with gap below `margin`, appended to `out`.
/// `scratch` is parry's (module doc).
pub fn body_body(
    bodies: &[RigidBody],
    colliders: &[Collider],
    a: usize,
    b: usize,
    margin: f64,
    scratch: &mut ParryScratch,
    out: &mut Vec<Contact>,
) {
    let (ba, bb) = (&bodies[a], &bodies[b]);
    match (&colliders[a], &colliders[b]) {
        (&Collider::Sphere { radius: ra }, &Collider::Sphere { radius: rb }) => {
            let d = ba.position - bb.position;
            let dist = d.norm();
            // Coincident centres: any direction is a valid normal; +z is deterministic.
            let n = if dist > 1e-300 { d / dist } else { Vec3::z() };
            let gap = dist - ra - rb;
            if gap < margin {
                out.push(make_contact(
                    bodies,
                    a,
                    Some(b),
                    ba.position - ra * n,
                    bb.position + rb * n,
                    n,
                    gap,
                ));
            }
        }
        (Collider::Ellipsoid { .. }, _) | (_, Collider::Ellipsoid { .. }) => {
            super::ellipsoid::body_body(bodies, colliders, a, b, margin, out);
        }
        (ca, cb) => {
            let ball_a;
            let ball_b;
            let sa: &dyn ParryShape = match ca {
                Collider::Sphere { radius } => {
                    ball_a = Ball::new(*radius);
                    &ball_a
                }
                Collider::Parry { shape, .. } => shape.as_ref(),
                Collider::Ellipsoid { .. } => unreachable!("handled above"),
            };
            let sb: &dyn ParryShape = match cb {
                Collider::Sphere { radius } => {
                    ball_b = Ball::new(*radius);
                    &ball_b
                }
                Collider::Parry { shape, .. } => shape.as_ref(),
                Collider::Ellipsoid { .. } => unreachable!("handled above"),
            };
            parry_manifolds(bodies, a, b, sa, sb, margin, scratch, out);
        }
    }
}

/// parry's contact manifolds between two shapes (several points per manifold, one
/// manifold per touching pair of convex parts for compounds), computed in `scratch`.
#[allow(clippy::too_many_arguments)]
fn parry_manifolds(
    bodies: &[RigidBody],
    a: usize,
    b: usize,
    sa: &dyn ParryShape,
    sb: &dyn ParryShape,
    margin: f64,
    scratch: &mut ParryScratch,
    out: &mut Vec<Contact>,
) {
    let (isa, isb) = (bodies[a].isometry(), bodies[b].isometry());
    let pos12 = isa.inv_mul(&isb);
    scratch.reset();
    // Every pair of our collider kinds is supported by parry's dispatcher; an
    // unsupported pair simply yields no contact.
    if DefaultQueryDispatcher
        .contact_manifolds(
            &pos12,
            sa,
            sb,
            margin,
            &mut scratch.manifolds,
            &mut scratch.workspace,
        )
        .is_err()
    {
        return;
    }
    let start = out.len();
    let scale = 1.0 + bodies[a].position.norm() + bodies[b].position.norm();
    for m in &scratch.manifolds {
        let w1: Iso3 = m.subshape_pos1.map_or(isa, |p| isa * p);
        let w2: Iso3 = m.subshape_pos2.map_or(isb, |p| isb * p);
        let n1 = w1 * m.local_n1;
        if n1.norm_squared() < 0.5 {
            continue;
        }
        let n = -n1.normalize();
        for p in &m.points {
            if p.dist < margin {
                let pa = (w1 * p.local_p1).coords;
                let pb = (w2 * p.local_p2).coords;
                // A vertex on a triangulated face can come back once per adjacent
                // triangle: keep one copy, or the solvers would count it twice.
                let duplicate = out[start..].iter().any(|c| {
                    (c.point - 0.5 * (pa + pb)).norm() <= 1e-12 * scale
                        && (c.normal - n).norm() <= 1e-12
                });
                if !duplicate {
                    let mut c = make_contact(bodies, a, Some(b), pa, pb, n, p.dist);
                    c.feature = FeatureId {
                        a: FeatureId::part_feature(m.subshape1, p.fid1.0),
                        b: FeatureId::part_feature(m.subshape2, p.fid2.0),
                    };
                    out.push(c);
                }
            }
        }
    }
    debug_assert!(
        {
            let ids = &out[start..];
            ids.iter()
                .enumerate()
                .all(|(k, c)| ids[..k].iter().all(|d| d.feature != c.feature))
        },
        "feature ids repeat within pair ({a}, {b})"
    );
}
