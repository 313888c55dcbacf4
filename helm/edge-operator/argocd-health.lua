-- Argo CD health check for every edge.tunnel.dev kind. It follows kstatus, which Flux uses:
-- Stalled=True -> Degraded, Reconciling=True or an unobserved generation -> Progressing,
-- Ready=True -> Healthy. Install it in argocd-cm once for every kind, under the
-- resource.customizations key as the health.lua of edge.tunnel.dev/* (see the chart README).
local hs = { status = "Progressing", message = "Waiting for the operator" }
if obj.status == nil then
  return hs
end
if obj.metadata ~= nil and obj.metadata.generation ~= nil and obj.status.observedGeneration ~= nil
    and obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "Waiting for the operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end
local ready, stalled, reconciling
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" then ready = c end
    if c.type == "Stalled" then stalled = c end
    if c.type == "Reconciling" then reconciling = c end
  end
end
if stalled ~= nil and stalled.status == "True" then
  return { status = "Degraded", message = stalled.message or stalled.reason or "Stalled" }
end
if reconciling ~= nil and reconciling.status == "True" then
  return { status = "Progressing", message = reconciling.message or reconciling.reason or "Reconciling" }
end
if ready ~= nil and ready.status == "True" then
  return { status = "Healthy", message = ready.message or "Ready" }
end
if ready ~= nil then
  hs.message = ready.message or ready.reason or hs.message
end
return hs
