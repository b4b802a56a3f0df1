-- Issue 13: a session's stamp, so that the request that starts a turn can
-- skip the session lookup in front of it and have the turn's own statement
-- prove, in its own transaction, that the session it was sent with still
-- stands.
--
-- A user's sessions and account change rarely; each change bumps the
-- user's epoch (the triggers below, in the transaction that makes the
-- change). The session lookup returns the epoch with the session, and the
-- moment the session ends by itself (its absolute expiry, or its idle
-- limit counted from its last use): that pair is the session's stamp.
-- A statement that holds a stamp checks it first, as the user
-- (`check_session_stamp`): the user's epoch is still the stamp's, and the
-- database's clock is before the stamp's end. Any sign-out, revocation,
-- password change or reset, MFA step, account change or disabling
-- committed before that statement's snapshot fails the check (SQLSTATE
-- CSSES), and the server then looks the session up again. The check
-- answers only "has anything about my sessions or account changed since",
-- for the caller's own row: the sessions and users tables stay
-- service-only (DESIGN §3).

create table session_epochs (
    user_id uuid primary key references users (id) on delete cascade,
    epoch bigint not null default 0
);
alter table session_epochs enable row level security;
alter table session_epochs force row level security;
revoke all on session_epochs from public, anon, authenticated;
-- Read-only to the user: a user who could write their epoch could set it
-- back to a stamp's after a sign-out.
grant select on session_epochs to authenticated;
grant select, insert, update, delete on session_epochs to service_role;
create policy session_epochs_owner on session_epochs for select to authenticated
    using (user_id = (select auth.uid()));
create policy session_epochs_service on session_epochs for all to service_role
    using (true) with check (true);

-- The lock that orders a change of a user's epoch against the events
-- appended for that user (`append_chat_event_stamped_as`, below): taken
-- exclusively by the triggers that move the epoch, shared by an append,
-- each until its transaction ends. An append that returns epoch N was
-- committed before any change that moves the epoch past N.
create function lock_session_epoch(p_user uuid, p_shared boolean) returns void
    language plpgsql volatile
    as $$
begin
    if p_shared then
        perform pg_advisory_xact_lock_shared(1936683887, hashtext(p_user::text));
    else
        perform pg_advisory_xact_lock(1936683887, hashtext(p_user::text));
    end if;
end
$$;
revoke all on function lock_session_epoch(uuid, boolean) from public;
grant execute on function lock_session_epoch(uuid, boolean) to authenticated, service_role;

-- Every user has a row. The migrating role owns `users` and
-- `session_epochs` but, row-level security being forced, may read and
-- write none of their rows: the force is lifted for this one statement,
-- inside the migration's transaction. (As first written it was lifted on
-- `users` only, and a database holding users could not pass this
-- migration: `db.rs` `REPAIRED` says so.)
alter table users no force row level security;
alter table session_epochs no force row level security;
insert into session_epochs (user_id) select id from users;
alter table session_epochs force row level security;
alter table users force row level security;

-- A new user's row.
create function session_epoch_for_new_user() returns trigger
    language plpgsql
    as $$
begin
    insert into public.session_epochs (user_id) values (new.id);
    return null;
end
$$;
revoke all on function session_epoch_for_new_user() from public;
create trigger session_epoch_for_new_user after insert on users
    for each row execute function session_epoch_for_new_user();

-- Any change to a user's account (disabled, admin, a password reset, its
-- email, its MFA): one more epoch.
create function session_epoch_after_user_change() returns trigger
    language plpgsql
    as $$
begin
    perform public.lock_session_epoch(new.id, false);
    update public.session_epochs set epoch = epoch + 1 where user_id = new.id;
    return null;
end
$$;
revoke all on function session_epoch_after_user_change() from public;
create trigger session_epoch_after_user_change after update on users
    for each row when (old.* is distinct from new.*)
    execute function session_epoch_after_user_change();

-- Any change to one of a user's sessions but its `last_seen_at` (which
-- every lookup refreshes: a stamp's end is counted from the value it
-- read, so a later refresh only makes the stamp end early), and a
-- session's removal: one more epoch. A new session needs none: no stamp
-- names it yet.
create function session_epoch_after_session_change() returns trigger
    language plpgsql
    as $$
