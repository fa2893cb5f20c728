//! The impulses contacts carry from one step to the next, for warm starts.
//!
//! During a step each contact carries, beside the narrow phase's [`Contact`], the
//! impulses it ends the step with ([`ContactImpulses`]: one for the method's own solve,
//! one for the contact pass), as Box2D's manifold points carry theirs (Catto, "Box2D",
//! `b2ManifoldPoint`). The method and the pass read and write them in the slice the
//! world hands them, aligned with the step's contacts; no method keeps impulses of its
//! own.
//!
//! Between steps they live in the world's [`ImpulseMemory`], by contact identity: the
//! pair (body a, body b or a container) and the features of the two sides that touch
//! ([`FeatureId`], given by the narrow phase). The next step's contacts find theirs by
//! that identity ([`ImpulseMemory::recall`]), wherever the bodies moved. One flat list
//! sorted by pair and feature, reused from step to step (no allocation once it has grown
//! to the pile's contact count). The memory is part of the world's state: a saved state
//! carries it ([`crate::scene::save`]).

use crate::collision::{Contact, FeatureId};
use crate::math::Vec3;

/// A contact's pair: body a, body b or a container.
pub type PairKey = (usize, Option<usize>, Option<usize>);

/// The pair of a contact.
#[inline]
pub fn pair_key(c: &Contact) -> PairKey {
    (c.a, c.b, c.container)
}

/// One contact's accumulated impulse: the normal impulse λ_n (along the contact's
/// normal, on a) and the tangential impulse (world vector, on a).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PointImpulse {
    pub normal: f64,
    pub tangent: Vec3,
}

/// The impulses one contact ended a step with, per stage that warm-starts from them:
/// the method's own solve (CCP, MDP: `CollisionSolver::keeps_impulses`) and the contact
/// pass. `None`: nothing to start from (a new contact, or one the stage left at zero).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ContactImpulses {
    pub method: Option<PointImpulse>,
    pub pass: Option<PointImpulse>,
}

impl ContactImpulses {
    fn is_empty(&self) -> bool {
        self.method.is_none() && self.pass.is_none()
    }
}

/// One remembered contact: its identity and its impulses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Remembered {
    pub key: PairKey,
    /// The features that touch (unique within the pair).
    pub feature: FeatureId,
    pub impulses: ContactImpulses,
}

/// Sort `entries` (identities distinct) by pair and feature.
///
/// A step's contacts come as the narrow phase lists them (`ImpulseMemory::find_each`):
/// body pairs ascending, then body–container contacts ascending, each pair's contacts
/// together. Sorting each pair's few contacts by feature leaves two ascending runs,
/// merged in one pass through `scratch`; any other order is sorted outright.
fn sort_by_identity(entries: &mut Vec<Remembered>, scratch: &mut Vec<Remembered>) {
    let id = |e: &Remembered| (e.key, e.feature);
    let mut start = 0;
    while start < entries.len() {
        let key = entries[start].key;
        let end = entries[start..]
            .iter()
            .position(|e| e.key != key)
            .map_or(entries.len(), |k| start + k);
        entries[start..end].sort_unstable_by_key(|e| e.feature);
        start = end;
    }
    let descent = entries
        .windows(2)
        .position(|w| id(&w[1]) < id(&w[0]))
        .map(|k| k + 1);
    let Some(mid) = descent else {
        return;
    };
    if entries[mid..].windows(2).any(|w| id(&w[1]) < id(&w[0])) {
        entries.sort_unstable_by_key(id);
        return;
    }
    scratch.clear();
    let (mut i, mut j) = (0, mid);
    while i < mid && j < entries.len() {
        if id(&entries[j]) < id(&entries[i]) {
            scratch.push(entries[j]);
            j += 1;
        } else {
            scratch.push(entries[i]);
            i += 1;
        }
    }
    scratch.extend_from_slice(&entries[i..mid]);
    scratch.extend_from_slice(&entries[j..]);
    std::mem::swap(entries, scratch);
}

/// [`ImpulseMemory::recall`]'s cursor answer for a contact with no remembered entry.
const NOT_FOUND: u32 = u32::MAX;

/// The impulses of the last step's contacts, sorted by pair and feature, each identity
/// once. Two memories are equal when their entries are.
#[derive(Clone, Debug, Default)]
pub struct ImpulseMemory {
    entries: Vec<Remembered>,
    /// Scratch of [`Self::recall`]: per contact, its entry or [`NOT_FOUND`].
    found: Vec<u32>,
    /// Scratch of [`Self::remember`]'s sort.
    merged: Vec<Remembered>,
}

impl PartialEq for ImpulseMemory {
    fn eq(&self, other: &Self) -> bool {
        self.entries == other.entries
    }
}

