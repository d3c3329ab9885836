//! Any-language targets: a program that reads probes on stdin and answers on stdout.
//!
//! Text protocol: one line per probe, `n` numbers separated by single spaces, each written
//! as the shortest decimal that reads back to the same value (`strtod`, Python `float()`);
//! the program answers each line with one line holding one number, in order. Binary
//! protocol: `n` little-endian values of the dtype per probe, one value back.
//!
//! A writer thread feeds stdin while the main thread reads answers, so a whole batch of
//! probes is pipelined and a program that answers line by line never deadlocks against a
//! full pipe. A reader thread turns stdout into a channel, so a stalled program is a
//! timeout naming the probe, not a hang.

use std::io::{BufRead, BufReader, Read, Write};
use std::marker::PhantomData;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::Duration;

use fprev::target::{ProbeBatch, Target, TargetError};
use fprev::ProbeFloat;

/// How probes and answers are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// One line of numbers per probe, one number per answer line.
    Text,
    /// Little-endian values of the dtype.
    Binary,
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
    to_child: Option<Sender<Vec<u8>>>,
    from_child: Receiver<Reply>,
    protocol: Protocol,
    timeout: Duration,
    /// Probes and calls answered so far.
    pub answered: u64,
    on_answer: Option<Box<dyn FnMut(u64)>>,
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
    /// Start `command` with `sh -c`.
    pub fn spawn(command: &str, protocol: Protocol, timeout: Duration) -> Result<Exec<T>, String> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            // its own process group, so a stalled pipeline can be stopped as a whole
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {command:?}: {e}"))?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("cannot connect to {command:?}"));
        };
        let (to_child, inbox) = mpsc::channel::<Vec<u8>>();
        std::thread::spawn(move || {
            for chunk in inbox {
                if stdin.write_all(&chunk).and_then(|_| stdin.flush()).is_err() {
                    break; // the reader reports the closed program
                }
            }
        });
        let (outbox, from_child) = mpsc::channel();
        let size = width::<T>();
        std::thread::spawn(move || {
            let mut r = BufReader::with_capacity(1 << 16, stdout);
            loop {
                let reply = match protocol {
                    Protocol::Text => {
                        let mut line = Vec::new();
                        match r.read_until(b'\n', &mut line) {
                            Ok(0) => Reply::Closed,
                            Ok(_) => Reply::Answer(line),
                            Err(e) => Reply::Failed(e.to_string()),
                        }
                    }
                    Protocol::Binary => {
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
            answered: 0,
            on_answer: None,
            _t: PhantomData,
        })
    }

    /// Called with the running count after every answer (progress bars).
    pub fn on_answer(&mut self, f: impl FnMut(u64) + 'static) {
        self.on_answer = Some(Box::new(f));
    }

    fn encode(&self, x: &[T], out: &mut Vec<u8>) {
        match self.protocol {
            Protocol::Text => {
                for (i, v) in x.iter().enumerate() {
                    if i > 0 {
                        out.push(b' ');
                    }
                    // Rust's shortest round-trip decimal of the (exact) f64 value.
                    let _ = write!(out, "{}", v.to_f64());
                }
                out.push(b'\n');
            }
            Protocol::Binary => {
                let w = width::<T>();
                for v in x {
                    out.extend_from_slice(&v.to_bits_u64().to_le_bytes()[..w]);
                }
            }
        }
    }

    fn send(&mut self, bytes: Vec<u8>) {
        if let Some(tx) = &self.to_child {
            if tx.send(bytes).is_err() {
                self.to_child = None;
            }
        }
    }

    fn exit_status(&mut self) -> String {
        std::thread::sleep(Duration::from_millis(20));
        match self.child.try_wait() {
            Ok(Some(s)) => format!("exited ({s})"),
            _ => "closed its output".to_string(),
        }
    }

    /// The next answer; `what` names a non-probe input (the engine names probes itself).
    fn receive(&mut self, what: Option<&str>) -> Result<T, String> {
        let what = what.map(|w| format!(" {w}")).unwrap_or_default();
        let reply = match self.from_child.recv_timeout(self.timeout) {
            Ok(r) => r,
            Err(RecvTimeoutError::Timeout) => {
                return Err(format!(
                    "{:?} gave no answer{what} within {:.1} s (stalled? raise --timeout)",
                    self.command,
                    self.timeout.as_secs_f64()
                ))
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
            Protocol::Binary => {
                let mut b = [0u8; 8];
                b[..bytes.len()].copy_from_slice(&bytes);
                Ok(from_bits(u64::from_le_bytes(b)))
            }
            Protocol::Text => {
                let text = String::from_utf8_lossy(&bytes);
                let t = text.trim();
                let v: f64 = t.parse().map_err(|_| {
                    format!(
                        "{:?} answered {t:?}{what}, which is not one number",
                        self.command
                    )
                })?;
                Ok(T::from_f64_round(v))
            }
        }
    }
}

impl<T: ProbeFloat> Target<T> for Exec<T> {
    fn call(&mut self, x: &[T]) -> Result<T, TargetError> {
        let mut bytes = Vec::new();
        self.encode(x, &mut bytes);
        self.send(bytes);
        self.receive(Some("a random check input"))
            .map_err(TargetError::new)
    }

    fn probe_batch(&mut self, batch: &ProbeBatch<'_, T>, out: &mut [T]) -> Result<(), TargetError> {
        // Pipelined: write the batch in chunks from the writer thread, read as it goes.
        let mut x = Vec::new();
        const CHUNK: usize = 64;
        for (c, probes) in batch.probes.chunks(CHUNK).enumerate() {
            let mut bytes = Vec::new();
            for k in 0..probes.len() {
                batch.fill(c * CHUNK + k, &mut x);
                self.encode(&x, &mut bytes);
            }
            self.send(bytes);
        }
        for (k, p) in batch.probes.iter().enumerate() {
            out[k] = self.receive(None).map_err(|message| TargetError {
                message,
                probe: Some(*p),
            })?;
        }
        Ok(())
    }
}

impl<T> Drop for Exec<T> {
    fn drop(&mut self) {
        self.to_child = None; // closes stdin: a well-behaved program exits
        std::thread::sleep(Duration::from_millis(1));
        if let Ok(None) = self.child.try_wait() {
            // The shell and whatever it started share the group we gave it; the group id
            // is the shell's pid.
            let group = format!("-{}", self.child.id());
            let _ = Command::new("kill")
                .args(["-KILL", "--", &group])
                .stderr(Stdio::null())
                .status();
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
