//! The order in which the sequential methods resolve contacts: one deterministic priority
//! queue over contacts keyed by their relative normal velocity ũ_n, shared by SQM and ETM.
//!
//! Both methods take next "the contact with the smallest relative normal velocity"
//! (Tang, Paluszny, Zimmerman 2014, paper 000: Algorithm 2, lines 2, 9 and 22 for ETM;
//! Appendix A with Chatterjee and Ruina's heap for SQM). The queue orders contacts by the
//! pair (key, contact index): of two equal keys the contact with the smaller index comes
//! first, so the order, and with it the solution, is a function of the keys alone, not of
//! the history of the structure that holds them.
//!
//! # Structure
//! [`ContactQueue`] is [`ContactHeap`], an indexed binary heap whose entries hold their
//! key next to the contact index (a comparison reads no other array); re-keying moves an
//! entry only past the entries it now comes before or after.
//!
//! [`TournamentTree`] gives the same order: a segment tree whose inner nodes hold the
//! smaller of their two children, the contacts at the leaves; re-keying rewrites a leaf
//! and recomputes the nodes above it until one is unchanged. It was measured the slower
//! on ETM's piles (docs/results/etm-queue.md): there most contacts are not engaged (key
//! +∞), so an engaged contact wins its subtree up to high levels and every change of its
//! key climbs that far, where the heap's entry mostly keeps its rank. It is kept, with
//! the old heaps, for the tests that compare orders.
//!
//! Removing a contact is giving it the key +∞: [`ContactQueue::min`] reports the entry of
//! least key, which callers compare with their threshold.

/// No contact (padding leaves, contacts outside the current island).
const NONE: u32 = u32::MAX;

/// A queue entry: a contact and its key.
#[derive(Clone, Copy, Debug)]
struct Entry {
    key: f64,
    id: u32,
}

impl Entry {
    const EMPTY: Entry = Entry {
        key: f64::INFINITY,
        id: NONE,
    };

    /// Whether `self` comes before `other` in the (key, contact index) order.
    #[inline]
    fn before(&self, other: &Entry) -> bool {
        self.key < other.key || (self.key == other.key && self.id < other.id)
    }

    /// Same contact and the same key bits (what the nodes above it read).
    #[inline]
    fn same(&self, other: &Entry) -> bool {
        self.id == other.id && self.key.to_bits() == other.key.to_bits()
    }
}

/// A min-queue of contact indices by (key, index); the interface SQM and ETM order their
/// contacts through. [`ContactQueue`] is the implementation; tests run the methods with
/// the binary heaps they used before, through the same interface.
pub trait ContactOrder: Clone + Default + Send + Sync + 'static {
    /// Empty queue for contact indices `0..n`.
    fn reset(&mut self, n: usize);
    /// Hold exactly contacts `ids` (distinct, `< n`), contact `id` with key `key(id)`.
    fn build(&mut self, ids: &[usize], key: impl Fn(usize) -> f64);
    /// The first contact by (key, index) and its key, or `None` if the queue holds none.
    fn min(&self) -> Option<(usize, f64)>;
    /// Give held contact `id` the key `key`; a contact not held is ignored.
    fn update(&mut self, id: usize, key: f64);
}

/// The queue SQM and ETM use (see the module doc for the measurement that chose it).
pub type ContactQueue = ContactHeap;

/// Indexed tournament tree over (key, contact index); see the module doc.
#[derive(Clone, Debug, Default)]
pub struct TournamentTree {
    /// `nodes[1]` is the root; node i has children 2i and 2i + 1; the leaves are
    /// `nodes[width..2 width]`. Invariant: every inner node is the `before`-smaller of
    /// its children.
    nodes: Vec<Entry>,
    /// Number of leaves, a power of two (0 when empty).
    width: usize,
    /// Per contact: its leaf (offset from `width`), or `NONE`.
    leaf: Vec<u32>,
}

