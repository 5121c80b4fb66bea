-- Chunked uploads (DESIGN.md §6), their parts, and the tombstones of swept ids (§4 retention).
--
-- An upload moves pending → completing → completed. `completing` is a claim held by the one
-- request assembling it: `locked_until` lets another request (or the sweeper) take over from a
-- process that died mid-assembly. Part rows keep their own blob name, so a re-sent part is a
-- new file and the row swap is atomic; the old file is removed after the swap.

create table uploads (
  id            text primary key,
  account_id    text not null references accounts(id) on delete cascade,
  name          text not null,
  bytes         bigint not null check (bytes > 0),
  part_size     bigint not null check (part_size > 0),
  part_count    integer not null check (part_count between 1 and 10000),
  status        text not null default 'pending' check (status in ('pending', 'completing', 'completed')),
  locked_until  timestamptz,
  blob          text,
  etag          text,
  created_at    timestamptz not null default now(),
  completed_at  timestamptz,
  expires_at    timestamptz not null
);
create index uploads_expiry on uploads (expires_at);

create table upload_parts (
  upload_id    text not null references uploads(id) on delete cascade,
  number       integer not null check (number between 1 and 10000),
  etag         text not null,
  bytes        bigint not null check (bytes >= 0),
  blob         text not null,
  received_at  timestamptz not null default now(),
  primary key (upload_id, number)
);

-- Ids (file_, upl_) the sweeper removed because they expired: a later reference to one answers
-- 410 file_expired instead of 404. Purged after 30 days.
create table expired_refs (
  id          text primary key,
  account_id  text not null references accounts(id) on delete cascade,
  expired_at  timestamptz not null default now()
);
create index expired_refs_age on expired_refs (expired_at);

-- What the sweeper scans for.
create index conversions_expiry on conversions (expires_at) where expires_at is not null;
