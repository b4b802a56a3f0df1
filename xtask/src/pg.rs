//! A private Postgres cluster in a folder: `.data/pg` for `cargo xtask run`,
//! `target/xtask/pg-test` (fresh each time) for `cargo xtask test`.
//!
//! Postgres refuses to run as root. As root, the folder is handed to the
//! `postgres` system user and every Postgres program runs through
//! `runuser -u postgres`. The postmaster gets its own session (`setsid`), so
//! a Ctrl-C in the terminal reaches the server first and the cluster is
//! stopped afterwards, cleanly, by `pg_ctl stop`.

use crate::proc::{cmd, free_port, is_root, run};
use anyhow::Context as _;
use std::{
    path::{Path, PathBuf},
    process::Command,
};

/// A cluster under `base`: `base/data` (PGDATA) and `base/run` (socket, log).
#[derive(Debug)]
pub struct Cluster {
    base: PathBuf,
    bin: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// The superuser's password; `None` means `trust` (throwaway clusters).
    password: Option<String>,
    as_root: bool,
}

impl Cluster {
    /// A cluster handle; nothing happens on disk until [`Cluster::init`].
    pub fn new(base: &Path, bin: PathBuf, port: u16, password: Option<String>) -> Self {
        Self {
            base: base.to_path_buf(),
            bin,
            port,
            password,
            as_root: is_root(),
        }
    }

    fn data(&self) -> PathBuf {
        self.base.join("data")
    }

    fn run_dir(&self) -> PathBuf {
        self.base.join("run")
    }

    /// Whether `initdb` already ran here.
    pub fn exists(&self) -> bool {
        self.data().join("PG_VERSION").exists()
    }

    /// A Postgres program, as the `postgres` user when we are root.
    fn pg(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_root {
            let mut c = cmd("runuser");
            c.args(["-u", "postgres", "--"]).arg(exe);
            c
        } else {
            cmd(exe)
        }
    }

    fn ensure_postgres_user(&self) -> anyhow::Result<()> {
        let known = Command::new("id")
            .arg("postgres")
            .output()?
            .status
            .success();
        if !known {
            run(cmd("useradd")
                .args([
                    "--system",
                    "--home-dir",
                    "/var/lib/postgresql",
                    "--shell",
                    "/bin/bash",
                ])
                .arg("postgres"))?;
        }
        Ok(())
    }

    fn hand_to_postgres(&self) -> anyhow::Result<()> {
        if self.as_root {
            run(cmd("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&self.base))?;
        }
        Ok(())
    }

    /// `initdb`: UTF-8, superuser `postgres`, scram-sha-256 when a password
    /// is set, else trust.
    pub fn init(&self) -> anyhow::Result<()> {
        if self.as_root {
            self.ensure_postgres_user()?;
        }
        std::fs::create_dir_all(self.run_dir())
            .with_context(|| format!("creating {}", self.run_dir().display()))?;
        let pwfile = self.base.join("initdb-password");
        if let Some(pw) = &self.password {
            std::fs::write(&pwfile, pw)?;
        }
        self.hand_to_postgres()?;
        let mut initdb = self.pg("initdb");
        initdb.arg("-D").arg(self.data()).args([
            "-U",
            "postgres",
            "-E",
            "UTF8",
            "--locale=C",
            "--no-instructions",
        ]);
        match &self.password {
            Some(_) => initdb
                .arg("--auth=scram-sha-256")
                .arg(format!("--pwfile={}", pwfile.display())),
            None => initdb.arg("--auth=trust"),
        };
        initdb.stdout(std::process::Stdio::null());
        let result = run(&mut initdb);
        let _ = std::fs::remove_file(&pwfile);
        result
    }

    /// Starts the postmaster and waits until it accepts connections.
    /// `fast_and_loose` turns off durability (throwaway test clusters only).
    pub fn start(&self, fast_and_loose: bool) -> anyhow::Result<()> {
        self.hand_to_postgres()?;
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200",
            self.port,
            self.run_dir().display()
        );
        if fast_and_loose {
            options.push_str(" -c fsync=off -c synchronous_commit=off -c full_page_writes=off");
        }
        let mut start = cmd("setsid");
        start.arg("--wait");
        let inner = self.pg("pg_ctl");
        start.arg(inner.get_program()).args(inner.get_args());
        start
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.run_dir().join("postgres.log"))
            .args(["-w", "-t", "60", "-o", &options, "start"])
            .stdout(std::process::Stdio::null());
        run(&mut start).with_context(|| {
            format!(
                "Postgres did not start; see {}",
                self.run_dir().join("postgres.log").display()
            )
        })
    }

    /// Whether the postmaster of this folder is running.
    pub fn is_running(&self) -> bool {
        self.pg("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .arg("status")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Fast shutdown: open sessions are closed, committed data is safe.
    pub fn stop(&self) -> anyhow::Result<()> {
        if !self.is_running() {
            return Ok(());
        }
        run(self
            .pg("pg_ctl")
            .arg("-D")
            .arg(self.data())
            .args(["-m", "fast", "-w", "stop"])
            .stdout(std::process::Stdio::null()))
    }

    /// URL of database `db` as role `user` with `password`.
    pub fn url(&self, user: &str, password: Option<&str>, db: &str) -> String {
        match password {
            Some(pw) => format!("postgres://{user}:{pw}@127.0.0.1:{}/{db}", self.port),
            None => format!("postgres://{user}@127.0.0.1:{}/{db}", self.port),
        }
    }

    /// The superuser's URL (database `postgres`).
    pub fn superuser_url(&self) -> String {
        self.url("postgres", self.password.as_deref(), "postgres")
    }

    /// `pg_dump` of the cluster's own version.
    pub fn pg_dump(&self) -> Command {
        cmd(self.bin.join("pg_dump"))
    }

    /// `psql` of the cluster's own version.
    pub fn psql(&self) -> Command {
        cmd(self.bin.join("psql"))
    }
}

/// Stops a cluster when dropped, so an error or a panic mid-test does not
/// leave a postmaster behind.
#[derive(Debug)]
pub struct StopOnDrop<'a>(pub &'a Cluster);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        if let Err(err) = self.0.stop() {
            eprintln!("xtask: could not stop Postgres: {err:#}");
        }
    }
}

/// A new, empty cluster under `target/xtask/NAME`, durability off, trust
/// authentication on 127.0.0.1 only. Started; stop it with [`StopOnDrop`].
pub fn throwaway_cluster(name: &str) -> anyhow::Result<Cluster> {
    let base = crate::root().join("target/xtask").join(name);
    let bin = crate::tools::postgres_bin_dir()?;
    let stale = Cluster::new(&base, bin.clone(), 0, None);
    stale.stop()?;
    if base.exists() {
        std::fs::remove_dir_all(&base)?;
    }
    let cluster = Cluster::new(&base, bin, free_port()?, None);
    cluster.init()?;
    cluster.start(true)?;
    Ok(cluster)
}
