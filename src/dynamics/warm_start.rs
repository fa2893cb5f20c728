//! The impulses contacts carried at the end of the last step, for warm starts.
//!
//! A contact is found again by its pair (body a, body b or a container) and by its point
//! in a's body frame: the narrow phase gives contacts no persistent identity, so a point
//! that moved with body a by less than a tolerance is taken as the same contact (Box2D
//! matches manifold points by feature ids instead). One flat list sorted by pair, reused
//! from step to step (no allocation once it has grown to the pile's contact count); the
//! contact pass, CCP and MDP warm-start from it, each matching a contact within 1 % of
//! its lever arm ([`match_tolerance`]). A method's cache is part of the world's state: a
//! saved state carries it ([`crate::scene::save`]).

use crate::math::Vec3;

/// A contact's pair: body a, body b or a container.
pub type PairKey = (usize, Option<usize>, Option<usize>);

/// One contact's accumulated impulse at the end of the last step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachedImpulse {
    pub key: PairKey,
    /// Order of insertion (ties within a pair keep the contacts' order).
    pub order: u32,
    /// The contact point in a's body frame (the lever arm R_aᵀ r_a).
    pub point: Vec3,
    /// Normal impulse λ_n (along the contact's normal, on a) and the tangential impulse
    /// (world vector, on a).
    pub normal: f64,
    pub tangent: Vec3,
}

/// How far (m) a contact's body-frame point may have moved and still be taken for the
/// same contact: 1 % of its lever arm `r_a` (10⁻⁸ m at least).
pub fn match_tolerance(r_a: &Vec3) -> f64 {
    0.01 * r_a.norm().max(1e-6)
}

/// The impulses of the last step, sorted by pair.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImpulseCache {
    pub(crate) entries: Vec<CachedImpulse>,
}

impl ImpulseCache {
    /// Every remembered impulse, sorted by pair (insertion order within a pair): pushing
    /// them in this order into an empty cache and calling [`Self::finish`] gives back a
    /// cache whose [`Self::find`] answers the same.
    pub fn entries(&self) -> &[CachedImpulse] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Remember one contact's impulse (call [`Self::finish`] once all are pushed).
    pub fn push(&mut self, key: PairKey, point: Vec3, normal: f64, tangent: Vec3) {
        let order = self.entries.len() as u32;
        self.entries.push(CachedImpulse {
            key,
            order,
            point,
            normal,
            tangent,
        });
    }

    /// Sort by pair once all are pushed (before [`Self::find`]).
    pub fn finish(&mut self) {
        self.entries.sort_unstable_by_key(|e| (e.key, e.order));
    }

    /// The impulses remembered for one pair.
    pub fn of(&self, key: PairKey) -> &[CachedImpulse] {
        let lo = self.entries.partition_point(|e| e.key < key);
        let hi = lo + self.entries[lo..].partition_point(|e| e.key <= key);
        &self.entries[lo..hi]
    }

    /// The remembered contact of pair `key` whose body-frame point is nearest to `point`,
    /// if it is within `tolerance` (m); the first in insertion order among equals.
    pub fn find(&self, key: PairKey, point: &Vec3, tolerance: f64) -> Option<&CachedImpulse> {
        let tol2 = tolerance * tolerance;
        self.of(key)
            .iter()
            .filter(|e| (e.point - point).norm_squared() <= tol2)
            .min_by(|x, y| {
                (x.point - point)
                    .norm_squared()
                    .total_cmp(&(y.point - point).norm_squared())
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_nearest_point_of_the_pair_within_the_tolerance() {
        let mut cache = ImpulseCache::default();
        let (ab, a_wall) = ((0, Some(1), None), (0, None, Some(2)));
        cache.push(ab, Vec3::new(1.0, 0.0, 0.0), 1.0, Vec3::zeros());
        cache.push(a_wall, Vec3::new(1.0, 0.0, 0.0), 2.0, Vec3::zeros());
        cache.push(ab, Vec3::new(1.0, 0.1, 0.0), 3.0, Vec3::zeros());
        cache.finish();
        let near = |key, y: f64, tol| {
            cache
                .find(key, &Vec3::new(1.0, y, 0.0), tol)
                .map(|e| e.normal)
        };
        assert_eq!(near(ab, 0.09, 0.05), Some(3.0));
        assert_eq!(near(ab, 0.01, 0.05), Some(1.0));
        assert_eq!(near(a_wall, 0.01, 0.05), Some(2.0));
        assert_eq!(near(ab, 0.05, 0.01), None, "nothing within the tolerance");
        assert_eq!(near((0, Some(3), None), 0.0, 1.0), None, "another pair");
    }
}
