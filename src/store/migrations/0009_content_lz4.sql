-- Outputs up to INLINE_CONTENT_BYTES are kept in files.content, and Postgres compresses every
-- value over about 2 KB before it stores it: with its default (pglz) that took about 1.5 ms
-- for a 64 KB Markdown output (texlive's clsguide; 200 rows inserted at once), where Postgres
-- spends 7–8 ms of CPU on a whole PDF conversion through the API. lz4 took 0.4–0.6 ms for the
-- same rows, 8 % larger on disk, and reads back faster. Only new values are written with it; a server built without lz4 (the embedded
-- database) keeps pglz.
do $$
begin
  alter table files alter column content set compression lz4;
exception when feature_not_supported then
  null;
end
$$;
