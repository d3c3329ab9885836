//! Reading `fprev-campaign-report` documents (schema: `$defs/process_report` of `docs/findings.schema.json`)
//! for the findings merge. Every field the merge uses is required and range-checked, every other
//! documented field is type-checked when present, so a damaged or hand-edited report is
//! an error naming its file, line and field instead of a 0 or a `null` in the merged
//! numbers.

use std::fmt;

use serde_json::{Map, Value};

/// The process reports' schema this merge reads.
pub(crate) const REPORT_SCHEMA: &str = "fprev-campaign-report";
pub(crate) const REPORT_VERSION: u64 = 1;

/// The stages a report may hold, as (name, number).
const STAGES: [(&str, u64); 4] = [
    ("repeat", 1),
    ("distribution", 2),
    ("schedule", 3),
    ("loops", 4),
];
/// Why a stage stopped (`ended_by`).
const ENDINGS: [&str; 4] = ["runs", "budget", "replay", "run-numbers"];

/// A report that does not follow the schema: where (`file:line`), which field, and what
/// is wrong with it.
#[derive(Debug, PartialEq)]
pub(crate) struct SchemaError {
    pub place: String,
    pub field: String,
    pub problem: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.place, self.problem)
        } else {
            write!(f, "{}: field {}: {}", self.place, self.field, self.problem)
        }
    }
}

/// One process's report, as the merge uses it.
pub(crate) struct Report {
    /// `file:line` it came from.
    pub place: String,
    pub seed: Option<String>,
    pub binary: String,
    pub tests: Vec<TestRecord>,
    pub sites: Vec<ReportedSite>,
}

pub(crate) struct TestRecord {
    pub name: String,
    pub location: Option<String>,
    pub campaign: String,
    /// (index, count), 1 <= index <= count.
    pub shard: (u64, u64),
    pub reproducible: bool,
    pub reached_a_site: bool,
    pub duration_s: f64,
    pub stages: Vec<StageRecord>,
    pub still_reproduce: Vec<String>,
    pub persisted: Vec<String>,
}

pub(crate) struct StageRecord {
    pub stage: String,
    pub number: u64,
    pub label: String,
    pub runs: u64,
    pub distinct: u64,
    pub differing: u64,
    /// Errors: at least 0, or NaN or +inf (the strings `"NaN"`, `"inf"`).
    pub max_abs: f64,
    pub max_rel: f64,
    pub norm2: f64,
    pub max_ulps: u64,
    pub max_elements: u64,
    pub sites_reached: u64,
    pub duration_s: f64,
    pub ended_by: String,
    pub tokens: Vec<String>,
    pub result_hashes: Vec<String>,
    pub findings: Vec<DifferingRun>,
}

pub(crate) struct DifferingRun {
    pub token: String,
    pub element: Option<u64>,
    /// Any float (non-finite ones written as strings), or none when the lengths differed.
    pub value: Option<f64>,
    pub reference: Option<f64>,
    pub replay: String,
}

pub(crate) struct ReportedSite {
    /// The site as written (merged with its `reached` summed).
    pub json: Value,
    pub compiled: bool,
    pub label: String,
    pub file: String,
    pub line: u64,
    pub reached: u64,
}

/// A float as reports write it: finite ones as JSON numbers, the others as the strings
/// `"NaN"`, `"inf"`, `"-inf"`.
pub(crate) fn float_json(x: f64) -> Value {
    if x.is_nan() {
        Value::from("NaN")
    } else if x == f64::INFINITY {
        Value::from("inf")
    } else if x == f64::NEG_INFINITY {
        Value::from("-inf")
    } else {
        Value::from(x)
    }
}

/// What a JSON value is, for messages: its text, cut short.
fn shown(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

/// Reads the fields of one document, naming `place` and the field path in errors: the
/// reader of process reports here, and of findings reports (`findings.rs`).
pub(crate) struct Reader<'a> {
    pub place: &'a str,
}

type Res<T> = Result<T, SchemaError>;

