-- The Torch 7 side of runner.adapters.torch7_adapter: one LuaJIT process per job, driven over its standard input
-- and output. The Python runner owns the protocol (warm-up, timing, results); this file only does what it is told.
--
-- Requests: one line "<verb> <arguments>", then for "model" and "batch" a binary payload of the stated length.
-- Replies: one line "= <text>" (then for "infer" and "params" a binary payload), or "! <message>" for an error.
-- Lines of stdout that do not start with "=" or "!" are never written by this harness; its own messages go to stderr.
--   setup <threads> <seed> <device>   torch.setnumthreads (0: leave the default), torch.manualSeed; device cuda:
--                                     require cutorch and cunn (an error where either is absent or finds no GPU),
--                                     cutorch.manualSeedAll; reply "<luajit>|<threads>|<openmp>", and for cuda
--                                     "|<GPU name>|<major.minor>|<memory bytes>|<CUDA runtime>|<CUDA driver>" (GPU 1)
--   model <bytes> <gradients>         Lua chunk returning the model (runner.adapters.torch7_lua); gradients (runner.contract)
--                                     pruned | gate_op; reply "<parameter count> <the module whose input gradient is
--                                     pruned, or none>"
--   init <scheme> <scale>             default | xavier | glorot_uniform | uniform (scale), on the CPU (one seed gives
--                                     one model on either device); then for cuda the model and the criterion move
--                                     to the GPU (:cuda()); reply "ok"
--   optim <name> <lr> <momentum> <nesterov 0|1> <weight decay> <beta1> <beta2> <eps>   reply "ok"
--   batch <slot> <n> <x bytes> <y bytes> <dims of one sample...>   float32 x then int64 y (0-based), copied to the
--                                     GPU for cuda; reply "ok"
--   sync                              cutorch.synchronize() for cuda (nothing on the CPU); reply "ok"
--   train <slot>                      forward, loss, backward, update; reply the loss
--   infer <slot>                      evaluate-mode forward; reply "<bytes> <dims...>", then float32 outputs
--   params                            reply "<count> <bytes> <numel...>", then every parameter's float32 values
--   quit
require 'torch'
require 'nn'
-- optim's two optimisers the specs name, not the whole package: its init.lua loads optim.Logger, which requires
-- xlua (not built: nothing here needs it)
optim = {}
require 'optim.sgd'
require 'optim.adam'
local ffi = require 'ffi'

torch.setdefaulttensortype('torch.FloatTensor')
io.stdout:setvbuf('full')

local model, criterion, params, grads, step, config, state
local slots = {}
local cuda = false  -- setup's device: true for cuda

local function reply(text, payload)
   io.stdout:write('= ', text, '\n')
   if payload then io.stdout:write(payload) end
   io.stdout:flush()
end

local function read_exactly(n)
   local data = io.stdin:read(n)
   if data == nil or #data ~= n then error(string.format('expected %d bytes on stdin, got %d', n, data and #data or 0)) end
   return data
end

