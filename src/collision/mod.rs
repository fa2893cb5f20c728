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
mod narrow_phase;
pub mod raycast;
pub mod sagi;

pub use collider::Collider;
pub use contact::{Contact, FeatureId, relative_velocity};
pub use containers::{Surface, active_surfaces};
pub use narrow_phase::make_contact;

use crate::body::RigidBody;
use crate::container::Container;
use rayon::prelude::*;

/// Collision geometry and scratch space for the bodies of a world.
#[derive(Clone, Default)]
pub struct CollisionPipeline {
    colliders: Vec<Collider>,
    radii: Vec<f64>,
    /// Distance each body's surface can travel in the step (speculative margin).
    travel: Vec<f64>,
    reach: Vec<f64>,
    grid: broad_phase::Grid,
    /// Candidate pairs of the last broad phase.
    pub pairs: Vec<(usize, usize)>,
    /// Per parallel chunk of the narrow phase: its contacts and container surfaces.
    buffers: Vec<(Vec<Contact>, Vec<Surface>)>,
    /// The pairs of the last narrow phase (sorted) and, beside each, its parry state if
    /// the pair goes to parry (`narrow_phase::PairState`).
    state_pairs: Vec<(usize, usize)>,
    states: Vec<Option<Box<narrow_phase::PairState>>>,
    /// Scratch of the merge of last step's states with this step's pairs, and the
    /// states of pairs that left, cleared, for pairs that arrive.
    next_states: Vec<Option<Box<narrow_phase::PairState>>>,
    spare_states: Vec<Box<narrow_phase::PairState>>,
    /// Pairs of the last narrow phase whose parry manifolds were reused unchanged
    /// (relative pose and prediction bit-identical to the step before).
    pub reused_pairs: usize,
}

impl CollisionPipeline {
    /// Build colliders for bodies added since the last call.
    pub fn sync(&mut self, bodies: &[RigidBody]) {
        if self.colliders.len() > bodies.len() {
            self.colliders.truncate(bodies.len());
            self.radii.truncate(bodies.len());
            self.forget_pairs();
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
        self.forget_pairs();
    }

    /// Drop every pair's parry state (its bodies' colliders changed).
    fn forget_pairs(&mut self) {
        self.state_pairs.clear();
        self.states.clear();
    }

    /// Line the pair states up with this step's pairs: a merge of last step's sorted
    /// pair list with this one (no hashing). A pair that stayed keeps its state, a pair
    /// that left gives its buffers to the spares, a new pair that goes to parry takes
    /// one. Any order of `pairs` is correct (a pair not found starts afresh); sorted,
    /// every pair that stayed is found.
    fn align_pair_states(&mut self) {
        let mut old = self
            .state_pairs
            .iter()
            .zip(self.states.iter_mut())
            .peekable();
        self.next_states.clear();
        for &(a, b) in &self.pairs {
            while let Some((_, s)) = old.next_if(|(p, _)| **p < (a, b)) {
                if let Some(mut s) = s.take() {
                    s.clear();
                    self.spare_states.push(s);
                }
            }
            let kept = old
                .next_if(|(p, _)| **p == (a, b))
                .and_then(|(_, s)| s.take());
            let state = kept.or_else(|| {
                narrow_phase::uses_parry(&self.colliders[a], &self.colliders[b])
                    .then(|| self.spare_states.pop().unwrap_or_default())
            });
            self.next_states.push(state);
        }
        for (_, s) in old {
            if let Some(mut s) = s.take() {
                s.clear();
                self.spare_states.push(s);
            }
        }
        std::mem::swap(&mut self.states, &mut self.next_states);
        self.state_pairs.clear();
        self.state_pairs.extend_from_slice(&self.pairs);
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
    /// of threads.
    pub fn narrow_phase(
        &mut self,
        bodies: &[RigidBody],
        containers: &[Container],
        margin: f64,
        out: &mut Vec<Contact>,
    ) {
        out.clear();
        self.align_pair_states();
        let (colliders, travel) = (&self.colliders, &self.travel);
        let chunks = self.pairs.len().div_ceil(NARROW_CHUNK);
        if self.buffers.len() < chunks {
            self.buffers.resize_with(chunks, Default::default);
        }
        self.reused_pairs = self.buffers[..chunks]
            .par_iter_mut()
            .zip(self.pairs.par_chunks(NARROW_CHUNK))
            .zip(self.states.par_chunks_mut(NARROW_CHUNK))
            .map(|(((buffer, _), pairs), states)| {
                buffer.clear();
                let mut reused = 0;
                for (&(a, b), state) in pairs.iter().zip(states) {
                    let m = margin + travel[a] + travel[b];
                    let state = state.as_deref_mut();
                    reused += usize::from(narrow_phase::body_body(
                        bodies, colliders, a, b, m, state, buffer,
                    ));
                }
                reused
            })
            .sum();
        for (buffer, _) in &mut self.buffers[..chunks] {
            out.append(buffer);
        }
        if containers.is_empty() {
            return;
        }
        let chunks = bodies.len().div_ceil(NARROW_CHUNK);
        if self.buffers.len() < chunks {
            self.buffers.resize_with(chunks, Default::default);
        }
        self.buffers[..chunks]
            .par_iter_mut()
            .enumerate()
            .for_each(|(k, (buffer, surfaces))| {
                buffer.clear();
                let first = k * NARROW_CHUNK;
                for (i, body) in bodies.iter().enumerate().skip(first).take(NARROW_CHUNK) {
                    if body.is_static() {
                        continue;
                    }
                    for (ci, c) in containers.iter().enumerate() {
                        containers::body_container(
                            bodies,
                            colliders,
                            i,
                            ci,
                            c,
                            margin + travel[i],
                            surfaces,
                            buffer,
                        );
                    }
                }
            });
        for (buffer, _) in &mut self.buffers[..chunks] {
            out.append(buffer);
        }
    }
}

/// Pairs (or bodies, against the containers) per parallel task of the narrow phase.
pub const NARROW_CHUNK: usize = 64;
