-- Foundation: roles, auth.uid(), users, sessions, profiles, login throttling.
--
-- Security model (DESIGN §3): every table has row-level security enabled and
-- FORCED. The server's login role owns nothing; it switches per transaction
-- to `service_role` (service-only tables) or to `authenticated` with
-- `countersign.user_id` set (user-owned tables, policies on auth.uid()).
-- `anon` can read nothing at all.

-- The NOLOGIN roles are cluster-wide. Create them when missing (the embedded
-- set-up creates them before migrating, so this needs CREATEROLE only on an
-- external database where they do not exist yet).
do $$
begin
    if not exists (select 1 from pg_roles where rolname = 'anon') then
        create role anon nologin noinherit;
    end if;
    if not exists (select 1 from pg_roles where rolname = 'authenticated') then
        create role authenticated nologin noinherit;
    end if;
    if not exists (select 1 from pg_roles where rolname = 'service_role') then
        create role service_role nologin noinherit;
    end if;
end
$$;

create schema if not exists auth;
revoke all on schema auth from public;
grant usage on schema auth to anon, authenticated, service_role;
revoke create on schema public from public;
grant usage on schema public to anon, authenticated, service_role;

-- The user id of the current transaction, or null. Set by the server with
-- `set_config('countersign.user_id', …, true)` in the same round trip that
-- switches the role to `authenticated`.
create function auth.uid() returns uuid
    language sql stable
    as $$ select nullif(current_setting('countersign.user_id', true), '')::uuid $$;
revoke all on function auth.uid() from public;
grant execute on function auth.uid() to anon, authenticated, service_role;

-- sqlx's bookkeeping table lives in public too: lock it like the rest. Only
-- its owner (the migration role) may touch it, and only through a policy.
alter table _sqlx_migrations enable row level security;
alter table _sqlx_migrations force row level security;
create policy migration_owner_only on _sqlx_migrations
    using (pg_has_role(current_user, (select relowner from pg_class where oid = '_sqlx_migrations'::regclass), 'usage'))
    with check (pg_has_role(current_user, (select relowner from pg_class where oid = '_sqlx_migrations'::regclass), 'usage'));
revoke all on _sqlx_migrations from public, anon, authenticated, service_role;

-- Accounts. Service-only: password hashes never reach a user-scoped role.
create table users (
    id uuid primary key,
    email text not null,
    password_hash text not null,
    is_admin boolean not null default false,
    created_at timestamptz not null default now(),
    constraint users_email_lower check (email = lower(email)),
    constraint users_email_length check (char_length(email) between 3 and 254)
);
create unique index users_email_key on users (email);
alter table users enable row level security;
alter table users force row level security;
revoke all on users from public, anon, authenticated;
grant select, insert, update, delete on users to service_role;
create policy users_service on users for all to service_role using (true) with check (true);

-- Server-side sessions. Only the SHA-256 of the cookie token is stored.
create table sessions (
    id uuid primary key,
    user_id uuid not null references users (id) on delete cascade,
    token_hash bytea not null,
    csrf_token text not null,
    created_at timestamptz not null default now(),
    last_seen_at timestamptz not null default now(),
    expires_at timestamptz not null,
    revoked_at timestamptz,
    user_agent text,
    ip inet,
    constraint sessions_token_hash_length check (octet_length(token_hash) = 32)
);
create unique index sessions_token_hash_key on sessions (token_hash);
create index sessions_user_id_idx on sessions (user_id);
alter table sessions enable row level security;
alter table sessions force row level security;
revoke all on sessions from public, anon, authenticated;
grant select, insert, update, delete on sessions to service_role;
create policy sessions_service on sessions for all to service_role using (true) with check (true);

-- Failed sign-ins, for throttling per account and per IP across instances.
create table login_failures (
    id bigint generated always as identity primary key,
    email text not null,
    ip inet,
    failed_at timestamptz not null default now()
);
create index login_failures_email_idx on login_failures (email, failed_at);
create index login_failures_ip_idx on login_failures (ip, failed_at);
alter table login_failures enable row level security;
alter table login_failures force row level security;
revoke all on login_failures from public, anon, authenticated;
grant select, insert, delete on login_failures to service_role;
create policy login_failures_service on login_failures for all to service_role using (true) with check (true);

-- A user's own profile: the first user-owned table. Read and written as
-- `authenticated`; the policy, not the query, keeps users apart.
create table profiles (
    user_id uuid primary key references users (id) on delete cascade,
    display_name text not null,
    updated_at timestamptz not null default now(),
    constraint profiles_display_name_length check (char_length(display_name) between 1 and 100)
);
alter table profiles enable row level security;
alter table profiles force row level security;
revoke all on profiles from public, anon;
grant select, insert, update on profiles to authenticated;
grant select, insert, update, delete on profiles to service_role;
create policy profiles_owner on profiles for all to authenticated
    using (user_id = auth.uid()) with check (user_id = auth.uid());
create policy profiles_service on profiles for all to service_role using (true) with check (true);
