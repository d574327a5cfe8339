//! Point-to-point and broadcast costs: LogP, LogGP, PLogP and mHLogGP (Liu et al. 2012).
//!
//! - LogP (Culler et al. 1993): one short message costs `o + L + o`;
//! - LogGP (Alexandrov et al. 1995), as Liu et al. 2012 writes it in eq. 1: a `k`-byte message costs
//!   `T = o_s + (k - 1)·G + l + o_r`;
//! - PLogP (Kielmann et al. 2000): the overheads and the gap depend on the message size; a
//!   message of `m` bytes arrives after `L + g(m)` (the round trip is `2·(L + g(m))`);
//! - mHLogGP (Liu et al. 2012 §3.1, Fig. 4): LogGP whose overheads depend on where the data sits (CPU or
//!   GPU, sender and receiver) and on the size, interpolated from the paper's Table 1 and 2;
//! - broadcast (Liu et al. 2012 §3.2, eq. 3 and the two formulas after it), with MPICH2's rule choosing
//!   among binomial tree, recursive doubling and ring.

use super::{SizeTable, at_least_one, ceil_log2, non_negative};
use hetsim_core::InputError;

/// LogP parameters: latency `L`, overhead `o` (send and receive alike), gap `g`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogP {
    /// `L`: the network latency, seconds.
    pub latency_s: f64,
    /// `o`: the processor's overhead to send or to receive one message, seconds.
    pub overhead_s: f64,
    /// `g`: the minimum interval between consecutive messages of one processor, seconds.
    pub gap_s: f64,
}

/// LogP: the time for `messages` consecutive short messages from one processor to another to
/// arrive, `o + (n - 1)·max(g, o) + L + o` (Culler et al. 1993, §3; one message: `2o + L`).
pub fn logp_messages_s(p: &LogP, messages: u64) -> Result<f64, InputError> {
    non_negative("latency_s", p.latency_s)?;
    non_negative("overhead_s", p.overhead_s)?;
    non_negative("gap_s", p.gap_s)?;
    let n = at_least_one("messages", messages)? as f64;
    Ok(p.overhead_s + (n - 1.0) * p.gap_s.max(p.overhead_s) + p.latency_s + p.overhead_s)
}

/// LogGP parameters, with distinct send and receive overheads as Liu et al. 2012 writes them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogGp {
    /// `l`: latency, seconds.
    pub latency_s: f64,
    /// `o_s`: the sender's overhead, seconds.
    pub send_overhead_s: f64,
    /// `o_r`: the receiver's overhead, seconds.
    pub recv_overhead_s: f64,
    /// `g`: the gap between consecutive messages, seconds.
    pub gap_s: f64,
    /// `G`: the gap per byte of a long message, seconds per byte.
    pub gap_per_byte_s: f64,
}

/// The terms of a point-to-point prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct P2pCost {
    /// Sender overhead `o_s`, seconds.
    pub send_overhead_s: f64,
    /// Bytes on the wire, `(k - 1)·G`, seconds.
    pub transfer_s: f64,
    /// Latency `l`, seconds.
    pub latency_s: f64,
    /// Receiver overhead `o_r`, seconds.
    pub recv_overhead_s: f64,
    /// Gaps between consecutive messages after the first, seconds.
    pub gaps_s: f64,
    /// The sum, seconds.
    pub total_s: f64,
}

impl P2pCost {
    fn new(os: f64, transfer: f64, l: f64, or: f64, gaps: f64) -> Self {
        P2pCost {
            send_overhead_s: os,
            transfer_s: transfer,
            latency_s: l,
            recv_overhead_s: or,
            gaps_s: gaps,
            total_s: os + transfer + l + or + gaps,
        }
    }
}

/// LogGP point-to-point time of one `bytes`-byte message, Liu et al. 2012 eq. 1:
/// `T = o_s + (k - 1)·G + l + o_r` (for `k = 0` the transfer term is 0).
///
/// With `messages = n > 1` consecutive messages of the same size, the sender starts one every
/// `max(g, o_s + (k - 1)·G)` (LogGP, Alexandrov et al. 1995, §2), and the last one costs as the
/// first: `T_n = T_1 + (n - 1)·max(g, o_s + (k - 1)·G)`.
pub fn loggp_p2p(p: &LogGp, bytes: f64, messages: u64) -> Result<P2pCost, InputError> {
    non_negative("latency_s", p.latency_s)?;
    non_negative("send_overhead_s", p.send_overhead_s)?;
    non_negative("recv_overhead_s", p.recv_overhead_s)?;
    non_negative("gap_s", p.gap_s)?;
    non_negative("gap_per_byte_s", p.gap_per_byte_s)?;
    let k = non_negative("bytes", bytes)?;
    let n = at_least_one("messages", messages)? as f64;
    let transfer = (k - 1.0).max(0.0) * p.gap_per_byte_s;
    let interval = p.gap_s.max(p.send_overhead_s + transfer);
    Ok(P2pCost::new(
        p.send_overhead_s,
        transfer,
        p.latency_s,
        p.recv_overhead_s,
        (n - 1.0) * interval,
    ))
}

