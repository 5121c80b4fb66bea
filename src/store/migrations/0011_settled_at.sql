-- When a conversion's credits were settled (its release row written: settleRows sets it in the
-- same statement). The mending sweep looks for finished paid conversions whose settle was lost;
-- without this it read every conversion kept (a sequential scan of the table at every pass of
-- every process: 67 ms for 510,000 conversions), where the unsettled ones are the few in flight.
alter table conversions add column settled_at timestamptz;
update conversions c set settled_at = coalesce(c.completed_at, now())
  where exists (select 1 from ledger l where l.conversion_id = c.id and l.kind = 'release');
create index conversions_unsettled on conversions (completed_at) where operation = 'parse' and settled_at is null;
