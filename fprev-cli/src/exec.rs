//! Any-language targets: a program that reads probes on stdin and answers on stdout.
//!
//! Text protocol: one line per probe, `n` numbers separated by single spaces, each written
//! as the shortest decimal that reads back to the same value (`strtod`, Python `float()`);
//! the program answers each line with one line holding one number, in order. Binary
//! protocol: `n` little-endian values of the dtype per probe (`--dtype`), one value of the
//! accumulator type back (`--acc-dtype`). With `--op dot` every probe is `2n` values, the
//! `n` of `a` then the `n` of `b`, and the answer is their dot product.
//! Delta protocols (`delta`, `delta-binary`): the vector once, then each probe as its two
//! changed positions (formats in `exec/delta.rs`; `--op sum` only).
//!
//! A writer thread feeds stdin while the main thread reads answers, so a batch of probes
//! is pipelined and a program that answers line by line never deadlocks against a full
//! pipe. Probes are encoded lazily, in pieces of at most [`PIECE`] bytes, into a queue of
//! [`QUEUE`] pieces: at most 64 MB are in flight, in every protocol, whatever `n` is. A
//! reader thread turns stdout into a bounded channel of answers, each line at most
//! [`MAX_ANSWER_LINE`] bytes, so a stalled program is a timeout naming the probe, and a
//! program that floods its output is an error, not a hang or an unbounded buffer.

use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use fprev::float::FloatFormat;
use fprev::target::{
    random_operands, split_product, DrawnOperands, ProbeBatch, Target, TargetError,
};
use fprev::ProbeFloat;

// Children of this module, in exec/. The paths are written out so that the files that
// include exec.rs by path (examples/ops_table.rs) find them too: a path is read from the
// folder of the file that names it.
#[path = "exec/peer.rs"]
mod peer;
// the delta protocols (their formats are documented there)
#[path = "exec/delta.rs"]
mod delta;

/// Bytes of encoded probes per piece sent to the writer thread.
pub const PIECE: usize = 1 << 20;
/// Pieces the writer's queue holds: with the one being written and the one waiting for
/// room, 64 MB in flight at most.
pub const QUEUE: usize = 62;
/// The longest answer line accepted, newline included.
pub const MAX_ANSWER_LINE: usize = 4096;
/// Answers read ahead of the engine at most.
const ANSWERS_AHEAD: usize = 1 << 16;

/// How probes and answers are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// One line of numbers per probe, one number per answer line.
    Text,
    /// Little-endian values of the dtype.
    Binary,
    /// Lines: the input vector once (`B x0 x1 ...`), then each probe as its two
    /// positions and values (`P i a j b`), plain calls as `C` (docs/cli.md has the format).
    Delta,
    /// The delta messages in binary: `B` + n values, `P` + u32 i + a + u32 j + b, `C`.
    DeltaBinary,
}

/// The type values are sent in (`--dtype`), as data: the engine works in the accumulator
/// type and every value it sends is exact in this one.
#[derive(Clone, Copy)]
pub struct Wire {
    format: FloatFormat,
    width: usize,
    bits: fn(f64) -> u64,
    split: fn(f64) -> Option<(f64, f64)>,
    /// Random operand vectors (seed, n, accumulator) for the replay checks of a dot.
    operands: fn(u64, usize, FloatFormat) -> DotOperands,
}

/// Two operand vectors of a dot product, as exact `f64` values.
type DotOperands = (Vec<f64>, Vec<f64>);

impl Wire {
    /// Values sent as `I`.
    pub fn of<I: ProbeFloat>() -> Wire {
        Wire {
            format: I::FORMAT,
            // each type is stored as its bits on the wire: TF32 as the f32 it stands for
            width: std::mem::size_of::<I>(),
            bits: |v| I::from_f64_round(v).to_bits_u64(),
            split: |v| split_product::<I>(v).map(|(a, b)| (a.to_f64(), b.to_f64())),
            operands: |seed, n, acc| {
                let (a, b) = random_operands::<I>(seed, n, acc);
                (
                    a.iter().map(|v| v.to_f64()).collect(),
                    b.iter().map(|v| v.to_f64()).collect(),
                )
            },
        }
    }
}

/// What the program computes from a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgramOp {
    /// The sum of the `n` values.
    Sum,
    /// The dot product of the first `n` values with the next `n`.
    Dot,
    /// A block-scaled dot: `a`, `b` and their blocks' scales (`--block`,
    /// `--scale-dtype`); run by `scaled.rs`, never by [`Exec`].
    ScaledDot,
}

