//! Source positions for scene errors.
//!
//! `ron` reports positions for syntax and type errors only; after deserialisation the
//! values carry no spans. This module re-reads the RON text with a small, lenient,
//! span-tracking parser that records the *structure* only (named or anonymous
//! `(...)`, `[...]`, `{...}` groups, `field: value` items and atoms) and answers two
//! questions:
//! - [`SourceMap::locate`]: where is the field `bodies[3].shape.radius`? (semantic errors);
//! - [`SourceMap::path_at`]: which field contains line 12, column 9? (`ron`'s errors).
//!
//! The parser never fails: on text it does not understand it stops and keeps what it has
//! read, so it also works on the syntactically broken files `ron` rejects. Nesting is
//! capped at `MAX_DEPTH` so hostile input cannot exhaust the stack.

use std::fmt;

/// Deepest nesting the structure parser follows (ron's own default limit is 128).
const MAX_DEPTH: usize = 256;

/// A 1-based line and column (columns count characters, as `ron` does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LineCol {
    pub line: usize,
    pub column: usize,
}

/// One step of a field path: a struct field or a list index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seg {
    Field(String),
    Index(usize),
}

/// A path to a value in the scene, displayed as `bodies[3].shape.radius`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(pub Vec<Seg>);

impl FieldPath {
    pub fn root() -> Self {
        FieldPath(Vec::new())
    }

    /// This path extended by the struct field `name`.
    pub fn field(&self, name: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Field(name.to_string()));
        p
    }

    /// This path extended by the list index `i`.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    /// This path followed by the relative path `rest`.
    pub fn join(&self, rest: &FieldPath) -> Self {
        let mut p = self.clone();
        p.0.extend(rest.0.iter().cloned());
        p
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, s) in self.0.iter().enumerate() {
            match s {
                Seg::Field(name) if k == 0 => write!(f, "{name}")?,
                Seg::Field(name) => write!(f, ".{name}")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

#[derive(Debug)]
enum Node {
    /// A bracketed group, possibly preceded by a name (`Sphere(...)`, `Some(...)`).
    Group {
        name: Option<String>,
        items: Vec<Item>,
        start: usize,
        end: usize,
    },
    /// Anything else: number, string, identifier.
    Atom { start: usize, end: usize },
}

impl Node {
    fn span(&self) -> (usize, usize) {
        match self {
            Node::Group { start, end, .. } | Node::Atom { start, end } => (*start, *end),
        }
    }
}

#[derive(Debug)]
struct Item {
    /// `name:` and the byte offset of `name`, for struct fields.
    key: Option<(String, usize)>,
    value: Node,
}

impl Item {
    fn start(&self) -> usize {
        self.key.as_ref().map_or(self.value.span().0, |k| k.1)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tok {
    Open(u8),
    Close(u8),
    Colon,
    Comma,
    /// Byte range of an identifier, number or literal.
    Atom(usize, usize),
}

/// The structure of one RON text, for mapping field paths to positions and back.
pub struct SourceMap<'a> {
    text: &'a str,
    root: Option<Node>,
    line_starts: Vec<usize>,
}

impl<'a> SourceMap<'a> {
    pub fn new(text: &'a str) -> Self {
        let toks = tokenize(text);
        let mut p = Parser {
            toks: &toks,
            pos: 0,
            text,
            text_len: text.len(),
        };
        let root = p.value(0);
        let mut line_starts = vec![0];
        line_starts.extend(
            text.char_indices()
                .filter(|&(_, c)| c == '\n')
                .map(|(i, _)| i + 1),
        );
        SourceMap {
            text,
            root,
            line_starts,
        }
    }

    /// Line and column of byte offset `offset`.
    pub fn line_col(&self, offset: usize) -> LineCol {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset).max(1);
        let start = self.line_starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(1, |s| s.chars().count() + 1);
        LineCol { line, column }
    }

    /// Byte offset of a 1-based line and character column (clamped to the text).
    pub fn offset(&self, at: LineCol) -> usize {
        let Some(&start) = self.line_starts.get(at.line.saturating_sub(1)) else {
            return self.text.len();
        };
        let rest = &self.text[start..];
        rest.char_indices()
            .nth(at.column.saturating_sub(1))
            .map_or(self.text.len(), |(i, _)| start + i)
    }

    /// Position of the field `path` (of its `name:` token for a struct field, of the item
    /// for a list element). If the path cannot be followed to the end (e.g. the field was
    /// left out and took its default), the position of the deepest part found.
    pub fn locate(&self, path: &FieldPath) -> Option<LineCol> {
        let mut node = self.root.as_ref()?;
        let mut at = node.span().0;
        for seg in &path.0 {
            let Some((next, pos)) = step(node, seg) else {
                break;
            };
            node = next;
            at = pos;
        }
        Some(self.line_col(at))
    }

    /// Path of the innermost field or list element containing byte `offset`.
    pub fn path_at(&self, offset: usize) -> FieldPath {
        let mut path = FieldPath::root();
        let mut node = match &self.root {
            Some(n) => n,
            None => return path,
        };
        'descend: while let Node::Group { items, name, .. } = node {
            for (i, item) in items.iter().enumerate() {
                let (_, end) = item.value.span();
                if !(item.start() <= offset && offset <= end) {
                    continue;
                }
                match &item.key {
                    Some((k, _)) => path.0.push(Seg::Field(k.clone())),
                    // Stray value in a struct (`seed: 42 43`): blame the field before it.
                    None if items.iter().any(|it| it.key.is_some()) => {
                        if let Some((k, _)) = items[..i].iter().rev().find_map(|it| it.key.as_ref())
                        {
                            path.0.push(Seg::Field(k.clone()));
                        }
                        break 'descend;
                    }
                    // `Some(x)` and newtype wrappers are transparent.
                    None if items.len() == 1 && name.is_some() => {}
                    None => path.0.push(Seg::Index(i)),
                }
                node = &item.value;
                continue 'descend;
            }
            break;
        }
        path
    }
}

/// Follow one path segment from `node`; returns the child and the position to report.
fn step<'n>(node: &'n Node, seg: &Seg) -> Option<(&'n Node, usize)> {
    let Node::Group { name, items, .. } = node else {
        return None;
    };
    // Look through `Some(...)` / one-element newtype wrappers.
    if name.is_some()
        && items.len() == 1
        && items[0].key.is_none()
        && let found @ Some(_) = step(&items[0].value, seg)
    {
        return found;
    }
    match seg {
        Seg::Field(f) => items
            .iter()
            .find(|it| it.key.as_ref().is_some_and(|(k, _)| k == f))
            .map(|it| (&it.value, it.start())),
        Seg::Index(i) => items.get(*i).map(|it| (&it.value, it.start())),
    }
}

