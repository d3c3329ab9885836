//! The amplifier's stages: Defour's four execution configurations, each varying one more
//! thing than the one before, and their names in `FPREV_STAGES`.

/// One column group of Defour's Table II.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Configuration 1: the same execution configuration, repeated.
    Repeat,
    /// Configuration 2: vary the work distribution (pool size, chunk size).
    Distribution,
    /// Configuration 3: vary the schedule (scrambled parallel items, blocks, threads).
    Schedule,
    /// Configuration 4: vary the reduction order: reassociated float reductions, and the
    /// iteration order of loops declared order-free.
    LoopOrder,
}

impl Stage {
    /// All stages, in Table II order.
    pub const ALL: [Stage; 4] = [
        Stage::Repeat,
        Stage::Distribution,
        Stage::Schedule,
        Stage::LoopOrder,
    ];

    /// Table II's configuration number (1..=4), also the top nibble of run seeds.
    pub const fn number(self) -> u64 {
        match self {
            Stage::Repeat => 1,
            Stage::Distribution => 2,
            Stage::Schedule => 3,
            Stage::LoopOrder => 4,
        }
    }

    /// Name used by `FPREV_STAGES`.
    pub const fn name(self) -> &'static str {
        match self {
            Stage::Repeat => "repeat",
            Stage::Distribution => "distribution",
            Stage::Schedule => "schedule",
            Stage::LoopOrder => "loops",
        }
    }

    /// `"<number> <description>"`, as reports show it.
    pub const fn label(self) -> &'static str {
        match self {
            Stage::Repeat => "1 same config",
            Stage::Distribution => "2 vary distribution",
            Stage::Schedule => "3 vary schedule",
            Stage::LoopOrder => "4 vary reductions",
        }
    }

    pub(super) fn from_number(n: u64) -> Option<Stage> {
        Stage::ALL.into_iter().find(|s| s.number() == n)
    }
}

/// The stages an `FPREV_STAGES` value names (`all`, or names or numbers separated by
/// commas), or `None` when it names none, an unknown one or one twice.
pub(super) fn parse_stages(s: &str) -> Option<Vec<Stage>> {
    if s.trim() == "all" {
        return Some(Stage::ALL.to_vec());
    }
    let stages = s
        .split(',')
        .map(|name| {
            let name = name.trim();
            Stage::ALL
                .into_iter()
                .find(|st| st.name() == name || st.number().to_string() == name)
        })
        .collect::<Option<Vec<_>>>()?;
    // A stage named twice would run twice, which is more likely a typo for another
    // stage than a wish: it is refused like any other bad value.
    let distinct = stages
        .iter()
        .enumerate()
        .all(|(i, st)| !stages[..i].contains(st));
    Some(stages).filter(|v| !v.is_empty() && distinct)
}
