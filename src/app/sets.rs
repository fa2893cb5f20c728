//! The app's public system sets: plugins order their systems against these, never
//! against another module's system function.
//!
//! A frame, in order:
//! 1. `Update`: input (keys, mouse, timeline keys) `.before(`[`SimulationSystems`]`)`;
//! 2. [`SimulationSystems`], in the stages of [`SimulationStage`]: requests that open a
//!    world ([`SimulationStage::Open`]), modes started on it ([`SimulationStage::Mode`]),
//!    the sync with the physics thread ([`SimulationStage::Sync`]), and the systems that
//!    step their own worlds to the state just published ([`SimulationStage::AfterSync`]);
//! 3. drawing the world `.after(`[`SimulationSystems`]`)`;
//! 4. the egui pass (`EguiPrimaryContextPass`), in the order of [`UiSystems`];
//! 5. `Last`: screenshots and recording, then [`ExitSystems`].
//!
//! The simulation plugin configures [`SimulationStage`], the UI plugin [`UiSystems`].

use bevy::prelude::*;

/// The systems that change the world; input handling runs before, rendering after.
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct SimulationSystems;

/// The stages inside [`SimulationSystems`] (schedule `Update`), in this order.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SimulationStage {
    /// Requests that replace the world: open a lesson (its scene, settings, camera).
    Open,
    /// Modes started on the world just opened: a comparison (a lesson may ask for one).
    Mode,
    /// The simulation plugin's chain: startup steps, a save-state request, reloading an
    /// edited scene file, reset, then the physics thread takes the app's edits and
    /// requests and publishes its state.
    Sync,
    /// Systems that read the state just published and step worlds of their own to it:
    /// the comparison's runs, the collision microscope.
    AfterSync,
}

impl SimulationStage {
    /// The stages chained in order inside [`SimulationSystems`].
    pub fn configure(app: &mut App) {
        app.configure_sets(
            Update,
            (
                SimulationStage::Open,
                SimulationStage::Mode,
                SimulationStage::Sync,
                SimulationStage::AfterSync,
            )
                .chain()
                .in_set(SimulationSystems),
        );
    }
}

/// The egui pass of the windowed app (schedule `EguiPrimaryContextPass`), in this order.
#[derive(SystemSet, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UiSystems {
    /// egui's theme and text scale (presentation mode), before any panel.
    Style,
    /// Panels laid out first, on their own root (the teaching panel): they leave their
    /// width in a resource the main panels read.
    OuterPanels,
    /// The main panels (run control, solver, scene, energy plot, inspector); they leave
    /// the 3D view's rectangle in [`super::view::ViewRect`].
    Panels,
    /// What uses the rectangle the panels left: overlays over the 3D view (colour bar,
    /// labels, help, render statistics) and the split viewports of compare mode.
    Overlays,
}

impl UiSystems {
    /// The sets chained in order in `schedule`.
    pub fn configure(app: &mut App, schedule: impl bevy::ecs::schedule::ScheduleLabel) {
        app.configure_sets(
            schedule,
            (
                UiSystems::Style,
                UiSystems::OuterPanels,
                UiSystems::Panels,
                UiSystems::Overlays,
            )
                .chain(),
        );
    }
}

/// The system that ends the app when the automation flags say so (schedule `Last`):
/// what must finish before the app exits (a recording) runs before it.
#[derive(SystemSet, Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExitSystems;