impl TournamentTree {
    /// Recompute the inner nodes above leaf `i` (a node index) until one is unchanged.
    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        i >>= 1;
        while i >= 1 {
            let (l, r) = (self.nodes[2 * i], self.nodes[2 * i + 1]);
            let winner = if r.before(&l) { r } else { l };
            if winner.same(&self.nodes[i]) {
                return;
            }
            self.nodes[i] = winner;
            i >>= 1;
        }
    }

    /// The key of held contact `id`, if held.
    pub fn key(&self, id: usize) -> Option<f64> {
        let l = self.leaf[id];
        (l != NONE).then(|| self.nodes[self.width + l as usize].key)
    }
}

impl ContactOrder for TournamentTree {
    fn reset(&mut self, n: usize) {
        self.nodes.clear();
        self.width = 0;
        self.leaf.clear();
        self.leaf.resize(n, NONE);
    }

    fn build(&mut self, ids: &[usize], key: impl Fn(usize) -> f64) {
        // Forget the previous island's contacts.
        for slot in &self.nodes[self.width..] {
            if slot.id != NONE {
                self.leaf[slot.id as usize] = NONE;
            }
        }
        let width = ids.len().next_power_of_two();
        self.width = width;
        self.nodes.clear();
        self.nodes.resize(2 * width, Entry::EMPTY);
        for (k, &id) in ids.iter().enumerate() {
            debug_assert!(self.leaf[id] == NONE, "contact {id} given twice");
            let key = key(id);
            debug_assert!(!key.is_nan(), "NaN key of contact {id}");
            self.nodes[width + k] = Entry { key, id: id as u32 };
            self.leaf[id] = k as u32;
        }
        for i in (1..width).rev() {
            let (l, r) = (self.nodes[2 * i], self.nodes[2 * i + 1]);
            self.nodes[i] = if r.before(&l) { r } else { l };
        }
    }

    #[inline]
    fn min(&self) -> Option<(usize, f64)> {
        // A single leaf is its own root (width 1: the root is nodes[1], the leaf).
        let root = self.nodes.get(1)?;
        (root.id != NONE).then_some((root.id as usize, root.key))
    }

    #[inline]
    fn update(&mut self, id: usize, key: f64) {
        let l = self.leaf[id];
        if l == NONE {
            return;
        }
        debug_assert!(!key.is_nan(), "NaN key of contact {id}");
        let i = self.width + l as usize;
        if self.nodes[i].key.to_bits() == key.to_bits() {
            return;
        }
        self.nodes[i].key = key;
        self.sift_up(i);
    }
}

/// Indexed binary min-heap over (key, contact index), its entries holding their keys:
/// the same order as [`ContactQueue`]. Re-keying moves an entry only past the entries it
/// now comes before or after, so a key that keeps its rank costs two comparisons.
///
/// Only the finite keys are in the heap: a held contact whose key is +∞ (not
/// approaching, most of a forming pile's contacts) waits outside it and enters when it
/// gets a finite key, and one whose key becomes +∞ leaves. The minimum is the same
/// (+∞ is never less than a finite key, and with no finite key there is none), and the
/// heap is only as deep as the approaching contacts need.
#[derive(Clone, Debug, Default)]
pub struct ContactHeap {
    /// Invariant: no entry comes before its parent (`(k - 1) / 2`); every key is finite.
    heap: Vec<Entry>,
    /// Per contact: its position in `heap`, [`OUT`] if held with key +∞, or `NONE`.
    pos: Vec<u32>,
    /// The contacts of the last `build` (to forget them at the next).
    held: Vec<u32>,
}

/// [`ContactHeap::pos`] of a held contact whose key is +∞.
const OUT: u32 = u32::MAX - 1;

impl ContactHeap {
    /// Remove the entry at slot `k` (its contact stays held, with key +∞).
    #[inline]
    fn remove(&mut self, k: usize) {
        let gone = self.heap[k];
        self.pos[gone.id as usize] = OUT;
        let last = self.heap.pop().expect("the slot is in the heap");
        if k < self.heap.len() {
            if k > 0 && last.before(&self.heap[(k - 1) / 2]) {
                self.sift_up(k, last);
            } else {
                self.sift_down(k, last);
            }
        }
    }

