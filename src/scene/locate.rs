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
        /// The items kept ([`Keep`]), in order.
        items: Vec<Item>,
        /// How many items the group has, kept or not.
        len: usize,
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
    /// Position in its group, counting the items not kept.
    index: usize,
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
    /// The whole structure of `text` (memory proportional to the text).
    pub fn new(text: &'a str) -> Self {
        Self::build(text, Keep::All)
    }

    /// The structure of `text` along `paths` only, for [`SourceMap::locate`] on them:
    /// the rest is read and dropped, so the memory is bounded by the longest item, not
    /// the text.
    pub fn for_paths(text: &'a str, paths: &[FieldPath]) -> Self {
        Self::build(text, Keep::Paths(paths))
    }

    /// The structure of `text` about line and column `at` only, for
    /// [`SourceMap::path_at`] on its offset (returned too).
    pub fn for_position(text: &'a str, at: LineCol) -> (Self, usize) {
        let mut map = SourceMap {
            text,
            root: None,
            line_starts: line_starts(text),
        };
        let offset = map.offset(at);
        map.root = Parser::new(text, Keep::Offset(offset)).value(0, &Matching::Any);
        (map, offset)
    }

    fn build(text: &'a str, keep: Keep<'_>) -> Self {
        let matching = Matching::all(&keep);
        SourceMap {
            text,
            root: Parser::new(text, keep).value(0, &matching),
            line_starts: line_starts(text),
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
        'descend: while let Node::Group {
            items, name, len, ..
        } = node
        {
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
                    None if *len == 1 && name.is_some() => {}
                    None => path.0.push(Seg::Index(item.index)),
                }
                node = &item.value;
                continue 'descend;
            }
            break;
        }
        path
    }
}

/// Byte offsets of the starts of the lines of `text`.
fn line_starts(text: &str) -> Vec<usize> {
    let mut starts = vec![0];
    starts.extend(
        text.bytes()
            .enumerate()
            .filter(|&(_, c)| c == b'\n')
            .map(|(i, _)| i + 1),
    );
    starts
}

/// Follow one path segment from `node`; returns the child and the position to report.
fn step<'n>(node: &'n Node, seg: &Seg) -> Option<(&'n Node, usize)> {
    let Node::Group {
        name, items, len, ..
    } = node
    else {
        return None;
    };
    // Look through `Some(...)` / one-element newtype wrappers.
    if name.is_some()
        && *len == 1
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
        Seg::Index(i) => items
            .binary_search_by_key(i, |it| it.index)
            .ok()
            .map(|k| (&items[k].value, items[k].start())),
    }
}

/// Which items the parser keeps.
#[derive(Clone, Copy)]
enum Keep<'p> {
    All,
    /// The items on these paths (and the wrappers, `Some(...)`, on the way).
    Paths(&'p [FieldPath]),
    /// The items whose span holds this byte offset.
    Offset(usize),
}

/// Of the [`Keep::Paths`], those the current item's path is a prefix of (with `Keep::All`
/// and `Keep::Offset`: every item is a candidate).
#[derive(Clone)]
enum Matching {
    Any,
    /// Indices of the paths and the depth in them reached.
    Some(Vec<usize>, usize),
}

impl Matching {
    fn all(keep: &Keep<'_>) -> Self {
        match keep {
            Keep::Paths(paths) => Matching::Some((0..paths.len()).collect(), 0),
            _ => Matching::Any,
        }
    }

    /// The paths that continue with `seg`.
    fn child(&self, keep: &Keep<'_>, seg: &Seg) -> Matching {
        match (self, keep) {
            (Matching::Some(ids, depth), Keep::Paths(paths)) => Matching::Some(
                ids.iter()
                    .copied()
                    .filter(|&k| paths[k].0.get(*depth) == Some(seg))
                    .collect(),
                depth + 1,
            ),
            _ => Matching::Any,
        }
    }

    fn is_empty(&self) -> bool {
        matches!(self, Matching::Some(ids, _) if ids.is_empty())
    }
}

