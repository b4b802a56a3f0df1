-- Issue 13: a turn's `turn_started` reaches this instance's streams
-- without a read, as its text deltas already do.
--
-- A stream of this instance delivers an event without reading it back
-- (http/stream.rs) only when the event carries the user's session epoch,
-- read under the user's lock, shared, held until the event commits
-- (`lock_session_epoch`), and the database's clock: then no change to the
-- user's sessions committed between the stream's last check and the
-- event. `append_chat_event_stamped_as` returns both for the turn's later
-- events. `store_turn_stamped_as` now takes the same lock before its
-- stamp's check, so the check's snapshot, taken after the lock, is the
-- epoch the stored `turn_started` carries: the stamp's, or nothing is
-- stored. A sign-out under way when the turn is stored is waited for, and
-- then fails the check.
--
-- Its result gains two columns, so it is made again (a function's result
-- type cannot be changed in place); the arguments and the refusal are
-- the same.

drop function store_turn_stamped_as(uuid, bigint, bigint, uuid, uuid, uuid, text, text, jsonb, text);

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
) returns table (seq bigint, model text, messages bigint, epoch bigint, at_ms bigint)
    language plpgsql volatile
    as $$
begin
    if current_setting('role') <> 'none' then
        raise exception 'store_turn_stamped_as starts its own transaction, and a role is set';
    end if;
    perform set_config('role', 'authenticated', true),
            set_config('countersign.user_id', p_user::text, true);
    perform public.lock_session_epoch(p_user, true);
    -- A statement of its own: a snapshot taken after the lock.
    perform public.check_session_stamp(p_epoch, p_ends_ms);
    return query
        select s.seq, s.model, s.messages, p_epoch,
               floor(extract(epoch from clock_timestamp()) * 1000)::int8
          from public.store_turn(p_chat, p_turn, p_message, p_title,
                                 p_content, p_data, p_channel) s;
end
$$;
grant execute on function store_turn_stamped_as(uuid, bigint, bigint, uuid, uuid, uuid, text, text, jsonb, text) to public;