/// PLogP parameters (Kielmann, Bal, Verstoep 2000): latency and size-dependent gap.
#[derive(Debug, Clone, PartialEq)]
pub struct PLogP {
    /// `L`: the end-to-end latency, seconds.
    pub latency_s: f64,
    /// `g(m)`: the gap as a function of the message size, seconds.
    pub gap_s: SizeTable,
}

/// PLogP: the time for one `bytes`-byte message to arrive, `L + g(m)` (Kielmann et al. 2000,
/// §2: the round trip of a message is `2·(L + g(m))`).
pub fn plogp_p2p_s(p: &PLogP, bytes: f64) -> Result<f64, InputError> {
    non_negative("latency_s", p.latency_s)?;
    let m = non_negative("bytes", bytes)?;
    Ok(p.latency_s + p.gap_s.at(m))
}

/// Where a message's data starts or ends in mHLogGP (Liu et al. 2012 Fig. 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Host memory, handled by the CPU.
    Cpu,
    /// GPU global memory.
    Gpu,
}

impl Location {
    /// `cpu` or `gpu`.
    pub fn name(self) -> &'static str {
        match self {
            Location::Cpu => "cpu",
            Location::Gpu => "gpu",
        }
    }

    /// Parse `cpu` or `gpu`.
    pub fn parse(text: &str) -> Option<Location> {
        match text {
            "cpu" => Some(Location::Cpu),
            "gpu" => Some(Location::Gpu),
            _ => None,
        }
    }
}

/// mHLogGP's calibration: every overhead as a function of the message size (Liu et al. 2012 Table 1)
/// and the transfer time `(k - 1)·G` (from Table 2), in seconds.
///
/// The transfer time is interpolated as `(k - 1)·G(k)` rather than `G` itself: `G` spans five
/// orders of magnitude between 1 B and 256 B (141 µs/B at 1 byte, a per-message cost), so
/// interpolating it linearly would predict milliseconds for a 100-byte message; the product is
/// monotone and interpolates sensibly.
#[derive(Debug, Clone, PartialEq)]
pub struct MhLogGpCalibration {
    /// `o_scd` = `o_rd`: CPU sends to GPU global memory / GPU receives (Table 1 `oscd,ord`).
    pub oscd_ord_s: SizeTable,
    /// `o_sg`: GPU sends to host memory (Table 1 `org`, the GPU→host column).
    pub osg_s: SizeTable,
    /// `o_scn`: CPU sends to another node.
    pub oscn_s: SizeTable,
    /// `o_rgb`: GPU initialisation on the first receive.
    pub orgb_s: SizeTable,
    /// `o_rn`: CPU receives one message.
    pub orn_s: SizeTable,
    /// `l_nn`: node-to-node delay.
    pub lnn_s: SizeTable,
    /// `(k - 1)·G`: the time the bytes take at the gap per byte of Table 2.
    pub transfer_s: SizeTable,
}

/// Liu et al. 2012 Table 1 (Dawning TC3600, Xeon X5650 + Tesla C2050, 40 Gb/s InfiniBand), µs:
/// size, oscd/ord, org, oscn, orgb, orn, lnn.
const TC3600_OVERHEADS_US: [[f64; 7]; 9] = [
    [1.0, 3.0, 20.0, 4.0, 102055.0, 3.0, 141.0],
    [4096.0, 45.0, 22.0, 4.0, 103537.0, 5.0, 149.0],
    [16384.0, 52.0, 26.0, 8.0, 109984.0, 8.0, 225.0],
    [65536.0, 64.0, 50.0, 17.0, 109455.0, 15.0, 268.0],
    [262144.0, 173.0, 174.0, 32.0, 114427.0, 32.0, 339.0],
    [1048576.0, 381.0, 824.0, 65.0, 111911.0, 67.0, 755.0],
    [4194304.0, 1243.0, 1329.0, 128.0, 101656.0, 129.0, 2589.0],
    [16777216.0, 4754.0, 4803.0, 904.0, 101410.0, 1002.0, 10461.0],
    [
        268435456.0,
        71799.0,
        70209.0,
        20426.0,
        103542.0,
        21527.0,
        161469.0,
    ],
];