impl ImpulseMemory {
    /// A memory holding `entries` (any order). An identity listed twice keeps the first
    /// listing's impulse of each stage (a saved state lists the pass's and the method's
    /// impulses apart: a contact in both lists is one entry with both).
    pub fn from_entries(entries: impl IntoIterator<Item = Remembered>) -> Self {
        let mut list: Vec<(u32, Remembered)> = entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| (i as u32, e))
            .collect();
        list.sort_by_key(|(i, e)| (e.key, e.feature, *i));
        let mut memory = ImpulseMemory::default();
        for (_, e) in list {
            match memory.entries.last_mut() {
                Some(last) if (last.key, last.feature) == (e.key, e.feature) => {
                    let (was, add) = (&mut last.impulses, e.impulses);
                    was.method = was.method.or(add.method);
                    was.pass = was.pass.or(add.pass);
                }
                _ => memory.entries.push(e),
            }
        }
        memory.entries.retain(|e| !e.impulses.is_empty());
        memory
    }

    /// Every remembered contact, sorted by pair and feature.
    pub fn entries(&self) -> &[Remembered] {
        &self.entries
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forget everything.
    pub fn clear(&mut self) {
        self.entries.clear();
    }

    /// Forget the method's impulses (another method starts cold), keeping the pass's.
    pub fn forget_method(&mut self) {
        for e in &mut self.entries {
            e.impulses.method = None;
        }
        self.entries.retain(|e| !e.impulses.is_empty());
    }

    /// Remember what `contacts` ended the step with (`impulses[i]` is `contacts[i]`'s),
    /// in place of what was remembered: the contacts with an impulse of either stage.
    pub fn remember(&mut self, contacts: &[Contact], impulses: &[ContactImpulses]) {
        self.entries.clear();
        self.entries.extend(
            contacts
                .iter()
                .zip(impulses)
                .filter(|(_, i)| !i.is_empty())
                .map(|(c, &impulses)| Remembered {
                    key: pair_key(c),
                    feature: c.feature,
                    impulses,
                }),
        );
        // Identities are unique within a step's contacts, so the order is total and
        // any sort gives one answer.
        sort_by_identity(&mut self.entries, &mut self.merged);
        debug_assert!(
            self.entries
                .windows(2)
                .all(|w| (w[0].key, w[0].feature) != (w[1].key, w[1].feature)),
            "two contacts of one step share an identity"
        );
    }

    /// The remembered impulses of each of `contacts` (by pair and features; none for a
    /// contact not remembered), into `out`, aligned with `contacts`.
    pub fn recall(&mut self, contacts: &[Contact], out: &mut Vec<ContactImpulses>) {
        let mut found = std::mem::take(&mut self.found);
        self.find_each(
            contacts.iter().map(|c| (pair_key(c), c.feature)),
            &mut found,
        );
        out.clear();
        out.extend(found.iter().map(|&j| match j {
            NOT_FOUND => ContactImpulses::default(),
            j => self.entries[j as usize].impulses,
        }));
        self.found = found;
    }

    /// The remembered entry of each of `contacts` (pair and features), in their order:
    /// its index into [`Self::entries`], or [`NOT_FOUND`].
    ///
    /// One merge pass over the entries for a contact list made of ascending runs, as
    /// the narrow phase gives it (body pairs ascending, then body–container contacts
    /// ascending: each kind keeps its own cursor); a contact whose pair comes before the
    /// last of its kind is found by binary search, so any order gets the same answers.
    fn find_each(&self, contacts: impl Iterator<Item = (PairKey, FeatureId)>, out: &mut Vec<u32>) {
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

    /// The remembered contact of pair `key` with the features `feature`.
    pub fn find(&self, key: PairKey, feature: FeatureId) -> Option<&Remembered> {
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

    fn pass(normal: f64) -> ContactImpulses {
        ContactImpulses {
            method: None,
            pass: Some(PointImpulse {
                normal,
                tangent: Vec3::zeros(),
            }),
        }
    }

    fn entry(key: PairKey, feature: FeatureId, impulses: ContactImpulses) -> Remembered {
        Remembered {
            key,
            feature,
            impulses,
        }
    }

    #[test]
    fn finds_the_contact_of_the_pair_with_the_same_features() {
        let (ab, a_wall) = ((0, Some(1), None), (0, None, Some(2)));
        let f = |a, b| FeatureId { a, b };
        let memory = ImpulseMemory::from_entries([
            entry(ab, f(3, 7), pass(1.0)),
            entry(a_wall, f(3, 7), pass(2.0)),
            entry(ab, f(3, 8), pass(3.0)),
            entry(ab, f(0, 0), pass(4.0)),
        ]);
        let normal = |key, id| {
            memory
                .find(key, id)
                .map(|e| e.impulses.pass.unwrap().normal)
        };
        assert_eq!(normal(ab, f(3, 8)), Some(3.0));
        assert_eq!(normal(ab, f(3, 7)), Some(1.0));
        assert_eq!(normal(ab, f(0, 0)), Some(4.0));
        assert_eq!(normal(a_wall, f(3, 7)), Some(2.0));
        assert_eq!(normal(ab, f(7, 3)), None, "other features");
        assert_eq!(normal(a_wall, f(0, 0)), None, "features of another pair");
        assert_eq!(normal((0, Some(3), None), f(3, 7)), None, "another pair");
    }

    #[test]
    fn the_two_stages_of_one_identity_merge_and_the_first_listing_wins() {
        let ab = (0, Some(1), None);
        let f = FeatureId { a: 1, b: 2 };
        let method = ContactImpulses {
            method: Some(PointImpulse {
                normal: 5.0,
                tangent: Vec3::x(),
            }),
            pass: None,
        };
        let memory = ImpulseMemory::from_entries([
            entry(ab, f, pass(1.0)),
            entry(ab, f, method),
            entry(ab, f, pass(9.0)),
        ]);
        assert_eq!(memory.len(), 1);
        let e = memory.find(ab, f).unwrap().impulses;
        assert_eq!(e.pass.unwrap().normal, 1.0);
        assert_eq!(e.method.unwrap().normal, 5.0);
        let mut forgot = memory.clone();
        forgot.forget_method();
        assert_eq!(forgot.find(ab, f).unwrap().impulses, pass(1.0));
    }

    /// `recall` answers as `find` for lists in the narrow phase's order and in any
    /// other (random pairs, repeats, features absent, containers interleaved).
    /// `remember`'s sort against a plain sort of the same distinct identities, in the
    /// narrow phase's order (pairs ascending, each pair's features in any order, then
    /// containers), in random order, and with the pairs' contacts not together.
    #[test]
    fn remembered_entries_sort_as_a_plain_sort_would() {
        use rand::seq::SliceRandom;
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut scratch = Vec::new();
        for round in 0..300 {
            let mut list: Vec<Remembered> = Vec::new();
            for a in 0..rng.random_range(0..12) {
                for other in 0..rng.random_range(0..4) {
                    let key = if rng.random_bool(0.3) {
                        (a, None, Some(other))
                    } else {
                        (a, Some(a + 1 + other), None)
                    };
                    let mut features: Vec<u64> = (0..8).collect();
                    features.shuffle(&mut rng);
                    for &f in &features[..rng.random_range(1..6)] {
                        let feature = FeatureId { a: f, b: f % 3 };
                        list.push(entry(key, feature, pass(list.len() as f64)));
                    }
                }
            }
            match round % 3 {
                // Pairs, then containers, each ascending; features as they came.
                0 => list.sort_by_key(|e| (e.key.1.is_none(), e.key)),
                1 => list.shuffle(&mut rng),
                _ => {
                    list.sort_by_key(|e| (e.key.1.is_none(), e.key));
                    let n = list.len();
                    if n > 2 {
                        list.swap(0, n - 1);
                    }
                }
            }
            let mut expected = list.clone();
            expected.sort_unstable_by_key(|e| (e.key, e.feature));
            sort_by_identity(&mut list, &mut scratch);
            assert_eq!(list, expected, "round {round}");
        }
    }

    #[test]
    fn recall_answers_as_find_in_any_order() {
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
        let contact = |(k, f): (PairKey, FeatureId)| Contact::of_pair(k.0, k.1, k.2, f);
        let mut out = Vec::new();
        for round in 0..200 {
            let mut memory = ImpulseMemory::from_entries(
                (0..rng.random_range(0..40))
                    .map(|i| entry(key(&mut rng), feature(&mut rng), pass(i as f64)))
                    .collect::<Vec<_>>(),
            );
            let mut list: Vec<(PairKey, FeatureId)> = (0..rng.random_range(0..50))
                .map(|_| (key(&mut rng), feature(&mut rng)))
                .collect();
            if round % 2 == 0 {
                // The narrow phase's order: pairs ascending, then containers ascending.
                list.sort_by_key(|&(k, f)| (k.1.is_none(), k, f));
            }
            let contacts: Vec<Contact> = list.iter().copied().map(contact).collect();
            memory.recall(&contacts, &mut out);
            assert_eq!(out.len(), list.len());
            for (&(k, f), got) in list.iter().zip(&out) {
                let expected = memory
                    .find(k, f)
                    .map_or_else(Default::default, |e| e.impulses);
                assert_eq!(*got, expected, "round {round}: {k:?} {f:?}");
            }
            // What a step remembers is what the next step recalls.
            let mut again = ImpulseMemory::default();
            let mut unique = contacts.clone();
            unique.sort_by_key(|c| (pair_key(c), c.feature));
            unique.dedup_by_key(|c| (pair_key(c), c.feature));
            let impulses: Vec<ContactImpulses> =
                (0..unique.len()).map(|i| pass(i as f64 + 1.0)).collect();
            again.remember(&unique, &impulses);
            let mut back = Vec::new();
            again.recall(&unique, &mut back);
            assert_eq!(back, impulses, "round {round}");
        }
    }
}
