//! Contact manifolds kept from step to step and recycled while the pair barely moves.
//!
//! A pair of flat-faced bodies (polyhedra and crosses, [`recyclable`]) gets its manifold
//! from parry with a prediction distance larger than the step needs by a slack `s` (the
//! world's contact margin, or 1 % of the smaller body's bounding radius if that is
//! larger: [`RecycleRule::slack`]), and the manifold is kept in the bodies' frames: for each
//! point, its feature ids, the point on a's surface in a's frame, the point on b's surface
//! in b's frame and the normal (from b to a) in a's frame, with b's pose in a's frame at
//! that moment and the prediction it was computed with. In a later step the pair *recycles*
//! it instead of calling parry when
//!
//! 1. the recycling is on (a positive rest velocity: [`RecycleRule::rest_speed`]);
//! 2. no point of b has moved more than `δ = |Δt| + 2 sin(Δθ/2) R_b` relative to a since
//!    (Δt, Δθ: change of b's position and orientation in a's frame, `R_b` b's bounding
//!    radius: a chord bound, exact for the farthest point), and `δ ≤ m₀ − m`, where m₀ is
//!    the stored prediction and m the one this step needs. A pair of features that was
//!    farther apart than m₀ is then still farther than m: every point the fresh
//!    manifold would give within m is one the stored manifold holds, displaced by at most
//!    δ along the surfaces;
//! 3. b has turned less than [`MAX_TURN`] relative to a (`2 sin(Δθ/2) ≤ MAX_TURN`), which
//!    bounds the error of the kept normal;
//! 4. no refreshed point approaches faster than the rest velocity at the velocities after
//!    the step's kick (`u_n ≥ −rest`): every impact a method resolves sees a freshly
//!    computed manifold.
//!
//! Recycling refreshes each point from the current poses: `p_a = X_a ℓ_a`, `p_b = X_b ℓ_b`,
//! `n = R_a ν`, gap `(p_a − p_b)·n` (what parry's `try_update_contacts` does), and emits
//! the points with gap below m. The error against a fresh manifold is at most δ in a point's
//! place and `MAX_TURN` in the normal; gaps are exact for the kept points.
//!
//! The cache is part of the world's state (a step's contacts depend on the poses *and* on
//! it): copies of the world carry it and saved states store it ([`crate::scene::save`]).

use super::collider::Collider;
use super::contact::{Contact, FeatureId};
use super::narrow_phase::make_contact;
use crate::body::RigidBody;
use crate::math::{Iso3, Point3, Vec3};

/// Largest relative turn of a pair that recycles its manifold, as the chord
/// `2 sin(Δθ/2)` (≈ 1.15°): the kept normal is then within 0.02 rad of the face normal
/// it stands for.
pub const MAX_TURN: f64 = 0.02;

/// Whether a pair may recycle its manifold: both bodies flat-faced (parry shapes without
/// a rounding radius: cuboids, crosses, tetrahedra, convex polyhedra). A kept point on a
/// curved surface (sphere, rod, ellipsoid) is off the true contact point by the rolling
/// distance; those pairs are computed afresh.
pub fn recyclable(colliders: &[Collider], a: usize, b: usize) -> bool {
    let flat = |c: &Collider| matches!(c, Collider::Parry { radius, .. } if *radius == 0.0);
    flat(&colliders[a]) && flat(&colliders[b])
}

/// One manifold point, in the bodies' frames.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachedPoint {
    /// The features of a and b that touch (the contact's identity within the pair).
    pub feature: FeatureId,
    /// The point on a's surface, in a's body frame (m).
    pub local_a: Vec3,
    /// The point on b's surface, in b's body frame (m).
    pub local_b: Vec3,
    /// The unit normal from b to a, in a's body frame.
    pub normal: Vec3,
}

/// One pair's kept manifold: its points are `points[from..to]` of the cache.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachedManifold {
    pub a: usize,
    pub b: usize,
    /// b's pose in a's body frame when the manifold was computed.
    pub pose: Iso3,
    /// The prediction distance it was computed with (m): it holds every point parry gave
    /// with a gap below this.
    pub prediction: f64,
    pub from: u32,
    pub to: u32,
}

/// The kept manifolds of all recyclable pairs, by pair (a < b) ascending.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManifoldCache {
    pub(crate) manifolds: Vec<CachedManifold>,
    pub(crate) points: Vec<CachedPoint>,
}

