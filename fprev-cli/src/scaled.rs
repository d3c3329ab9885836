//! `fprev reveal --exec CMD --op scaled-dot`: a block-scaled dot program, probed through
//! its scales ([`fprev::ops::reveal_scaled_dot`]).
//!
//! The contract, text protocol (the default): each probe is one line of
//! `2K + 2K/B` numbers separated by single spaces: `a[0..K)`, then `b[0..K)`, then the
//! `K/B` scales of `a`'s blocks, then the `K/B` scales of `b`'s blocks, each the
//! shortest decimal of a value exact in its type (`--dtype` for the elements,
//! `--scale-dtype` for the scales). The program answers each line with one number, the
//! scaled dot in f32 (`--acc-dtype`), on a line of its own, flushed.
//!
//! Binary protocol (`--protocol binary`): each probe is `2K + 2K/B` bytes in the same
//! order, one byte per value holding its code (an FP4 or FP6 element in the low bits,
//! the sign bit highest; an FP8 element or a UE8M0/UE4M3 scale as its 8 bits), with no
//! separator; the program answers each probe with the 4 bytes of the f32 result,
//! little-endian, flushed. Probes are sent one at a time: each waits for its answer.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

use fprev::float::{ElementType, ScaleType};
use fprev::ops::{ScaledDot, ScaledDotReport, ScaledDotShape, ScaledOperands};

/// What a probe looks like on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScaledWire {
    /// A line of decimals; a decimal line back.
    Text,
    /// One code byte per value (the shape names the types); 4 bytes of f32 back.
    Binary(ScaledDotShape),
}
use fprev::target::TargetError;

/// A running program answering scaled-dot lines.
pub struct ScaledProgram {
    command: String,
    child: Child,
    stdin: Option<ChildStdin>,
    answers: Receiver<Result<String, String>>,
    wire: ScaledWire,
    timeout: Duration,
    startup: Duration,
    grace: Duration,
    answered: u64,
}

impl ScaledProgram {
    /// Start `command` under `sh -c`.
    pub fn spawn(
        command: &str,
        wire: ScaledWire,
        timeout: Duration,
        startup: Duration,
        grace: Duration,
    ) -> Result<ScaledProgram, String> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("cannot connect to {command:?}"));
        };
        let (tx, answers) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let msg = match wire {
                    ScaledWire::Text => {
                        let mut line = String::new();
                        // an answer line is short: read at most 4 KiB of one
                        match (&mut r).take(4096).read_line(&mut line) {
                            Ok(0) => Err("closed its output".to_string()),
                            Ok(_) => Ok(line),
                            Err(e) => Err(e.to_string()),
                        }
                    }
                    ScaledWire::Binary(_) => {
                        let mut four = [0u8; 4];
                        match r.read_exact(&mut four) {
                            // as the text protocol's answers: the f32's shortest decimal,
                            // which parses back to the same f32
                            Ok(()) => Ok(f32::from_le_bytes(four).to_string()),
                            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                                Err("closed its output".to_string())
                            }
                            Err(e) => Err(e.to_string()),
                        }
                    }
                };
                let end = msg.is_err();
                if tx.send(msg).is_err() || end {
                    break;
                }
            }
        });
        Ok(ScaledProgram {
            command: command.to_string(),
            child,
            stdin: Some(stdin),
            answers,
            wire,
            timeout,
            startup: startup.max(timeout),
            grace,
            answered: 0,
        })
    }

    /// Send one line of operands and read its answer.
    pub fn ask(&mut self, o: &ScaledOperands) -> Result<f32, TargetError> {
        let cmd = &self.command;
        let probe = match self.wire {
            ScaledWire::Text => {
                let mut line = o.line();
                line.push('\n');
                line.into_bytes()
            }
            ScaledWire::Binary(shape) => o.bytes(&shape).ok_or_else(|| {
                TargetError::new(format!(
                    "a probe value is not exact in its type ({} elements, {} scales)",
                    shape.element.name(),
                    shape.scale.name()
                ))
            })?,
        };
        let sent = self
            .stdin
            .as_mut()
            .map(|s| s.write_all(&probe).and_then(|()| s.flush()));
        if !matches!(sent, Some(Ok(()))) {
            return Err(TargetError::new(format!(
                "{cmd:?} stopped reading its input"
            )));
        }
        let limit = if self.answered == 0 {
            self.startup
        } else {
            self.timeout
        };
        let answer = match self.answers.recv_timeout(limit) {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => return Err(TargetError::new(format!("{cmd:?} {e}"))),
            Err(RecvTimeoutError::Timeout) => {
                return Err(TargetError::new(format!(
                    "{cmd:?} gave no answer within {:.1} s (stalled, or an answer not \
                     flushed? raise --timeout)",
                    limit.as_secs_f64()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(TargetError::new(format!("{cmd:?} closed its output")))
            }
        };
        self.answered += 1;
        let t = answer.trim();
        // parsed as f32 directly: one rounding of the decimal, none through f64
        t.parse::<f32>().map_err(|_| {
            TargetError::new(format!(
                "{cmd:?} answered {t:?}, which is not one number (answer each line with the \
                 scaled dot in f32)"
            ))
        })
    }
}

impl Drop for ScaledProgram {
    fn drop(&mut self) {
        // end of input, then the grace period, then the program is stopped
        self.stdin = None;
        let steps = (self.grace.as_millis() / 10).max(1);
        for _ in 0..steps {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The shape named by the command line, or why it is none.
pub fn shape(
    k: usize,
    dtype: &str,
    block: Option<usize>,
    scale: Option<&str>,
) -> Result<ScaledDotShape, String> {
    let element = ElementType::parse(dtype).ok_or_else(|| {
        format!(
            "--op scaled-dot --dtype {dtype}: the elements are e2m1, e3m2, e2m3, f8e4m3 or f8e5m2"
        )
    })?;
    let block = block.ok_or("--op scaled-dot needs --block (elements per scale: 16 or 32)")?;
    let scale = scale.ok_or("--op scaled-dot needs --scale-dtype (ue8m0 or ue4m3)")?;
    let scale = ScaleType::parse(scale)
        .ok_or_else(|| format!("--scale-dtype {scale}: the scales are ue8m0 or ue4m3"))?;
    let s = ScaledDotShape {
        k,
        block,
        element,
        scale,
    };
    s.validate()
        .map_err(|e| format!("--n {k} --block {block}: {e}"))?;
    Ok(s)
}

/// Reveal the program's scaled dot of this shape.
pub fn reveal(
    program: &mut ScaledProgram,
    shape: ScaledDotShape,
    seed: u64,
) -> Result<ScaledDotReport, String> {
    let dot = ScaledDot::new(shape, |o: &ScaledOperands| program.ask(o));
    fprev::ops::reveal_scaled_dot(dot, seed).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shape_names_each_missing_or_bad_option() {
        assert!(shape(64, "e2m1", Some(16), Some("ue4m3")).is_ok());
        assert!(shape(64, "f32", Some(16), Some("ue4m3"))
            .unwrap_err()
            .contains("e2m1"));
        assert!(shape(64, "e2m1", None, Some("ue4m3"))
            .unwrap_err()
            .contains("--block"));
        assert!(shape(64, "e2m1", Some(16), None)
            .unwrap_err()
            .contains("--scale-dtype"));
        assert!(shape(64, "e2m1", Some(16), Some("e5m2"))
            .unwrap_err()
            .contains("ue8m0"));
        assert!(shape(40, "e2m1", Some(16), Some("ue4m3"))
            .unwrap_err()
            .contains("multiple"));
    }
}