struct Parser<'t> {
    toks: &'t [(Tok, usize)],
    pos: usize,
    text: &'t str,
    text_len: usize,
}

impl Parser<'_> {
    fn peek(&self, k: usize) -> Option<Tok> {
        self.toks.get(self.pos + k).map(|t| t.0)
    }

    fn value(&mut self, depth: usize) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (tok, at) = *self.toks.get(self.pos)?;
        match tok {
            Tok::Atom(s, e) => {
                self.pos += 1;
                if let Some(Tok::Open(b)) = self.peek(0) {
                    let name = self.text[s..e].to_string();
                    self.pos += 1;
                    Some(self.group(Some(name), b, s, depth))
                } else {
                    Some(Node::Atom { start: s, end: e })
                }
            }
            Tok::Open(b) => {
                self.pos += 1;
                Some(self.group(None, b, at, depth))
            }
            _ => None,
        }
    }

    /// Items of a group whose opening bracket `open` was just consumed.
    fn group(&mut self, name: Option<String>, open: u8, start: usize, depth: usize) -> Node {
        let close = match open {
            b'(' => b')',
            b'[' => b']',
            _ => b'}',
        };
        let mut items = Vec::new();
        loop {
            match self.peek(0) {
                None => break,
                Some(Tok::Close(c)) => {
                    let end = self.toks[self.pos].1 + 1;
                    self.pos += 1;
                    if c == close {
                        return Node::Group {
                            name,
                            items,
                            start,
                            end,
                        };
                    }
                    break;
                }
                Some(Tok::Comma) => self.pos += 1,
                _ => {
                    let key = match (self.peek(0), self.peek(1)) {
                        (Some(Tok::Atom(s, e)), Some(Tok::Colon)) if open == b'(' => {
                            self.pos += 2;
                            Some((self.text[s..e].trim_start_matches("r#").to_string(), s))
                        }
                        _ => None,
                    };
                    // Map entries `{key: value}`: read and drop the key.
                    if open == b'{' {
                        let before = self.pos;
                        let _ = self.value(depth + 1);
                        if self.peek(0) == Some(Tok::Colon) {
                            self.pos += 1;
                        } else if self.pos == before {
                            break;
                        }
                    }
                    match self.value(depth + 1) {
                        Some(value) => items.push(Item { key, value }),
                        None => break,
                    }
                }
            }
        }
        // Unterminated or malformed: the group extends to the end of the text.
        Node::Group {
            name,
            items,
            start,
            end: self.text_len,
        }
    }
}