/// Liu et al. 2012 Table 2: size, G (µs per byte).
const TC3600_GAP_US_PER_BYTE: [[f64; 2]; 9] = [
    [1.0, 141.0],
    [256.0, 0.578125],
    [1024.0, 0.145508],
    [16384.0, 0.014710],
    [65536.0, 0.004577],
    [262144.0, 0.001537],
    [1048576.0, 0.000845],
    [16777216.0, 0.000737],
    [67108864.0, 0.000749],
];

impl MhLogGpCalibration {
    /// The paper's own calibration (Liu et al. 2012 Tables 1 and 2, Dawning TC3600).
    pub fn dawning_tc3600() -> Self {
        let ov: Vec<Vec<f64>> = TC3600_OVERHEADS_US.iter().map(|r| r.to_vec()).collect();
        let gap: Vec<(f64, f64)> = TC3600_GAP_US_PER_BYTE
            .iter()
            .map(|r| (r[0], r[1]))
            .collect();
        Self::from_rows_us(&ov, &gap).expect("the paper's tables are well formed")
    }

    /// A calibration from rows in microseconds: `overheads` rows are `[size_bytes, oscd_ord,
    /// org, oscn, orgb, orn, lnn]`, `gaps` rows `(size_bytes, G in µs per byte)`.
    pub fn from_rows_us(overheads: &[Vec<f64>], gaps: &[(f64, f64)]) -> Result<Self, InputError> {
        let column = |name: &str, c: usize| -> Result<SizeTable, InputError> {
            let pts: Vec<(f64, f64)> = overheads.iter().map(|r| (r[0], r[c] * 1e-6)).collect();
            SizeTable::new(name, &pts)
        };
        if let Some(i) = overheads.iter().position(|r| r.len() != 7) {
            return Err(InputError::new(format!(
                "row {}: expected 7 columns (message_bytes,oscd_ord,org,oscn,orgb,orn,lnn)",
                i + 1
            ))
            .at_field("overheads"));
        }
        let transfer: Vec<(f64, f64)> = gaps
            .iter()
            .map(|&(k, g)| (k, (k - 1.0).max(0.0) * g * 1e-6))
            .collect();
        Ok(MhLogGpCalibration {
            oscd_ord_s: column("oscd_ord", 1)?,
            osg_s: column("org", 2)?,
            oscn_s: column("oscn", 3)?,
            orgb_s: column("orgb", 4)?,
            orn_s: column("orn", 5)?,
            lnn_s: column("lnn", 6)?,
            transfer_s: SizeTable::new("G", &transfer)?,
        })
    }

    /// A calibration from the CSV files of `shared/validation` (`seed000_p2p_overheads_us.csv`
    /// with header `message_bytes,oscd_ord,org,oscn,orgb,orn,lnn`; `seed000_gap.csv` with header
    /// `message_bytes,G_us_per_byte,...`). Lines starting with `#` are comments.
    pub fn from_csv(overheads_csv: &str, gaps_csv: &str) -> Result<Self, InputError> {
        let ov = parse_csv(overheads_csv, "overheads", 7)?;
        let gaps: Vec<(f64, f64)> = parse_csv(gaps_csv, "gaps", 2)?
            .iter()
            .map(|r| (r[0], r[1]))
            .collect();
        Self::from_rows_us(&ov, &gaps)
    }
}

/// Parse a numeric CSV with a header line, keeping the first `columns` columns of each row
/// (the `csv` crate: `#` comment lines, cells trimmed, rows of any length).
fn parse_csv(text: &str, name: &str, columns: usize) -> Result<Vec<Vec<f64>>, InputError> {
    let mut reader = csv::ReaderBuilder::new()
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| csv_error(&e, name))?;
        let line = record.position().map_or(0, |p| p.line() as usize);
        if record.len() < columns {
            return Err(InputError::new(format!(
                "expected at least {columns} columns, found {}",
                record.len()
            ))
            .at_line(line)
            .at_field(name));
        }
        let mut row = Vec::with_capacity(columns);
        for c in record.iter().take(columns) {
            let v: f64 = c.parse().map_err(|_| {
                InputError::new(format!("`{c}` is not a number"))
                    .at_line(line)
                    .at_field(name)
            })?;
            row.push(v);
        }
        rows.push(row);
    }
    Ok(rows)
}

/// A CSV syntax or reading error, at its line.
fn csv_error(e: &csv::Error, name: &str) -> InputError {
    let err = InputError::new(format!("not a valid CSV: {e}")).at_field(name);
    match e.position() {
        Some(p) => err.at_line(p.line() as usize),
        None => err,
    }
}

