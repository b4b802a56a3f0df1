//! The `countersign` binary: a thin shim over the library.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use countersign::{AppState, Config, admin, config, db, telemetry};

/// Countersign: a chat whose tool calls wait for your approval.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    logging: config::Logging,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run migrations, then serve the API and the web app.
    Serve(Box<Config>),
    /// Run the database migrations and exit.
    Migrate {
        /// Postgres URL of the role that owns the schema.
        #[arg(long, env = "COUNTERSIGN_MIGRATION_DATABASE_URL")]
        database_url: config::Secret,
    },
    /// Database administration for the embedded set-up and the tests.
    #[command(subcommand)]
    Db(DbCommand),
    /// Look at MCP servers from the command line.
    #[command(subcommand)]
    Connector(ConnectorCommand),
    /// The activity log.
    #[command(subcommand)]
    Audit(AuditCommand),
    /// Print the OpenAPI 3.1 document of the HTTP API (what
    /// `/api/openapi.json` serves; `cargo xtask openapi` writes it to
    /// docs/openapi.json).
    Openapi,
    /// Accounts, for the operator (the same rules as the Admin page: the
    /// last active admin stays, every change enters the activity log).
    User {
        /// Postgres URL of the server's login role.
        #[arg(long, env = "DATABASE_URL", global = true)]
        database_url: Option<config::Secret>,
        #[command(subcommand)]
        command: UserCommand,
    },
    /// Secrets at rest: move them onto a new COUNTERSIGN_SECRET_KEY, or see
    /// which keys they are under (docs/operations.md, "Rotating keys").
    Secrets {
        /// Postgres URL of the server's login role.
        #[arg(long, env = "DATABASE_URL", global = true)]
        database_url: Option<config::Secret>,
        #[command(subcommand)]
        command: SecretsCommand,
    },
}

#[derive(Debug, Subcommand)]
enum SecretsCommand {
    /// Re-seal every stored secret that is not under COUNTERSIGN_SECRET_KEY
    /// (opening it with COUNTERSIGN_SECRET_KEY_PREVIOUS), in transactions
    /// of --batch-size rows; print counts per table. A value that opens
    /// under neither key is named and left alone (exit 1 at the end).
    /// Running it again finds nothing to do.
    Rotate {
        /// The new key (64 hex characters), as every instance now has it.
        #[arg(long, env = "COUNTERSIGN_SECRET_KEY", hide_env_values = true)]
        secret_key: config::Secret,
        /// The key being rotated away from.
        #[arg(long, env = "COUNTERSIGN_SECRET_KEY_PREVIOUS", hide_env_values = true)]
        secret_key_previous: Option<config::Secret>,
        /// Rows per transaction.
        #[arg(long, default_value_t = 100)]
        batch_size: u32,
    },
    /// How many stored secrets each key id holds, per table (labelled
    /// current / previous when the keys are given). When nothing is under
    /// the previous key's id, COUNTERSIGN_SECRET_KEY_PREVIOUS can go.
    Status {
        /// The current key, to label its id.
        #[arg(long, env = "COUNTERSIGN_SECRET_KEY", hide_env_values = true)]
        secret_key: Option<config::Secret>,
        /// The previous key, to label its id.
        #[arg(long, env = "COUNTERSIGN_SECRET_KEY_PREVIOUS", hide_env_values = true)]
        secret_key_previous: Option<config::Secret>,
    },
}

#[derive(Debug, Subcommand)]
enum UserCommand {
    /// Every account: email, admin, disabled, two-factor, last seen.
    List,
    /// Create an account and print its one-time password (the user chooses
    /// their own at the first sign-in).
    Create {
        email: String,
        /// Make it an administrator.
        #[arg(long)]
        admin: bool,
    },
    /// Disable an account: signed out everywhere, its waiting calls denied,
    /// its running turns stopped.
    Disable { email: String },
    /// Enable a disabled account.
    Enable { email: String },
    /// Set a one-time password (printed) and sign the user out everywhere.
    ResetPassword { email: String },
    /// Make an account an administrator.
    MakeAdmin { email: String },
}

