--[[
  mend: add to a loaded balance what the gate audit found missing (audit.ts), only while the
  account is exactly as the audit saw it. Another process's audit that saw the same moment finds
  the balance moved by the first one's mend and changes nothing: the difference is added once.

  KEYS[1]  balance       string, available credits; its absence means "not loaded"
  KEYS[2]  reservations  hash conversionId -> credits held

  ARGV[1]  delta, integer (may be negative)
  ARGV[2]  the balance the audit saw
  ARGV[3]  the reservations the audit saw: "conversionId<TAB>credits" lines, sorted, joined by "\n"

  Returns
  {0}            not loaded, or not as seen: nothing applied
  {1, balance}   applied; the available balance after it
]]
local balance = redis.call('GET', KEYS[1])
if not balance or balance ~= ARGV[2] then
  return {0}
end
local all = redis.call('HGETALL', KEYS[2])
local held = {}
for i = 1, #all, 2 do
  held[#held + 1] = all[i] .. '\t' .. all[i + 1]
end
table.sort(held)
if table.concat(held, '\n') ~= ARGV[3] then
  return {0}
end
return {1, redis.call('INCRBY', KEYS[1], ARGV[1])}
