//! `chio arena init DIR [--template triage|finance|multi-kernel]`.
//!
//! Writes a working scenario into DIR: `scenario.toml` and the fixture and
//! prompt files it references, from one of the templates kept in
//! `scenarios/templates/<name>/` and embedded in the binary here, so a test
//! validates and runs the same bytes in place. Each template teaches one
//! thing in its comments: `triage` an information-flow guard, `finance` a
//! monetary budget beside an approval guard, `multi-kernel` a delegation
//! across kernels and its revocation.
//!
//! It never overwrites: every target is checked before anything is written,
//! and a file that exists refuses the whole command (`CHIO-CLI-INIT-EXISTS`)
//! naming it. The files are written into a temporary folder beside DIR and
//! moved into place, so a failure leaves nothing behind.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::arena::{InitArgs, Template};
use crate::error::{codes, CliError};
use chio_arena::output::{check_folders, make_folders, WriteRefusal};

const COMMAND: &str = "arena init";

/// Embeds `scenarios/templates/<dir>/<path>` as `(path, text)`.
macro_rules! template_file {
    ($dir:literal, $path:literal) => {
        (
            $path,
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../scenarios/templates/",
                $dir,
                "/",
                $path
            )),
        )
    };
}

const TRIAGE: &[(&str, &str)] = &[
    template_file!("triage", "scenario.toml"),
    template_file!("triage", "prompts/triager.txt"),
    template_file!("triage", "fixtures/issues/bugs/318.md"),
    template_file!("triage", "fixtures/issues/security/1042.md"),
];

const FINANCE: &[(&str, &str)] = &[
    template_file!("finance", "scenario.toml"),
    template_file!("finance", "prompts/payer.txt"),
];

const MULTI_KERNEL: &[(&str, &str)] = &[
    template_file!("multi-kernel", "scenario.toml"),
    template_file!("multi-kernel", "prompts/alice.txt"),
    template_file!("multi-kernel", "prompts/bob.txt"),
    template_file!("multi-kernel", "fixtures/shared/plan.md"),
];

impl Template {
    /// Every template, in the order help lists them.
    pub const ALL: [Template; 3] = [Template::Triage, Template::Finance, Template::MultiKernel];

    /// The template's name, as `--template` takes it and as its folder
    /// under `scenarios/templates/` is called.
    pub fn name(self) -> &'static str {
        match self {
            Template::Triage => "triage",
            Template::Finance => "finance",
            Template::MultiKernel => "multi-kernel",
        }
    }

    /// The files written, as (path relative to DIR, text): `scenario.toml`
    /// first, then the prompt and fixture files it references.
    pub fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Template::Triage => TRIAGE,
            Template::Finance => FINANCE,
            Template::MultiKernel => MULTI_KERNEL,
        }
    }
}

/// Why a template could not be written.
#[derive(Debug)]
pub enum InitError {
    /// A target file (or DIR itself, as something other than a folder) exists.
    Exists(PathBuf),
    /// Writing or moving a file failed.
    Io(PathBuf, std::io::Error),
    /// A folder on the way to a target is a symbolic link or not a folder:
    /// the refusal in words, naming it.
    NotFolder(String),
}

/// Writes `template` into `dir` and returns the files written, in
/// [`Template::files`] order; on an error nothing is left behind.
pub fn write_template(template: Template, dir: &Path) -> Result<Vec<PathBuf>, InitError> {
    if dir.exists() && !dir.is_dir() {
        return Err(InitError::Exists(dir.to_path_buf()));
    }
    let targets: Vec<PathBuf> = template
        .files()
        .iter()
        .map(|(rel, _)| dir.join(rel))
        .collect();
    if let Some(taken) = targets.iter().find(|t| t.symlink_metadata().is_ok()) {
        return Err(InitError::Exists(taken.clone()));
    }
    // A folder on the way (`prompts/`) is a real folder, never a link
    // followed out of DIR: checked before anything is written.
    let on_the_way = |check: fn(&Path, &Path) -> Result<(), WriteRefusal>, target: &PathBuf| {
        check(dir, target).map_err(|e| match e {
            WriteRefusal::NotFolder { .. } => InitError::NotFolder(e.describe()),
            WriteRefusal::Write(err) | WriteRefusal::Replace(err) => {
                InitError::Io(target.clone(), err)
            }
            WriteRefusal::NotRegular(_) => InitError::Exists(target.clone()),
        })
    };
    for target in &targets {
        on_the_way(check_folders, target)?;
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| InitError::Io(parent.clone(), e))?;
    let staging = tempfile::Builder::new()
        .prefix(".chio-init-")
        .tempdir_in(&parent)
        .map_err(|e| InitError::Io(parent.clone(), e))?;
    for (rel, text) in template.files() {
        let path = staging.path().join(rel);
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).map_err(|e| InitError::Io(path.clone(), e))?;
        }
        std::fs::write(&path, text).map_err(|e| InitError::Io(path.clone(), e))?;
    }
    if !dir.exists() {
        // One rename: DIR appears whole or not at all. The staging guard's
        // clean-up then finds nothing to remove.
        std::fs::rename(staging.path(), dir).map_err(|e| InitError::Io(dir.to_path_buf(), e))?;
        return Ok(targets);
    }
    // DIR exists: move file by file, taking back what was moved on a failure.
    let mut moved: Vec<&PathBuf> = Vec::new();
    for ((rel, _), target) in template.files().iter().zip(&targets) {
        let result = on_the_way(make_folders, target).and_then(|()| {
            std::fs::rename(staging.path().join(rel), target)
                .map_err(|e| InitError::Io(target.clone(), e))
        });
        if let Err(e) = result {
            for done in moved {
                let _ = std::fs::remove_file(done);
            }
            return Err(e);
        }
        moved.push(target);
    }
    Ok(targets)
}

