-- Issue 9, item 9 (DESIGN §2: untrusted server data is bounded). Tools a
-- connector's server listed that Countersign does not offer (an invalid
-- x-mcp-header annotation), each {"name", "reason"}, as of the connector's
-- last successful Test/Refresh; a failed one leaves it as it was.
alter table connectors
    add column dropped_tools jsonb not null default '[]'::jsonb,
    add constraint connectors_dropped_tools_shape
        check (jsonb_typeof(dropped_tools) = 'array' and jsonb_array_length(dropped_tools) <= 500);
