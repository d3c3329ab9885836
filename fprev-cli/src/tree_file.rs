//! Tree files: the trees `fprev diff` compares and `fprev reveal --hint` proves first,
//! in canonical text or JSON, read with a cap on their size.

use std::path::Path;

use fprev::SumTree;

use crate::console::CommandFailure;

/// The largest tree file `diff` and `--hint` read: canonical text of about 25 million
/// leaves. Read through `Read::take`, so a device or a pipe is never read past it.
const MAX_TREE_FILE: u64 = 256 << 20;

/// The tree in the file at `path` (canonical text or JSON), refused past
/// [`MAX_TREE_FILE`] bytes.
pub fn read_tree(path: &Path) -> Result<SumTree, CommandFailure> {
    use std::io::Read;
    let name = path.display();
    let file =
        std::fs::File::open(path).map_err(|e| CommandFailure::Message(format!("{name}: {e}")))?;
    let mut bytes = Vec::new();
    file.take(MAX_TREE_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CommandFailure::Message(format!("{name}: {e}")))?;
    if bytes.len() as u64 > MAX_TREE_FILE {
        return Err(CommandFailure::Message(format!(
            "{name}: larger than {} MiB: not a tree file (fprev reads trees of up to about \
             25 million leaves)",
            MAX_TREE_FILE >> 20
        )));
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        CommandFailure::Message(format!(
            "{name}: not UTF-8 text (byte {} is not valid UTF-8)",
            e.utf8_error().valid_up_to()
        ))
    })?;
    parse_tree(&text).map_err(|e| CommandFailure::Message(format!("{name}: {e}")))
}

/// A tree in canonical text or JSON.
pub fn parse_tree(text: &str) -> Result<SumTree, String> {
    let t = text.trim();
    if t.starts_with('{') || t.starts_with('[') {
        SumTree::from_json(t).map_err(|e| e.to_string())
    } else {
        t.parse().map_err(|e: fprev::tree::TreeError| e.to_string())
    }
}

/// A hint given as canonical text, or as a file holding canonical text or JSON.
pub fn read_hint(hint: &str) -> Result<SumTree, CommandFailure> {
    let t = hint.trim();
    if t.starts_with('(') || t.parse::<usize>().is_ok() {
        return parse_tree(t).map_err(|e| CommandFailure::Message(format!("--hint {hint}: {e}")));
    }
    read_tree(Path::new(hint))
}
