//! The in-memory store's receipt log: the order and an index in memory, the
//! bytes in an unnamed temporary file.
//!
//! An embedded run keeps trust-control's whole state in its own process,
//! and a receipt is by far the largest thing in it (a signed body of some
//! 800 bytes per call, where a revocation or a hold is a few dozen). Kept
//! in memory, the receipt log made an embedded run's peak memory grow with
//! its schedule. Here each receipt's id and body are appended to a file the
//! operating system removes when the store is dropped (or the process
//! ends), and memory keeps, per receipt, where its bytes are (16 bytes) and
//! a 16-byte digest of its id in the index, whatever the body's size.
//!
//! Reading back is exact: [`ReceiptLog::body_of`] confirms the stored id
//! before it answers, so two ids sharing a digest could only make an append
//! fail, never answer another receipt's body. Nothing here is durable (the
//! file is unnamed, and gone with the store); durability is the SQLite
//! store's. A failure to write or read the file is a
//! [`TrustError::Spill`], which the kernel treats like any store failure:
//! the call it concerns is refused.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

use sha2::{Digest, Sha256};

use crate::model::{ReceiptRecord, StoredReceipt};
use crate::TrustError;

/// Where one receipt's bytes are in the spill file: its id, then its body.
#[derive(Debug, Clone, Copy)]
struct Slot {
    offset: u64,
    id_len: u32,
    body_len: u32,
}

/// The receipt log in append order; `seq` is index + 1.
#[derive(Debug, Default)]
pub(crate) struct ReceiptLog {
    slots: Vec<Slot>,
    /// Index into `slots` by the receipt id's [`key_digest`].
    by_id: BTreeMap<KeyDigest, u32>,
    /// Created on the first append, so an unused store opens no file.
    file: Option<File>,
    /// Bytes appended so far: the next slot's offset.
    end: u64,
    /// The appended bytes not yet written to the file, which hold the
    /// offsets from `end - pending.len()` on. Appends gather here and go
    /// to the file together once [`PENDING_BYTES`] have gathered (one write
    /// for many receipts); a read of one of them is answered from here.
    pending: Vec<u8>,
    /// Where the spill file is created; the system's temporary directory
    /// when `None`.
    dir: Option<std::path::PathBuf>,
}

/// How many appended bytes [`ReceiptLog`] gathers before it writes them.
const PENDING_BYTES: usize = 64 * 1024;

/// The first 16 bytes of a key's SHA-256: what the in-memory store keeps of
/// a receipt id or a request key in its indexes. Two keys sharing one can
/// only be refused (a receipt id is confirmed against the stored id; a
/// request key would read as seen), never admitted.
pub(crate) type KeyDigest = [u8; 16];

/// The [`KeyDigest`] of `key`.
pub(crate) fn key_digest(key: &str) -> KeyDigest {
    let digest = Sha256::digest(key.as_bytes());
    let mut head = [0; 16];
    head.copy_from_slice(&digest[..16]);
    head
}

fn spill(context: &str, error: &std::io::Error) -> TrustError {
    TrustError::Spill {
        detail: format!("{context}: {error}"),
    }
}

fn utf8_id(index: usize, id: Vec<u8>) -> Result<String, TrustError> {
    String::from_utf8(id).map_err(|_| TrustError::Spill {
        detail: format!("receipt {} in the spill file is not UTF-8", index + 1),
    })
}

fn length(what: &str, len: usize) -> Result<u32, TrustError> {
    u32::try_from(len).map_err(|_| TrustError::Spill {
        detail: format!(
            "a receipt {what} of {len} is more than the log stores (at most {})",
            u32::MAX
        ),
    })
}

impl ReceiptLog {
    /// A log whose spill file is created in `dir` rather than the system's
    /// temporary directory.
    #[cfg(test)]
    pub(crate) fn spilling_to(dir: &std::path::Path) -> Self {
        Self {
            dir: Some(dir.to_path_buf()),
            ..Self::default()
        }
    }

