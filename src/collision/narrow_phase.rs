//! Narrow phase between bodies: exact sphere–sphere, parry contact manifolds for
//! polyhedra, rods and crosses (compounds of convex bars), SAGI for ellipsoids.
//!
//! Compounds (crosses, mass points) are taken apart here rather than by parry's
//! compound queries, which keep a workspace (a hash map of part pairs) and one manifold
//! per part pair from call to call. We visit the part pairs exactly as parry's
//! `contact_manifolds_composite_shape_composite_shape` and
//! `contact_manifolds_composite_shape_shape` do: the same bounding-box culls (a part's
//! box in the other body's frame, loosened by the prediction distance, against the other
//! parts' boxes), the same order (the parts' bounding-volume tree, depth first: see
//! [`Collider::Parry`]'s `order`), the same relative poses computed the same way, and
//! parry's convex–convex manifold on a fresh manifold for each pair. So the contacts,
//! their order and their feature ids are parry's, bit for bit (tested below), without
//! the workspace.
//!
//! The one manifold is scratch of the caller's ([`ParryScratch`], one per parallel
//! chunk), so a pair allocates nothing once its point buffer has grown. It is emptied
//! before each part pair (parry would otherwise move the last points with the bodies,
//! `try_update_contacts`, or start GJK from the last normal): the contacts are a
//! function of the two poses and the prediction distance alone, whatever pair came
//! before and whatever happened in earlier steps.

use super::collider::Collider;
use super::manifold_cache::CachedPoint;
use super::{Contact, FeatureId};
use crate::body::RigidBody;
use crate::math::{Iso3, Point3, Vec3, tangent_basis};
use parry3d_f64::bounding_volume::BoundingVolume;
use parry3d_f64::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d_f64::shape::{Ball, Compound, Shape as ParryShape};

/// The narrow phase's manifold buffer for the pairs parry handles (module doc).
#[derive(Clone, Default)]
pub struct ParryScratch {
    manifold: ContactManifold<(), ()>,
}

impl ParryScratch {
    /// The manifold, as fresh as `ContactManifold::new()` but for its point buffer's
    /// capacity, naming the parts `subshape1`, `subshape2` and their poses in their
    /// bodies: nothing of the last part pair may reach parry.
    fn fresh(
        &mut self,
        subshape1: u32,
        subshape2: u32,
        pos1: Option<Iso3>,
        pos2: Option<Iso3>,
    ) -> &mut ContactManifold<(), ()> {
        let m = &mut self.manifold;
        m.points.clear();
        m.local_n1 = Vec3::zeros();
        m.local_n2 = Vec3::zeros();
        m.subshape1 = subshape1;
        m.subshape2 = subshape2;
        m.subshape_pos1 = pos1;
        m.subshape_pos2 = pos2;
        m
    }

    /// parry's manifold between two convex parts (`pos12`: part 2's pose in part 1's
    /// frame), computed afresh in the scratch; `None` if parry does not support the
    /// pair (every pair of our convex kinds is supported).
    fn convex(
        &mut self,
        pos12: &Iso3,
        part1: Part<'_>,
        part2: Part<'_>,
        prediction: f64,
    ) -> Option<&ContactManifold<(), ()>> {
        let m = self.fresh(part1.0, part2.0, part1.1, part2.1);
        DefaultQueryDispatcher
            .contact_manifold_convex_convex(pos12, part1.2, part2.2, None, None, prediction, m)
            .ok()?;
        Some(&self.manifold)
    }
}

