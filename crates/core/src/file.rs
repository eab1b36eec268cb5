//! Writing the files users keep (results, figures, traces, studies), the counterpart of
//! [`read_text`](crate::read_text).
//!
//! Why here, for every verb: a run can take minutes, and its results must not be lost at the end
//! for a path that was never going to work. So every output is checked before anything is
//! measured ([`check_writable`], [`check_dir`], [`check_stdout`]), and [`write_file`] writes so
//! that a crash or a full disk never leaves half a file and an existing file stays what the user
//! made it: its mode, owner and permissions are kept, a symbolic link stays a link (the file it
//! points to is written), and a file with other hard links is written in place.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why an output path cannot be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{}: is a directory (give a file name)", .0.display())]
    IsDirectory(PathBuf),
    #[error("{}: the directory {} does not exist", path.display(), dir.display())]
    NoDirectory { path: PathBuf, dir: PathBuf },
    #[error("{}: {} is not a directory", path.display(), dir.display())]
    NotADirectory { path: PathBuf, dir: PathBuf },
    #[error("{}: no space left on its file system", .0.display())]
    Full(PathBuf),
    #[error("{}: cannot write there: {source}", path.display())]
    NotWritable {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("standard output {0}")]
    Stdout(String),
    #[error("writing {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// An error about the path given with the command-line option `flag` (`-o`, `--dir`),
    /// said with the option in front, as the user typed it.
    #[error("{flag} {inner}")]
    Option {
        flag: String,
        inner: Box<OutputError>,
    },
    #[error("{flag} {}: cannot create it", path.display())]
    CreateDir {
        flag: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{flag} {}", path.display())]
    Resolve {
        flag: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn not_writable(path: &Path) -> impl FnOnce(io::Error) -> OutputError + '_ {
    move |source| OutputError::NotWritable {
        path: path.to_path_buf(),
        source,
    }
}

/// Whether the file system holding `path` has no block left for an unprivileged write.
fn full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs fills the zeroed struct it is given; `c` is a valid C string.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_bavail == 0 && st.f_blocks > 0
    }
}

/// The device `/dev/full`, which takes every open and fails every write.
fn is_dev_full(m: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_char_device() && m.rdev() == libc::makedev(1, 7)
}

/// Whether a lookup failed because the path (or a directory on it) is not there.
fn missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// The directory a new file at `path` goes into.
fn parent_of(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Checks, without changing anything the user has, that `path` can be written as a file: an
/// existing file that this process may write (opened for writing without truncating it), or a
/// new name in an existing directory where a file can be created now (one is created and
/// removed) on a file system with space left. Devices and pipes (`/dev/stdout`) pass, except
/// `/dev/full`.
pub fn check_writable(path: &Path) -> Result<(), OutputError> {
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(OutputError::IsDirectory(path.to_path_buf())),
        Ok(m) if is_dev_full(&m) => Err(OutputError::Full(path.to_path_buf())),
        Ok(m) => {
            // O_NONBLOCK: a FIFO without a reader fails at once instead of blocking here.
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
                .map_err(not_writable(path))?;
            if m.is_file() && full(path) {
                return Err(OutputError::Full(path.to_path_buf()));
            }
            Ok(())
        }
        Err(e) if missing(&e) => {
            // A dangling link is written through: its target's directory must take the file.
            if let Ok(target) = fs::read_link(path) {
                let target = parent_of(path).join(target);
                return check_writable(&target).map_err(|_| OutputError::NoDirectory {
                    path: path.to_path_buf(),
                    dir: parent_of(&target),
                });
            }
            let dir = parent_of(path);
            check_dir_exists(path, &dir)?;
            probe_dir(&dir).map_err(not_writable(path))?;
            if full(&dir) {
                return Err(OutputError::Full(path.to_path_buf()));
            }
            Ok(())
        }
        Err(e) => Err(not_writable(path)(e)),
    }
}

fn check_dir_exists(path: &Path, dir: &Path) -> Result<(), OutputError> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(OutputError::NotADirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        }),
        Err(_) => Err(OutputError::NoDirectory {
            path: path.to_path_buf(),
            dir: dir.to_path_buf(),
        }),
    }
}

/// Creates and removes a file in `dir`: the only sure test that a file can be made there now
/// (permissions, a read-only mount, quotas).
fn probe_dir(dir: &Path) -> io::Result<()> {
    let probe = dir.join(format!(".commperf-probe-{}", std::process::id()));
    let r = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&probe)
        .and_then(|mut f| f.write_all(&[0]));
    let _ = fs::remove_file(&probe);
    r
}

