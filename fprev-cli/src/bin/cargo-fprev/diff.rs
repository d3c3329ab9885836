//! The lines a unified diff (`git diff`, `diff -u`) adds or changes, per file, for
//! `--in-diff`: in a pull request's CI only the functions it touches are annotated.

use std::collections::HashMap;

/// New-side line ranges (1-based, inclusive) per file path as the diff names it (the
/// `b/` prefix of git's diffs removed).
#[derive(Debug, Default)]
pub struct Changed {
    files: HashMap<String, Vec<(usize, usize)>>,
}

impl Changed {
    /// Reads a unified diff. Files deleted by the diff have no new lines and are left out.
    pub fn parse(text: &str) -> Result<Changed, String> {
        let mut files: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let mut current: Option<String> = None;
        let mut hunks = 0usize;
        for (n, line) in text.lines().enumerate() {
            if let Some(path) = line.strip_prefix("+++ ") {
                let path = path.split('\t').next().unwrap_or(path).trim();
                current = (path != "/dev/null")
                    .then(|| path.strip_prefix("b/").unwrap_or(path).to_string());
                continue;
            }
            let Some(rest) = line.strip_prefix("@@ ") else {
                continue;
            };
            let new = rest
                .split_whitespace()
                .find(|w| w.starts_with('+'))
                .ok_or_else(|| format!("line {}: a hunk header without a +range", n + 1))?;
            let (start, count) = match new[1..].split_once(',') {
                Some((s, c)) => (s.parse::<usize>(), c.parse::<usize>()),
                None => (new[1..].parse::<usize>(), Ok(1)),
            };
            let (Ok(start), Ok(count)) = (start, count) else {
                return Err(format!(
                    "line {}: cannot read the hunk range {new:?}",
                    n + 1
                ));
            };
            hunks += 1;
            if let (Some(file), true) = (&current, count > 0) {
                files
                    .entry(file.clone())
                    .or_default()
                    .push((start, start + count - 1));
            }
        }
        if hunks == 0 {
            return Err("no hunk (`@@ -a,b +c,d @@`) found: not a unified diff".into());
        }
        Ok(Changed { files })
    }

    /// Whether the diff touches lines `first..=last` of `path` (relative to the
    /// workspace root, as git prints it).
    pub fn touches(&self, path: &str, first: usize, last: usize) -> bool {
        self.files
            .get(path)
            .is_some_and(|r| r.iter().any(|&(a, b)| a <= last && first <= b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_give_new_side_ranges() {
        let d = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -10,3 +10,4 @@ pub fn total
 a
+b
@@ -40 +41 @@
-x
+y
--- a/gone.rs
+++ /dev/null
@@ -1,2 +0,0 @@
";
        let c = Changed::parse(d).expect("parses");
        assert!(c.touches("src/lib.rs", 12, 20));
        assert!(c.touches("src/lib.rs", 41, 41));
        assert!(!c.touches("src/lib.rs", 14, 40));
        assert!(!c.touches("gone.rs", 1, 2));
        assert!(Changed::parse("not a diff").is_err());
    }
}
