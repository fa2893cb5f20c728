//! Particle velocity-jolt method (paper 001). OWNER: lead.

use super::{CollisionSolver, SolverContext, SolverError, SolverKind, SolverReport};

#[derive(Default)]
pub struct JoltSolver;

impl CollisionSolver for JoltSolver {
    fn kind(&self) -> SolverKind {
        SolverKind::Jolt
    }
    fn resolve(&mut self, ctx: SolverContext<'_>) -> Result<SolverReport, SolverError> {
        let _ = ctx;
        Ok(SolverReport::default())
    }
}
