-- Issue 47 item 1, single sign-on with OpenID Connect (docs/design.md §4).
-- Written only by the server (backend/src/auth/oidc.rs and
-- backend/src/http/oidc.rs); service-only like sessions.

-- An account's identities at identity providers, keyed by what the
-- provider says never changes: the issuer and the subject, never the
-- e-mail alone.
create table user_identities (
    issuer text not null,
    subject text not null,
    user_id uuid not null references users (id) on delete cascade,
    -- The e-mail the provider last said (for the admin's eyes).
    email text,
    created_at timestamptz not null default now(),
    last_sign_in_at timestamptz,
    primary key (issuer, subject)
);
create index user_identities_user_idx on user_identities (user_id);

-- A sign-in on its way through the provider: its state (hashed: the
-- browser holds it), the nonce and the PKCE verifier. Taken back exactly
-- once, by one DELETE.
create table oidc_logins (
    state_hash bytea primary key,
    nonce text not null,
    pkce_verifier text not null,
    purpose text not null,
    return_to text not null default '/',
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    constraint oidc_logins_purpose check (purpose in ('sign_in')),
    constraint oidc_logins_expiry check (expires_at > created_at)
);
create index oidc_logins_expires_idx on oidc_logins (expires_at);

-- An identity waiting to be linked to the password account with its
-- (verified) e-mail, until that account's password is proved; the
-- browser holds the token.
create table oidc_links (
    token_hash bytea primary key,
    user_id uuid not null references users (id) on delete cascade,
    issuer text not null,
    subject text not null,
    email text,
    groups text[] not null default '{}',
    created_at timestamptz not null default now(),
    expires_at timestamptz not null,
    constraint oidc_links_expiry check (expires_at > created_at)
);
create index oidc_links_user_idx on oidc_links (user_id);

alter table user_identities enable row level security;
alter table user_identities force row level security;
revoke all on user_identities from public, anon, authenticated;
grant select, insert, update, delete on user_identities to service_role;
create policy user_identities_service on user_identities for all to service_role
    using (true) with check (true);

alter table oidc_logins enable row level security;
alter table oidc_logins force row level security;
revoke all on oidc_logins from public, anon, authenticated;
grant select, insert, update, delete on oidc_logins to service_role;
create policy oidc_logins_service on oidc_logins for all to service_role
    using (true) with check (true);

alter table oidc_links enable row level security;
alter table oidc_links force row level security;
revoke all on oidc_links from public, anon, authenticated;
grant select, insert, update, delete on oidc_links to service_role;
create policy oidc_links_service on oidc_links for all to service_role
    using (true) with check (true);
