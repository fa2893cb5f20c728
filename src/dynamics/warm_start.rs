//! The impulses contacts carried at the end of the last step, for warm starts.
//!
//! A contact is found again by its identity: its pair (body a, body b or a container)
//! and the features of the two sides that touch ([`FeatureId`], given by the narrow
//! phase), as Box2D matches manifold points by feature ids (Catto, "Box2D",
//! `b2ContactFeature`). One flat list sorted by pair and feature, reused from step to
//! step (no allocation once it has grown to the pile's contact count); the contact
//! pass, CCP and MDP warm-start from it. A method's cache is part of the world's state:
//! a saved state carries it ([`crate::scene::save`]).

use crate::collision::FeatureId;
use crate::math::Vec3;

/// A contact's pair: body a, body b or a container.
pub type PairKey = (usize, Option<usize>, Option<usize>);

/// One contact's accumulated impulse at the end of the last step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CachedImpulse {
    pub key: PairKey,
    /// The features that touch (unique within the pair).
    pub feature: FeatureId,
    /// Order of insertion (ties keep the contacts' order).
    pub order: u32,
    /// The contact point in a's body frame (the lever arm R_aᵀ r_a), where the contact
    /// was when its impulse was taken.
    pub point: Vec3,
    /// Normal impulse λ_n (along the contact's normal, on a) and the tangential impulse
    /// (world vector, on a).
    pub normal: f64,
    pub tangent: Vec3,
}

/// [`ImpulseCache::find_each`]'s answer for a contact with no remembered entry.
pub const NOT_FOUND: u32 = u32::MAX;

/// The impulses of the last step, sorted by pair and feature.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImpulseCache {
    pub(crate) entries: Vec<CachedImpulse>,
}

impl ImpulseCache {
    /// Every remembered impulse, sorted by pair and feature (insertion order among
    /// equals): pushing them in this order into an empty cache and calling
    /// [`Self::finish`] gives back a cache whose [`Self::find`] answers the same.
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
    pub fn push(
        &mut self,
        key: PairKey,
        feature: FeatureId,
        point: Vec3,
        normal: f64,
        tangent: Vec3,
    ) {
        let order = self.entries.len() as u32;
        self.entries.push(CachedImpulse {
            key,
            feature,
            order,
            point,
            normal,
            tangent,
        });
    }

    /// Sort by pair and feature once all are pushed (before [`Self::find`]).
    pub fn finish(&mut self) {
        self.entries
            .sort_unstable_by_key(|e| (e.key, e.feature, e.order));
    }

    /// The impulses remembered for one pair.
    pub fn of(&self, key: PairKey) -> &[CachedImpulse] {
        let lo = self.entries.partition_point(|e| e.key < key);
        let hi = lo + self.entries[lo..].partition_point(|e| e.key <= key);
        &self.entries[lo..hi]
    }

    /// The remembered entry of each of `contacts` (pair and features), in their order,
    /// as [`Self::find`] answers it: its index into [`Self::entries`], or [`NOT_FOUND`].
    ///
    /// One merge pass over the entries for a contact list made of ascending runs, as
    /// the narrow phase gives it (body pairs ascending, then body–container contacts
    /// ascending: each kind keeps its own cursor); a contact whose pair comes before the
    /// last of its kind is found by binary search, so any order gets the same answers.
    pub fn find_each(
        &self,
        contacts: impl Iterator<Item = (PairKey, FeatureId)>,
        out: &mut Vec<u32>,
    ) {
        out.clear();
        let entries = &self.entries;
        // Per kind (pair, container): the cursor and the last key looked up.
        let mut cursor = [0usize; 2];
        let mut last: [Option<PairKey>; 2] = [None, None];
        for (key, feature) in contacts {
            let kind = usize::from(key.1.is_none());
            let at = &mut cursor[kind];
            if last[kind].is_some_and(|l| key < l) {
                *at = entries.partition_point(|e| e.key < key);
            } else {
                while *at < entries.len() && entries[*at].key < key {
                    *at += 1;
                }
            }
            last[kind] = Some(key);
            let mut found = NOT_FOUND;
            for (j, e) in entries[*at..].iter().enumerate() {
                if e.key != key || e.feature > feature {
                    break;
                }
                if e.feature == feature {
                    found = (*at + j) as u32;
                    break;
                }
            }
            out.push(found);
        }
    }

