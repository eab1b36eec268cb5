//! Installing the interposer for preloading. The commperf binary carries the C shims and the
//! recording runtime ([`interposer`](crate::interposer), [`runtime_library`](crate::runtime_library));
//! a run extracts the two it needs into a per-user cache directory and preloads them from there,
//! so an installed binary needs nothing beside it and a run directory holds only the run's data.
//!
//! Why these checks: whatever is preloaded runs inside the user's program with the user's
//! rights, so a file that another user could replace between our write and the ranks' load would
//! run their code as ours. The directory is the user's own (owned by the user, mode 0700; every
//! directory above it owned by root or the user and writable by nobody else unless sticky, as
//! `/tmp` is); a file's name carries a hash of its content; it is written under a temporary name
//! and renamed into place; and every time before it is preloaded it is opened without following
//! links, checked to be a regular file of the user's that nobody else can write, and compared
//! byte for byte with what this binary carries. A file that fails is replaced.
//!
//! The directory: `$COMMPERF_CACHE_DIR`, else `$XDG_CACHE_HOME/commperf`, else
//! `$HOME/.cache/commperf`, else `/tmp/commperf-<uid>`. The ranks on other nodes of a cluster
//! load the same paths: the default, under the home directory, is usually shared between nodes;
//! where it is not, name a shared directory with `COMMPERF_CACHE_DIR`.

