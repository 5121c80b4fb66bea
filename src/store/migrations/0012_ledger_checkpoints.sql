-- An account's balance without summing its whole history. A webhook event carries the balance
-- as the ledger stands in the transaction that ends the conversion; summed over every row, an
-- account with a long history paid all of it at every event.
--
-- Each ledger row records the transaction that wrote it (xid, a 64-bit transaction id). A
-- checkpoint holds the sum of an account's rows written by transactions older than its horizon:
-- the oldest transaction still running when it was taken (pg_snapshot_xmin), so every one before
-- it had committed or rolled back and nothing can be added below it later. The balance is the
-- checkpoint's sum plus the rows at or above its horizon (billing/ledger.ts ledgerBalance).
-- Rows written before this migration read as transaction 0: below every horizon, and counted
-- whole while an account has no checkpoint yet.
alter table ledger add column xid xid8 not null default '0';
alter table ledger alter column xid set default pg_current_xact_id();
create index ledger_account_xid on ledger (account_id, xid) include (amount);

create table ledger_checkpoints (
  account_id  text primary key references accounts(id) on delete cascade,
  horizon     xid8 not null,
  balance     bigint not null,
  taken_at    timestamptz not null default now()
);
