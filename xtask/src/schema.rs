//! `schema.sql`: the whole schema as a freshly migrated database has it,
//! committed and diffed by `cargo xtask test` (like lldap's schema file).

use crate::{
    pg::{Cluster, StopOnDrop},
    proc::{cmd, output, run},
    run::{bootstrap_db, build_server, server_bin},
};
use anyhow::bail;

/// Roles whose table privileges are spelled out at the end of the file.
const API_ROLES: [&str; 3] = ["anon", "authenticated", "service_role"];

/// Lines of `pg_dump` output that differ between machines, not schemas.
fn is_noise(line: &str) -> bool {
    line.starts_with("-- Dumped from database version")
        || line.starts_with("-- Dumped by pg_dump version")
        || line.starts_with("\\restrict")
        || line.starts_with("\\unrestrict")
}

/// Migrates a new database on `cluster` and renders the schema: `pg_dump
/// --schema-only`, then, from the catalog, every table's RLS state and what
/// each API role may do with it (`pg_dump` leaves out privileges that were
/// never granted, and those are the ones a reviewer wants to see).
pub fn render(cluster: &Cluster) -> anyhow::Result<String> {
    build_server()?;
    let db = format!("schema_{}", std::process::id());
    bootstrap_db(cluster, &db, "schema", "schema")?;
    run(cmd(server_bin()).arg("migrate").env(
        "COUNTERSIGN_MIGRATION_DATABASE_URL",
        cluster.url("countersign_owner", None, &db),
    ))?;

    let dump = output(
        cluster
            .pg_dump()
            .args(["--schema-only", "--no-comments", "--dbname"])
            .arg(cluster.url("postgres", None, &db)),
    )?;
    let mut text: String = dump
        .lines()
        .filter(|l| !is_noise(l))
        .map(|l| format!("{l}\n"))
        .collect();

    let roles = API_ROLES.map(|r| format!("'{r}'")).join(", ");
    let privileges_sql = format!(
        "select format('-- %s: row level security %s and %s', c.oid::regclass,
                       case when c.relrowsecurity then 'enabled' else 'DISABLED' end,
                       case when c.relforcerowsecurity then 'forced' else 'NOT FORCED' end)
                || E'\\n' || string_agg(
                     case when p.privs is null
                          then format('REVOKE ALL ON TABLE %s FROM %I;', c.oid::regclass, r.rolname)
                          else format('-- %I may: %s', r.rolname, p.privs) end,
                     E'\\n' order by r.rolname)
           from pg_class c
           join pg_namespace n on n.oid = c.relnamespace
           cross join pg_roles r
           cross join lateral (
             select string_agg(priv, ', ' order by ord) as privs
               from unnest(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE','REFERENCES','TRIGGER'])
                    with ordinality as t(priv, ord)
              where has_table_privilege(r.oid, c.oid, priv)) p
          where c.relkind in ('r', 'p') and n.nspname in ('public', 'auth')
            and r.rolname in ({roles})
          group by c.oid, c.relrowsecurity, c.relforcerowsecurity
          order by c.oid::regclass::text"
    );
    let privileges = output(
        cluster
            .psql()
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                &privileges_sql,
                "--dbname",
            ])
            .arg(cluster.url("postgres", None, &db)),
    )?;
    text.push_str(
        "\n--\n-- Row-level security and table privileges of the API roles, read from the catalog.\n--\n\n",
    );
    text.push_str(privileges.trim_end());
    text.push('\n');

    run(cluster
        .psql()
        .args(["-X", "-q", "-c", &format!("drop database {db}"), "--dbname"])
        .arg(cluster.url("postgres", None, "postgres")))?;
    Ok(text)
}

/// `cargo xtask schema`: rewrites `schema.sql`.
pub fn write() -> anyhow::Result<()> {
    let cluster = crate::pg::throwaway_cluster("pg-schema")?;
    let _stop = StopOnDrop(&cluster);
    let text = render(&cluster)?;
    std::fs::write(crate::root().join("schema.sql"), text)?;
    println!("wrote schema.sql");
    Ok(())
}

/// Fails when `schema.sql` differs from what the migrations produce.
pub fn check(cluster: &Cluster) -> anyhow::Result<()> {
    let fresh = render(cluster)?;
    let path = crate::root().join("schema.sql");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if fresh != committed {
        let new = crate::root().join("target/schema.sql.fresh");
        std::fs::write(&new, &fresh)?;
        let _ = run(cmd("diff").arg("-u").arg(&path).arg(&new));
        bail!("schema.sql is out of date with migrations/: run `cargo xtask schema` and commit it");
    }
    println!("schema.sql matches the migrations");
    Ok(())
}