impl Reader<'_> {
    pub(crate) fn err(&self, field: &str, problem: impl Into<String>) -> SchemaError {
        SchemaError {
            place: self.place.to_string(),
            field: field.to_string(),
            problem: problem.into(),
        }
    }

    pub(crate) fn join(path: &str, key: &str) -> String {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    }

    /// `obj` as an object (`path` names it).
    pub(crate) fn object<'v>(&self, v: &'v Value, path: &str) -> Res<&'v Map<String, Value>> {
        v.as_object()
            .ok_or_else(|| self.err(path, format!("expected an object, found {}", shown(v))))
    }

    /// A required field (null counts as present).
    pub(crate) fn get<'v>(
        &self,
        obj: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Res<&'v Value> {
        obj.get(key)
            .ok_or_else(|| self.err(&Self::join(path, key), "missing"))
    }

    pub(crate) fn u64_of(&self, v: &Value, field: &str) -> Res<u64> {
        v.as_u64().ok_or_else(|| {
            self.err(
                field,
                format!(
                    "expected a whole number from 0 to {}, found {}",
                    u64::MAX,
                    shown(v)
                ),
            )
        })
    }

    pub(crate) fn u64(&self, obj: &Map<String, Value>, path: &str, key: &str) -> Res<u64> {
        self.u64_of(self.get(obj, path, key)?, &Self::join(path, key))
    }

    pub(crate) fn string_of(&self, v: &Value, field: &str) -> Res<String> {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| self.err(field, format!("expected a string, found {}", shown(v))))
    }

    pub(crate) fn string(&self, obj: &Map<String, Value>, path: &str, key: &str) -> Res<String> {
        self.string_of(self.get(obj, path, key)?, &Self::join(path, key))
    }

    /// A string or null.
    pub(crate) fn opt_string(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Res<Option<String>> {
        match self.get(obj, path, key)? {
            Value::Null => Ok(None),
            v => self.string_of(v, &Self::join(path, key)).map(Some),
        }
    }

    pub(crate) fn bool(&self, obj: &Map<String, Value>, path: &str, key: &str) -> Res<bool> {
        let v = self.get(obj, path, key)?;
        v.as_bool().ok_or_else(|| {
            self.err(
                &Self::join(path, key),
                format!("expected true or false, found {}", shown(v)),
            )
        })
    }

    pub(crate) fn array<'v>(
        &self,
        obj: &'v Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Res<&'v [Value]> {
        let v = self.get(obj, path, key)?;
        v.as_array().map(Vec::as_slice).ok_or_else(|| {
            self.err(
                &Self::join(path, key),
                format!("expected an array, found {}", shown(v)),
            )
        })
    }

    pub(crate) fn strings(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
    ) -> Res<Vec<String>> {
        let field = Self::join(path, key);
        self.array(obj, path, key)?
            .iter()
            .enumerate()
            .map(|(i, v)| self.string_of(v, &format!("{field}[{i}]")))
            .collect()
    }

    /// Seconds: a finite number, at least 0.
    fn seconds_of(&self, v: &Value, field: &str) -> Res<f64> {
        match v.as_f64() {
            Some(x) if v.is_number() && x.is_finite() && x >= 0.0 => Ok(x),
            _ => Err(self.err(
                field,
                format!(
                    "expected seconds (a number, at least 0), found {}",
                    shown(v)
                ),
            )),
        }
    }

    fn seconds(&self, obj: &Map<String, Value>, path: &str, key: &str) -> Res<f64> {
        self.seconds_of(self.get(obj, path, key)?, &Self::join(path, key))
    }

    /// Any float: a number, or `"NaN"`, `"inf"`, `"-inf"`.
    fn float_of(&self, v: &Value, field: &str) -> Res<f64> {
        match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => match s.as_str() {
                "NaN" => Some(f64::NAN),
                "inf" => Some(f64::INFINITY),
                "-inf" => Some(f64::NEG_INFINITY),
                _ => None,
            },
            _ => None,
        }
        .ok_or_else(|| {
            self.err(
                field,
                format!(
                    "expected a number or \"NaN\", \"inf\", \"-inf\", found {}",
                    shown(v)
                ),
            )
        })
    }

    /// An error measure: at least 0, or `"NaN"`, or `"inf"`.
    fn error(&self, obj: &Map<String, Value>, path: &str, key: &str) -> Res<f64> {
        let field = Self::join(path, key);
        let v = self.get(obj, path, key)?;
        match self.float_of(v, &field) {
            Ok(x) if x.is_nan() || x >= 0.0 => Ok(x),
            _ => Err(self.err(
                &field,
                format!(
                    "expected an error (a number at least 0, or \"NaN\" or \"inf\"), found {}",
                    shown(v)
                ),
            )),
        }
    }

    /// A float or null.
    fn opt_float(&self, obj: &Map<String, Value>, path: &str, key: &str) -> Res<Option<f64>> {
        match self.get(obj, path, key)? {
            Value::Null => Ok(None),
            v => self.float_of(v, &Self::join(path, key)).map(Some),
        }
    }

    /// `{index, count}` with 1 <= index <= count.
    fn shard_of(&self, v: &Value, field: &str) -> Res<(u64, u64)> {
        let o = self.object(v, field)?;
        let index = self.u64(o, field, "index")?;
        let count = self.u64(o, field, "count")?;
        if count == 0 || index == 0 || index > count {
            return Err(self.err(
                field,
                format!("shard {index}/{count} does not exist: shards are numbered 1 to N (k/N)"),
            ));
        }
        Ok((index, count))
    }

    /// Checks an optional field with `check` when it is present.
    fn if_present(
        &self,
        obj: &Map<String, Value>,
        path: &str,
        key: &str,
        check: impl FnOnce(&Value, &str) -> Res<()>,
    ) -> Res<()> {
        match obj.get(key) {
            Some(v) => check(v, &Self::join(path, key)),
            None => Ok(()),
        }
    }

    fn report(&self, doc: &Value) -> Res<Report> {
        let o = self.object(doc, "")?;
        let schema = self.get(o, "", "schema")?;
        if schema != REPORT_SCHEMA {
            return Err(self.err(
                "",
                format!(
                    "not an fprev campaign report (schema {}; expected {REPORT_SCHEMA:?})",
                    shown(schema)
                ),
            ));
        }
        let version = self.get(o, "", "version")?;
        if version != REPORT_VERSION {
            return Err(self.err(
                "",
                format!(
                    "report schema version {} (this fprev reads version {REPORT_VERSION})",
                    shown(version)
                ),
            ));
        }
        self.if_present(o, "", "fprev", |v, f| self.string_of(v, f).map(drop))?;
        self.if_present(o, "", "algorithm", |v, f| self.u64_of(v, f).map(drop))?;
        self.if_present(o, "", "pid", |v, f| self.u64_of(v, f).map(drop))?;
        self.if_present(o, "", "finished", |v, f| self.string_of(v, f).map(drop))?;
        self.if_present(o, "", "shard", |v, f| match v {
            Value::Null => Ok(()),
            v => self.shard_of(v, f).map(drop),
        })?;
        self.if_present(o, "", "time_budget_s", |v, f| match v {
            Value::Null => Ok(()),
            v => self.seconds_of(v, f).map(drop),
        })?;
        self.if_present(o, "", "coverage", |v, f| {
            let c = self.object(v, f)?;
            for key in ["compiled", "reached", "left_alone"] {
                self.u64(c, f, key)?;
            }
            Ok(())
        })?;
        self.if_present(o, "", "chains", |v, f| {
            v.as_array()
                .map(drop)
                .ok_or_else(|| self.err(f, format!("expected an array, found {}", shown(v))))
        })?;
        let tests = self
            .array(o, "", "tests")?
            .iter()
            .enumerate()
            .map(|(i, t)| self.test(t, &format!("tests[{i}]")))
            .collect::<Res<Vec<_>>>()?;
        let sites = self
            .array(o, "", "sites")?
            .iter()
            .enumerate()
            .map(|(i, s)| self.site(s, &format!("sites[{i}]")))
            .collect::<Res<Vec<_>>>()?;
        Ok(Report {
            place: self.place.to_string(),
            seed: self.opt_string(o, "", "seed")?,
            binary: self.string(o, "", "binary")?,
            tests,
            sites,
        })
    }

    fn test(&self, v: &Value, path: &str) -> Res<TestRecord> {
        let o = self.object(v, path)?;
        self.if_present(o, path, "replay", |v, f| {
            v.as_bool()
                .map(drop)
                .ok_or_else(|| self.err(f, format!("expected true or false, found {}", shown(v))))
        })?;
        for key in ["floats", "max_threads"] {
            self.if_present(o, path, key, |v, f| self.u64_of(v, f).map(drop))?;
        }
        self.if_present(o, path, "time_budget_s", |v, f| match v {
            Value::Null => Ok(()),
            v => self.seconds_of(v, f).map(drop),
        })?;
        let shard = self.shard_of(self.get(o, path, "shard")?, &Self::join(path, "shard"))?;
        let stages = self
            .array(o, path, "stages")?
            .iter()
            .enumerate()
            .map(|(i, s)| self.stage(s, &format!("{path}.stages[{i}]"), shard))
            .collect::<Res<Vec<_>>>()?;
        let (still_reproduce, persisted) = match self.get(o, path, "regressions")? {
            Value::Null => (Vec::new(), Vec::new()),
            r => {
                let field = Self::join(path, "regressions");
                let r = self.object(r, &field)?;
                self.if_present(r, &field, "file", |v, f| self.string_of(v, f).map(drop))?;
                if r.contains_key("replayed") {
                    self.strings(r, &field, "replayed")?;
                }
                (
                    self.strings(r, &field, "still_reproduce")?,
                    self.strings(r, &field, "added")?,
                )
            }
        };
        Ok(TestRecord {
            name: self.string(o, path, "name")?,
            location: self.opt_string(o, path, "location")?,
            campaign: self.string(o, path, "campaign")?,
            shard,
            reproducible: self.bool(o, path, "reproducible")?,
            reached_a_site: self.bool(o, path, "reached_a_site")?,
            duration_s: self.seconds(o, path, "duration_s")?,
            stages,
            still_reproduce,
            persisted,
        })
    }

    fn stage(&self, v: &Value, path: &str, shard: (u64, u64)) -> Res<StageRecord> {
        let o = self.object(v, path)?;
        let (stage, number) = self.stage_name(o, path)?;
        let runs = self.u64(o, path, "runs")?;
        let distinct = self.u64(o, path, "distinct")?;
        let differing = self.u64(o, path, "differing")?;
        for (key, n) in [("distinct", distinct), ("differing", differing)] {
            if n > runs {
                return Err(self.err(
                    &Self::join(path, key),
                    format!("{n} is more than the stage's {runs} runs"),
                ));
            }
        }
        let ended_by = self.string(o, path, "ended_by")?;
        if !ENDINGS.contains(&ended_by.as_str()) {
            return Err(self.err(
                &Self::join(path, "ended_by"),
                format!("{ended_by:?} is not one of {}", ENDINGS.join(", ")),
            ));
        }
        self.run_numbers(o, path, shard)?;
        if o.contains_key("orders") {
            for (i, ord) in self.array(o, path, "orders")?.iter().enumerate() {
                let f = format!("{path}.orders[{i}]");
                let ord = self.object(ord, &f)?;
                self.string(ord, &f, "site")?;
                self.u64(ord, &f, "invocations")?;
                self.u64(ord, &f, "distinct")?;
            }
        }
        let result_hashes = self.strings(o, path, "result_hashes")?;
        for (i, h) in result_hashes.iter().enumerate() {
            if h.len() != 16 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(self.err(
                    &format!("{path}.result_hashes[{i}]"),
                    format!("{h:?} is not a hash (16 hexadecimal digits)"),
                ));
            }
        }
        let findings = self
            .array(o, path, "findings")?
            .iter()
            .enumerate()
            .map(|(i, f)| self.finding(f, &format!("{path}.findings[{i}]")))
            .collect::<Res<Vec<_>>>()?;
        Ok(StageRecord {
            stage,
            number,
            label: self.string(o, path, "label")?,
            runs,
            distinct,
            differing,
            max_abs: self.error(o, path, "max_abs")?,
            max_rel: self.error(o, path, "max_rel")?,
            norm2: self.error(o, path, "norm2")?,
            max_ulps: self.u64(o, path, "max_ulps")?,
            max_elements: self.u64(o, path, "max_elements")?,
            sites_reached: self.u64(o, path, "sites_reached")?,
            duration_s: self.seconds(o, path, "duration_s")?,
            ended_by,
            tokens: self.strings(o, path, "tokens")?,
            result_hashes,
            findings,
        })
    }

    /// The stage's name and number, which must be one of [`STAGES`] and agree.
    fn stage_name(&self, o: &Map<String, Value>, path: &str) -> Res<(String, u64)> {
        let stage = self.string(o, path, "stage")?;
        let number = self.u64(o, path, "number")?;
        match STAGES.iter().find(|(name, _)| *name == stage) {
            None => {
                return Err(self.err(
                    &Self::join(path, "stage"),
                    format!("{stage:?} is not a stage (repeat, distribution, schedule, loops)"),
                ))
            }
            Some(&(_, n)) if n != number => {
                return Err(self.err(
                    &Self::join(path, "number"),
                    format!("stage {stage:?} is number {n}, not {number}"),
                ))
            }
            Some(_) => {}
        }
        Ok((stage, number))
    }

    fn run_numbers(&self, o: &Map<String, Value>, path: &str, shard: (u64, u64)) -> Res<()> {
        // The writer derives a stage's run numbers from its test's shard k/N: first k-1,
        // step N; anything else is not what ran.
        let rn_path = Self::join(path, "run_numbers");
        let rn = self.object(self.get(o, path, "run_numbers")?, &rn_path)?;
        let first = self.u64(rn, &rn_path, "first")?;
        let step = self.u64(rn, &rn_path, "step")?;
        if step == 0 {
            return Err(self.err(
                &Self::join(&rn_path, "step"),
                "0: run numbers first + step x j need a step of at least 1",
            ));
        }
        if (first, step) != (shard.0 - 1, shard.1) {
            return Err(self.err(
                &rn_path,
                format!(
                    "{{first: {first}, step: {step}}} is not shard {}/{}'s {{first: {}, step: {}}}",
                    shard.0,
                    shard.1,
                    shard.0 - 1,
                    shard.1
                ),
            ));
        }
        Ok(())
    }

    fn finding(&self, v: &Value, path: &str) -> Res<DifferingRun> {
        let o = self.object(v, path)?;
        self.if_present(o, path, "floats", |v, f| self.u64_of(v, f).map(drop))?;
        let element = match self.get(o, path, "element")? {
            Value::Null => None,
            v => Some(self.u64_of(v, &Self::join(path, "element"))?),
        };
        Ok(DifferingRun {
            token: self.string(o, path, "token")?,
            element,
            value: self.opt_float(o, path, "value")?,
            reference: self.opt_float(o, path, "reference")?,
            replay: self.string(o, path, "replay")?,
        })
    }

    fn site(&self, v: &Value, path: &str) -> Res<ReportedSite> {
        let o = self.object(v, path)?;
        let kind = self.opt_string(o, path, "kind")?;
        self.if_present(o, path, "reason", |v, f| match v {
            Value::Null => Ok(()),
            v => self.string_of(v, f).map(drop),
        })?;
        Ok(ReportedSite {
            json: v.clone(),
            compiled: kind.is_some(),
            label: self.string(o, path, "label")?,
            file: self.string(o, path, "file")?,
            line: self.u64(o, path, "line")?,
            reached: self.u64(o, path, "reached")?,
        })
    }
}

/// Every document of a report file's text (JSON Lines; blank lines skipped), checked
/// against the schema; `name` is how errors name the file.
pub(crate) fn parse(name: &str, text: &str) -> Result<Vec<Report>, SchemaError> {
    let mut reports = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let place = format!("{name}:{}", i + 1);
        let reader = Reader { place: &place };
        let doc: Value = serde_json::from_str(line)
            .map_err(|e| reader.err("", format!("not a JSON document: {e}")))?;
        reports.push(reader.report(&doc)?);
    }
    if reports.is_empty() {
        return Err(SchemaError {
            place: name.to_string(),
            field: String::new(),
            problem: "no report in the file".to_string(),
        });
    }
    Ok(reports)
}

#[cfg(test)]
#[path = "reports/fuzz.rs"]
mod fuzz;
