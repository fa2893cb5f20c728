//! The app's modules (`src/app`) form a layered graph without import cycles
//! (docs/architecture.md, "Layers of the app").
//!
//! Reads the source files (no Bevy needed: `cargo test --no-default-features --test
//! app_architecture` checks it too), parses each with `syn` and takes as a dependency
//! of module `m` on module `x` every path that names a sibling: `use super::x::…`,
//! `use super::{x, …}`, `use crate::app::x::…` and such paths anywhere in the code
//! (types, expressions, attributes, macro arguments), counting the `super`s of nested
//! inline modules (`mod tests { use super::super::x; }`). Comments, doc links and
//! strings are not code and do not count. `src/app/mod.rs`, the composition root,
//! declares and composes every module, so a module that names one of the root's items
//! (`super::asset_dir`, `use super::*`) depends on every module and closes a cycle.
//! The test fails with every cycle found (Tarjan's strongly connected components) and
//! the paths that make its edges.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use syn::visit::Visit;

/// The composition root (`src/app/mod.rs`) as a node of the graph.
const ROOT: &str = "mod";

/// Module → (module it depends on → the paths that make the edge).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Where a path that starts `super::…` or `crate::app::…` lands, seen from a file of
/// `src/app` at inline-module depth `depth`: `Some(name)` when it names something at
/// the app level (`name` is the first segment after it, or `*`).
fn app_level(segments: &[String], depth: usize) -> Option<&str> {
    let supers = segments.iter().take_while(|s| *s == "super").count();
    if supers > 0 {
        // depth + 1 supers reach `app` from inside `depth` inline modules.
        return (supers == depth + 1)
            .then(|| segments.get(supers).map(String::as_str))
            .flatten();
    }
    match segments {
        [c, a, rest @ ..] if c == "crate" && a == "app" => {
            Some(rest.first().map_or("*", String::as_str))
        }
        _ => None,
    }
}

/// Collects the app-level names one file's paths reach.
struct Collector {
    /// Inline-module depth of the item being visited.
    depth: usize,
    /// (name reached, the path as written).
    found: Vec<(String, String)>,
}

impl Collector {
    fn note(&mut self, segments: &[String]) {
        if let Some(name) = app_level(segments, self.depth) {
            self.found.push((name.to_string(), segments.join("::")));
        }
    }

    /// Every leaf of a `use` tree, as the full list of segments.
    fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                Self::use_paths(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut v = prefix.clone();
                v.push(n.ident.to_string());
                out.push(v);
            }
            syn::UseTree::Rename(r) => {
                let mut v = prefix.clone();
                v.push(r.ident.to_string());
                out.push(v);
            }
            syn::UseTree::Glob(_) => {
                let mut v = prefix.clone();
                v.push("*".into());
                out.push(v);
            }
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    Self::use_paths(t, prefix, out);
                }
            }
        }
    }

    /// Paths inside a macro's tokens (`info!("{}", super::x::y())`): runs of
    /// `ident :: ident :: …`.
    fn token_paths(&mut self, tokens: proc_macro2::TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        for tt in tokens {
            match tt {
                proc_macro2::TokenTree::Ident(i) => {
                    if colons != 2 && !run.is_empty() {
                        self.note(&std::mem::take(&mut run));
                    }
                    run.push(i.to_string());
                    colons = 0;
                }
                proc_macro2::TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() => {
                    colons += 1;
                }
                proc_macro2::TokenTree::Group(g) => {
                    self.note(&std::mem::take(&mut run));
                    colons = 0;
                    self.token_paths(g.stream());
                }
                _ => {
                    self.note(&std::mem::take(&mut run));
                    colons = 0;
                }
            }
        }
        self.note(&run);
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        self.depth += 1;
        syn::visit::visit_item_mod(self, m);
        self.depth -= 1;
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        Collector::use_paths(&u.tree, &mut Vec::new(), &mut paths);
        for p in paths {
            self.note(&p);
        }
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.note(&segments);
        syn::visit::visit_path(self, p);
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        self.token_paths(m.tokens.clone());
        syn::visit::visit_macro(self, m);
    }
}

/// The app-level names reached from one file's source, with the paths that reach them.
fn references(source: &str) -> Result<Vec<(String, String)>, String> {
    let file = syn::parse_file(source).map_err(|e| e.to_string())?;
    let mut c = Collector {
        depth: 0,
        found: Vec::new(),
    };
    c.visit_file(&file);
    Ok(c.found)
}

