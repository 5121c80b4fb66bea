-- A conversion's account is checked once per account by the statements that insert conversions,
-- not by a foreign key on every row: the group commit locks its batch's accounts (FOR KEY SHARE,
-- the lock the key took) in one statement and refuses the members of an account that is gone
-- (jobs/group-commit.ts), and a conversion stored alone locks its account the same way
-- (store/conversions.ts insertConversion). Under scenario A's load the key's check of each
-- inserted row was 7 % of Postgres's time, for the one or two accounts of a batch of 30.
-- Deleting an account still deletes its conversions (and so their files), in the same statement.
alter table conversions drop constraint conversions_account_id_fkey;

create function conversions_follow_accounts() returns trigger language plpgsql as $$
begin
  delete from conversions c using gone g where c.account_id = g.id;
  return null;
end
$$;

create trigger accounts_delete_conversions after delete on accounts
  referencing old table as gone for each statement execute function conversions_follow_accounts();
