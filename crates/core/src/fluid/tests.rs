//! The 14 micro-scenarios that pin SimGrid 3.32's CM02 semantics (the oracle's
//! `semantics_checks.py`), with the expected values worked out by hand there, plus solver
//! checks on hand-computed allocations.

use super::*;

const GB: f64 = 1e9;

fn assert_close(got: &[f64], want: &[f64]) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs(),
            "flow {i}: got {g:.17}, expected {w:.17}"
        );
    }
}

fn net(mode: SharingMode, links: &[(f64, f64, Sharing)]) -> (FluidNetwork, Vec<LinkId>) {
    let mut n = FluidNetwork::new(mode);
    let ids = links.iter().map(|&(b, l, s)| n.add_link(b, l, s)).collect();
    (n, ids)
}

fn flow(route: &[LinkId], bytes: f64, start: f64) -> (f64, FlowSpec) {
    (start, FlowSpec::new(route.to_vec(), bytes))
}

use Sharing::{Fatpipe, Shared};
use SharingMode::{Plain, SimGrid};

#[test]
fn single_flow_pays_latency_then_full_bandwidth() {
    for mode in [Plain, SimGrid] {
        let (mut n, l) = net(mode, &[(GB, 1e-3, Shared)]);
        let got = run_flow_set(&mut n, vec![flow(&l, GB, 0.0)]);
        assert_close(&got, &[1.001]);
    }
}

#[test]
fn latency_is_not_shared_bandwidth_is() {
    for mode in [Plain, SimGrid] {
        let (mut n, l) = net(mode, &[(GB, 1e-3, Shared)]);
        let got = run_flow_set(&mut n, vec![flow(&l, GB, 0.0), flow(&l, GB, 0.0)]);
        assert_close(&got, &[2.001, 2.001]);
    }
}

#[test]
fn route_latency_is_summed_and_rate_is_the_minimum_bandwidth() {
    let (mut n, l) = net(
        SimGrid,
        &[
            (GB, 1e-3, Shared),
            (2.0 * GB, 2e-3, Shared),
            (3.0 * GB, 3e-3, Shared),
        ],
    );
    let got = run_flow_set(&mut n, vec![flow(&l, GB, 0.0)]);
    assert_close(&got, &[1.006]);
}

fn rtt_case(mode: SharingMode) -> Vec<f64> {
    // s: shared 1 GB/s bottleneck; p, q: fast links carrying 1 ms and 3 ms of latency.
    let (mut n, l) = net(
        mode,
        &[
            (GB, 0.0, Shared),
            (1e12, 1e-3, Shared),
            (1e12, 3e-3, Shared),
        ],
    );
    let (s, p, q) = (l[0], l[1], l[2]);
    run_flow_set(&mut n, vec![flow(&[p, s], GB, 0.0), flow(&[q, s], GB, 0.0)])
}

#[test]
fn simgrid_mode_weights_shares_by_inverse_route_latency() {
    // f alone from 1 ms to 3 ms at 1 GB/s (2e6 B), then 0.75 / 0.25 GB/s until f ends.
    let f_end = 0.003 + (GB - 2e6) / 0.75e9;
    let g_end = f_end + (GB - (f_end - 0.003) * 0.25e9) / GB;
    assert_close(&rtt_case(SimGrid), &[f_end, g_end]);
}

#[test]
fn plain_mode_shares_equally_whatever_the_latency() {
    let f_end = 0.003 + (GB - 2e6) / 0.5e9;
    let g_end = f_end + (GB - (f_end - 0.003) * 0.5e9) / GB;
    assert_close(&rtt_case(Plain), &[f_end, g_end]);
}

