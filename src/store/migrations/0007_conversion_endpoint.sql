-- A conversion's `name` is what its owner reads in listings (the client's name, or its first
-- source's file name); the endpoint it was submitted to, which its jobs convert by, gets a
-- column of its own. Conversions made before kept the endpoint in `name`.
alter table conversions add column endpoint text;
update conversions set endpoint = name where endpoint is null;
