//! Reading a file as untrusted input: only a regular file, never past a bound.
//!
//! Every file a command reads as input goes through here. An entry that
//! is a named pipe, a socket or a device is refused before it is opened
//! (so reading never blocks on a pipe nor runs on through `/dev/zero`),
//! the file is opened without blocking (`O_NONBLOCK`) and checked again as
//! opened, so one swapped in meanwhile is refused too, and no more than a
//! bound is read: a longer file is refused after one byte past the bound,
//! never read to its end. Two openers differ only in links:
//!
//! - [`open_regular`] refuses a symbolic link (`O_NOFOLLOW`): for the
//!   files of a folder someone handed over (a bundle, a result folder), an
//!   entry must be what it claims to be;
//! - [`open_named`] follows one to the regular file it names: for a file
//!   the user names on the command line (a scenario, an envelope, a trace),
//!   where a link is the user's own choice.
//!
//! A refusal is a [`FileRefusal`]; [`FileRefusal::describe`] words it for
//! any input, its `Display` for a file of a result folder.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug)]
pub enum FileRefusal {
    /// The entry is no regular file; what it is instead.
    NotRegular(&'static str),
    /// The file holds more than the bound.
    TooLarge(u64),
    /// The filesystem's error.
    Io(std::io::Error),
}

impl std::fmt::Display for FileRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FileRefusal::NotRegular(kind) => write!(
                f,
                "it is {kind}, not a regular file; a run writes plain files and folders only"
            ),
            FileRefusal::TooLarge(limit) => write!(
                f,
                "it holds more than {limit} bytes, the most a file of a bundle may hold"
            ),
            FileRefusal::Io(e) => write!(f, "{e}"),
        }
    }
}

impl FileRefusal {
    /// The refusal as a cause, for an input `what` is (`a scenario file`,
    /// `an envelope`): `it is a named pipe, not a regular file`, `it holds
    /// more than 64 MiB (67108864 bytes), the most an envelope may hold`, or
    /// the filesystem's error kind (`entity not found`).
    pub fn describe(&self, what: &str) -> String {
        match self {
            FileRefusal::NotRegular(kind) => format!("it is {kind}, not a regular file"),
            FileRefusal::TooLarge(limit) => format!(
                "it holds more than {} ({limit} bytes), the most {what} may hold",
                size_words(*limit)
            ),
            FileRefusal::Io(e) => e.kind().to_string(),
        }
    }
}

/// A size in words: whole GiB, MiB or KiB when it is one, else bytes.
pub fn size_words(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes % unit == 0)
        .map(|(unit, name)| format!("{} {name}", bytes / unit))
        .unwrap_or_else(|| format!("{bytes} bytes"))
}

/// What an entry that is not a regular file or a folder is, in words.
pub(crate) fn kind_of(kind: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
    }
    if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_dir() {
        "a folder"
    } else {
        "a special file"
    }
}

/// Opens `path` for reading when it is a regular file, and only then:
/// checked before it is opened (a link followed only with `follow`),
/// opened without blocking, and checked again as opened.
fn open_checked(path: &Path, follow: bool) -> Result<File, FileRefusal> {
    let meta = if follow {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    };
    let kind = meta.map_err(FileRefusal::Io)?.file_type();
    if !kind.is_file() {
        return Err(FileRefusal::NotRegular(kind_of(kind)));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let links = if follow { 0 } else { libc::O_NOFOLLOW };
        options.custom_flags(libc::O_NONBLOCK | links);
    }
    let file = options.open(path).map_err(FileRefusal::Io)?;
    let opened = file.metadata().map_err(FileRefusal::Io)?.file_type();
    if !opened.is_file() {
        return Err(FileRefusal::NotRegular(kind_of(opened)));
    }
    Ok(file)
}

/// Opens `path` when it is a regular file itself, never through a link.
pub fn open_regular(path: &Path) -> Result<File, FileRefusal> {
    open_checked(path, false)
}

/// Opens `path` when it is, or links to, a regular file: a file the user
/// names.
pub fn open_named(path: &Path) -> Result<File, FileRefusal> {
    open_checked(path, true)
}

/// What `reader` gives, at most `limit` bytes of it; more is refused after
/// one byte past the bound.
pub fn read_bounded(reader: impl Read, limit: u64) -> Result<Vec<u8>, FileRefusal> {
    let mut bytes = Vec::new();
    reader
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FileRefusal::Io)?;
    if bytes.len() as u64 > limit {
        return Err(FileRefusal::TooLarge(limit));
    }
    Ok(bytes)
}

/// The bytes of the regular file `path` (never a link), at most `limit`.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, FileRefusal> {
    read_bounded(open_regular(path)?, limit)
}

/// The bytes of the file the user named `path` (a link to a regular file
/// is followed), at most `limit`.
pub fn read_named(path: &Path, limit: u64) -> Result<Vec<u8>, FileRefusal> {
    read_bounded(open_named(path)?, limit)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The names in `folder`, sorted.
    pub(crate) fn names(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    /// Makes a named pipe at `path`.
    pub(crate) fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    // A named file may be a link to a regular file, never a pipe, a device or a link to one; a bundle's file may be no link at all.
    #[test]
    fn named_files_follow_links_to_regular_files_only() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, b"abc").unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_named(&link, 3).unwrap(), b"abc");
        let err = read_regular(&link, 3).unwrap_err();
        assert_eq!(
            err.describe("x"),
            "it is a symbolic link, not a regular file"
        );
        let zero = tmp.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for path in [zero.as_path(), Path::new("/dev/zero")] {
            let err = read_named(path, 1 << 30).unwrap_err();
            assert_eq!(err.describe("x"), "it is a device, not a regular file");
        }
        let pipe = tmp.path().join("pipe");
        mkfifo(&pipe);
        let err = read_named(&pipe, 3).unwrap_err();
        assert_eq!(err.describe("x"), "it is a named pipe, not a regular file");
        let err = read_named(tmp.path(), 3).unwrap_err();
        assert_eq!(err.describe("x"), "it is a folder, not a regular file");
    }

    // A file or stream longer than its bound is refused, named with the bound in words and bytes.
    #[test]
    fn reads_stop_at_the_bound() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, vec![b'x'; 2048]).unwrap();
        assert_eq!(read_named(&file, 2048).unwrap().len(), 2048);
        let err = read_named(&file, 1024).unwrap_err();
        assert_eq!(
            err.describe("an envelope"),
            "it holds more than 1 KiB (1024 bytes), the most an envelope may hold"
        );
        let endless = std::io::repeat(0);
        assert!(matches!(
            read_bounded(endless, 1 << 20),
            Err(FileRefusal::TooLarge(_))
        ));
        assert_eq!(size_words(64 << 20), "64 MiB");
        assert_eq!(size_words(1 << 30), "1 GiB");
        assert_eq!(size_words(1000), "1000 bytes");
    }
}
