-- A checkpoint also holds what its horizon leaves half done: the conversions with a reservation
-- and no release below it, or (when their transactions' ids came the other way round) a release
-- and no reservation. The open reservations are then read from that list and the rows since
-- (billing/ledger.ts readLedger), not from the account's whole history: each entry is the one
-- row below the horizon, its conversion, kind and amount.
alter table ledger_checkpoints add column pending jsonb not null default '[]';

-- Checkpoints taken before this one have no list: dropped, and each account's next one is taken
-- from its whole history (until then its balance is summed from every row, as before 0012).
delete from ledger_checkpoints;
