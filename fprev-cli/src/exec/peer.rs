//! The program behind `--exec`: started in a process group of its own, and ended in order.
//!
//! At the end fprev closes the program's stdin (a well-behaved program finishes its work
//! and exits), waits up to a grace period for the whole group to be gone, then sends the
//! group SIGTERM and, 100 ms later, SIGKILL. The group is signalled even when the direct
//! child has already exited, so nothing it started in the background outlives fprev.
//!
//! When fprev itself is told to stop (SIGTERM, SIGINT, SIGHUP, as launchers and
//! terminals do), a handler ends every peer's group the same way before fprev dies of
//! that signal. SIGKILL cannot be caught: on Linux the direct peer is started with a
//! parent-death signal (SIGKILL), but what it started in the background survives.

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// Process groups of the running peers (0: a free slot), read by the signal watcher.
static GROUPS: [AtomicI32; 16] = [const { AtomicI32::new(0) }; 16];
/// Write end of the pipe the signal handler writes to (-1 before it exists).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
/// Set once a signal has arrived: no peer is started after it.
static ENDING: AtomicBool = AtomicBool::new(false);
/// Held from a peer's start until its group is registered, and by the signal watcher from
/// the moment it reads the groups until fprev has died: a peer is either registered
/// before the watcher looks, or never started. Without it a signal between `spawn` and
/// `register` ended fprev with the new peer's background children left running.
static STARTING: Mutex<()> = Mutex::new(());

extern "C" fn on_signal(signal: libc::c_int) {
    // Only write(2) here, which is async-signal-safe; the watcher thread does the rest.
    let fd = SIGNAL_PIPE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = signal as u8;
        // SAFETY: writes one byte from a live local to a descriptor this module owns.
        unsafe { libc::write(fd, (&raw const byte).cast(), 1) };
    }
}

/// Install, once, handlers for SIGTERM, SIGINT and SIGHUP that end every registered
/// peer's process group, then let the signal end fprev as it would have without them.
/// A signal the launcher set to be ignored (`nohup`) stays ignored.
fn guard_signals() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let mut fds = [-1; 2];
        // SAFETY: pipe2 fills the two descriptors of a live array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        // a full pipe must not block the handler (more signals than bytes add nothing)
        // SAFETY: fcntl on a descriptor just created.
        unsafe { libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK) };
        let read_end = fds[0];
        let watcher = std::thread::Builder::new()
            .name("fprev-signals".into())
            .spawn(move || watch(read_end));
        if watcher.is_err() {
            return;
        }
        SIGNAL_PIPE.store(fds[1], Ordering::SeqCst);
        for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            // SAFETY: sigaction with zeroed (valid) structs; the handler only calls
            // write(2).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction == libc::SIG_IGN
                {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = libc::SA_RESTART;
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

/// The signal watcher: waits for a signal, ends the peers' groups, then dies of it.
fn watch(read_end: libc::c_int) {
    let mut byte = 0u8;
    loop {
        // SAFETY: reads one byte into a live local.
        let n = unsafe { libc::read(read_end, (&raw mut byte).cast(), 1) };
        if n == 1 {
            break;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
    let signal = libc::c_int::from(byte);
    // kept until this process dies, so no peer starts unseen (a poisoned lock still
    // excludes)
    let _starting = STARTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    ENDING.store(true, Ordering::SeqCst);
    let groups: Vec<u32> = GROUPS
        .iter()
        .filter_map(|g| u32::try_from(g.load(Ordering::SeqCst)).ok())
        .filter(|&g| g != 0)
        .collect();
    for &g in &groups {
        signal_group(g, libc::SIGTERM);
    }
    let later = Instant::now() + TERM_GRACE;
    let gone = || {
        groups.iter().all(|&g| {
            // reap the direct child if it has exited, so that its zombie does not count
            // SAFETY: waitpid on our own child's pid, without blocking.
            unsafe { libc::waitpid(g as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG) };
            !group_alive(g)
        })
    };
    if !wait_until(later, gone) {
        for &g in &groups {
            signal_group(g, libc::SIGKILL);
        }
    }
    // SAFETY: restores the default action and sends the signal to this process, which
    // then ends as the signal's sender expects (a shell sees 128 + the signal).
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::kill(libc::getpid(), signal);
    }
    // the default action of these signals ends the process; should it not have
    std::process::exit(128 + signal);
}

/// Start `cmd` as a peer: in a process group of its own, with a parent-death signal on
/// Linux ([`configure`]), and recorded so that a signal to fprev ends its whole group.
/// Refused once fprev has been signalled.
pub fn spawn(cmd: &mut Command) -> std::io::Result<Child> {
    guard_signals();
    configure(cmd);
    let _starting = STARTING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if ENDING.load(Ordering::SeqCst) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::Interrupted,
            "fprev is ending on a signal",
        ));
    }
    let child = cmd.spawn()?;
    register(child.id());
    Ok(child)
}

/// Record `pgid` as a running peer's group, to be ended if fprev is signalled.
fn register(pgid: u32) {
    let Ok(id) = i32::try_from(pgid) else { return };
    // with every slot taken the peer still gets its parent-death signal and the orderly
    // shutdown; only a signal to fprev would leave its background children
    for slot in &GROUPS {
        if slot
            .compare_exchange(0, id, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            break;
        }
    }
}

/// Forget `pgid` (its group has been ended).
pub fn unregister(pgid: u32) {
    let Ok(id) = i32::try_from(pgid) else { return };
    for slot in &GROUPS {
        if slot
            .compare_exchange(id, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            break;
        }
    }
}

/// Make `cmd` start its program in a process group of its own and, on Linux, have the
/// kernel SIGKILL that program when fprev dies (even of SIGKILL, which no handler
/// sees). The parent-death signal follows the *thread* that spawns: peers are spawned
/// from threads that live as long as they do.
fn configure(cmd: &mut Command) {
    cmd.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure calls only prctl(2) and getppid(2), both async-signal-safe,
        // and allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                // fprev died before the prctl: that signal will never come
                if u32::try_from(libc::getppid()).ok() != Some(parent) {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
}

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
