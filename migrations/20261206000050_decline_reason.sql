-- Issue 45 item 5: "Decline and tell the assistant why". The reason the
-- user gave with a deny, kept with the call (the model reads it as the
-- tool's error; Activity shows it). Bounded like the API's limit, in
-- characters.
alter table mcp_pending_calls
    add column decline_reason text
        constraint mcp_pending_calls_decline_reason
        check (decline_reason is null or (status = 'denied' and char_length(decline_reason) <= 1000));
