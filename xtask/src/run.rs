//! `cargo xtask run`: the product, out of the box.

use crate::{
    pg::{Cluster, StopOnDrop},
    proc::{cmd, free_port, run as run_cmd, spawn, terminate, wait_for_http, write_private},
    tools, web,
};
use anyhow::Context as _;
use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

/// Path of the server binary built by `cargo build -p countersign`.
pub fn server_bin() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::root().join("target"))
        .join("debug/countersign")
}

/// Builds the server (debug profile; argon2 is optimised even there).
pub fn build_server() -> anyhow::Result<()> {
    run_cmd(cmd("cargo").args(["build", "-p", "countersign"]))
}

/// Runs `countersign db bootstrap` against a cluster: roles, and `database`
/// owned by the owner role. Passwords travel in the environment, not argv.
pub fn bootstrap_db(
    cluster: &Cluster,
    database: &str,
    owner_password: &str,
    app_password: &str,
) -> anyhow::Result<()> {
    run_cmd(
        cmd(server_bin())
            .args(["db", "bootstrap", "--database", database])
            .env("COUNTERSIGN_SUPERUSER_URL", cluster.superuser_url())
            .env("COUNTERSIGN_OWNER_PASSWORD", owner_password)
            .env("COUNTERSIGN_APP_PASSWORD", app_password),
    )
}

/// Secrets of the embedded set-up, generated once into `.data/secrets.env`
/// (mode 0600) and reused by every later run.
fn load_or_create_secrets(path: &Path) -> anyhow::Result<BTreeMap<String, String>> {
    let mut secrets: BTreeMap<String, String> = std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let mut changed = false;
    for (key, len) in [
        ("PG_SUPERUSER_PASSWORD", 24),
        ("PG_OWNER_PASSWORD", 24),
        ("PG_APP_PASSWORD", 24),
        // Secrets at rest (provider keys, connector credentials).
        ("COUNTERSIGN_SECRET_KEY", 32),
        // The approval ledger's HMAC key.
        ("COUNTERSIGN_APPROVAL_KEY", 32),
    ] {
        secrets.entry(key.to_owned()).or_insert_with(|| {
            changed = true;
            let bytes: [u8; 32] = rand::random();
            bytes[..len].iter().map(|b| format!("{b:02x}")).collect()
        });
    }
    if changed {
        let text: String = secrets.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        write_private(path, &text)?;
    }
    Ok(secrets)
}

fn secret<'a>(secrets: &'a BTreeMap<String, String>, key: &str) -> anyhow::Result<&'a str> {
    secrets
        .get(key)
        .map(String::as_str)
        .with_context(|| format!("{key} missing from .data/secrets.env"))
}

/// What `cargo xtask run` adds to the server's settings for the demo MCP
/// server at `demo_bind`, given the caller's own (`user`): a setting the
/// user made is never overridden, and the private-connector allow list is
/// merged with the demo server's address, never replaced (an operator's
/// own private server stays reachable).
fn demo_settings(
    user: impl Fn(&str) -> Option<String>,
    demo_bind: &str,
) -> Vec<(&'static str, String)> {
    let own = user("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS")
        .map(|v| v.trim().trim_end_matches(',').to_owned())
        .filter(|v| !v.is_empty());
    let allow = match own {
        Some(own) if own.split(',').any(|entry| entry.trim() == demo_bind) => own,
        Some(own) => format!("{own},{demo_bind}"),
        None => demo_bind.to_owned(),
    };
    let mut settings = vec![("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS", allow)];
    if user("COUNTERSIGN_DEMO_CONNECTOR_URL").is_none() {
        settings.push((
            "COUNTERSIGN_DEMO_CONNECTOR_URL",
            format!("http://{demo_bind}/mcp"),
        ));
    }
    settings
}

