-- pause() sets the field `paused` in every shard's stats hash (a field, not a key of its own: the claim
-- scripts already declare that hash, and a server that lost its data comes back unpaused). A paused
-- shard hands out nothing and reports nothing due, so its pollers sleep as idle ones do.
local function isPaused(statsKey) return redis.call('HEXISTS', statsKey, 'paused') == 1 end
