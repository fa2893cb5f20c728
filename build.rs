//! Sets `IMPULSE_LAB_COMMIT` to the commit the crate is built from (`git rev-parse
//! HEAD`; uncommitted changes are not marked), or leaves it unset outside a git checkout
//! or without git: the build never fails for it.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?;
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

/// Rerun when the file at `path` changes; a missing file is not named (cargo would rerun
/// the script at every build).
fn watch(path: &str) {
    if std::path::Path::new(path).exists() {
        println!("cargo:rerun-if-changed={path}");
    }
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let Some(commit) = git(&["rev-parse", "HEAD"]) else {
        return;
    };
    // Rebuilt when HEAD moves: the files that hold it (a worktree's are elsewhere).
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            watch(&p);
        }
    }
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(p) = git(&["rev-parse", "--git-path", &r])
    {
        watch(&p);
    }
    println!("cargo:rustc-env=IMPULSE_LAB_COMMIT={commit}");
}
