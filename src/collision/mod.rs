//! Collision detection: broad phase, narrow phase with contact manifolds, containers.
//!
//! [`CollisionPipeline`] keeps each body's collision geometry ([`Collider`]) and the
//! scratch buffers, and produces the step's contacts in a deterministic order: body–body
//! contacts by pair (i < j), then body–container contacts by body and container.

mod broad_phase;
mod collider;
mod contact;
mod containers;
mod ellipsoid;
mod narrow_phase;
pub mod sagi;

pub use collider::Collider;
pub use contact::{Contact, relative_velocity};
pub use containers::{Surface, active_surfaces};
pub use narrow_phase::make_contact;

use crate::body::RigidBody;
use crate::container::Container;

/// Collision geometry and scratch space for the bodies of a world.
#[derive(Default)]
pub struct CollisionPipeline {
    colliders: Vec<Collider>,
    radii: Vec<f64>,
    order: Vec<(f64, usize)>,
    /// Candidate pairs of the last broad phase.
    pub pairs: Vec<(usize, usize)>,
    surfaces: Vec<Surface>,
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

    /// Broad phase: candidate pairs whose bounding balls come within `margin`.
    pub fn broad_phase(&mut self, bodies: &[RigidBody], margin: f64) {
        self.sync(bodies);
        broad_phase::sweep_and_prune(
            bodies,
            &self.radii,
            margin,
            &mut self.order,
            &mut self.pairs,
        );
    }

    /// Narrow phase over the broad phase's pairs and every body against every container:
    /// all contacts with gap < `margin`.
    pub fn narrow_phase(
        &mut self,
        bodies: &[RigidBody],
        containers: &[Container],
        margin: f64,
        out: &mut Vec<Contact>,
    ) {
        out.clear();
        for &(a, b) in &self.pairs {
            narrow_phase::body_body(bodies, &self.colliders, a, b, margin, out);
        }
        for (i, body) in bodies.iter().enumerate() {
            if body.is_static() {
                continue;
            }
            for (ci, c) in containers.iter().enumerate() {
                containers::body_container(
                    bodies,
                    &self.colliders,
                    i,
                    ci,
                    c,
                    margin,
                    &mut self.surfaces,
                    out,
                );
            }
        }
    }
}
