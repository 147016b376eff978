//! Static checks on a parsed grammar. Each returns spanned errors; warnings are collected
//! separately and emitted as `#[deprecated]` uses (the stable way for a proc macro to warn).

use std::collections::{HashMap, HashSet};

use proc_macro2::Span;

use crate::grammar::{BUILTINS, Expr, ExprKind, Grammar, Sp};

/// A warning to emit at `span`.
pub struct Warning {
    pub span: Span,
    pub name: String,
    pub message: String,
}

/// The result of analysis: errors, warnings, and the trigger words of the trigger rules.
pub struct Analysis {
    pub errors: Vec<syn::Error>,
    pub warnings: Vec<Warning>,
    /// The literals the trigger rules start with, in rule order, without repeats.
    pub triggers: Vec<String>,
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
    let names: Vec<String> = g.rules.iter().map(|r| r.name.to_string()).collect();
    for e in &exprs {
        check_expr(e, &index, &names, Scope::default(), &mut errors);
    }
    for e in &exprs {
        check_tags(e, g, &mut errors);
    }
    if !errors.is_empty() {
        return Analysis { errors, warnings, triggers: Vec::new() };
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

    // Trigger rules: a lazy grammar starts at their trigger word, so they must have one.
    let mut triggers: Vec<String> = Vec::new();
    for (i, r) in g.rules.iter().enumerate().filter(|(_, r)| r.trigger) {
        if nullable[i] {
            errors.push(syn::Error::new(
                r.name.span(),
                format!("trigger rule `{}` can match empty input: a lazy grammar would start anywhere; begin it with its trigger word (a literal)", r.name),
            ));
            continue;
        }
        let mut words = Vec::new();
        let mut seen = HashSet::from([i]);
        match first_literals(&r.expr, g, &index, &nullable, &mut seen, &mut words) {
            Ok(()) => {
                for w in words {
                    if !triggers.contains(&w) {
                        triggers.push(w);
                    }
                }
            }
            Err(span) => errors.push(span.error(format!(
                "trigger rule `{}` can start here with something other than a literal: a trigger rule begins with its trigger word (a literal), which lazy grammars wait for",
                r.name
            ))),
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
    Analysis { errors, warnings, triggers }
}

/// Where tool/argument parameters may be used.
#[derive(Clone, Copy, Default)]
struct Scope {
    in_tool: bool,
    in_arg: bool,
}

fn check_expr(e: &Expr, index: &HashMap<String, usize>, names: &[String], scope: Scope, errors: &mut Vec<syn::Error>) {
    match &e.kind {
        ExprKind::Ref(name) if !index.contains_key(&name.to_string()) => {
            let name = name.to_string();
            let candidates = names.iter().map(String::as_str).chain(BUILTINS.iter().copied().filter(|b| !matches!(*b, "root" | "rule" | "trigger")));
            let hint = did_you_mean(&name, candidates, "");
            errors.push(syn::Error::new(e.span.0, format!("undefined rule `{name}`{hint}")));
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
        check_expr(c, index, names, inner, errors);
    }
}

/// ``; did you mean `x`?`` for the candidate closest to `name`, if one is close (an edit
/// distance of at most a third of its length, at least 1); else nothing.
fn did_you_mean<'a>(name: &str, candidates: impl Iterator<Item = &'a str>, prefix: &str) -> String {
    let limit = (name.chars().count() / 3).max(1);
    let best = candidates.map(|c| (edit_distance(name, c), c)).filter(|&(d, _)| d <= limit).min_by_key(|&(d, _)| d);
    best.map_or_else(String::new, |(_, c)| format!("; did you mean `{prefix}{c}`?"))
}

/// Levenshtein distance, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diag + usize::from(ca != cb));
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Tags: each is a chat tag (`peg_runtime::chat::tags`, or a recovery tag) or declared in
/// `custom_tags`, and no chat tag sits inside a text tag (the mapper reads a text tag's span
/// as a whole and never looks inside). Rules are followed into, each once per text tag.
fn check_tags(e: &Expr, g: &Grammar, errors: &mut Vec<syn::Error>) {
    use peg_runtime::chat::{RecoveryKind, tags};
    /// `inside`: the text tag around `e` and the first rule followed into from it.
    fn walk(e: &Expr, g: &Grammar, inside: Option<(&str, Option<String>)>, seen: &mut HashSet<String>, errors: &mut Vec<syn::Error>) {
        let mut inside = inside;
        match &e.kind {
            ExprKind::Tag(tag, _) => {
                let chat = tags::ALL.contains(&tag.as_str()) || RecoveryKind::of_tag(tag).is_some();
                if !chat && !g.custom_tags.contains(tag) {
                    // Only the outermost walk reports unknown tags; inside a rule they are
                    // reported where the rule is defined.
                    if inside.is_none() {
                        let hint = did_you_mean(tag, tags::ALL.iter().copied(), "#");
                        let declared = if syn::parse_str::<syn::Ident>(tag).is_ok() { tag.clone() } else { format!("{tag:?}") };
                        errors.push(e.span.error(format!(
                            "`#{tag}` is not a chat tag{hint} The chat mapper reads only the tags of `peg_runtime::chat::tags` and `recovered.*`; declare a tag of your own with `custom_tags = [{declared}];`"
                        )));
                    }
                } else if let (true, Some((outer, via))) = (chat, &inside) {
                    let via = via.as_ref().map_or_else(String::new, |r| format!(" (through rule `{r}`)"));
                    errors.push(e.span.error(format!(
                        "`#{tag}` inside `#{outer}`{via} is never read: the chat mapper takes the text of `#{outer}` as a whole; move the tag out of it"
                    )));
                    return;
                }
                if inside.is_none() {
                    inside = tags::TEXT.iter().copied().find(|t| t == tag).map(|t| (t, None));
                }
            }
            ExprKind::Ref(name) => {
                if let Some((outer, via)) = inside {
                    let outer: &str = outer;
                    if seen.insert(name.to_string())
                        && let Some(r) = g.rules.iter().find(|r| r.name == *name)
                    {
                        let via = via.or_else(|| Some(r.name.to_string()));
                        walk(&r.expr, g, Some((outer, via)), seen, errors);
                    }
                }
                return;
            }
            _ => {}
        }
        for c in e.children() {
            walk(c, g, inside.clone(), seen, errors);
        }
    }
    walk(e, g, None, &mut HashSet::new(), errors);
}

/// The literals a match of `e` can start with, into `out`; `Err` with the span of something
/// else it can start with. `seen`: rules already followed.
fn first_literals(
    e: &Expr,
    g: &Grammar,
    index: &HashMap<String, usize>,
    nullable: &[bool],
    seen: &mut HashSet<usize>,
    out: &mut Vec<String>,
) -> Result<(), Sp> {
    match &e.kind {
        ExprKind::Literal(text) => out.push(text.clone()),
        ExprKind::JsonMember(key, _) => out.push(serde_json::to_string(key).unwrap_or_default()),
        ExprKind::Seq(items) => {
            for c in items {
                first_literals(c, g, index, nullable, seen, out)?;
                if !is_nullable(c, index, nullable) {
                    break;
                }
            }
        }
        ExprKind::Choice(alts) => {
            for c in alts {
                first_literals(c, g, index, nullable, seen, out)?;
            }
        }
        ExprKind::Ref(name) => {
            if let Some(&i) = index.get(&name.to_string())
                && seen.insert(i)
            {
                first_literals(&g.rules[i].expr, g, index, nullable, seen, out)?;
            }
        }
        // Matches nothing, or only what the items after it start.
        ExprKind::Eps | ExprKind::Start | ExprKind::End | ExprKind::Space | ExprKind::Peek(_) | ExprKind::Negate(_) => {}
        ExprKind::Repeat { expr, .. }
        | ExprKind::Tag(_, expr)
        | ExprKind::Atomic(expr)
        | ExprKind::Schema { expr, .. }
        | ExprKind::Gbnf(expr, _)
        | ExprKind::ToolSchema(expr)
        | ExprKind::ArgSchema(expr)
        | ExprKind::EachTool(expr)
        | ExprKind::EachArg(expr) => first_literals(expr, g, index, nullable, seen, out)?,
        _ => return Err(e.span),
    }
    Ok(())
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
    if let ExprKind::Ref(name) = &e.kind
        && let Some(&i) = index.get(&name.to_string())
    {
        out.push(i);
    }
    for c in e.children() {
        collect_refs(c, index, out);
    }
}
