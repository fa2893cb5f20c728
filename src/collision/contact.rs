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
    /// World contact point: on body a's surface against a container, midway between
    /// the two surfaces between two bodies (`narrow_phase::make_contact`).
    pub point: Vec3,
    pub normal: Vec3,
    pub t1: Vec3,
    pub t2: Vec3,
    pub gap: f64,
    pub r_a: Vec3,
    pub r_b: Vec3,
    /// Which container (index into the world's containers) when `b` is `None`.
    pub container: Option<usize>,
    /// Which features of the two shapes touch here: with the pair (a, b or the
    /// container) the contact's identity from step to step (see [`FeatureId`]).
    pub feature: FeatureId,
}

/// The features of the two sides that make a contact, as Box2D's manifold points carry
/// them (Catto, "Box2D" `b2ContactFeature`): a contact of the same pair with the same
/// feature id in the next step is the same contact, wherever the bodies moved, so it
/// can start from the impulse it carried (`dynamics::warm_start`).
///
/// Unique within a pair in one step's contact list. `a` names the feature of body a,
/// `b` that of body b or of the container:
/// - polyhedra, rods and crosses (parry manifolds): the convex part's index in the
///   upper 32 bits, parry's packed vertex/edge/face id (`PackedFeatureId`) in the lower
///   ones; the one point per manifold that parry finds by GJK and does not name has
///   feature 0 (parry's `UNKNOWN`) on both sides; a repeated id is made unique by
///   [`FeatureId::first_free`];
/// - sphere–sphere pairs and an ellipsoid against a sphere or an ellipsoid (one point
///   per pair): (0, 0);
/// - an ellipsoid against a polyhedron, rod or cross (one point per convex part of the
///   other body): the part's index in the upper 32 bits of that body's side, 0 on the
///   ellipsoid's;
/// - a body against a container: `a` is the vertex (index into the body's hull or cap
///   points; 0 for a sphere or an ellipsoid), `b` the surface (its place in
///   `containers::active_surfaces`' list: the floor first, then walls, then dividers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FeatureId {
    pub a: u64,
    pub b: u64,
}

impl FeatureId {
    /// Part `part` of a compound and feature `feature` within it.
    pub fn part_feature(part: u32, feature: u32) -> u64 {
        (u64::from(part) << 32) | u64::from(feature)
    }

    /// `named`, or, if `taken` says the pair already has a contact with it, the same id
    /// with its repeat count k = 1, 2, … in bits 48-63 of `a` (above any part index
    /// below 2¹⁶): parry can give two points of one manifold the same features (a
    /// capsule's segment against a box face names neither side), and a contact's
    /// identity must be unique within its pair. The k-th repeat in the narrow phase's
    /// order keeps its id from step to step while the order holds.
    pub fn first_free(named: FeatureId, taken: impl Fn(FeatureId) -> bool) -> FeatureId {
        let mut k = 0u64;
        loop {
            let f = FeatureId {
                a: named.a ^ (k << 48),
                b: named.b,
            };
            if !taken(f) {
                return f;
            }
            k += 1;
        }
    }
}

#[cfg(test)]
impl Contact {
    /// A contact of pair (`a`, `b` or `container`) with features `feature`, at the
    /// origin with normal +z, for tests that read only the contact's pair and identity.
    pub(crate) fn of_pair(
        a: usize,
        b: Option<usize>,
        container: Option<usize>,
        feature: FeatureId,
    ) -> Contact {
        let z = Vec3::zeros();
        Contact {
            a,
            b,
            point: z,
            normal: Vec3::z(),
            t1: Vec3::x(),
            t2: Vec3::y(),
            gap: 0.0,
            r_a: z,
            r_b: z,
            container,
            feature,
        }
    }
}

/// Relative velocity of `a` with respect to `b` at the contact point.
pub fn relative_velocity(bodies: &[crate::body::RigidBody], c: &Contact) -> Vec3 {
    let va = bodies[c.a].velocity + bodies[c.a].angular_velocity.cross(&c.r_a);
    match c.b {
        Some(b) => va - (bodies[b].velocity + bodies[b].angular_velocity.cross(&c.r_b)),
        None => va,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_feature_gets_the_first_free_repeat_count() {
        let named = FeatureId {
            a: FeatureId::part_feature(2, 7),
            b: 0,
        };
        let mut taken = vec![];
        for k in 0..3u64 {
            let f = FeatureId::first_free(named, |f| taken.contains(&f));
            assert_eq!(f.a >> 48, k, "the k-th repeat");
            assert_eq!(f.a & ((1 << 48) - 1), named.a, "part and feature kept");
            assert_eq!(f.b, named.b);
            taken.push(f);
        }
    }
}