    /// Creates the spill file now, if it is not open yet: a store about to
    /// serve a run proves it can keep receipts before any is decided.
    pub(crate) fn open(&mut self) -> Result<(), TrustError> {
        if self.file.is_none() {
            let file = self
                .dir
                .as_ref()
                .map_or_else(tempfile::tempfile, tempfile::tempfile_in)
                .map_err(|e| spill("cannot create the receipt spill file", &e))?;
            self.file = Some(file);
        }
        Ok(())
    }

    /// How many receipts the log holds.
    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    /// The stored body of `receipt_id`, if the log holds it.
    pub(crate) fn body_of(&mut self, receipt_id: &str) -> Result<Option<Vec<u8>>, TrustError> {
        let Some(&index) = self.by_id.get(&key_digest(receipt_id)) else {
            return Ok(None);
        };
        let index = index as usize;
        let (id, body) = self.read(index)?;
        if id != receipt_id {
            return Err(TrustError::Spill {
                detail: format!(
                    "receipt ids {id:?} and {receipt_id:?} share an index digest; the log cannot hold both"
                ),
            });
        }
        Ok(Some(body))
    }

    /// Appends `receipts`, which the caller has checked the log does not
    /// hold, all or none: their bytes are gathered (and, when enough have
    /// gathered, written) in one piece before the index learns of any, so a
    /// failed write leaves the log as it was.
    pub(crate) fn extend(&mut self, receipts: &[&ReceiptRecord]) -> Result<(), TrustError> {
        if receipts.is_empty() {
            return Ok(());
        }
        let mut bytes = Vec::new();
        let mut slots = Vec::with_capacity(receipts.len());
        for receipt in receipts {
            slots.push(Slot {
                offset: self.end + bytes.len() as u64,
                id_len: length("id length", receipt.receipt_id.len())?,
                body_len: length("body length", receipt.body.len())?,
            });
            bytes.extend_from_slice(receipt.receipt_id.as_bytes());
            bytes.extend_from_slice(&receipt.body);
        }
        self.open()?;
        let first =
            length("log count", self.slots.len() + receipts.len()).map(|_| self.slots.len())?;
        self.pending.extend_from_slice(&bytes);
        self.end += bytes.len() as u64;
        if self.pending.len() >= PENDING_BYTES {
            if let Err(error) = self.write_pending() {
                // This append's bytes leave with it; those gathered before
                // stay, to be written with the next.
                self.pending.truncate(self.pending.len() - bytes.len());
                self.end -= bytes.len() as u64;
                return Err(error);
            }
        }
        for (offset, (receipt, slot)) in receipts.iter().zip(slots).enumerate() {
            // In range: `length` checked the count above.
            self.by_id
                .insert(key_digest(&receipt.receipt_id), (first + offset) as u32);
            self.slots.push(slot);
        }
        Ok(())
    }

    /// Up to `page` receipts after the first `start`, with their `seq`.
    pub(crate) fn page(
        &mut self,
        start: usize,
        page: usize,
    ) -> Result<Vec<StoredReceipt>, TrustError> {
        let end = start.saturating_add(page).min(self.slots.len());
        (start.min(end)..end)
            .map(|index| {
                let (receipt_id, body) = self.read(index)?;
                Ok(StoredReceipt {
                    seq: index as u64 + 1,
                    receipt_id,
                    body,
                })
            })
            .collect()
    }

    /// Writes the gathered bytes to the file after those it holds.
    fn write_pending(&mut self) -> Result<(), TrustError> {
        let written = self.end - (self.pending.len() as u64);
        let file = self.file.as_mut().ok_or_else(|| TrustError::Spill {
            detail: "the receipt spill file is missing although receipts are gathered for it"
                .into(),
        })?;
        file.seek(SeekFrom::Start(written))
            .and_then(|_| file.write_all(&self.pending))
            .map_err(|e| spill("cannot write the receipt spill file", &e))?;
        self.pending.clear();
        Ok(())
    }

