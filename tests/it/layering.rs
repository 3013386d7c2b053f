//! The layer order of `src/` (see the "# Layout" of `src/lib.rs` and docs/architecture.md),
//! checked from the source text.
//!
//! What it checks, for every `.rs` file of the library (and, for circles only, of the
//! Python extension in `python/src/`):
//! - **No upward or sideways import**: every path a file names (`use` lines and paths in
//!   code that start at `crate::`, `super::` or `self::`, or at a module a `use` line
//!   brought in) is resolved, through re-exports, to the file that defines the item; a file
//!   of one top-level module may only name files of its own module or of a layer below it
//!   ([`LAYERS`]). Modules of one layer (`write` and `read`; `replicate`, `witness` and
//!   `export`) may not name each other.
//! - **No import circle between files**: the graph of those names has no cycle, also
//!   within one module. A name counts as a dependency on the file that defines it and on
//!   every file whose re-export it passes through (what a reader of the `use` line sees).
//! - **No name through another file's re-export**: a file names an item at the module
//!   that defines it, not through a `pub use` in another file (which hides a dependency:
//!   `write/commit_key.rs` once took a type through `write/stream/append.rs`, which imports
//!   it). The crate root's re-exports (the public API) are for `cli` only
//!   ([`ROOT_PATHS_ALLOWED`]).
//! - **No process-wide configuration**: no `static` holding mutable state (atomics, locks,
//!   cells, `static mut`, `thread_local!`) outside [`ALLOWED_STATICS`], the caches and pools
//!   that may be shared by the whole process.
//!
//! Not counted as a file's own dependency: `mod` declarations, and re-exports (`pub use`,
//! `pub(crate) use`): a re-export is a name; whoever uses the name depends on it (see
//! above). Code under `#[cfg(test)]` is not counted either.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The layers, lowest first: a file may name files of its own top-level module and of
/// modules in lower layers only.
const LAYERS: &[&[&str]] = &[
    &["base"],
    &["schema"],
    &["format"],
    &["publish"],
    &["parts"],
    &["history"],
    &["write", "read"],
    &["audit"],
    &["replicate", "witness", "export", "compact", "timestamp"],
    &["report"],
    &["cli"],
];

/// Top-level modules whose files may take names through the crate root's re-exports
/// (`crate::Error`): the front end, which sees the library as its users do.
const ROOT_PATHS_ALLOWED: &[&str] = &["cli"];

/// Whether `via` is a directory module's `mod.rs` re-exporting `defined` from one of its own
/// files to `user` outside that directory: the module's interface, not a sibling's
/// re-export (inside the directory, files name each other directly).
fn facade(via: &str, defined: &str, user: &str) -> bool {
    let Some(dir) = via.strip_suffix("mod.rs") else {
        return false;
    };
    !dir.is_empty() && defined.starts_with(dir) && !user.starts_with(dir)
}

/// The `static`s with mutable state that may stay process-wide: (file, name). Caches and
/// pools only; configuration travels with the store handle or the call.
const ALLOWED_STATICS: &[(&str, &str)] = &[
    // The contract's Arrow schema and the registry of contract versions (built once).
    ("schema/contract.rs", "SCHEMA"),
    ("schema/contract.rs", "REGISTRY"),
    // Freed part buffers kept for reuse.
    ("publish/recycle.rs", "FREE"),
    // The encoder threads.
    ("base/pool.rs", "POOL"),
    // A per-thread read buffer of the POSIX digest.
    ("publish/posix/mod.rs", "PIECE_BUF"),
    // "This store lists out of order" is warned once per process.
    ("publish/mod.rs", "WARNED"),
    // The Python extension's tokio runtime.
    ("runtime.rs", "RUNTIME"),
    // The Python package's defaults for stores opened later (`set_read_limits`): read
    // once when a store is opened, which then holds its own limits.
    ("limits.rs", "DEFAULTS"),
];

/// Words in a `static`'s type that make it mutable state.
const MUTABLE_STATE: &[&str] = &[
    "Atomic", "Mutex", "RwLock", "Cell", "OnceLock", "OnceCell", "LazyLock", "Lazy",
];

