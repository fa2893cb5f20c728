//! `impulse-lab`: the command-line front end of the physics core.
//!
//! Exit codes: 0 success, 2 invalid input (bad scene, bad parameter, unwritable output),
//! 1 run-time failure (e.g. a solver that diverges), 130 a run stopped with Ctrl-C.
//! Messages go to stderr.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    // A panic is a bug, but the user still gets one clean line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("impulse-lab: internal error: {info}");
    }));
    match std::panic::catch_unwind(cli::main) {
        Ok(code) => code,
        Err(_) => ExitCode::from(1),
    }
}
