-- Runs `apply(a)` for each delivery named in `argv` after its first argument, `stride` arguments apiece
-- (`a`: the index of the delivery's first one), and replies per delivery 1 when `apply` did its work,
-- 0 when the delivery was stale (its lease lost, or its token no longer the running one).
local function perDelivery(argv, stride, apply)
  local out = {}
  for a = 2, #argv, stride do
    out[#out + 1] = apply(a) and 1 or 0
  end
  return out
end