#[test]
fn zero_latency_route_has_weight_one_and_is_starved() {
    let (mut n, l) = net(SimGrid, &[(GB, 0.0, Shared), (1e12, 1e-3, Shared)]);
    let (s, p) = (l[0], l[1]);
    let got = run_flow_set(&mut n, vec![flow(&[s], GB, 0.0), flow(&[p, s], GB, 0.0)]);
    // f alone for 1 ms (1e6 B), then f gets 1/1001 of the link and g 1000/1001.
    let g_end = 0.001 + GB / (GB * 1000.0 / 1001.0);
    let f_left = GB - 1e6 - (g_end - 0.001) * GB / 1001.0;
    assert_close(&got, &[g_end + f_left / GB, g_end]);
}

#[test]
fn fatpipe_gives_each_flow_the_full_bandwidth() {
    for mode in [Plain, SimGrid] {
        let (mut n, l) = net(mode, &[(GB, 1e-3, Fatpipe)]);
        let got = run_flow_set(&mut n, vec![flow(&l, GB, 0.0), flow(&l, GB, 0.0)]);
        assert_close(&got, &[1.001, 1.001]);
    }
}

#[test]
fn fatpipe_with_unequal_penalties_gives_c_pmin_over_p() {
    let (mut n, l) = net(
        SimGrid,
        &[
            (GB, 0.0, Fatpipe),
            (1e12, 1e-3, Shared),
            (1e12, 3e-3, Shared),
        ],
    );
    let (fp, p, q) = (l[0], l[1], l[2]);
    let got = run_flow_set(
        &mut n,
        vec![flow(&[p, fp], GB, 0.0), flow(&[q, fp], GB, 0.0)],
    );
    // f alone 1..3 ms at 1 GB/s; then f = 1 GB/s, g = 1/3 GB/s until f ends; then g = 1 GB/s.
    let f_end = 0.001 + 1.0;
    let g_end = f_end + (GB - (f_end - 0.003) * GB / 3.0) / GB;
    assert_close(&got, &[f_end, g_end]);
}

#[test]
fn no_window_bound_by_default() {
    let (mut n, l) = net(SimGrid, &[(1e10, 1e-3, Shared)]);
    assert_close(&run_flow_set(&mut n, vec![flow(&l, GB, 0.0)]), &[0.101]);
}

#[test]
fn a_flow_bound_caps_the_rate_like_tcp_gamma() {
    // SimGrid's TCP-gamma 4194304 bounds a flow at gamma / (2 × latency).
    let (mut n, l) = net(SimGrid, &[(1e10, 1e-3, Shared)]);
    let bound = 4194304.0 / 0.002;
    let spec = FlowSpec::new(l.clone(), GB).with_bound(bound);
    assert_close(
        &run_flow_set(&mut n, vec![(0.0, spec)]),
        &[0.001 + GB / bound],
    );
}

#[test]
fn split_duplex_directions_do_not_share() {
    for mode in [Plain, SimGrid] {
        let (mut n, l) = net(mode, &[(GB, 1e-3, Shared), (GB, 1e-3, Shared)]);
        let (up, down) = (l[0], l[1]);
        let got = run_flow_set(&mut n, vec![flow(&[up], GB, 0.0), flow(&[down], GB, 0.0)]);
        assert_close(&got, &[1.001, 1.001]);
    }
}

#[test]
fn split_duplex_same_direction_shares() {
    let (mut n, l) = net(SimGrid, &[(GB, 1e-3, Shared), (GB, 1e-3, Shared)]);
    let up = l[0];
    let got = run_flow_set(&mut n, vec![flow(&[up], GB, 0.0), flow(&[up], GB, 0.0)]);
    assert_close(&got, &[2.001, 2.001]);
}

#[test]
fn cross_traffic_adds_five_percent_reverse_load() {
    let (mut n, l) = net(SimGrid, &[(GB, 1e-3, Shared)]);
    let spec = || FlowSpec::new(l.clone(), GB).with_extra_load(l[0], 0.05);
    let got = run_flow_set(&mut n, vec![(0.0, spec()), (0.0, spec())]);
    let end = 0.001 + GB / (GB / 2.1);
    assert_close(&got, &[end, end]);
}

