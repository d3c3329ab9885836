//! The portable text form of an order model: `fprev-model/1 FAMILY KEY=VALUE ... type=T`,
//! written by `Display`, read by [`OrderModel::parse`], and the serde form.

use super::{Combine, ModelError, ModelShape, OrderModel, SumType};
use std::fmt;

/// The first word of every spec: the format and its version.
pub(crate) const VERSION: &str = "fprev-model/1";

/// The largest parameter a spec may give (lanes, blocks, windows, threads): far above
/// any library's, low enough that building a tree never allocates without bound.
const MAX_PARAMETER: usize = 1 << 20;

/// The family and its parameters, without the version and type: `numpy-pairwise lanes=8
/// block=128`.
pub(crate) fn shape_text(shape: &ModelShape) -> String {
    match *shape {
        ModelShape::Sequential => "sequential".into(),
        ModelShape::Reverse => "reverse".into(),
        ModelShape::Unrolled { lanes, combine } => format!(
            "unrolled lanes={lanes} combine={}",
            match combine {
                Combine::InOrder => "in-order",
                Combine::Pairwise => "pairwise",
                Combine::Folded => "folded",
            }
        ),
        ModelShape::NumpyPairwise { lanes, block } => {
            format!("numpy-pairwise lanes={lanes} block={block}")
        }
        ModelShape::XlaWindows { window } => format!("xla-windows window={window}"),
        ModelShape::RayonHalving { threads } => format!("rayon-halving threads={threads}"),
        ModelShape::TorchCascade {
            width,
            load,
            ilp,
            levels,
        } => format!("torch-cascade width={width} load={load} ilp={ilp} levels={levels}"),
    }
}

impl fmt::Display for ModelShape {
    /// The family and its parameters: `numpy-pairwise lanes=8 block=128`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&shape_text(self))
    }
}

impl fmt::Display for OrderModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{VERSION} {} type={}", self.shape, self.sum_type.name())
    }
}

impl std::str::FromStr for OrderModel {
    type Err = ModelError;
    fn from_str(s: &str) -> Result<OrderModel, ModelError> {
        parse(s)
    }
}

/// The `key=value` words of a spec, each read once.
struct Params<'s> {
    words: Vec<(&'s str, &'s str, bool)>,
}

impl<'s> Params<'s> {
    fn take(&mut self, key: &str) -> Option<&'s str> {
        let w = self
            .words
            .iter_mut()
            .find(|(k, _, used)| *k == key && !used)?;
        w.2 = true;
        Some(w.1)
    }

    /// A whole number in `1..=MAX_PARAMETER`; `default` when the key is absent, an error
    /// when it is absent and has no default.
    fn number(
        &mut self,
        key: &str,
        min: usize,
        default: Option<usize>,
    ) -> Result<usize, ModelError> {
        let Some(text) = self.take(key) else {
            return default.ok_or_else(|| ModelError::Spec(format!("missing {key}=")));
        };
        match text.parse::<usize>() {
            Ok(v) if (min..=MAX_PARAMETER).contains(&v) => Ok(v),
            _ => Err(ModelError::Spec(format!(
                "{key}={text:?}: expected a whole number from {min} to {MAX_PARAMETER}"
            ))),
        }
    }

    fn done(self) -> Result<(), ModelError> {
        match self.words.iter().find(|(_, _, used)| !used) {
            Some((k, _, _)) => Err(ModelError::Spec(format!("unknown or repeated key {k:?}"))),
            None => Ok(()),
        }
    }
}

/// Read a spec; every error names the word at fault.
pub(crate) fn parse(spec: &str) -> Result<OrderModel, ModelError> {
    let mut words = spec.split_whitespace();
    match words.next() {
        Some(VERSION) => {}
        Some(other) => {
            return Err(ModelError::Spec(format!(
                "starts with {other:?}, expected {VERSION:?}"
            )))
        }
        None => return Err(ModelError::Spec("empty".into())),
    }
    let family = words
        .next()
        .ok_or_else(|| ModelError::Spec("no family after the version".into()))?;
    let mut params = Params { words: Vec::new() };
    for w in words {
        let (k, v) = w
            .split_once('=')
            .ok_or_else(|| ModelError::Spec(format!("{w:?} is not key=value")))?;
        params.words.push((k, v, false));
    }
    let shape = match family {
        "sequential" => ModelShape::Sequential,
        "reverse" => ModelShape::Reverse,
        "unrolled" => {
            let lanes = params.number("lanes", 1, None)?;
            let combine = match params.take("combine") {
                Some("in-order") | None => Combine::InOrder,
                Some("pairwise") => Combine::Pairwise,
                Some("folded") if lanes % 2 == 0 => Combine::Folded,
                Some(other) => {
                    return Err(ModelError::Spec(format!(
                        "combine={other:?}: expected in-order, pairwise or (with an even \
                         number of lanes) folded"
                    )))
                }
            };
            ModelShape::Unrolled { lanes, combine }
        }
        "numpy-pairwise" => {
            let lanes = params.number("lanes", 1, Some(8))?;
            let block = params.number("block", 1, Some(128))?;
            if block < lanes {
                return Err(ModelError::Spec(format!(
                    "block={block} is smaller than lanes={lanes}"
                )));
            }
            ModelShape::NumpyPairwise { lanes, block }
        }
        "xla-windows" => ModelShape::XlaWindows {
            window: params.number("window", 2, Some(32))?,
        },
        "rayon-halving" => ModelShape::RayonHalving {
            threads: params.number("threads", 1, None)?,
        },
        "torch-cascade" => ModelShape::TorchCascade {
            width: params.number("width", 1, Some(8))?,
            load: params.number("load", 1, Some(1))?,
            ilp: params.number("ilp", 1, Some(4))?,
            levels: params.number("levels", 1, Some(4))?,
        },
        other => {
            return Err(ModelError::Spec(format!(
                "unknown family {other:?} (sequential, reverse, unrolled, numpy-pairwise, \
                 xla-windows, rayon-halving, torch-cascade)"
            )))
        }
    };
    let sum_type = match params.take("type") {
        Some("f32") => SumType::F32,
        Some("f64") => SumType::F64,
        Some(other) => {
            return Err(ModelError::Spec(format!(
                "type={other:?}: expected f32 or f64"
            )))
        }
        None => return Err(ModelError::Spec("missing type=".into())),
    };
    params.done()?;
    Ok(OrderModel::new(shape, sum_type))
}

#[cfg(feature = "serde")]
mod serde_impl {
    use super::OrderModel;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// The spec string: portable, versioned, and the same text `Display` writes.
    impl Serialize for OrderModel {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_str(&self.to_string())
        }
    }

    impl<'de> Deserialize<'de> for OrderModel {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<OrderModel, D::Error> {
            let text = String::deserialize(d)?;
            OrderModel::parse(&text).map_err(serde::de::Error::custom)
        }
    }
}
