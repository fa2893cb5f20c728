//! Output files that are whole or absent.
//!
//! Every file the CLI and the app write goes through [`OutputFile`] (or, for a directory
//! of frames, [`OutputDir`]):
//! 1. **check and create** ([`OutputFile::create`]): before any work starts, the path
//!    must not be a directory, its directory must exist, and a temporary file is created
//!    in that same directory (`NAME.XXXXXX.partial`), which proves it writable;
//! 2. **write** into the temporary file;
//! 3. **commit** ([`OutputFile::commit`]): flush and rename it over `NAME`. A rename
//!    within one directory is atomic, so a reader sees the old file or the whole new one.
//!
//! Dropping an uncommitted output removes its temporary file, so a failure leaves nothing
//! under the requested name. A long run whose rows are worth keeping may instead
//! [`OutputFile::keep_partial`]: the data so far is renamed to `NAME.partial`, and the
//! caller names that file in its message. A process killed mid-write leaves its
//! temporary `NAME.XXXXXX.partial` behind, never a truncated `NAME`.

use std::ffi::OsString;
use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tempfile::{NamedTempFile, TempDir};

/// Why an output cannot be written; displays as `PATH: cannot write output: WHY`.
#[derive(Debug)]
pub struct OutputError {
    pub path: PathBuf,
    pub why: String,
}

impl fmt::Display for OutputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: cannot write output: {}",
            self.path.display(),
            self.why
        )
    }
}

impl std::error::Error for OutputError {}

fn fail(path: &Path, why: impl fmt::Display) -> OutputError {
    OutputError {
        path: path.to_path_buf(),
        why: why.to_string(),
    }
}

/// The directory `path` is in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// `NAME` of `dir/NAME`, or an error for paths without one (`..`, `/`).
fn file_name(path: &Path) -> Result<OsString, OutputError> {
    path.file_name()
        .map(OsString::from)
        .ok_or_else(|| fail(path, "not a file name"))
}

/// `path` with `.partial` appended (`trace.csv` → `trace.csv.partial`).
pub fn partial_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// Checks shared by files and directories: an existing directory `dir` to create the
/// temporary in, and a name.
fn check_target(path: &Path) -> Result<(&Path, OsString), OutputError> {
    let name = file_name(path)?;
    let dir = parent_dir(path);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(fail(path, format!("{} is not a directory", dir.display()))),
        Err(e) => return Err(fail(path, format!("no directory {}: {e}", dir.display()))),
    }
    Ok((dir, name))
}

/// Refuse a list of outputs that names one file twice (the second would replace the
/// first). Paths are compared as given, after removing `./` prefixes.
pub fn check_distinct<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<(), OutputError> {
    let mut seen: Vec<PathBuf> = Vec::new();
    for p in paths {
        let norm: PathBuf = p
            .components()
            .filter(|c| *c != std::path::Component::CurDir)
            .collect();
        if seen.contains(&norm) {
            return Err(fail(p, "named for two outputs"));
        }
        seen.push(norm);
    }
    Ok(())
}

/// A file written under a temporary name and renamed into place when complete (see the
/// module doc). Write through [`Write`]; it is buffered.
pub struct OutputFile {
    path: PathBuf,
    file: BufWriter<NamedTempFile>,
}

impl OutputFile {
    /// Check that `path` can be written and open its temporary file next to it.
    pub fn create(path: &Path) -> Result<Self, OutputError> {
        if path.is_dir() {
            return Err(fail(path, "is a directory"));
        }
        let (dir, name) = check_target(path)?;
        let mut prefix = name;
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            .tempfile_in(dir)
            .map_err(|e| fail(path, e))?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            file: BufWriter::new(tmp),
        })
    }

    /// The requested path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn finish(self) -> Result<NamedTempFile, OutputError> {
        let path = self.path.clone();
        let tmp = self.file.into_inner().map_err(|e| fail(&path, e.error()))?;
        tmp.as_file().sync_data().map_err(|e| fail(&path, e))?;
        Ok(tmp)
    }

    /// Flush and rename the file into place. On error nothing is left under the path.
    pub fn commit(self) -> Result<(), OutputError> {
        let path = self.path.clone();
        self.finish()?
            .persist(&path)
            .map(drop)
            .map_err(|e| fail(&path, e.error))
    }

    /// Keep what was written as `PATH.partial` (returned), for a run that failed part way.
    pub fn keep_partial(self) -> Result<PathBuf, OutputError> {
        let partial = partial_path(&self.path);
        self.finish()?
            .persist(&partial)
            .map(drop)
            .map_err(|e| fail(&partial, e.error))?;
        Ok(partial)
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// Write `bytes` to `path` as one [`OutputFile`].
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut out = OutputFile::create(path)?;
    out.write_all(bytes).map_err(|e| fail(path, e))?;
    out.commit()
}

/// A directory of files (e.g. numbered PNG frames) filled under a temporary sibling name
/// (`.NAME.XXXXXX.partial`) and renamed into place whole by [`OutputDir::commit`]. An
/// existing directory at the path is replaced only if it holds nothing but files the
/// caller's `replaceable` accepts (an earlier recording); it is checked at
/// [`OutputDir::create`], before any work.
pub struct OutputDir {
    path: PathBuf,
    tmp: TempDir,
    replaceable: fn(&str) -> bool,
}

