//! The bytes a scenario was validated from, kept once for the run that
//! records them.
//!
//! A run hashes the scenario's bytes into its manifest and copies them into
//! its bundle, and a long schedule is read back one step table at a time,
//! so the bytes must stay exactly the ones validated even if the file is
//! edited during the run. [`ScenarioText`] holds them either in memory (a
//! scenario given as text) or in a private spool: an anonymous temporary
//! file the loader copies the scenario into while it reads it, which no
//! other process can name and which disappears with the last handle. A
//! spooled scenario's memory therefore does not grow with its file: the
//! loader keeps the offsets of each step table, and a step is parsed
//! again from the spool when a run reaches it.

use std::fmt;
use std::fs::File;
use std::io::{self, Write};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// Where one step table lies in the scenario's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Byte offset of the table's header.
    pub start: u64,
    /// Length of the table in bytes.
    pub len: u32,
}

/// The scenario's bytes, in memory or spooled; cheap to clone.
#[derive(Clone)]
pub struct ScenarioText {
    inner: Arc<Inner>,
}

enum Inner {
    Memory {
        bytes: Vec<u8>,
        sha256: String,
    },
    Spool {
        file: File,
        len: u64,
        sha256: String,
    },
}

impl fmt::Debug for ScenarioText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScenarioText")
            .field("len", &self.len())
            .field("spooled", &matches!(*self.inner, Inner::Spool { .. }))
            .field("sha256", &self.sha256())
            .finish()
    }
}

impl PartialEq for ScenarioText {
    /// Two texts are equal when their bytes are (compared by hash).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.sha256() == other.sha256()
    }
}

impl ScenarioText {
    /// Bytes held in memory.
    pub fn memory(bytes: Vec<u8>) -> Self {
        let sha256 = hex::encode(Sha256::digest(&bytes));
        Self {
            inner: Arc::new(Inner::Memory { bytes, sha256 }),
        }
    }

    /// A spool the loader has written `len` bytes to, whose SHA-256 is `sha256`.
    pub(crate) fn spooled(file: File, len: u64, sha256: String) -> Self {
        Self {
            inner: Arc::new(Inner::Spool { file, len, sha256 }),
        }
    }

    /// The number of bytes.
    pub fn len(&self) -> u64 {
        match &*self.inner {
            Inner::Memory { bytes, .. } => bytes.len() as u64,
            Inner::Spool { len, .. } => *len,
        }
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// SHA-256 of the bytes, lowercase hex.
    pub fn sha256(&self) -> &str {
        match &*self.inner {
            Inner::Memory { sha256, .. } | Inner::Spool { sha256, .. } => sha256,
        }
    }

    /// The bytes of `span`.
    pub(crate) fn read_span(&self, span: Span) -> io::Result<Vec<u8>> {
        match &*self.inner {
            Inner::Memory { bytes, .. } => {
                let start = usize::try_from(span.start).unwrap_or(usize::MAX);
                let end = start.saturating_add(span.len as usize);
                bytes.get(start..end).map(<[u8]>::to_vec).ok_or_else(|| {
                    io::Error::new(io::ErrorKind::UnexpectedEof, "span past the end")
                })
            }
            Inner::Spool { file, .. } => {
                let mut out = vec![0; span.len as usize];
                read_exact_at(file, &mut out, span.start)?;
                Ok(out)
            }
        }
    }

    /// Copies every byte to `out`, in order.
    pub fn copy_to(&self, out: &mut dyn Write) -> io::Result<()> {
        match &*self.inner {
            Inner::Memory { bytes, .. } => out.write_all(bytes),
            Inner::Spool { file, len, .. } => {
                let mut chunk = vec![0; 64 * 1024];
                let mut offset = 0;
                while offset < *len {
                    let take = chunk.len().min((*len - offset) as usize);
                    read_exact_at(file, &mut chunk[..take], offset)?;
                    out.write_all(&chunk[..take])?;
                    offset += take as u64;
                }
                Ok(())
            }
        }
    }

    /// Every byte, in memory.
    pub fn to_vec(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        self.copy_to(&mut out)?;
        Ok(out)
    }
}

/// Reads exactly `buf.len()` bytes of `file` from `offset`, without moving
/// any shared cursor (so clones of a spool read independently).
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt;
        file.read_exact_at(buf, offset)
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read, Seek, SeekFrom};
        let mut handle = file.try_clone()?;
        handle.seek(SeekFrom::Start(offset))?;
        handle.read_exact(buf)
    }
}

/// Writes what the loader reads into a new spool, hashing as it goes.
pub(crate) struct Spooler {
    out: io::BufWriter<File>,
    hasher: Sha256,
    len: u64,
}

impl Spooler {
    /// A new anonymous spool.
    pub(crate) fn new() -> io::Result<Self> {
        Ok(Self {
            out: io::BufWriter::new(tempfile::tempfile()?),
            hasher: Sha256::new(),
            len: 0,
        })
    }

    /// Appends `bytes`.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.hasher.update(bytes);
        self.len += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    /// The finished text.
    pub(crate) fn finish(self) -> io::Result<ScenarioText> {
        // Readers use positioned reads, so the write cursor stays where it is.
        let file = self.out.into_inner().map_err(|e| e.into_error())?;
        Ok(ScenarioText::spooled(
            file,
            self.len,
            hex::encode(self.hasher.finalize()),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A spool gives back exactly what was written, by span and whole, with the hash of those bytes.
    #[test]
    fn spool_reads_back_what_was_written() {
        let mut spooler = Spooler::new().unwrap();
        spooler.write(b"id = \"a\"\n").unwrap();
        spooler.write(b"[[steps]]\nid = \"s\"\n").unwrap();
        let text = spooler.finish().unwrap();
        let memory = ScenarioText::memory(b"id = \"a\"\n[[steps]]\nid = \"s\"\n".to_vec());
        assert_eq!(text, memory);
        assert_eq!(text.len(), 28);
        let span = Span { start: 9, len: 19 };
        assert_eq!(text.read_span(span).unwrap(), b"[[steps]]\nid = \"s\"\n");
        assert_eq!(
            memory.read_span(span).unwrap(),
            text.read_span(span).unwrap()
        );
        assert_eq!(text.to_vec().unwrap(), memory.to_vec().unwrap());
        assert!(text.read_span(Span { start: 20, len: 9 }).is_err());
        assert!(memory.read_span(Span { start: 20, len: 9 }).is_err());
    }
}