    #[inline]
    fn put(&mut self, k: usize, e: Entry) {
        self.heap[k] = e;
        self.pos[e.id as usize] = k as u32;
    }

    /// Move entry `e`, whose slot is `k`, up to its place.
    #[inline]
    fn sift_up(&mut self, mut k: usize, e: Entry) -> usize {
        while k > 0 {
            let parent = (k - 1) / 2;
            let p = self.heap[parent];
            if !e.before(&p) {
                break;
            }
            self.put(k, p);
            k = parent;
        }
        self.put(k, e);
        k
    }

    /// Move entry `e`, whose slot is `k`, down to its place.
    #[inline]
    fn sift_down(&mut self, mut k: usize, e: Entry) {
        let n = self.heap.len();
        loop {
            let l = 2 * k + 1;
            if l >= n {
                break;
            }
            let mut m = l;
            if l + 1 < n && self.heap[l + 1].before(&self.heap[l]) {
                m = l + 1;
            }
            let c = self.heap[m];
            if !c.before(&e) {
                break;
            }
            self.put(k, c);
            k = m;
        }
        self.put(k, e);
    }
}

impl ContactOrder for ContactHeap {
    fn reset(&mut self, n: usize) {
        self.heap.clear();
        self.held.clear();
        self.pos.clear();
        self.pos.resize(n, NONE);
    }

    fn build(&mut self, ids: &[usize], key: impl Fn(usize) -> f64) {
        for &id in &self.held {
            self.pos[id as usize] = NONE;
        }
        self.heap.clear();
        self.held.clear();
        for &id in ids {
            debug_assert!(self.pos[id] == NONE, "contact {id} given twice");
            let key = key(id);
            debug_assert!(!key.is_nan(), "NaN key of contact {id}");
            self.held.push(id as u32);
            if key == f64::INFINITY {
                self.pos[id] = OUT;
            } else {
                self.pos[id] = self.heap.len() as u32;
                self.heap.push(Entry { key, id: id as u32 });
            }
        }
        for k in (0..self.heap.len() / 2).rev() {
            let e = self.heap[k];
            self.sift_down(k, e);
        }
    }

    #[inline]
    fn min(&self) -> Option<(usize, f64)> {
        self.heap.first().map(|e| (e.id as usize, e.key))
    }

    #[inline]
    fn update(&mut self, id: usize, key: f64) {
        let k = self.pos[id];
        if k == NONE {
            return;
        }
        debug_assert!(!key.is_nan(), "NaN key of contact {id}");
        if k == OUT {
            if key != f64::INFINITY {
                self.heap.push(Entry { key, id: id as u32 });
                let last = self.heap.len() - 1;
                self.sift_up(last, Entry { key, id: id as u32 });
            }
            return;
        }
        let k = k as usize;
        let old = self.heap[k];
        if old.key.to_bits() == key.to_bits() {
            return;
        }
        if key == f64::INFINITY {
            self.remove(k);
            return;
        }
        let e = Entry { key, id: old.id };
        if e.before(&old) {
            self.sift_up(k, e);
        } else {
            self.sift_down(k, e);
        }
    }
}

#[cfg(test)]
pub(crate) mod legacy {
    //! The binary heaps ETM and SQM used before [`super::ContactQueue`], verbatim but for
    //! the [`super::ContactOrder`] interface, so that tests can run the methods with both
    //! and compare.

    use super::ContactOrder;

    /// ETM's indexed binary heap: ties between equal keys fall wherever the heap's
    /// history put them.
    #[derive(Clone, Default)]
    pub struct EtmHeap {
        heap: Vec<usize>,
        key: Vec<f64>,
        pos: Vec<usize>,
        /// Break ties by contact index (the queue's rule) instead.
        pub by_index: bool,
    }

