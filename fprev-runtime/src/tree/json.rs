//! The JSON form of a tree (the `serde` feature): the leaf count, the inner nodes' child
//! lists and the canonical text, which must agree with the nodes.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{SumTree, TreeError};

impl SumTree {
    /// JSON form: `{"format":"fprev-sum-tree/1","leaves":n,"canonical":"...","nodes":[...]}`,
    /// where `nodes[k]` lists the children of node `n + k` (see [`from_nodes`](Self::from_nodes)).
    /// Needs the `serde` feature.
    ///
    /// ```
    /// let t = fprev::SumTree::pairwise(4);
    /// let back = fprev::SumTree::from_json(&t.to_json())?;
    /// assert_eq!(t, back);
    /// # Ok::<(), fprev::tree::TreeError>(())
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Read the JSON form written by [`to_json`](Self::to_json). Needs the `serde` feature.
    pub fn from_json(s: &str) -> Result<SumTree, TreeError> {
        serde_json::from_str(s).map_err(|e| TreeError::Json(e.to_string()))
    }
}

#[derive(Serialize, Deserialize)]
struct TreeRepr {
    format: String,
    leaves: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    canonical: Option<String>,
    nodes: Vec<Vec<usize>>,
}

const JSON_FORMAT: &str = "fprev-sum-tree/1";

impl Serialize for SumTree {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let n = self.leaf_count();
        TreeRepr {
            format: JSON_FORMAT.into(),
            leaves: n,
            canonical: Some(self.to_string()),
            nodes: (0..self.inner_count())
                .map(|k| self.children(n + k).iter().map(|&c| c as usize).collect())
                .collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for SumTree {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SumTree, D::Error> {
        let r = TreeRepr::deserialize(d)?;
        if r.format != JSON_FORMAT {
            return Err(serde::de::Error::custom(format!(
                "unknown tree format {:?}, expected {JSON_FORMAT:?}",
                r.format
            )));
        }
        let t = SumTree::from_nodes(r.leaves, r.nodes).map_err(serde::de::Error::custom)?;
        if let Some(c) = r.canonical {
            if c != t.to_string() {
                return Err(serde::de::Error::custom(
                    "the canonical text does not match the nodes",
                ));
            }
        }
        Ok(t)
    }
}