/// A convex part of a pair's shape: its index in its compound (0 for a convex shape),
/// its pose in its body (`None` for a convex shape) and its shape.
type Part<'a> = (u32, Option<Iso3>, &'a dyn ParryShape);

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
///
/// The contact point (and so the lever arms) is
/// - against a static container (`b` is `None`): `pa`, on the body's own surface. A
///   speculative contact (gap > 0) is where the body will meet the container, so
///   friction acts with the body's true lever arm (a sphere's is its radius, not
///   r + gap/2); the container takes no impulse, so no arm of its own is needed;
/// - between two bodies: midway, `(pa + pb)/2`. The impulse must act on both at one
///   point, or a tangential impulse P_t would change the pair's angular momentum by
///   (pa − pb) × P_t = gap n × P_t; the midpoint errs on each arm by at most |gap|/2,
///   below v_n h / 2 for a contact the step resolves.
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
    let point = if b.is_some() { 0.5 * (pa + pb) } else { pa };
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
            let (sa, oa): (&dyn ParryShape, &[u32]) = match ca {
                Collider::Sphere { radius } => {
                    ball_a = Ball::new(*radius);
                    (&ball_a, &[])
                }
                Collider::Parry { shape, order, .. } => (shape.as_ref(), order),
                Collider::Ellipsoid { .. } => unreachable!("handled above"),
            };
            let (sb, ob): (&dyn ParryShape, &[u32]) = match cb {
                Collider::Sphere { radius } => {
                    ball_b = Ball::new(*radius);
                    (&ball_b, &[])
                }
                Collider::Parry { shape, order, .. } => (shape.as_ref(), order),
                Collider::Ellipsoid { .. } => unreachable!("handled above"),
            };
            let pair = Pair::new(bodies, a, b, margin, out.len());
            let mut emit = |m: &ContactManifold<(), ()>| pair.emit(bodies, m, out, None);
            manifolds(sa, oa, sb, ob, &pair.pos12, margin, scratch, &mut emit);
            pair.check(out);
        }
    }
}

/// A pair of flat-faced bodies (`manifold_cache::recyclable`): its contacts with gap
/// below `margin` appended to `out`, as [`body_body`] gives them, and the manifold
/// parry finds with the prediction `margin + slack` appended to `keep` in the bodies'
/// frames (every point with gap below that, the ones below `margin` among them).
/// Returns b's pose in a's frame.
#[allow(clippy::too_many_arguments)]
pub fn body_body_kept(
    bodies: &[RigidBody],
    colliders: &[Collider],
    a: usize,
    b: usize,
    margin: f64,
    slack: f64,
    scratch: &mut ParryScratch,
    keep: &mut Vec<CachedPoint>,
    out: &mut Vec<Contact>,
) -> Iso3 {
    let (
        Collider::Parry {
            shape: sa,
            order: oa,
            ..
        },
        Collider::Parry {
            shape: sb,
            order: ob,
            ..
        },
    ) = (&colliders[a], &colliders[b])
    else {
        unreachable!("only flat-faced pairs (parry shapes) are kept")
    };
    let mut pair = Pair::new(bodies, a, b, margin, out.len());
    pair.keep_start = keep.len();
    let prediction = margin + slack;
    let mut emit = |m: &ContactManifold<(), ()>| pair.emit(bodies, m, out, Some(&mut *keep));
    manifolds(
        sa.as_ref(),
        oa,
        sb.as_ref(),
        ob,
        &pair.pos12,
        prediction,
        scratch,
        &mut emit,
    );
    pair.check(out);
    pair.pos12
}

/// parry's contact manifolds between shape 1 and shape 2 (`pos12`: shape 2's pose in
/// shape 1's frame), one per touching pair of convex parts, each handed to `emit` as it
/// is found. `order1`, `order2` are the compounds' part orders ([`Collider::Parry`]).
///
/// What parry's `DefaultQueryDispatcher::contact_manifolds` computes for our shapes
/// (no meshes, height fields or voxels), in the same order, without its workspace.
#[allow(clippy::too_many_arguments)]
fn manifolds(
    s1: &dyn ParryShape,
    order1: &[u32],
    s2: &dyn ParryShape,
    order2: &[u32],
    pos12: &Iso3,
    prediction: f64,
    scratch: &mut ParryScratch,
    emit: &mut dyn FnMut(&ContactManifold<(), ()>),
) {
    match (s1.as_compound(), s2.as_compound()) {
        (Some(c1), Some(c2)) => {
            compound_compound(pos12, c1, order1, c2, order2, prediction, scratch, emit)
        }
        (Some(c1), None) => compound_shape(pos12, c1, order1, s2, prediction, false, scratch, emit),
        (None, Some(c2)) => compound_shape(
            &pos12.inverse(),
            c2,
            order2,
            s1,
            prediction,
            true,
            scratch,
            emit,
        ),
        (None, None) => {
            if let Some(m) = scratch.convex(pos12, (0, None, s1), (0, None, s2), prediction) {
                emit(m);
            }
        }
    }
}