    impl EtmHeap {
        /// The heap with ties broken by contact index.
        pub fn by_index() -> Self {
            EtmHeap {
                by_index: true,
                ..Default::default()
            }
        }
        fn less(&self, a: usize, b: usize) -> bool {
            let (ka, kb) = (self.key[a], self.key[b]);
            ka < kb || (self.by_index && ka == kb && a < b)
        }
        fn swap(&mut self, i: usize, j: usize) {
            self.heap.swap(i, j);
            self.pos[self.heap[i]] = i;
            self.pos[self.heap[j]] = j;
        }
        fn sift_up(&mut self, mut k: usize) {
            while k > 0 {
                let parent = (k - 1) / 2;
                if self.less(self.heap[k], self.heap[parent]) {
                    self.swap(k, parent);
                    k = parent;
                } else {
                    break;
                }
            }
        }
        fn sift_down(&mut self, mut k: usize) {
            let n = self.heap.len();
            loop {
                let (l, r) = (2 * k + 1, 2 * k + 2);
                let mut m = k;
                if l < n && self.less(self.heap[l], self.heap[m]) {
                    m = l;
                }
                if r < n && self.less(self.heap[r], self.heap[m]) {
                    m = r;
                }
                if m == k {
                    break;
                }
                self.swap(k, m);
                k = m;
            }
        }
    }

    impl ContactOrder for EtmHeap {
        fn reset(&mut self, n: usize) {
            self.heap.clear();
            self.key.clear();
            self.key.resize(n, f64::INFINITY);
            self.pos.clear();
            self.pos.resize(n, usize::MAX);
        }
        fn build(&mut self, ids: &[usize], keys: impl Fn(usize) -> f64) {
            self.heap.clear();
            for (k, &id) in ids.iter().enumerate() {
                self.key[id] = keys(id);
                self.pos[id] = k;
                self.heap.push(id);
            }
            for k in (0..self.heap.len() / 2).rev() {
                self.sift_down(k);
            }
        }
        fn min(&self) -> Option<(usize, f64)> {
            self.heap.first().map(|&id| (id, self.key[id]))
        }
        fn update(&mut self, id: usize, key: f64) {
            let old = self.key[id];
            self.key[id] = key;
            let k = self.pos[id];
            if k == usize::MAX {
                return;
            }
            if key < old {
                self.sift_up(k);
            } else if key > old {
                self.sift_down(k);
            }
        }
    }

    const ABSENT: u32 = u32::MAX;

    /// SQM's indexed binary heap (ties by contact index); it held only the approaching
    /// contacts: key +∞ removes.
    #[derive(Clone, Default)]
    pub struct SqmHeap {
        heap: Vec<u32>,
        pos: Vec<u32>,
        key: Vec<f64>,
    }

    impl SqmHeap {
        fn less(&self, a: u32, b: u32) -> bool {
            let (ka, kb) = (self.key[a as usize], self.key[b as usize]);
            ka < kb || (ka == kb && a < b)
        }
        fn swap(&mut self, i: usize, j: usize) {
            self.heap.swap(i, j);
            self.pos[self.heap[i] as usize] = i as u32;
            self.pos[self.heap[j] as usize] = j as u32;
        }
        fn sift_up(&mut self, mut i: usize) {
            while i > 0 {
                let parent = (i - 1) / 2;
                if !self.less(self.heap[i], self.heap[parent]) {
                    break;
                }
                self.swap(i, parent);
                i = parent;
            }
        }
        fn sift_down(&mut self, mut i: usize) {
            loop {
                let (l, r) = (2 * i + 1, 2 * i + 2);
                let mut m = i;
                if l < self.heap.len() && self.less(self.heap[l], self.heap[m]) {
                    m = l;
                }
                if r < self.heap.len() && self.less(self.heap[r], self.heap[m]) {
                    m = r;
                }
                if m == i {
                    break;
                }
                self.swap(i, m);
                i = m;
            }
        }
        fn set(&mut self, c: usize, key: f64) {
            self.key[c] = key;
            match self.pos[c] {
                ABSENT => {
                    self.pos[c] = self.heap.len() as u32;
                    self.heap.push(c as u32);
                    self.sift_up(self.heap.len() - 1);
                }
                i => {
                    self.sift_up(i as usize);
                    self.sift_down(self.pos[c] as usize);
                }
            }
        }
        fn remove(&mut self, c: usize) {
            let i = self.pos[c];
            if i == ABSENT {
                return;
            }
            let last = self.heap.pop().expect("heap holds c");
            if (i as usize) < self.heap.len() {
                self.heap[i as usize] = last;
                self.pos[last as usize] = i;
                self.sift_up(i as usize);
                self.sift_down(self.pos[last as usize] as usize);
            }
            self.pos[c] = ABSENT;
        }
    }