impl OutputDir {
    pub fn create(path: &Path, replaceable: fn(&str) -> bool) -> Result<Self, OutputError> {
        if path.exists() {
            if !path.is_dir() {
                return Err(fail(path, "exists and is not a directory"));
            }
            check_replaceable(path, replaceable)?;
        }
        let (dir, name) = check_target(path)?;
        let mut prefix = OsString::from(".");
        prefix.push(name);
        prefix.push(".");
        let tmp = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(".partial")
            .tempdir_in(dir)
            .map_err(|e| fail(path, e))?;
        Ok(OutputDir {
            path: path.to_path_buf(),
            tmp,
            replaceable,
        })
    }

    /// Where to write the files now (the temporary directory).
    pub fn dir(&self) -> &Path {
        self.tmp.path()
    }

    /// The requested path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Rename the directory into place, replacing an earlier one (see [`OutputDir`]).
    pub fn commit(self) -> Result<(), OutputError> {
        let path = self.path;
        if path.is_dir() {
            check_replaceable(&path, self.replaceable)?;
            std::fs::remove_dir_all(&path).map_err(|e| fail(&path, e))?;
        }
        let tmp = self.tmp.keep();
        std::fs::rename(&tmp, &path).map_err(|e| {
            let _ = std::fs::remove_dir_all(&tmp);
            fail(&path, e)
        })
    }
}

fn check_replaceable(path: &Path, replaceable: fn(&str) -> bool) -> Result<(), OutputError> {
    let entries = std::fs::read_dir(path).map_err(|e| fail(path, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| fail(path, e))?;
        let name = entry.file_name();
        let ok =
            entry.file_type().is_ok_and(|t| t.is_file()) && name.to_str().is_some_and(replaceable);
        if !ok {
            return Err(fail(
                path,
                format!(
                    "the directory holds {}, which is not an earlier output; give an empty or new directory",
                    name.to_string_lossy()
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_file_appears_only_when_committed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old").unwrap();
        let mut out = OutputFile::create(&path).unwrap();
        out.write_all(b"new").unwrap();
        // While written: the old file is intact, the new data is elsewhere.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        out.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(names(dir.path()), ["out.csv"]);
        // Dropped without commit: nothing changes, nothing is left.
        let mut out = OutputFile::create(&path).unwrap();
        out.write_all(b"lost").unwrap();
        drop(out);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(names(dir.path()), ["out.csv"]);
        // Kept as partial: under NAME.partial only.
        let mut out = OutputFile::create(&dir.path().join("t.csv")).unwrap();
        out.write_all(b"rows").unwrap();
        let p = out.keep_partial().unwrap();
        assert_eq!(p, dir.path().join("t.csv.partial"));
        assert_eq!(names(dir.path()), ["out.csv", "t.csv.partial"]);
    }

    #[test]
    fn unwritable_paths_are_refused_up_front() {
        let dir = tempfile::tempdir().unwrap();
        let e = OutputFile::create(dir.path()).err().unwrap();
        assert!(e.to_string().contains("is a directory"), "{e}");
        let e = OutputFile::create(&dir.path().join("no/such/f.csv"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("no directory"), "{e}");
        std::fs::write(dir.path().join("file"), "").unwrap();
        let e = OutputFile::create(&dir.path().join("file/f.csv"))
            .err()
            .unwrap();
        assert!(e.to_string().contains("not a directory"), "{e}");
        assert!(check_distinct([Path::new("a.csv"), Path::new("./a.csv")]).is_err());
        assert!(check_distinct([Path::new("a.csv"), Path::new("b.csv")]).is_ok());
        assert_eq!(names(dir.path()), ["file"]);
    }

    #[test]
    fn a_directory_is_renamed_into_place_whole() {
        let frame = |n: &str| n.starts_with("frame_");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("frames");
        // An earlier recording is replaced whole.
        std::fs::create_dir(&path).unwrap();
        for k in 0..3 {
            std::fs::write(path.join(format!("frame_{k}")), "old").unwrap();
        }
        let out = OutputDir::create(&path, frame).unwrap();
        std::fs::write(out.dir().join("frame_0"), "new").unwrap();
        assert_eq!(names(&path).len(), 3, "untouched until committed");
        out.commit().unwrap();
        assert_eq!(names(&path), ["frame_0"]);
        assert_eq!(names(dir.path()), ["frames"]);
        // Dropped: nothing is left but the earlier directory.
        let out = OutputDir::create(&path, frame).unwrap();
        std::fs::write(out.dir().join("frame_9"), "lost").unwrap();
        drop(out);
        assert_eq!(names(dir.path()), ["frames"]);
        assert_eq!(names(&path), ["frame_0"]);
        // A directory holding anything else is refused before any work.
        std::fs::write(path.join("notes.txt"), "mine").unwrap();
        let e = OutputDir::create(&path, frame).err().unwrap();
        assert!(e.to_string().contains("notes.txt"), "{e}");
    }
}
