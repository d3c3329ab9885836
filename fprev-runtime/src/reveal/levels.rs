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
use crate::black_box::{Probe, Target};
use crate::float::ProbeFloat;

/// `(l, leaf)` in one word: sorting plain integers is much cheaper than sorting
/// indices through a key, and for a cheap target the sorts are much of a reveal (indices
/// fit in 32 bits: see `Reveal::run_target`).
fn pack(l: u32, leaf: usize) -> u64 {
    (u64::from(l) << 32) | leaf as u64
}

fn leaf_of(key: u64) -> usize {
    (key & 0xFFFF_FFFF) as usize
}

/// A complete sibling subtree to build: its pivot, and the other leaves with their `l`
/// to it packed by [`pack`] (one buffer a part, sorted in place when its frame opens, so
/// that a target with many small parts does not pay for copying leaf and count vectors).
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

    /// Attach a group whose parts are all built (on `open` from `p.mark` on).
    fn attach(&mut self, p: Parts, arena: &mut Arena) {
        match p.join {
            Join::Siblings => self.open_size += p.size * (self.open.len() - p.mark),
            Join::Truncating => {
                let mut kids = Vec::with_capacity(self.open.len() - p.mark + 1);
                kids.push(self.base);
                kids.extend(self.open.drain(p.mark..));
                self.base = arena.node(&kids, true);
                self.base_size += p.size;
            }
        }
    }
}

/// Buffers the search reuses from part to part.
#[derive(Default)]
struct SearchBuffers {
    group: Vec<usize>,
    remaining: Vec<usize>,
    row: Vec<u32>,
}

/// Build the tree from a first pivot, as named steps:
///
/// 1. [`first_frame`]: draw a pivot, probe its row of `l`s; the frame of its subtree.
/// 2. [`next_part`]: while a group is in hand, build its parts one by one (a part larger
///    than a leaf or a proved template gets a frame of its own, pushed on the stack).
/// 3. [`SubtreeFrame::next_group`]: take the next group of leaves, those at one `l`.
/// 4. [`place_group`]: decide its level, split it into sibling subtrees.
/// 5. [`finish`]: no group left, the frame's subtree is complete; it joins the frame
///    below, or is the root.
pub(crate) fn build<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    pivot: Pivot,
) -> Result<u32, RevealError> {
    let mut buffers = SearchBuffers::default();
    arena.hash_leaf_sets();
    let mut stack = vec![first_frame(prober, pivot, &mut buffers)?];
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
        if top.parts.is_some() {
            if let Some(frame) = next_part(top, prober, arena, &mut templates)? {
                stack.push(frame);
            }
            continue;
        }
        let Some(l) = top.next_group(&mut buffers.group) else {
            let done = finish(top, arena, &mut templates)?;
            stack.pop();
            if stack.is_empty() {
                return Ok(done);
            }
            returned = Some(done);
            continue;
        };
        let parts = place_group(
            top,
            l as usize,
            prober,
            arena,
            &mut templates,
            &mut buffers,
            pivot,
        )?;
        top.parts = Some(parts);
    }
}

/// The frame of the first pivot, drawn from all leaves, with its row of `l`s.
fn first_frame<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    pivot: Pivot,
    buffers: &mut SearchBuffers,
) -> Result<SubtreeFrame, RevealError> {
    let mut members: Vec<usize> = (0..prober.n).collect();
    let k = choose(prober, &members, pivot);
    let first = members.remove(k);
    prober.trusted_row(first, &members, &[], &mut buffers.row)?;
    let keys = buffers
        .row
        .iter()
        .zip(&members)
        .map(|(&l, &j)| pack(l, j))
        .collect();
    buffers.remaining = members;
    Ok(SubtreeFrame::new(first, keys))
}

/// The next part of the group in hand: a leaf or a proved template goes onto the open
/// list at once; a larger sibling comes back as a frame of its own to build. Once every
/// part is built, the group is attached.
fn next_part<T: ProbeFloat, X: Target<T>>(
    top: &mut SubtreeFrame,
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    templates: &mut Templates,
) -> Result<Option<SubtreeFrame>, RevealError> {
    let Some(p) = top.parts.as_mut() else {
        return Ok(None);
    };
    if p.next >= p.parts.len() {
        let p = top.parts.take().unwrap_or_else(|| unreachable!());
        top.attach(p, arena);
        return Ok(None);
    }
    let part = &mut p.parts[p.next];
    p.next += 1;
    if let Some(node) = part.prebuilt {
        top.open.push(node);
    } else if part.keys.is_empty() {
        top.open.push(part.pivot as u32);
    } else {
        let len = part.keys.len() + 1;
        match templates.try_build(prober, arena, len, part.leaves())? {
            Some(node) => top.open.push(node),
            None => {
                let keys = std::mem::take(&mut part.keys);
                return Ok(Some(SubtreeFrame::new(part.pivot, keys)));
            }
        }
    }
    Ok(None)
}

/// Close a frame whose groups are all placed: its subtree must hold every leaf the
/// frame started with, and is remembered as a template for its shifted twins.
fn finish(
    top: &mut SubtreeFrame,
    arena: &mut Arena,
    templates: &mut Templates,
) -> Result<u32, RevealError> {
    top.close_level(arena);
    if top.base_size != top.total {
        return Err(RevealError::Inconsistent {
            detail: format!(
                "a subtree of {} leaves was assembled as {} leaves",
                top.total, top.base_size
            ),
        });
    }
    templates.record(arena, top.base);
    Ok(top.base)
}