/// mHLogGP point-to-point cost of one `bytes`-byte message between two nodes, Liu et al. 2012 §3.1,
/// eq. 1 with the overheads of Fig. 4:
///
/// - A, CPU→CPU: `o_s = o_scn`, `o_r = o_rn`;
/// - B, CPU→GPU: `o_s = o_scn`, `o_r = o_rgb + o_rn + o_rd` for the first message,
///   `o_rn + o_rd` afterwards;
/// - C, GPU→CPU: `o_s = o_sg + o_scn`, `o_r = o_rn`;
/// - D, GPU→GPU: `o_s = o_sg + o_scn`, `o_r` as in B.
///
/// `l = l_nn(k)`; every term is interpolated at `k` from the calibration. `first` says whether
/// the receiving GPU still has to be initialised (`o_rgb`, about 0.1 s on the paper's machine).
pub fn mhloggp_p2p(
    cal: &MhLogGpCalibration,
    sender: Location,
    receiver: Location,
    bytes: f64,
    first: bool,
) -> Result<P2pCost, InputError> {
    let k = non_negative("bytes", bytes)?;
    let os = match sender {
        Location::Cpu => cal.oscn_s.at(k),
        Location::Gpu => cal.osg_s.at(k) + cal.oscn_s.at(k),
    };
    let or = match receiver {
        Location::Cpu => cal.orn_s.at(k),
        Location::Gpu => {
            let init = if first { cal.orgb_s.at(k) } else { 0.0 };
            init + cal.orn_s.at(k) + cal.oscd_ord_s.at(k)
        }
    };
    Ok(P2pCost::new(
        os,
        cal.transfer_s.at(k),
        cal.lnn_s.at(k),
        or,
        0.0,
    ))
}

pub use hetsim_core::mpich::{BcastAlgorithm, MpichBcastThresholds, mpich_bcast_algorithm};

/// Broadcast parameters of Liu et al. 2012 §3.2.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BcastParams {
    /// `P`: the number of nodes.
    pub procs: u64,
    /// `k`: the message size, bytes.
    pub bytes: f64,
    /// `o`: the overhead per step (send plus receive), seconds.
    pub overhead_s: f64,
    /// `G`: the gap per byte, seconds per byte.
    pub gap_per_byte_s: f64,
    /// `l_nn`: the node-to-node delay of a `k`-byte message, seconds.
    pub latency_s: f64,
}

/// The terms of a broadcast prediction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BcastCost {
    /// The algorithm the prediction is for.
    pub algorithm: BcastAlgorithm,
    /// Overheads, seconds.
    pub overhead_s: f64,
    /// Bytes and delay on the network, seconds.
    pub network_s: f64,
    /// The sum, seconds.
    pub total_s: f64,
}

/// Broadcast time of Liu et al. 2012 §3.2 for the given algorithm, with `lgP = ⌈log2 P⌉`:
///
/// - binomial tree (eq. 3): `lgP·o + lgP·k·(G + l_nn)`;
/// - recursive doubling: `2·lgP·o + 2·k·(P - 1)/P·(G + l_nn)`;
/// - ring: `(lgP + P - 1)·o + 2·k·(P - 1)/P·(G + l_nn)`.
///
/// The paper writes `l_nn` per byte ("each byte travels through the network for `l_nn`") while
/// its Table 1 gives `l_nn` as the delay of a whole `k`-byte message; we read the per-byte delay
/// as `l_nn(k)/k`, so `k·(G + l_nn)` is `k·G + l_nn(k)`, and `latency_s` is the whole-message
/// delay.
pub fn bcast_cost(p: &BcastParams, algorithm: BcastAlgorithm) -> Result<BcastCost, InputError> {
    let procs = at_least_one("procs", p.procs)?;
    let k = non_negative("bytes", p.bytes)?;
    let o = non_negative("overhead_s", p.overhead_s)?;
    let g = non_negative("gap_per_byte_s", p.gap_per_byte_s)?;
    let l = non_negative("latency_s", p.latency_s)?;
    let lg = f64::from(ceil_log2(procs));
    let pf = procs as f64;
    let per_message = k * g + l;
    let (overhead, network) = match algorithm {
        BcastAlgorithm::Binomial => (lg * o, lg * per_message),
        BcastAlgorithm::RecursiveDoubling => (2.0 * lg * o, 2.0 * (pf - 1.0) / pf * per_message),
        BcastAlgorithm::Ring => ((lg + pf - 1.0) * o, 2.0 * (pf - 1.0) / pf * per_message),
    };
    Ok(BcastCost {
        algorithm,
        overhead_s: overhead,
        network_s: network,
        total_s: overhead + network,
    })
}

