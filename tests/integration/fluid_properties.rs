//! Properties of the incremental max-min solver on random topologies and flow sets:
//! capacities are respected, the allocation is max-min optimal (every active flow is held by a
//! saturated link on which it has the largest rate, or by its own bound), bytes are conserved,
//! no flow ends before its latency and its best-case transfer time, and runs are reproducible.

use hetsim::fluid::{FlowId, FlowPhase, FlowSpec, FluidNetwork, LinkId, Sharing, SharingMode};
use proptest::prelude::*;

const REL: f64 = 1e-9;

#[derive(Debug, Clone)]
struct LinkIn {
    capacity: f64,
    latency: f64,
    sharing: Sharing,
}

#[derive(Debug, Clone)]
struct FlowIn {
    route: Vec<usize>,
    bytes: f64,
    start: f64,
    bound: Option<f64>,
}

#[derive(Debug, Clone)]
struct Scenario {
    mode: SharingMode,
    links: Vec<LinkIn>,
    flows: Vec<FlowIn>,
}

fn link_strategy() -> impl Strategy<Value = LinkIn> {
    (
        prop_oneof![
            3 => 1e8f64..1e10,
            1 => Just(1e9),
            1 => Just(2.5e9),
        ],
        prop_oneof![2 => Just(0.0), 3 => 0.0f64..1e-4],
        prop_oneof![4 => Just(Sharing::Shared), 1 => Just(Sharing::Fatpipe)],
    )
        .prop_map(|(capacity, latency, sharing)| LinkIn {
            capacity,
            latency,
            sharing,
        })
}

fn scenario_strategy() -> impl Strategy<Value = Scenario> {
    (
        prop_oneof![Just(SharingMode::Plain), Just(SharingMode::SimGrid)],
        prop::collection::vec(link_strategy(), 1..7),
    )
        .prop_flat_map(|(mode, links)| {
            let n = links.len();
            let flow = (
                prop::sample::subsequence((0..n).collect::<Vec<_>>(), 1..=n.min(4)).prop_shuffle(),
                prop_oneof![3 => 1e3f64..1e8, 1 => Just(1e6)],
                prop_oneof![2 => 0.0f64..0.02, 1 => Just(0.0), 1 => Just(0.005)],
                prop::option::weighted(0.25, 1e8f64..5e9),
            )
                .prop_map(|(route, bytes, start, bound)| FlowIn {
                    route,
                    bytes,
                    start,
                    bound,
                });
            (Just(mode), Just(links), prop::collection::vec(flow, 1..25))
        })
        .prop_map(|(mode, links, flows)| Scenario { mode, links, flows })
}

/// Drive the network step by step, checking the invariants after every event. Returns each
/// flow's finish date.
fn simulate(s: &Scenario) -> Result<Vec<f64>, TestCaseError> {
    let mut net = FluidNetwork::new(s.mode);
    let ids: Vec<LinkId> = s
        .links
        .iter()
        .map(|l| net.add_link(l.capacity, l.latency, l.sharing))
        .collect();
    let mut order: Vec<usize> = (0..s.flows.len()).collect();
    order.sort_by(|&a, &b| {
        s.flows[a]
            .start
            .total_cmp(&s.flows[b].start)
            .then(a.cmp(&b))
    });
    let mut next_start = 0;

    let mut live: Vec<(FlowId, usize)> = Vec::new();
    let mut sent = vec![0.0f64; s.flows.len()];
    let mut finish = vec![f64::NAN; s.flows.len()];
    let mut last_t = 0.0f64;
    let mut done = Vec::new();
    loop {
        let ts = order.get(next_start).map(|&i| s.flows[i].start);
        let tn = net.next_event_time();
        match (ts, tn) {
            (None, None) => break,
            (Some(t), n) if n.is_none_or(|n| t <= n) => {
                let i = order[next_start];
                next_start += 1;
                let f = &s.flows[i];
                let mut spec =
                    FlowSpec::new(f.route.iter().map(|&l| ids[l]).collect::<Vec<_>>(), f.bytes);
                if let Some(b) = f.bound {
                    spec = spec.with_bound(b);
                }
                live.push((net.start_flow(t, spec), i));
            }
            (_, Some(t)) => {
                // Bytes sent since the previous event, at the rates it set.
                for &(id, i) in &live {
                    sent[i] += net.flow_rate_bytes_per_sec(id) * (t - last_t);
                }
                last_t = t;
                net.advance(t, &mut done);
                for id in done.drain(..) {
                    let pos = live.iter().position(|&(l, _)| l == id).expect("live flow");
                    let (_, i) = live.swap_remove(pos);
                    finish[i] = t;
                    let f = &s.flows[i];
                    prop_assert!(
                        (sent[i] - f.bytes).abs() <= REL * f.bytes + 1e-6,
                        "flow {i}: sent {} of {} bytes",
                        sent[i],
                        f.bytes
                    );
                }
                check_allocation(s, &net, &ids, &live)?;
            }
            (Some(_), None) => unreachable!(),
        }
    }
    Ok(finish)
}