struct Parser<'t, 'p> {
    text: &'t str,
    /// The lexer's position, and the tokens read ahead of the parser (at most two).
    lexed: usize,
    ahead: std::collections::VecDeque<(Tok, usize)>,
    text_len: usize,
    keep: Keep<'p>,
    /// With [`Keep::Paths`]: which paths' last items have been read, how many have
    /// not, and whether all have (then the parser reads no further: the rest of the
    /// text cannot change where they are, and a file of 10⁶ bodies with errors in its
    /// first 20 is not read to its end a second time).
    found: Vec<bool>,
    missing: usize,
    done: bool,
}

impl<'t, 'p> Parser<'t, 'p> {
    fn new(text: &'t str, keep: Keep<'p>) -> Self {
        let paths = match keep {
            Keep::Paths(paths) => paths.len(),
            _ => 0,
        };
        Parser {
            text,
            lexed: 0,
            ahead: Default::default(),
            text_len: text.len(),
            keep,
            found: vec![false; paths],
            missing: paths,
            done: false,
        }
    }

    /// Note that the item just read, on the paths `inner`, ends those of them that
    /// stop at it; once every path has ended, the parser is done.
    fn ended(&mut self, inner: &Matching) {
        if let (Matching::Some(ids, depth), Keep::Paths(paths)) = (inner, self.keep) {
            for &k in ids {
                if paths[k].0.len() == *depth && !self.found[k] {
                    self.found[k] = true;
                    self.missing -= 1;
                }
            }
            self.done = self.missing == 0;
        }
    }

    fn peek_tok(&mut self, k: usize) -> Option<(Tok, usize)> {
        if self.done {
            return None;
        }
        while self.ahead.len() <= k {
            let t = next_token(self.text, &mut self.lexed)?;
            self.ahead.push_back(t);
        }
        self.ahead.get(k).copied()
    }

    fn peek(&mut self, k: usize) -> Option<Tok> {
        self.peek_tok(k).map(|t| t.0)
    }

    fn advance(&mut self, k: usize) {
        for _ in 0..k {
            if self.ahead.pop_front().is_none() {
                let _ = next_token(self.text, &mut self.lexed);
            }
        }
    }

    /// The value at the parser's position; `matching` says which of the kept paths its
    /// item is on.
    fn value(&mut self, depth: usize, matching: &Matching) -> Option<Node> {
        if depth > MAX_DEPTH {
            return None;
        }
        let (tok, at) = self.peek_tok(0)?;
        match tok {
            Tok::Atom(s, e) => {
                self.advance(1);
                if let Some(Tok::Open(b)) = self.peek(0) {
                    let name = self.text[s..e].to_string();
                    self.advance(1);
                    Some(self.group(Some(name), b, s, depth, matching))
                } else {
                    Some(Node::Atom { start: s, end: e })
                }
            }
            Tok::Open(b) => {
                self.advance(1);
                Some(self.group(None, b, at, depth, matching))
            }
            _ => None,
        }
    }

    /// Read past the value at the parser's position as [`Parser::value`] would, building
    /// nothing; whether there was one.
    fn skip_value(&mut self, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match self.peek(0) {
            Some(Tok::Atom(..)) => {
                self.advance(1);
                if matches!(self.peek(0), Some(Tok::Open(_))) {
                    self.skip_group(depth);
                }
                true
            }
            Some(Tok::Open(_)) => {
                self.skip_group(depth);
                true
            }
            _ => false,
        }
    }

    /// Read past a group from its opening bracket to the matching closing one (or the
    /// end of the text, or a mismatched bracket, where [`Parser::group`] stops too).
    fn skip_group(&mut self, depth: usize) {
        let mut open = Vec::new();
        while let Some(t) = self.peek(0) {
            self.advance(1);
            match t {
                Tok::Open(b) => {
                    if depth + open.len() > MAX_DEPTH {
                        return;
                    }
                    open.push(match b {
                        b'(' => b')',
                        b'[' => b']',
                        _ => b'}',
                    });
                }
                Tok::Close(c) if open.pop() != Some(c) || open.is_empty() => return,
                _ => {}
            }
        }
    }

