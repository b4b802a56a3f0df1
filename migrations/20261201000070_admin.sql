-- Issue 14: running Countersign for a firm (DESIGN §4, §5 "Admin policy").
--
-- `admin_policy` is one row: what an administrator set, stricter than any
-- user's choice. The gate reads it at call time like every other stored
-- fact. Service-only: users learn its consequences from the API, never read
-- the row.
create table admin_policy (
    id boolean primary key default true,
    forbid_always_allow boolean not null default false,
    forbid_trust_annotations boolean not null default false,
    -- Glob patterns over `connector-host/tool` that always ask.
    always_ask_tools text[] not null default '{}',
    -- When not empty, the only hosts connectors may point at.
    connector_hosts text[] not null default '{}',
    require_mfa boolean not null default false,
    updated_at timestamptz not null default now(),
    updated_by uuid references users (id) on delete set null,
    constraint admin_policy_one_row check (id),
    constraint admin_policy_bounds check (
        cardinality(always_ask_tools) <= 200 and cardinality(connector_hosts) <= 200)
);
insert into admin_policy (id) values (true);
alter table admin_policy enable row level security;
alter table admin_policy force row level security;
revoke all on admin_policy from public, anon, authenticated;
grant select, update on admin_policy to service_role;
create policy admin_policy_service on admin_policy for all to service_role using (true) with check (true);

-- An administrator can disable an account (signed out everywhere, its
-- waiting calls denied) and reset a password, which the user must change.
alter table users add column disabled_at timestamptz;
alter table users add column must_change_password boolean not null default false;
