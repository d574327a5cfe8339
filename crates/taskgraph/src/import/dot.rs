//! StarPU's `dag.dot` (Graphviz), as `starpu_fxt_tool` writes it: a node `task_<JobId>` per
//! task with the task's name as `label`, an edge per dependency. It holds no data, sizes,
//! priorities or durations: each task becomes a computation of codelet `label` with no
//! buffers, and the machine needs a model of that name for size 0 (or the tasks fix durations
//! another way). Nodes labelled `_starpu_…`, and StarPU's unlabelled `task_<n>` nodes, are
//! StarPU's internal tasks: contracted, as in `tasks.rec`.
//!
//! The reader takes the subset of the DOT language such files use, and any graph written the
//! same way: `digraph`, `subgraph`s (flattened), node and edge statements with attribute
//! lists, graph attributes, comments.

use std::path::Path;

use hetsim_core::InputError;

use super::records::{Job, Records, TaskRecord};
use super::{ImportOptions, Parts, read_text};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Id(String),
    Arrow,
    Open(char),
    Close(char),
    Eq,
    Sep,
}

fn tokens(text: &str) -> Result<Vec<(Tok, u32)>, InputError> {
    let mut out = Vec::new();
    let mut it = text.char_indices().peekable();
    let mut line = 1u32;
    let mut at_line_start = true;
    while let Some((_, c)) = it.next() {
        match c {
            '\n' => {
                line += 1;
                at_line_start = true;
                continue;
            }
            c if c.is_whitespace() => continue,
            '#' if at_line_start => while it.next_if(|&(_, c)| c != '\n').is_some() {},
            '/' if it.peek().map(|p| p.1) == Some('/') => {
                while it.next_if(|&(_, c)| c != '\n').is_some() {}
            }
            '/' if it.peek().map(|p| p.1) == Some('*') => {
                it.next();
                let mut prev = ' ';
                loop {
                    let Some((_, c)) = it.next() else {
                        return Err(InputError::new("unterminated comment").at_line(line as usize));
                    };
                    if c == '\n' {
                        line += 1;
                    }
                    if prev == '*' && c == '/' {
                        break;
                    }
                    prev = c;
                }
            }
            '-' if matches!(it.peek().map(|p| p.1), Some('>') | Some('-')) => {
                it.next();
                out.push((Tok::Arrow, line));
            }
            '[' | '{' => out.push((Tok::Open(c), line)),
            ']' | '}' => out.push((Tok::Close(c), line)),
            '=' => out.push((Tok::Eq, line)),
            ';' | ',' => out.push((Tok::Sep, line)),
            '"' => {
                let start = line;
                let mut s = String::new();
                loop {
                    let Some((_, c)) = it.next() else {
                        return Err(InputError::new("unterminated string (truncated file?)")
                            .at_line(start as usize));
                    };
                    match c {
                        '"' => break,
                        '\\' => match it.next() {
                            Some((_, '"')) => s.push('"'),
                            Some((_, '\n')) => line += 1,
                            Some((_, o)) => {
                                s.push('\\');
                                s.push(o);
                            }
                            None => {}
                        },
                        '\n' => {
                            line += 1;
                            s.push(c);
                        }
                        _ => s.push(c),
                    }
                }
                out.push((Tok::Id(s), start));
            }
            c if c.is_alphanumeric() || c == '_' || c == '.' || c == '-' => {
                let mut s = String::from(c);
                while let Some((_, c)) =
                    it.next_if(|&(_, c)| c.is_alphanumeric() || c == '_' || c == '.')
                {
                    s.push(c);
                }
                out.push((Tok::Id(s), line));
            }
            other => {
                return Err(InputError::new(format!("unexpected character `{other}`"))
                    .at_line(line as usize));
            }
        }
        at_line_start = false;
    }
    Ok(out)
}

/// What the file says about one node.
#[derive(Debug, Default)]
struct Node {
    label: Option<String>,
    line: u32,
    preds: Vec<Job>,
}

