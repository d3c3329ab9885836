//! FPRev's tree build: on demand from a pivot, bottom-up, one level at a time.
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

/// `(l, leaf)` in one word: sorting plain integers, not indices through a key, was a
/// visible cost for cheap targets (indices fit in 32 bits: see `Reveal::run_target`).
fn pack(l: u32, leaf: usize) -> u64 {
    (u64::from(l) << 32) | leaf as u64
}

fn leaf_of(key: u64) -> usize {
    (key & 0xFFFF_FFFF) as usize
}

/// A complete sibling subtree to build: its pivot, and the other leaves with their `l`
/// to it packed by [`pack`] (one buffer a part, sorted in place when its frame opens:
/// separate leaf and count vectors, copied into the frame, were a visible cost for
/// targets with many small parts).
struct Part {
    pivot: usize,
    keys: Vec<u64>,
    /// Already in the arena (verified from a template).
    prebuilt: Option<u32>,
}

impl Part {
    fn size(&self, arena: &Arena) -> usize {
        match self.prebuilt {
            Some(node) => arena.size[node as usize] as usize,
            None => self.keys.len() + 1,
        }
    }

    fn leaves(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(self.pivot).chain(self.keys.iter().map(|&k| leaf_of(k)))
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Join {
    /// The parts are children of the open level (exact siblings, or a binary sibling).
    Siblings,
    /// The parts and the pivot's subtree are all the children of one truncating node.
    Truncating,
}

/// The parts of one group, built one after the other; each finished part goes onto the
/// frame's `open` list, from `mark` on.
struct Parts {
    join: Join,
    size: usize,
    parts: Vec<Part>,
    next: usize,
    mark: usize,
}

/// Building the complete subtree around one pivot.
struct SubtreeFrame {
    total: usize,
    /// The other leaves with their `l` to the pivot, sorted: a group is a run of equal `l`.
    keys: Vec<u64>,
    /// Start of the next group in `keys`.
    next: usize,
    /// Complete subtree containing the pivot, closed levels only.
    base: u32,
    base_size: usize,
    /// Children found so far for the level above `base` (still open).
    open: Vec<u32>,
    open_size: usize,
    parts: Option<Parts>,
}

impl SubtreeFrame {
    fn new(pivot: usize, mut keys: Vec<u64>) -> SubtreeFrame {
        keys.sort_unstable();
        SubtreeFrame {
            total: keys.len() + 1,
            keys,
            next: 0,
            base: pivot as u32,
            base_size: 1,
            open: Vec::new(),
            open_size: 0,
            parts: None,
        }
    }

    /// The next group's `l`, its leaves into `group`; `None` when every group is done.
    fn next_group(&mut self, group: &mut Vec<usize>) -> Option<u32> {
        let first = *self.keys.get(self.next)?;
        let l = (first >> 32) as u32;
        let run = self.keys[self.next..]
            .iter()
            .take_while(|&&k| (k >> 32) as u32 == l);
        group.clear();
        group.extend(run.map(|&k| leaf_of(k)));
        self.next += group.len();
        Some(l)
    }

    fn close_level(&mut self, arena: &mut Arena) {
        if let [only] = self.open[..] {
            self.base = arena.node(&[self.base, only], false);
        } else if !self.open.is_empty() {
            let mut kids = Vec::with_capacity(self.open.len() + 1);
            kids.push(self.base);
            kids.extend_from_slice(&self.open);
            self.base = arena.node(&kids, false);
        }
        self.open.clear();
        self.base_size += self.open_size;
        self.open_size = 0;
    }
}

/// Buffers the search reuses from part to part.
#[derive(Default)]
struct SearchBuffers {
    group: Vec<usize>,
    remaining: Vec<usize>,
    row: Vec<u32>,
}

pub(crate) fn build<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    pivot: Pivot,
) -> Result<u32, RevealError> {
    let n = prober.n;
    let mut scratch = SearchBuffers::default();
    arena.hash_leaf_sets();
    let mut members: Vec<usize> = (0..n).collect();
    let k = choose(prober, &members, pivot);
    let first = members.remove(k);
    prober.trusted_row(first, &members, &[], &mut scratch.row)?;
    let keys = scratch
        .row
        .iter()
        .zip(&members)
        .map(|(&l, &j)| pack(l, j))
        .collect();
    scratch.remaining = members;
    let mut stack = vec![SubtreeFrame::new(first, keys)];
    let mut returned: Option<u32> = None;
    let mut templates = Templates::default();
    loop {
        let Some(top) = stack.last_mut() else {
            return Err(RevealError::Inconsistent {
                detail: "construction ended without a root".into(),
            });
        };
        if let Some(node) = returned.take() {
            top.open.push(node);
        }
        // Build the next part of the group in hand, or attach the finished group.
        if let Some(p) = top.parts.as_mut() {
            if p.next < p.parts.len() {
                let part = &mut p.parts[p.next];
                p.next += 1;
                if let Some(node) = part.prebuilt {
                    top.open.push(node);
                } else if part.keys.is_empty() {
                    top.open.push(part.pivot as u32);
                } else {
                    let len = part.keys.len() + 1;
                    if let Some(node) = templates.try_build(prober, arena, len, part.leaves())? {
                        top.open.push(node);
                        continue;
                    }
                    let frame = SubtreeFrame::new(part.pivot, std::mem::take(&mut part.keys));
                    stack.push(frame);
                }
                continue;
            }
            let p = top.parts.take().unwrap_or_else(|| unreachable!());
            match p.join {
                Join::Siblings => top.open_size += p.size * (top.open.len() - p.mark),
                Join::Truncating => {
                    let mut kids = Vec::with_capacity(top.open.len() - p.mark + 1);
                    kids.push(top.base);
                    kids.extend(top.open.drain(p.mark..));
                    top.base = arena.node(&kids, true);
                    top.base_size += p.size;
                }
            }
            continue;
        }
        let group = &mut scratch.group;
        let Some(l) = top.next_group(group) else {
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
        };
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
                window.extend_from_slice(group);
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
        let mut prebuilt = None;
        if size == count {
            // A sibling as large as the pivot's side is often its shifted twin.
            if top.base_size == count {
                templates.record(arena, top.base);
            }
            let leaves = scratch.group.iter().copied();
            prebuilt = templates.try_build(prober, arena, count, leaves)?;
        }
        let parts = match prebuilt {
            Some(node) => vec![Part {
                pivot: scratch.group[0],
                keys: Vec::new(),
                prebuilt: Some(node),
            }],
            None => {
                // windowed counts must see the pivot's subtree: the group may be the rest
                // of one truncating node with it
                let context = if prober.needs_windows() {
                    let top = stack.last().unwrap_or_else(|| unreachable!());
                    let mut c = arena.leaves_under(top.base);
                    c.extend(top.open.iter().flat_map(|&o| arena.leaves_under(o)));
                    // and the group itself: parts split off earlier are zero otherwise
                    c.extend_from_slice(&scratch.group);
                    c
                } else {
                    Vec::new()
                };
                partition(prober, &mut scratch, size, pivot, &context)?
            }
        };
        let join = if parts.iter().all(|p| p.size(arena) == size) {
            Join::Siblings
        } else if !same_level && size == count && parts.len() > 1 {
            Join::Truncating
        } else {
            return Err(RevealError::Inconsistent {
                detail: format!(
                    "leaves {:?}... at l = {l} split into parts of sizes {:?}, expected {size} each",
                    &scratch.group[..count.min(6)],
                    parts.iter().map(|p| p.size(arena)).take(8).collect::<Vec<_>>()
                ),
            });
        };
        let top = stack.last_mut().unwrap_or_else(|| unreachable!());
        top.parts = Some(Parts {
            join,
            size,
            parts,
            next: 0,
            mark: top.open.len(),
        });
    }
}

/// Split the group in `scratch.group` into the complete subtrees of (at most) `size`
/// leaves it consists of.
fn partition<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    scratch: &mut SearchBuffers,
    size: usize,
    pivot: Pivot,
    context: &[usize],
) -> Result<Vec<Part>, RevealError> {
    let SearchBuffers {
        group,
        remaining,
        row,
    } = scratch;
    if size == 1 {
        return Ok(group
            .iter()
            .map(|&j| Part {
                pivot: j,
                keys: Vec::new(),
                prebuilt: None,
            })
            .collect());
    }
    let mut parts = Vec::new();
    remaining.clear();
    remaining.extend_from_slice(group);
    while !remaining.is_empty() {
        // the others keep their order (the next pivot is drawn by position)
        let k = choose(prober, remaining, pivot);
        let p = remaining.remove(k);
        prober.trusted_row(p, remaining, context, row)?;
        let inside = row.iter().filter(|&&l| l as usize <= size).count();
        let mut keys = Vec::with_capacity(inside);
        let mut at = 0;
        remaining.retain(|&j| {
            let l = row[at];
            at += 1;
            if l as usize <= size {
                keys.push(pack(l, j));
            }
            l as usize > size
        });
        parts.push(Part {
            pivot: p,
            keys,
            prebuilt: None,
        });
    }
    Ok(parts)
}

/// The position in `set` (non-empty) of the next pivot.
fn choose<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    set: &[usize],
    pivot: Pivot,
) -> usize {
    match pivot {
        Pivot::Smallest => (0..set.len()).min_by_key(|&k| set[k]).unwrap_or(0),
        Pivot::Random => prober.pick_index(set.len()),
    }
}
