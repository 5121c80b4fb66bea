-- The group commit sends a whole batch in one round trip: BEGIN, its checks, its writes and
-- COMMIT together (jobs/group-commit.ts). A check that fails raises this error, so the
-- statements after it fail and the COMMIT sent with them rolls the batch back; the batch is then
-- stored the careful way, one decision at a time.
create function group_commit_check(ok boolean) returns void language plpgsql as $$
begin
  if not ok then
    raise exception 'the batch needs the careful path' using errcode = 'DP001';
  end if;
end
$$;

-- A file's account is its conversion's, and deleting an account deletes its conversions and
-- so their files: the check of this key on every inserted file guarded nothing the conversion's
-- own key does not, at the price of a lookup and a share lock on the account row per file.
alter table files drop constraint files_account_id_fkey;
