//! Reading a tree from its canonical text, `((0+1)+2)`, without recursion: a sequential
//! sum of a million values nests a million deep.

use std::str::FromStr;

use super::{SumTree, TreeError};

impl FromStr for SumTree {
    type Err = TreeError;

    fn from_str(s: &str) -> Result<SumTree, TreeError> {
        if s.bytes().filter(|b| !b.is_ascii_whitespace()).eq(*b"()") {
            return Ok(SumTree::fused(0));
        }
        let bytes = s.as_bytes();
        let mut open: Vec<Vec<u32>> = Vec::new();
        let mut nodes: Vec<Vec<u32>> = Vec::new();
        let mut leaves: Vec<u32> = Vec::new();
        // nodes are numbered after parsing; refer to inner node k as u32::MAX - k for now
        let mut root: Option<u32> = None;
        let mut i = 0;
        let mut expect_item = true;
        let syntax = |at, what| TreeError::Syntax { at, what };
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b' ' | b'\t' | b'\n' | b'\r' => {
                    i += 1;
                }
                b'(' => {
                    if !expect_item || root.is_some() {
                        return Err(syntax(i, "'(' where '+' or ')' belongs"));
                    }
                    open.push(Vec::new());
                    i += 1;
                }
                b'0'..=b'9' => {
                    if !expect_item || root.is_some() {
                        return Err(syntax(i, "a leaf where '+' or ')' belongs"));
                    }
                    let start = i;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    let v: u32 = s[start..i]
                        .parse()
                        .map_err(|_| syntax(start, "leaf index too large"))?;
                    if v >= u32::MAX / 4 {
                        return Err(syntax(start, "leaf index too large"));
                    }
                    leaves.push(v);
                    match open.last_mut() {
                        Some(top) => top.push(v),
                        None => root = Some(v),
                    }
                    expect_item = false;
                }
                b'+' => {
                    if expect_item || open.is_empty() {
                        return Err(syntax(i, "'+' must separate two items inside '(...)'"));
                    }
                    expect_item = true;
                    i += 1;
                }
                b')' => {
                    if expect_item {
                        return Err(syntax(i, "')' after '(' or '+'"));
                    }
                    let kids = open.pop().ok_or(syntax(i, "unbalanced ')'"))?;
                    if kids.len() < 2 {
                        return Err(syntax(i, "a node needs at least two children"));
                    }
                    nodes.push(kids);
                    let id = u32::MAX - (nodes.len() as u32 - 1);
                    match open.last_mut() {
                        Some(top) => top.push(id),
                        None => root = Some(id),
                    }
                    i += 1;
                }
                _ => return Err(syntax(i, "unexpected character")),
            }
        }
        if !open.is_empty() || root.is_none() {
            return Err(syntax(bytes.len(), "unterminated tree"));
        }
        let n = leaves.len();
        check_leaves(&leaves)?;
        let fix = |c: u32| {
            if c as usize >= n && c > u32::MAX / 2 {
                (n as u32) + (u32::MAX - c)
            } else {
                c
            }
        };
        let raw = nodes
            .into_iter()
            .map(|k| k.into_iter().map(fix).collect())
            .collect();
        Ok(SumTree::from_raw(n, raw))
    }
}

/// The leaves read are exactly `0..n`, each once.
fn check_leaves(leaves: &[u32]) -> Result<(), TreeError> {
    let n = leaves.len();
    let mut seen = vec![false; n];
    for &l in leaves {
        let l = l as usize;
        if l >= n {
            return Err(TreeError::Leaves(format!(
                "leaf {l} in a tree of {n} leaves"
            )));
        }
        if std::mem::replace(&mut seen[l], true) {
            return Err(TreeError::Leaves(format!("leaf {l} appears twice")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::SumTree;

    #[test]
    fn canonical_round_trip() {
        for s in [
            "0",
            "(0+1)",
            "(((0+1)+2)+3)",
            "(0+1+2+3+4)",
            "((0+3)+(1+2+(4+5)))",
        ] {
            let t: SumTree = s.parse().unwrap();
            assert_eq!(t.to_string(), s);
        }
        let t: SumTree = "((3+2)+(1+0))".parse().unwrap();
        assert_eq!(t.to_string(), "((0+1)+(2+3))");
    }

    #[test]
    fn rejects_bad_text() {
        for s in [
            "", "(", "(0)", "(0+)", "(0+1", "0+1", "(0+1))", "(0+2)", "(1+1)", "(0 1)", "(0+1)(2)",
        ] {
            assert!(s.parse::<SumTree>().is_err(), "{s:?} should be rejected");
        }
    }
}
