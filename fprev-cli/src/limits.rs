//! Range checks on sizes and durations from the command line, made before anything is
//! allocated or started: a size that cannot fit the memory budget, or a duration no
//! clock can hold, is an error naming the flag, never a panic or an abort.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The longest `--timeout` or `--grace` accepted: a million seconds (11.6 days).
pub const MAX_SECONDS: f64 = 1e6;

/// `value` seconds of `flag` as a [`Duration`]: finite, in `[min, MAX_SECONDS]`, and
/// positive unless `zero_ok`.
pub fn seconds(flag: &str, value: f64, zero_ok: bool) -> Result<Duration, String> {
    let low_ok = if zero_ok { value >= 0.0 } else { value > 0.0 };
    if !(low_ok && value <= MAX_SECONDS) {
        let low = if zero_ok { "[0" } else { "(0" };
        return Err(format!(
            "{flag} {value} is out of range: give seconds in {low}, {MAX_SECONDS}]"
        ));
    }
    Ok(Duration::from_secs_f64(value))
}

/// A byte count written plainly or with a binary suffix: `4096`, `512M`, `8G`, `1T`
/// (`K`, `M`, `G`, `T`, each a power of 1024, `B`/`iB` optional).
pub fn bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t);
    let not_bytes = || format!("{text:?} is not a byte count such as 4096, 512M or 8G");
    let (digits, unit) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => (&t[..i], Some(c)),
        _ => (t, None),
    };
    let v: u64 = digits.parse().map_err(|_| not_bytes())?;
    let shift = match unit.map(|c| c.to_ascii_uppercase()) {
        None => 0,
        Some('K') => 10,
        Some('M') => 20,
        Some('G') => 30,
        Some('T') => 40,
        Some(_) => return Err(not_bytes()),
    };
    v.checked_mul(1 << shift)
        .ok_or_else(|| format!("{text:?} is more bytes than fit in 64 bits"))
}

/// The largest number of summands the engine indexes.
const MAX_N: usize = u32::MAX as usize / 4 - 1;

/// Check a matrix product's sizes (`rows x n` by `n x cols`, `elem` bytes a value) before
/// its operands are allocated: each at least 1, `n` within the engine's limit, and the
/// operands, the product and their working copies within `budget` bytes.
pub fn matrix(n: usize, rows: usize, cols: usize, elem: usize, budget: u64) -> Result<(), String> {
    for (flag, v) in [("--n", n), ("--rows", rows), ("--cols", cols)] {
        if v == 0 {
            return Err(format!(
                "{flag} 0: a matrix product needs at least one {}",
                match flag {
                    "--n" => "summand",
                    "--rows" => "row",
                    _ => "column",
                }
            ));
        }
    }
    if n > MAX_N {
        return Err(format!(
            "--n {n} is more summands than fprev indexes (at most {MAX_N})"
        ));
    }
    // A, B (and a ones copy of B), C, each kept twice (operands and the recorder's copy)
    let needed = || -> Option<u64> {
        let (n, rows, cols) = (n as u64, rows as u64, cols as u64);
        let a = rows.checked_mul(n)?;
        let b = n.checked_mul(cols)?;
        let c = rows.checked_mul(cols)?;
        let values = a.checked_add(b.checked_mul(2)?)?.checked_add(c)?;
        values.checked_mul(2)?.checked_mul(elem as u64)
    };
    match needed() {
        Some(bytes) if bytes <= budget => Ok(()),
        bytes => Err(format!(
            "a {rows} x {n} by {n} x {cols} product needs {} of operands, over the memory \
             budget of {budget} bytes (raise it with --max-memory, or lower --n, --rows, --cols)",
            bytes.map_or("more than 2^64 bytes".to_string(), |b| format!("{b} bytes"))
        )),
    }
}

/// Check a reduction over `n` values of `elem` bytes against the budget (the engine checks
/// its own memory; this covers the inputs fprev makes for it).
pub fn vector(n: usize, elem: usize, budget: u64) -> Result<(), String> {
    if n == 0 {
        return Err("--n 0: there is nothing to sum".into());
    }
    if n > MAX_N {
        return Err(format!(
            "--n {n} is more summands than fprev indexes (at most {MAX_N})"
        ));
    }
    match (n as u64).checked_mul(4 * elem as u64) {
        Some(b) if b <= budget => Ok(()),
        bytes => Err(format!(
            "--n {n} needs {} of inputs, over the memory budget of {budget} bytes \
             (raise it with --max-memory)",
            bytes.map_or("more than 2^64 bytes".to_string(), |b| format!("{b} bytes"))
        )),
    }
}

/// The bytes of `path`, at most `max_bytes` of them read (through `Read::take`, so a
/// device or an endless pipe is never read past the cap); the error names the file and
/// `flag`, the option that raises the cap.
pub fn read_capped(path: &Path, max_bytes: u64, flag: &str) -> Result<Vec<u8>, String> {
    let name = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("{name}: {e}"))?;
    let mut bytes = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    if bytes.len() as u64 > max_bytes {
        return Err(format!(
            "{name}: larger than {max_bytes} bytes ({flag}); raise the limit to read it"
        ));
    }
    Ok(bytes)
}

/// [`read_capped`] as UTF-8 text.
pub fn read_capped_text(path: &Path, max_bytes: u64, flag: &str) -> Result<String, String> {
    let bytes = read_capped(path, max_bytes, flag)?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{}: not UTF-8 text (byte {} is not valid UTF-8)",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fprev::reveal::DEFAULT_MAX_MEMORY;

    #[test]
    fn durations_are_range_checked() {
        assert!(seconds("--timeout", 1e20, false).is_err());
        assert!(seconds("--timeout", f64::NAN, false).is_err());
        assert!(seconds("--timeout", 0.0, false).is_err());
        assert_eq!(seconds("--grace", 0.0, true), Ok(Duration::ZERO));
        assert_eq!(
            seconds("--timeout", 2.5, false),
            Ok(Duration::from_millis(2500))
        );
    }

    #[test]
    fn byte_counts_parse() {
        assert_eq!(bytes("4096"), Ok(4096));
        assert_eq!(bytes("512M"), Ok(512 << 20));
        assert_eq!(bytes("8GiB"), Ok(8 << 30));
        assert!(bytes("99999999999T").is_err());
        assert!(bytes("8X").is_err() && bytes("lots").is_err());
        // `--max-memory`'s default, "8G", is the library's
        assert_eq!(bytes("8G"), Ok(DEFAULT_MAX_MEMORY));
    }

    #[test]
    fn matrix_sizes_are_checked_before_allocating() {
        assert!(matrix(64, 4, 4, 4, DEFAULT_MAX_MEMORY).is_ok());
        assert!(matrix(64, usize::MAX, 4, 4, DEFAULT_MAX_MEMORY).is_err());
        assert!(matrix(100_000, 100_000, 100_000, 4, DEFAULT_MAX_MEMORY).is_err());
        assert!(matrix(4_000_000_000, 1, 1, 4, DEFAULT_MAX_MEMORY).is_err());
        assert!(matrix(0, 1, 1, 4, DEFAULT_MAX_MEMORY).is_err());
    }
}