fn rank(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

/// One module of the tree: its file, its children, and the names it re-exports.
#[derive(Debug, Default)]
struct Module {
    file: Option<String>,
    children: BTreeSet<String>,
    /// name → the absolute path it re-exports (glob re-exports under `*`).
    reexports: HashMap<String, Vec<String>>,
    globs: Vec<Vec<String>>,
}

/// A parsed crate: modules by path, and the raw names each file uses.
#[derive(Debug, Default)]
struct Crate {
    modules: BTreeMap<Vec<String>, Module>,
    /// file → (absolute path named, how it was written) for every name counted.
    uses: BTreeMap<String, Vec<(Vec<String>, String)>>,
    /// file → the `static`s with mutable state it declares (name, how).
    statics: BTreeMap<String, Vec<(String, String)>>,
}

fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rs_files(dir: &Path, skip: &[&str]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if skip.iter().any(|s| rel == *s) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

/// The absolute paths a `use` tree names, with the local name each binds.
fn use_paths(tree: &syn::UseTree, prefix: Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut v = prefix;
            v.push(p.ident.to_string());
            use_paths(&p.tree, v, out);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            if name == "self" {
                let local = prefix.last().cloned().unwrap_or_default();
                out.push((prefix, local));
            } else {
                let mut v = prefix;
                v.push(name.clone());
                out.push((v, name));
            }
        }
        syn::UseTree::Rename(r) => {
            let mut v = prefix;
            let name = r.ident.to_string();
            if name != "self" {
                v.push(name);
            }
            out.push((v, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => out.push((prefix, "*".into())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix.clone(), out);
            }
        }
    }
}

/// `crate::a::b`, `super::a`, `self::a` made absolute from module `here`; `None` for
/// paths into other crates.
fn absolute(segs: &[String], here: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = here.to_vec();
    let mut i = 0;
    match segs.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            i = 1;
        }
        Some("self") => i = 1,
        Some("super") => {
            while segs.get(i).map(String::as_str) == Some("super") {
                base.pop()?;
                i += 1;
            }
        }
        _ => return None,
    }
    base.extend(segs[i..].iter().cloned());
    Some(base)
}

/// Collects the paths a file names in its code.
struct PathVisitor<'a> {
    here: &'a [String],
    /// Local names bound by `use` lines (and declared child modules) → absolute paths.
    aliases: &'a HashMap<String, Vec<String>>,
    found: Vec<(Vec<String>, String)>,
}

