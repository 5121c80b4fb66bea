-- Webhook endpoints, the event outbox, one delivery per (event, endpoint), and the log of every
-- attempt made (DESIGN.md §7). A delivery is claimed by moving its next_attempt_at past a lease,
-- so a process that dies mid-send leaves it to be retried by another once the lease runs out.

create table webhook_endpoints (
  id               text primary key,
  account_id       text not null references accounts(id) on delete cascade,
  url              text not null,
  event_types      text[] not null,
  -- Needed in clear to sign; shown to the user once, at creation.
  secret           text not null,
  status           text not null default 'enabled' check (status in ('enabled', 'disabled')),
  disabled_reason  text,
  created_at       timestamptz not null default now()
);
create index webhook_endpoints_account on webhook_endpoints (account_id, created_at, id);

-- The outbox: written in the transaction that made the conversion terminal. `body` is the exact
-- JSON sent (and signed) on every try, so retries are byte-identical.
create table webhook_events (
  id             text primary key,
  account_id     text not null references accounts(id) on delete cascade,
  type           text not null,
  conversion_id  text,
  body           text not null,
  created_at     timestamptz not null default now()
);

create table webhook_deliveries (
  id               bigint generated always as identity primary key,
  endpoint_id      text not null references webhook_endpoints(id) on delete cascade,
  event_id         text not null references webhook_events(id) on delete cascade,
  status           text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts         integer not null default 0,
  next_attempt_at  timestamptz,
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  unique (event_id, endpoint_id)
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_endpoint on webhook_deliveries (endpoint_id) where status = 'pending';

create table webhook_attempts (
  id               bigint generated always as identity primary key,
  endpoint_id      text not null references webhook_endpoints(id) on delete cascade,
  event_id         text not null,
  event_type       text not null,
  attempt          integer not null,
  status           text not null check (status in ('succeeded', 'failed')),
  response_status  integer,
  latency_ms       integer not null,
  error            text,
  next_retry_at    timestamptz,
  created_at       timestamptz not null default now()
);
create index webhook_attempts_endpoint on webhook_attempts (endpoint_id, id desc);