/// Split RON text into structural tokens, skipping whitespace, comments (`//`, nested
/// `/* */`) and the `#![enable(...)]` attribute; strings, chars and raw strings are atoms.
fn tokenize(text: &str) -> Vec<(Tok, usize)> {
    let b = text.as_bytes();
    let n = b.len();
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\r' | b'\n' => i += 1,
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < n && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut level = 0usize;
                while i < n {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        level += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        level -= 1;
                        i += 2;
                        if level == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'#' if b.get(i + 1) == Some(&b'!') => {
                // #![enable(...)]: skip to the matching `]`.
                let mut level = 0usize;
                while i < n {
                    match b[i] {
                        b'[' => level += 1,
                        b']' => {
                            level = level.saturating_sub(1);
                            if level == 0 {
                                i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
            }
            b'(' | b'[' | b'{' => {
                out.push((Tok::Open(c), i));
                i += 1;
            }
            b')' | b']' | b'}' => {
                out.push((Tok::Close(c), i));
                i += 1;
            }
            b':' => {
                out.push((Tok::Colon, i));
                i += 1;
            }
            b',' => {
                out.push((Tok::Comma, i));
                i += 1;
            }
            b'"' | b'\'' => {
                let start = i;
                i = skip_quoted(b, i);
                out.push((Tok::Atom(start, i), start));
            }
            _ => {
                let start = i;
                // Raw (byte) strings: r"..", r#".."#, br#".."#.
                let mut j = i;
                if b[j] == b'b' {
                    j += 1;
                }
                if b.get(j) == Some(&b'r') && matches!(b.get(j + 1), Some(b'"') | Some(b'#')) {
                    let mut k = j + 1;
                    let mut hashes = 0;
                    while b.get(k) == Some(&b'#') {
                        hashes += 1;
                        k += 1;
                    }
                    if b.get(k) == Some(&b'"') {
                        k += 1;
                        loop {
                            if k >= n {
                                break;
                            }
                            if b[k] == b'"'
                                && b[k + 1..]
                                    .iter()
                                    .take(hashes)
                                    .filter(|&&h| h == b'#')
                                    .count()
                                    == hashes
                            {
                                k += 1 + hashes;
                                break;
                            }
                            k += 1;
                        }
                        out.push((Tok::Atom(start, k.min(n)), start));
                        i = k.min(n);
                        continue;
                    }
                }
                if b.get(j) == Some(&b'"') {
                    i = skip_quoted(b, j);
                    out.push((Tok::Atom(start, i), start));
                    continue;
                }
                while i < n
                    && !b" \t\r\n()[]{}:,\"'".contains(&b[i])
                    && !(b[i] == b'/' && i > start)
                {
                    i += 1;
                }
                if i == start {
                    i += 1;
                }
                // Keep token boundaries on char boundaries.
                while i < n && !text.is_char_boundary(i) {
                    i += 1;
                }
                out.push((Tok::Atom(start, i), start));
            }
        }
    }
    out
}

/// Index just past the string or char literal opening at `i`.
fn skip_quoted(b: &[u8], i: usize) -> usize {
    let quote = b[i];
    let mut k = i + 1;
    while k < b.len() {
        match b[k] {
            b'\\' => k += 2,
            c if c == quote => return k + 1,
            _ => k += 1,
        }
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "// comment (not [a group]\nScene(\n    name: \"a (b\",\n    bodies: [\n        (shape: Sphere(radius: 1.0)),\n        Body(\n            shape: Cube(edge: -2),\n        ),\n    ],\n)\n";

    #[test]
    fn locates_nested_fields() {
        let m = SourceMap::new(TEXT);
        let p = FieldPath::root()
            .field("bodies")
            .index(1)
            .field("shape")
            .field("edge");
        assert_eq!(
            m.locate(&p),
            Some(LineCol {
                line: 7,
                column: 25
            })
        );
        let p = FieldPath::root()
            .field("bodies")
            .index(0)
            .field("shape")
            .field("radius");
        assert_eq!(
            m.locate(&p),
            Some(LineCol {
                line: 5,
                column: 24
            })
        );
        // A missing field reports its deepest present ancestor (bodies[1] at 6:9).
        let p = FieldPath::root().field("bodies").index(1).field("density");
        assert_eq!(m.locate(&p), Some(LineCol { line: 6, column: 9 }));
    }

    #[test]
    fn maps_positions_back_to_paths() {
        let m = SourceMap::new(TEXT);
        let at = m.offset(LineCol {
            line: 7,
            column: 32,
        });
        assert_eq!(m.path_at(at).to_string(), "bodies[1].shape.edge");
        assert_eq!(
            m.line_col(at),
            LineCol {
                line: 7,
                column: 32
            }
        );
    }

    #[test]
    fn survives_broken_text() {
        for t in [
            "",
            "(",
            ")",
            "((((",
            "\"",
            "r#\"",
            "(a: [1, 2",
            "/*",
            "#![",
            "é(ü: 1)",
            "'\\",
        ] {
            let m = SourceMap::new(t);
            let _ = m.path_at(t.len());
            let _ = m.locate(&FieldPath::root().field("a").index(3));
        }
        let deep = "(".repeat(100_000);
        let _ = SourceMap::new(&deep).path_at(50_000);
    }
}
