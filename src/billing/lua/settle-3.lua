--[[
  settle: end a conversion's reservation exactly once. Charges what the work actually cost and
  returns the rest to the balance; frees the concurrency slot. release = settle with 0 charged.

  KEYS[1]  balance       string, available credits; its absence means "not loaded"
  KEYS[2]  reservations  hash conversionId -> credits held
  KEYS[3]  epoch         string, rewritten here when the account is not loaded

  ARGV[1]  conversionId
  ARGV[2]  credits charged, integer >= 0; clamped to the reservation (never charge above it)
  ARGV[3]  a fresh random epoch stamp
  ARGV[4]  epoch TTL in seconds

  Returns
  {0}                    not loaded: nothing held here; the epoch is stamped so a rebuild that
                         read the ledger before this settle is refused as stale by load-3
  {1, reserved, charged, balance}
                         settled; charged is the clamped amount, balance the available credits
                         after it (so that an answer shows it without another round trip)
  {2}                    not held (already settled or released): nothing changed
]]
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SET', KEYS[3], ARGV[3], 'EX', ARGV[4])
  return {0}
end

local reserved = redis.call('HGET', KEYS[2], ARGV[1])
if not reserved then
  return {2}
end

reserved = tonumber(reserved)
local charged = math.min(tonumber(ARGV[2]), reserved)
local balance
if reserved > charged then
  balance = redis.call('INCRBY', KEYS[1], reserved - charged)
else
  balance = tonumber(redis.call('GET', KEYS[1]))
end
redis.call('HDEL', KEYS[2], ARGV[1])
return {1, reserved, charged, balance}
