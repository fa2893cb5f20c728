//! Dynamics: integrators and collision solvers.

pub mod contact_pass;
pub mod graph;
pub mod impact;
pub mod queue;
pub mod rotation;
pub mod solver;
pub mod warm_start;
