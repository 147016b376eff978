//! Static checks on a parsed grammar. Each returns spanned errors; warnings are collected
//! separately and emitted as `#[deprecated]` uses (the stable way for a proc macro to warn).

use std::collections::{HashMap, HashSet};

use proc_macro2::Span;

use crate::grammar::{Expr, ExprKind, Grammar, Sp, BUILTINS};

/// A warning to emit at `span`.
pub struct Warning {
    pub span: Span,
    pub name: String,
    pub message: String,
}

/// The result of analysis: rule index by name, errors, warnings.
pub struct Analysis {
    pub errors: Vec<syn::Error>,
    pub warnings: Vec<Warning>,
}

/// Runs every check; errors are in source order per check.
pub fn analyze(g: &Grammar) -> Analysis {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();

    // Rule table: duplicates and reserved names.
    let mut index: HashMap<String, usize> = HashMap::new();
    for (i, r) in g.rules.iter().enumerate() {
        let name = r.name.to_string();
        if BUILTINS.contains(&name.as_str()) {
            errors.push(syn::Error::new(r.name.span(), format!("`{name}` is a builtin and cannot name a rule")));
            continue;
        }
        if index.contains_key(&name) {
            errors.push(syn::Error::new(r.name.span(), format!("duplicate rule `{name}`: it is already defined above")));
            continue;
        }
        index.insert(name, i);
    }

    // Root.
    match g.root.len() {
        0 => errors.push(syn::Error::new(g.name.span(), format!("grammar `{}` has no root: add `root = expr;`", g.name))),
        1 => {}
        _ => {
            for (span, _) in &g.root[1..] {
                errors.push(syn::Error::new(*span, "duplicate root: a grammar has exactly one `root = expr;`"));
            }
        }
    }

    // Per-expression checks: undefined rules, char classes, `until`, schemas, parameter scopes.
    let mut exprs: Vec<&Expr> = g.root.iter().map(|(_, e)| e).collect();
    exprs.extend(g.rules.iter().map(|r| &r.expr));
    for e in &exprs {
        check_expr(e, &index, Scope::default(), &mut errors);
    }
    if !errors.is_empty() {
        return Analysis { errors, warnings };
    }

    // Left recursion.
    let nullable = nullable_rules(g, &index);
    let first_refs: Vec<Vec<(String, Span)>> = g
        .rules
        .iter()
        .map(|r| {
            let mut out = Vec::new();
            left_refs(&r.expr, &index, &nullable, &mut out);
            out
        })
        .collect();
    let mut reported: HashSet<usize> = HashSet::new();
    for start in 0..g.rules.len() {
        let mut path = vec![start];
        let mut on_path = vec![false; g.rules.len()];
        on_path[start] = true;
        if let Some((cycle, span)) = find_cycle(start, &first_refs, &index, &mut path, &mut on_path) {
            // Report each cycle once, at the rule with the smallest index in it.
            let min = *cycle.iter().min().expect("non-empty cycle");
            if min == start && reported.insert(min) {
                let names: Vec<String> = cycle.iter().chain(std::iter::once(&cycle[0])).map(|&i| g.rules[i].name.to_string()).collect();
                errors.push(syn::Error::new(span, format!("left recursive rules create an infinite loop: {}", names.join(" -> "))));
            }
        }
    }
    // The root itself may call a left recursive chain only through rules, which are checked
    // above; a root expression cannot refer to itself.

    // Lookahead inside trigger rules (and everything they reach), outside `schema`/`gbnf`.
    for r in g.rules.iter().filter(|r| r.trigger) {
        let mut seen = HashSet::new();
        let mut path = vec![r.name.to_string()];
        if let Some((span, path)) = find_lookahead(&r.expr, g, &index, &mut seen, &mut path) {
            errors.push(span.error(
                format!(
                    "lookahead inside trigger rule `{}` has no gbnf equivalent (path: {}); wrap it in `gbnf(expr, \"...\")` or `schema(...)`, or move it out of the trigger rule",
                    r.name,
                    path.join(" -> ")
                ),
            ));
        }
    }

    // Unreachable rules (warning): not reachable from the root.
    if errors.is_empty() {
        let mut reach: HashSet<usize> = HashSet::new();
        let mut stack: Vec<usize> = Vec::new();
        for (_, e) in &g.root {
            collect_refs(e, &index, &mut stack);
        }
        while let Some(i) = stack.pop() {
            if reach.insert(i) {
                collect_refs(&g.rules[i].expr, &index, &mut stack);
            }
        }
        for (i, r) in g.rules.iter().enumerate() {
            if !reach.contains(&i) {
                warnings.push(Warning { span: r.name.span(), name: r.name.to_string(), message: format!("rule `{}` is unreachable from the root", r.name) });
            }
        }
    }
    Analysis { errors, warnings }
}