/// Two compounds: parry's `contact_manifolds_composite_shape_composite_shape` (module
/// doc). The compound with the larger bounding box is walked in the outer loop; a part
/// pair is tried when the inner part's box meets the outer part's box taken into the
/// inner compound's frame and loosened by `prediction`, which no pair closer than
/// `prediction` fails.
#[allow(clippy::too_many_arguments)]
fn compound_compound(
    pos12: &Iso3,
    c1: &Compound,
    order1: &[u32],
    c2: &Compound,
    order2: &[u32],
    prediction: f64,
    scratch: &mut ParryScratch,
    emit: &mut dyn FnMut(&ContactManifold<(), ()>),
) {
    let (mut outer, mut inner) = ((c1, order1), (c2, order2));
    let mut pos_io = *pos12; // inner compound's pose in the outer one's frame
    let mut pos_oi = pos12.inverse();
    let flipped = c1.bvh().root_aabb().half_extents().norm_squared()
        < c2.bvh().root_aabb().half_extents().norm_squared();
    if flipped {
        std::mem::swap(&mut outer, &mut inner);
        std::mem::swap(&mut pos_io, &mut pos_oi);
    }
    let inner_box = inner
        .0
        .bvh()
        .root_aabb()
        .transform_by(&pos_io)
        .loosened(prediction);
    for &k_o in outer.1 {
        if !outer.0.aabbs()[k_o as usize].intersects(&inner_box) {
            continue;
        }
        let (part_pos_o, part_o) = &outer.0.shapes()[k_o as usize];
        let pos_o_in_i = pos_oi * part_pos_o;
        let part_box = part_o.compute_aabb(&pos_o_in_i).loosened(prediction);
        for &k_i in inner.1 {
            if !inner.0.aabbs()[k_i as usize].intersects(&part_box) {
                continue;
            }
            let (part_pos_i, part_i) = &inner.0.shapes()[k_i as usize];
            // Outer part's pose in the inner part's frame.
            let pos = part_pos_i.inv_mul(&pos_o_in_i);
            let o = (k_o, Some(*part_pos_o), part_o.as_ref());
            let i = (k_i, Some(*part_pos_i), part_i.as_ref());
            let m = if flipped {
                scratch.convex(&pos, i, o, prediction)
            } else {
                scratch.convex(&pos.inverse(), o, i, prediction)
            };
            if let Some(m) = m {
                emit(m);
            }
        }
    }
}

/// A compound `c1` and a convex shape `s2` (`pos12`: s2's pose in c1's frame): parry's
/// `contact_manifolds_composite_shape_shape`. `flipped`: the convex shape is the pair's
/// first shape, so each manifold names it first.
#[allow(clippy::too_many_arguments)]
fn compound_shape(
    pos12: &Iso3,
    c1: &Compound,
    order1: &[u32],
    s2: &dyn ParryShape,
    prediction: f64,
    flipped: bool,
    scratch: &mut ParryScratch,
    emit: &mut dyn FnMut(&ContactManifold<(), ()>),
) {
    let pos21 = pos12.inverse();
    let box2 = s2.compute_aabb(pos12).loosened(prediction);
    for &k in order1 {
        if !c1.aabbs()[k as usize].intersects(&box2) {
            continue;
        }
        let (part_pos, part) = &c1.shapes()[k as usize];
        let c = (k, Some(*part_pos), part.as_ref());
        let m = if flipped {
            scratch.convex(&(pos21 * part_pos), (0, None, s2), c, prediction)
        } else {
            scratch.convex(&part_pos.inv_mul(pos12), c, (0, None, s2), prediction)
        };
        if let Some(m) = m {
            emit(m);
        }
    }
}

/// One body pair's frame for turning manifolds into contacts.
struct Pair {
    a: usize,
    b: usize,
    isa: Iso3,
    isb: Iso3,
    /// b's pose in a's frame.
    pos12: Iso3,
    margin: f64,
    /// Length scale of the duplicate test.
    scale: f64,
    /// Where the pair's contacts start in the output.
    start: usize,
    /// Where the pair's kept points start, when its manifold is kept.
    keep_start: usize,
}

impl Pair {
    fn new(bodies: &[RigidBody], a: usize, b: usize, margin: f64, start: usize) -> Pair {
        let (isa, isb) = (bodies[a].isometry(), bodies[b].isometry());
        Pair {
            a,
            b,
            isa,
            isb,
            pos12: isa.inv_mul(&isb),
            margin,
            scale: 1.0 + bodies[a].position.norm() + bodies[b].position.norm(),
            start,
            keep_start: 0,
        }
    }

