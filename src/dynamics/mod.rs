//! Dynamics: integrators and collision solvers.

pub mod contact_pass;
pub mod rotation;
pub mod solver;
