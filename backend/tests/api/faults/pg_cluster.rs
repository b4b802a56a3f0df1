//! A Postgres cluster of the scenario's own, in a temporary folder, that it
//! may restart and crash: the Postgres programs come from
//! `COUNTERSIGN_FAULTS_PG_BIN` (set by `cargo xtask faults`). As root the
//! folder is handed to the `postgres` user and every program runs through
//! `runuser -u postgres --`, as `xtask/src/pg.rs` does (Postgres refuses to
//! run as root). Stopped (immediate) and removed when dropped.

use reqwest::Url;
use std::path::PathBuf;
use tokio::process::Command;

/// The variable naming the Postgres bin folder.
pub const PG_BIN_VAR: &str = "COUNTERSIGN_FAULTS_PG_BIN";

/// A running cluster on 127.0.0.1.
pub struct PgCluster {
    base: PathBuf,
    bin: PathBuf,
    as_root: bool,
    /// Its TCP port.
    pub port: u16,
}

impl PgCluster {
    /// `initdb` (trust, superuser `postgres`) and start, on a free port.
    /// Panics, naming the variable, when `COUNTERSIGN_FAULTS_PG_BIN` is not
    /// set: the scenario cannot run without it, and must not pass.
    pub async fn start_new() -> Self {
        let bin = std::env::var_os(PG_BIN_VAR).map(PathBuf::from).unwrap_or_else(|| {
            panic!(
                "{PG_BIN_VAR} is not set: this scenario restarts a Postgres cluster of its own. \
                 Run it with `cargo xtask faults`, or set {PG_BIN_VAR} to Postgres's bin folder \
                 (e.g. /usr/lib/postgresql/15/bin)."
            )
        });
        assert!(
            bin.join("pg_ctl").exists(),
            "{PG_BIN_VAR}={} has no pg_ctl",
            bin.display()
        );
        let base = std::env::temp_dir().join(format!(
            "countersign-faults-pg-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(base.join("run")).expect("cluster folder");
        let as_root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout.starts_with(b"0\n"));
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cluster = Self {
            base,
            bin,
            as_root,
            port,
        };
        if as_root {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&cluster.base)
                .status()
                .await
                .expect("chown");
            assert!(status.success(), "chown the cluster folder to postgres");
        }
        let mut initdb = cluster.pg("initdb");
        initdb
            .arg("-D")
            .arg(cluster.data())
            .args(["-U", "postgres", "-E", "UTF8", "--locale=C", "--auth=trust"])
            .stdout(std::process::Stdio::null());
        cluster.run(initdb, "initdb").await;
        cluster.start().await;
        cluster
    }

    fn data(&self) -> PathBuf {
        self.base.join("data")
    }

    /// A Postgres program, as the `postgres` user when we are root.
    fn pg(&self, program: &str) -> Command {
        let exe = self.bin.join(program);
        if self.as_root {
            let mut command = Command::new("runuser");
            command.args(["-u", "postgres", "--"]).arg(exe);
            command
        } else {
            Command::new(exe)
        }
    }

    async fn run(&self, mut command: Command, what: &str) {
        let status = command.status().await.expect(what);
        assert!(status.success(), "{what} failed: {status}");
    }

    fn pg_ctl(&self, action: &[&str]) -> Command {
        let mut pg_ctl = self.pg("pg_ctl");
        pg_ctl
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.base.join("run/postgres.log"))
            .args(["-w", "-t", "60"])
            .args(action)
            .stdout(std::process::Stdio::null());
        pg_ctl
    }

    /// Starts the postmaster; returns once it accepts connections.
    pub async fn start(&self) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off",
            self.port,
            self.base.join("run").display()
        );
        self.run(self.pg_ctl(&["-o", &options, "start"]), "pg_ctl start")
            .await;
    }

    /// `pg_ctl restart -m fast`: every session ended, a clean shutdown,
    /// then up again; returns once it accepts connections.
    pub async fn restart_fast(&self) {
        self.run(self.pg_ctl(&["-m", "fast", "restart"]), "pg_ctl restart")
            .await;
    }

    /// `pg_ctl stop -m immediate`: the postmaster and every backend quit at
    /// once, no checkpoint — a crash; the next start replays the WAL.
    pub async fn stop_immediate(&self) {
        self.run(self.pg_ctl(&["-m", "immediate", "stop"]), "pg_ctl stop")
            .await;
    }

    /// The superuser's URL.
    pub fn superuser_url(&self) -> Url {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
            .parse()
            .expect("URL")
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        let mut stop = std::process::Command::new(if self.as_root {
            PathBuf::from("runuser")
        } else {
            self.bin.join("pg_ctl")
        });
        if self.as_root {
            stop.args(["-u", "postgres", "--"])
                .arg(self.bin.join("pg_ctl"));
        }
        let _ = stop
            .arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "stop"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.base);
    }
}
