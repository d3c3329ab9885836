//! The program behind `--exec`: started in a process group of its own, and ended in order.
//!
//! At the end fprev closes the program's stdin (a well-behaved program finishes its work
//! and exits), waits up to a grace period for the whole group to be gone, then sends the
//! group SIGTERM and, 100 ms later, SIGKILL. The group is signalled even when the direct
//! child has already exited, so nothing it started in the background outlives fprev.

use std::process::Child;
use std::time::{Duration, Instant};

/// How long a peer's processes have to exit after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_millis(100);

/// Send `signal` to every process of group `pgid`; whether any process received it.
fn signal_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    // SAFETY: kill(2) with a negative pid only signals that process group; no memory
    // is shared with the callee.
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Whether any process of group `pgid` is left (zombies included).
fn group_alive(pgid: u32) -> bool {
    signal_group(pgid, 0)
}

/// Wait until `done` or until `deadline`, polling every 10 ms; whether `done` held.
fn wait_until(deadline: Instant, mut done: impl FnMut() -> bool) -> bool {
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// End a peer whose stdin is already closed: up to `grace` for its group to exit on its
/// own, then SIGTERM, then SIGKILL, to the whole group; the direct child is reaped.
pub fn shutdown(child: &mut Child, grace: Duration) {
    // the group id is the child's pid (`process_group(0)`); once the child is reaped the
    // id stays reserved while any member of its group lives, so signalling it is safe
    let pgid = child.id();
    let mut reaped = false;
    let deadline = Instant::now().checked_add(grace);
    let gone = |reaped: &mut bool, child: &mut Child| {
        if !*reaped {
            *reaped = matches!(child.try_wait(), Ok(Some(_)));
        }
        *reaped && !group_alive(pgid)
    };
    let on_time = match deadline {
        Some(deadline) => wait_until(deadline, || gone(&mut reaped, child)),
        None => false,
    };
    if !on_time {
        signal_group(pgid, libc::SIGTERM);
        let later = Instant::now() + TERM_GRACE;
        if !wait_until(later, || gone(&mut reaped, child)) {
            signal_group(pgid, libc::SIGKILL);
        }
    }
    let _ = child.wait();
}

/// A process of group `pgid` that has closed its standard output, as `(pid, name)`
/// (Linux, from `/proc`; `None` elsewhere or when every process still has one). Under
/// `sh -c` the shell keeps the pipe open, so such a process never shows as end of file.
pub fn closed_stdout(pgid: u32) -> Option<(u32, String)> {
    let procs = std::fs::read_dir("/proc").ok()?;
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let mut fields = stat[close + 1..].split_whitespace();
        let state = fields.next();
        let pgrp = fields.nth(1);
        // a zombie has no descriptors left: it exited, it did not close its output
        if state == Some("Z") || pgrp.and_then(|g| g.parse::<u32>().ok()) != Some(pgid) {
            continue;
        }
        let fd1 = std::fs::symlink_metadata(format!("/proc/{pid}/fd/1"));
        if fd1.is_err() && std::fs::metadata(format!("/proc/{pid}/fd")).is_ok() {
            return Some((pid, stat[open + 1..close].to_string()));
        }
    }
    None
}