    /// Items of a group whose opening bracket `open` was just consumed.
    fn group(
        &mut self,
        name: Option<String>,
        open: u8,
        start: usize,
        depth: usize,
        matching: &Matching,
    ) -> Node {
        let close = match open {
            b'(' => b')',
            b'[' => b']',
            _ => b'}',
        };
        let mut items = Vec::new();
        let mut index = 0;
        loop {
            match self.peek_tok(0) {
                None => break,
                Some((Tok::Close(c), at)) => {
                    self.advance(1);
                    if c == close {
                        return Node::Group {
                            name,
                            items,
                            len: index,
                            start,
                            end: at + 1,
                        };
                    }
                    break;
                }
                Some((Tok::Comma, _)) => self.advance(1),
                _ => {
                    let key = match (self.peek(0), self.peek(1)) {
                        (Some(Tok::Atom(s, e)), Some(Tok::Colon)) if open == b'(' => {
                            self.advance(2);
                            Some((self.text[s..e].trim_start_matches("r#").to_string(), s))
                        }
                        _ => None,
                    };
                    // Map entries `{key: value}`: read and drop the key.
                    if open == b'{' {
                        let before = self.lexed - self.ahead.len();
                        let _ = self.value(depth + 1, &Matching::Any);
                        if self.peek(0) == Some(Tok::Colon) {
                            self.advance(1);
                        } else if self.lexed - self.ahead.len() == before {
                            break;
                        }
                    }
                    let seg = match &key {
                        Some((k, _)) => Seg::Field(k.clone()),
                        None => Seg::Index(index),
                    };
                    index += 1;
                    // A keyless item of a named group may be a wrapper (`Some(x)`), which
                    // paths look through: keep it whole if its group is on a path.
                    let wrapper = key.is_none() && name.is_some() && !matching.is_empty();
                    let inner = if wrapper {
                        Matching::Any
                    } else {
                        matching.child(&self.keep, &seg)
                    };
                    if inner.is_empty() {
                        // On no kept path: read past it without building it.
                        if self.skip_value(depth + 1) {
                            continue;
                        }
                        break;
                    }
                    let Some(value) = self.value(depth + 1, &inner) else {
                        break;
                    };
                    self.ended(&inner);
                    let mut item = Item {
                        key,
                        value,
                        index: index - 1,
                    };
                    match self.keep {
                        Keep::All => items.push(item),
                        Keep::Paths(_) => {
                            if !inner.is_empty() {
                                items.push(item);
                            }
                        }
                        Keep::Offset(o) => {
                            if item.start() <= o && o <= item.value.span().1 {
                                items.push(item);
                            } else if item.key.is_some() {
                                // path_at blames a stray value on the field before it.
                                let (s, e) = item.value.span();
                                item.value = Node::Atom { start: s, end: e };
                                items.push(item);
                            }
                        }
                    }
                }
            }
        }
        // Unterminated or malformed: the group extends to the end of the text.
        Node::Group {
            name,
            items,
            len: index,
            start,
            end: self.text_len,
        }
    }
}

