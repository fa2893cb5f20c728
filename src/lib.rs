//! Impulse Lab physics core: rigid bodies, shapes, containers, collision detection,
//! collision solvers behind one trait, integrators and energy bookkeeping.
//!
//! Nothing in this crate's core depends on Bevy; the app (module `app`, feature `app`),
//! the CLI and the benchmarks are clients of it.

#[cfg(feature = "app")]
pub mod app;
pub mod body;
pub mod collision;
pub mod compare;
pub mod container;
pub mod dynamics;
pub mod energy;
pub mod history;
pub mod lesson;
pub mod math;
pub mod microscope;
pub mod output;
pub mod repose;
pub mod scene;
pub mod settle;
pub mod shapes;
pub mod verify;
#[cfg(feature = "app")]
pub mod video;
pub mod vtk;
pub mod world;

pub use body::RigidBody;
pub use container::Container;
pub use dynamics::solver::{SolverKind, SolverParams};
pub use shapes::Shape;
pub use world::World;