/// Runs the command, printing the files written and what to run next to `out`.
pub fn run(args: &InitArgs, out: &mut dyn Write) -> Result<(), CliError> {
    let written = write_template(args.template, &args.dir).map_err(|e| match e {
        InitError::Exists(path) => CliError::new(
            codes::INIT_EXISTS,
            COMMAND,
            format!("{} already exists", path.display()),
            format!(
                "choose another DIR, or remove {} first; init never overwrites a file",
                path.display()
            ),
        ),
        InitError::NotFolder(why) => CliError::new(
            codes::INIT_EXISTS,
            COMMAND,
            format!("cannot write into DIR: {why}"),
            "replace the link with a real folder, or choose another DIR; nothing was written",
        ),
        InitError::Io(path, err) => CliError::new(
            codes::INIT_WRITE,
            COMMAND,
            format!("cannot write {}: {err}", path.display()),
            "check that the folder is writable and has space; nothing was left behind",
        ),
    })?;
    let scenario = args.dir.join("scenario.toml");
    let mut s = format!(
        "wrote the {} template into {}:\n",
        args.template.name(),
        args.dir.display()
    );
    for path in &written {
        s.push_str(&format!("  {}\n", path.display()));
    }
    s.push_str("next:\n");
    for command in ["validate", "run"] {
        s.push_str(&format!("  chio arena {command} {}\n", scenario.display()));
    }
    CliError::print(COMMAND, out, s.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// Every file under `dir`, by path relative to it with `/` separators.
    fn files_under(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).expect("template folder lists") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                files_under(root, &path, out);
            } else {
                let rel = path.strip_prefix(root).expect("under root");
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }

    // Each embedded template is exactly its folder under scenarios/templates: every file, byte for byte, nothing left out.
    #[test]
    fn embedded_templates_are_their_folders() {
        for template in Template::ALL {
            let root = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../scenarios/templates")
                .join(template.name());
            let mut on_disk = Vec::new();
            files_under(&root, &root, &mut on_disk);
            on_disk.sort();
            let mut embedded: Vec<String> = template
                .files()
                .iter()
                .map(|(p, _)| p.to_string())
                .collect();
            embedded.sort();
            assert_eq!(on_disk, embedded, "{}", template.name());
            for (rel, text) in template.files() {
                let bytes = std::fs::read_to_string(root.join(rel)).expect("template file");
                assert_eq!(&bytes, text, "{}/{rel}", template.name());
            }
            assert_eq!(template.files()[0].0, "scenario.toml");
        }
    }

    // The names --template takes are the folder names.
    #[test]
    fn template_names_parse_as_values() {
        for template in Template::ALL {
            assert_eq!(Template::from_str(template.name(), false), Ok(template));
        }
    }

    // A taken target refuses the whole template and leaves the folder as it was.
    #[test]
    fn a_taken_file_refuses_everything() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("s");
        std::fs::create_dir_all(dir.join("prompts")).expect("folder");
        std::fs::write(dir.join("prompts/payer.txt"), "mine").expect("write");
        match write_template(Template::Finance, &dir) {
            Err(InitError::Exists(path)) => assert_eq!(path, dir.join("prompts/payer.txt")),
            other => panic!("not refused: {other:?}"),
        }
        assert!(!dir.join("scenario.toml").exists());
        assert_eq!(
            std::fs::read_to_string(dir.join("prompts/payer.txt")).expect("kept"),
            "mine"
        );
        let left: Vec<_> = std::fs::read_dir(tmp.path()).expect("list").collect();
        assert_eq!(left.len(), 1, "a staging folder was left behind");
    }
}