#[test]
fn a_flow_in_its_latency_phase_uses_no_bandwidth() {
    for mode in [Plain, SimGrid] {
        let (mut n, l) = net(mode, &[(GB, 1e-3, Shared)]);
        let got = run_flow_set(&mut n, vec![flow(&l, GB, 0.0), flow(&l, GB, 0.5)]);
        assert_close(&got, &[1.501, 2.001]);
    }
}

// --- Solver checks beyond the oracle's micro-scenarios -------------------------------------

#[test]
fn classic_max_min_on_a_line() {
    // Links a (1 GB/s) and b (2 GB/s); flow x crosses both, y only a, z only b.
    // a saturates first: x = y = 0.5; then z takes what is left on b: 1.5 GB/s.
    let mut n = FluidNetwork::new(Plain);
    let a = n.add_link(GB, 0.0, Shared);
    let b = n.add_link(2.0 * GB, 0.0, Shared);
    let x = n.start_flow(0.0, FlowSpec::new(vec![a, b], GB));
    let y = n.start_flow(0.0, FlowSpec::new(vec![a], GB));
    let z = n.start_flow(0.0, FlowSpec::new(vec![b], GB));
    n.advance(0.0, &mut Vec::new());
    assert_eq!(n.flow_rate_bytes_per_sec(x), 0.5 * GB);
    assert_eq!(n.flow_rate_bytes_per_sec(y), 0.5 * GB);
    assert_eq!(n.flow_rate_bytes_per_sec(z), 1.5 * GB);
}

#[test]
fn a_bound_below_the_fair_share_frees_capacity_for_others() {
    let mut n = FluidNetwork::new(Plain);
    let a = n.add_link(GB, 0.0, Shared);
    let x = n.start_flow(0.0, FlowSpec::new(vec![a], GB).with_bound(0.2 * GB));
    let y = n.start_flow(0.0, FlowSpec::new(vec![a], GB));
    n.advance(0.0, &mut Vec::new());
    assert_eq!(n.flow_rate_bytes_per_sec(x), 0.2 * GB);
    assert_eq!(n.flow_rate_bytes_per_sec(y), 0.8 * GB);
}

#[test]
fn only_the_touched_component_is_resolved() {
    // Two disjoint links with a flow each; a third flow on the first link re-solves only it.
    let mut n = FluidNetwork::new(Plain);
    let a = n.add_link(GB, 0.0, Shared);
    let b = n.add_link(GB, 0.0, Shared);
    n.start_flow(0.0, FlowSpec::new(vec![a], GB));
    n.start_flow(0.0, FlowSpec::new(vec![b], GB));
    n.advance(0.0, &mut Vec::new());
    let before = n.solve_stats();
    n.start_flow(0.1, FlowSpec::new(vec![a], GB));
    n.advance(0.1, &mut Vec::new());
    let after = n.solve_stats();
    assert_eq!(after.solves - before.solves, 1);
    assert_eq!(after.links_solved - before.links_solved, 1);
    assert_eq!(after.flows_solved - before.flows_solved, 2);
}

#[test]
fn zero_byte_flow_finishes_after_its_latency() {
    let (mut n, l) = net(Plain, &[(GB, 2e-3, Shared)]);
    assert_close(&run_flow_set(&mut n, vec![flow(&l, 0.0, 1.0)]), &[1.002]);
}

#[test]
fn link_stats_count_bytes_and_busy_time() {
    let (mut n, l) = net(Plain, &[(GB, 0.0, Shared)]);
    // Busy from 0 to 1 s, idle to 2 s, busy from 2 to 2.5 s.
    let got = run_flow_set(&mut n, vec![flow(&l, GB, 0.0), flow(&l, 0.5 * GB, 2.0)]);
    assert_close(&got, &[1.0, 2.5]);
    let s = n.link_stats(l[0], 3.0);
    assert_eq!(s.bytes, 1.5 * GB);
    assert!((s.busy_s - 1.5).abs() < 1e-12);
    assert_eq!(s.active_flows, 0);
}