/// The module graph of the files `(module name, source)`; the root (`mod`) depends on
/// every module.
fn module_graph(files: &[(String, String)]) -> Result<Graph, String> {
    let modules: BTreeSet<&str> = files.iter().map(|(m, _)| m.as_str()).collect();
    let mut graph = Graph::new();
    for (m, source) in files {
        let edges = graph.entry(m.clone()).or_default();
        if m == ROOT {
            for &x in modules.iter().filter(|&&x| x != ROOT) {
                edges
                    .entry(x.to_string())
                    .or_default()
                    .insert(format!("mod {x}"));
            }
            continue;
        }
        for (name, path) in references(source).map_err(|e| format!("{m}: {e}"))? {
            let target = if modules.contains(name.as_str()) {
                name
            } else {
                // An item of the root, or `use super::*`.
                ROOT.to_string()
            };
            if target != *m {
                edges.entry(target).or_default().insert(path);
            }
        }
    }
    Ok(graph)
}

/// The strongly connected components with more than one module (each a cycle), by
/// Tarjan's algorithm.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        out: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.out.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.out
}

/// A readable account of the cycles: each component and the edges inside it.
fn describe(graph: &Graph, cycles: &[Vec<String>]) -> String {
    let mut s = String::new();
    for c in cycles {
        s += &format!("cycle among {{{}}}:\n", c.join(", "));
        for m in c {
            for (x, paths) in &graph[m] {
                if c.contains(x) && x != m {
                    let shown: Vec<&str> = paths.iter().map(String::as_str).take(4).collect();
                    s += &format!("  {m} -> {x}: {}\n", shown.join(", "));
                }
            }
        }
    }
    s
}

/// `src/app`'s files as (module, source): `x.rs` and `x/mod.rs` are module `x`, the
/// directory's `mod.rs` is the root.
fn app_files() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/app");
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("src/app") {
        let path = entry.expect("src/app entry").path();
        let (name, file) = if path.is_dir() {
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                path.join("mod.rs"),
            )
        } else if path.extension().is_some_and(|e| e == "rs") {
            let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
            let name = if stem == "mod" {
                ROOT.to_string()
            } else {
                stem
            };
            (name, path.clone())
        } else {
            continue;
        };
        let source =
            std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        files.push((name, source));
    }
    files.sort();
    files
}

/// The shared vocabulary of the plugins (system sets, messages, launch options, the
/// simulation's state, the view's types): these import only each other.
const VOCABULARY: [&str; 5] = ["launch", "messages", "sets", "sim_state", "view"];

/// Each module's layer: 0 for a module that imports none of the others, else one more
/// than the highest layer it imports (the graph must be acyclic).
fn layers(graph: &Graph) -> BTreeMap<String, usize> {
    fn layer(m: &str, graph: &Graph, memo: &mut BTreeMap<String, usize>) -> usize {
        if let Some(&l) = memo.get(m) {
            return l;
        }
        let l = graph
            .get(m)
            .into_iter()
            .flat_map(|e| e.keys())
            .map(|x| layer(x, graph, memo) + 1)
            .max()
            .unwrap_or(0);
        memo.insert(m.to_string(), l);
        l
    }
    let mut memo = BTreeMap::new();
    for m in graph.keys() {
        layer(m, graph, &mut memo);
    }
    memo
}

#[test]
fn app_modules_have_no_import_cycle() {
    let files = app_files();
    assert!(
        files.len() >= 10 && files.iter().any(|(m, _)| m == ROOT),
        "src/app not found or incomplete: {:?}",
        files.iter().map(|(m, _)| m).collect::<Vec<_>>()
    );
    let graph = module_graph(&files).unwrap();
    // The checker sees the real imports: the simulation plugin is imported by others.
    assert!(
        graph.values().any(|e| e.contains_key("simulation")),
        "no module depends on `simulation`: the checker misses the imports"
    );
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "src/app has import cycles (see docs/architecture.md, \"Layers of the app\"):\n{}",
        describe(&graph, &found)
    );

    // The vocabulary imports no plugin.
    for m in VOCABULARY {
        let edges = graph
            .get(m)
            .unwrap_or_else(|| panic!("no module src/app/{m}.rs"));
        for (x, paths) in edges {
            assert!(
                VOCABULARY.contains(&x.as_str()),
                "the vocabulary module {m} imports the module {x} ({paths:?}): move what it \
                 needs into the vocabulary (docs/architecture.md, \"Layers of the app\")"
            );
        }
    }

    // The layers, lowest first (`-- --nocapture` shows them).
    let layer = layers(&graph);
    let mut by_layer: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
    for (m, l) in &layer {
        by_layer.entry(*l).or_default().push(m);
    }
    for (l, ms) in &by_layer {
        println!("layer {l}: {}", ms.join(", "));
    }
    for (m, edges) in &graph {
        let to: Vec<&str> = edges.keys().map(String::as_str).collect();
        println!("{m} -> {}", to.join(", "));
    }
}

