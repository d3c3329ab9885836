//! `--protocol delta` and `--protocol delta-binary`: the input vector is sent once, then
//! each probe as its two changed positions.
//!
//! A probe differs from the batch's background in two positions, so sending all `n`
//! values per probe costs `O(n)` to encode, transfer and parse where `O(1)` suffices.
//! Here fprev sends the background only when it changed (once per batch at most), then
//! one short message per probe; the program keeps the vector, applies a probe's two
//! values, computes, answers, and puts the two background values back.
//!
//! Text (`delta`), one message per line, numbers as in the text protocol (shortest
//! round-trip decimals), indexes from 0:
//!
//! ```text
//! B x0 x1 ... x(n-1)    the vector is now x (no answer)
//! P i a j b             answer f(x with x[i] = a and x[j] = b); x itself is unchanged
//! C                     answer f(x)
//! ```
//!
//! Binary (`delta-binary`), values little-endian in the dtype's width `w` (8, 4 or 2
//! bytes), indexes little-endian `u32`:
//!
//! ```text
//! 'B' (0x42), then n values       the vector is now x (no answer)
//! 'P' (0x50), i, a, j, b          answer f(x with x[i] = a and x[j] = b)
//! 'C' (0x43)                      answer f(x)
//! ```
//!
//! Answers are as in the text and binary protocols: one line holding one number, or one
//! value of `w` bytes. Every `P` and `C` gets exactly one answer, in order.

use std::sync::atomic::Ordering;
use std::sync::mpsc::TrySendError;
use std::time::{Duration, Instant};

use fprev::target::ProbeBatch;
use fprev::ProbeFloat;

use super::{Exec, Protocol, PIECE};

/// What the delta protocols remember between messages.
pub struct State<T> {
    /// The vector the program holds (empty before the first `B`).
    sent: Vec<T>,
}

impl<T> Default for State<T> {
    fn default() -> Self {
        State { sent: Vec::new() }
    }
}

impl Protocol {
    /// Whether probes are sent as deltas from a background.
    pub fn is_delta(self) -> bool {
        matches!(self, Protocol::Delta | Protocol::DeltaBinary)
    }

    /// Whether answers are lines of text.
    pub fn is_text(self) -> bool {
        matches!(self, Protocol::Text | Protocol::Delta)
    }
}

impl<T: ProbeFloat> Exec<T> {
    /// Append one index of a `P` message.
    fn delta_index(&self, i: usize, out: &mut Vec<u8>) {
        if self.protocol.is_text() {
            out.push(b' ');
            out.extend_from_slice(i.to_string().as_bytes());
        } else {
            // n < u32::MAX / 4 is the engine's limit
            out.extend_from_slice(&(i as u32).to_le_bytes());
        }
    }

    /// Append one value of a `P` message.
    fn delta_value(&self, v: T, out: &mut Vec<u8>) {
        if self.protocol.is_text() {
            out.push(b' ');
            out.extend_from_slice(v.to_f64().to_string().as_bytes());
        } else {
            out.extend_from_slice(&(self.wire.bits)(v.to_f64()).to_le_bytes()[..self.wire.width]);
        }
    }

    /// Append a one-letter message (`C`), or the letter that starts one.
    fn delta_letter(&self, letter: u8, end: bool, out: &mut Vec<u8>) {
        out.push(letter);
        if end && self.protocol.is_text() {
            out.push(b'\n');
        }
    }

    /// Send `x` as the vector unless the program holds it already. No answer comes, so
    /// the queue is fed until everything is in it; a program that stops reading is a
    /// timeout.
    fn delta_background(&mut self, x: &[T]) -> Result<(), String> {
        let same = self.delta.sent.len() == x.len()
            && self
                .delta
                .sent
                .iter()
                .zip(x)
                .all(|(a, b)| a.to_bits_u64() == b.to_bits_u64());
        if same {
            return Ok(());
        }
        self.delta.sent.clear();
        let mut piece = Vec::with_capacity(PIECE.min(x.len().saturating_mul(8) + 2));
        self.delta_letter(b'B', false, &mut piece);
        for (i, v) in x.iter().enumerate() {
            // `first: false`: in text every value follows a space, the first one the `B`
            self.encode_value(v.to_f64(), false, &mut piece);
            if piece.len() >= PIECE || i + 1 == x.len() {
                if i + 1 == x.len() && self.protocol.is_text() {
                    piece.push(b'\n');
                }
                self.send_blocking(std::mem::take(&mut piece))?;
            }
        }
        self.delta.sent.extend_from_slice(x);
        Ok(())
    }

    /// Queue `piece`, waiting while the queue is full; an error when the program took
    /// nothing from the pipe for the answer timeout.
    fn send_blocking(&mut self, mut piece: Vec<u8>) -> Result<(), String> {
        let mut last = (Instant::now(), self.written.load(Ordering::Relaxed));
        loop {
            let Some(tx) = &self.to_child else {
                return Err(self.closed_before("the input vector"));
            };
            let len = piece.len() as u64;
            match tx.try_send(piece) {
                Ok(()) => {
                    self.queued += len;
                    return Ok(());
                }
                Err(TrySendError::Disconnected(_)) => {
                    self.to_child = None;
                    return Err(self.closed_before("the input vector"));
                }
                Err(TrySendError::Full(p)) => piece = p,
            }
            let written = self.written.load(Ordering::Relaxed);
            if written != last.1 {
                last = (Instant::now(), written);
            } else if last.0.elapsed() > self.timeout {
                return Err(format!(
                    "{:?} took no input for {:.1} s while fprev sent the input vector \
                     (stalled? raise --timeout)",
                    self.command,
                    self.timeout.as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    fn closed_before(&mut self, what: &str) -> String {
        let status = self.exit_status();
        format!("{:?} {status} before reading {what}", self.command)
    }

    /// Send `messages` messages (`encode(k, out)` appends message `k`), each answered by
    /// one value, into `out`, pipelined as the other protocols are.
    fn delta_messages(
        &mut self,
        messages: usize,
        encode: impl Fn(&Self, usize, &mut Vec<u8>),
        what: Option<&str>,
        out: &mut [T],
    ) -> Result<(), (usize, String)> {
        self.pump(messages, messages, encode, what, out)
    }

    /// `f(x)`: the vector (when it changed), then `C`.
    pub(super) fn delta_call(&mut self, x: &[T]) -> Result<T, String> {
        self.delta_background(x)?;
        let mut out = [T::ZERO];
        self.delta_messages(
            1,
            |s, _, p| s.delta_letter(b'C', true, p),
            Some("a random check input"),
            &mut out,
        )
        .map_err(|(_, e)| e)?;
        Ok(out[0])
    }

    /// A batch: the background (when it changed), then one `P` per probe.
    pub(super) fn delta_batch(
        &mut self,
        batch: &ProbeBatch<'_, T>,
        out: &mut [T],
    ) -> Result<(), (usize, String)> {
        self.delta_background(batch.background)
            .map_err(|e| (0, e))?;
        let (plus, minus) = (batch.mask, T::from_f64_round(-batch.mask.to_f64()));
        let encode = |s: &Self, k: usize, p: &mut Vec<u8>| {
            let probe = batch.probes[k];
            s.delta_letter(b'P', false, p);
            s.delta_index(probe.plus, p);
            s.delta_value(plus, p);
            s.delta_index(probe.minus, p);
            s.delta_value(minus, p);
            if s.protocol.is_text() {
                p.push(b'\n');
            }
        };
        self.delta_messages(batch.probes.len(), encode, None, out)
    }
}
