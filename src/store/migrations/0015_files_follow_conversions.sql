-- A file's conversion is checked by the statements that write files, not by a foreign key: a
-- file is inserted in its conversion's insert transaction, or (a job's outputs) after its
-- conversion's row was locked in the same transaction (store/conversions.ts recordInTransaction,
-- which writes nothing when that row is gone). The key checked every inserted file again, a
-- lookup and a share lock on the conversion it had just inserted: under scenario A's load that
-- was two of the three foreign key checks of each render, and the three took a fifth of
-- Postgres's time. Deleting a conversion still deletes its files, in the same statement.
alter table files drop constraint files_conversion_id_fkey;

create function files_follow_conversions() returns trigger language plpgsql as $$
begin
  delete from files f using gone g where f.conversion_id = g.id;
  return null;
end
$$;

create trigger conversions_delete_files after delete on conversions
  referencing old table as gone for each statement execute function files_follow_conversions();