/// Checks that `dir` can hold a run's files without creating anything: an existing writable
/// directory, or a new name whose parent exists and is writable (a mistyped path must not grow
/// a tree of directories). Returns whether `dir` exists already.
pub fn check_dir(dir: &Path) -> Result<bool, OutputError> {
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {
            probe_dir(dir).map_err(not_writable(dir))?;
            if full(dir) {
                return Err(OutputError::Full(dir.to_path_buf()));
            }
            Ok(true)
        }
        Ok(_) => Err(OutputError::NotWritable {
            path: dir.to_path_buf(),
            source: io::Error::new(
                io::ErrorKind::AlreadyExists,
                "exists and is not a directory",
            ),
        }),
        Err(e) if missing(&e) => {
            let parent = parent_of(dir);
            check_dir_exists(dir, &parent)?;
            probe_dir(&parent).map_err(not_writable(dir))?;
            if full(&parent) {
                return Err(OutputError::Full(dir.to_path_buf()));
            }
            Ok(false)
        }
        Err(e) => Err(not_writable(dir)(e)),
    }
}

/// Checks that standard output is open for writing and is not a sink that fails every write
/// (`/dev/full`, a file on a full file system). A pipe whose reader will leave cannot be told in
/// advance; the writers treat that as the reader's choice.
pub fn check_stdout() -> Result<(), OutputError> {
    // SAFETY: fcntl F_GETFL on fd 1 reads its flags or fails with EBADF.
    let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
    if flags < 0 {
        return Err(OutputError::Stdout("is closed".into()));
    }
    if flags & libc::O_ACCMODE == libc::O_RDONLY {
        return Err(OutputError::Stdout("is not open for writing".into()));
    }
    // SAFETY: fstat fills the zeroed struct it is given.
    let (mode, rdev) = unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(1, &mut st) != 0 {
            return Err(OutputError::Stdout("is closed".into()));
        }
        (st.st_mode, st.st_rdev)
    };
    if mode & libc::S_IFMT == libc::S_IFCHR && rdev == libc::makedev(1, 7) {
        return Err(OutputError::Stdout(
            "is /dev/full: every write to it fails".into(),
        ));
    }
    if mode & libc::S_IFMT == libc::S_IFREG {
        // SAFETY: fstatvfs fills the zeroed struct it is given.
        let no_space = unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            libc::fstatvfs(1, &mut st) == 0 && st.f_bavail == 0 && st.f_blocks > 0
        };
        if no_space {
            return Err(OutputError::Stdout(
                "is a file on a full file system".into(),
            ));
        }
    }
    Ok(())
}