fn check_allocation(
    s: &Scenario,
    net: &FluidNetwork,
    ids: &[LinkId],
    live: &[(FlowId, usize)],
) -> Result<(), TestCaseError> {
    let active: Vec<(usize, f64)> = live
        .iter()
        .filter(|&&(id, _)| net.flow_phase(id) == FlowPhase::Active)
        .map(|&(id, i)| (i, net.flow_rate_bytes_per_sec(id)))
        .collect();
    let on_link = |l: usize| {
        active
            .iter()
            .filter(move |(i, _)| s.flows[*i].route.contains(&l))
    };
    // Capacity.
    for (l, link) in s.links.iter().enumerate() {
        let cap = link.capacity * (1.0 + REL);
        match link.sharing {
            Sharing::Shared => {
                let load: f64 = on_link(l).map(|&(_, r)| r).sum();
                prop_assert!(load <= cap, "link {l} carries {load} > {}", link.capacity);
                let reported = net.link_load_bytes_per_sec(ids[l]);
                prop_assert!((reported - load).abs() <= REL * link.capacity);
            }
            Sharing::Fatpipe => {
                for &(i, r) in on_link(l) {
                    prop_assert!(r <= cap, "flow {i} at {r} on fat pipe {l}");
                }
            }
        }
    }
    for &(i, r) in &active {
        prop_assert!(r > 0.0, "active flow {i} has rate {r}");
        if let Some(b) = s.flows[i].bound {
            prop_assert!(
                r <= b * (1.0 + REL),
                "flow {i} at {r} exceeds its bound {b}"
            );
        }
    }
    // Max-min optimality (plain mode: all flows weigh the same).
    if s.mode == SharingMode::Plain {
        for &(i, r) in &active {
            let f = &s.flows[i];
            let at_bound = f.bound.is_some_and(|b| r >= b * (1.0 - REL));
            let bottleneck = f.route.iter().any(|&l| {
                let link = &s.links[l];
                match link.sharing {
                    Sharing::Shared => {
                        let load: f64 = on_link(l).map(|&(_, x)| x).sum();
                        let max = on_link(l).map(|&(_, x)| x).fold(0.0, f64::max);
                        load >= link.capacity * (1.0 - REL) && r >= max * (1.0 - REL)
                    }
                    Sharing::Fatpipe => r >= link.capacity * (1.0 - REL),
                }
            });
            prop_assert!(
                at_bound || bottleneck,
                "flow {i} at {r} has no bottleneck: not max-min"
            );
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn allocation_is_feasible_fair_and_conserves_bytes(s in scenario_strategy()) {
        let finish = simulate(&s)?;
        for (i, f) in s.flows.iter().enumerate() {
            prop_assert!(finish[i].is_finite(), "flow {i} never finished");
            let latency: f64 = f.route.iter().map(|&l| s.links[l].latency).sum();
            let best_rate = f
                .route
                .iter()
                .map(|&l| s.links[l].capacity)
                .fold(f.bound.unwrap_or(f64::INFINITY), f64::min);
            let earliest = f.start + latency + f.bytes / best_rate;
            prop_assert!(
                finish[i] >= f.start + latency,
                "flow {i} ends at {} before start + latency {}",
                finish[i],
                f.start + latency
            );
            prop_assert!(
                finish[i] >= earliest * (1.0 - REL),
                "flow {i} ends at {} before its best case {earliest}",
                finish[i]
            );
        }
    }

    #[test]
    fn identical_inputs_give_identical_outputs(s in scenario_strategy()) {
        let a: Vec<u64> = simulate(&s)?.iter().map(|t| t.to_bits()).collect();
        let b: Vec<u64> = simulate(&s)?.iter().map(|t| t.to_bits()).collect();
        prop_assert_eq!(a, b);
    }
}
