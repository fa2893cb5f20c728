//! Collision detection: broad phase, narrow phase with contact manifolds, containers.
//!
//! [`CollisionPipeline`] keeps each body's collision geometry ([`Collider`]) and the
//! scratch buffers, and produces the step's contacts in a deterministic order: body–body
//! contacts by pair (i < j), then body–container contacts by body and container.

pub mod broad_phase;
mod collider;
mod contact;
mod containers;
mod ellipsoid;
pub mod manifold_cache;
mod narrow_phase;
pub mod raycast;
pub mod sagi;

pub use collider::Collider;
pub use contact::{Contact, FeatureId, relative_velocity};
pub use containers::{Surface, active_surfaces};
pub use manifold_cache::{ManifoldCache, RecycleRule};
pub use narrow_phase::make_contact;

use crate::body::RigidBody;
use crate::container::Container;
use crate::math::{Quat, Vec3};
use rayon::prelude::*;

/// Collision geometry and scratch space for the bodies of a world.
///
/// A clone (a world's copy in the app's timeline, taken every step) copies the
/// geometry and the kept manifolds (`manifold_cache`, part of the state) and starts the
/// scratch and the still bodies' kept contacts empty: the next detection finds those
/// afresh (they are bit-identical to a fresh detection).
#[derive(Default)]
pub struct CollisionPipeline {
    colliders: Vec<Collider>,
    radii: Vec<f64>,
    /// Distance each body's surface can travel in the step (speculative margin).
    travel: Vec<f64>,
    reach: Vec<f64>,
    grid: broad_phase::Grid,
    /// Candidate pairs of the last broad phase.
    pub pairs: Vec<(usize, usize)>,
    /// Per parallel chunk of the narrow phase: its contacts, container surfaces, parry
    /// scratch and the contacts it keeps for the next step.
    buffers: Vec<Chunk>,
    /// Per body: its pose and travel at the last narrow phase, and whether they are
    /// bit-identical to the ones before (the body is still).
    last: Vec<(Vec3, Quat, f64)>,
    still: Vec<bool>,
    /// The margin of the last narrow phase.
    last_margin: f64,
    /// Contacts of the last narrow phase between two still bodies, by pair.
    kept_pairs: Kept<(usize, usize)>,
    /// Container contacts of the last narrow phase of each still body, by body, and the
    /// containers they were found against.
    kept_bodies: Kept<usize>,
    last_containers: Vec<Container>,
    /// Body pairs of the last narrow phase whose contacts were those of the step before
    /// (both bodies still: see [`Self::narrow_phase`]).
    pub reused_pairs: usize,
    /// Bodies whose container contacts were those of the step before (still, same
    /// containers).
    pub reused_bodies: usize,
    /// The kept manifolds of the flat-faced pairs (`manifold_cache`): part of the
    /// world's state.
    manifolds: ManifoldCache,
    /// Flat-faced pairs of the last narrow phase: recycled, computed afresh although
    /// one was kept, and computed with none kept.
    pub manifold_counts: ManifoldCounts,
}

/// How the flat-faced pairs of a narrow phase got their manifolds (`manifold_cache`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManifoldCounts {
    pub recycled: usize,
    pub recomputed: usize,
    pub new: usize,
}

impl std::ops::Add for ManifoldCounts {
    type Output = ManifoldCounts;
    fn add(self, o: ManifoldCounts) -> ManifoldCounts {
        ManifoldCounts {
            recycled: self.recycled + o.recycled,
            recomputed: self.recomputed + o.recomputed,
            new: self.new + o.new,
        }
    }
}

impl std::iter::Sum for ManifoldCounts {
    fn sum<I: Iterator<Item = ManifoldCounts>>(iter: I) -> ManifoldCounts {
        iter.fold(ManifoldCounts::default(), |x, y| x + y)
    }
}

impl Clone for CollisionPipeline {
    fn clone(&self) -> Self {
        CollisionPipeline {
            colliders: self.colliders.clone(),
            radii: self.radii.clone(),
            travel: self.travel.clone(),
            reach: self.reach.clone(),
            manifolds: self.manifolds.clone(),
            ..Default::default()
        }
    }
}

/// One parallel chunk's scratch of the narrow phase.
#[derive(Clone, Default)]
struct Chunk {
    contacts: Vec<Contact>,
    surfaces: Vec<Surface>,
    parry: narrow_phase::ParryScratch,
    kept_pairs: Kept<(usize, usize)>,
    kept_bodies: Kept<usize>,
    manifolds: ManifoldCache,
    points: Vec<manifold_cache::CachedPoint>,
}

