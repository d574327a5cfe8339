//! Sweeps beyond one machine: the runs of a sweep dealt into N deterministic shards, each run
//! separately (`hetsim sweep ... --shard I/N`, one job of a Slurm array for instance), and the
//! shards' CSV files merged back (`hetsim sweep merge`) into exactly the CSV, and the plot, that
//! one unsharded run writes.
//!
//! Shard I of N takes the runs whose position in [`Sweep::points`] is I − 1 modulo N (round
//! robin, so schedulers and sizes spread over the shards). Its CSV starts with one comment line
//! that says which shard it is and what the merge needs to put the rows back in order and to
//! draw the plot (`# hetsim sweep shard {json}`), then the sweep's CSV for its runs. The merge
//! checks that it has every shard of one sweep exactly once and interleaves their rows.

use serde::{Deserialize, Serialize};

use crate::sweep::{Row, Sweep, Vary};
use hetsim_core::error::InputError;

/// The comment that starts a shard's CSV.
const PREFIX: &str = "# hetsim sweep shard ";

/// Shard `index` (1-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which one, from 1.
    pub index: u32,
    /// How many.
    pub count: u32,
}

impl Shard {
    /// Parse `I/N` with 1 ≤ I ≤ N.
    pub fn parse(arg: &str) -> Result<Shard, InputError> {
        let bad = || {
            InputError::new(format!(
                "--shard {arg}: expected I/N with 1 <= I <= N, such as 2/8"
            ))
        };
        let (i, n) = arg.trim().split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }

    /// Whether the run at position `i` of the sweep is this shard's.
    pub fn owns(&self, i: usize) -> bool {
        i % self.count as usize == (self.index - 1) as usize
    }
}

/// What a shard's first line records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Header {
    shard: u32,
    of: u32,
    runs: usize,
    title: String,
    vary: Vec<(String, Vec<String>)>,
}

/// The CSV of shard `shard` of `sweep` (all its runs: `runs`), whose plot would be titled
/// `title`, from its rows in sweep order.
pub fn shard_csv(sweep: &Sweep, shard: Shard, runs: usize, title: &str, rows: &[Row]) -> String {
    let header = Header {
        shard: shard.index,
        of: shard.count,
        runs,
        title: title.to_string(),
        vary: sweep
            .vary
            .iter()
            .map(|v| (v.key.clone(), v.values.clone()))
            .collect(),
    };
    let json = serde_json::to_string(&header).expect("plain data serialises");
    format!("{PREFIX}{json}\n{}", crate::sweep::csv(sweep, rows))
}

/// The sweep's CSV, and what its plot needs, rebuilt from its shards.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The CSV one unsharded run writes.
    pub csv: String,
    /// The sweep as far as the plot needs it (its varied values).
    pub sweep: Sweep,
    /// The plot's title.
    pub title: String,
    /// The rows, in sweep order.
    pub rows: Vec<Row>,
}

/// The columns the message figures add when a run of the sweep was distributed.
const MESSAGE_COLUMNS: &str = ",messages,message_bytes";