/// Installs what is missing, builds, starts Postgres (unless `DATABASE_URL`
/// is set) and the server, and waits for Ctrl-C.
pub fn run() -> anyhow::Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&stop);
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("installing the Ctrl-C handler")?;
    }

    web::build()?;
    build_server()?;
    run_cmd(cmd("cargo").args(["build", "-p", "countersign-demo-mcp"]))?;

    let data = crate::root().join(".data");
    std::fs::create_dir_all(&data)?;
    let secrets = load_or_create_secrets(&data.join("secrets.env"))?;

    let mut server = cmd(server_bin());
    server.arg("serve");
    if std::env::var_os("COUNTERSIGN_STATIC_DIR").is_none() {
        server.env("COUNTERSIGN_STATIC_DIR", web::site_dir());
    }
    for key in ["COUNTERSIGN_SECRET_KEY", "COUNTERSIGN_APPROVAL_KEY"] {
        if std::env::var_os(key).is_none() {
            server.env(key, secret(&secrets, key)?);
        }
    }

    let cluster = match std::env::var("DATABASE_URL") {
        Ok(_) => {
            println!("DATABASE_URL is set: using that database, no embedded Postgres.");
            None
        }
        Err(_) => {
            let base = data.join("pg");
            let port_file = data.join("pg-port");
            let port = match std::fs::read_to_string(&port_file) {
                Ok(p) => p.trim().parse().context("reading .data/pg-port")?,
                Err(_) => {
                    let p = free_port()?;
                    std::fs::write(&port_file, p.to_string())?;
                    p
                }
            };
            let cluster = Cluster::new(
                &base,
                tools::postgres_bin_dir()?,
                port,
                Some(secret(&secrets, "PG_SUPERUSER_PASSWORD")?.to_owned()),
            );
            if !cluster.exists() {
                cluster.init()?;
            }
            cluster.start(false)?;
            let owner_pw = secret(&secrets, "PG_OWNER_PASSWORD")?;
            let app_pw = secret(&secrets, "PG_APP_PASSWORD")?;
            bootstrap_db(&cluster, "countersign", owner_pw, app_pw)?;
            server
                .env(
                    "DATABASE_URL",
                    cluster.url("countersign_app", Some(app_pw), "countersign"),
                )
                .env(
                    "COUNTERSIGN_MIGRATION_DATABASE_URL",
                    cluster.url("countersign_owner", Some(owner_pw), "countersign"),
                );
            Some(cluster)
        }
    };
    let _stop_cluster = cluster.as_ref().map(StopOnDrop);

    let bind = std::env::var("COUNTERSIGN_BIND").unwrap_or_else(|_| "127.0.0.1:3000".to_owned());
    let port: u16 = bind
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .context("COUNTERSIGN_BIND must end in :PORT")?;
    // The demo MCP server, on loopback, allowed as a private connector.
    let demo_bind =
        std::env::var("COUNTERSIGN_DEMO_MCP_BIND").unwrap_or_else(|_| "127.0.0.1:3100".to_owned());
    let mut demo = spawn(
        cmd(server_bin().with_file_name("countersign-demo-mcp")).args(["--bind", &demo_bind]),
    )?;
    server.envs(demo_settings(|key| std::env::var(key).ok(), &demo_bind));
    let mut child = match spawn(&mut server) {
        Ok(child) => child,
        Err(err) => {
            terminate(&mut demo);
            return Err(err);
        }
    };
    if let Err(err) = wait_for_http(port, "/readyz", &mut child, Duration::from_secs(60)) {
        terminate(&mut child);
        terminate(&mut demo);
        if stop.load(Ordering::SeqCst) {
            println!("stopped before the server was ready");
            return Ok(());
        }
        return Err(err);
    }
    println!(
        "\n  Countersign is running at http://{bind}  (Ctrl-C stops it)\n  \
         Demo MCP server: http://{demo_bind}/mcp\n"
    );

    loop {
        if let Some(status) = child.try_wait()? {
            println!("server exited ({status})");
            break;
        }
        if stop.load(Ordering::SeqCst) {
            // The terminal's Ctrl-C already reached the server (same process
            // group); a SIGTERM sent to xtask alone is forwarded here.
            terminate(&mut child);
            println!("server stopped");
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    terminate(&mut demo);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::demo_settings;

    fn with(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |key| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
    }

    #[test]
    fn the_demo_server_joins_a_users_allow_list_and_overrides_nothing() {
        let demo = "127.0.0.1:3100";
        assert_eq!(
            demo_settings(with(&[]), demo),
            vec![
                ("COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS", demo.to_owned()),
                (
                    "COUNTERSIGN_DEMO_CONNECTOR_URL",
                    "http://127.0.0.1:3100/mcp".to_owned()
                ),
            ]
        );
        let own = with(&[
            (
                "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS",
                "10.1.2.3:8080,mcp.internal",
            ),
            ("COUNTERSIGN_DEMO_CONNECTOR_URL", "http://mcp.internal/mcp"),
        ]);
        assert_eq!(
            demo_settings(own, demo),
            vec![(
                "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS",
                "10.1.2.3:8080,mcp.internal,127.0.0.1:3100".to_owned()
            )],
            "merged, and the user's demo URL kept"
        );
        let already = with(&[(
            "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS",
            "127.0.0.1:3100, ::1",
        )]);
        assert_eq!(
            demo_settings(already, demo)[0].1,
            "127.0.0.1:3100, ::1",
            "not added twice"
        );
    }
}
