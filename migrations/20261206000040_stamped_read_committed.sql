-- Issue 13: the writes that hand an event to this instance's streams
-- (`store_turn_stamped_as`, `append_chat_event_stamped_as`) read the
-- user's session epoch after taking the user's lock, shared, and rely on
-- that read seeing every change to the user's sessions committed before
-- the lock was granted. Under READ COMMITTED each statement of a
-- function takes a new snapshot, so it does; under REPEATABLE READ or
-- SERIALIZABLE (a `default_transaction_isolation` set on the database or
-- the role) the snapshot is the transaction's first, taken before any
-- wait for the lock, and a sign-out that committed during the wait would
-- go unseen: its stream could be handed an event committed after it. So
-- the shared lock, which only those readers take, refuses to be taken at
-- any other level, and the write fails rather than hand over an epoch it
-- cannot vouch for.
create or replace function lock_session_epoch(p_user uuid, p_shared boolean) returns void
    language plpgsql volatile
    as $$
begin
    if p_shared then
        if current_setting('transaction_isolation') <> 'read committed' then
            raise exception 'a stamped write runs at read committed, not %',
                current_setting('transaction_isolation')
                using errcode = 'CSISO';
        end if;
        perform pg_advisory_xact_lock_shared(1936683887, hashtext(p_user::text));
    else
        perform pg_advisory_xact_lock(1936683887, hashtext(p_user::text));
    end if;
end
$$;