    /// The manifold's points with gap below the margin as contacts, appended to `out`;
    /// with `keep`, every point of the manifold (whatever its gap) also appended to
    /// `keep` in the bodies' frames.
    fn emit(
        &self,
        bodies: &[RigidBody],
        m: &ContactManifold<(), ()>,
        out: &mut Vec<Contact>,
        mut keep: Option<&mut Vec<CachedPoint>>,
    ) {
        let w1: Iso3 = m.subshape_pos1.map_or(self.isa, |p| self.isa * p);
        let w2: Iso3 = m.subshape_pos2.map_or(self.isb, |p| self.isb * p);
        let n1 = w1 * m.local_n1;
        if n1.norm_squared() < 0.5 {
            return;
        }
        let n = -n1.normalize();
        for p in &m.points {
            if keep.is_none() && p.dist >= self.margin {
                continue;
            }
            let pa = (w1 * p.local_p1).coords;
            let pb = (w2 * p.local_p2).coords;
            let mid = 0.5 * (pa + pb);
            let same = |point: &Vec3, normal: &Vec3| {
                (point - mid).norm() <= 1e-12 * self.scale && (normal - n).norm() <= 1e-12
            };
            // A vertex on a triangulated face can come back once per adjacent
            // triangle: keep one copy, or the solvers would count it twice.
            let duplicate = match &keep {
                Some(kept) => kept[self.keep_start..].iter().any(|k| {
                    let ka = self.isa * Point3::from(k.local_a);
                    let kb = self.isb * Point3::from(k.local_b);
                    same(
                        &(0.5 * (ka.coords + kb.coords)),
                        &(self.isa.rotation * k.normal),
                    )
                }),
                None => out[self.start..].iter().any(|c| same(&c.point, &c.normal)),
            };
            if duplicate {
                continue;
            }
            let named = FeatureId {
                a: FeatureId::part_feature(m.subshape1, p.fid1.0),
                b: FeatureId::part_feature(m.subshape2, p.fid2.0),
            };
            let feature = FeatureId::first_free(named, |f| match &keep {
                Some(kept) => kept[self.keep_start..].iter().any(|k| k.feature == f),
                None => out[self.start..].iter().any(|c| c.feature == f),
            });
            if let Some(kept) = keep.as_deref_mut() {
                let in_body = |sub: Option<Iso3>, q: &Point3| sub.map_or(*q, |s| s * q).coords;
                kept.push(CachedPoint {
                    feature,
                    local_a: in_body(m.subshape_pos1, &p.local_p1),
                    local_b: in_body(m.subshape_pos2, &p.local_p2),
                    normal: self.isa.rotation.inverse() * n,
                });
            }
            if p.dist < self.margin {
                let mut c = make_contact(bodies, self.a, Some(self.b), pa, pb, n, p.dist);
                c.feature = feature;
                out.push(c);
            }
        }
    }

