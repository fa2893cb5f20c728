//! Dynamics: integrators and collision solvers.

pub mod rotation;
pub mod solver;