impl ManifoldCache {
    /// The kept manifolds, by pair ascending, and all their points.
    pub fn manifolds(&self) -> &[CachedManifold] {
        &self.manifolds
    }

    /// The points of one kept manifold.
    pub fn points_of(&self, m: &CachedManifold) -> &[CachedPoint] {
        &self.points[m.from as usize..m.to as usize]
    }

    pub fn len(&self) -> usize {
        self.manifolds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.manifolds.is_empty()
    }

    pub fn clear(&mut self) {
        self.manifolds.clear();
        self.points.clear();
    }

    /// Keep a manifold for pair (a, b), above every pair kept so far.
    pub fn push(
        &mut self,
        a: usize,
        b: usize,
        pose: Iso3,
        prediction: f64,
        points: &[CachedPoint],
    ) {
        debug_assert!(self.manifolds.last().is_none_or(|m| (m.a, m.b) < (a, b)));
        let from = self.points.len() as u32;
        self.points.extend_from_slice(points);
        self.manifolds.push(CachedManifold {
            a,
            b,
            pose,
            prediction,
            from,
            to: self.points.len() as u32,
        });
    }

    /// Where a lookup of pairs from `pair` on starts ([`Self::find`]).
    pub(crate) fn cursor(&self, pair: (usize, usize)) -> usize {
        self.manifolds.partition_point(|m| (m.a, m.b) < pair)
    }

    /// The manifold kept for `pair`, if any; `cursor` moves forward, so pairs must be
    /// asked in ascending order.
    pub(crate) fn find(&self, cursor: &mut usize, pair: (usize, usize)) -> Option<&CachedManifold> {
        while self
            .manifolds
            .get(*cursor)
            .is_some_and(|m| (m.a, m.b) < pair)
        {
            *cursor += 1;
        }
        self.manifolds.get(*cursor).filter(|m| (m.a, m.b) == pair)
    }

    /// Move `other`'s manifolds (pairs above every pair kept so far) to the end of this
    /// cache.
    pub(crate) fn append(&mut self, other: &mut ManifoldCache) {
        if self.is_empty() && self.points.is_empty() {
            std::mem::swap(self, other);
            return;
        }
        let offset = self.points.len() as u32;
        self.manifolds
            .extend(other.manifolds.drain(..).map(|m| CachedManifold {
                from: m.from + offset,
                to: m.to + offset,
                ..m
            }));
        self.points.append(&mut other.points);
    }
}

/// What decides whether a kept manifold is recycled this step (module doc).
#[derive(Clone, Copy, Debug)]
pub struct RecycleRule<'a> {
    /// Contacts approaching faster than this (m/s) are impacts: a pair with one is
    /// computed afresh. Recycling is off when it is 0 (every approach is an impact).
    pub rest_speed: f64,
    /// The least slack added to the prediction of a fresh manifold (m): the world's
    /// contact margin ([`RecycleRule::slack`]).
    pub slack: f64,
    /// Per body: (v, ω) after this step's kick.
    pub kicked: &'a [(Vec3, Vec3)],
}

impl RecycleRule<'_> {
    /// The slack of a fresh manifold between bodies of bounding radii `radius_a` and
    /// `radius_b`: the larger of the least slack and [`RELATIVE_SLACK`] of the smaller
    /// radius. A recycled point is then off its fresh place by at most 1 % of the
    /// smaller body's size (or the contact margin, for bodies under half a metre).
    pub fn slack(&self, radius_a: f64, radius_b: f64) -> f64 {
        self.slack.max(RELATIVE_SLACK * radius_a.min(radius_b))
    }
}

/// The slack of a fresh manifold as a fraction of the smaller body's bounding radius
/// ([`RecycleRule::slack`]).
pub const RELATIVE_SLACK: f64 = 0.01;

/// How far any point of b can have moved relative to a since `then` (b's pose in a's
/// frame then) if it is `now`, with `radius` b's bounding radius (m), and the relative
/// turn as a chord `2 sin(Δθ/2)`.
pub fn relative_motion(then: &Iso3, now: &Iso3, radius: f64) -> (f64, f64) {
    let shift = (now.translation.vector - then.translation.vector).norm();
    // q_then⁻¹ q_now = (cos(Δθ/2), sin(Δθ/2) axis).
    let turn = 2.0 * (then.rotation.inverse() * now.rotation).imag().norm();
    (shift + turn * radius, turn)
}