    /// Debug check: feature ids are unique within the pair.
    fn check(&self, out: &[Contact]) {
        debug_assert!(
            {
                let ids = &out[self.start..];
                ids.iter()
                    .enumerate()
                    .all(|(k, c)| ids[..k].iter().all(|d| d.feature != c.feature))
            },
            "feature ids repeat within pair ({}, {})",
            self.a,
            self.b
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::expand::random_rotation;
    use crate::shapes::Shape;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The contacts of parry's own compound queries (`contact_manifolds` with a fresh
    /// manifold list and workspace), turned into contacts as `body_body` does.
    fn parry_reference(
        bodies: &[RigidBody],
        colliders: &[Collider],
        a: usize,
        b: usize,
        margin: f64,
    ) -> Vec<Contact> {
        let shape = |c: &Collider| match c {
            Collider::Sphere { radius } => parry3d_f64::shape::SharedShape::ball(*radius),
            Collider::Parry { shape, .. } => shape.clone(),
            Collider::Ellipsoid { .. } => unreachable!("not in this test"),
        };
        let (sa, sb) = (shape(&colliders[a]), shape(&colliders[b]));
        let pair = Pair::new(bodies, a, b, margin, 0);
        let mut manifolds: Vec<ContactManifold<(), ()>> = Vec::new();
        let mut workspace = None;
        DefaultQueryDispatcher
            .contact_manifolds(
                &pair.pos12,
                sa.as_ref(),
                sb.as_ref(),
                margin,
                &mut manifolds,
                &mut workspace,
            )
            .expect("parry supports every pair of our shapes");
        let mut out = Vec::new();
        for m in &manifolds {
            pair.emit(bodies, m, &mut out, None);
        }
        out
    }

    /// Over many random poses of two bodies at most their bounding radii plus the margin
    /// apart, the part-by-part narrow phase gives parry's compound contacts exactly: the
    /// same points, normals, gaps and feature ids, in the same order (the part pairs
    /// are visited as parry visits them and every pose is computed as parry computes
    /// it, so no rounding separates the two). One scratch serves every pair, so no pair
    /// sees the last one's manifold.
    #[test]
    fn compound_pairs_give_parry_compound_contacts() {
        let c = 1.26; // 3c = 3.78 m, the papers' crosses
        let six = Shape::MassPoints {
            points: vec![
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(-1.0, 0.0, 0.0),
                Vec3::new(0.0, 1.5, 0.0),
                Vec3::new(0.0, -1.5, 0.0),
                Vec3::new(0.0, 0.0, 0.8),
                Vec3::new(0.0, 0.0, -0.8),
            ],
            masses: vec![1.0, 1.0, 2.0, 2.0, 1.0, 1.0],
            radius: 0.3,
        };
        let shapes = [
            ("cross", Shape::Cross { c }),
            ("small cross", Shape::Cross { c: 0.7 * c }),
            (
                "cube",
                Shape::Cuboid {
                    half_extents: Vec3::repeat(1.2),
                },
            ),
            (
                "rod",
                Shape::Rod {
                    length: 3.0,
                    radius: 0.2,
                },
            ),
            ("sphere", Shape::Sphere { radius: 1.0 }),
            ("mass points", six),
        ];
        // Each pair has a compound on at least one side, in both orders; cross–cross
        // with equal crosses and with a smaller one (parry then walks the larger first).
        let pairs = [
            (0, 0),
            (0, 1),
            (1, 0),
            (0, 2),
            (2, 0),
            (1, 2),
            (0, 3),
            (3, 0),
            (0, 4),
            (4, 0),
            (5, 0),
            (0, 5),
            (5, 2),
            (2, 5),
            (5, 5),
            (5, 4),
            (2, 2),
        ];
        let mut rng = ChaCha8Rng::seed_from_u64(27);
        let mut scratch = ParryScratch::default();
        let mut out = Vec::new();
        for (i, j) in pairs {
            let (name_a, shape_a) = &shapes[i];
            let (name_b, shape_b) = &shapes[j];
            let (mut touching, mut several_parts) = (0, 0);
            let trials = 400;
            for _ in 0..trials {
                let margin = 0.05 * rng.random::<f64>();
                let reach = shape_a.bounding_radius() + shape_b.bounding_radius() + margin;
                let xa = Vec3::new(
                    rng.random_range(-50.0..50.0),
                    rng.random_range(-50.0..50.0),
                    rng.random_range(0.0..50.0),
                );
                let dir = random_rotation(&mut rng) * Vec3::x();
                let xb = xa + rng.random_range(0.3..1.0) * reach * dir;
                let bodies = vec![
                    RigidBody::new(shape_a, 1000.0, xa, random_rotation(&mut rng)),
                    RigidBody::new(shape_b, 1000.0, xb, random_rotation(&mut rng)),
                ];
                let colliders: Vec<Collider> =
                    bodies.iter().map(|b| Collider::new(&b.shape)).collect();
                out.clear();
                body_body(&bodies, &colliders, 0, 1, margin, &mut scratch, &mut out);
                let expected = parry_reference(&bodies, &colliders, 0, 1, margin);
                assert_eq!(out, expected, "{name_a}–{name_b}");
                touching += usize::from(!out.is_empty());
                let parts = |c: &Contact| (c.feature.a >> 32, c.feature.b >> 32);
                several_parts += usize::from(out.iter().any(|c| parts(c) != parts(&out[0])));
            }
            // Not vacuous: a good share of the poses touch, and for two compounds some
            // touch through several part pairs.
            assert!(
                touching > trials / 5,
                "{name_a}–{name_b}: {touching} touching"
            );
            if i != 4 && j != 4 && (i <= 1 || i == 5) && (j <= 1 || j == 5) {
                assert!(several_parts > 0, "{name_a}–{name_b}: never several parts");
            }
        }
    }
}