/// Merge the shards `(name, text)` of one sweep, in any order.
pub fn merge(shards: &[(String, String)]) -> Result<Merged, InputError> {
    let mut parsed: Vec<(Header, &str, Vec<&str>)> = Vec::new();
    for (name, text) in shards {
        let err = |m: String| InputError::new(format!("{name}: {m}"));
        let mut lines = text.lines();
        let first = lines.next().unwrap_or("");
        let json = first.strip_prefix(PREFIX).ok_or_else(|| {
            err(format!(
                "line 1: expected `{PREFIX}{{...}}` (a CSV written by `hetsim sweep --shard`)"
            ))
        })?;
        let h: Header = serde_json::from_str(json).map_err(|e| err(format!("line 1: {e}")))?;
        let columns = lines.next().ok_or_else(|| err("no CSV header".into()))?;
        parsed.push((h, columns, lines.collect()));
    }
    let Some((first, _, _)) = parsed.first() else {
        return Err(InputError::new("sweep merge: no shard given"));
    };
    let (count, runs) = (first.of, first.runs);
    let mut seen = vec![false; count as usize];
    for ((h, _, rows), (name, _)) in parsed.iter().zip(shards) {
        let same =
            h.of == count && h.runs == runs && h.title == first.title && h.vary == first.vary;
        if !same {
            return Err(InputError::new(format!(
                "{name}: shard {}/{} of a sweep of {} runs, but {} is shard {}/{} of a sweep of \
                 {runs} runs (or of other varied values): the shards are not of one sweep",
                h.shard, h.of, h.runs, shards[0].0, first.shard, count
            )));
        }
        let slot = &mut seen[(h.shard - 1) as usize];
        if *slot {
            return Err(InputError::new(format!(
                "{name}: shard {}/{count} is given twice",
                h.shard
            )));
        }
        *slot = true;
        let expect = (0..runs)
            .filter(|i| i % count as usize == (h.shard - 1) as usize)
            .count();
        if rows.len() != expect {
            return Err(InputError::new(format!(
                "{name}: shard {}/{count} has {} rows, expected {expect} (an interrupted run?)",
                h.shard,
                rows.len()
            )));
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(InputError::new(format!(
            "sweep merge: shard {}/{count} is missing",
            missing + 1
        )));
    }
    // A shard with no distributed run lacks the message columns the others have: its runs sent
    // nothing (what the unsharded CSV writes for them).
    let columns = parsed
        .iter()
        .map(|(_, c, _)| *c)
        .max_by_key(|c| c.ends_with(MESSAGE_COLUMNS))
        .expect("at least one shard");
    let base = columns.strip_suffix(MESSAGE_COLUMNS).unwrap_or(columns);
    for ((_, c, _), (name, _)) in parsed.iter().zip(shards) {
        if *c != columns && *c != base {
            return Err(InputError::new(format!(
                "{name}: its columns differ from the other shards'"
            )));
        }
    }
    let mut by_index: Vec<Option<String>> = vec![None; runs];
    for (h, c, rows) in &parsed {
        let pad = *c != columns;
        for (k, row) in rows.iter().enumerate() {
            let i = (h.shard - 1) as usize + k * count as usize;
            by_index[i] = Some(if pad {
                format!("{row},0,0")
            } else {
                row.to_string()
            });
        }
    }
    let mut csv = format!("{columns}\n");
    for row in by_index.iter().flatten() {
        csv.push_str(row);
        csv.push('\n');
    }
    let vary: Vec<Vary> = first
        .vary
        .iter()
        .map(|(key, values)| Vary {
            key: key.clone(),
            values: values.clone(),
        })
        .collect();
    let rows = parse_rows(&csv, vary.len())?;
    Ok(Merged {
        csv,
        sweep: Sweep {
            scenario: first.title.clone().into(),
            scheds: Vec::new(),
            vary,
            seeds: Vec::new(),
            sets: Vec::new(),
        },
        title: first.title.clone(),
        rows,
    })
}

/// The rows of a sweep's CSV with `nvary` varied keys.
fn parse_rows(csv_text: &str, nvary: usize) -> Result<Vec<Row>, InputError> {
    let mut r = csv::Reader::from_reader(csv_text.as_bytes());
    let bad = |i: usize, what: &str| InputError::new(format!("merged CSV, row {}: {what}", i + 1));
    let mut rows = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| bad(i, &e.to_string()))?;
        let f = |j: usize| rec.get(j).ok_or_else(|| bad(i, "too few fields"));
        let num = |j: usize| -> Result<f64, InputError> {
            f(j)?.parse().map_err(|_| bad(i, "a field is not a number"))
        };
        let int = |j: usize| -> Result<u64, InputError> {
            f(j)?
                .parse()
                .map_err(|_| bad(i, "a field is not a whole number"))
        };
        let at = 2 + nvary;
        let messages = if rec.len() > at + 10 {
            Some((int(at + 10)?, num(at + 11)?))
        } else {
            None
        };
        rows.push(Row {
            sched: f(0)?.to_string(),
            seed: int(1)?,
            values: (0..nvary)
                .map(|k| f(2 + k).map(str::to_string))
                .collect::<Result<_, _>>()?,
            makespan_s: num(at)?,
            gflops: num(at + 1)?,
            gflops_starpu: match f(at + 2)? {
                "" => None,
                _ => Some(num(at + 2)?),
            },
            bytes_transferred: num(at + 3)?,
            fetch_bytes: num(at + 4)?,
            prefetch_bytes: num(at + 5)?,
            writeback_bytes: num(at + 6)?,
            evictions: int(at + 7)?,
            writebacks: int(at + 8)?,
            tasks: int(at + 9)?,
            messages,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(sched: &str, x: &str, gflops: f64) -> Row {
        Row {
            sched: sched.into(),
            seed: 1,
            values: vec![x.into()],
            makespan_s: 1.0 / gflops,
            gflops,
            gflops_starpu: None,
            bytes_transferred: 0.0,
            fetch_bytes: 0.0,
            prefetch_bytes: 0.0,
            writeback_bytes: 0.0,
            evictions: 0,
            writebacks: 0,
            tasks: 10,
            messages: None,
        }
    }

    fn sweep() -> Sweep {
        Sweep {
            scenario: "s.toml".into(),
            scheds: vec!["a".into(), "b".into()],
            vary: vec![Vary {
                key: "workload.n".into(),
                values: vec!["1".into(), "2".into(), "3".into()],
            }],
            seeds: Vec::new(),
            sets: Vec::new(),
        }
    }

    /// Six runs over three shards: shard 1 has runs 0 and 3, shard 2 runs 1 and 4, shard 3
    /// runs 2 and 5; merged in any order they give the unsharded CSV.
    #[test]
    fn shards_merge_back_into_the_sweep() {
        let sw = sweep();
        let all: Vec<Row> = ["1", "2", "3"]
            .iter()
            .flat_map(|x| [("a", *x), ("b", *x)])
            .enumerate()
            .map(|(i, (s, x))| row(s, x, 1.0 + i as f64))
            .collect();
        let whole = crate::sweep::csv(&sw, &all);
        let mut shards = Vec::new();
        for index in [3, 1, 2] {
            let shard = Shard { index, count: 3 };
            let rows: Vec<Row> = all
                .iter()
                .enumerate()
                .filter(|(i, _)| shard.owns(*i))
                .map(|(_, r)| r.clone())
                .collect();
            shards.push((
                format!("s{index}.csv"),
                shard_csv(&sw, shard, 6, "s", &rows),
            ));
        }
        let m = merge(&shards).unwrap();
        assert_eq!(m.csv, whole);
        assert_eq!(m.rows, all);
        // A missing or doubled shard is refused.
        let e = merge(&shards[..2]).unwrap_err();
        assert!(e.message.contains("shard 2/3 is missing"), "{}", e.message);
        let twice = [shards[0].clone(), shards[0].clone(), shards[1].clone()];
        let e = merge(&twice).unwrap_err();
        assert!(e.message.contains("given twice"), "{}", e.message);
    }

    #[test]
    fn shard_arguments_are_checked() {
        assert_eq!(Shard::parse("2/8").unwrap(), Shard { index: 2, count: 8 });
        for bad in ["0/4", "5/4", "4", "a/b", "1/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