/// Broadcast parameters for CPU-to-CPU messages from an mHLogGP calibration at size `bytes`:
/// `o = o_scn(k) + o_rn(k)`, `k·G = (k - 1)·G(k)` as interpolated, `l_nn(k)`.
pub fn bcast_params_from_calibration(
    cal: &MhLogGpCalibration,
    procs: u64,
    bytes: f64,
) -> Result<BcastParams, InputError> {
    let k = non_negative("bytes", bytes)?;
    let g = if k > 0.0 {
        cal.transfer_s.at(k) / k
    } else {
        0.0
    };
    Ok(BcastParams {
        procs,
        bytes: k,
        overhead_s: cal.oscn_s.at(k) + cal.orn_s.at(k),
        gap_per_byte_s: g,
        latency_s: cal.lnn_s.at(k),
    })
}

// ---- as registered models (`crate::MODELS`) ------------------------------------------------

use crate::params::{Evaluation, ParamSpec, ParamType, Params, def, opt, req};

const DEVICES: &[&str] = &["cpu", "gpu"];
const BCAST_ALGOS: &[&str] = &["auto", "binomial", "recursive-doubling", "ring"];

/// The parameters of `loggp`.
pub const LOGGP_PARAMS: &[ParamSpec] = &[
    req("bytes", ParamType::Real, "message size k"),
    req("latency_s", ParamType::Real, "latency l (L)"),
    req("send_overhead_s", ParamType::Real, "sender overhead o_s"),
    req("recv_overhead_s", ParamType::Real, "receiver overhead o_r"),
    def(
        "gap_s",
        ParamType::Real,
        "0",
        "gap g between consecutive messages",
    ),
    def(
        "gap_per_byte_s",
        ParamType::Real,
        "0",
        "gap per byte G (0: LogP)",
    ),
    def(
        "messages",
        ParamType::Count,
        "1",
        "consecutive messages of k bytes",
    ),
];

/// The parameters of `mhloggp`.
pub const MHLOGGP_PARAMS: &[ParamSpec] = &[
    req(
        "sender",
        ParamType::Choice(DEVICES),
        "where the data starts",
    ),
    req(
        "receiver",
        ParamType::Choice(DEVICES),
        "where the data ends",
    ),
    req("bytes", ParamType::Real, "message size k"),
    def(
        "first",
        ParamType::Count,
        "1",
        "1: the receiving GPU is initialised (o_rgb)",
    ),
    opt(
        "overheads_csv",
        ParamType::Path,
        "overhead table (seed000_p2p_overheads_us.csv format); default: the paper's Table 1",
    ),
    opt(
        "gaps_csv",
        ParamType::Path,
        "gap table (seed000_gap.csv format); default: the paper's Table 2",
    ),
];

/// The parameters of `bcast`.
pub const BCAST_PARAMS: &[ParamSpec] = &[
    req("procs", ParamType::Count, "nodes P"),
    req("bytes", ParamType::Real, "message size k"),
    def(
        "algorithm",
        ParamType::Choice(BCAST_ALGOS),
        "auto",
        "auto: MPICH2's selection rule",
    ),
    opt(
        "overhead_s",
        ParamType::Real,
        "o per step; default o_scn + o_rn from the paper's Table 1",
    ),
    opt(
        "gap_per_byte_s",
        ParamType::Real,
        "G; default from the paper's Table 2",
    ),
    opt(
        "latency_s",
        ParamType::Real,
        "l_nn of a k-byte message; default from the paper's Table 1",
    ),
    def(
        "short_msg_bytes",
        ParamType::Real,
        "12288",
        "MPICH2 MPIR_BCAST_SHORT_MSG",
    ),
    def(
        "long_msg_bytes",
        ParamType::Real,
        "524288",
        "MPICH2 MPIR_BCAST_LONG_MSG",
    ),
    def(
        "min_procs",
        ParamType::Count,
        "8",
        "MPICH2 MPIR_BCAST_MIN_PROCS",
    ),
];

fn p2p_terms(ev: &mut Evaluation, c: &P2pCost) {
    ev.term("total_s", c.total_s, "s");
    ev.term("send_overhead_s", c.send_overhead_s, "s");
    ev.term("transfer_s", c.transfer_s, "s");
    ev.term("latency_s", c.latency_s, "s");
    ev.term("recv_overhead_s", c.recv_overhead_s, "s");
    ev.term("gaps_s", c.gaps_s, "s");
}

/// `loggp`: [`loggp_p2p`], and the bandwidth it implies.
pub fn evaluate_loggp(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let params = LogGp {
        latency_s: p.real("latency_s")?,
        send_overhead_s: p.real("send_overhead_s")?,
        recv_overhead_s: p.real("recv_overhead_s")?,
        gap_s: p.real("gap_s")?,
        gap_per_byte_s: p.real("gap_per_byte_s")?,
    };
    let bytes = p.real("bytes")?;
    let n = p.count("messages")?;
    let c = loggp_p2p(&params, bytes, n)?;
    p2p_terms(&mut ev, &c);
    if c.total_s > 0.0 {
        ev.term(
            "bandwidth_bytes_per_sec",
            bytes * n as f64 / c.total_s,
            "B/s",
        );
    }
    Ok(ev)
}