fn graph_of(files: &[(&str, &str)]) -> Graph {
    let files: Vec<(String, String)> = files
        .iter()
        .map(|(m, s)| (m.to_string(), s.to_string()))
        .collect();
    module_graph(&files).unwrap()
}

/// The checker finds a cycle made of each kind of path, and none in a layered graph.
#[test]
fn checker_finds_cycles_in_a_small_graph() {
    let root = ("mod", "pub mod a; pub mod b; pub mod c;");
    // a → b by `use`, b → c by a path in an expression, c → a by a type in a signature.
    let cyclic = graph_of(&[
        root,
        ("a", "use super::b::Thing;"),
        ("b", "fn f() { super::c::g(); }"),
        ("c", "fn h(_: crate::app::a::A) {}"),
    ]);
    assert_eq!(cycles(&cyclic), vec![vec!["a", "b", "c"]]);
    let text = describe(&cyclic, &cycles(&cyclic));
    assert!(text.contains("c -> a: crate::app::a::A"), "{text}");

    // Grouped imports, system ordering against a function, a macro argument, and a
    // path in a nested test module (two `super`s) all make edges.
    for b in [
        "use super::{a::X, c};",
        "fn p(app: &mut App) { app.add_systems(Update, s.after(super::a::f)); }",
        "fn q() { info!(\"{}\", super::a::NAME); }",
        "mod tests { use super::super::a::X; }",
    ] {
        let g = graph_of(&[root, ("a", "use super::b::B;"), ("b", b), ("c", "")]);
        assert_eq!(cycles(&g), vec![vec!["a", "b"]], "{b}");
    }

    // Using an item of the root (or glob-importing it) closes a cycle through the root.
    let g = graph_of(&[
        root,
        ("a", "fn f() { super::asset_dir(); }"),
        ("b", ""),
        ("c", ""),
    ]);
    assert_eq!(cycles(&g), vec![vec!["a", "mod"]]);

    // Not edges: comments and doc links, strings, `super` inside a test module (the
    // file itself), paths outside the app.
    let layered = graph_of(&[
        root,
        ("a", ""),
        (
            "b",
            "//! See [`super::c::C`].\n/// [`super::c`]\nfn f() { let _ = \"super::c::C\"; }\n\
             mod tests { use super::*; use super::f; }\nuse crate::world::World;\n\
             use super::a::A;",
        ),
        ("c", "use super::a::A; use super::b::B;"),
    ]);
    assert!(cycles(&layered).is_empty(), "{layered:?}");
    assert_eq!(
        layered["c"].keys().collect::<Vec<_>>(),
        vec!["a", "b"],
        "{layered:?}"
    );
    assert_eq!(layered["b"].keys().collect::<Vec<_>>(), vec!["a"]);
}

// ---------------------------------------------------------------------------------------
// Commands in, a snapshot out; modes as States (docs/architecture.md, "Commands and
// modes").

/// Whether `attrs` hold `#[derive(.., name, ..)]`.
fn derives(attrs: &[syn::Attribute], name: &str) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|paths| {
                paths
                    .iter()
                    .any(|p| p.segments.last().is_some_and(|s| s.ident == name))
            })
    })
}

/// Names of fields that poll a request: `request`, `…_request(s)`, `…_requested`, and the
/// flags the app polled before its requests became messages.
fn is_request_flag(field: &str) -> bool {
    const POLLED: [&str; 9] = [
        "seek",
        "steps_now",
        "pending_steps",
        "lesson_start",
        "reframe",
        "frame_all",
        "frame_selection",
        "follow_selection",
        "spawn_now",
    ];
    let words: Vec<&str> = field.split('_').collect();
    words
        .iter()
        .any(|w| matches!(*w, "request" | "requests" | "requested"))
        || POLLED.contains(&field)
}

/// Whether `ty` is `bool` or `Option<…>` (what a polled flag is).
fn is_flag_type(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "bool" || s.ident == "Option"),
        _ => false,
    }
}

/// What one file breaks of the rules: (module, item) pairs.
#[derive(Default, Debug)]
struct Findings {
    /// Message types declared.
    messages: Vec<String>,
    /// `Resource.field` flags that poll a request.
    flags: Vec<String>,
    /// Systems (outside the simulation plugin) that may change the snapshot.
    snapshot_writers: Vec<String>,
    /// Identifiers of the old mirror diff.
    mirror: Vec<String>,
    /// `States` enums and their variants.
    states: Vec<(String, Vec<String>)>,
    /// Schedules `OnEnter(X::…)` / `OnExit(X::…)` used, as "OnEnter(X)".
    transitions: Vec<String>,
}