local function from_bytes(tensor, data)
   ffi.copy(tensor:data(), data, #data)
   return tensor
end

local function to_bytes(tensor)
   local t = tensor:contiguous():float()
   return ffi.string(t:data(), t:nElement() * 4)
end

local function fill(module, scheme)
   -- Caffe's XavierFiller (variance_norm FAN_IN): U(+-sqrt(3 / fan_in)); Glorot's: U(+-sqrt(6 / (fan_in + fan_out)))
   local w = module.weight
   local receptive = w:nElement() / (w:size(1) * w:size(2))
   local fan_in, fan_out = w:size(2) * receptive, w:size(1) * receptive
   local bound = scheme == 'xavier' and math.sqrt(3 / fan_in) or math.sqrt(6 / (fan_in + fan_out))
   w:uniform(-bound, bound)
   if module.bias then module.bias:zero() end
end

local verbs = {}

-- require a CUDA package, or fail with the first line of why, less a closing colon (cutorch without a GPU: "cuda
-- runtime error (100) : no CUDA-capable device is detected at ...THCGeneral.c:70"; the CPU image: "module 'cutorch'
-- not found", whose next lines list every path searched)
local function require_cuda(name)
   local ok, found = pcall(require, name)
   if not ok then
      local why = tostring(found):match('[^\n]*'):gsub(':$', '')
      error(string.format("device cuda: require '%s' failed: %s", name, why), 0)
   end
   return found
end

function verbs.setup(threads, seed, device)
   if tonumber(threads) > 0 then torch.setnumthreads(tonumber(threads)) end
   torch.manualSeed(tonumber(seed))
   local text = string.format('%s|%d|%s', jit and jit.version or _VERSION, torch.getnumthreads(),
                              torch.hasOpenMP and tostring(torch.hasOpenMP()) or 'unknown')
   if device == 'cuda' then
      cutorch = require_cuda('cutorch')
      require_cuda('cunn')
      cuda = true
      cutorch.manualSeedAll(tonumber(seed))
      local gpu = cutorch.getDeviceProperties(cutorch.getDevice())
      text = string.format('%s|%s|%d.%d|%.0f|%d|%d', text, gpu.name, gpu.major, gpu.minor, gpu.totalGlobalMem,
                           cutorch.getRuntimeVersion(), cutorch.getDriverVersion())
   end
   reply(text)
end

-- "pruned": the first module computes no gradient with respect to the mini-batch (nothing reads it), as DLBench's
-- Torch AlexNet and ResNet models ask with `model:get(1).gradInput = nil` (nn.Linear and nn.SpatialConvolution skip
-- updateGradInput without a gradInput); "gate_op": nn's backward as it is, every module's input gradient, the first's
-- too, as DLBench's Torch FCN scripts ran it. The first module's name, or 'none' where it has no such skip.
local function prune_input_gradient(gradients)
   if gradients ~= 'pruned' then return 'none' end
   local first = model
   while torch.type(first) == 'nn.Sequential' do first = first.modules[1] end
   local kind = torch.type(first)
   if kind ~= 'nn.Linear' and kind ~= 'nn.SpatialConvolution' then return 'none' end
   first.gradInput = nil
   return kind
end

function verbs.model(bytes, gradients)
   local chunk = assert(loadstring(read_exactly(tonumber(bytes)), 'model'))
   model = chunk()
   criterion = nn.CrossEntropyCriterion()
   params, grads = model:getParameters()
   reply(string.format('%d %s', params:nElement(), prune_input_gradient(gradients)))
end

function verbs.init(scheme, scale)
   if scheme == 'uniform' then
      params:uniform(-tonumber(scale), tonumber(scale))
   elseif scheme ~= 'default' then
      for _, m in ipairs(model:listModules()) do
         local kind = torch.type(m)
         if kind == 'nn.Linear' or kind == 'nn.SpatialConvolution' then fill(m, scheme) end
      end
   end
   if cuda then
      -- nn's type conversion keeps the flat parameters' sharing; they are flattened again on the GPU
      model:cuda()
      criterion:cuda()
      params, grads = model:getParameters()
   end
   reply('ok')
end

function verbs.optim(name, lr, momentum, nesterov, decay, beta1, beta2, eps)
   state = {}
   if name == 'sgd' then
      -- dampening 0: optim.sgd's default dampening equals the momentum, PyTorch's and Caffe's is 0
      config = {learningRate = tonumber(lr), momentum = tonumber(momentum), dampening = 0,
                nesterov = nesterov == '1', weightDecay = tonumber(decay)}
      step = optim.sgd
   else
      config = {learningRate = tonumber(lr), beta1 = tonumber(beta1), beta2 = tonumber(beta2),
                epsilon = tonumber(eps), weightDecay = tonumber(decay)}
      step = optim.adam
   end
   reply('ok')
end

function verbs.batch(slot, n, xbytes, ybytes, ...)
   local dims = {tonumber(n)}
   for _, d in ipairs({...}) do dims[#dims + 1] = tonumber(d) end
   local x = from_bytes(torch.FloatTensor(torch.LongStorage(dims)), read_exactly(tonumber(xbytes)))
   local y = from_bytes(torch.LongTensor(tonumber(n)), read_exactly(tonumber(ybytes))):add(1)
   if cuda then x, y = x:cuda(), y:cudaLong() end  -- cunn's ClassNLLCriterion takes CudaLongTensor targets
   slots[slot] = {x, y}
   reply('ok')
end

function verbs.train(slot)
   local x, y = slots[slot][1], slots[slot][2]
   model:training()
   local loss
   local function feval()
      grads:zero()
      local out = model:forward(x)
      loss = criterion:forward(out, y)
      model:backward(x, criterion:backward(out, y))
      return loss, grads
   end
   step(feval, params, config, state)
   reply(string.format('%.9g', loss))
end

function verbs.sync()
   if cuda then cutorch.synchronize() end
   reply('ok')
end

function verbs.infer(slot)
   model:evaluate()
   local out = model:forward(slots[slot][1])
   local dims = {}
   for i = 1, out:dim() do dims[i] = tostring(out:size(i)) end
   local data = to_bytes(out)
   reply(string.format('%d %s', #data, table.concat(dims, ' ')), data)
end

function verbs.params()
   local weights = model:parameters()
   local sizes, parts = {}, {}
   for i, w in ipairs(weights) do
      sizes[i] = tostring(w:nElement())
      parts[i] = to_bytes(w)
   end
   local data = table.concat(parts)
   reply(string.format('%d %d %s', #weights, #data, table.concat(sizes, ' ')), data)
end

while true do
   local line = io.stdin:read('*l')
   if line == nil then break end
   local words = {}
   for word in line:gmatch('%S+') do words[#words + 1] = word end
   local verb = table.remove(words, 1)
   if verb == 'quit' then break end
   local ok, err = pcall(function()
      if not verbs[verb] then error('unknown request ' .. tostring(verb)) end
      verbs[verb](unpack(words))
   end)
   if not ok then
      io.stdout:write('! ', (tostring(err):gsub('\n', ' ')), '\n')
      io.stdout:flush()
   end
end
