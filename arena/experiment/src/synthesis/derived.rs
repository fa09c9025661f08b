//! A synthesis read as evidence: never taken on its own word. The one
//! check `chio report` of a matrix folder and `chio campaign report` of a
//! matrix row both apply: the folder's `synthesis.json` must be, byte for
//! byte, what the matrix file derives from the run records beside it
//! (`runs/`, read as `--resume` reads them) under the load it states, so a
//! validator marked passed, a cell or a gap's verdict edited into it is
//! refused, naming where it first differs.

use std::path::Path;

use super::{synthesize, to_json};
use crate::execute::recorded_table;
use crate::report::parse;
use crate::Matrix;

/// The file of a matrix's output folder that holds its synthesis.
pub const SYNTHESIS_FILE: &str = "synthesis.json";

/// Whether `bytes` (the synthesis in the output folder `dir`) is what
/// `matrix` (read from the file named `name`) derives from the run records
/// in `dir` under the load the synthesis states; the reason when it is
/// not, or cannot be told.
pub fn derived_again(matrix: &Matrix, name: &str, dir: &Path, bytes: &[u8]) -> Result<(), String> {
    let stated = parse(bytes).map_err(|e| format!("{SYNTHESIS_FILE} {}", e.summary()))?;
    let definition = &matrix.definition().sha256;
    if stated.matrix_id != matrix.id() || stated.definition_sha256 != *definition {
        return Err(format!(
            "{SYNTHESIS_FILE} is a synthesis of matrix {:?} with definition SHA-256 {}, not of {name} (matrix {:?}, definition SHA-256 {definition})",
            stated.matrix_id,
            stated.definition_sha256,
            matrix.id()
        ));
    }
    let table = recorded_table(matrix, dir).map_err(|e| {
        format!(
            "{SYNTHESIS_FILE} cannot be re-derived from the run records in {}: {}",
            dir.display(),
            e.summary()
        )
    })?;
    let again = to_json(&synthesize(matrix, &table, &stated.load))
        .map_err(|e| format!("{SYNTHESIS_FILE} cannot be re-derived: {}", e.summary()))?;
    if again.as_bytes() == bytes {
        return Ok(());
    }
    Err(format!(
        "{SYNTHESIS_FILE} is not what {name} derives from the run records in {} ({})",
        dir.display(),
        first_difference(bytes, again.as_bytes())
    ))
}

/// Where two texts first differ: the byte offset and a short excerpt of
/// each, so a refusal names the edit without dumping either file.
fn first_difference(stated: &[u8], derived: &[u8]) -> String {
    let at = stated
        .iter()
        .zip(derived)
        .position(|(a, b)| a != b)
        .unwrap_or(stated.len().min(derived.len()));
    let excerpt = |b: &[u8]| {
        let end = (at + 24).min(b.len());
        String::from_utf8_lossy(&b[at.min(end)..end]).into_owned()
    };
    format!(
        "at byte {at} it states {:?} where the runs give {:?}",
        excerpt(stated),
        excerpt(derived)
    )
}