/// Recycle the kept manifold `kept` (with `points`) of pair `(a, b)` if the rule's
/// conditions hold (module doc), appending its refreshed contacts with gap below
/// `margin` to `out`; `radius_b` is b's bounding radius. Returns false, with `out` as it
/// was, when the pair must be computed afresh.
#[allow(clippy::too_many_arguments)]
pub fn recycle(
    bodies: &[RigidBody],
    (a, b): (usize, usize),
    radius_b: f64,
    margin: f64,
    kept: &CachedManifold,
    points: &[CachedPoint],
    rule: &RecycleRule<'_>,
    out: &mut Vec<Contact>,
) -> bool {
    let (xa, xb) = (bodies[a].isometry(), bodies[b].isometry());
    let (motion, turn) = relative_motion(&kept.pose, &xa.inv_mul(&xb), radius_b);
    // Written so that a NaN fails.
    if !(turn <= MAX_TURN && motion <= kept.prediction - margin) {
        return false;
    }
    let start = out.len();
    let ((va, wa), (vb, wb)) = (rule.kicked[a], rule.kicked[b]);
    for p in points {
        let pa = (xa * Point3::from(p.local_a)).coords;
        let pb = (xb * Point3::from(p.local_b)).coords;
        let n = xa.rotation * p.normal;
        let gap = (pa - pb).dot(&n);
        if gap >= margin {
            continue;
        }
        let mut c = make_contact(bodies, a, Some(b), pa, pb, n, gap);
        c.feature = p.feature;
        let u_n = (va + wa.cross(&c.r_a) - vb - wb.cross(&c.r_b)).dot(&n);
        if u_n.is_nan() || u_n < -rule.rest_speed {
            out.truncate(start);
            return false;
        }
        out.push(c);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::super::narrow_phase::{ParryScratch, body_body, body_body_kept};
    use super::*;
    use crate::math::Quat;
    use crate::shapes::Shape;

    /// Cube b (edge 1) resting on cube a, overlapping by 0.1 mm, turned by 10° about z
    /// and shifted off centre.
    fn stack() -> (Vec<RigidBody>, Vec<Collider>) {
        let cube = Shape::Cuboid {
            half_extents: Vec3::repeat(0.5),
        };
        let bodies = vec![
            RigidBody::new(&cube, 1000.0, Vec3::zeros(), Quat::identity()),
            RigidBody::new(
                &cube,
                1000.0,
                Vec3::new(0.1, -0.05, 0.9999),
                Quat::from_axis_angle(&Vec3::z_axis(), 10f64.to_radians()),
            ),
        ];
        let colliders = bodies.iter().map(|b| Collider::new(&b.shape)).collect();
        (bodies, colliders)
    }

    const MARGIN: f64 = 0.005;
    const SLACK: f64 = 0.005;

    /// The fresh contacts and the kept manifold of the stack's pair.
    fn fresh(bodies: &[RigidBody], colliders: &[Collider]) -> (Vec<Contact>, ManifoldCache) {
        let (mut out, mut points) = (Vec::new(), Vec::new());
        let pose = body_body_kept(
            bodies,
            colliders,
            0,
            1,
            MARGIN,
            SLACK,
            &mut ParryScratch::default(),
            &mut points,
            &mut out,
        );
        let mut cache = ManifoldCache::default();
        cache.push(0, 1, pose, MARGIN + SLACK, &points);
        (out, cache)
    }

    fn at_rest(n: usize) -> Vec<(Vec3, Vec3)> {
        vec![(Vec3::zeros(), Vec3::zeros()); n]
    }

    fn rule(kicked: &[(Vec3, Vec3)]) -> RecycleRule<'_> {
        RecycleRule {
            rest_speed: 0.05,
            slack: SLACK,
            kicked,
        }
    }

    fn try_recycle(
        bodies: &[RigidBody],
        cache: &ManifoldCache,
        rule: &RecycleRule<'_>,
    ) -> Option<Vec<Contact>> {
        let m = &cache.manifolds()[0];
        let mut out = Vec::new();
        let radius = bodies[1].shape.bounding_radius();
        recycle(
            bodies,
            (0, 1),
            radius,
            MARGIN,
            m,
            cache.points_of(m),
            rule,
            &mut out,
        )
        .then_some(out)
    }

    #[test]
    fn kept_contacts_are_the_fresh_ones_and_recycle_to_them_in_place() {
        let (bodies, colliders) = stack();
        let (contacts, cache) = fresh(&bodies, &colliders);
        let mut plain = Vec::new();
        body_body(
            &bodies,
            &colliders,
            0,
            1,
            MARGIN,
            &mut ParryScratch::default(),
            &mut plain,
        );
        // The two squares' overlap, turned 10° against each other: a hexagon.
        assert_eq!(contacts.len(), 6, "a face on a face: the overlap's corners");
        assert_eq!(contacts, plain, "keeping the manifold changes no contact");
        let kicked = at_rest(2);
        let recycled = try_recycle(&bodies, &cache, &rule(&kicked)).expect("nothing moved");
        assert_eq!(recycled.len(), contacts.len());
        for (r, c) in recycled.iter().zip(&contacts) {
            assert_eq!(r.feature, c.feature);
            assert!(
                (r.point - c.point).norm() < 1e-14,
                "{:?} {:?}",
                r.point,
                c.point
            );
            assert!((r.normal - c.normal).norm() < 1e-14);
            assert!((r.gap - c.gap).abs() < 1e-14, "{} {}", r.gap, c.gap);
        }
    }

    /// b lifted by 1 mm and slid by 2 mm: every refreshed gap grows by exactly 1 mm
    /// (the face normal is vertical), and each point stays within the slide of the
    /// fresh manifold's.
    #[test]
    fn a_pair_that_barely_moved_refreshes_its_gaps() {
        let (mut bodies, colliders) = stack();
        let (contacts, cache) = fresh(&bodies, &colliders);
        bodies[1].position += Vec3::new(0.002, 0.0, 0.001);
        let kicked = at_rest(2);
        let recycled = try_recycle(&bodies, &cache, &rule(&kicked)).expect("moved 2.2 mm < 5 mm");
        let (now, _) = fresh(&bodies, &colliders);
        assert_eq!(recycled.len(), now.len());
        for ((r, c), f) in recycled.iter().zip(&contacts).zip(&now) {
            assert!(
                (r.gap - (c.gap + 0.001)).abs() < 1e-12,
                "{} {}",
                r.gap,
                c.gap
            );
            assert!((r.gap - f.gap).abs() < 1e-12);
            assert!((r.point - f.point).norm() <= 0.002 + 1e-12);
        }
    }

    #[test]
    fn a_pair_that_moved_past_the_slack_or_turned_is_computed_afresh() {
        let (bodies, colliders) = stack();
        let (_, cache) = fresh(&bodies, &colliders);
        let kicked = at_rest(2);
        let mut moved = bodies.clone();
        moved[1].position.x += 0.0051;
        assert!(
            try_recycle(&moved, &cache, &rule(&kicked)).is_none(),
            "5.1 mm > slack"
        );
        let mut turned = bodies.clone();
        // 1.2° about z: the corners move 0.87 × 0.021 = 18 mm.
        turned[1].orientation =
            Quat::from_axis_angle(&Vec3::z_axis(), 1.2f64.to_radians()) * turned[1].orientation;
        assert!(
            try_recycle(&turned, &cache, &rule(&kicked)).is_none(),
            "turned"
        );
        // A small turn is within bounds: 0.1° moves the corners 1.5 mm.
        let mut small = bodies.clone();
        small[1].orientation =
            Quat::from_axis_angle(&Vec3::z_axis(), 0.1f64.to_radians()) * small[1].orientation;
        assert!(
            try_recycle(&small, &cache, &rule(&kicked)).is_some(),
            "small turn"
        );
    }

    /// A pair approaching faster than the rest velocity is an impact: never recycled,
    /// whatever the motion; one approaching slower is.
    #[test]
    fn an_impact_is_never_recycled() {
        let (bodies, colliders) = stack();
        let (_, cache) = fresh(&bodies, &colliders);
        let falling = |vz: f64| {
            vec![
                (Vec3::zeros(), Vec3::zeros()),
                (Vec3::new(0.0, 0.0, vz), Vec3::zeros()),
            ]
        };
        let fast = falling(-0.0501);
        assert!(try_recycle(&bodies, &cache, &rule(&fast)).is_none());
        let slow = falling(-0.0499);
        assert!(try_recycle(&bodies, &cache, &rule(&slow)).is_some());
        // Spinning about x at 0.1 rad/s drives one edge of b down at 0.05 m/s or more.
        let spin = vec![
            (Vec3::zeros(), Vec3::zeros()),
            (Vec3::zeros(), Vec3::new(0.12, 0.0, 0.0)),
        ];
        assert!(try_recycle(&bodies, &cache, &rule(&spin)).is_none());
    }
}
