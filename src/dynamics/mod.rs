//! Dynamics: integrators and collision solvers.

pub mod contact_pass;
pub mod impact;
pub mod islands;
pub mod queue;
pub mod rotation;
pub mod solver;
pub mod warm_start;
