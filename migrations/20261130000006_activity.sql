-- The activity log (issue 6): an append-only hash chain of every proposed
-- MCP call, what decided it and how it ended (backend/src/audit.rs). Rows
-- carry digests, never arguments.
--
-- No foreign keys: a deleted user, chat or connector must not take rows
-- out of the chain. The server may insert and read, never update or
-- delete; users read their own.

create table activity (
    seq bigint primary key,
    user_id uuid not null,
    entry jsonb not null,
    prev_hash text not null,
    hash text not null,
    created_at timestamptz not null default now(),
    constraint activity_hash_shape check (hash ~ '^[0-9a-f]{64}$' and prev_hash ~ '^[0-9a-f]{64}$')
);
create index activity_user_idx on activity (user_id, seq desc);

alter table activity enable row level security;
alter table activity force row level security;
revoke all on activity from public, anon, authenticated;
grant select on activity to authenticated;
grant select, insert on activity to service_role;
create policy activity_owner on activity for select to authenticated
    using (user_id = auth.uid());
create policy activity_service_read on activity for select to service_role using (true);
create policy activity_service_append on activity for insert to service_role with check (true);
