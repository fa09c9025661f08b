//! Reading a written bundle's step records one at a time, so a report of a
//! long run costs the memory of one record, not of the whole manifest.
//!
//! [`for_each_step`] parses `arena.json` from a buffered reader and hands
//! each member of its `steps` array to a closure as soon as it is parsed,
//! never collecting the array; every other key is checked (the schema
//! version) or skipped without being kept. What the manifest says besides
//! its steps, a caller reads with [`Bundle::read`](super::Bundle::read) or
//! already holds (the run that wrote it). Writing is `writer`'s job.

use std::fmt;
use std::io::{BufReader, Read};
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::{StepRecord, BUNDLE_SCHEMA, MANIFEST_FILE};
use crate::error::ArenaError;

/// Calls `visit` with each step record of the bundle in `dir`, in dispatch
/// order, and returns how many it read. Only one record is in memory at a
/// time. The outer error is the bundle's: `arena.json` cannot be opened,
/// is not a whole [`BUNDLE_SCHEMA`] manifest, or has a record that is not a
/// step record ([`ArenaError::Bundle`], naming the file); records before
/// the fault have been visited by then. The inner error is the first one
/// `visit` returned, which ends the reading.
pub fn for_each_step<E>(
    dir: &Path,
    mut visit: impl FnMut(StepRecord) -> Result<(), E>,
) -> Result<Result<u64, E>, ArenaError> {
    let path = dir.join(MANIFEST_FILE);
    let refuse = |cause: String| ArenaError::Bundle {
        path: path.display().to_string(),
        cause,
    };
    let file = super::open_regular(&path).map_err(|e| match e {
        super::FileRefusal::Io(e) => refuse(format!(
            "{e}; pass the folder a run wrote (it holds arena.json)"
        )),
        refusal => refuse(refusal.to_string()),
    })?;
    // Bounded like every read of a bundle: a longer file ends the parse.
    let bounded = file.take(super::MAX_FILE_BYTES);
    let mut de = serde_json::Deserializer::from_reader(BufReader::new(bounded));
    let mut refused = None;
    let read = ManifestSeed {
        visit: &mut visit,
        refused: &mut refused,
        count: 0,
    }
    .deserialize(&mut de)
    .and_then(|count| de.end().map(|()| count));
    match (read, refused) {
        (_, Some(e)) => Ok(Err(e)),
        (Ok(count), None) => Ok(Ok(count)),
        (Err(e), None) => Err(refuse(format!("not a {BUNDLE_SCHEMA} manifest: {e}"))),
    }
}

/// The manifest object: its `steps` go to the visitor, its schema version
/// is checked, every other key is skipped.
struct ManifestSeed<'v, F, E> {
    visit: &'v mut F,
    refused: &'v mut Option<E>,
    count: u64,
}

impl<'de, F, E> DeserializeSeed<'de> for ManifestSeed<'_, F, E>
where
    F: FnMut(StepRecord) -> Result<(), E>,
{
    type Value = u64;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u64, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, F, E> Visitor<'de> for ManifestSeed<'_, F, E>
where
    F: FnMut(StepRecord) -> Result<(), E>,
{
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a bundle manifest object")
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<u64, A::Error> {
        let mut steps = false;
        let mut schema = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "steps" if steps => return Err(de::Error::duplicate_field("steps")),
                "steps" => {
                    steps = true;
                    map.next_value_seed(StepsSeed {
                        visit: &mut *self.visit,
                        refused: &mut *self.refused,
                        count: &mut self.count,
                    })?;
                }
                "schema_version" if schema => {
                    return Err(de::Error::duplicate_field("schema_version"))
                }
                "schema_version" => {
                    schema = true;
                    let version: String = map.next_value()?;
                    if version != BUNDLE_SCHEMA {
                        return Err(de::Error::custom(format_args!(
                            "schema {version} is not {BUNDLE_SCHEMA}"
                        )));
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !schema {
            return Err(de::Error::missing_field("schema_version"));
        }
        if !steps {
            return Err(de::Error::missing_field("steps"));
        }
        Ok(self.count)
    }
}

/// The `steps` array: each member parsed and visited before the next.
struct StepsSeed<'v, F, E> {
    visit: &'v mut F,
    refused: &'v mut Option<E>,
    count: &'v mut u64,
}

impl<'de, F, E> DeserializeSeed<'de> for StepsSeed<'_, F, E>
where
    F: FnMut(StepRecord) -> Result<(), E>,
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, F, E> Visitor<'de> for StepsSeed<'_, F, E>
where
    F: FnMut(StepRecord) -> Result<(), E>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of step records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(record) = seq.next_element::<StepRecord>()? {
            if let Err(e) = (self.visit)(record) {
                *self.refused = Some(e);
                // Ends the parse; the caller returns the visitor's error.
                return Err(de::Error::custom("the reader stopped"));
            }
            *self.count += 1;
        }
        Ok(())
    }
}
