//! The files hetsim reads and writes, and the promises it keeps about them.
//!
//! - **Inputs** ([`read_input`]) are regular files of at most [`MAX_INPUT_BYTES`]: a directory,
//!   a FIFO or a device (`/dev/zero`) is refused with a message before it is opened, so a read
//!   never blocks and never runs without end.
//! - **Outputs** ([`OutputFile`], [`write_output`]) are written to a temporary file in the
//!   directory of the target and renamed onto it only once complete and synced: a run that
//!   fails, is killed or fills the disk leaves the file that was there untouched (a killed run
//!   may leave its temporary `.NAME.*.tmp` beside it). A target that exists and is not a
//!   regular file (`/dev/null`, a FIFO, a terminal) is written directly: there is nothing to
//!   lose there, and renaming onto it would replace the device.
//! - **Roles** ([`check_distinct`]): an output that is also an input, or two outputs naming one
//!   file, are refused before anything is opened for writing; files are compared by canonical
//!   path (outputs that do not exist yet by their canonical directory and name) and, when both
//!   exist, by device and inode, so a symbolic or hard link does not hide a clash.
//!
//! Every failure is an [`InputError`] naming the file (exit status 2): an output that cannot be
//! written is the user's to fix (the path, the permissions, the disk).

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::error::InputError;

/// The largest input file read, in bytes (64 MiB). The largest shipped input, a machine file
/// with StarPU's kernel histories, is under 1 MiB.
pub const MAX_INPUT_BYTES: u64 = 64 << 20;

/// What a file is to a command: which input, or which output flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileRole {
    /// The scenario file.
    Scenario,
    /// A machine file (the scenario's, the one `check` validates, a cluster's node machine).
    Machine,
    /// A cluster file.
    Cluster,
    /// A codelet file a machine file includes (`perfmodels.include`).
    Included,
    /// A cluster's MPI overheads CSV (`overheads.csv`).
    OverheadsCsv,
    /// A file of StarPU's calibration directory.
    StarpuCalibration,
    /// The CSV file of one shard of a sweep (`hetsim sweep merge`).
    SweepShard,
    /// A task-graph file a scenario reads (`workload.file`), or the file read beside it
    /// (`data.rec` next to a `tasks.rec`).
    TaskGraph,
    /// An output, by its long flag without dashes (`paje`, `output`).
    Output(&'static str),
}

impl fmt::Display for FileRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileRole::Scenario => f.write_str("the scenario"),
            FileRole::Machine => f.write_str("a machine file"),
            FileRole::Cluster => f.write_str("a cluster file"),
            FileRole::Included => f.write_str("a codelet file included by a machine file"),
            FileRole::OverheadsCsv => f.write_str("a cluster's overheads CSV"),
            FileRole::StarpuCalibration => f.write_str("a StarPU calibration file"),
            FileRole::SweepShard => f.write_str("a sweep shard"),
            FileRole::TaskGraph => f.write_str("a task-graph file"),
            FileRole::Output(flag) => write!(f, "--{flag}"),
        }
    }
}

/// A file and what it is to the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleFile {
    /// What the file is.
    pub role: FileRole,
    /// The path as given.
    pub path: PathBuf,
}

impl RoleFile {
    /// `path` in `role`.
    pub fn new(role: FileRole, path: impl Into<PathBuf>) -> Self {
        RoleFile {
            role,
            path: path.into(),
        }
    }
}

/// The files something was read from (a machine: its file and the files it includes), in
/// reading order. Where a value was read from is not part of what it is: any two compare
/// equal, so a machine read from a copy of a file equals the original's.
#[derive(Debug, Clone, Default)]
pub struct InputFiles(pub Vec<RoleFile>);

impl PartialEq for InputFiles {
    fn eq(&self, _: &InputFiles) -> bool {
        true
    }
}

/// What kind of file `meta` describes, for messages.
fn kind_of(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "not a regular file"
}

