-- A part sent at its size in the upload's layout is written straight into the upload's one file
-- at its offset (uploads/service.ts). A slot row is the claim on part `number`'s region: taken by
-- the one request that writes it, and kept by the part it recorded; a request that could not
-- write or record its part gives it back. Inserting a slot takes a key-share lock on the upload's
-- row, so a request that locks that row for update sees every claim made before it, and no new
-- one until it commits: the upload's file is removed under that lock when no claim is left.
create table upload_slots (
  upload_id  text not null references uploads(id) on delete cascade,
  number     integer not null check (number between 1 and 10000),
  primary key (upload_id, number)
);