/// The calibration the tables given name (both or neither), or the paper's; whether it is the
/// paper's.
fn calibration(p: &Params) -> Result<(MhLogGpCalibration, bool), InputError> {
    let (ov, gaps) = ("overheads_csv", "gaps_csv");
    match (p.given(ov).is_some(), p.given(gaps).is_some()) {
        (false, false) => Ok((MhLogGpCalibration::dawning_tc3600(), true)),
        (true, true) => {
            let text = |k| p.file_text(k)?.ok_or_else(|| p.missing(k));
            let (ov, gaps) = (text(ov)?, text(gaps)?);
            Ok((MhLogGpCalibration::from_csv(ov, gaps)?, false))
        }
        _ => Err(
            InputError::new("give both overheads_csv and gaps_csv, or neither")
                .at_field("overheads_csv"),
        ),
    }
}

/// `mhloggp`: [`mhloggp_p2p`] in one of its four cases.
pub fn evaluate_mhloggp(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let parse = |k: &str| -> Result<Location, InputError> {
        let t = p.text(k)?;
        Location::parse(&t)
            .ok_or_else(|| InputError::new(format!("`{t}` is not cpu or gpu")).at_field(k))
    };
    let (s, r) = (parse("sender")?, parse("receiver")?);
    let first = p.count("first")? != 0;
    let (cal, builtin) = calibration(p)?;
    let c = mhloggp_p2p(&cal, s, r, p.real("bytes")?, first)?;
    p2p_terms(&mut ev, &c);
    let case = match (s, r) {
        (Location::Cpu, Location::Cpu) => "A (CPU to CPU)",
        (Location::Cpu, Location::Gpu) => "B (CPU to GPU)",
        (Location::Gpu, Location::Cpu) => "C (GPU to CPU)",
        (Location::Gpu, Location::Gpu) => "D (GPU to GPU)",
    };
    ev.note("case", case);
    if builtin {
        ev.note("calibration", "Liu et al. 2012 Tables 1-2 (Dawning TC3600)");
    }
    Ok(ev)
}

