//! Scene errors: what is wrong, in which file, at which line and column, in which field.

use std::fmt;

/// What kind of problem a [`SceneError`] is, for the CLI's exit status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SceneErrorKind {
    /// The file could not be read.
    Io,
    /// Not valid RON, or a value of the wrong type, an unknown field, shape or container.
    Syntax,
    /// Well-formed but physically or geometrically invalid (negative size, NaN, e > 1,
    /// overlapping bodies, ...).
    Invalid,
    /// Valid, but asks for something this build does not have (an unimplemented solver,
    /// a shape whose construction failed in the shapes module).
    Unsupported,
}

/// A scene that cannot be loaded. Displays as `file:line:col: field: message`, e.g.
/// `scenes/foo.ron:12:9: bodies[3].shape.radius: must be > 0, got -1`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SceneError {
    /// File name as given to [`super::load_scene`] / [`super::parse_scene`].
    pub file: String,
    /// 1-based line, if known.
    pub line: Option<usize>,
    /// 1-based column in characters, if known.
    pub column: Option<usize>,
    /// Path of the offending field (`bodies[3].shape.radius`); empty for the whole file.
    pub field: String,
    /// What is wrong.
    pub message: String,
    pub kind: SceneErrorKind,
    /// The file's further errors ([`SceneError::more`]), boxed so that a single error
    /// stays small.
    rest: Option<Box<Rest>>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rest {
    /// At most [`MAX_REPORTED`] − 1.
    more: Vec<SceneError>,
    /// Errors found beyond [`MAX_REPORTED`] and not listed.
    omitted: usize,
}

/// Most errors one [`SceneError`] lists (the first and [`SceneError::more`]).
pub const MAX_REPORTED: usize = 20;

impl SceneError {
    /// One error with no others.
    pub fn new(
        file: String,
        line: Option<usize>,
        column: Option<usize>,
        field: String,
        kind: SceneErrorKind,
        message: String,
    ) -> Self {
        SceneError {
            file,
            line,
            column,
            field,
            message,
            kind,
            rest: None,
        }
    }

    /// The first of `errors` carrying the rest (at most [`MAX_REPORTED`] in all); `None`
    /// if there are none.
    pub fn collect(errors: Vec<SceneError>) -> Option<SceneError> {
        let mut it = errors.into_iter();
        let mut first = it.next()?;
        let more: Vec<SceneError> = it.by_ref().take(MAX_REPORTED - 1).collect();
        first.set_more(more, it.count());
        Some(first)
    }

    /// Replace the further errors listed and the count of those not listed.
    pub fn set_more(&mut self, more: Vec<SceneError>, omitted: usize) {
        self.rest = (!more.is_empty() || omitted > 0).then(|| Box::new(Rest { more, omitted }));
    }

    /// The further errors of the file (at most [`MAX_REPORTED`] − 1; a file is checked
    /// whole, so one run reports every problem).
    pub fn more(&self) -> &[SceneError] {
        self.rest.as_ref().map_or(&[], |r| &r.more)
    }

    /// Errors found beyond [`MAX_REPORTED`] and not listed.
    pub fn omitted(&self) -> usize {
        self.rest.as_ref().map_or(0, |r| r.omitted)
    }

    /// Number of errors found (listed and omitted).
    pub fn count(&self) -> usize {
        1 + self.more().len() + self.omitted()
    }

    /// This error and the further ones it lists.
    pub fn all(&self) -> impl Iterator<Item = &SceneError> {
        std::iter::once(self).chain(self.more())
    }

    /// Process exit status under the CLI's contract (0 success, 2 invalid input, 1
    /// run-time failure): every scene error — syntax, values, an unreadable file, a
    /// method this build lacks — is invalid input, 2. The kind tells them apart.
    pub fn exit_code(&self) -> i32 {
        2
    }

    /// Whether the problem is in the scene file itself (bad syntax or bad values).
    pub fn is_invalid_input(&self) -> bool {
        matches!(self.kind, SceneErrorKind::Syntax | SceneErrorKind::Invalid)
    }
}

impl fmt::Display for SceneError {
    /// One line per listed error, then a count of the omitted ones.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.fmt_one(f)?;
        for e in self.more() {
            writeln!(f)?;
            e.fmt_one(f)?;
        }
        if self.omitted() > 0 {
            write!(
                f,
                "\n{}: {} more errors not shown (the first {MAX_REPORTED} are)",
                self.file,
                self.omitted()
            )?;
        }
        Ok(())
    }
}

impl SceneError {
    fn fmt_one(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(col) = self.column {
                write!(f, ":{col}")?;
            }
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SceneError {}
