//! FPRev: build the tree on demand from a pivot, bottom-up, one level at a time.
//!
//! For a pivot `i` inside a complete subtree `I`, sorting `l(i, j)` groups the other
//! leaves by the level where they join `i`. Binary nodes give `l = |LCA|`. Fused nodes
//! come in two kinds, and both are handled:
//! - *exact, rounded once* (what [`SumTree::replay`](crate::SumTree::replay) models): the
//!   units of the LCA's other children survive, so `l = |C_i| + |C_j|`; one level then
//!   spreads over several groups, one per sibling size;
//! - *aligned and truncated* (Tensor Cores as the FPRev papers measure them): every unit
//!   under the LCA is lost, `l = |LCA|`, and a group is the union of several siblings.
//!
//! For each group the engine decides whether it joins the level still open around the
//! pivot's subtree or starts the next one (sizes decide; when both fit, one probe with the
//! pivot's subtree zeroed decides), splits the group into complete sibling subtrees with
//! one probe row per sibling, and builds each sibling the same way. The work is an
//! explicit stack of frames, never recursion: reverse-order sums nest `n` deep.
//! Pivots are random by default (the papers' future work): a fixed smallest pivot makes a
//! reverse-order sum cost `n(n-1)/2` probes, a random one about `2n`.

use super::arena::Arena;
use super::error::RevealError;
use super::prober::Prober;
use super::template::Templates;
use super::Pivot;
use crate::float::ProbeFloat;
use crate::target::{Probe, Target};

/// A complete sibling subtree to build: its pivot, the other leaves, and their `l` to it.
struct Part {
    pivot: usize,
    members: Vec<usize>,
    row: Vec<u32>,
    /// Already in the arena (verified from a template).
    prebuilt: Option<u32>,
}