/// `bcast`: [`bcast_cost`] under the algorithm given or MPICH2's choice, with the paper's
/// CPU-to-CPU calibration for the parameters not given.
pub fn evaluate_bcast(p: &Params) -> Result<Evaluation, InputError> {
    let mut ev = Evaluation::default();
    let procs = p.count("procs")?;
    let bytes = p.real("bytes")?;
    let table = bcast_params_from_calibration(&MhLogGpCalibration::dawning_tc3600(), procs, bytes)?;
    let mut defaulted = Vec::new();
    let mut pick = |k: &'static str, d: f64| -> Result<f64, InputError> {
        Ok(match p.opt_real(k)? {
            Some(v) => v,
            None => {
                defaulted.push(k);
                d
            }
        })
    };
    let params = BcastParams {
        procs,
        bytes,
        overhead_s: pick("overhead_s", table.overhead_s)?,
        gap_per_byte_s: pick("gap_per_byte_s", table.gap_per_byte_s)?,
        latency_s: pick("latency_s", table.latency_s)?,
    };
    let algo = match p.text("algorithm")?.as_str() {
        // The selection rule's thresholds are read only when the rule chooses: given with a
        // fixed algorithm, they are unused (and the command says so).
        "auto" => {
            let thresholds = MpichBcastThresholds {
                short_msg_bytes: p.real("short_msg_bytes")?,
                long_msg_bytes: p.real("long_msg_bytes")?,
                min_procs: p.count("min_procs")?,
            };
            mpich_bcast_algorithm(procs, bytes, &thresholds)
        }
        other => BcastAlgorithm::parse(other).ok_or_else(|| {
            InputError::new(format!("unknown algorithm `{other}`")).at_field("algorithm")
        })?,
    };
    let c = bcast_cost(&params, algo)?;
    ev.term("total_s", c.total_s, "s");
    ev.term("overhead_s", c.overhead_s, "s");
    ev.term("network_s", c.network_s, "s");
    ev.term("o_s", params.overhead_s, "s");
    ev.term("gap_per_byte_s", params.gap_per_byte_s, "s/B");
    ev.term("l_s", params.latency_s, "s");
    ev.note("algorithm", algo.name());
    if !defaulted.is_empty() {
        ev.note(
            "defaults",
            format!(
                "{} from Liu et al. 2012 Tables 1-2, CPU to CPU",
                defaulted.join(", ")
            ),
        );
    }
    Ok(ev)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300)
    }

    #[test]
    fn logp_hand_cases() {
        let p = LogP {
            latency_s: 5.0,
            overhead_s: 1.0,
            gap_s: 3.0,
        };
        assert_eq!(logp_messages_s(&p, 1).unwrap(), 7.0);
        // o + 2·max(g, o) + L + o = 1 + 6 + 5 + 1
        assert_eq!(logp_messages_s(&p, 3).unwrap(), 13.0);
        assert!(logp_messages_s(&p, 0).is_err());
    }

    #[test]
    fn loggp_hand_cases() {
        let p = LogGp {
            latency_s: 10e-6,
            send_overhead_s: 2e-6,
            recv_overhead_s: 3e-6,
            gap_s: 1e-6,
            gap_per_byte_s: 1e-9,
        };
        let c = loggp_p2p(&p, 1001.0, 1).unwrap();
        assert!(close(c.transfer_s, 1e-6));
        assert!(close(c.total_s, 2e-6 + 1e-6 + 10e-6 + 3e-6));
        let c2 = loggp_p2p(&p, 1001.0, 2).unwrap();
        // interval max(g = 1 µs, o_s + (k-1)G = 3 µs)
        assert!(close(c2.total_s - c.total_s, 3e-6));
        assert_eq!(loggp_p2p(&p, 0.0, 1).unwrap().transfer_s, 0.0);
        let bad = LogGp {
            gap_per_byte_s: -1.0,
            ..p
        };
        let e = loggp_p2p(&bad, 1.0, 1).unwrap_err();
        assert!(e.to_string().contains("gap_per_byte_s"));
    }

    #[test]
    fn plogp_uses_the_size_dependent_gap() {
        let p = PLogP {
            latency_s: 5e-6,
            gap_s: SizeTable::new("g", &[(0.0, 1e-6), (1000.0, 11e-6)]).unwrap(),
        };
        assert!(close(plogp_p2p_s(&p, 500.0).unwrap(), 11e-6));
    }

    #[test]
    fn mhloggp_four_cases_at_a_table_size() {
        let cal = MhLogGpCalibration::dawning_tc3600();
        let k = 65536.0;
        // Table 1 at 64 KB, µs: oscd_ord 64, org 50, oscn 17, orgb 109455, orn 15, lnn 268;
        // Table 2: G = 0.004577 µs/B.
        let tr = 65535.0 * 0.004577e-6;
        let us = 1e-6;
        let a = mhloggp_p2p(&cal, Location::Cpu, Location::Cpu, k, true).unwrap();
        assert!(close(a.total_s, (17.0 + 268.0 + 15.0) * us + tr));
        let b = mhloggp_p2p(&cal, Location::Cpu, Location::Gpu, k, true).unwrap();
        assert!(close(b.recv_overhead_s, (109455.0 + 15.0 + 64.0) * us));
        let b2 = mhloggp_p2p(&cal, Location::Cpu, Location::Gpu, k, false).unwrap();
        assert!(close(b2.recv_overhead_s, (15.0 + 64.0) * us));
        let c = mhloggp_p2p(&cal, Location::Gpu, Location::Cpu, k, true).unwrap();
        assert!(close(c.send_overhead_s, (50.0 + 17.0) * us));
        assert!(close(c.recv_overhead_s, 15.0 * us));
        let d = mhloggp_p2p(&cal, Location::Gpu, Location::Gpu, k, false).unwrap();
        assert!(close(
            d.total_s,
            (50.0 + 17.0 + 268.0 + 15.0 + 64.0) * us + tr
        ));
    }

    #[test]
    fn mhloggp_interpolates_between_rows() {
        let cal = MhLogGpCalibration::dawning_tc3600();
        // Halfway between 16 KB and 64 KB: oscn (8 + 17)/2 = 12.5 µs.
        assert!(close(cal.oscn_s.at(40960.0), 12.5e-6));
        // Transfer time: halfway between (255)(0.578125) and (1023)(0.145508) µs.
        let lo = 255.0 * 0.578125;
        let hi = 1023.0 * 0.145508;
        assert!(close(cal.transfer_s.at(640.0), (lo + hi) / 2.0 * 1e-6));
    }

    #[test]
    fn mpich_selection_rule() {
        let t = MpichBcastThresholds::default();
        use BcastAlgorithm::*;
        assert_eq!(mpich_bcast_algorithm(4, 1e6, &t), Binomial);
        assert_eq!(mpich_bcast_algorithm(16, 1024.0, &t), Binomial);
        assert_eq!(mpich_bcast_algorithm(16, 65536.0, &t), RecursiveDoubling);
        assert_eq!(mpich_bcast_algorithm(12, 65536.0, &t), Ring);
        assert_eq!(mpich_bcast_algorithm(16, 1e6, &t), Ring);
    }

    #[test]
    fn bcast_hand_cases() {
        let p = BcastParams {
            procs: 8,
            bytes: 1000.0,
            overhead_s: 1.0,
            gap_per_byte_s: 0.01,
            latency_s: 2.0,
        };
        // k·G + l = 12; lgP = 3
        let b = bcast_cost(&p, BcastAlgorithm::Binomial).unwrap();
        assert!(close(b.total_s, 3.0 + 36.0));
        let r = bcast_cost(&p, BcastAlgorithm::RecursiveDoubling).unwrap();
        assert!(close(r.total_s, 6.0 + 2.0 * 7.0 / 8.0 * 12.0));
        let g = bcast_cost(&p, BcastAlgorithm::Ring).unwrap();
        assert!(close(g.total_s, 10.0 + 2.0 * 7.0 / 8.0 * 12.0));
        let one = BcastParams { procs: 1, ..p };
        assert_eq!(bcast_cost(&one, BcastAlgorithm::Ring).unwrap().total_s, 0.0);
        assert!(bcast_cost(&BcastParams { procs: 0, ..p }, BcastAlgorithm::Ring).is_err());
    }

    #[test]
    fn csv_calibration_matches_the_built_in_tables() {
        let ov = "# c\nmessage_bytes,oscd_ord,org,oscn,orgb,orn,lnn\n\
                  1,3,20,4,102055,3,141\n4096,45,22,4,103537,5,149\n";
        let gaps = "message_bytes,G_us_per_byte,gg_us,gc_us\n1,141,4,0\n256,0.578125,4,0\n";
        let cal = MhLogGpCalibration::from_csv(ov, gaps).unwrap();
        assert!(close(cal.lnn_s.at(4096.0), 149e-6));
        let bad = MhLogGpCalibration::from_csv("h\n1,2,x,4,5,6,7\n", gaps).unwrap_err();
        assert!(bad.to_string().contains("line 2"), "{bad}");
    }

    /// The registered `mhloggp` reads the tables its path parameters name from the text the
    /// front end hands over: both or neither, and an unreadable file only if it is read.
    #[test]
    fn the_registered_model_reads_its_tables_from_the_front_end() {
        let ov = "message_bytes,oscd_ord,org,oscn,orgb,orn,lnn\n\
                  1,3,20,4,102055,3,141\n4096,45,22,4,103537,5,149\n";
        let gaps = "message_bytes,G_us_per_byte,gg_us,gc_us\n1,141,4,0\n256,0.578125,4,0\n";
        let model = crate::model("mhloggp").unwrap();
        let mut p = Params::new(model);
        for (k, v) in [("sender", "cpu"), ("receiver", "cpu"), ("bytes", "4096")] {
            p.set(k, crate::params::Value::Text(v.into()), "").unwrap();
        }
        let builtin = evaluate_mhloggp(&p).unwrap();
        p.set(
            "overheads_csv",
            crate::params::Value::Text("ov.csv".into()),
            "",
        )
        .unwrap();
        let e = evaluate_mhloggp(&p).unwrap_err();
        assert!(e.message.contains("give both"), "{e}");
        p.set("gaps_csv", crate::params::Value::Text("g.csv".into()), "")
            .unwrap();
        assert_eq!(p.files_to_read().len(), 2);
        p.set_file_text("overheads_csv", Ok(ov.into()));
        p.set_file_text("gaps_csv", Err(InputError::new("cannot read g.csv")));
        let e = evaluate_mhloggp(&p).unwrap_err();
        assert_eq!(e.message, "cannot read g.csv");
        p.set_file_text("gaps_csv", Ok(gaps.into()));
        let from_files = evaluate_mhloggp(&p).unwrap();
        // Case A at k = 4096 B from the rows given (eq. 1): o_scn + (k − 1)·G + l_nn + o_rn
        // = 4 + 4095 × 0.578125 + 149 + 5 µs (G beyond the gap table's last row is its last
        // value; the built-in Table 2 has more rows, hence another G).
        let want_s = (4.0 + 4095.0 * 0.578125 + 149.0 + 5.0) * 1e-6;
        assert!(
            close(from_files.terms[0].1, want_s),
            "{:?}",
            from_files.terms
        );
        assert_ne!(from_files.terms[0].1, builtin.terms[0].1);
        assert!(builtin.notes.iter().any(|(n, _)| n == "calibration"));
        assert!(!from_files.notes.iter().any(|(n, _)| n == "calibration"));
    }
}