use crate::Flavour;
use std::fs::{self, DirBuilder, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

/// Files of other commperf builds unused for this long are removed when a build installs its own.
const PRUNE_AFTER: Duration = Duration::from_secs(30 * 24 * 3600);

/// Why the interposer could not be made ready to preload.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// This binary was built where that MPI's compiler wrapper could not be found.
    #[error(
        "this commperf was built without the {mpi} interposer: no {mpi} compiler wrapper \
         ({wrappers}) was on PATH when it was built. Install {mpi}'s development files \
         (Debian: {package}) and build commperf again (`cargo install --path crates/cli \
         --locked`, or `cargo build --release`): the build notices the new wrapper"
    )]
    NoInterposer {
        mpi: &'static str,
        wrappers: &'static str,
        package: &'static str,
    },
    /// The cache directory or a file in it is not safe to preload from.
    #[error(
        "interposer cache {}: {why} (choose another directory with COMMPERF_CACHE_DIR)",
        path.display()
    )]
    Unsafe { path: PathBuf, why: String },
    /// Creating, reading or writing the cache failed.
    #[error("interposer cache {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn unsafe_path(path: &Path, why: impl Into<String>) -> InstallError {
    InstallError::Unsafe {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

fn euid() -> u32 {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The interposer for `f` this binary carries, or why there is none: asked before a cache is
/// opened, so that a run refused for want of it creates nothing.
pub fn carried_interposer(f: Flavour) -> Result<&'static [u8], InstallError> {
    crate::interposer(f).ok_or(InstallError::NoInterposer {
        mpi: f.name(),
        wrappers: match f {
            Flavour::OpenMpi => "mpicc.openmpi, or mpicc",
            Flavour::Mpich => "mpicc.mpich, or mpicc",
        },
        package: match f {
            Flavour::OpenMpi => "libopenmpi-dev",
            Flavour::Mpich => "libmpich-dev",
        },
    })
}

/// A per-user directory holding the interposer's libraries, checked safe to preload from.
#[derive(Debug, Clone)]
pub struct LibCache {
    dir: PathBuf,
}

/// What a file in the cache holds, against the bytes it should hold.
enum Found {
    Same(File),
    Missing,
    Wrong(String),
}

impl LibCache {
    /// The directory the cache uses when none is given (see the module's documentation).
    pub fn default_dir() -> PathBuf {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(d) = var("COMMPERF_CACHE_DIR") {
            return d;
        }
        if let Some(d) = var("XDG_CACHE_HOME").filter(|d| d.is_absolute()) {
            return d.join("commperf");
        }
        if let Some(h) = var("HOME").filter(|d| d.is_absolute()) {
            return h.join(".cache").join("commperf");
        }
        PathBuf::from(format!("/tmp/commperf-{}", euid()))
    }

    /// The cache in [`LibCache::default_dir`], created and checked.
    pub fn open() -> Result<LibCache, InstallError> {
        LibCache::at(LibCache::default_dir())
    }

    /// The cache in `dir`: created (mode 0700) if it does not exist, then checked: owned by this
    /// user (its mode narrowed to 0700 if it was wider), and every directory above it owned by
    /// root or this user and writable by nobody else unless sticky.
    pub fn at(dir: impl Into<PathBuf>) -> Result<LibCache, InstallError> {
        let dir = dir.into();
        let dir = if dir.is_relative() {
            // The ranks may start in another directory.
            std::env::current_dir().map_err(io(&dir))?.join(dir)
        } else {
            dir
        };
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(io(&dir))?;
        let dir = fs::canonicalize(&dir).map_err(io(&dir))?;
        let s = dir.to_string_lossy();
        if s.contains(':') || s.chars().any(char::is_whitespace) {
            return Err(unsafe_path(
                &dir,
                "its path holds a ':' or a space, which LD_PRELOAD cannot carry",
            ));
        }
        let me = euid();
        let m = fs::metadata(&dir).map_err(io(&dir))?;
        if m.uid() != me {
            return Err(unsafe_path(
                &dir,
                format!("owned by uid {}, not by this user (uid {me})", m.uid()),
            ));
        }
        if m.mode() & 0o077 != 0 {
            fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).map_err(io(&dir))?;
        }
        for a in dir.ancestors().skip(1) {
            let m = fs::metadata(a).map_err(io(a))?;
            if m.uid() != 0 && m.uid() != me {
                return Err(unsafe_path(
                    &dir,
                    format!(
                        "{} above it is owned by uid {}, who could replace what is inside",
                        a.display(),
                        m.uid()
                    ),
                ));
            }
            if m.mode() & 0o022 != 0 && m.mode() & 0o1000 == 0 {
                return Err(unsafe_path(
                    &dir,
                    format!(
                        "{} above it is writable by other users (mode {:o}) and not sticky",
                        a.display(),
                        m.mode() & 0o7777
                    ),
                ));
            }
        }
        Ok(LibCache { dir })
    }

    /// The cache's directory (absolute, links resolved).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `bytes` as `<stem>-<hash>.so` in the cache, written if missing or wrong, and checked
    /// against `bytes` before its path is returned.
    pub fn install(&self, stem: &str, bytes: &[u8]) -> Result<PathBuf, InstallError> {
        let name = format!("{stem}-{:016x}.so", crate::format::fnv1a(bytes));
        let path = self.dir.join(&name);
        match self.check(&path, bytes)? {
            Found::Same(f) => {
                // Marks it in use, so that pruning by another build keeps it.
                let _ = f.set_modified(SystemTime::now());
                return Ok(path);
            }
            Found::Missing => {}
            Found::Wrong(_) => fs::remove_file(&path).map_err(io(&path))?,
        }
        self.write(&path, &name, bytes)?;
        match self.check(&path, bytes)? {
            Found::Same(_) => {}
            Found::Missing => return Err(unsafe_path(&path, "vanished after it was written")),
            Found::Wrong(why) => return Err(unsafe_path(&path, why)),
        }
        self.prune(stem, &name);
        Ok(path)
    }

    /// The `LD_PRELOAD` value for a program of `f`: its interposer, then the runtime
    /// (`$COMMPERF_PMPI_RUNTIME` instead of the runtime this binary carries, for developing it).
    pub fn preload(&self, f: Flavour) -> Result<String, InstallError> {
        let shim = carried_interposer(f)?;
        let shim = self.install(&format!("libcommperf_pmpi_{}", f.key()), shim)?;
        let rt = match std::env::var_os("COMMPERF_PMPI_RUNTIME") {
            Some(p) => PathBuf::from(p),
            None => self.install("libcommperf_pmpi_rt", crate::runtime_library())?,
        };
        Ok(format!("{}:{}", shim.display(), rt.display()))
    }

    fn check(&self, path: &Path, bytes: &[u8]) -> Result<Found, InstallError> {
        let mut f = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Found::Missing),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Ok(Found::Wrong("a symbolic link".into()))
            }
            Err(e) => return Err(io(path)(e)),
        };
        let m = f.metadata().map_err(io(path))?;
        if !m.is_file() {
            return Ok(Found::Wrong("not a regular file".into()));
        }
        if m.uid() != euid() {
            return Ok(Found::Wrong(format!("owned by uid {}", m.uid())));
        }
        if m.mode() & 0o022 != 0 {
            return Ok(Found::Wrong("writable by other users".into()));
        }
        if m.len() != bytes.len() as u64 {
            return Ok(Found::Wrong(
                "differs from the library this commperf carries".into(),
            ));
        }
        let mut have = Vec::with_capacity(bytes.len());
        f.read_to_end(&mut have).map_err(io(path))?;
        if have != bytes {
            return Ok(Found::Wrong(
                "differs from the library this commperf carries".into(),
            ));
        }
        Ok(Found::Same(f))
    }

    fn write(&self, path: &Path, name: &str, bytes: &[u8]) -> Result<(), InstallError> {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let tmp = self.dir.join(format!(
            ".{name}.{}.{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let r = (|| -> std::io::Result<()> {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&tmp)?;
            f.write_all(bytes)?;
            f.set_permissions(fs::Permissions::from_mode(0o500))?;
            drop(f);
            // Atomic: a concurrent run sees the old file or the whole new one.
            fs::rename(&tmp, path)
        })();
        if let Err(e) = r {
            let _ = fs::remove_file(&tmp);
            return Err(io(path)(e));
        }
        Ok(())
    }

    /// Removes other builds' `<stem>-*.so` unused for [`PRUNE_AFTER`], and temporary files left
    /// by a run killed while writing. Best effort: a file that cannot be removed stays.
    fn prune(&self, stem: &str, keep: &str) {
        let Ok(it) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let prefix = format!("{stem}-");
        let tmp_prefix = format!(".{stem}-");
        for e in it.flatten() {
            let n = e.file_name();
            let n = n.to_string_lossy();
            let (ours, limit) = if n.starts_with(&prefix) && n.ends_with(".so") && n != keep {
                (true, PRUNE_AFTER)
            } else if n.starts_with(&tmp_prefix) {
                (true, Duration::from_secs(24 * 3600))
            } else {
                (false, Duration::ZERO)
            };
            let old = e
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > limit));
            if ours && old {
                let _ = fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(tag: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("commperf-cache-test-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn installs_once_with_a_content_name_and_mode() {
        let d = temp_dir("once");
        let cache = LibCache::at(d.join("a/b")).unwrap();
        let m = fs::metadata(cache.dir()).unwrap();
        assert_eq!(m.mode() & 0o777, 0o700);
        let p = cache.install("libx", b"hello").unwrap();
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            name,
            format!("libx-{:016x}.so", crate::format::fnv1a(b"hello"))
        );
        assert_eq!(fs::read(&p).unwrap(), b"hello");
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o500);
        // Other content, another name; the same content, the same file.
        let q = cache.install("libx", b"world").unwrap();
        assert_ne!(p, q);
        assert_eq!(cache.install("libx", b"hello").unwrap(), p);
        let files: Vec<_> = fs::read_dir(cache.dir()).unwrap().flatten().collect();
        assert_eq!(files.len(), 2, "no temporary files left: {files:?}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_tampered_or_linked_file_is_replaced_before_use() {
        let d = temp_dir("tamper");
        let cache = LibCache::at(&d).unwrap();
        let p = cache.install("liby", b"the real library").unwrap();
        // Same length, other bytes.
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        fs::write(&p, b"the fake library").unwrap();
        assert_eq!(cache.install("liby", b"the real library").unwrap(), p);
        assert_eq!(fs::read(&p).unwrap(), b"the real library");
        // A link in its place, to a file with the right bytes: still refused, and replaced.
        let elsewhere = d.join("elsewhere");
        fs::write(&elsewhere, b"the real library").unwrap();
        fs::remove_file(&p).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &p).unwrap();
        assert_eq!(cache.install("liby", b"the real library").unwrap(), p);
        assert!(!fs::symlink_metadata(&p).unwrap().file_type().is_symlink());
        // Writable by others: replaced.
        fs::set_permissions(&p, fs::Permissions::from_mode(0o666)).unwrap();
        cache.install("liby", b"the real library").unwrap();
        assert_eq!(fs::metadata(&p).unwrap().mode() & 0o777, 0o500);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_directory_others_can_write_to_is_refused() {
        let d = temp_dir("open");
        fs::create_dir_all(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o777)).unwrap();
        let e = LibCache::at(d.join("cache")).unwrap_err().to_string();
        assert!(
            e.contains("writable by other users (mode 777) and not sticky"),
            "{e}"
        );
        // Sticky, as /tmp is: accepted.
        fs::set_permissions(&d, fs::Permissions::from_mode(0o1777)).unwrap();
        LibCache::at(d.join("cache")).unwrap();
        // The cache directory itself, made wide open by hand, is narrowed to 0700.
        fs::set_permissions(d.join("cache"), fs::Permissions::from_mode(0o755)).unwrap();
        let c = LibCache::at(d.join("cache")).unwrap();
        assert_eq!(fs::metadata(c.dir()).unwrap().mode() & 0o777, 0o700);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_path_ld_preload_cannot_carry_is_refused() {
        let d = temp_dir("colon").join("a:b");
        let e = LibCache::at(&d).unwrap_err().to_string();
        assert!(e.contains("LD_PRELOAD cannot carry"), "{e}");
        let _ = fs::remove_dir_all(d.parent().unwrap());
    }

    #[test]
    fn old_builds_are_pruned_and_the_current_one_kept() {
        let d = temp_dir("prune");
        let cache = LibCache::at(&d).unwrap();
        let old = cache.install("libz", b"old build").unwrap();
        let year_ago = SystemTime::now() - Duration::from_secs(365 * 24 * 3600);
        File::open(&old).unwrap().set_modified(year_ago).unwrap();
        let recent = cache.install("libz", b"recent build").unwrap();
        let new = cache.install("libz", b"new build").unwrap();
        assert!(!old.exists(), "a build unused for a year is removed");
        assert!(recent.exists() && new.exists());
        fs::remove_dir_all(&d).unwrap();
    }
}