/// Whether generic arguments name the type `Simulation` (`<Simulation>`, `<'w, Simulation>`).
fn names_simulation<'a>(args: impl IntoIterator<Item = &'a syn::GenericArgument>) -> bool {
    args.into_iter().any(|a| {
        matches!(a, syn::GenericArgument::Type(syn::Type::Path(p))
            if p.path.segments.last().is_some_and(|s| s.ident == "Simulation"))
    })
}

struct RuleVisitor<'a> {
    module: &'a str,
    found: &'a mut Findings,
}

impl<'ast> Visit<'ast> for RuleVisitor<'_> {
    fn visit_item_struct(&mut self, s: &'ast syn::ItemStruct) {
        if derives(&s.attrs, "Message") {
            self.found.messages.push(s.ident.to_string());
        }
        if derives(&s.attrs, "Resource") {
            for f in &s.fields {
                if let Some(name) = &f.ident
                    && is_request_flag(&name.to_string())
                    && is_flag_type(&f.ty)
                {
                    self.found
                        .flags
                        .push(format!("{}: {}.{name}", self.module, s.ident));
                }
            }
        }
        syn::visit::visit_item_struct(self, s);
    }

    fn visit_item_enum(&mut self, e: &'ast syn::ItemEnum) {
        if derives(&e.attrs, "Message") {
            self.found.messages.push(e.ident.to_string());
        }
        if derives(&e.attrs, "States") {
            self.found.states.push((
                e.ident.to_string(),
                e.variants.iter().map(|v| v.ident.to_string()).collect(),
            ));
        }
        syn::visit::visit_item_enum(self, e);
    }

    fn visit_ident(&mut self, ident: &'ast proc_macro2::Ident) {
        if ident == "Published" || ident == "apply_edits" {
            self.found.mirror.push(format!("{}: {ident}", self.module));
        }
    }

    fn visit_path_segment(&mut self, seg: &'ast syn::PathSegment) {
        let name = seg.ident.to_string();
        // `ResMut<Simulation>`, `ResMut<'w, Simulation>`, `resource_mut::<Simulation>`.
        if (name == "ResMut" || name == "resource_mut" || name == "get_resource_mut")
            && let syn::PathArguments::AngleBracketed(args) = &seg.arguments
            && names_simulation(&args.args)
        {
            self.found
                .snapshot_writers
                .push(format!("{}: {name}<Simulation>", self.module));
        }
        syn::visit::visit_path_segment(self, seg);
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if m.method == "resource_mut"
            && let Some(t) = &m.turbofish
            && names_simulation(&t.args)
        {
            self.found
                .snapshot_writers
                .push(format!("{}: resource_mut::<Simulation>", self.module));
        }
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let syn::Expr::Path(f) = &*c.func
            && let Some(last) = f.path.segments.last()
            && (last.ident == "OnEnter" || last.ident == "OnExit")
            && let Some(syn::Expr::Path(arg)) = c.args.first()
            && arg.path.segments.len() >= 2
        {
            let state = &arg.path.segments[arg.path.segments.len() - 2].ident;
            self.found
                .transitions
                .push(format!("{}({state})", last.ident));
        }
        syn::visit::visit_expr_call(self, c);
    }
}

fn findings(files: &[(String, String)]) -> Findings {
    let mut found = Findings::default();
    for (module, source) in files {
        let file = syn::parse_file(source).unwrap_or_else(|e| panic!("src/app/{module}: {e}"));
        let mut v = RuleVisitor {
            module,
            found: &mut found,
        };
        v.visit_file(&file);
    }
    found
}

/// The modules that own the world: the simulation plugin (the physics thread publishes
/// the snapshot) and the offline recorder of `impulse-lab record`, which runs its own
/// world without a physics thread (`record::record`, no simulation plugin).
const SNAPSHOT_OWNERS: [&str; 2] = ["simulation", "record"];

