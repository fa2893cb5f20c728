//! Collision detection: broad phase, narrow phase (contact manifolds), containers.

mod contact;
pub mod sagi;

pub use contact::{relative_velocity, Contact};

use crate::body::RigidBody;
use crate::container::Container;

/// Candidate pairs (i < j) whose bounding volumes overlap. OWNER: lead.
pub fn broad_phase(bodies: &[RigidBody], pairs: &mut Vec<(usize, usize)>) {
    let _ = bodies;
    pairs.clear();
}

/// Contacts of the candidate pairs and of every body against every container. OWNER: lead.
pub fn narrow_phase(bodies: &[RigidBody], containers: &[Container], pairs: &[(usize, usize)], out: &mut Vec<Contact>) {
    let _ = (bodies, containers, pairs);
    out.clear();
}