fn write_in_place(path: &Path, bytes: &[u8], truncate: bool) -> Result<(), OutputError> {
    OpenOptions::new()
        .write(true)
        .truncate(truncate)
        .open(path)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            f.flush()?;
            if truncate {
                f.sync_all()?;
            }
            Ok(())
        })
        .map_err(|source| OutputError::Write {
            path: path.to_path_buf(),
            source,
        })
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, then renamed
/// over it. An existing file keeps its mode and owner and is refused if this process may not
/// write it (a rename would ignore its permissions); through a symbolic link, the file it
/// points to is written and the link stays; a file with other hard links, or in a directory
/// where no file can be created, is written in place; a device or pipe (`-o /dev/stdout`) is
/// written as it is.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let target = fs::canonicalize(path).unwrap_or_else(|_| match fs::read_link(path) {
        Ok(t) => parent_of(path).join(t),
        Err(_) => path.to_path_buf(),
    });
    let existing = match fs::metadata(&target) {
        Ok(m) if m.is_dir() => return Err(OutputError::IsDirectory(path.to_path_buf())),
        Ok(m) if !m.is_file() => return write_in_place(&target, bytes, false),
        Ok(m) => Some(m),
        Err(_) => None,
    };
    if let Some(m) = &existing {
        // The file's own permissions decide, as they would for an editor saving it.
        OpenOptions::new()
            .write(true)
            .open(&target)
            .map_err(|source| OutputError::NotWritable {
                path: path.to_path_buf(),
                source,
            })?;
        if m.nlink() > 1 {
            return write_in_place(&target, bytes, true);
        }
    }
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = parent_of(&target).join(format!(".{name}.tmp{}", std::process::id()));
    let mode = existing.as_ref().map_or(0o666, |m| m.mode() & 0o7777);
    let mut f = match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)
    {
        Ok(f) => f,
        Err(e)
            if existing.is_some()
                && matches!(
                    e.kind(),
                    io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem
                ) =>
        {
            // A writable file in a directory that takes no new file.
            return write_in_place(&target, bytes, true);
        }
        Err(source) => {
            return Err(OutputError::Write {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let r = (|| -> io::Result<()> {
        f.write_all(bytes)?;
        if let Some(m) = &existing {
            // Owner first: a change of owner may clear set-id bits, which the mode restores.
            // Only root may give a file away; anyone else keeps their own.
            let _ = std::os::unix::fs::fchown(&f, Some(m.uid()), Some(m.gid()));
            // The umask narrowed the mode given at creation.
            f.set_permissions(fs::Permissions::from_mode(m.mode() & 0o7777))?;
        }
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, &target)
    })();
    if let Err(source) = r {
        let _ = fs::remove_file(&tmp);
        return Err(OutputError::Write {
            path: path.to_path_buf(),
            source,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn dir(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("commperf-file-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn an_existing_file_keeps_its_mode_and_a_link_stays_a_link() {
        let d = dir("mode");
        let f = d.join("r.json");
        fs::write(&f, "old").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        write_file(&f, b"new").unwrap();
        assert_eq!(fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o600);
        let link = d.join("link.json");
        symlink("r.json", &link).unwrap();
        write_file(&link, b"through the link").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&f).unwrap(), "through the link");
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o7777, 0o600);
        // A hard link keeps seeing the new content.
        let hard = d.join("hard.json");
        fs::hard_link(&f, &hard).unwrap();
        write_file(&f, b"both names").unwrap();
        assert_eq!(fs::read_to_string(&hard).unwrap(), "both names");
        // No temporary file is left.
        let mut names: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["hard.json", "link.json", "r.json"]);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_new_file_gets_the_usual_mode() {
        let d = dir("new");
        let f = d.join("n.csv");
        write_file(&f, b"a,b\n").unwrap();
        // SAFETY: umask only swaps the process's mask; it is set back at once.
        let mask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        assert_eq!(fs::metadata(&f).unwrap().mode() & 0o777, 0o666 & !mask);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn bad_paths_are_named_before_anything_is_written() {
        let d = dir("bad");
        let e = check_writable(&d).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("{}: is a directory (give a file name)", d.display())
        );
        let missing = d.join("nope/x.json");
        let e = check_writable(&missing).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "{}: the directory {} does not exist",
                missing.display(),
                d.join("nope").display()
            )
        );
        let file = d.join("f");
        fs::write(&file, "").unwrap();
        let under_file = file.join("x.json");
        assert!(matches!(
            check_writable(&under_file),
            Err(OutputError::NotADirectory { .. })
        ));
        assert!(matches!(
            check_writable(Path::new("/dev/full")),
            Err(OutputError::Full(_))
        ));
        check_writable(&d.join("fine.json")).unwrap();
        check_writable(Path::new("/dev/null")).unwrap();
        // Nothing was created by the checks.
        assert_eq!(fs::read_dir(&d).unwrap().count(), 1);
        // A run directory: an existing one, a new one under an existing parent, and one whose
        // parent is missing (which must not be created).
        assert!(check_dir(&d).unwrap());
        assert!(!check_dir(&d.join("run1")).unwrap());
        assert!(!d.join("run1").exists());
        assert!(matches!(
            check_dir(&d.join("a/b")),
            Err(OutputError::NoDirectory { .. })
        ));
        assert!(!d.join("a").exists());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_dangling_link_is_written_through() {
        let d = dir("dangling");
        let link = d.join("out.json");
        symlink("real.json", &link).unwrap();
        check_writable(&link).unwrap();
        write_file(&link, b"{}").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(d.join("real.json")).unwrap(), "{}");
        fs::remove_dir_all(&d).unwrap();
    }
}

/// A directory a run writes its files into (`-o DIR`), checked and created before the run
/// measures anything: an existing writable directory, or a new one whose parent exists (a
/// mistyped path does not grow a tree of directories). A directory this run created is removed
/// again when the guard is dropped holding no file: a run that was refused or failed before
/// producing anything leaves nothing behind, and one that produced something keeps it.
#[derive(Debug)]
pub struct OutDir {
    path: PathBuf,
    created: bool,
}

impl OutDir {
    /// Checks that [`OutDir::create`] would succeed, creating nothing; returns whether the
    /// directory exists. `flag` names the option in errors.
    pub fn check(flag: &str, dir: &Path) -> Result<bool, OutputError> {
        check_dir(dir).map_err(|e| OutputError::Option {
            flag: flag.to_string(),
            inner: Box::new(e),
        })
    }

    /// `flag` names the option in errors.
    pub fn create(flag: &str, dir: &Path) -> Result<OutDir, OutputError> {
        let existed = OutDir::check(flag, dir)?;
        if !existed {
            fs::create_dir(dir).map_err(|source| OutputError::CreateDir {
                flag: flag.to_string(),
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let path = fs::canonicalize(dir).map_err(|source| OutputError::Resolve {
            flag: flag.to_string(),
            path: dir.to_path_buf(),
            source,
        })?;
        Ok(OutDir {
            path,
            created: !existed,
        })
    }

    /// The directory (absolute).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Whether the tree under `dir` holds anything but directories.
fn holds_files(dir: &Path) -> bool {
    fs::read_dir(dir).map_or(true, |it| {
        it.flatten()
            .any(|e| !e.file_type().is_ok_and(|t| t.is_dir()) || holds_files(&e.path()))
    })
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if self.created && !holds_files(&self.path) {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}
