//! Never lose work: on a panic anywhere in the windowed app (a system, the renderer, the
//! physics thread), a panic hook writes the state shown last as a scene file, with its
//! `resume` section ([`crate::scene::save`]), and says where on stderr (the app's log).
//! `impulse-lab gui FILE` opens it and `impulse-lab run FILE` continues it, as a state
//! saved with the timeline's "save state" button.
//!
//! **Where.** In the folder named by the environment variable `IMPULSE_LAB_CRASH_DIR`,
//! else in `out/` under the working directory (where "save state" writes by default),
//! else, when that cannot be written, in the system's temporary folder; the file is
//! `crash-<unix time>-step<N>.ron`.
//!
//! **Which state.** The app publishes the physics thread's state once per frame as the
//! [`Simulation`] resource; [`publish`] keeps a shared copy of each new publication in a
//! slot the hook reads. The slot's lock is held only to swap an `Arc` (nothing in there
//! can panic or allocate), and the hook only tries the lock (a few times, 1 ms apart)
//! and never blocks: a panic cannot deadlock on it, whichever thread panics. The hook
//! never touches the physics thread's own lock (a panic inside a step holds it).
//!
//! A panic the app survives (a physics step that panicked is caught and shown as the
//! run's error) also saves the state, once per state: the app keeps running, the work
//! is on disk either way.

use super::sim_state::Simulation;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, TryLockError};
use std::time::Duration;

/// The state published last (set once the hook is installed).
static LATEST: Mutex<Option<Arc<Simulation>>> = Mutex::new(None);
/// Whether the hook is installed (publishing costs a copy, only worth it then).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The state saved last: (run, generation, step), so a state is written once.
static SAVED: Mutex<Option<(u64, u64, u64)>> = Mutex::new(None);

/// The environment variable that names the folder crash files go to.
pub const CRASH_DIR_VAR: &str = "IMPULSE_LAB_CRASH_DIR";

/// Install the panic hook (the windowed app, once at start). The previous hook (the
/// CLI's one-line message) runs first.
pub fn install_hook() {
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        save_on_panic();
    }));
}

/// Keep `sim` as the state the hook saves (called after every publication that
/// changed the state). A no-op until [`install_hook`].
pub fn publish(sim: &Simulation) {
    if !INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    let copy = Arc::new(sim.clone());
    let old = {
        let mut slot = LATEST.lock().unwrap_or_else(|e| e.into_inner());
        slot.replace(copy)
    };
    // The previous copy is freed outside the lock.
    drop(old);
}

/// The state published last, without ever blocking: `None` when none was published or
/// the slot stays locked (another thread swapping it) for 20 tries.
fn latest() -> Option<Arc<Simulation>> {
    for _ in 0..20 {
        match LATEST.try_lock() {
            Ok(slot) => return slot.clone(),
            Err(TryLockError::Poisoned(e)) => return e.into_inner().clone(),
            Err(TryLockError::WouldBlock) => std::thread::sleep(Duration::from_millis(1)),
        }
    }
    None
}

/// The hook's work: save the latest state and say where (or why not).
fn save_on_panic() {
    let Some(sim) = latest() else {
        eprintln!("impulse-lab: no state to save (none was shown yet)");
        return;
    };
    let key = (sim.run, sim.generation, sim.world.step_index);
    {
        let Ok(mut saved) = SAVED.try_lock() else {
            // Another thread's panic is saving right now.
            return;
        };
        if *saved == Some(key) {
            return;
        }
        *saved = Some(key);
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let name = format!("crash-{stamp}-step{}.ron", sim.world.step_index);
    let mut errors = Vec::new();
    for dir in crash_dirs() {
        let path = dir.join(&name);
        match save(&sim, &path) {
            Ok(()) => {
                eprintln!(
                    "impulse-lab: the state shown last (\"{}\", {}, step {}, t = {} s) is saved as {}; `impulse-lab gui {}` opens it, `impulse-lab run {}` continues it",
                    sim.scene.name,
                    sim.world.solver_kind().name(),
                    sim.world.step_index,
                    sim.world.time,
                    path.display(),
                    path.display(),
                    path.display()
                );
                return;
            }
            Err(e) => errors.push(format!("{}: {e}", path.display())),
        }
    }
    eprintln!(
        "impulse-lab: the state could not be saved: {}",
        errors.join("; ")
    );
}

/// Where crash files go, in the order tried (module doc).
pub fn crash_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = std::env::var_os(CRASH_DIR_VAR).filter(|d| !d.is_empty()) {
        dirs.push(PathBuf::from(d));
    }
    dirs.push(PathBuf::from("out"));
    dirs.push(std::env::temp_dir());
    dirs
}

/// Write `sim`'s state as a scene file at `path` (whole or not at all).
pub fn save(sim: &Simulation, path: &Path) -> Result<(), String> {
    let name = path
        .file_stem()
        .map_or("crash".into(), |s| s.to_string_lossy().into_owned());
    let scene = crate::scene::save::state_scene(&sim.scene, &sim.world, &sim.scene_forces, &name)?;
    let text = scene.to_ron().map_err(|e| e.to_string())?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    crate::output::write_file(path, text.as_bytes()).map_err(|e| e.to_string())
}