/// Contacts kept from one narrow phase for the next, by key (a body pair, or a body
/// against the containers), keys ascending: the contacts of key k are
/// `contacts[from..to]` for its entry (k, from, to).
#[derive(Clone, Default)]
struct Kept<K> {
    index: Vec<(K, usize, usize)>,
    contacts: Vec<Contact>,
}

impl<K: Copy + Ord> Kept<K> {
    fn clear(&mut self) {
        self.index.clear();
        self.contacts.clear();
    }

    /// Where a lookup of keys from `key` on starts ([`Self::find`]).
    fn cursor(&self, key: K) -> usize {
        self.index.partition_point(|e| e.0 < key)
    }

    /// The contacts kept for `key`, if any; `cursor` moves forward, so the keys must be
    /// asked in ascending order (one merge of two sorted lists, no hashing).
    fn find(&self, cursor: &mut usize, key: K) -> Option<&[Contact]> {
        while self.index.get(*cursor).is_some_and(|e| e.0 < key) {
            *cursor += 1;
        }
        match self.index.get(*cursor) {
            Some(&(k, from, to)) if k == key => Some(&self.contacts[from..to]),
            _ => None,
        }
    }

    /// Keep `contacts` for `key` (above every key kept so far).
    fn push(&mut self, key: K, contacts: &[Contact]) {
        let from = self.contacts.len();
        self.contacts.extend_from_slice(contacts);
        self.index.push((key, from, self.contacts.len()));
    }

    /// Move `other`'s entries (keys above every key kept so far) to the end of this one.
    fn append(&mut self, other: &mut Kept<K>) {
        if self.index.is_empty() && self.contacts.is_empty() {
            std::mem::swap(self, other);
            return;
        }
        let offset = self.contacts.len();
        self.index.extend(
            other
                .index
                .drain(..)
                .map(|(k, from, to)| (k, from + offset, to + offset)),
        );
        self.contacts.append(&mut other.contacts);
    }
}

impl CollisionPipeline {
    /// Build colliders for bodies added since the last call.
    pub fn sync(&mut self, bodies: &[RigidBody]) {
        if self.colliders.len() > bodies.len() {
            self.colliders.truncate(bodies.len());
            self.radii.truncate(bodies.len());
            self.forget_contacts();
            self.manifolds.clear();
        }
        for b in &bodies[self.colliders.len()..] {
            self.colliders.push(Collider::new(&b.shape));
            self.radii.push(b.shape.bounding_radius());
        }
    }

    /// Forget all colliders (call when bodies are replaced wholesale).
    pub fn reset(&mut self) {
        self.colliders.clear();
        self.radii.clear();
        self.forget_contacts();
        self.manifolds.clear();
    }

    /// The kept manifolds (part of the world's state: `manifold_cache`).
    pub fn manifolds(&self) -> &ManifoldCache {
        &self.manifolds
    }

    /// Put back kept manifolds taken by [`Self::manifolds`] from a world with the same
    /// bodies.
    pub fn set_manifolds(&mut self, manifolds: ManifoldCache) {
        self.manifolds = manifolds;
    }

    /// Forget last step's contacts and poses (the bodies' colliders changed).
    fn forget_contacts(&mut self) {
        self.last.clear();
        self.kept_pairs.clear();
        self.kept_bodies.clear();
    }

    /// Which bodies are still: pose and travel bit-identical to the last narrow phase's
    /// (with the same margin), as a sleeping body's are.
    fn mark_still(&mut self, bodies: &[RigidBody], margin: f64) {
        let same_margin = margin.to_bits() == self.last_margin.to_bits();
        self.last_margin = margin;
        if self.last.len() != bodies.len() {
            self.forget_contacts();
        }
        self.still.clear();
        if self
            .colliders
            .iter()
            .all(|c| matches!(c, Collider::Sphere { .. }))
        {
            // Only sphere pairs, which are never kept (`narrow_phase::costly`).
            self.last.clear();
            self.still.resize(bodies.len(), false);
            return;
        }
        for (i, b) in bodies.iter().enumerate() {
            let now = (b.position, b.orientation, self.travel[i]);
            let still = same_margin
                && self.last.get(i).is_some_and(|(p, q, t)| {
                    same_bits(p.as_slice(), now.0.as_slice())
                        && same_bits(q.coords.as_slice(), now.1.coords.as_slice())
                        && t.to_bits() == now.2.to_bits()
                });
            self.still.push(still);
            match self.last.get_mut(i) {
                Some(l) => *l = now,
                None => self.last.push(now),
            }
        }
    }