/// Read a whole input file as UTF-8 text. The file must be a regular file of at most
/// [`MAX_INPUT_BYTES`]; anything else is an [`InputError`] naming the file and saying what it
/// is.
pub fn read_input(path: &Path) -> Result<String, InputError> {
    let err = |m: String| InputError::new(m).in_file(path);
    // Looked at before opening: opening a FIFO for reading blocks until a writer comes.
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read file: {e}")))?;
    if !meta.is_file() {
        return Err(err(format!(
            "cannot read file: it is {}, expected a regular file",
            kind_of(&meta)
        )));
    }
    let file = File::open(path).map_err(|e| err(format!("cannot read file: {e}")))?;
    // Checked again on what was opened, which may have been replaced in between.
    let meta = file
        .metadata()
        .map_err(|e| err(format!("cannot read file: {e}")))?;
    if !meta.is_file() {
        return Err(err(format!(
            "cannot read file: it is {}, expected a regular file",
            kind_of(&meta)
        )));
    }
    let too_big = |n: u64| {
        err(format!(
            "cannot read file: it has {n} bytes, more than the {MAX_INPUT_BYTES} bytes (64 MiB) \
             an input may have"
        ))
    };
    if meta.len() > MAX_INPUT_BYTES {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The limit holds even for a file that grows while it is read.
    file.take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("cannot read file: {e}")))?;
    if bytes.len() as u64 > MAX_INPUT_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        err(format!(
            "cannot read file: not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}

/// Where a path leads: its canonical form if it exists, else its canonical directory joined
/// with its name (or the path itself when even the directory does not exist).
fn resolved(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let name = path.file_name();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match (dir.canonicalize(), name) {
        (Ok(d), Some(n)) => d.join(n),
        _ => path.to_path_buf(),
    }
}

/// The identity of a file for comparisons: where it resolves to, and its device and inode if
/// it exists.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileKey {
    path: PathBuf,
    inode: Option<(u64, u64)>,
}

impl FileKey {
    fn of(path: &Path) -> FileKey {
        #[cfg(unix)]
        let inode = {
            use std::os::unix::fs::MetadataExt;
            std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
        };
        #[cfg(not(unix))]
        let inode = None;
        FileKey {
            path: resolved(path),
            inode,
        }
    }

    fn same(&self, other: &FileKey) -> bool {
        self.path == other.path || (self.inode.is_some() && self.inode == other.inode)
    }
}

/// Refuse outputs that are also inputs, or that name one file twice, before anything is
/// written. The message names both roles and both paths as given.
pub fn check_distinct(inputs: &[RoleFile], outputs: &[RoleFile]) -> Result<(), InputError> {
    let in_keys: Vec<FileKey> = inputs.iter().map(|f| FileKey::of(&f.path)).collect();
    let out_keys: Vec<FileKey> = outputs.iter().map(|f| FileKey::of(&f.path)).collect();
    for (i, (o, ok)) in outputs.iter().zip(&out_keys).enumerate() {
        let refuse = |why: String| {
            InputError::new(format!(
                "refusing to write {} {}: {why}",
                o.role,
                o.path.display()
            ))
        };
        if let Some((f, _)) = inputs.iter().zip(&in_keys).find(|(_, k)| k.same(ok)) {
            return Err(refuse(format!(
                "it is also an input, {} ({}); writing it would destroy the input",
                f.role,
                f.path.display()
            )));
        }
        if let Some((f, _)) = outputs[..i].iter().zip(&out_keys).find(|(_, k)| k.same(ok)) {
            return Err(refuse(format!(
                "{} writes to it too ({}); give each output its own file",
                f.role,
                f.path.display()
            )));
        }
    }
    Ok(())
}

enum Target {
    /// A temporary file beside the target, renamed onto it (`to`) when committed.
    Atomic {
        tmp: tempfile::NamedTempFile,
        to: PathBuf,
    },
    /// An existing file that is not a regular file (`/dev/null`, a FIFO), written directly.
    Direct(File),
}

/// An output file being written: see the module's documentation for what is promised.
/// Dropped without [`OutputFile::commit`], it leaves the target as it was.
pub struct OutputFile {
    /// The path as given, for messages.
    path: PathBuf,
    target: Target,
}

impl fmt::Debug for OutputFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OutputFile")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl OutputFile {
    /// Start writing `path`: a temporary file in the directory `path` resolves to (so a
    /// symbolic link is followed, and the rename stays on one file system).
    pub fn create(path: &Path) -> Result<OutputFile, InputError> {
        let err = |m: String| InputError::new(format!("cannot write file: {m}")).in_file(path);
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => return Err(err("it is a directory".into())),
            Ok(m) if !m.is_file() => {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .open(path)
                    .map_err(|e| err(e.to_string()))?;
                return Ok(OutputFile {
                    path: path.to_path_buf(),
                    target: Target::Direct(f),
                });
            }
            _ => {}
        }
        let to = resolved(path);
        let dir = match to.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(err(format!(
                "the directory {} does not exist",
                dir.display()
            )));
        }
        let name = to
            .file_name()
            .map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
        let prefix = format!(".{name}.");
        let mut b = tempfile::Builder::new();
        b.prefix(&prefix).suffix(".tmp");
        // As `File::create` would: 0666 less the umask, or the existing file's mode.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            b.permissions(match std::fs::metadata(&to) {
                Ok(m) => m.permissions(),
                Err(_) => std::fs::Permissions::from_mode(0o666),
            });
        }
        let tmp = b.tempfile_in(&dir).map_err(|e| {
            // The OS's reason, without the temporary name tempfile adds.
            let why = e.raw_os_error().map_or_else(
                || e.to_string(),
                |c| io::Error::from_raw_os_error(c).to_string(),
            );
            err(format!("cannot create a file in {}: {why}", dir.display()))
        })?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            target: Target::Atomic { tmp, to },
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle to write the content through (buffer it); [`OutputFile::commit`] once it is
    /// flushed.
    pub fn writer(&self) -> Result<File, InputError> {
        let f = match &self.target {
            Target::Atomic { tmp, .. } => tmp.as_file(),
            Target::Direct(f) => f,
        };
        f.try_clone().map_err(|e| self.error(&e))
    }

    /// The error for a failed write to this file.
    pub fn error(&self, e: &io::Error) -> InputError {
        InputError::new(format!("cannot write file: {e}")).in_file(&self.path)
    }

    /// Make the written content the target's: sync it to disk and rename it into place.
    pub fn commit(self) -> Result<(), InputError> {
        let path = self.path;
        let err = |e: io::Error| InputError::new(format!("cannot write file: {e}")).in_file(&path);
        match self.target {
            Target::Atomic { tmp, to } => {
                tmp.as_file().sync_all().map_err(err)?;
                tmp.persist(&to).map_err(|e| err(e.error))?;
                Ok(())
            }
            Target::Direct(mut f) => f.flush().map_err(err),
        }
    }
}