enum Reply {
    Answer(Vec<u8>),
    Closed,
    Failed(String),
}

/// A running program as a target.
pub struct Exec<T> {
    command: String,
    child: Child,
    to_child: Option<SyncSender<Vec<u8>>>,
    from_child: Receiver<Reply>,
    protocol: Protocol,
    timeout: Duration,
    /// How long the first answer may take (the program's start-up: interpreter,
    /// imports, device initialisation); `timeout` for every later one.
    startup: Duration,
    grace: Duration,
    /// Set at the end: the writer drops what is still queued instead of writing it.
    stop: Arc<AtomicBool>,
    /// Bytes handed to the writer, and bytes the program has taken from the pipe.
    queued: u64,
    written: Arc<AtomicU64>,
    /// Probes and calls answered so far.
    pub answered: u64,
    on_answer: Option<Box<dyn FnMut(u64)>>,
    wire: Wire,
    op: ProgramOp,
    /// The last random dot input drawn, and its operands while it is being sent.
    drawn: DrawnOperands<f64>,
    sending: Option<DotOperands>,
    /// What the delta protocols have sent.
    delta: delta::State<T>,
    _t: PhantomData<T>,
}

fn width<T: ProbeFloat>() -> usize {
    match T::FORMAT.precision {
        53 => 8,
        24 => 4,
        _ => 2,
    }
}

fn from_bits<T: ProbeFloat>(bits: u64) -> T {
    let v = match T::FORMAT.name {
        "f64" => f64::from_bits(bits),
        "f32" => f32::from_bits(bits as u32) as f64,
        "f16" => fprev::half::f16::from_bits(bits as u16).to_f64(),
        _ => fprev::half::bf16::from_bits(bits as u16).to_f64(),
    };
    T::from_f64_round(v)
}

