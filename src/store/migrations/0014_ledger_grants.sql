-- The grants of the last minute (the last day at a process's first pass), read by every gate
-- audit pass of every process (billing/audit.ts granted): without an index of their own that was
-- a sequential scan of the whole ledger, three rows a conversion, every MEND_INTERVAL_S.
create index ledger_grants on ledger (created_at) where kind = 'grant';