/// Where tool/argument parameters may be used.
#[derive(Clone, Copy, Default)]
struct Scope {
    in_tool: bool,
    in_arg: bool,
}

fn check_expr(e: &Expr, index: &HashMap<String, usize>, scope: Scope, errors: &mut Vec<syn::Error>) {
    match &e.kind {
        ExprKind::Ref(name) if !index.contains_key(&name.to_string()) => {
            errors.push(syn::Error::new(name.span(), format!("undefined rule `{name}`")));
        }
        ExprKind::Chars { class, .. } => {
            if let Err(err) = peg_runtime::CharClass::parse(&format!("[{class}]")) {
                let detail = err.detail().to_string();
                errors.push(e.span.error(format!("invalid character class: {detail}")));
            }
        }
        ExprKind::Until(delims) => {
            for d in delims {
                if d.value().is_empty() {
                    errors.push(syn::Error::new(d.span(), "empty `until` delimiter: it would match nothing, write a non-empty string"));
                }
            }
        }
        ExprKind::Literal(s) if s.is_empty() => {
            errors.push(e.span.error("empty literal: use `eps` to match nothing"));
        }
        ExprKind::Schema { schema, .. } => {
            if let Err(err) = serde_json::from_str::<serde_json::Value>(&schema.value()) {
                errors.push(syn::Error::new(schema.span(), format!("invalid json schema: {err}")));
            }
        }
        ExprKind::EachTool(_) if scope.in_tool => {
            errors.push(e.span.error("`each_tool` cannot be nested inside another `each_tool`"));
        }
        ExprKind::EachArg(_) if scope.in_arg => {
            errors.push(e.span.error("`each_arg` cannot be nested inside another `each_arg`"));
        }
        ExprKind::ToolName | ExprKind::ToolSchema(_) | ExprKind::EachArg(_) if !scope.in_tool => {
            errors.push(e.span.error("this tool parameter is only available inside `each_tool(...)`"));
        }
        ExprKind::ArgName | ExprKind::ArgSchema(_) | ExprKind::IfStringArg(..) if !scope.in_arg => {
            errors.push(e.span.error("this argument parameter is only available inside `each_arg(...)`"));
        }
        _ => {}
    }
    let inner = match &e.kind {
        ExprKind::EachTool(_) => Scope { in_tool: true, ..scope },
        ExprKind::EachArg(_) => Scope { in_arg: true, ..scope },
        _ => scope,
    };
    for c in e.children() {
        check_expr(c, index, inner, errors);
    }
}

/// Fixpoint: which rules can succeed without consuming input.
fn nullable_rules(g: &Grammar, index: &HashMap<String, usize>) -> Vec<bool> {
    let mut nullable = vec![false; g.rules.len()];
    loop {
        let mut changed = false;
        for (i, r) in g.rules.iter().enumerate() {
            if !nullable[i] && is_nullable(&r.expr, index, &nullable) {
                nullable[i] = true;
                changed = true;
            }
        }
        if !changed {
            return nullable;
        }
    }
}