begin
    perform public.lock_session_epoch(old.user_id, false);
    if tg_op = 'UPDATE' and new.user_id <> old.user_id then
        perform public.lock_session_epoch(new.user_id, false);
    end if;
    update public.session_epochs set epoch = epoch + 1
     where user_id = old.user_id
        or (tg_op = 'UPDATE' and user_id = new.user_id);
    return null;
end
$$;
revoke all on function session_epoch_after_session_change() from public;
create trigger session_epoch_after_session_update after update on sessions
    for each row
    when ((to_jsonb(old) - 'last_seen_at') is distinct from (to_jsonb(new) - 'last_seen_at'))
    execute function session_epoch_after_session_change();
create trigger session_epoch_after_session_delete after delete on sessions
    for each row execute function session_epoch_after_session_change();

-- Fails with SQLSTATE CSSES unless the caller's epoch is `p_epoch` and the
-- database's clock is before `p_ends_ms` (milliseconds since 1970): the
-- stamp still holds. Runs as the caller, under row-level security: as
-- `authenticated`, it reads the user's own epoch and nothing else.
create function check_session_stamp(p_epoch bigint, p_ends_ms bigint) returns boolean
    language plpgsql stable
    as $$
begin
    if not exists (select 1 from public.session_epochs
                    where user_id = (select auth.uid()) and epoch = p_epoch)
       or now() >= to_timestamp(p_ends_ms / 1000.0) then
        raise exception 'the session changed since it was looked up' using errcode = 'CSSES';
    end if;
    return true;
end
$$;
revoke all on function check_session_stamp(bigint, bigint) from public;
grant execute on function check_session_stamp(bigint, bigint) to authenticated;

-- `store_turn_as` for a request that holds a stamp instead of a fresh
-- lookup: the same first act and refusal, then the stamp's check, then the
-- store. A stamp that no longer holds stores nothing.
create function store_turn_stamped_as(
    p_user uuid,
    p_epoch bigint,
    p_ends_ms bigint,
    p_chat uuid,
    p_turn uuid,
    p_message uuid,
    p_title text,
    p_content text,
    p_data jsonb,
    p_channel text
) returns table (seq bigint, model text, messages bigint)
    language plpgsql volatile
    as $$
begin
    if current_setting('role') <> 'none' then
        raise exception 'store_turn_stamped_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    perform public.check_session_stamp(p_epoch, p_ends_ms);
    return query select * from public.store_turn(p_chat, p_turn, p_message, p_title,
                                                 p_content, p_data, p_channel);
end
$$;
grant execute on function store_turn_stamped_as(uuid, bigint, bigint, uuid, uuid, uuid, text, text, jsonb, text) to public;

-- `append_chat_event_as`, returning beside the event's sequence number the
-- user's epoch and the database's clock, in milliseconds since 1970, once
-- the event is written: what a stream of this instance needs to deliver
-- the event without reading it back (http/stream.rs). The epoch is read
-- under the user's lock, shared (`lock_session_epoch`), held until the
-- append commits: a change to the user's sessions that commits before the
-- append is seen in the epoch, and one that does not waits for the append
-- to commit first. So when the epoch is the one the stream's last check of
-- its session read (in the same snapshot as the session), nothing about
-- the session changed between that check and the event's commit. No row
-- when the chat is not the caller's.
create function append_chat_event_stamped_as(
    p_user uuid,
    p_chat uuid,
    p_turn uuid,
    p_type text,
    p_data jsonb,
    p_channel text
) returns table (seq bigint, epoch bigint, at_ms bigint)
    language plpgsql volatile
    as $$
declare
    v_seq bigint;
begin
    if current_setting('role') <> 'none' then
        raise exception 'append_chat_event_stamped_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    perform public.lock_session_epoch(p_user, true);
    v_seq := public.append_chat_event(p_chat, p_turn, p_type, p_data, p_channel);
    if v_seq is null then
        return;
    end if;
    -- A statement of its own: a snapshot taken after the lock.
    return query
        select v_seq,
               (select e.epoch from public.session_epochs e where e.user_id = (select auth.uid())),
               floor(extract(epoch from clock_timestamp()) * 1000)::int8;
end
$$;
grant execute on function append_chat_event_stamped_as(uuid, uuid, uuid, text, jsonb, text) to public;
