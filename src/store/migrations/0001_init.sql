-- Accounts, their API keys, conversions and their files.

create table accounts (
  id            text primary key,
  name          text not null,
  plan          text not null check (plan in ('free', 'lite', 'pro', 'max')),
  subscription  text not null default 'active' check (subscription in ('active', 'canceled', 'past_due')),
  created_at    timestamptz not null default now()
);

create table api_keys (
  id          text primary key,
  account_id  text not null references accounts(id) on delete cascade,
  key_hash    text not null unique,
  prefix      text not null,
  scopes      text[] not null,
  created_at  timestamptz not null default now(),
  revoked_at  timestamptz
);

create table conversions (
  id               text primary key,
  account_id       text not null references accounts(id) on delete cascade,
  name             text not null,
  operation        text not null check (operation in ('parse', 'render')),
  status           text not null check (status in ('queued', 'running', 'completed', 'completed_with_errors', 'failed')),
  async_reason     text,
  options          jsonb not null default '{}',
  metadata         jsonb,
  store            boolean not null default false,
  credits_reserved integer not null default 0,
  credits_charged  integer not null default 0,
  created_at       timestamptz not null,
  completed_at     timestamptz,
  expires_at       timestamptz
);
-- The list order of GET /v1/conversions: newest first, id breaks ties.
create index conversions_account_order on conversions (account_id, created_at desc, id desc);

create table files (
  id             text primary key,
  conversion_id  text not null references conversions(id) on delete cascade,
  account_id     text not null references accounts(id) on delete cascade,
  position       integer not null,
  role           text not null check (role in ('source', 'output')),
  source_id      text,
  name           text not null,
  mime           text not null,
  status         text check (status in ('queued', 'running', 'completed', 'failed')),
  format         text check (format in ('markdown', 'text', 'html', 'pages')),
  variant        text check (variant in ('standard', 'ai_enhanced')),
  bytes          bigint,
  pages          integer,
  credits        integer,
  content        text,
  blob           text,
  error          jsonb,
  created_at     timestamptz not null default now(),
  expires_at     timestamptz
);
create index files_conversion on files (conversion_id, position);