/// Write `bytes` to `path` as an [`OutputFile`]: all of it, or nothing changed.
pub fn write_output(path: &Path, bytes: &[u8]) -> Result<(), InputError> {
    let out = OutputFile::create(path)?;
    let mut w = out.writer()?;
    w.write_all(bytes)
        .and_then(|()| w.flush())
        .map_err(|e| out.error(&e))?;
    drop(w);
    out.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hetsim-files-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn an_output_dropped_before_commit_leaves_the_old_file_and_no_temporary() {
        let d = scratch("drop");
        let p = d.join("out.txt");
        std::fs::write(&p, "old").unwrap();
        {
            let out = OutputFile::create(&p).unwrap();
            out.writer().unwrap().write_all(b"half of the new").unwrap();
            // The run fails here: `out` is dropped.
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "old");
        assert_eq!(entries(&d), ["out.txt"]);
        write_output(&p, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "new");
        assert_eq!(entries(&d), ["out.txt"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_committed_output_has_the_mode_file_create_would_give() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch("mode");
        let p = d.join("new.txt");
        write_output(&p, b"x").unwrap();
        let fresh = d.join("plain.txt");
        std::fs::write(&fresh, "x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&p), mode(&fresh));
        // An existing file keeps its mode.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        write_output(&p, b"y").unwrap();
        assert_eq!(mode(&p), 0o640);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symbolic_link_is_followed_and_kept() {
        let d = scratch("link");
        let real = d.join("real.txt");
        std::fs::write(&real, "old").unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_output(&link, b"new").unwrap();
        assert!(
            std::fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn dev_null_is_written_directly_and_stays_a_device() {
        write_output(Path::new("/dev/null"), b"nothing").unwrap();
        use std::os::unix::fs::FileTypeExt;
        let t = std::fs::metadata("/dev/null").unwrap().file_type();
        assert!(t.is_char_device());
    }

    #[test]
    fn inputs_that_are_not_regular_files_are_named() {
        let d = scratch("inputs");
        let e = read_input(&d).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{}: cannot read file: it is a directory, expected a regular file",
                d.display()
            )
        );
        #[cfg(unix)]
        {
            let e = read_input(Path::new("/dev/zero")).unwrap_err();
            assert_eq!(
                e.to_string(),
                "/dev/zero: cannot read file: it is a character device, expected a regular file"
            );
        }
        let p = d.join("latin1.txt");
        std::fs::write(&p, b"caf\xe9").unwrap();
        let e = read_input(&p).unwrap_err();
        assert!(
            e.to_string()
                .ends_with("not UTF-8 text (invalid byte at offset 3)"),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_output_that_is_an_input_or_given_twice_is_refused() {
        let d = scratch("roles");
        let m = d.join("m.toml");
        std::fs::write(&m, "x").unwrap();
        let inputs = [RoleFile::new(FileRole::Machine, &m)];
        // The same file through another spelling of its path.
        let other = d.join(".").join("m.toml");
        let e = check_distinct(&inputs, &[RoleFile::new(FileRole::Output("gantt"), &other)])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "refusing to write --gantt {}: it is also an input, a machine file ({}); \
                 writing it would destroy the input",
                other.display(),
                m.display()
            )
        );
        // Two outputs naming one file that does not exist yet.
        let t = d.join("t.json");
        let outs = [
            RoleFile::new(FileRole::Output("paje"), &t),
            RoleFile::new(FileRole::Output("chrome"), d.join("./t.json")),
        ];
        let e = check_distinct(&inputs, &outs).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "refusing to write --chrome {}: --paje writes to it too ({}); give each output \
                 its own file",
                d.join("./t.json").display(),
                t.display()
            )
        );
        assert!(check_distinct(&inputs, &[RoleFile::new(FileRole::Output("paje"), &t)]).is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }
}
