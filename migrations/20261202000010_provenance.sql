-- Issue 16: where a proposed call's arguments came from, stored with its
-- ledger row (spans as positions and SHA-256 digests, flows, the results
-- that held instructions), never a copy of the matched text. Null on rows
-- proposed before this column existed.
alter table mcp_pending_calls add column provenance jsonb;