/// Place the group in `buffers.group`, whose leaves join the pivot at `l`: on the open
/// level or the next one (closing the open level), split into the sibling subtrees it
/// consists of, and how those join.
fn place_group<T: ProbeFloat, X: Target<T>>(
    top: &mut SubtreeFrame,
    l: usize,
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    templates: &mut Templates,
    buffers: &mut SearchBuffers,
    pivot: Pivot,
) -> Result<Parts, RevealError> {
    let r = top.base_size;
    let same_level = joins_open_level(top, l, &buffers.group, prober, arena)?;
    let size = if same_level {
        l - r
    } else {
        top.close_level(arena);
        l - top.base_size
    };
    let parts = split_group(top, size, prober, arena, templates, buffers, pivot)?;
    let join = join_of(&parts, size, same_level, l, &buffers.group, arena)?;
    Ok(Parts {
        join,
        size,
        parts,
        next: 0,
        mark: top.open.len(),
    })
}

/// Whether the group at `l` joins the level still open around the pivot's subtree
/// (`true`) or starts the next one: the sizes decide, and when both fit, one probe.
fn joins_open_level<T: ProbeFloat, X: Target<T>>(
    top: &SubtreeFrame,
    l: usize,
    group: &[usize],
    prober: &mut Prober<T, X>,
    arena: &Arena,
) -> Result<bool, RevealError> {
    let (r, a, count) = (top.base_size, top.open_size, group.len());
    let s_next = l.checked_sub(r + a).filter(|&s| s >= 1 && count % s == 0);
    let s_same = if a > 0 {
        l.checked_sub(r).filter(|&s| s >= 1 && count % s == 0)
    } else {
        None
    };
    match (s_next, s_same) {
        (Some(_), None) => Ok(false),
        (None, Some(_)) => Ok(true),
        (Some(_), Some(_)) => level_test(top, l, group, prober, arena),
        (None, None) => Err(RevealError::Inconsistent {
            detail: format!(
                "{count} leaves (first {}) join a subtree of {r} (+{a}) leaves at l = {l}, which no tree allows",
                group[0]
            ),
        }),
    }
}

/// Both levels fit the group's size: zero the pivot's subtree and probe an open sibling
/// against the group. Joining the open level loses the sibling's units too.
fn level_test<T: ProbeFloat, X: Target<T>>(
    top: &SubtreeFrame,
    l: usize,
    group: &[usize],
    prober: &mut Prober<T, X>,
    arena: &Arena,
) -> Result<bool, RevealError> {
    let r = top.base_size;
    let q = arena.leaves_under(top.open[0])[0];
    let d = arena.size[top.open[0] as usize] as usize;
    // Units only on the open siblings and the group (the pivot's subtree and
    // everything else zero): both candidate lost sets lie inside.
    let mut window: Vec<usize> = top
        .open
        .iter()
        .flat_map(|&c| arena.leaves_under(c))
        .collect();
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
        Ok(false)
    } else if lz == d + l - r {
        Ok(true)
    } else {
        Err(RevealError::Inconsistent {
            detail: format!(
                "level test {probe} lost {lz} units, expected {} or {}",
                l - r,
                d + l - r
            ),
        })
    }
}

/// The sibling subtrees of `size` leaves the group consists of: one proved template
/// when the group is a single sibling, else found probe row by probe row.
fn split_group<T: ProbeFloat, X: Target<T>>(
    top: &SubtreeFrame,
    size: usize,
    prober: &mut Prober<T, X>,
    arena: &mut Arena,
    templates: &mut Templates,
    buffers: &mut SearchBuffers,
    pivot: Pivot,
) -> Result<Vec<Part>, RevealError> {
    let count = buffers.group.len();
    if size == count {
        // A sibling as large as the pivot's side is often its shifted twin.
        if top.base_size == count {
            templates.record(arena, top.base);
        }
        let leaves = buffers.group.iter().copied();
        if let Some(node) = templates.try_build(prober, arena, count, leaves)? {
            return Ok(vec![Part {
                pivot: buffers.group[0],
                keys: Vec::new(),
                prebuilt: Some(node),
            }]);
        }
    }
    // windowed counts must see the pivot's subtree: the group may be the rest of one
    // truncating node with it
    let context = if prober.needs_windows() {
        let mut c = arena.leaves_under(top.base);
        c.extend(top.open.iter().flat_map(|&o| arena.leaves_under(o)));
        // and the group itself: parts split off earlier are zero otherwise
        c.extend_from_slice(&buffers.group);
        c
    } else {
        Vec::new()
    };
    partition(prober, buffers, size, pivot, &context)
}

/// How the group's parts join: as children of the open level when all have `size`
/// leaves, or with the pivot's subtree as the children of one truncating node.
fn join_of(
    parts: &[Part],
    size: usize,
    same_level: bool,
    l: usize,
    group: &[usize],
    arena: &Arena,
) -> Result<Join, RevealError> {
    let count = group.len();
    if parts.iter().all(|p| p.size(arena) == size) {
        Ok(Join::Siblings)
    } else if !same_level && size == count && parts.len() > 1 {
        Ok(Join::Truncating)
    } else {
        Err(RevealError::Inconsistent {
            detail: format!(
                "leaves {:?}... at l = {l} split into parts of sizes {:?}, expected {size} each",
                &group[..count.min(6)],
                parts
                    .iter()
                    .map(|p| p.size(arena))
                    .take(8)
                    .collect::<Vec<_>>()
            ),
        })
    }
}

/// Split the group in `buffers.group` into the complete subtrees of (at most) `size`
/// leaves it consists of.
fn partition<T: ProbeFloat, X: Target<T>>(
    prober: &mut Prober<T, X>,
    buffers: &mut SearchBuffers,
    size: usize,
    pivot: Pivot,
    context: &[usize],
) -> Result<Vec<Part>, RevealError> {
    let SearchBuffers {
        group,
        remaining,
        row,
    } = buffers;
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