    impl ContactOrder for SqmHeap {
        fn reset(&mut self, n: usize) {
            self.heap.clear();
            self.pos.clear();
            self.pos.resize(n, ABSENT);
            self.key.clear();
            self.key.resize(n, 0.0);
        }
        fn build(&mut self, ids: &[usize], key: impl Fn(usize) -> f64) {
            for &id in ids {
                self.update(id, key(id));
            }
        }
        fn min(&self) -> Option<(usize, f64)> {
            self.heap
                .first()
                .map(|&c| (c as usize, self.key[c as usize]))
        }
        fn update(&mut self, id: usize, key: f64) {
            if key == f64::INFINITY {
                self.remove(id);
            } else {
                self.set(id, key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::legacy::{EtmHeap, SqmHeap};
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// The first contact by (key, index), by brute force.
    fn brute_min(keys: &[(usize, f64)]) -> Option<(usize, f64)> {
        keys.iter()
            .copied()
            .filter(|&(_, k)| k < f64::INFINITY)
            .min_by(|a, b| a.1.partial_cmp(&b.1).unwrap().then(a.0.cmp(&b.0)))
    }

    #[test]
    fn pops_in_key_then_index_order_after_rekeying_and_removal() {
        let mut q = TournamentTree::default();
        q.reset(6);
        let keys = [-1.0, -5.0, -3.0, -3.0, 2.0, -4.0];
        q.build(&[0, 1, 2, 3, 4, 5], |c| keys[c]);
        q.update(1, 0.5); // the minimum re-keyed upwards
        q.update(4, f64::INFINITY); // removed
        q.update(0, -6.0); // re-keyed downwards
        let mut order = Vec::new();
        while let Some((c, k)) = q.min() {
            if k == f64::INFINITY {
                break;
            }
            order.push(c);
            q.update(c, f64::INFINITY);
        }
        // Keys: 0:-6, 5:-4, 2:-3, 3:-3 (tie by index), 1:0.5.
        assert_eq!(order, vec![0, 5, 2, 3, 1]);
    }

    /// Random keys from a small set (so that ties are frequent), random islands and
    /// re-keyings: the tournament tree and both old heaps (ETM's with ties by index)
    /// report the brute-force minimum after every operation.
    #[test]
    fn agrees_with_brute_force_and_the_heaps_with_index_ties() {
        let mut rng = ChaCha8Rng::seed_from_u64(42);
        for round in 0..300 {
            let n = rng.random_range(1..70);
            let ids: Vec<usize> = (0..n).filter(|_| rng.random_bool(0.7)).collect();
            let mut keys: Vec<(usize, f64)> = ids
                .iter()
                .map(|&c| (c, f64::from(rng.random_range(-4..3_i32))))
                .collect();
            let key_of =
                |keys: &[(usize, f64)], c: usize| keys.iter().find(|&&(d, _)| d == c).unwrap().1;
            let mut q = TournamentTree::default();
            let mut etm = EtmHeap::by_index();
            let mut sqm = SqmHeap::default();
            let mut h = ContactHeap::default();
            h.reset(n);
            h.build(&ids, |c| key_of(&keys, c));
            q.reset(n);
            etm.reset(n);
            sqm.reset(n);
            q.build(&ids, |c| key_of(&keys, c));
            etm.build(&ids, |c| key_of(&keys, c));
            sqm.build(&ids, |c| key_of(&keys, c));
            for op in 0..200 {
                let want = brute_min(&keys);
                let got = q.min().filter(|&(_, k)| k < f64::INFINITY);
                assert_eq!(got, want, "round {round}, operation {op}: tree");
                let got = etm.min().filter(|&(_, k)| k < f64::INFINITY);
                assert_eq!(got, want, "round {round}, operation {op}: ETM's heap");
                assert_eq!(sqm.min(), want, "round {round}, operation {op}: SQM's heap");
                let got = h.min().filter(|&(_, k)| k < f64::INFINITY);
                assert_eq!(got, want, "round {round}, operation {op}: heap");
                if keys.is_empty() {
                    break;
                }
                let j = rng.random_range(0..keys.len());
                let k = if rng.random_bool(0.1) {
                    f64::INFINITY
                } else {
                    f64::from(rng.random_range(-4..3_i32))
                };
                keys[j].1 = k;
                q.update(keys[j].0, k);
                etm.update(keys[j].0, k);
                sqm.update(keys[j].0, k);
                h.update(keys[j].0, k);
            }
        }
    }

    /// The heap keeps only finite keys: a contact given +∞ at the build, or later,
    /// comes back when it gets a finite key, and one outside the island stays ignored.
    #[test]
    fn the_heap_lets_contacts_leave_and_come_back() {
        let mut h = ContactHeap::default();
        h.reset(6);
        h.build(
            &[0, 1, 2, 4],
            |c| if c == 1 { f64::INFINITY } else { c as f64 },
        );
        assert_eq!(h.min(), Some((0, 0.0)));
        h.update(0, f64::INFINITY);
        assert_eq!(h.min(), Some((2, 2.0)));
        h.update(1, -1.0);
        assert_eq!(h.min(), Some((1, -1.0)));
        h.update(3, -9.0); // not in the island: ignored
        h.update(1, f64::INFINITY);
        h.update(2, f64::INFINITY);
        assert_eq!(h.min(), Some((4, 4.0)));
        h.update(4, f64::INFINITY);
        assert_eq!(h.min(), None);
        h.update(0, 3.0);
        assert_eq!(h.min(), Some((0, 3.0)));
        h.build(&[3, 5], |c| -(c as f64));
        assert_eq!(h.min(), Some((5, -5.0)));
        h.update(0, -10.0); // of the last island: ignored
        assert_eq!(h.min(), Some((5, -5.0)));
        h.build(&[], |_| 0.0);
        assert_eq!(h.min(), None);
    }

    #[test]
    fn rebuilding_for_another_island_forgets_the_first() {
        let mut q = TournamentTree::default();
        q.reset(5);
        q.build(&[0, 2, 4], |c| -(c as f64));
        assert_eq!(q.min(), Some((4, -4.0)));
        q.build(&[1, 3], |c| c as f64);
        assert_eq!(q.min(), Some((1, 1.0)));
        q.update(4, -10.0); // not in this island: ignored
        assert_eq!(q.min(), Some((1, 1.0)));
        assert_eq!(q.key(0), None);
        q.build(&[], |_| 0.0);
        assert_eq!(q.min(), None);
    }
}

#[cfg(test)]
pub(crate) mod problems {
    //! Collision problems on which tests compare SQM and ETM under different contact
    //! orders: random clusters, and degenerate ones (exact ties of ũ_n, stacks, flat
    //! faces with four-point manifolds).

    use crate::body::RigidBody;
    use crate::collision::Contact;
    use crate::container::Container;
    use crate::dynamics::graph::ContactGraph;
    use crate::dynamics::solver::{CollisionSolver, SolverContext, SolverKind, SolverParams};
    use crate::dynamics::warm_start::ContactImpulses;
    use crate::math::{Quat, Vec3};
    use crate::shapes::Shape;
    use crate::world::World;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;
    use std::f64::consts::PI;

    /// One collision problem: bodies in contact, before the solve.
    pub struct Problem {
        pub name: String,
        pub world: World,
        pub contacts: Vec<Contact>,
        /// Whether the problem is built to have exactly equal ũ_n at several contacts.
        pub ties: bool,
    }

    impl Problem {
        /// Solve the problem once with `solver`; the bodies' velocities after it.
        pub fn solve(&self, solver: &mut dyn CollisionSolver) -> Vec<[f64; 6]> {
            velocities(&self.solve_bodies(solver))
        }

        /// Solve the problem once with `solver`; the bodies after it.
        pub fn solve_bodies(&self, solver: &mut dyn CollisionSolver) -> Vec<RigidBody> {
            let mut bodies = self.world.bodies.clone();
            let graph = ContactGraph::of(&bodies, &self.contacts);
            solver
                .resolve(SolverContext {
                    bodies: &mut bodies,
                    contacts: &self.contacts,
                    graph: &graph,
                    impulses: &mut vec![ContactImpulses::default(); self.contacts.len()],
                    params: &self.world.params,
                    dt: self.world.dt,
                    trace: None,
                })
                .unwrap_or_else(|e| panic!("{}: {e:?}", self.name));
            bodies
        }

        /// Largest initial speed |v| + |ω| r of a body (m/s), r its bounding radius.
        pub fn speed_scale(&self) -> f64 {
            self.world
                .bodies
                .iter()
                .map(|b| b.velocity.norm() + b.angular_velocity.norm() * b.shape.bounding_radius())
                .fold(0.0, f64::max)
        }
    }

    /// Each body's (v, ω).
    pub fn velocities(bodies: &[RigidBody]) -> Vec<[f64; 6]> {
        bodies
            .iter()
            .map(|b| {
                let (v, w) = (b.velocity, b.angular_velocity);
                [v.x, v.y, v.z, w.x, w.y, w.z]
            })
            .collect()
    }

    fn params(rng: &mut ChaCha8Rng) -> SolverParams {
        SolverParams {
            restitution: rng.random_range(0.0..=1.0),
            friction: if rng.random_bool(0.2) {
                0.0
            } else {
                rng.random_range(0.0..1.2)
            },
            lambda: [1.0, 3.0, 10.0, 30.0][rng.random_range(0..4)],
            rest_velocity: if rng.random_bool(0.5) { 0.0 } else { 0.05 },
            ..Default::default()
        }
    }

    fn finish(name: String, mut world: World, ties: bool) -> Option<Problem> {
        let contacts = world.detect().to_vec();
        (!contacts.is_empty()).then_some(Problem {
            name,
            world,
            contacts,
            ties,
        })
    }

    fn floor() -> Container {
        Container::Plane {
            point: Vec3::zeros(),
            normal: Vec3::z(),
        }
    }

    /// 2-6 random cubes, spheres and tetrahedra overlapping in a cluster, sometimes on a
    /// floor or around a static body, random velocities.
    fn cluster(rng: &mut ChaCha8Rng, k: usize) -> Option<Problem> {
        let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, SolverKind::Etm, params(rng)).ok()?;
        if rng.random_bool(0.3) {
            w.add_container(Container::Plane {
                point: Vec3::new(0.0, 0.0, -0.5),
                normal: Vec3::z(),
            });
        }
        for j in 0..rng.random_range(2..=6) {
            let size = rng.random_range(0.4..1.0);
            let shape = match rng.random_range(0..3) {
                0 => Shape::Cuboid {
                    half_extents: Vec3::new(
                        size,
                        rng.random_range(0.3..1.0),
                        rng.random_range(0.3..1.0),
                    ) * 0.5,
                },
                1 => Shape::Sphere { radius: 0.5 * size },
                _ => Shape::regular_tetrahedron(1.2 * size),
            };
            let pos = Vec3::new(
                rng.random_range(-0.5..0.5),
                rng.random_range(-0.5..0.5),
                rng.random_range(-0.5..0.5),
            );
            let q = Quat::from_euler_angles(
                rng.random_range(-PI..PI),
                rng.random_range(-PI..PI),
                rng.random_range(-PI..PI),
            );
            let mut b = RigidBody::new(&shape, rng.random_range(500.0..3000.0), pos, q);
            if j == 0 && rng.random_bool(0.15) {
                b = b.into_static();
            } else {
                b.velocity = Vec3::from_fn(|_, _| rng.random_range(-5.0..5.0));
                b.angular_velocity = Vec3::from_fn(|_, _| rng.random_range(-5.0..5.0));
            }
            w.add_body(b);
        }
        finish(format!("cluster {k}"), w, false)
    }

    /// Degenerate problem `k`: a row of equal spheres landing together (equal ũ_n at
    /// every floor contact), a column of boxes landing flat on a floor (four-point
    /// manifolds of equal ũ_n between every pair), a box landing flat, slightly spinning
    /// or not, on a box; a sphere falling into the groove between two resting spheres.
    fn degenerate(rng: &mut ChaCha8Rng, k: usize) -> Option<Problem> {
        let mut w = World::new(Vec3::zeros(), 1.0 / 600.0, SolverKind::Etm, params(rng)).ok()?;
        w.add_container(floor());
        let v = Vec3::new(0.0, 0.0, -rng.random_range(0.5..5.0));
        let overlap = 1e-4;
        let ties;
        match k % 4 {
            0 => {
                // A row of touching spheres landing at the same speed.
                let r = 0.5;
                let n = rng.random_range(2..=6);
                for j in 0..n {
                    let mut b = RigidBody::new(
                        &Shape::Sphere { radius: r },
                        1000.0,
                        Vec3::new(j as f64 * (2.0 * r - overlap), 0.0, r - overlap),
                        Quat::identity(),
                    );
                    b.velocity = v;
                    w.add_body(b);
                }
                ties = true;
            }
            1 => {
                // A column of equal boxes, the lower ones resting, the top one landing,
                // or all landing together.
                let h = 0.5;
                let n = rng.random_range(2..=5);
                let all = rng.random_bool(0.5);
                for j in 0..n {
                    let mut b = RigidBody::new(
                        &Shape::Cuboid {
                            half_extents: Vec3::new(0.5, 0.5, h),
                        },
                        1000.0,
                        Vec3::new(0.0, 0.0, h - overlap + j as f64 * (2.0 * h - overlap)),
                        Quat::identity(),
                    );
                    if all || j == n - 1 {
                        b.velocity = v;
                    }
                    w.add_body(b);
                }
                ties = true;
            }
            2 => {
                // A 2 × 2 × 1 box landing flat on a static box (paper 000 §7.3's box),
                // spinning slightly about a horizontal axis or not at all.
                let base = RigidBody::new(
                    &Shape::Cuboid {
                        half_extents: Vec3::new(2.0, 2.0, 0.5),
                    },
                    1000.0,
                    Vec3::new(0.0, 0.0, 0.5),
                    Quat::identity(),
                )
                .into_static();
                w.add_body(base);
                let mut b = RigidBody::new(
                    &Shape::Cuboid {
                        half_extents: Vec3::new(1.0, 1.0, 0.5),
                    },
                    1000.0,
                    Vec3::new(0.0, 0.0, 1.5 - overlap),
                    Quat::identity(),
                );
                b.velocity = v;
                ties = rng.random_bool(0.5);
                if !ties {
                    b.angular_velocity = Vec3::new(rng.random_range(-0.5..0.5), 0.1, 0.0);
                }
                w.add_body(b);
            }
            _ => {
                // A sphere falling into the groove between two resting spheres.
                let r = 0.5;
                for x in [-r, r] {
                    w.add_body(RigidBody::new(
                        &Shape::Sphere { radius: r },
                        1000.0,
                        Vec3::new(x, 0.0, r - overlap),
                        Quat::identity(),
                    ));
                }
                let mut b = RigidBody::new(
                    &Shape::Sphere { radius: r },
                    1000.0,
                    Vec3::new(0.0, 0.0, r + (3.0_f64).sqrt() * r - overlap),
                    Quat::identity(),
                );
                b.velocity = v;
                w.add_body(b);
                ties = true;
            }
        }
        finish(format!("degenerate {k}"), w, ties)
    }

    /// `n` random clusters and `n` / 2 degenerate problems, from `seed`.
    pub fn problems(seed: u64, n: usize) -> Vec<Problem> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut out = Vec::new();
        let mut k = 0;
        while out.len() < n {
            if let Some(p) = cluster(&mut rng, k) {
                out.push(p);
            }
            k += 1;
        }
        for k in 0..n / 2 {
            if let Some(p) = degenerate(&mut rng, k) {
                out.push(p);
            }
        }
        out
    }
}
