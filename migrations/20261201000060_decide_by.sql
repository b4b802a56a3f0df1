-- DESIGN §6.1: a pending call carries `decide_by`, the moment its turn
-- stops waiting (COUNTERSIGN_APPROVAL_WAIT_SECS after it was proposed,
-- never later than `expires_at`); the card counts down to it. Rows from
-- before carry the default wait.
alter table mcp_pending_calls add column decide_by timestamptz;
-- The migrating role owns the table but, row-level security being forced,
-- sees none of its rows: the force is lifted for this one statement,
-- inside the migration's transaction. (As first written it was not, and a
-- database holding pending calls could not pass this migration: `db.rs`
-- `REPAIRED` says so.)
alter table mcp_pending_calls no force row level security;
update mcp_pending_calls
   set decide_by = least(created_at + interval '90 seconds', expires_at)
 where decide_by is null;
alter table mcp_pending_calls force row level security;
alter table mcp_pending_calls alter column decide_by set not null;
alter table mcp_pending_calls add constraint mcp_pending_calls_decide_by
    check (decide_by <= expires_at);
