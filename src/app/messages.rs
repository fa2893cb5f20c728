//! The app's messages between plugins (Bevy `Message`s: written with `MessageWriter`,
//! read with `MessageReader`), so that a plugin does not reach into another's resources.

use super::sim_state::{GrabSpring, Simulation, WallRef};
use super::view::CameraPreset;
use crate::body::RigidBody;
use crate::dynamics::solver::{SolverKind, SolverParams};
use crate::microscope::ImpactRecord;
use crate::repose::ReposeConfig;
use crate::world::SleepParams;
use bevy::prelude::*;
use std::path::PathBuf;

/// A line for the status bar over the 3D view: the outcome of a screenshot or a
/// recording (`ok`: success). Written by the capture and recording plugins, shown by the
/// UI plugin (the last one of a frame wins).
#[derive(Message, Debug, Clone, PartialEq)]
pub struct StatusMessage {
    pub text: String,
    pub ok: bool,
}

impl From<(String, bool)> for StatusMessage {
    fn from((text, ok): (String, bool)) -> Self {
        StatusMessage { text, ok }
    }
}

/// A request to the plots (`app::quantity`): written by the plot's buttons and by
/// scripts, carried out by the plot plugin.
#[derive(Message, Debug, Clone, PartialEq)]
pub enum PlotRequest {
    /// Pin the current run, to overlay it on the next runs.
    Pin,
    /// Show quantity `quantity` (an id of `app::quantity::QUANTITIES`) in stacked plot
    /// `plot` (0 = top; one past the last adds a plot).
    Show { plot: usize, quantity: String },
}

/// A command to the physics thread, which owns the authoritative world: every change
/// to the running world is one of these (written with `MessageWriter<SimCommand>`),
/// and the [`Simulation`] resource the other plugins read is the thread's read-only
/// snapshot, published once per frame.
///
/// Commands written before [`super::sets::SimulationStage::Sync`] of a frame are
/// carried out in that frame's sync, in the order written; later ones (the egui pass)
/// in the next frame's. Commands that change what the next step reads are stored as a
/// keyframe of the timeline at their step, so a re-simulation never crosses them.
#[derive(Message, Debug, Clone)]
pub enum SimCommand {
    /// Back to the scene's initial state, keeping the method, its parameters, the time
    /// step and the sleep settings ([`Simulation::reset`]). A new run.
    Reset,
    /// Run this world instead: a scene opened or reloaded, a lesson's scene, the first
    /// run of a comparison. A new run (the energy trace and the timeline restart).
    Open(Box<Simulation>),
    /// Switch the collision method; the bodies keep their state.
    Solver(SolverKind),
    /// The method's parameters (validated by the sender).
    Params(SolverParams),
    /// The time step (s).
    TimeStep(f64),
    /// Island sleeping.
    Sleep(SleepParams),
    /// Record the solver's impulse trace (drawn as impulse arrows).
    RecordTrace(bool),
    /// Take `n` more steps, even when paused (step, step N, a recording's lockstep).
    Step(u64),
    /// Take `n` more steps before the frame is shown, however long they take
    /// (`--steps N`, a script's `steps=N`, a recording's frame interval).
    StepNow(u64),
    /// Drop the clock's backlog and the steps requested and not taken.
    ClearBacklog,
    /// Show the state of this step from the timeline (pauses the run).
    Seek(u64),
    /// Return to this branch of the timeline (its newest state; pauses the run).
    Branch(u64),
    /// The timeline's memory cap (bytes).
    HistoryCap(usize),
    /// Save the shown state as a scene file, then run from it ("reset" returns to it).
    SaveState(PathBuf),
    /// Add a dynamic body (it gets the next index).
    Spawn(Box<RigidBody>),
    /// Remove (`present: false`) or restore a wall or divider of box container
    /// `container`.
    Wall {
        container: usize,
        wall: WallRef,
        present: bool,
    },
    /// Hold a body with the mouse spring, move its target, or let go (`None`).
    Grab(Option<GrabSpring>),
    /// The angle-of-repose experiment.
    Repose(ReposeCommand),
    /// The collision microscope: record the next step, or step until an impact
    /// (through [`Simulation::step`], on the physics thread). The outcome comes back
    /// as [`MicroscopeOutcome`].
    Microscope {
        /// Step until a contact (of `body`, if given) receives an impulse, at most
        /// `max_steps` steps; else record one step.
        catch: bool,
        body: Option<usize>,
        max_steps: u64,
    },
}

/// What [`SimCommand::Repose`] asks of the experiment.
#[derive(Debug, Clone)]
pub enum ReposeCommand {
    /// Reset the scene and run the experiment with this configuration.
    Start(ReposeConfig),
    /// End packing now: the divider goes and the pile slumps.
    RemoveWall,
    /// Measure the pile as it stands.
    MeasureNow,
}

/// The outcome of a [`SimCommand::Microscope`]: the impact recorded (`None`: no step
/// within `max_steps` had one), or the step's error.
#[derive(Message, Debug, Clone)]
pub struct MicroscopeOutcome {
    pub result: Result<Option<ImpactRecord>, String>,
    pub body: Option<usize>,
    pub max_steps: u64,
}

/// What the collision microscope is asked to do (the teaching panel's buttons,
/// `gui --microscope`), carried out by the microscope plugin.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MicroscopeRequest {
    /// Step until the next impact.
    CatchNextImpact,
    /// Record the next step.
    ThisStep,
}

/// What the camera and the 3D view are asked to do (keys, buttons, scripts, a scene
/// opened), carried out by the interaction plugin after the frame's sync, on the state
/// just published.
#[derive(Message, Debug, Clone, Copy, PartialEq)]
pub enum ViewRequest {
    /// Frame the scene anew and clear the selection (a scene was opened).
    Reframe,
    /// Frame every body (`f`, `gui --frame-all`).
    FrameAll,
    /// Frame the selected body (shift+`f`).
    FrameSelection,
    /// Look from a preset direction (keys 1-4), keeping the target.
    Preset(CameraPreset),
    /// Follow the selected body, or stop following (`t`).
    FollowSelection,
    /// Drop a body of the spawn settings at the cursor.
    SpawnAtCursor,
}

/// A picture of the window, or a recording started or stopped (keys, buttons,
/// scripts), carried out by the capture and recording plugins.
#[derive(Message, Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureRequest {
    Screenshot,
    /// Start recording a video, or stop the one running (F9, the record button).
    ToggleRecording,
}

/// Open a lesson by name or path (the teaching panel, `gui --lesson`, scripts): its
/// scene, run settings, camera and text; the app enters [`super::sim_state::LabMode::Lesson`].
#[derive(Message, Debug, Clone, PartialEq, Eq)]
pub struct OpenLesson(pub String);

/// Compare 2-3 methods in lockstep from the scene's initial state (the teaching
/// panel's "Start compare", `gui --compare`, a lesson that compares).
#[derive(Message, Debug, Clone, PartialEq)]
pub struct StartComparison {
    pub solvers: Vec<SolverKind>,
    /// Parameters per run (same order as `solvers`); `None`: every run uses the
    /// parameters the running world has.
    pub run_params: Option<Vec<SolverParams>>,
    /// The lesson's scene file when a lesson compares (the app stays in
    /// [`super::sim_state::LabMode::Lesson`], the lesson set the run and the camera);
    /// `None`: the running scene, and the app enters
    /// [`super::sim_state::LabMode::Compare`].
    pub lesson_scene: Option<PathBuf>,
}