/// Read one token at a time ([`next_token`]), so a large file's tokens are never all
/// held at once.
fn next_token(text: &str, pos: &mut usize) -> Option<(Tok, usize)> {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = *pos;
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
                *pos = i + 1;
                return Some((Tok::Open(c), i));
            }
            b')' | b']' | b'}' => {
                *pos = i + 1;
                return Some((Tok::Close(c), i));
            }
            b':' => {
                *pos = i + 1;
                return Some((Tok::Colon, i));
            }
            b',' => {
                *pos = i + 1;
                return Some((Tok::Comma, i));
            }
            b'"' | b'\'' => {
                let start = i;
                *pos = skip_quoted(b, i);
                return Some((Tok::Atom(start, *pos), start));
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
                        *pos = k.min(n);
                        return Some((Tok::Atom(start, *pos), start));
                    }
                }
                if b.get(j) == Some(&b'"') {
                    *pos = skip_quoted(b, j);
                    return Some((Tok::Atom(start, *pos), start));
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
                *pos = i;
                return Some((Tok::Atom(start, i), start));
            }
        }
    }
    *pos = n;
    None
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

    /// The pruned maps answer as the whole one: `for_paths` for each path of the
    /// fixture (and paths that cannot be followed to the end), `for_position` at every
    /// offset of the fixture and of a truncated copy.
    /// A pruned map reads the text only up to the end of its last path (a file of 10⁶
    /// bodies with errors in its first bodies is not read to its end again), and
    /// answers as the whole map.
    #[test]
    fn pruned_maps_stop_after_their_paths() {
        let body = "    Body(shape: Sphere(radius: 1.0), position: (0, 0, 5)),\n";
        let text = format!("Scene(\n  bodies: [\n{}  ],\n)\n", body.repeat(1000));
        let paths: Vec<FieldPath> = [3, 1, 7]
            .iter()
            .map(|&i| FieldPath::root().field("bodies").index(i).field("position"))
            .collect();
        let mut parser = Parser::new(&text, Keep::Paths(&paths));
        let root = parser.value(0, &Matching::all(&Keep::Paths(&paths)));
        assert!(parser.done);
        assert!(
            parser.lexed < 10 * body.len(),
            "read {} bytes",
            parser.lexed
        );
        let pruned = SourceMap {
            text: &text,
            root,
            line_starts: line_starts(&text),
        };
        let whole = SourceMap::new(&text);
        for p in &paths {
            assert!(whole.locate(p).is_some(), "{p}");
            assert_eq!(pruned.locate(p), whole.locate(p), "{p}");
        }
        // A path that is not in the text: read to the end, the deepest part found.
        let absent = FieldPath::root().field("bodies").index(5000);
        let mut parser = Parser::new(&text, Keep::Paths(std::slice::from_ref(&absent)));
        parser.value(
            0,
            &Matching::all(&Keep::Paths(std::slice::from_ref(&absent))),
        );
        assert!(!parser.done);
        assert_eq!(
            SourceMap::for_paths(&text, std::slice::from_ref(&absent)).locate(&absent),
            whole.locate(&absent)
        );
    }

    #[test]
    fn pruned_maps_answer_as_the_whole_map() {
        let text = include_str!("../../tests/fixtures/valid_full.ron");
        let whole = SourceMap::new(text);
        let root = FieldPath::root;
        let paths = [
            root()
                .field("containers")
                .index(2)
                .field("dividers")
                .index(0),
            root()
                .field("bodies")
                .index(3)
                .field("orientation")
                .field("yaw_deg"),
            root().field("bodies").index(9).field("shape"),
            root().field("bodies").index(99).field("position"),
            root()
                .field("generators")
                .index(1)
                .field("mix")
                .index(1)
                .field("shape"),
            root().field("pack_friction"),
            root().field("no_such_field"),
        ];
        let pruned = SourceMap::for_paths(text, &paths);
        for p in &paths {
            assert_eq!(pruned.locate(p), whole.locate(p), "{p}");
            let alone = SourceMap::for_paths(text, std::slice::from_ref(p));
            assert_eq!(alone.locate(p), whole.locate(p), "{p}");
            assert!(whole.locate(p).is_some(), "{p}");
        }
        for t in [text, &text[..text.len() / 2]] {
            let whole = SourceMap::new(t);
            for offset in (0..t.len()).filter(|&o| t.is_char_boundary(o)) {
                let at = whole.line_col(offset);
                let (map, o) = SourceMap::for_position(t, at);
                assert_eq!(o, whole.offset(at));
                assert_eq!(map.path_at(o), whole.path_at(o), "offset {offset}");
            }
        }
    }
}
