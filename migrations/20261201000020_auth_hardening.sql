-- Issue 9 (auth): sign-up attempts, for a per-IP limit across instances.
-- Each row is one attempt that got as far as hashing a password (DESIGN §4).
-- Service-only, like login_failures: nobody reads another's address.
create table signup_attempts (
    id bigint generated always as identity primary key,
    ip inet not null,
    attempted_at timestamptz not null default now()
);
create index signup_attempts_ip_idx on signup_attempts (ip, attempted_at);
alter table signup_attempts enable row level security;
alter table signup_attempts force row level security;
revoke all on signup_attempts from public, anon, authenticated;
grant select, insert, delete on signup_attempts to service_role;
create policy signup_attempts_service on signup_attempts for all to service_role using (true) with check (true);