#[derive(Debug, Subcommand)]
enum AuditCommand {
    /// Re-compute the activity log's hash chain; name the first broken row
    /// (exit 1) or say how many rows are intact. With --head, also check
    /// that the chain still contains a head recorded earlier (exit 1 when
    /// it does not: the log was rewritten or cut short since).
    Verify {
        /// Postgres URL of the server's login role (or any role that may
        /// read the log). Not needed with --file.
        #[arg(long, env = "DATABASE_URL", required_unless_present = "file")]
        database_url: Option<config::Secret>,
        /// A head recorded earlier by `countersign audit head`: SEQ:DIGEST,
        /// or the DIGEST alone.
        #[arg(long, value_name = "SEQ:DIGEST")]
        head: Option<countersign::audit::RecordedHead>,
        /// Verify this export (`countersign audit export`) instead of the
        /// database.
        #[arg(long, value_name = "FILE")]
        file: Option<std::path::PathBuf>,
    },
    /// Write the chain as JSON lines (seq, at, prev_hash, hash, entry), then
    /// a last line with its head: {"head": {"seq", "hash"}}.
    Export {
        /// Postgres URL of the server's login role.
        #[arg(long, env = "DATABASE_URL")]
        database_url: config::Secret,
        /// Start at this row, or at the first row written at or after this
        /// RFC 3339 time.
        #[arg(long, value_name = "SEQ|TIME")]
        since: Option<countersign::audit::export::Since>,
        /// Write to this file instead of stdout.
        #[arg(long, value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Print the chain's head, SEQ:DIGEST (0:000… when empty), to record
    /// somewhere the database's owners cannot write.
    Head {
        /// Postgres URL of the server's login role.
        #[arg(long, env = "DATABASE_URL")]
        database_url: config::Secret,
    },
}

#[derive(Debug, Subcommand)]
enum ConnectorCommand {
    /// Connect to URL through the SSRF guard, print the negotiated protocol
    /// and every tool as the server describes it (annotations raw, with the
    /// descriptor digest); with --call, call one tool. Stores nothing.
    /// Exits 1 when connecting, listing or the call fails.
    Probe {
        /// The connector's URL, e.g. https://mcp.example.com/mcp.
        url: String,
        /// An extra request header, NAME:VALUE (repeatable).
        #[arg(long = "header", value_name = "NAME:VALUE")]
        headers: Vec<String>,
        /// A bearer token for the Authorization header.
        #[arg(long, env = "COUNTERSIGN_PROBE_BEARER", hide_env_values = true)]
        bearer: Option<config::Secret>,
        /// Private destinations to allow (comma-separated hosts, host:port
        /// or CIDRs), as for the server.
        #[arg(long, env = "COUNTERSIGN_ALLOW_PRIVATE_CONNECTORS", default_value = "")]
        allow_private: countersign::ssrf::AllowList,
        /// A tool to call after listing.
        #[arg(long, value_name = "TOOL")]
        call: Option<String>,
        /// The tool's arguments, a JSON object.
        #[arg(long, value_name = "JSON", requires = "call", default_value = "{}")]
        args: String,
        /// Print one JSON document: {"protocol", "tools": [{"digest",
        /// "descriptor"}], "dropped", "calls"}, each descriptor exactly as
        /// the server sent it.
        #[arg(long)]
        json: bool,
        /// Answer the server's requests for input (elicitation, legacy and
        /// 2026-07-28 multi-round) without asking: accept with the requested
        /// form's defaults (a URL is accepted, never opened), decline, or
        /// cancel. Without it, no elicitation capability is declared.
        #[arg(long, value_name = "accept-defaults|decline|cancel")]
        elicit: Option<countersign::mcp::HeadlessAnswer>,
        /// Be the MCP conformance suite's client under test: read the
        /// scenario from MCP_CONFORMANCE_SCENARIO and MCP_CONFORMANCE_CONTEXT,
        /// list, make the calls it asks for, answer elicitations with
        /// accept-defaults (unless --elicit says otherwise), print --json.
        #[arg(long, conflicts_with = "call")]
        conformance: bool,
        /// Sign in with OAuth (the MCP authorization spec) when the server
        /// answers 401: discovery from its challenge, a client (the
        /// --client-id, a --client-metadata-url document, or dynamic
        /// registration as a native client), PKCE; prints the authorization
        /// URL and waits for the browser to come back to a one-shot listener
        /// on 127.0.0.1. Steps up on 403 insufficient_scope (at most twice).
        /// Nothing is stored. Without it, a 401 prints what the server's
        /// OAuth metadata names.
        #[arg(long, conflicts_with = "bearer")]
        oauth: bool,
        /// With --oauth (implied): open the authorization URL itself and
        /// follow its redirects back to the listener, for authorization
        /// servers that need no person (test servers, the conformance suite).
        #[arg(long, conflicts_with = "bearer")]
        oauth_follow: bool,
        /// With --oauth: a client id registered with the authorization server
        /// out of band.
        #[arg(long, value_name = "ID")]
        client_id: Option<String>,
        /// With --client-id: its secret (a confidential client).
        #[arg(
            long,
            env = "COUNTERSIGN_PROBE_CLIENT_SECRET",
            hide_env_values = true,
            requires = "client_id"
        )]
        client_secret: Option<config::Secret>,
        /// With --oauth: the https URL of a Client ID Metadata Document to
        /// present as the client id where the authorization server supports
        /// them.
        #[arg(long, value_name = "URL")]
        client_metadata_url: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
enum DbCommand {
    /// Create (or update) the roles and the database Countersign needs, as a
    /// superuser: an owner role that migrations run as, a login role for the
    /// server that owns nothing, and `anon` / `authenticated` / `service_role`.
    Bootstrap {
        /// A superuser's URL (any database on the cluster).
        #[arg(long, env = "COUNTERSIGN_SUPERUSER_URL")]
        superuser_url: config::Secret,
        /// Name of the database to create when missing.
        #[arg(long, default_value = "countersign")]
        database: String,
        /// Password to set for the owner role `countersign_owner`.
        #[arg(long, env = "COUNTERSIGN_OWNER_PASSWORD")]
        owner_password: config::Secret,
        /// Password to set for the server's login role `countersign_app`.
        #[arg(long, env = "COUNTERSIGN_APP_PASSWORD")]
        app_password: config::Secret,
    },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    telemetry::init(cli.logging.log_format);
    match cli.command {
        Command::Serve(config) => serve(*config).await,
        Command::Migrate { database_url } => {
            db::migrate(database_url.expose()).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Db(DbCommand::Bootstrap {
            superuser_url,
            database,
            owner_password,
            app_password,
        }) => {
            db::bootstrap(
                superuser_url.expose(),
                &database,
                owner_password.expose(),
                app_password.expose(),
            )
            .await?;
            tracing::info!(db.name = %database, "database and roles ready");
            Ok(())
        }
        Command::Audit(command) => {
            use countersign::audit;
            match command {
                AuditCommand::Verify {
                    database_url,
                    head,
                    file,
                } => {
                    let (what, verified) = match (file, database_url) {
                        (Some(file), _) => {
                            ("export", audit::export::verify_file(&file, head.as_ref())?)
                        }
                        (None, Some(url)) => {
                            let pool = db::connect(url.expose()).await?;
                            (
                                "activity log",
                                audit::verify_with_head(&pool, head.as_ref()).await?,
                            )
                        }
                        (None, None) => {
                            anyhow::bail!("give --database-url (DATABASE_URL) or --file")
                        }
                    };
                    let intact = verified.is_intact();
                    println!(
                        "{}",
                        audit::Report {
                            what,
                            verified,
                            recorded: head.as_ref()
                        }
                    );
                    if !intact {
                        std::process::exit(1);
                    }
                }
                AuditCommand::Export {
                    database_url,
                    since,
                    output,
                } => {
                    let pool = db::connect(database_url.expose()).await?;
                    let (head, rows) =
                        audit::export::export_to(&pool, since.as_ref(), output.as_deref()).await?;
                    eprintln!("exported {rows} rows; head {head}");
                }
                AuditCommand::Head { database_url } => {
                    let pool = db::connect(database_url.expose()).await?;
                    println!("{}", audit::head(&pool).await?);
                }
            }
            Ok(())
        }
        Command::Openapi => {
            println!(
                "{}",
                countersign::http::openapi::document().to_pretty_json()?
            );
            Ok(())
        }
        Command::User {
            database_url,
            command,
        } => {
            let url = database_url
                .context("set DATABASE_URL (or --database-url) to the server's database")?;
            let pool = db::connect(url.expose()).await?;
            match user_command(&pool, command).await {
                Ok(out) => {
                    print!("{out}");
                    Ok(())
                }
                Err(err) => {
                    eprintln!("countersign user: {}", admin::describe(&err));
                    std::process::exit(1);
                }
            }
        }
        Command::Secrets {
            database_url,
            command,
        } => {
            let url = database_url
                .context("set DATABASE_URL (or --database-url) to the server's database")?;
            let pool = db::connect(url.expose()).await?;
            secrets_command(&pool, command).await
        }
        Command::Connector(ConnectorCommand::Probe {
            url,
            headers,
            bearer,
            allow_private,
            call,
            args,
            json,
            elicit,
            conformance,
            oauth,
            oauth_follow,
            client_id,
            client_secret,
            client_metadata_url,
        }) => {
            let oauth =
                (oauth || oauth_follow).then_some(countersign::probe::oauth::OAuthOptions {
                    follow: oauth_follow,
                    client_id,
                    client_secret,
                    client_metadata_url,
                });
            let request = countersign::probe::Probe {
                url,
                headers,
                bearer,
                allow: allow_private,
                call: call.map(|name| (name, args)),
                elicit,
                json,
                oauth,
            };
            let result = if conformance {
                countersign::probe::conformance::run_from_env(&request).await
            } else {
                countersign::probe::probe(&request).await
            };
            match result {
                Ok(report) => {
                    print!("{report}");
                    Ok(())
                }
                Err(err) => {
                    if let countersign::probe::ProbeError::CallsFailed { report, .. } = &err {
                        print!("{report}");
                    }
                    // A message for a person, not a backtrace: exit 1.
                    eprintln!("countersign connector probe: {err}");
                    std::process::exit(1);
                }
            }
        }
    }
}

/// Runs one `countersign user …` command; returns what to print.
async fn user_command(
    pool: &sqlx::PgPool,
    command: UserCommand,
) -> Result<String, admin::AdminError> {
    use admin::{Actor::Operator, Change};
    let hasher = countersign::auth::PasswordHasher::default();
    let change = |disabled, is_admin| Change {
        disabled,
        is_admin,
        is_approver: None,
    };
    let (email, change) = match command {
        UserCommand::List => return Ok(admin::list_text(&admin::users(pool).await?)),
        UserCommand::Create { email, admin } => {
            let (_, password) = admin::create_user(pool, &hasher, Operator, &email, admin).await?;
            return Ok(format!(
                "created {email}\none-time password: {password}\n(the user chooses their own at \
                 the first sign-in)\n"
            ));
        }
        UserCommand::ResetPassword { email } => {
            let id = admin::find_by_email(pool, &email).await?;
            let password = admin::reset_password(pool, &hasher, Operator, id).await?;
            return Ok(format!(
                "{email} is signed out everywhere\none-time password: {password}\n"
            ));
        }
        UserCommand::Disable { email } => (email, change(Some(true), None)),
        UserCommand::Enable { email } => (email, change(Some(false), None)),
        UserCommand::MakeAdmin { email } => (email, change(None, Some(true))),
    };
    let id = admin::find_by_email(pool, &email).await?;
    let done = admin::update_user(pool, Operator, id, change).await?;
    Ok(match change.disabled {
        Some(true) => format!(
            "disabled {email}: {} sessions signed out, {} waiting calls denied, {} turns stopped\n",
            done.sessions_revoked,
            done.calls_denied,
            done.turns_stopped.len()
        ),
        _ => format!("updated {email}\n"),
    })
}

/// Runs one `countersign secrets …` command; exits 1 when a value was
/// left under an unknown key.
async fn secrets_command(pool: &sqlx::PgPool, command: SecretsCommand) -> anyhow::Result<()> {
    use countersign::secrets::{SecretBox, rotate};
    let secret_box = |current: &config::Secret, previous: Option<&config::Secret>| {
        let current = SecretBox::from_hex(current.expose())?;
        match previous {
            Some(previous) => current.with_previous(previous.expose()),
            None => Ok(current),
        }
    };
    match command {
        SecretsCommand::Rotate {
            secret_key,
            secret_key_previous,
            batch_size,
        } => {
            let secrets = secret_box(&secret_key, secret_key_previous.as_ref())?;
            let report = rotate::rotate(pool, &secrets, batch_size).await?;
            print!("{report}");
            if !report.is_complete() {
                std::process::exit(1);
            }
        }
        SecretsCommand::Status {
            secret_key,
            secret_key_previous,
        } => {
            let secrets = secret_key
                .as_ref()
                .map(|k| secret_box(k, secret_key_previous.as_ref()))
                .transpose()?;
            print!("{}", rotate::status(pool, secrets.as_ref()).await?);
        }
    }
    Ok(())
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let migration_url = config
        .migration_database_url
        .as_ref()
        .unwrap_or(&config.database_url);
    db::migrate(migration_url.expose())
        .await
        .context("running migrations")?;
    let pool = db::connect(config.database_url.expose())
        .await
        .context("connecting to the database")?;
    db::warn_if_role_can_bypass_rls(&pool).await?;
    db::warn_if_postgres_logs_content(&pool).await?;

    let listener = tokio::net::TcpListener::bind(config.bind)
        .await
        .with_context(|| format!("binding {}", config.bind))?;
    let addr = listener.local_addr()?;
    let metrics_listener = match config.metrics_bind {
        Some(bind) => Some(
            tokio::net::TcpListener::bind(bind)
                .await
                .with_context(|| format!("binding COUNTERSIGN_METRICS_BIND {bind}"))?,
        ),
        None => None,
    };
    tracing::info!(url = %format!("http://{addr}"), "Countersign is listening");
    println!("Countersign is up at http://{addr}");

    if config.secret_key.is_none() {
        tracing::warn!("COUNTERSIGN_SECRET_KEY is not set: users cannot store provider keys");
    }
    let state = AppState::new(pool, config).await?;
    let shutdown = futures_util::FutureExt::shared(shutdown_signal());
    if let Some(metrics_listener) = metrics_listener {
        let addr = metrics_listener.local_addr()?;
        tracing::info!(url = %format!("http://{addr}/metrics"), "metrics are served");
        let (state, shutdown) = (state.clone(), shutdown.clone());
        tokio::spawn(async move {
            if let Err(err) =
                countersign::http::metrics::serve(metrics_listener, state, shutdown).await
            {
                tracing::error!(error = %err, "the metrics listener stopped");
            }
        });
    }
    countersign::serve(listener, state, shutdown).await?;
    tracing::info!("stopped");
    Ok(())
}

/// Resolves on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(err) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %err, "cannot listen for Ctrl-C");
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut sig) => {
                sig.recv().await;
            }
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing in-flight requests");
}
