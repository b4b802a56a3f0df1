//! Running commands: print each one, fail with context.

use anyhow::{Context as _, bail};
use std::{
    ffi::OsStr,
    io::{Read as _, Write as _},
    net::{TcpListener, TcpStream},
    path::Path,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A command builder that prints itself before running.
pub fn cmd(program: impl AsRef<OsStr>) -> Command {
    let mut c = Command::new(program);
    c.current_dir(crate::root());
    c
}

pub fn describe(c: &Command) -> String {
    let mut s = c.get_program().to_string_lossy().into_owned();
    for a in c.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Runs `c` to completion; an unsuccessful exit is an error.
pub fn run(c: &mut Command) -> anyhow::Result<()> {
    let what = describe(c);
    println!("$ {what}");
    let status = c
        .status()
        .with_context(|| format!("cannot start `{what}`"))?;
    if !status.success() {
        bail!("`{what}` failed ({status})");
    }
    Ok(())
}

/// Runs `c` and returns its stdout; an unsuccessful exit is an error.
pub fn output(c: &mut Command) -> anyhow::Result<String> {
    let what = describe(c);
    let out = c
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot start `{what}`"))?;
    if !out.status.success() {
        bail!("`{what}` failed ({})", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Starts `c` in the background.
pub fn spawn(c: &mut Command) -> anyhow::Result<Child> {
    let what = describe(c);
    println!("$ {what} &");
    c.spawn().with_context(|| format!("cannot start `{what}`"))
}

/// Whether `program` is on PATH.
pub fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether we are root (Postgres refuses to run as root; apt needs it).
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Waits until `GET path` on 127.0.0.1:`port` answers 200, or `child`
/// exits, or `timeout` passes.
pub fn wait_for_http(
    port: u16,
    path: &str,
    child: &mut Child,
    timeout: Duration,
) -> anyhow::Result<()> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("the server exited before it was ready ({status})");
        }
        if http_status(port, path).is_ok_and(|s| s == 200) {
            return Ok(());
        }
        if start.elapsed() > timeout {
            bail!("the server was not ready on port {port} after {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn http_status(port: u16, path: &str) -> anyhow::Result<u16> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(
        stream,
        "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n"
    )?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head)?;
    let text = String::from_utf8_lossy(&head);
    Ok(text.get(9..12).unwrap_or("0").parse()?)
}

/// Asks `child` to stop (SIGTERM), then waits for it.
pub fn terminate(child: &mut Child) {
    if child.try_wait().ok().flatten().is_none() {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let _ = child.wait();
    }
}

/// Writes `contents` to `path` readable by its owner only.
pub fn write_private(path: &Path, contents: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    f.write_all(contents.as_bytes())?;
    Ok(())
}

/// Test counts read off a runner's output.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed.
    pub failed: u64,
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, other: Self) {
        self.passed += other.passed;
        self.failed += other.failed;
    }
}

/// Counts in one line of `cargo test` (`test result: ok. 27 passed; 0
/// failed; …`) or Playwright (`  2 passed (4.8s)`, `  1 failed`) output.
pub fn counts_in(line: &str) -> Counts {
    let number_before = |text: &str, word: &str| -> u64 {
        text.split([';', ','])
            .filter_map(|part| {
                part.trim().strip_suffix(word).or_else(|| {
                    let mut words = part.split_whitespace();
                    let n = words.next()?;
                    (words.next()? == word.trim()).then_some(n)
                })
            })
            .filter_map(|n| n.trim().parse::<u64>().ok())
            .sum()
    };
    if let Some(rest) = line.strip_prefix("test result: ") {
        let rest = rest.split_once(". ").map_or(rest, |(_, r)| r);
        return Counts {
            passed: number_before(rest, " passed"),
            failed: number_before(rest, " failed"),
        };
    }
    let trimmed = line.trim();
    let mut words = trimmed.split_whitespace();
    match (
        words.next().and_then(|n| n.parse::<u64>().ok()),
        words.next(),
    ) {
        (Some(n), Some("passed")) => Counts {
            passed: n,
            failed: 0,
        },
        (Some(n), Some("failed")) => Counts {
            passed: 0,
            failed: n,
        },
        _ => Counts::default(),
    }
}

/// Runs `c` like [`run`], echoing its stdout line by line and adding up the
/// test counts it reports.
pub fn run_counting(c: &mut Command, counts: &mut Counts) -> anyhow::Result<()> {
    use std::io::BufRead as _;
    let what = describe(c);
    println!("$ {what}");
    let mut child = c
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start `{what}`"))?;
    if let Some(stdout) = child.stdout.take() {
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line?;
            println!("{line}");
            *counts += counts_in(&line);
        }
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("`{what}` failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_read_from_cargo_and_playwright_lines() {
        for (line, passed, failed) in [
            (
                "test result: ok. 27 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 3.12s",
                27,
                0,
            ),
            (
                "test result: FAILED. 4 passed; 2 failed; 0 ignored; 0 measured; 21 filtered out",
                4,
                2,
            ),
            ("  2 passed (4.8s)", 2, 0),
            ("  1 failed", 0, 1),
            ("test auth::x ... ok", 0, 0),
            ("Running 2 tests using 1 worker", 0, 0),
        ] {
            let c = counts_in(line);
            assert_eq!((c.passed, c.failed), (passed, failed), "{line}");
        }
    }
}
