-- The credit ledger (DESIGN.md §3) and the durable half of idempotency (§5).
--
-- Sign convention: the sum of an account's ledger rows is its available balance.
--   grant    +amount     credits added (admin grant, dev account)
--   reserve  -reserved   a submit holds its estimate (written with the conversion, one transaction)
--   release  +reserved   the conversion ended: the whole reservation comes back ...
--   charge   -charged    ... and what the work actually cost is taken (absent when 0)
-- So sum = grants - charges - open reservations, exactly what the billing gate holds.
-- A conversion has at most one row of each kind (the unique index below): that index is what
-- makes settlement exactly-once, whoever settles and however often.
-- conversion_id has no foreign key on purpose: a deleted conversion keeps its money rows.

create table ledger (
  id             bigserial primary key,
  account_id     text not null references accounts(id) on delete cascade,
  conversion_id  text,
  kind           text not null check (kind in ('grant', 'reserve', 'charge', 'release')),
  amount         integer not null,
  note           text,
  created_at     timestamptz not null default now(),
  check ((kind = 'grant') = (conversion_id is null)),
  check (case kind when 'grant' then amount > 0 when 'release' then amount >= 0 else amount <= 0 end)
);
create index ledger_account on ledger (account_id, kind);
create unique index ledger_once_per_conversion on ledger (conversion_id, kind) where conversion_id is not null;

-- Idempotency-Key claims, so that a lost Redis cannot let a retry create a second conversion.
-- Written in the conversion's insert transaction; a claim older than 24 h may be taken over.
create table idempotency_keys (
  account_id     text not null references accounts(id) on delete cascade,
  endpoint       text not null,
  key            text not null,
  fingerprint    text not null,
  conversion_id  text not null,
  created_at     timestamptz not null default now(),
  primary key (account_id, endpoint, key)
);

-- The monthly file allowance: source files submitted per account and calendar month (UTC),
-- counted in the conversion's insert transaction. A counter, not a count of `files` rows: those
-- are deleted by DELETE and by the 24 h retention sweep, the allowance is not given back.
create table monthly_usage (
  account_id  text not null references accounts(id) on delete cascade,
  month       date not null,
  files       integer not null default 0,
  primary key (account_id, month)
);

-- The storage limit: bytes of the files an account keeps (store: true never expires).
create index files_account_stored on files (account_id) where expires_at is null;