impl<'ast> Visit<'ast> for PathVisitor<'_> {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        let text = segs.join("::");
        let abs = absolute(&segs, self.here).or_else(|| {
            // A path through a name a `use` line bound (`chain::walk` after `use ...::chain`).
            (segs.len() > 1)
                .then(|| self.aliases.get(&segs[0]))
                .flatten()
                .map(|base| base.iter().chain(&segs[1..]).cloned().collect())
        });
        if let Some(abs) = abs {
            self.found.push((abs, text));
        }
        syn::visit::visit_path(self, p);
    }
    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}
    // `pub(super)`, `pub(in crate::x)`: a visibility, not a dependency.
    fn visit_visibility(&mut self, _: &'ast syn::Visibility) {}
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        if !is_cfg_test(&i.attrs) {
            syn::visit::visit_item_impl(self, i);
        }
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // Paths inside macro calls (`format!`, `matches!`, `tracing::info!`) are tokens:
        // parse what parses as expressions separated by commas.
        if let Ok(args) = m.parse_body_with(
            syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated,
        ) {
            for a in &args {
                self.visit_expr(a);
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// Finds `static`s holding mutable state, also inside functions and `thread_local!`.
#[derive(Default)]
struct StaticVisitor {
    found: Vec<(String, String)>,
}

impl StaticVisitor {
    fn check(&mut self, name: String, mutable: bool, ty: String) {
        if mutable {
            self.found.push((name, format!("static mut {ty}")));
        } else if MUTABLE_STATE.iter().any(|w| ty.contains(w)) {
            self.found.push((name, format!("static {ty}")));
        }
    }
}

impl<'ast> Visit<'ast> for StaticVisitor {
    fn visit_item_static(&mut self, s: &'ast syn::ItemStatic) {
        let ty = &s.ty;
        self.check(
            s.ident.to_string(),
            matches!(s.mutability, syn::StaticMutability::Mut(_)),
            type_words(ty),
        );
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        // `thread_local! { static NAME: T = ...; }`: per thread, but state all the same.
        if m.path
            .segments
            .last()
            .is_some_and(|s| s.ident == "thread_local")
        {
            let text = m.tokens.to_string();
            let words: Vec<&str> = text.split_whitespace().collect();
            for w in words.windows(2) {
                if w[0] == "static" {
                    let name = w[1].trim_end_matches(':').to_string();
                    self.found.push((name, "thread_local! static".to_string()));
                }
            }
        }
        syn::visit::visit_macro(self, m);
    }
}

/// The names in a type (`Mutex<Option<u32>>` → `Mutex Option u32`).
fn type_words(ty: &syn::Type) -> String {
    #[derive(Default)]
    struct Words(Vec<String>);
    impl<'ast> Visit<'ast> for Words {
        fn visit_path_segment(&mut self, s: &'ast syn::PathSegment) {
            self.0.push(s.ident.to_string());
            syn::visit::visit_path_segment(self, s);
        }
    }
    let mut w = Words::default();
    w.visit_type(ty);
    w.0.join(" ")
}

fn parse_crate(src: &Path, skip: &[&str]) -> Crate {
    let mut krate = Crate::default();
    for path in rs_files(src, skip) {
        let rel = path.strip_prefix(src).unwrap();
        let file = rel.to_string_lossy().replace('\\', "/");
        let here = module_path(rel);
        let text = std::fs::read_to_string(&path).unwrap();
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        // Walk the file's items, descending into inline modules (not `#[cfg(test)]` ones).
        let mut aliases: HashMap<String, Vec<String>> = HashMap::new();
        let mut names: Vec<(Vec<String>, String)> = Vec::new();
        let mut stack: Vec<(Vec<String>, &[syn::Item])> = vec![(here.clone(), &ast.items)];
        while let Some((at, items)) = stack.pop() {
            let m = krate.modules.entry(at.clone()).or_default();
            if at == here {
                m.file = Some(file.clone());
            }
            for item in items {
                match item {
                    syn::Item::Mod(md) if !is_cfg_test(&md.attrs) => {
                        let name = md.ident.to_string();
                        let mut child = at.clone();
                        child.push(name.clone());
                        krate
                            .modules
                            .entry(at.clone())
                            .or_default()
                            .children
                            .insert(name.clone());
                        aliases.insert(name, child.clone());
                        if let Some((_, inner)) = &md.content {
                            stack.push((child, inner));
                        }
                    }
                    syn::Item::Use(u) if !is_cfg_test(&u.attrs) => {
                        let mut paths = Vec::new();
                        use_paths(&u.tree, Vec::new(), &mut paths);
                        let reexport = !matches!(u.vis, syn::Visibility::Inherited);
                        for (p, local) in paths {
                            let Some(abs) = absolute(&p, &at).or_else(|| {
                                aliases
                                    .get(p.first()?)
                                    .map(|b| b.iter().chain(&p[1..]).cloned().collect::<Vec<_>>())
                            }) else {
                                continue;
                            };
                            let m = krate.modules.entry(at.clone()).or_default();
                            if reexport {
                                if local == "*" {
                                    m.globs.push(abs);
                                } else {
                                    m.reexports.insert(local, abs);
                                }
                            } else {
                                if local != "*" {
                                    aliases.insert(local, abs.clone());
                                }
                                names.push((abs, p.join("::")));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut v = PathVisitor {
            here: &here,
            aliases: &aliases,
            found: Vec::new(),
        };
        v.visit_file(&ast);
        names.extend(v.found);
        let mut statics = StaticVisitor::default();
        statics.visit_file(&ast);
        krate.statics.insert(file.clone(), statics.found);
        krate.uses.insert(file, names);
    }
    krate
}

/// Where a path leads: the file that defines the item, and the modules whose re-exports
/// it passes through on the way (outermost first).
#[derive(Debug, Default)]
struct Resolved {
    file: String,
    through: Vec<Vec<String>>,
}

impl Crate {
    /// The file that defines what `path` names, following re-exports.
    fn resolve(&self, path: &[String], depth: usize) -> Option<Resolved> {
        if depth > 16 {
            return None;
        }
        let mut at: Vec<String> = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let m = self.modules.get(&at)?;
            if m.children.contains(seg) {
                at.push(seg.clone());
                continue;
            }
            if let Some(target) = m.reexports.get(seg) {
                let full: Vec<String> = target.iter().chain(&path[i + 1..]).cloned().collect();
                let mut r = self.resolve(&full, depth + 1)?;
                r.through.insert(0, at);
                return Some(r);
            }
            for g in &m.globs {
                let full: Vec<String> = g.iter().chain(&path[i..]).cloned().collect();
                if let Some(mut r) = self.resolve(&full, depth + 1) {
                    if self.modules.get(g).and_then(|gm| gm.file.as_ref()) != Some(&r.file) {
                        r.through.insert(0, at);
                        return Some(r);
                    }
                }
            }
            return self.file_of(&at).map(|file| Resolved {
                file,
                through: Vec::new(),
            });
        }
        self.file_of(&at).map(|file| Resolved {
            file,
            through: Vec::new(),
        })
    }

    /// The file a module's items are in (an inline module's is its parent's file).
    fn file_of(&self, module: &[String]) -> Option<String> {
        let mut m = module.to_vec();
        loop {
            if let Some(f) = self.modules.get(&m).and_then(|x| x.file.clone()) {
                return Some(f);
            }
            m.pop()?;
        }
    }

    /// Edges between files: file → (file it names, an example of how). A name is an edge
    /// to the file that defines it and to each file whose re-export it passes through.
    fn edges(&self) -> BTreeMap<String, BTreeMap<String, String>> {
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, names) in &self.uses {
            let e = edges.entry(file.clone()).or_default();
            for (path, text) in names {
                let Some(r) = self.resolve(path, 0) else {
                    continue;
                };
                let via = r.through.iter().filter_map(|m| self.file_of(m));
                for to in via.chain(std::iter::once(r.file)) {
                    if &to != file {
                        e.entry(to).or_insert_with(|| text.clone());
                    }
                }
            }
        }
        edges
    }

    /// Names a file takes through another file's re-export (the crate root's excepted
    /// for [`ROOT_PATHS_ALLOWED`], and for every file when `root_paths` is true).
    fn reexported_names(&self, root_paths: bool) -> Vec<String> {
        let mut out = BTreeSet::new();
        for (file, names) in &self.uses {
            if file == "lib.rs" {
                continue;
            }
            let top = top_module(file);
            let root_ok = root_paths || ROOT_PATHS_ALLOWED.contains(&top.as_str());
            for (path, text) in names {
                let Some(r) = self.resolve(path, 0) else {
                    continue;
                };
                let Some(first) = r.through.first() else {
                    continue;
                };
                let via = self.file_of(first).unwrap_or_default();
                if &via == file || facade(&via, &r.file, file) {
                    continue;
                }
                if first.is_empty() {
                    if !root_ok {
                        out.insert(format!(
                            "{file} names `{text}` through the crate root: name the module that defines it ({})",
                            r.file
                        ));
                    }
                    continue;
                }
                out.insert(format!(
                    "{file} takes `{text}` through the re-export in {via}: name the module that defines it ({})",
                    r.file
                ));
            }
        }
        out.into_iter().collect()
    }

    /// `static`s with mutable state not in [`ALLOWED_STATICS`].
    fn global_state(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (file, found) in &self.statics {
            for (name, how) in found {
                if !ALLOWED_STATICS.contains(&(file.as_str(), name.as_str())) {
                    out.push(format!(
                        "{file} declares process-wide state `{name}` ({how}): pass it with the store handle or the call"
                    ));
                }
            }
        }
        out
    }
}

fn top_module(f: &str) -> String {
    f.split('/')
        .next()
        .unwrap_or(f)
        .trim_end_matches(".rs")
        .to_string()
}

/// Every cycle (strongly connected component of more than one file).
fn cycles(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<Vec<String>> {
    // Tarjan, iteratively.
    let nodes: Vec<&String> = edges.keys().collect();
    let idx_of: HashMap<&String, usize> = nodes.iter().enumerate().map(|(i, n)| (*n, i)).collect();
    let succ: Vec<Vec<usize>> = nodes
        .iter()
        .map(|n| {
            edges[*n]
                .keys()
                .filter_map(|t| idx_of.get(t).copied())
                .collect()
        })
        .collect();
    let n = nodes.len();
    let (mut index, mut low, mut on) = (vec![usize::MAX; n], vec![0; n], vec![false; n]);
    let (mut stack, mut next, mut out) = (Vec::new(), 0, Vec::new());
    for start in 0..n {
        if index[start] != usize::MAX {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(start, 0)];
        while let Some((v, i)) = work.pop() {
            if i == 0 {
                index[v] = next;
                low[v] = next;
                next += 1;
                stack.push(v);
                on[v] = true;
            }
            if let Some(&w) = succ[v].get(i) {
                work.push((v, i + 1));
                if index[w] == usize::MAX {
                    work.push((w, 0));
                } else if on[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut comp = Vec::new();
                while let Some(w) = stack.pop() {
                    on[w] = false;
                    comp.push(nodes[w].clone());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    out.push(comp);
                }
            }
        }
    }
    out
}

fn describe_cycle(c: &[String], edges: &BTreeMap<String, BTreeMap<String, String>>) -> String {
    let mut lines = vec![format!("import circle between {}:", c.join(", "))];
    for a in c {
        for (b, how) in &edges[a] {
            if c.contains(b) {
                lines.push(format!("  {a} → {b} (`{how}`)"));
            }
        }
    }
    lines.join("\n")
}

/// Imports that go up the layer order, or sideways between modules of one layer.
fn layer_violations(edges: &BTreeMap<String, BTreeMap<String, String>>) -> Vec<String> {
    let top = top_module;
    let mut out = Vec::new();
    for (a, to) in edges {
        let ta = top(a);
        if ta == "lib" {
            continue;
        }
        for (b, how) in to {
            let tb = top(b);
            if ta == tb || tb == "lib" {
                continue;
            }
            match (rank(&ta), rank(&tb)) {
                (Some(ra), Some(rb)) if rb < ra => {}
                (Some(_), Some(_)) => out.push(format!(
                    "{a} ({ta}) names {b} ({tb}, not below it) through `{how}`"
                )),
                _ => out.push(format!(
                    "{a} → {b} through `{how}`: a top-level module not in LAYERS ({ta} or {tb}); add it to the layer order"
                )),
            }
        }
    }
    out
}

fn check(src: &Path, skip: &[&str], layered: bool) -> Vec<String> {
    let krate = parse_crate(src, skip);
    let edges = krate.edges();
    let mut problems: Vec<String> = cycles(&edges)
        .iter()
        .map(|c| describe_cycle(c, &edges))
        .collect();
    if layered {
        problems.extend(layer_violations(&edges));
        problems.extend(krate.reexported_names(false));
    }
    problems.extend(krate.global_state());
    problems
}

#[test]
fn library_layers_have_no_upward_import_and_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let problems = check(&src, &["bin"], true);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn python_extension_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/src");
    let problems = check(&src, &[], false);
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

/// The checker itself finds a circle, an upward import, a sideways import and a circle
/// through a re-export (so the two tests above can fail).
#[test]
fn the_check_finds_planted_circles_and_upward_imports() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let files = [
        (
            "lib.rs",
            "mod base; mod schema; mod write; mod read;\npub use base::Thing;",
        ),
        ("base/mod.rs", "mod a; mod b;\npub use a::Thing;"),
        (
            "base/a.rs",
            "pub struct Thing;\npub fn f() { crate::base::b::g(); }",
        ),
        (
            "base/b.rs",
            "use super::a::Thing;\npub fn g() -> Option<Thing> { None }",
        ),
        ("schema/mod.rs", "mod c;"),
        ("schema/c.rs", "use crate::write::w::W;\npub fn h(_: W) {}"),
        ("write/mod.rs", "pub mod w;"),
        ("write/w.rs", "pub struct W;\nfn r() { crate::read::R; }"),
        (
            "read/mod.rs",
            "pub struct R;\nfn x() -> crate::Thing { crate::Thing }",
        ),
    ];
    for (f, text) in files {
        let p = src.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let problems = check(src, &[], true);
    let all = problems.join("\n");
    assert!(
        all.contains("import circle between base/a.rs, base/b.rs"),
        "{all}"
    );
    assert!(
        all.contains("schema/c.rs (schema) names write/w.rs (write, not below it)"),
        "{all}"
    );
    assert!(
        all.contains("write/w.rs (write) names read/mod.rs (read, not below it)"),
        "{all}"
    );
    // `crate::Thing` resolves through two re-exports to base/a.rs: not upward (read is
    // above base), but a root path below `cli`.
    assert!(!all.contains("read/mod.rs (read) names"), "{all}");
    assert!(
        all.contains("read/mod.rs names `crate::Thing` through the crate root"),
        "{all}"
    );
    assert_eq!(problems.len(), 4, "{all}");
}

/// Python's extension takes nothing through `lineage_store::internal` (what it needs is
/// in the curated root).
#[test]
fn python_extension_uses_only_the_public_api() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("python/src");
    let uses: Vec<String> = rs_files(&src, &[])
        .iter()
        .filter(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .contains("lineage_store::internal")
        })
        .map(|p| p.display().to_string())
        .collect();
    assert!(uses.is_empty(), "{uses:?}");
}

/// The checker finds a circle hidden behind a re-export, a name taken through another
/// file's re-export, a root path below `cli`, and process-wide state (so the test above
/// can fail on them).
#[test]
fn the_check_finds_planted_reexport_circles_and_globals() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let files = [
        (
            "lib.rs",
            "mod base; mod write; mod cli;\npub use base::conf::LIMIT;",
        ),
        ("base/mod.rs", "pub mod conf;"),
        (
            "base/conf.rs",
            "pub static LIMIT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);\n\
             pub static mut RAW: u64 = 0;\n\
             pub static NAMES: &[&str] = &[];\n\
             fn f() {\n\
                 static SET: std::sync::Mutex<Option<u64>> = std::sync::Mutex::new(None);\n\
                 thread_local! { static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) }; }\n\
             }",
        ),
        ("write/mod.rs", "pub mod key;\npub mod stream;"),
        (
            "write/key.rs",
            "pub fn k(_: &crate::write::stream::append::Summary) { crate::LIMIT; }",
        ),
        ("write/stream/mod.rs", "pub mod append;\npub mod digest;"),
        ("write/stream/digest.rs", "pub struct Summary;"),
        (
            "write/stream/append.rs",
            "pub(crate) use crate::write::stream::digest::Summary;\nuse crate::write::key;\npub fn a() { key::k(&Summary); }",
        ),
        ("cli/mod.rs", "fn c() { crate::LIMIT; }"),
    ];
    for (f, text) in files {
        let p = src.join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let problems = check(src, &[], true);
    let all = problems.join("\n");
    assert!(
        all.contains("import circle between write/key.rs, write/stream/append.rs"),
        "{all}"
    );
    assert!(
        all.contains("write/key.rs takes `crate::write::stream::append::Summary` through the re-export in write/stream/append.rs"),
        "{all}"
    );
    for name in ["LIMIT", "RAW", "SET", "BUF"] {
        assert!(
            all.contains(&format!(
                "base/conf.rs declares process-wide state `{name}`"
            )),
            "{name}: {all}"
        );
    }
    assert!(!all.contains("`NAMES`"), "{all}");
    let root = parse_crate(src, &[]).reexported_names(false).join("\n");
    assert!(
        root.contains("write/key.rs names `crate::LIMIT` through the crate root"),
        "{root}"
    );
    assert!(!root.contains("cli/mod.rs"), "{root}");
}