    /// Broad phase: candidate pairs whose bounding balls, inflated by `margin`/2 and by
    /// one step `dt` of travel, overlap.
    ///
    /// Speculative contacts: a point of body i moves at most s_i = |v_i| + |ω_i| R_i
    /// (R_i its bounding radius) per unit time, so two bodies can only touch within the
    /// step if their gap is below margin + h (s_i + s_j). Detecting pairs that far out
    /// lets fast bodies be caught before they overlap deeply; the solvers act on a
    /// positive-gap contact only if gap + h u_n < 0.
    pub fn broad_phase(&mut self, bodies: &[RigidBody], margin: f64, dt: f64) {
        self.sync(bodies);
        self.travel.clear();
        self.travel.extend(
            bodies
                .iter()
                .enumerate()
                .map(|(i, b)| dt * (b.velocity.norm() + b.angular_velocity.norm() * self.radii[i])),
        );
        self.reach.clear();
        self.reach
            .extend((0..bodies.len()).map(|i| self.radii[i] + 0.5 * margin + self.travel[i]));
        broad_phase::uniform_grid(bodies, &self.reach, &mut self.grid, &mut self.pairs);
    }

    /// Narrow phase over the broad phase's pairs and every body against every container:
    /// all contacts with gap < `margin` plus the pair's travel in one step (see
    /// [`Self::broad_phase`]).
    ///
    /// Pairs and bodies are cut into chunks of [`NARROW_CHUNK`] that run in parallel
    /// (rayon's current pool), each into its own buffer; the buffers are appended in
    /// chunk order, so the contact list is the same, bit for bit, whatever the number
    /// of threads. On one thread the pairs are one chunk, whose buffers become the
    /// results without a copy.
    ///
    /// A pair of two still bodies (pose and travel bit-identical to the last narrow
    /// phase's, e.g. both asleep) that is not two spheres gets the contacts it had
    /// then, copied: the contacts
    /// are a function of the two poses, the travel and the margin alone, so the copy is
    /// what detection would give, bit for bit (a saved world, which has no kept
    /// contacts, finds the same ones). A still body's container contacts are copied
    /// the same way while the containers are the same.
    ///
    /// With `recycle` (a step), a pair of flat-faced bodies instead recycles its kept
    /// manifold under [`RecycleRule`]'s conditions, or computes and keeps a fresh one
    /// (`manifold_cache`); the kept manifolds are then those of this step's pairs.
    /// Without (a detection outside a step, [`crate::World::detect`]), every pair is
    /// computed afresh and the kept manifolds are neither read nor changed.
    pub fn narrow_phase(
        &mut self,
        bodies: &[RigidBody],
        containers: &[Container],
        margin: f64,
        recycle: Option<RecycleRule<'_>>,
        out: &mut Vec<Contact>,
    ) {
        out.clear();
        self.mark_still(bodies, margin);
        let (colliders, travel, still) = (&self.colliders, &self.travel, &self.still);
        let (radii, kept_pairs, manifolds) = (&self.radii, &self.kept_pairs, &self.manifolds);
        let chunk_len = narrow_chunk_len(self.pairs.len());
        let chunks = self.pairs.len().div_ceil(chunk_len);
        if self.buffers.len() < chunks {
            self.buffers.resize_with(chunks, Default::default);
        }
        let (reused, counts) = self.buffers[..chunks]
            .par_iter_mut()
            .zip(self.pairs.par_chunks(chunk_len))
            .map(|(chunk, pairs)| {
                chunk.contacts.clear();
                chunk.kept_pairs.clear();
                chunk.manifolds.clear();
                let mut reused = 0;
                let mut counts = ManifoldCounts::default();
                let mut cursor = pairs.first().map_or(0, |&p| kept_pairs.cursor(p));
                let mut m_cursor = pairs.first().map_or(0, |&p| manifolds.cursor(p));
                for &(a, b) in pairs {
                    let start = chunk.contacts.len();
                    let m = margin + travel[a] + travel[b];
                    let rule = recycle.filter(|r| {
                        r.rest_speed > 0.0 && manifold_cache::recyclable(colliders, a, b)
                    });
                    if let Some(rule) = rule {
                        let kept = manifolds.find(&mut m_cursor, (a, b));
                        let recycled = kept.is_some_and(|k| {
                            manifold_cache::recycle(
                                bodies,
                                (a, b),
                                radii[b],
                                m,
                                k,
                                manifolds.points_of(k),
                                &rule,
                                &mut chunk.contacts,
                            )
                        });
                        if let Some(k) = kept.filter(|_| recycled) {
                            let points = manifolds.points_of(k);
                            chunk.manifolds.push(a, b, k.pose, k.prediction, points);
                            counts.recycled += 1;
                            continue;
                        }
                        if kept.is_some() {
                            counts.recomputed += 1;
                        } else {
                            counts.new += 1;
                        }
                        chunk.points.clear();
                        let slack = rule.slack(radii[a], radii[b]);
                        let pose = narrow_phase::body_body_kept(
                            bodies,
                            colliders,
                            a,
                            b,
                            m,
                            slack,
                            &mut chunk.parry,
                            &mut chunk.points,
                            &mut chunk.contacts,
                        );
                        chunk.manifolds.push(a, b, pose, m + slack, &chunk.points);
                        continue;
                    }
                    // Sphere pairs cost less to detect than to look up.
                    let keep = still[a] && still[b] && narrow_phase::costly(colliders, a, b);
                    let last = keep.then(|| kept_pairs.find(&mut cursor, (a, b))).flatten();
                    if let Some(last) = last {
                        chunk.contacts.extend_from_slice(last);
                        reused += 1;
                    } else {
                        narrow_phase::body_body(
                            bodies,
                            colliders,
                            a,
                            b,
                            m,
                            &mut chunk.parry,
                            &mut chunk.contacts,
                        );
                    }
                    if keep {
                        chunk.kept_pairs.push((a, b), &chunk.contacts[start..]);
                    }
                }
                (reused, counts)
            })
            .reduce(
                || (0, ManifoldCounts::default()),
                |x, y| (x.0 + y.0, x.1 + y.1),
            );
        self.reused_pairs = reused;
        self.manifold_counts = counts;
        if recycle.is_some() {
            self.manifolds.clear();
            for chunk in &mut self.buffers[..chunks] {
                self.manifolds.append(&mut chunk.manifolds);
            }
        }
        self.kept_pairs.clear();
        for chunk in &mut self.buffers[..chunks] {
            self.kept_pairs.append(&mut chunk.kept_pairs);
            append_or_take(out, &mut chunk.contacts);
        }
        // Container contacts: a still body against the same containers gets the ones it
        // had, as a still pair does (and for the same reason, bit for bit).
        let same_containers = self.last_containers == containers;
        if !same_containers {
            self.last_containers = containers.to_vec();
        }
        let chunk_len = narrow_chunk_len(bodies.len());
        let chunks = bodies.len().div_ceil(chunk_len);
        if self.buffers.len() < chunks {
            self.buffers.resize_with(chunks, Default::default);
        }
        let kept_bodies = &self.kept_bodies;
        self.reused_bodies = self.buffers[..chunks]
            .par_iter_mut()
            .enumerate()
            .map(|(k, chunk)| {
                chunk.contacts.clear();
                chunk.kept_bodies.clear();
                let mut reused = 0;
                let first = k * chunk_len;
                let mut cursor = kept_bodies.cursor(first);
                for (i, body) in bodies.iter().enumerate().skip(first).take(chunk_len) {
                    if body.is_static() {
                        continue;
                    }
                    let start = chunk.contacts.len();
                    let keep = same_containers && still[i];
                    let last = keep.then(|| kept_bodies.find(&mut cursor, i)).flatten();
                    if let Some(last) = last {
                        chunk.contacts.extend_from_slice(last);
                        reused += 1;
                    } else {
                        for (ci, c) in containers.iter().enumerate() {
                            containers::body_container(
                                bodies,
                                colliders,
                                i,
                                ci,
                                c,
                                margin + travel[i],
                                &mut chunk.surfaces,
                                &mut chunk.contacts,
                            );
                        }
                    }
                    if keep {
                        chunk.kept_bodies.push(i, &chunk.contacts[start..]);
                    }
                }
                reused
            })
            .sum();
        self.kept_bodies.clear();
        for chunk in &mut self.buffers[..chunks] {
            self.kept_bodies.append(&mut chunk.kept_bodies);
            append_or_take(out, &mut chunk.contacts);
        }
    }
}

/// Items per parallel chunk of the narrow phase over `items` pairs or bodies:
/// [`NARROW_CHUNK`], or all of them on one thread (one chunk, whose buffers then become
/// the results without a copy: [`append_or_take`]).
fn narrow_chunk_len(items: usize) -> usize {
    if rayon::current_num_threads() == 1 {
        items.max(1)
    } else {
        NARROW_CHUNK
    }
}

/// Move `from`'s items to the end of `to`: by swapping the two buffers when `to` is
/// empty (no copy; `from` keeps `to`'s capacity for its next use).
fn append_or_take<T>(to: &mut Vec<T>, from: &mut Vec<T>) {
    if to.is_empty() {
        std::mem::swap(to, from);
    } else {
        to.append(from);
    }
}

/// Whether two lists of numbers are the same bit for bit.
fn same_bits(x: &[f64], y: &[f64]) -> bool {
    x.len() == y.len() && x.iter().zip(y).all(|(a, b)| a.to_bits() == b.to_bits())
}

/// Pairs (or bodies, against the containers) per parallel task of the narrow phase.
pub const NARROW_CHUNK: usize = 64;
