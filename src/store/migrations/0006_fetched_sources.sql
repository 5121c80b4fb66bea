-- A URL source is fetched when the conversion is admitted, so that it is priced as what it
-- fetched. Its blob is then the fetched document, and its job converts that document as the kind
-- it was dispatched to (fetched_kind), resolving relative links against the address it was
-- finally fetched from (fetched_from, after redirects). Both are null for every other source,
-- and for a URL whose fetch failed (its blob is the address itself).
alter table files add column fetched_from text;
alter table files add column fetched_kind text;