    /// The remembered contact of pair `key` with the features `feature` (the first in
    /// insertion order if a saved list repeats it).
    pub fn find(&self, key: PairKey, feature: FeatureId) -> Option<&CachedImpulse> {
        let at = self
            .entries
            .partition_point(|e| (e.key, e.feature) < (key, feature));
        self.entries
            .get(at)
            .filter(|e| e.key == key && e.feature == feature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_contact_of_the_pair_with_the_same_features() {
        let mut cache = ImpulseCache::default();
        let (ab, a_wall) = ((0, Some(1), None), (0, None, Some(2)));
        let f = |a, b| FeatureId { a, b };
        let p = Vec3::new(1.0, 0.0, 0.0);
        cache.push(ab, f(3, 7), p, 1.0, Vec3::zeros());
        cache.push(a_wall, f(3, 7), p, 2.0, Vec3::zeros());
        cache.push(ab, f(3, 8), p, 3.0, Vec3::zeros());
        cache.push(ab, f(0, 0), p, 4.0, Vec3::zeros());
        cache.finish();
        let normal = |key, id| cache.find(key, id).map(|e| e.normal);
        assert_eq!(normal(ab, f(3, 8)), Some(3.0));
        assert_eq!(normal(ab, f(3, 7)), Some(1.0));
        assert_eq!(normal(ab, f(0, 0)), Some(4.0));
        assert_eq!(normal(a_wall, f(3, 7)), Some(2.0));
        assert_eq!(normal(ab, f(7, 3)), None, "other features");
        assert_eq!(normal(a_wall, f(0, 0)), None, "features of another pair");
        assert_eq!(normal((0, Some(3), None), f(3, 7)), None, "another pair");
        assert_eq!(cache.of(ab).len(), 3);
    }

    /// `find_each` answers as `find` for lists in the narrow phase's order and in any
    /// other (random pairs, repeats, features absent, containers interleaved).
    #[test]
    fn find_each_answers_as_find_in_any_order() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let key = |rng: &mut rand_chacha::ChaCha8Rng| -> PairKey {
            let a = rng.random_range(0..6);
            if rng.random_bool(0.3) {
                (a, None, Some(rng.random_range(0..3)))
            } else {
                (a, Some(a + 1 + rng.random_range(0..5)), None)
            }
        };
        let feature = |rng: &mut rand_chacha::ChaCha8Rng| FeatureId {
            a: rng.random_range(0..4),
            b: rng.random_range(0..3),
        };
        for round in 0..200 {
            let mut cache = ImpulseCache::default();
            for i in 0..rng.random_range(0..40) {
                let (k, f) = (key(&mut rng), feature(&mut rng));
                cache.push(k, f, Vec3::zeros(), i as f64, Vec3::zeros());
            }
            cache.finish();
            let mut list: Vec<(PairKey, FeatureId)> = (0..rng.random_range(0..50))
                .map(|_| (key(&mut rng), feature(&mut rng)))
                .collect();
            if round % 2 == 0 {
                // The narrow phase's order: pairs ascending, then containers ascending.
                list.sort_by_key(|&(k, f)| (k.1.is_none(), k, f));
            }
            let mut found = Vec::new();
            cache.find_each(list.iter().copied(), &mut found);
            assert_eq!(found.len(), list.len());
            for (&(k, f), &j) in list.iter().zip(&found) {
                let expected = cache.find(k, f).map(|e| e.normal);
                let got = (j != NOT_FOUND).then(|| cache.entries()[j as usize].normal);
                assert_eq!(got, expected, "round {round}: {k:?} {f:?}");
            }
        }
    }
}