fn check_commands_and_modes(found: &Findings) -> Vec<String> {
    let mut broken = Vec::new();
    if !found.messages.is_empty() {
        for f in &found.flags {
            broken.push(format!(
                "{f} polls a request as a flag field: the app has messages for requests \
                 ({}); write one instead",
                found.messages.join(", ")
            ));
        }
    }
    for w in &found.snapshot_writers {
        if !SNAPSHOT_OWNERS
            .iter()
            .any(|m| w.starts_with(&format!("{m}: ")))
        {
            broken.push(format!(
                "{w}: the Simulation resource is the physics thread's read-only snapshot; \
                 change the world with a SimCommand"
            ));
        }
    }
    for m in &found.mirror {
        broken.push(format!("{m}: the mirror diff is gone, use SimCommand"));
    }
    let modes = found.states.iter().find(|(name, _)| name == "LabMode");
    match modes {
        None => broken.push("no `LabMode` States enum in src/app".into()),
        Some((_, variants)) => {
            for v in ["Sandbox", "Compare", "Lesson"] {
                if !variants.iter().any(|x| x == v) {
                    broken.push(format!("LabMode has no variant {v}"));
                }
            }
        }
    }
    for t in ["OnEnter(LabMode)", "OnExit(LabMode)"] {
        if !found.transitions.iter().any(|x| x == t) {
            broken.push(format!(
                "no system runs in {t}: modes set up on entering them"
            ));
        }
    }
    for needed in ["SimCommand", "ViewRequest", "CaptureRequest", "OpenLesson"] {
        if !found.messages.iter().any(|m| m == needed) {
            broken.push(format!("no message {needed}"));
        }
    }
    broken
}

#[test]
fn the_world_changes_by_commands_and_modes_are_states() {
    let files = app_files();
    let found = findings(&files);
    // The checker sees the real code.
    assert!(found.messages.len() >= 5, "{found:?}");
    assert!(
        found
            .snapshot_writers
            .iter()
            .any(|w| w.starts_with("simulation: ")),
        "the checker does not see the simulation plugin's ResMut<Simulation>: {found:?}"
    );
    let broken = check_commands_and_modes(&found);
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

/// The rules catch each way of breaking them.
#[test]
fn command_checker_catches_flags_writers_and_missing_modes() {
    let good = (
        "messages".to_string(),
        "#[derive(Message)] pub enum SimCommand { Reset } #[derive(Message)] pub enum ViewRequest {} \
         #[derive(Message)] pub enum CaptureRequest {} #[derive(Message)] pub struct OpenLesson(String);\
         #[derive(States, Default)] pub enum LabMode { #[default] Sandbox, Compare, Lesson }\
         fn p(app: &mut App) { app.add_systems(OnEnter(LabMode::Compare), f).add_systems(OnExit(LabMode::Lesson), g); }"
            .to_string(),
    );
    assert!(check_commands_and_modes(&findings(std::slice::from_ref(&good))).is_empty());
    for (bad, expect) in [
        (
            "#[derive(Resource)] struct SimControl { reset_requested: bool }",
            "SimControl.reset_requested",
        ),
        (
            "#[derive(Resource, Default)] pub struct CompareMode { pub request: Option<Vec<u8>> }",
            "CompareMode.request",
        ),
        (
            "#[derive(Debug, Resource)] struct TimelineView { seek: Option<u64> }",
            "TimelineView.seek",
        ),
        (
            "#[derive(Resource)] struct Requests { frame_all: bool }",
            "Requests.frame_all",
        ),
        ("fn s(mut sim: ResMut<Simulation>) {}", "ResMut<Simulation>"),
        (
            "fn s(p: P<'_>) {} struct P<'w> { sim: ResMut<'w, Simulation> }",
            "ResMut<Simulation>",
        ),
        (
            "fn s(app: &mut App) { app.world_mut().resource_mut::<Simulation>().error = None; }",
            "resource_mut::<Simulation>",
        ),
        ("struct Published { run: u64 }", "Published"),
    ] {
        let files = [good.clone(), ("ui".to_string(), bad.to_string())];
        let broken = check_commands_and_modes(&findings(&files));
        assert!(
            broken.iter().any(|b| b.contains(expect)),
            "not caught: {bad}\n{broken:?}"
        );
    }
    // A field that is state, not a request, passes.
    let files = [
        good.clone(),
        (
            "ui".to_string(),
            "#[derive(Resource)] struct M { record: Option<u8>, paused: bool, requests_sent: u64 }"
                .to_string(),
        ),
    ];
    assert!(check_commands_and_modes(&findings(&files)).is_empty());
    // No modes: caught.
    let files = [(
        "messages".to_string(),
        "#[derive(Message)] pub enum SimCommand {}".to_string(),
    )];
    let broken = check_commands_and_modes(&findings(&files));
    assert!(broken.iter().any(|b| b.contains("LabMode")), "{broken:?}");
    assert!(
        broken.iter().any(|b| b.contains("OnEnter(LabMode)")),
        "{broken:?}"
    );
}
