-- Durable jobs: one row per source to convert. A process claims rows with SKIP LOCKED and holds
-- a lease it renews while working; a row whose lease ran out (its process died) is claimed again.

create table jobs (
  id              text primary key,
  conversion_id   text not null references conversions(id) on delete cascade,
  source_id       text not null references files(id) on delete cascade,
  account_id      text not null,
  status          text not null default 'queued' check (status in ('queued', 'running', 'done')),
  attempts        integer not null default 0,
  lease_owner     text,
  lease_until     timestamptz,
  progress_done   integer not null default 0,
  progress_total  integer not null default 0,
  created_at      timestamptz not null default now()
);
create index jobs_claimable on jobs (created_at) where status <> 'done';
create index jobs_conversion on jobs (conversion_id);
create index jobs_owner on jobs (lease_owner) where status = 'running';