impl<T: ProbeFloat> Exec<T> {
    /// Start `command` with `sh -c`, in a process group of its own; at the end it gets
    /// `grace` to exit after its stdin is closed (see [`peer`]).
    pub fn spawn(
        command: &str,
        protocol: Protocol,
        timeout: Duration,
        grace: Duration,
    ) -> Result<Exec<T>, String> {
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        // its own process group, so a stalled pipeline can be stopped as a whole
        let mut child =
            peer::spawn(&mut cmd).map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("cannot connect to {command:?}"));
        };
        let (to_child, inbox) = mpsc::sync_channel::<Vec<u8>>(QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let written = Arc::new(AtomicU64::new(0));
        let (stop_w, written_w) = (stop.clone(), written.clone());
        std::thread::spawn(move || {
            for chunk in inbox {
                if stop_w.load(Ordering::Relaxed) {
                    break;
                }
                if stdin.write_all(&chunk).and_then(|_| stdin.flush()).is_err() {
                    break; // the reader reports the closed program
                }
                written_w.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        });
        let (outbox, from_child) = mpsc::sync_channel(ANSWERS_AHEAD);
        let size = width::<T>();
        std::thread::spawn(move || {
            let mut r = BufReader::with_capacity(1 << 16, stdout);
            loop {
                let reply = match protocol {
                    Protocol::Text | Protocol::Delta => read_line(&mut r),
                    Protocol::Binary | Protocol::DeltaBinary => {
                        let mut v = vec![0u8; size];
                        match r.read_exact(&mut v) {
                            Ok(()) => Reply::Answer(v),
                            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                                Reply::Closed
                            }
                            Err(e) => Reply::Failed(e.to_string()),
                        }
                    }
                };
                let last = !matches!(reply, Reply::Answer(_));
                if outbox.send(reply).is_err() || last {
                    break;
                }
            }
        });
        Ok(Exec {
            command: command.to_string(),
            child,
            to_child: Some(to_child),
            from_child,
            protocol,
            timeout,
            startup: timeout,
            grace,
            stop,
            queued: 0,
            written,
            answered: 0,
            on_answer: None,
            wire: Wire::of::<T>(),
            op: ProgramOp::Sum,
            drawn: DrawnOperands::default(),
            sending: None,
            delta: delta::State::default(),
            _t: PhantomData,
        })
    }

    /// Send values as `wire` (narrower than `T`, which answers come back in), and ask
    /// for `op` of them.
    pub fn with_wire(mut self, wire: Wire, op: ProgramOp) -> Exec<T> {
        self.wire = wire;
        self.op = op;
        self
    }

    /// Allow the first answer `startup` instead of the per-answer timeout: a program
    /// that loads a framework or initialises a device before it reads its input.
    pub fn with_startup_timeout(mut self, startup: Duration) -> Exec<T> {
        self.startup = startup;
        self
    }

    /// Called with the running count after every answer (progress bars).
    pub fn on_answer(&mut self, f: impl FnMut(u64) + 'static) {
        self.on_answer = Some(Box::new(f));
    }

    /// Append value `v` of a line to `out` (`first`: no separator before it).
    fn encode_value(&self, v: f64, first: bool, out: &mut Vec<u8>) {
        match self.protocol {
            Protocol::Text | Protocol::Delta => {
                if !first {
                    out.push(b' ');
                }
                // Rust's shortest round-trip decimal of the (exact) f64 value.
                let _ = write!(out, "{v}");
            }
            Protocol::Binary | Protocol::DeltaBinary => {
                let w = self.wire.width;
                out.extend_from_slice(&(self.wire.bits)(v).to_le_bytes()[..w]);
            }
        }
    }

    /// Value `i` of a line of `2n` operands for a logical input whose value `k` is
    /// `x(k)`: `a` first, then `b`.
    fn operand(&self, n: usize, i: usize, x: f64) -> f64 {
        if let Some((a, b)) = &self.sending {
            return if i < n { a[i] } else { b[i - n] };
        }
        let (a, b) = (self.wire.split)(x).unwrap_or((f64::NAN, f64::NAN));
        if i < n {
            a
        } else {
            b
        }
    }

    /// Send `lines` inputs of `n` values (`value(line, i)`) and read one answer per line
    /// into `out`, encoding lazily: a piece is encoded only when the writer's queue has
    /// room, and answers are read meanwhile, so memory stays bounded and a program that
    /// stops reading is a timeout.
    fn exchange(
        &mut self,
        lines: usize,
        n: usize,
        value: impl Fn(usize, usize) -> T,
        what: Option<&str>,
        out: &mut [T],
    ) -> Result<(), (usize, String)> {
        // a dot product sends each logical value as two operands
        let per_line = match self.op {
            ProgramOp::Sum => n,
            ProgramOp::Dot | ProgramOp::ScaledDot => 2 * n,
        };
        let sent = |this: &Self, line: usize, i: usize| match this.op {
            ProgramOp::Sum => value(line, i).to_f64(),
            ProgramOp::Dot | ProgramOp::ScaledDot => {
                this.operand(n, i, value(line, i % n).to_f64())
            }
        };
        let n = per_line;
        let text = matches!(self.protocol, Protocol::Text);
        // one unit per value, `n` to a line
        self.pump(
            lines.saturating_mul(n),
            lines,
            |this, u, p| {
                let (line, i) = (u / n, u % n);
                this.encode_value(sent(this, line, i), i == 0, p);
                if text && i + 1 == n {
                    p.push(b'\n');
                }
            },
            what,
            out,
        )
    }

    /// Send `units` pieces of input (`encode(k, out)` appends unit `k`) and read
    /// `answers` answers into `out`, pipelined: units are encoded into pieces of at most
    /// [`PIECE`] bytes only when the writer's queue has room, and answers are read
    /// meanwhile, so memory stays bounded and a program that stops reading is a timeout.
    pub(super) fn pump(
        &mut self,
        units: usize,
        answers: usize,
        encode: impl Fn(&Self, usize, &mut Vec<u8>),
        what: Option<&str>,
        out: &mut [T],
    ) -> Result<(), (usize, String)> {
        let (mut next, mut received) = (0usize, 0usize);
        let mut waiting: Option<Vec<u8>> = None;
        while received < answers {
            // fill the queue while it has room
            while let Some(tx) = &self.to_child {
                let piece = match waiting.take() {
                    Some(p) => p,
                    None if next < units => {
                        let mut p = Vec::with_capacity(PIECE.min(units.saturating_mul(8) + 1));
                        while next < units && p.len() < PIECE {
                            encode(self, next, &mut p);
                            next += 1;
                        }
                        p
                    }
                    None => break,
                };
                let len = piece.len() as u64;
                match tx.try_send(piece) {
                    Ok(()) => self.queued += len,
                    Err(TrySendError::Full(p)) => {
                        waiting = Some(p);
                        break;
                    }
                    // the writer stopped: the reader reports the closed program
                    Err(TrySendError::Disconnected(_)) => self.to_child = None,
                }
            }
            out[received] = self.receive(what).map_err(|e| (received, e))?;
            received += 1;
        }
        Ok(())
    }

    fn exit_status(&mut self) -> String {
        for _ in 0..20 {
            if let Ok(Some(s)) = self.child.try_wait() {
                return format!("exited ({s})");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        "closed its output (and is still running)".to_string()
    }

    /// The next answer; `what` names a non-probe input (the engine names probes itself).
    fn receive(&mut self, what: Option<&str>) -> Result<T, String> {
        let to = what.map(|w| format!(" to {w}")).unwrap_or_default();
        let what = what.map(|w| format!(" {w}")).unwrap_or_default();
        let (limit, flag) = if self.answered == 0 {
            (self.startup.max(self.timeout), "--startup-timeout")
        } else {
            (self.timeout, "--timeout")
        };
        let reply = match self.from_child.recv_timeout(limit) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => {
                let unread = self
                    .queued
                    .saturating_sub(self.written.load(Ordering::Relaxed));
                let input = if unread > 0 {
                    format!("it stopped reading its input with {unread} bytes or more unread")
                } else {
                    "every input sent so far reached it".to_string()
                };
                if let Ok(Some(status)) = self.child.try_wait() {
                    return Err(format!(
                        "{:?} exited ({status}) while a process it started keeps its output \
                         open, so no answer{to} can come",
                        self.command
                    ));
                }
                if let Some((pid, name)) = peer::closed_stdout(self.child.id()) {
                    return Err(format!(
                        "{:?} closed its output: its process {pid} ({name}) has no standard \
                         output while the shell around it keeps the pipe open, so no answer{to} \
                         can come",
                        self.command
                    ));
                }
                let first = if self.answered == 0 {
                    " (its first: start-up included)"
                } else {
                    ""
                };
                return Err(format!(
                    "{:?} gave no answer{to}{first} within {:.1} s and {input} \
                     (stalled, or an answer not flushed? raise {flag})",
                    self.command,
                    limit.as_secs_f64()
                ));
            }
            Err(RecvTimeoutError::Disconnected) => Reply::Closed,
        };
        let bytes = match reply {
            Reply::Answer(b) => b,
            Reply::Closed => {
                let status = self.exit_status();
                return Err(format!(
                    "{:?} {status} before answering{what}",
                    self.command
                ));
            }
            Reply::Failed(e) => return Err(format!("reading from {:?}: {e}", self.command)),
        };
        self.answered += 1;
        if let Some(f) = self.on_answer.as_mut() {
            f(self.answered);
        }
        match self.protocol {
            Protocol::Binary | Protocol::DeltaBinary => {
                let mut b = [0u8; 8];
                b[..bytes.len()].copy_from_slice(&bytes);
                Ok(from_bits(u64::from_le_bytes(b)))
            }
            Protocol::Text | Protocol::Delta => {
                let v = parse_answer(&bytes).map_err(|t| {
                    format!(
                        "{:?} answered {t:?}{to}, which is not one number",
                        self.command
                    )
                })?;
                Ok(T::from_f64_round(v))
            }
        }
    }
}

