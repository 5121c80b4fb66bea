--[[
  load: rebuild an account from the Postgres ledger after a restart, a flush or a forget.
  Writes only when the account is not loaded and no money moved since the caller's epoch.

  KEYS[1]  balance       string, available credits; its absence means "not loaded"
  KEYS[2]  reservations  hash conversionId -> credits held
  KEYS[3]  epoch         string, as returned by reserve-4's not-loaded answer

  ARGV[1]  the epoch the caller saw before it read the ledger ('' when none)
  ARGV[2]  available balance from the ledger (open reservations already subtracted)
  ARGV[3], ARGV[4], ...  pairs conversionId, credits of every open reservation

  Returns
  {1}          loaded
  {2}          already loaded: nothing changed
  {3, epoch}   stale: a settle or adjust hit the unloaded account after the caller's epoch;
               read the ledger again and load with this epoch
]]
if redis.call('EXISTS', KEYS[1]) == 1 then
  return {2}
end

local epoch = redis.call('GET', KEYS[3]) or ''
if epoch ~= ARGV[1] then
  return {3, epoch}
end

redis.call('DEL', KEYS[2])
for i = 3, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
end
redis.call('SET', KEYS[1], ARGV[2])
return {1}
