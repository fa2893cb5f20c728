//! Every relative link in `README.md` and `docs/**/*.md` resolves: to a file or directory
//! of the repository and, when the link names a `#fragment` of a Markdown file, to one of
//! that file's headings under GitHub's anchor rules (lower case; spaces become `-`;
//! punctuation other than `-` and `_` is dropped; a repeated heading gets `-1`, `-2`, …).
//!
//! Links in fenced code blocks and inline code spans are not links. Absolute URLs
//! (`https:`, `mailto:`, …) are not checked: they need the network.
//!
//! Standard library only, so it runs with and without the default features.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The Markdown files the check covers, below `root`: `README.md` and `docs/**/*.md`.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The lines of `md`, with `None` for the lines of fenced code blocks (fences included).
fn outside_fences(md: &str) -> Vec<Option<&str>> {
    let mut fence: Option<&str> = None;
    md.lines()
        .map(|line| {
            let t = line.trim_start();
            let marker = ["```", "~~~"].into_iter().find(|m| t.starts_with(m));
            match (fence, marker) {
                (None, Some(m)) => {
                    fence = Some(m);
                    None
                }
                (Some(open), Some(m)) if open == m => {
                    fence = None;
                    None
                }
                (Some(_), _) => None,
                (None, None) => Some(line),
            }
        })
        .collect()
}

/// `line` with every inline code span (`` `…` ``) replaced by spaces.
fn blank_code_spans(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            out.push(' ');
        } else {
            out.push(if in_code { ' ' } else { c });
        }
    }
    out
}

/// The link targets of one line of prose: inline links and images `[text](target)`
/// (the target being the destination without its optional title), and reference
/// definitions `[label]: target`.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let t = line.trim_start();
    if t.starts_with('[')
        && let Some(close) = t.find(']')
        && t[close + 1..].starts_with(':')
    {
        if let Some(target) = t[close + 2..].split_whitespace().next() {
            targets.push(target.trim_matches(['<', '>']).to_string());
        }
        return targets;
    }
    let bytes = line.as_bytes();
    let mut i = 0;
    while let Some(k) = line[i..].find("](") {
        let start = i + k + 2;
        // The destination runs to the matching ')' (balanced parentheses allowed).
        let mut depth = 1;
        let mut end = start;
        while end < bytes.len() {
            match bytes[end] {
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            end += 1;
        }
        let dest = line[start..end].trim();
        let dest = match dest.strip_prefix('<') {
            Some(rest) => rest.split('>').next().unwrap_or(""),
            None => dest.split_whitespace().next().unwrap_or(""),
        };
        targets.push(dest.to_string());
        i = end.min(line.len());
    }
    targets
}

/// Whether `target` is an absolute URL (a scheme such as `https:` or `mailto:`).
fn is_external(target: &str) -> bool {
    match target.find(':') {
        Some(colon) => {
            let scheme = &target[..colon];
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
                && !target.starts_with('#')
        }
        None => false,
    }
}

/// GitHub's anchor for a heading's text: inline links reduced to their text, lower
/// case, every character that is not alphanumeric, a space, `-` or `_` dropped, and
/// spaces turned into `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](url)` → `text`.
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after
            .find("](")
            .and_then(|m| after[m..].find(')').map(|c| (m, m + c)))
        {
            Some((mid, close)) => {
                text.push_str(&after[..mid]);
                rest = &after[close + 1..];
            }
            None => {
                text.push('[');
                rest = after;
            }
        }
    }
    text.push_str(rest);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown document: its ATX headings' slugs (a repeated slug gets
/// `-1`, `-2`, … as on GitHub; a code span keeps its text: `` `run` `` gives `run`) and
/// any explicit `id="…"` / `name="…"` HTML anchors.
fn document_anchors(md: &str) -> HashSet<String> {
    let mut set = HashSet::new();
    for t in outside_fences(md)
        .into_iter()
        .flatten()
        .map(str::trim_start)
    {
        let hashes = t.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            let base = slug(t[hashes..].trim().trim_end_matches('#'));
            let mut anchor = base.clone();
            let mut n = 0;
            while set.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            set.insert(anchor);
        }
        for attr in ["id=\"", "name=\""] {
            let mut rest = t;
            while let Some(k) = rest.find(attr) {
                rest = &rest[k + attr.len()..];
                if let Some(end) = rest.find('"') {
                    set.insert(rest[..end].to_string());
                }
            }
        }
    }
    set
}

