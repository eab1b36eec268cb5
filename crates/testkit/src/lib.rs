//! What commperf's tests share, so that each test file says only what it checks: temporary
//! directories ([`TempDir`]), running the built `commperf` binary ([`exe`], [`commperf`],
//! [`Served`]), and waiting for a state instead of sleeping ([`Lines`], [`wait_until`]).
//!
//! A dev-dependency only (`publish = false`): nothing here is part of commperf.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Output, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A directory of one test's own in the temp dir (`commperf-NAME-XXXXXX`, unique even when test
/// binaries run at once), removed when dropped: also when the test fails or panics, so no run
/// leaves it behind.
#[derive(Debug)]
pub struct TempDir(tempfile::TempDir);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let d = tempfile::Builder::new()
            .prefix(&format!("commperf-{name}-"))
            .tempdir()
            .expect("a temporary directory");
        TempDir(d)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// `name` in this directory, as a command-line argument.
    pub fn arg(&self, name: &str) -> String {
        self.path().join(name).display().to_string()
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        self.path()
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        self.path()
    }
}

/// A path `NAME` in a [`TempDir`] of its own, for a file a test has written (or a command
/// will write); removed with its directory when dropped.
#[derive(Debug)]
pub struct TempFile {
    path: PathBuf,
    _dir: TempDir,
}

impl TempFile {
    pub fn new(name: &str) -> TempFile {
        let dir = TempDir::new("file");
        TempFile {
            path: dir.join(name),
            _dir: dir,
        }
    }
}

impl Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

/// The built `commperf` binary. Cargo names it at compile time only to the binary crate's own
/// integration tests (`CARGO_BIN_EXE_commperf`); from here it is found beside the test binary,
/// which cargo puts in `target/<profile>/deps/` (or named by that variable when cargo sets it
/// at run time). A `&str`, as the tests put it into argument lists and shell lines.
pub fn exe() -> &'static str {
    static EXE: OnceLock<String> = OnceLock::new();
    EXE.get_or_init(|| {
        if let Some(p) = std::env::var_os("CARGO_BIN_EXE_commperf") {
            return p.into_string().expect("a UTF-8 path to commperf");
        }
        let test = std::env::current_exe().expect("the test binary's path");
        let profile = test
            .parent()
            .and_then(Path::parent)
            .expect("the test binary is in target/<profile>/deps");
        let p = profile.join("commperf");
        assert!(
            p.is_file(),
            "{} not built (the commperf package's tests build it)",
            p.display()
        );
        p.into_os_string()
            .into_string()
            .expect("a UTF-8 path to commperf")
    })
}

/// A command running the built `commperf`.
pub fn command() -> Command {
    Command::new(exe())
}

/// Runs `commperf ARGS…` to the end.
pub fn commperf(args: &[&str]) -> Output {
    command().args(args).output().expect("run commperf")
}

/// Bytes a process wrote, as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What a finished run wrote on stderr.
pub fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// `o`, which must have succeeded (else the test fails showing its status and output).
pub fn ok(o: &Output) -> &Output {
    assert!(
        o.status.success(),
        "failed ({}):\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

/// The JSON a successful run printed on stdout.
pub fn json_of(o: &Output) -> Value {
    ok(o);
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// A child killed (SIGKILL) and reaped when dropped, whatever the test did.
#[derive(Debug)]
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The lines of a child's output stream as they are written, read on a thread of their own, so
/// that a test can wait for the line that says the state it needs has come (with a deadline)
/// instead of sleeping for a guessed time.
#[derive(Debug)]
pub struct Lines {
    rx: Receiver<String>,
    /// Every line read so far, in order.
    pub seen: Vec<String>,
}

impl Lines {
    /// Follows `stream` (a child's piped stdout or stderr) until its end.
    pub fn follow<R: Read + Send + 'static>(stream: R) -> Lines {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stream).lines().map_while(Result::ok) {
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Lines {
            rx,
            seen: Vec::new(),
        }
    }

    /// Reads lines as they come until `found` returns something for one of them (each line is
    /// offered once, as it arrives); Err with every line seen when none did within `limit` or
    /// the stream ended.
    pub fn wait_for<T>(
        &mut self,
        limit: Duration,
        mut found: impl FnMut(&str) -> Option<T>,
    ) -> Result<T, String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(l) => {
                    let hit = found(&l);
                    self.seen.push(l);
                    if let Some(t) = hit {
                        return Ok(t);
                    }
                }
                Err(e) => {
                    return Err(format!(
                        "{e} after {limit:?}; lines so far: {:#?}",
                        self.seen
                    ))
                }
            }
        }
    }

    /// Reads until lines containing `what` have come `n` times in all (those seen before
    /// included); panics naming the lines when they have not within `limit`.
    pub fn wait_count(&mut self, what: &str, n: usize, limit: Duration) {
        let mut have = self.matching(what).len();
        if have >= n {
            return;
        }
        let r = self.wait_for(limit, |l| {
            have += usize::from(l.contains(what));
            (have >= n).then_some(())
        });
        if let Err(e) = r {
            panic!("no {n} lines with {what:?}: {e}");
        }
    }

    /// Takes in the lines written so far, without waiting.
    pub fn drain(&mut self) -> &mut Self {
        self.seen.extend(self.rx.try_iter());
        self
    }

    /// Reads to the stream's end (the writer and everything sharing the pipe gone), for at most
    /// `limit`.
    pub fn to_end(&mut self, limit: Duration) -> &mut Self {
        let deadline = Instant::now() + limit;
        while let Ok(l) = self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(l);
        }
        self
    }

    /// The lines seen that contain `what`.
    pub fn matching(&self, what: &str) -> Vec<String> {
        (self.seen.iter().filter(|l| l.contains(what)).cloned()).collect()
    }
}

