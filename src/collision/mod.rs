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
pub use contact::{Contact, relative_velocity};
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
}

impl CollisionPipeline {
    /// Build colliders for bodies added since the last call.
    pub fn sync(&mut self, bodies: &[RigidBody]) {
        if self.colliders.len() > bodies.len() {
            self.colliders.truncate(bodies.len());
            self.radii.truncate(bodies.len());
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
        let (colliders, travel) = (&self.colliders, &self.travel);
        let chunks = self.pairs.len().div_ceil(NARROW_CHUNK);
        if self.buffers.len() < chunks {
            self.buffers.resize_with(chunks, Default::default);
        }
        self.buffers[..chunks]
            .par_iter_mut()
            .zip(self.pairs.par_chunks(NARROW_CHUNK))
            .for_each(|((buffer, _), pairs)| {
                buffer.clear();
                for &(a, b) in pairs {
                    let m = margin + travel[a] + travel[b];
                    narrow_phase::body_body(bodies, colliders, a, b, m, buffer);
                }
            });
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