pub(crate) fn read(path: &Path, options: &ImportOptions) -> Result<Parts, InputError> {
    let text = read_text(path)?;
    let toks = tokens(&text)?;
    let mut rec = Records::default();
    let mut nodes: Vec<Node> = Vec::new();
    let node = |rec: &mut Records, nodes: &mut Vec<Node>, id: &str, line: u32| -> Job {
        let j = rec.job(id, line);
        if j as usize == nodes.len() {
            nodes.push(Node {
                line,
                ..Node::default()
            });
        }
        j
    };
    let mut i = 0;
    let at = |line: u32, m: String| InputError::new(m).at_line(line as usize);
    let end_line = toks.last().map_or(1, |t| t.1);
    let mut depth = 0u32;
    let mut seen_graph = false;
    while i < toks.len() {
        let (tok, line) = (&toks[i].0, toks[i].1);
        match tok {
            Tok::Id(k) if !seen_graph && matches!(k.as_str(), "digraph" | "strict" | "graph") => {
                i += 1;
                // Skip the graph's name up to its `{`.
                while i < toks.len() && toks[i].0 != Tok::Open('{') {
                    i += 1;
                }
            }
            Tok::Id(k) if k == "subgraph" => {
                i += 1;
                if matches!(toks.get(i), Some((Tok::Id(_), _))) {
                    i += 1;
                }
            }
            Tok::Open('{') => {
                seen_graph = true;
                depth += 1;
                i += 1;
            }
            Tok::Close('}') => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| at(line, "unmatched `}`".into()))?;
                i += 1;
            }
            Tok::Sep => i += 1,
            Tok::Id(k) if matches!(k.as_str(), "node" | "edge" | "graph") => {
                i += 1;
                i = skip_attrs(&toks, i)?;
            }
            Tok::Id(first) => {
                if matches!(toks.get(i + 1), Some((Tok::Eq, _))) {
                    // A graph attribute `key = value`.
                    i += 3;
                    continue;
                }
                let mut chain = vec![node(&mut rec, &mut nodes, first, line)];
                i += 1;
                while let Some((Tok::Arrow, l)) = toks.get(i) {
                    match toks.get(i + 1) {
                        Some((Tok::Id(next), nl)) => {
                            chain.push(node(&mut rec, &mut nodes, next, *nl));
                            i += 2;
                        }
                        _ => {
                            return Err(at(
                                *l,
                                "an edge `->` without a node after it (subgraphs as edge ends \
                                 are not supported)"
                                    .into(),
                            ));
                        }
                    }
                }
                let attrs_start = i;
                i = skip_attrs(&toks, i)?;
                if chain.len() == 1 {
                    let n = &mut nodes[chain[0] as usize];
                    if let Some(label) = attr(&toks[attrs_start..i], "label") {
                        n.label = Some(label);
                        n.line = line;
                    }
                } else {
                    for w in chain.windows(2) {
                        nodes[w[1] as usize].preds.push(w[0]);
                    }
                }
            }
            other => return Err(at(line, format!("unexpected `{other:?}`"))),
        }
    }
    if depth != 0 || !seen_graph {
        return Err(at(
            end_line,
            "the graph is not closed by `}` (truncated file?)".into(),
        ));
    }
    // StarPU names nodes `task_<JobId>`: submission follows the job ids; otherwise, the order
    // nodes first appear in.
    let job_number = |j: usize| -> Option<u64> {
        match rec.job_name(j as Job) {
            super::Label::Text(t) => t.strip_prefix("task_")?.parse().ok(),
            super::Label::Number(_) => None,
        }
    };
    let numbered = (0..nodes.len()).all(|j| job_number(j).is_some());
    let keys: Vec<u64> = (0..nodes.len())
        .map(|j| {
            if numbered {
                job_number(j).unwrap_or(0)
            } else {
                j as u64
            }
        })
        .collect();
    for (j, n) in nodes.into_iter().enumerate() {
        let deps_start = rec.deps.len() as u32;
        rec.deps.extend(&n.preds);
        let internal = match &n.label {
            Some(l) => l.starts_with("_starpu_"),
            None => numbered,
        };
        if internal {
            rec.add_internal(j as Job, deps_start, n.line)?;
            continue;
        }
        let name = match n.label {
            Some(l) => l,
            None => rec.job_name(j as Job).to_string(),
        };
        let codelet = rec.codelet(&name)?;
        let buffers = rec.buffers.len() as u32;
        rec.add_task(TaskRecord {
            job: j as Job,
            order: (1, keys[j]),
            codelet,
            priority: 0,
            flops: 0.0,
            worker: None,
            recorded: None,
            line: n.line,
            buffers: buffers..buffers,
            deps: deps_start..rec.deps.len() as u32,
        })?;
    }
    rec.assemble(&options.gpu_synchronous)
}

/// Skip an attribute list `[ … ]` at `i`, if there is one.
fn skip_attrs(toks: &[(Tok, u32)], mut i: usize) -> Result<usize, InputError> {
    while let Some((Tok::Open('['), line)) = toks.get(i) {
        let line = *line;
        i += 1;
        loop {
            match toks.get(i) {
                Some((Tok::Close(']'), _)) => {
                    i += 1;
                    break;
                }
                Some(_) => i += 1,
                None => {
                    return Err(
                        InputError::new("an attribute list `[` is not closed by `]`")
                            .at_line(line as usize),
                    );
                }
            }
        }
    }
    Ok(i)
}

/// The value of attribute `key` in tokens `[ k = v, … ]`.
fn attr(toks: &[(Tok, u32)], key: &str) -> Option<String> {
    toks.windows(3)
        .find_map(|w| match (&w[0].0, &w[1].0, &w[2].0) {
            (Tok::Id(k), Tok::Eq, Tok::Id(v)) if k == key => Some(v.clone()),
            _ => None,
        })
}