fn is_nullable(e: &Expr, index: &HashMap<String, usize>, rules: &[bool]) -> bool {
    match &e.kind {
        ExprKind::Eps | ExprKind::Start | ExprKind::End | ExprKind::Rest | ExprKind::Space => true,
        ExprKind::Until(_) | ExprKind::JsonStringContent | ExprKind::Peek(_) | ExprKind::Negate(_) => true,
        ExprKind::Any | ExprKind::Marker | ExprKind::Json(_) | ExprKind::Python(_) => false,
        ExprKind::ToolName | ExprKind::ArgName => false,
        ExprKind::Literal(s) => s.is_empty(),
        ExprKind::Chars { min, .. } => *min == 0,
        ExprKind::Seq(v) => v.iter().all(|c| is_nullable(c, index, rules)),
        ExprKind::Choice(v) => v.iter().any(|c| is_nullable(c, index, rules)),
        ExprKind::IfStringArg(a, b) => is_nullable(a, index, rules) || is_nullable(b, index, rules),
        ExprKind::Repeat { expr, min, .. } => *min == 0 || is_nullable(expr, index, rules),
        ExprKind::JsonMember(..) => false,
        ExprKind::Ref(name) => index.get(&name.to_string()).is_some_and(|&i| rules[i]),
        _ => e.children().iter().all(|c| is_nullable(c, index, rules)),
    }
}

/// Rules that `e` may call at its own start position.
fn left_refs(e: &Expr, index: &HashMap<String, usize>, nullable: &[bool], out: &mut Vec<(String, Span)>) {
    match &e.kind {
        ExprKind::Ref(name) => out.push((name.to_string(), name.span())),
        ExprKind::Seq(v) => {
            for c in v {
                left_refs(c, index, nullable, out);
                if !is_nullable(c, index, nullable) {
                    break;
                }
            }
        }
        ExprKind::JsonMember(..) => {} // starts with the key literal
        _ => {
            for c in e.children() {
                left_refs(c, index, nullable, out);
            }
        }
    }
}

/// Depth-first search for a cycle back to `path[0]`; returns the cycle and the span of the
/// reference that closes it.
fn find_cycle(
    at: usize,
    first_refs: &[Vec<(String, Span)>],
    index: &HashMap<String, usize>,
    path: &mut Vec<usize>,
    on_path: &mut Vec<bool>,
) -> Option<(Vec<usize>, Span)> {
    for (name, span) in &first_refs[at] {
        let Some(&next) = index.get(name) else { continue };
        if next == path[0] {
            return Some((path.clone(), *span));
        }
        if on_path[next] {
            continue;
        }
        on_path[next] = true;
        path.push(next);
        if let Some(found) = find_cycle(next, first_refs, index, path, on_path) {
            return Some(found);
        }
        path.pop();
    }
    None
}

fn find_lookahead(e: &Expr, g: &Grammar, index: &HashMap<String, usize>, seen: &mut HashSet<usize>, path: &mut Vec<String>) -> Option<(Sp, Vec<String>)> {
    match &e.kind {
        ExprKind::Peek(_) | ExprKind::Negate(_) => Some((e.span, path.clone())),
        // These emit their own grammar instead of their child's.
        ExprKind::Schema { .. } | ExprKind::Gbnf(..) | ExprKind::ToolSchema(_) | ExprKind::ArgSchema(_) => None,
        ExprKind::Ref(name) => {
            let &i = index.get(&name.to_string())?;
            if !seen.insert(i) {
                return None;
            }
            path.push(name.to_string());
            let found = find_lookahead(&g.rules[i].expr, g, index, seen, path);
            path.pop();
            found
        }
        _ => e.children().into_iter().find_map(|c| find_lookahead(c, g, index, seen, path)),
    }
}

fn collect_refs(e: &Expr, index: &HashMap<String, usize>, out: &mut Vec<usize>) {
    if let ExprKind::Ref(name) = &e.kind {
        if let Some(&i) = index.get(&name.to_string()) {
            out.push(i);
        }
    }
    for c in e.children() {
        collect_refs(c, index, out);
    }
}