/// The broken links of the Markdown file `file`, as "file:line: target: what is wrong".
fn broken_links(file: &Path) -> Vec<String> {
    let mut errors = Vec::new();
    let md = match fs::read_to_string(file) {
        Ok(md) => md,
        Err(e) => return vec![format!("{}: cannot read: {e}", file.display())],
    };
    let dir = file.parent().unwrap_or(Path::new("."));
    for (n, line) in outside_fences(&md).into_iter().enumerate() {
        let Some(line) = line else { continue };
        for target in link_targets(&blank_code_spans(line)) {
            if target.is_empty() || is_external(&target) {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let resolved = if path.is_empty() {
                file.to_path_buf()
            } else {
                dir.join(path.replace("%20", " "))
            };
            let at = format!("{}:{}: {target}", file.display(), n + 1);
            if !resolved.exists() {
                errors.push(format!("{at}: no such file"));
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if resolved.extension().is_none_or(|e| e != "md") {
                continue; // anchors into source files (`#L10`) are GitHub line links
            }
            let text = fs::read_to_string(&resolved).unwrap_or_default();
            if !document_anchors(&text).contains(fragment) {
                errors.push(format!("{at}: no heading with anchor #{fragment}"));
            }
        }
    }
    errors
}

#[test]
fn every_relative_link_in_the_readme_and_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let files = markdown_files(root);
    assert!(
        files.iter().any(|f| f.starts_with(root.join("docs"))),
        "docs/ holds no Markdown file: the check would cover the README only"
    );
    let errors: Vec<String> = files.iter().flat_map(|f| broken_links(f)).collect();
    assert!(errors.is_empty(), "broken links:\n{}", errors.join("\n"));
}

/// A scratch directory of its own for one synthetic check.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("docs_links_{}_{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("docs")).unwrap();
    dir
}

#[test]
fn a_broken_file_link_and_a_missing_anchor_are_reported() {
    let dir = scratch("broken");
    fs::write(
        dir.join("docs/guide.md"),
        "# Guide\n\n## Set-up: the `cargo` commands\n\ntext\n",
    )
    .unwrap();
    fs::write(
        dir.join("README.md"),
        "# Title\n\
         [fine](docs/guide.md) and [anchor](docs/guide.md#set-up-the-cargo-commands)\n\
         [gone](docs/missing.md)\n\
         ![picture](assets/none.png \"a title\")\n\
         [bad anchor](docs/guide.md#setup)\n\
         [self](#title) [self bad](#nothing)\n\
         [web](https://example.org/nowhere) `[code](not/checked.md)`\n\
         ```\n[fenced](not/checked/either.md)\n```\n\
         [ref]: docs/also-missing.md\n",
    )
    .unwrap();
    let errors = broken_links(&dir.join("README.md"));
    let _ = fs::remove_dir_all(&dir);
    let wanted = [
        ":3: docs/missing.md: no such file",
        ":4: assets/none.png: no such file",
        ":5: docs/guide.md#setup: no heading with anchor #setup",
        ":6: #nothing: no heading with anchor #nothing",
        ":11: docs/also-missing.md: no such file",
    ];
    assert_eq!(errors.len(), wanted.len(), "{errors:#?}");
    for (e, w) in errors.iter().zip(wanted) {
        assert!(e.ends_with(w), "{e} should end with {w}");
    }
}

#[test]
fn anchors_follow_githubs_slug_rules() {
    assert_eq!(slug("The energy ledger"), "the-energy-ledger");
    assert_eq!(slug("Set-up"), "set-up");
    assert_eq!(slug("ETM (λ = 30): §7.3, figures!"), "etm-λ--30-73-figures");
    assert_eq!(
        slug("snake_case and [a link](x.md)"),
        "snake_case-and-a-link"
    );
    let a = document_anchors("# Results\n## Results\n```\n# not a heading\n```\n## `run`\n");
    let mut a: Vec<_> = a.into_iter().collect();
    a.sort();
    assert_eq!(a, ["results", "results-1", "run"]);
}
