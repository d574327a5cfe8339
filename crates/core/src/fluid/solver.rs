//! Progressive filling over one connected component of links and flows.
//!
//! Rounds: the level of a link is remaining capacity / usage, where usage is Σ weight/penalty
//! over its unfixed flows (shared) or their maximum (fat pipe). Each round takes the lowest
//! level L among links and the lowest bound·penalty B among unfixed bounded flows. If B < L the
//! flows whose bound·penalty is B are fixed at their bound; otherwise every unfixed flow on a
//! link at level L is fixed at L / penalty. Fixing a flow removes its share from its links.
//! Each round fixes at least one flow, so there are at most as many rounds as flows, and a
//! round costs one scan of the links still in play plus the elements of the flows it fixes.

use super::{Flow, Link, Sharing};

/// Reused buffers: the component to solve and the solver's working lists.
#[derive(Debug, Default)]
pub(super) struct Scratch {
    /// Links of the component (filled by the caller).
    pub links: Vec<u32>,
    /// Flows of the component (filled by the caller).
    pub flows: Vec<u32>,
    light: Vec<u32>,
    bounded: Vec<u32>,
    saturated: Vec<u32>,
    /// Links whose usage must be summed afresh before the next round.
    dirty: Vec<u32>,
}

/// Compute `new_rate` for every flow of the component in `s.flows`.
pub(super) fn solve(links: &mut [Link], flows: &mut [Flow], s: &mut Scratch) {
    s.light.clear();
    s.bounded.clear();
    for &l in &s.links {
        let link = &mut links[l as usize];
        link.remaining = link.capacity_bytes_per_sec;
        link.usage = 0.0;
        link.unfixed = 0;
        link.dirty = false;
    }
    for &f in &s.flows {
        let flow = &mut flows[f as usize];
        flow.fixed = false;
        flow.new_rate = 0.0;
        for e in &flow.elems {
            let link = &mut links[e.link as usize];
            let u = e.weight / flow.penalty;
            link.usage = match link.sharing {
                Sharing::Shared => link.usage + u,
                Sharing::Fatpipe => link.usage.max(u),
            };
            link.unfixed += 1;
        }
        if flow.bound.is_finite() {
            s.bounded.push(f);
        }
    }
    for &l in &s.links {
        let link = &mut links[l as usize];
        link.usage_ref = link.usage;
    }
    s.light.extend(
        s.links
            .iter()
            .copied()
            .filter(|&l| links[l as usize].unfixed > 0),
    );
    s.bounded.sort_by(|&a, &b| {
        let (fa, fb) = (&flows[a as usize], &flows[b as usize]);
        (fa.bound * fa.penalty)
            .total_cmp(&(fb.bound * fb.penalty))
            .then(a.cmp(&b))
    });

    let mut next_bounded = 0;
    let mut unfixed = s.flows.len();
    while unfixed > 0 {
        // One pass: the lowest link level and the links at it.
        let mut level = f64::INFINITY;
        s.saturated.clear();
        for &l in &s.light {
            let x = level_of(&links[l as usize]);
            if x < level {
                level = x;
                s.saturated.clear();
            }
            if x == level {
                s.saturated.push(l);
            }
        }
        while next_bounded < s.bounded.len() && flows[s.bounded[next_bounded] as usize].fixed {
            next_bounded += 1;
        }
        let bound_level = s.bounded.get(next_bounded).map_or(f64::INFINITY, |&f| {
            let flow = &flows[f as usize];
            flow.bound * flow.penalty
        });
        if bound_level < level {
            // Flows reaching their own bound before any link saturates.
            while let Some(&f) = s.bounded.get(next_bounded) {
                let flow = &flows[f as usize];
                if !flow.fixed {
                    if flow.bound * flow.penalty != bound_level {
                        break;
                    }
                    let rate = flow.bound;
                    fix(f, rate, links, flows, &mut s.dirty);
                    unfixed -= 1;
                }
                next_bounded += 1;
            }
        } else {
            assert!(
                level.is_finite(),
                "max-min: {unfixed} flows left with no saturating link or bound"
            );
            for &l in &s.saturated {
                let mut i = 0;
                // Index loop: fixing a flow updates other links, never this list's length.
                while i < links[l as usize].flows.len() {
                    let f = links[l as usize].flows[i].0;
                    let flow = &flows[f as usize];
                    if !flow.fixed {
                        let rate = level.max(0.0) / flow.penalty;
                        fix(f, rate, links, flows, &mut s.dirty);
                        unfixed -= 1;
                    }
                    i += 1;
                }
            }
        }
        // Recompute the usage of the links marked in `fix` from the flows still unfixed.
        for &l in &s.dirty {
            let link = &mut links[l as usize];
            link.dirty = false;
            let shares = link
                .flows
                .iter()
                .filter(|&&(f, _)| !flows[f as usize].fixed)
                .map(|&(f, w)| w / flows[f as usize].penalty);
            link.usage = match link.sharing {
                Sharing::Shared => shares.sum(),
                Sharing::Fatpipe => shares.fold(0.0, f64::max),
            };
            link.usage_ref = link.usage;
        }
        s.dirty.clear();
        s.light.retain(|&l| links[l as usize].unfixed > 0);
    }
}

fn mark(link: &mut Link, id: u32, dirty: &mut Vec<u32>) {
    if !link.dirty {
        link.dirty = true;
        dirty.push(id);
    }
}

fn level_of(link: &Link) -> f64 {
    link.remaining / link.usage
}

fn fix(f: u32, rate: f64, links: &mut [Link], flows: &mut [Flow], dirty: &mut Vec<u32>) {
    let flow = &mut flows[f as usize];
    flow.fixed = true;
    flow.new_rate = rate;
    for e in &flow.elems {
        let link = &mut links[e.link as usize];
        link.unfixed -= 1;
        match link.sharing {
            Sharing::Shared => {
                link.remaining = (link.remaining - e.weight * rate).max(0.0);
                link.usage -= e.weight / flow.penalty;
                // Subtracting large weights from their sum loses the small ones left (SimGrid
                // mode mixes 1/latency weights of 1e7 with weights of 1): sum afresh then.
                if link.usage < 1e-6 * link.usage_ref {
                    mark(link, e.link, dirty);
                }
            }
            // A fat pipe's usage is a maximum: recompute it over the flows still unfixed.
            Sharing::Fatpipe => mark(link, e.link, dirty),
        }
    }
}