impl<T: ProbeFloat> Target<T> for Exec<T> {
    fn input_format(&self) -> Option<FloatFormat> {
        match self.op {
            ProgramOp::Sum if self.wire.format != T::FORMAT => Some(self.wire.format),
            ProgramOp::Sum => None,
            ProgramOp::Dot | ProgramOp::ScaledDot => Some(self.wire.format.product()),
        }
    }

    fn replay_format(&self) -> Option<FloatFormat> {
        (self.op == ProgramOp::Dot).then_some(self.wire.format)
    }

    fn random_input(&mut self, seed: u64, x: &mut [T]) -> bool {
        if self.op != ProgramOp::Dot {
            return false;
        }
        let (a, b) = (self.wire.operands)(seed, x.len(), T::FORMAT);
        self.drawn.fill(x, a, b, |v| *v)
    }

    fn operand_exponents(&self, x: &[T]) -> Option<Vec<i32>> {
        let (a, b) = self.drawn.peek(x)?;
        Some(fprev::target::exponent_sums(a, b, self.wire.format))
    }

    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        if self.protocol.is_delta() {
            return self.delta_call(x).map_err(TargetError::new);
        }
        self.sending = self.drawn.take(x);
        if self.sending.is_none() && self.op == ProgramOp::Dot {
            if let Some(v) = x.iter().find(|v| (self.wire.split)(v.to_f64()).is_none()) {
                return Err(TargetError::new(format!(
                    "{v} is not a product of two {} values",
                    self.wire.format.name
                )));
            }
        }
        let mut out = [T::ZERO];
        let sent = self
            .exchange(
                1,
                x.len(),
                |_, i| x[i],
                Some("a random check input"),
                &mut out,
            )
            .map_err(|(_, message)| TargetError::new(message));
        self.sending = None;
        sent?;
        Ok(out[0])
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        if self.protocol.is_delta() {
            return self
                .delta_batch(batch, out)
                .map_err(|(k, message)| TargetError {
                    message,
                    probe: batch.probes.get(k).copied(),
                });
        }
        let (plus, minus) = (batch.mask, T::from_f64_round(-batch.mask.to_f64()));
        let value = |k: usize, i: usize| {
            let p = batch.probes[k];
            if i == p.plus {
                plus
            } else if i == p.minus {
                minus
            } else {
                batch.background[i]
            }
        };
        let n = batch.background.len();
        self.exchange(batch.probes.len(), n, value, None, out)
            .map_err(|(k, message)| TargetError {
                message,
                probe: batch.probes.get(k).copied(),
            })
    }
}