impl Part {
    fn size(&self, arena: &Arena) -> usize {
        match self.prebuilt {
            Some(node) => arena.size[node as usize] as usize,
            None => self.members.len() + 1,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Join {
    /// The parts are children of the open level (exact siblings, or a binary sibling).
    Siblings,
    /// The parts and the pivot's subtree are all the children of one truncating node.
    Truncating,
}

struct Parts {
    join: Join,
    size: usize,
    parts: Vec<Part>,
    built: Vec<u32>,
    next: usize,
}

/// Building the complete subtree around one pivot.
struct Frame {
    total: usize,
    groups: Vec<(u32, Vec<usize>)>,
    next_group: usize,
    /// Complete subtree containing the pivot, closed levels only.
    base: u32,
    base_size: usize,
    /// Children found so far for the level above `base` (still open).
    open: Vec<u32>,
    open_size: usize,
    parts: Option<Parts>,
}

impl Frame {
    fn new(pivot: usize, members: &[usize], row: &[u32]) -> Frame {
        // (l, member) packed in one word: sorting plain integers, not indices through
        // a key, was a visible cost for cheap targets (indices fit in 32 bits: see
        // `Reveal::run_target`)
        let mut keys: Vec<u64> = row
            .iter()
            .zip(members)
            .map(|(&l, &j)| (u64::from(l) << 32) | j as u64)
            .collect();
        keys.sort_unstable();
        let mut groups: Vec<(u32, Vec<usize>)> = Vec::new();
        for key in keys {
            let (l, j) = ((key >> 32) as u32, (key & 0xFFFF_FFFF) as usize);
            match groups.last_mut() {
                Some((g_l, g)) if *g_l == l => g.push(j),
                _ => groups.push((l, vec![j])),
            }
        }
        Frame {
            total: members.len() + 1,
            groups,
            next_group: 0,
            base: pivot as u32,
            base_size: 1,
            open: Vec::new(),
            open_size: 0,
            parts: None,
        }
    }

    fn close_level(&mut self, arena: &mut Arena) {
        if !self.open.is_empty() {
            let mut kids = vec![self.base];
            kids.append(&mut self.open);
            self.base = arena.node(&kids, false);
            self.base_size += self.open_size;
            self.open_size = 0;
        }
    }
}

pub(crate) fn build<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    pivot: Pivot,
) -> Result<u32, RevealError> {
    let n = prober.n;
    let all: Vec<usize> = (0..n).collect();
    let first = choose(prober, &all, pivot);
    let members: Vec<usize> = all.into_iter().filter(|&j| j != first).collect();
    let row = prober.trusted_row(first, &members)?;
    let mut stack = vec![Frame::new(first, &members, &row)];
    let mut returned: Option<u32> = None;
    let mut templates = Templates::default();
    loop {
        let Some(top) = stack.last_mut() else {
            return Err(RevealError::Inconsistent {
                detail: "construction ended without a root".into(),
            });
        };
        if let Some(node) = returned.take() {
            if let Some(p) = top.parts.as_mut() {
                p.built.push(node);
            }
        }
        // Build the next part of the group in hand, or attach the finished group.
        if let Some(p) = top.parts.as_mut() {
            if p.next < p.parts.len() {
                let part = &mut p.parts[p.next];
                p.next += 1;
                if let Some(node) = part.prebuilt {
                    p.built.push(node);
                } else if part.members.is_empty() {
                    p.built.push(part.pivot as u32);
                } else {
                    let mut leaves = part.members.clone();
                    leaves.push(part.pivot);
                    if let Some(node) = templates.try_build(prober, arena, &leaves)? {
                        p.built.push(node);
                        continue;
                    }
                    let frame = Frame::new(part.pivot, &part.members, &part.row);
                    part.row = Vec::new();
                    stack.push(frame);
                }
                continue;
            }
            let p = top.parts.take().unwrap_or_else(|| unreachable!());
            match p.join {
                Join::Siblings => {
                    top.open_size += p.size * p.built.len();
                    top.open.extend(p.built);
                }
                Join::Truncating => {
                    let mut kids = vec![top.base];
                    kids.extend(p.built);
                    top.base = arena.node(&kids, true);
                    top.base_size += p.size;
                }
            }
            continue;
        }
        if top.next_group == top.groups.len() {
            top.close_level(arena);
            if top.base_size != top.total {
                return Err(RevealError::Inconsistent {
                    detail: format!(
                        "a subtree of {} leaves was assembled as {} leaves",
                        top.total, top.base_size
                    ),
                });
            }
            let done = top.base;
            templates.record(arena, done);
            stack.pop();
            if stack.is_empty() {
                return Ok(done);
            }
            returned = Some(done);
            continue;
        }
        let (l, group) = std::mem::take(&mut top.groups[top.next_group]);
        top.next_group += 1;
        let l = l as usize;
        let (r, a, count) = (top.base_size, top.open_size, group.len());
        let s_next = l.checked_sub(r + a).filter(|&s| s >= 1 && count % s == 0);
        let s_same = if a > 0 {
            l.checked_sub(r).filter(|&s| s >= 1 && count % s == 0)
        } else {
            None
        };
        let same_level = match (s_next, s_same) {
            (Some(_), None) => false,
            (None, Some(_)) => true,
            (Some(_), Some(_)) => {
                // Zero the pivot's subtree; probe an open sibling against the group.
                let q = arena.leaves_under(top.open[0])[0];
                let d = arena.size[top.open[0] as usize] as usize;
                // Units only on the open siblings and the group (the pivot's subtree and
                // everything else zero): both candidate lost sets lie inside.
                let mut window: Vec<usize> = top.open.iter().flat_map(|&c| arena.leaves_under(c)).collect();
                window.extend_from_slice(&group);
                let probe = Probe {
                    plus: q,
                    minus: group[0],
                };
                prober.push_window(&window);
                let answer = prober.one(probe);
                prober.pop_window();
                let lz = answer?.ok_or_else(|| RevealError::PrecisionTooLow {
                    detail: format!("the level test {probe} could not be counted exactly"),
                })? as usize;
                if lz == l - r {
                    false
                } else if lz == d + l - r {
                    true
                } else {
                    return Err(RevealError::Inconsistent {
                        detail: format!(
                            "level test {probe} lost {lz} units, expected {} or {}",
                            l - r,
                            d + l - r
                        ),
                    });
                }
            }
            (None, None) => {
                return Err(RevealError::Inconsistent {
                    detail: format!(
                        "{count} leaves (first {}) join a subtree of {r} (+{a}) leaves at l = {l}, which no tree allows",
                        group[0]
                    ),
                })
            }
        };
        let size = if same_level {
            l - r
        } else {
            top.close_level(arena);
            l - top.base_size
        };
        let top = stack.last_mut().unwrap_or_else(|| unreachable!());
        let mut prebuilt = None;
        if size == count {
            // A sibling as large as the pivot's side is often its shifted twin.
            if top.base_size == count {
                templates.record(arena, top.base);
            }
            prebuilt = templates.try_build(prober, arena, &group)?;
        }
        let parts = match prebuilt {
            Some(node) => vec![Part {
                pivot: group[0],
                members: Vec::new(),
                row: Vec::new(),
                prebuilt: Some(node),
            }],
            None => partition(prober, &group, size, pivot)?,
        };
        let join = if parts.iter().all(|p| p.size(arena) == size) {
            Join::Siblings
        } else if !same_level && size == count && parts.len() > 1 {
            Join::Truncating
        } else {
            return Err(RevealError::Inconsistent {
                detail: format!(
                    "leaves {:?}... at l = {l} split into parts of sizes {:?}, expected {size} each",
                    &group[..group.len().min(6)],
                    parts.iter().map(|p| p.size(arena)).take(8).collect::<Vec<_>>()
                ),
            });
        };
        let top = stack.last_mut().unwrap_or_else(|| unreachable!());
        top.parts = Some(Parts {
            join,
            size,
            parts,
            built: Vec::new(),
            next: 0,
        });
    }
}

/// Split `group` into the complete subtrees of (at most) `size` leaves it consists of.
fn partition<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    group: &[usize],
    size: usize,
    pivot: Pivot,
) -> Result<Vec<Part>, RevealError> {
    if size == 1 {
        return Ok(group
            .iter()
            .map(|&j| Part {
                pivot: j,
                members: Vec::new(),
                row: Vec::new(),
                prebuilt: None,
            })
            .collect());
    }
    let mut parts = Vec::new();
    let mut remaining: Vec<usize> = group.to_vec();
    while !remaining.is_empty() {
        let p = choose(prober, &remaining, pivot);
        let others: Vec<usize> = remaining.iter().copied().filter(|&j| j != p).collect();
        let row = prober.trusted_row(p, &others)?;
        let (mut members, mut inrow, mut rest) = (Vec::new(), Vec::new(), Vec::new());
        for (k, &j) in others.iter().enumerate() {
            if row[k] as usize <= size {
                members.push(j);
                inrow.push(row[k]);
            } else {
                rest.push(j);
            }
        }
        parts.push(Part {
            pivot: p,
            members,
            row: inrow,
            prebuilt: None,
        });
        remaining = rest;
    }
    Ok(parts)
}

fn choose<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    set: &[usize],
    pivot: Pivot,
) -> usize {
    match pivot {
        Pivot::Smallest => set.iter().copied().min().unwrap_or(0),
        Pivot::Random => prober.pick(set),
    }
}