    fn read(&mut self, index: usize) -> Result<(String, Vec<u8>), TrustError> {
        let slot = self.slots[index];
        let written = self.end - (self.pending.len() as u64);
        if slot.offset >= written {
            let at = (slot.offset - written) as usize;
            let id_end = at + slot.id_len as usize;
            let id = self.pending[at..id_end].to_vec();
            let body = self.pending[id_end..id_end + slot.body_len as usize].to_vec();
            return utf8_id(index, id).map(|id| (id, body));
        }
        let file = self.file.as_mut().ok_or_else(|| TrustError::Spill {
            detail: "the receipt spill file is missing although the log holds receipts".into(),
        })?;
        let mut id = vec![0; slot.id_len as usize];
        let mut body = vec![0; slot.body_len as usize];
        file.seek(SeekFrom::Start(slot.offset))
            .and_then(|_| file.read_exact(&mut id))
            .and_then(|_| file.read_exact(&mut body))
            .map_err(|e| spill("cannot read the receipt spill file", &e))?;
        utf8_id(index, id).map(|id| (id, body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn receipt(id: &str, body: &str) -> ReceiptRecord {
        ReceiptRecord {
            receipt_id: id.into(),
            body: body.as_bytes().to_vec(),
        }
    }

    #[test]
    fn bodies_come_back_exactly_by_id_and_by_page() {
        let mut log = ReceiptLog::default();
        assert_eq!(log.body_of("r1").unwrap(), None);
        assert!(log.page(0, 10).unwrap().is_empty());
        let bodies = ["{\"a\":1}", "", "{\"b\":\"\u{e9}\"}"];
        let records: Vec<ReceiptRecord> = (0..bodies.len())
            .map(|i| receipt(&format!("r{i}"), bodies[i]))
            .collect();
        log.extend(&[&records[0]]).unwrap();
        log.extend(&[&records[1], &records[2]]).unwrap();
        assert_eq!(log.len(), 3);
        for (i, body) in bodies.iter().enumerate() {
            assert_eq!(
                log.body_of(&format!("r{i}")).unwrap().as_deref(),
                Some(body.as_bytes())
            );
        }
        assert_eq!(log.body_of("r3").unwrap(), None);
        let page = log.page(1, 5).unwrap();
        assert_eq!(
            page.iter()
                .map(|r| (r.seq, r.receipt_id.as_str()))
                .collect::<Vec<_>>(),
            [(2, "r1"), (3, "r2")]
        );
        assert_eq!(page[1].body, bodies[2].as_bytes());
        assert!(log.page(3, 5).unwrap().is_empty());
        assert!(log.page(usize::MAX, 5).unwrap().is_empty());
    }

    // Bodies read back exactly whether they are still gathered in memory or already written to the file, across several writes of gathered bytes.
    #[test]
    fn bodies_come_back_from_the_gathered_bytes_and_the_file() {
        let mut log = ReceiptLog::default();
        let body = "x".repeat(1000);
        let records: Vec<ReceiptRecord> = (0..200)
            .map(|i| receipt(&format!("r{i}"), &format!("{i}:{body}")))
            .collect();
        for (i, record) in records.iter().enumerate() {
            log.extend(&[record]).unwrap();
            // The first, one from the middle and the newest, each time.
            for j in [0, i / 2, i] {
                assert_eq!(
                    log.body_of(&format!("r{j}")).unwrap().unwrap(),
                    records[j].body
                );
            }
        }
        assert!(log.end > PENDING_BYTES as u64 * 2);
        assert!(log.pending.len() < PENDING_BYTES);
        let page = log.page(0, 200).unwrap();
        assert_eq!(page.len(), 200);
        for (stored, record) in page.iter().zip(&records) {
            assert_eq!(stored.receipt_id, record.receipt_id);
            assert_eq!(stored.body, record.body);
        }
    }

    #[test]
    fn a_failed_spill_refuses_the_whole_batch_and_keeps_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-directory");
        let mut log = ReceiptLog::spilling_to(&missing);
        let (a, b) = (receipt("a", "{}"), receipt("b", "{}"));
        let err = log.extend(&[&a, &b]).unwrap_err();
        assert!(matches!(err, TrustError::Spill { .. }), "{err}");
        assert!(err.to_string().contains("TMPDIR"), "{err}");
        assert_eq!(log.len(), 0);
        assert_eq!(log.body_of("a").unwrap(), None);
        std::fs::create_dir(&missing).unwrap();
        log.extend(&[&a, &b]).unwrap();
        assert_eq!(log.len(), 2);
        assert_eq!(log.page(0, 10).unwrap()[1].receipt_id, "b");
    }
}
