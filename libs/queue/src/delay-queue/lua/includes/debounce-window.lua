-- A debounced task that has not been claimed yet is stored as '1,<ms its window opened>,<stored payload>'
-- (a lone JSON value never starts with '1,', nor does a traced payload); its claim strips that, which ends
-- the window. Returns when the window opened and the stored payload after it, or nil and the whole text.
local function debounceWindow(stored)
  if string.byte(stored, 1) ~= 49 or string.byte(stored, 2) ~= 44 then return nil, stored end
  local comma = string.find(stored, ',', 3, true)
  return tonumber(string.sub(stored, 3, comma - 1)), string.sub(stored, comma + 1)
end
