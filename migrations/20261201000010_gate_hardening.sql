-- Gate hardening (issue 9, DESIGN §5, §6).
--
-- The ledger binds the destination: the connector URL at proposal is
-- stored and covered by the HMAC, and an approved call runs only while the
-- connector still points there. Rows from before this migration carry ''
-- and fail their integrity check (closed, never open).
--
-- `offered_grants` are the grants the card offers: a tool that changed
-- since the user reviewed it offers only "once", and a decision for any
-- other grant decides nothing.

alter table mcp_pending_calls add column destination_url text not null default '';
alter table mcp_pending_calls alter column destination_url drop default;
alter table mcp_pending_calls
    add column offered_grants text[] not null default array['once', 'turn', 'always'];
alter table mcp_pending_calls alter column offered_grants drop default;
alter table mcp_pending_calls add constraint mcp_pending_calls_offered_grants check (
    offered_grants <@ array['once', 'turn', 'always'] and 'once' = any (offered_grants));