/// The number on an answer line (surrounding whitespace and the line end ignored), or
/// the trimmed text when it is not one number.
pub fn parse_answer(line: &[u8]) -> Result<f64, String> {
    let text = String::from_utf8_lossy(line);
    let t = text.trim();
    t.parse().map_err(|_| t.to_string())
}

/// One answer line of at most [`MAX_ANSWER_LINE`] bytes.
fn read_line(r: &mut impl BufRead) -> Reply {
    let mut line = Vec::new();
    let limit = MAX_ANSWER_LINE as u64;
    match r.take(limit).read_until(b'\n', &mut line) {
        Ok(0) => Reply::Closed,
        Ok(_) if line.ends_with(b"\n") || line.len() < MAX_ANSWER_LINE => Reply::Answer(line),
        Ok(_) => Reply::Failed(format!(
            "an answer line is longer than {MAX_ANSWER_LINE} bytes (it starts {:?}); \
             answer each input with one number on a line of its own",
            String::from_utf8_lossy(&line[..line.len().min(40)])
        )),
        Err(e) => Reply::Failed(e.to_string()),
    }
}

impl<T> Drop for Exec<T> {
    fn drop(&mut self) {
        // stdin closes once the writer drops what is queued: a well-behaved program exits
        self.stop.store(true, Ordering::Relaxed);
        self.to_child = None;
        peer::shutdown(&mut self.child, self.grace);
        peer::unregister(self.child.id());
    }
}

#[cfg(test)]
mod fuzz {
    //! A seeded fuzz harness for the answer reader and parser: random and mutated byte
    //! streams, each case's seed printed when it fails (rerun one with `FPREV_SEED`).
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const PIECES: &[&[u8]] = &[
        b"1",
        b"0",
        b"-0",
        b"2.5",
        b"1e308",
        b"1e309",
        b"nan",
        b"inf",
        b"-inf",
        b"+1.0",
        b"0x1p3",
        b" ",
        b"\t",
        b"\r",
        b"\n",
        b"\r\n",
        b"\0",
        b"\xff\xfe",
        b"e",
        b".",
        b"-",
        b"1 2",
        b"9999999999999999999999",
    ];

    fn stream(rng: &mut ChaCha8Rng) -> Vec<u8> {
        let mut s = Vec::new();
        for _ in 0..rng.random_range(0..64) {
            if rng.random_bool(0.1) {
                // a long run without a line end, sometimes past the cap
                let len = rng.random_range(0..2 * MAX_ANSWER_LINE);
                s.extend(std::iter::repeat_n(b'1', len));
            } else if rng.random_bool(0.3) {
                s.push(rng.random());
            } else {
                s.extend_from_slice(PIECES[rng.random_range(0..PIECES.len())]);
            }
        }
        s
    }

    fn one_case(seed: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let bytes = stream(&mut rng);
        let mut r = BufReader::with_capacity(rng.random_range(1..256), &bytes[..]);
        let mut consumed = 0;
        loop {
            match read_line(&mut r) {
                Reply::Answer(line) => {
                    assert!(line.len() <= MAX_ANSWER_LINE);
                    consumed += line.len();
                    if let Ok(v) = parse_answer(&line) {
                        // a number read back from its shortest text is the same number
                        if v.is_finite() {
                            assert_eq!(parse_answer(v.to_string().as_bytes()), Ok(v));
                        }
                    }
                }
                Reply::Closed => {
                    assert_eq!(consumed, bytes.len());
                    break;
                }
                Reply::Failed(e) => {
                    assert!(e.contains("longer than"), "{e}");
                    break;
                }
            }
        }
    }

    #[test]
    fn answer_reader_never_panics() {
        fprev::scramble::fuzz_cases("answer fuzz", 0x19A5_0000, 3000, one_case);
    }
}