/// Checks `cond` every `every` until it holds (true) or `limit` has passed (false).
pub fn wait_until(limit: Duration, every: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(every);
    }
}

/// The shared-memory segments process `pid` made that are still there (`/dev/shm/commperf-PID-…`).
pub fn shm_segments_of(pid: u32) -> Vec<String> {
    std::fs::read_dir("/dev/shm")
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("commperf-{pid}-")))
        .collect()
}

/// A `commperf serve` on a loopback port of its own, killed when dropped.
#[derive(Debug)]
pub struct Served {
    pub child: Killed,
    /// Where it listens (`127.0.0.1:PORT`, from its banner).
    pub addr: String,
    /// Its log (stderr), when asked for.
    pub log: Option<Lines>,
    /// Kept open: the server's stdout stays a live pipe for as long as it runs.
    pub banner: BufReader<ChildStdout>,
}

impl Served {
    /// `commperf serve --listen 127.0.0.1:0 --token TOKEN`, with whatever `setup` adds (more
    /// arguments, environment); its log followed with `log`, else dropped. Returns once the
    /// banner is out: clients are being accepted.
    pub fn start(token: &str, log: bool, setup: impl FnOnce(&mut Command)) -> Served {
        let mut cmd = command();
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--token", token])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(if log { Stdio::piped() } else { Stdio::null() });
        setup(&mut cmd);
        let mut child = Killed(cmd.spawn().expect("start commperf serve"));
        let log = child.0.stderr.take().map(Lines::follow);
        let mut banner = BufReader::new(child.0.stdout.take().expect("piped stdout"));
        let mut first = String::new();
        banner.read_line(&mut first).expect("the serve banner");
        let addr = first.trim().rsplit(' ').next().unwrap_or("").to_string();
        assert!(addr.starts_with("127.0.0.1:"), "banner: {first:?}");
        Served {
            child,
            addr,
            log,
            banner,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.0.id()
    }

    /// Its log; the server must have been started with one.
    pub fn log(&mut self) -> &mut Lines {
        self.log.as_mut().expect("started with its log followed")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temp_dir_is_unique_and_gone_when_dropped() {
        let (a, b) = (TempDir::new("kit"), TempDir::new("kit"));
        assert_ne!(a.path(), b.path());
        assert!(a
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with("commperf-kit-"));
        std::fs::write(a.join("f"), "x").unwrap();
        assert_eq!(a.arg("f"), a.path().join("f").display().to_string());
        let p = a.path().to_path_buf();
        drop(a);
        assert!(!p.exists());
        let f = TempFile::new("x.json");
        assert_eq!(f.file_name().unwrap(), "x.json");
        std::fs::write(&f, "{}").unwrap();
        let p = f.to_path_buf();
        drop(f);
        assert!(!p.exists() && !p.parent().unwrap().exists());
    }

    #[test]
    fn lines_are_waited_for_counted_and_read_to_the_end() {
        let child = Command::new("sh")
            .args([
                "-c",
                "echo one; echo two x; echo three x; sleep 0.2; echo four",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut k = Killed(child);
        let mut l = Lines::follow(k.0.stdout.take().unwrap());
        let got = l.wait_for(Duration::from_secs(10), |s| {
            s.strip_prefix("two ").map(str::to_string)
        });
        assert_eq!(got, Ok("x".to_string()));
        assert_eq!(l.seen, ["one", "two x"]);
        l.wait_count(" x", 2, Duration::from_secs(10));
        assert_eq!(l.matching(" x"), ["two x", "three x"]);
        assert_eq!(l.to_end(Duration::from_secs(10)).seen.len(), 4);
        let e = l
            .wait_for(Duration::from_millis(10), |_| Some(()))
            .unwrap_err();
        assert!(e.contains("four"), "{e}");
    }

    #[test]
    fn wait_until_says_whether_the_condition_came() {
        let mut n = 0;
        assert!(wait_until(Duration::from_secs(5), Duration::ZERO, || {
            n += 1;
            n == 3
        }));
        assert_eq!(n, 3);
        assert!(!wait_until(
            Duration::from_millis(20),
            Duration::from_millis(5),
            || false
        ));
    }
}
