-- Two-factor sign-in (TOTP) and the step-up that guards trust-changing
-- actions (backend/src/auth/mfa.rs). Service-only: secrets sealed with the
-- deployment key, recovery codes as SHA-256 only.

create table mfa_totp (
    user_id uuid primary key references users (id) on delete cascade,
    key_id text not null,
    nonce bytea not null,
    ciphertext bytea not null,
    -- Null until a first valid code confirms the enrolment.
    confirmed_at timestamptz,
    -- The last accepted time step: a code is never accepted twice.
    last_step bigint,
    created_at timestamptz not null default now()
);

create table mfa_recovery_codes (
    user_id uuid not null references users (id) on delete cascade,
    code_hash bytea not null,
    used_at timestamptz,
    primary key (user_id, code_hash),
    constraint mfa_recovery_codes_hash_length check (octet_length(code_hash) = 32)
);

-- When this session last proved the second factor (a step-up lasts 10 min).
alter table sessions add column mfa_verified_at timestamptz;

do $$
declare t text;
begin
    foreach t in array array['mfa_totp', 'mfa_recovery_codes'] loop
        execute format('alter table %I enable row level security', t);
        execute format('alter table %I force row level security', t);
        execute format('revoke all on %I from public, anon, authenticated', t);
        execute format('grant select, insert, update, delete on %I to service_role', t);
        execute format('create policy %I on %I for all to service_role using (true) with check (true)',
                       t || '_service', t);
    end loop;
end
$$;
